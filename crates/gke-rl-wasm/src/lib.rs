//! The SDK in the browser: the same validation and rendering as `cargo xtask validate` and
//! `cargo xtask render`, behind three functions. Every result is a value; bad input gives
//! `{"error": …}`, never an exception.
//!
//! The JSON shapes are computed by [`validate_json`] and [`render_json`], which native tests
//! call directly, so the browser and the CLI cannot drift apart.

use std::collections::BTreeMap;

use wasm_bindgen::prelude::*;

/// `validate({"env.sh": "…", "ray-cluster.yaml": "…"})`: `{findings, skipped, rules_checked,
/// rules}`, what `gke-rl validate --format json` prints.
#[wasm_bindgen]
pub fn validate(files: JsValue) -> JsValue {
    to_js(&js_sys::JSON::stringify(&files).ok().and_then(|s| s.as_string()).map_or_else(
        || serde_json::json!({ "error": "validate takes an object mapping file names to their text" }),
        |json| validate_json(&json),
    ))
}

/// `render("gke-rl.yaml text")`: `{"artifacts": [{name, contents, executable}], "cost": {text,
/// summary}}` (the cost block `cargo xtask cost` prints), or
/// `{"error": diagnostic}` with the line and column in the config.
#[wasm_bindgen]
pub fn render(config: &str) -> JsValue {
    to_js(&render_json(config))
}

/// The SDK's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// [`validate`] on JSON text: `{name: text}` in, the validation out.
pub fn validate_json(files: &str) -> serde_json::Value {
    let files: BTreeMap<String, String> = match serde_json::from_str(files) {
        Ok(files) => files,
        Err(e) => return serde_json::json!({ "error": format!("validate takes an object mapping file names to their text: {e}") }),
    };
    let sources: Vec<gke_rl::validate::SourceFile<'_>> =
        files.iter().map(|(name, text)| gke_rl::validate::SourceFile { name, text }).collect();
    serde_json::to_value(gke_rl::validate::check(&sources).finish()).unwrap_or_default()
}

/// [`render`]'s value for a config's text.
pub fn render_json(config: &str) -> serde_json::Value {
    let deployment = match gke_rl::config::from_yaml(config) {
        Ok(deployment) => deployment,
        Err(diagnostic) => return serde_json::json!({ "error": diagnostic }),
    };
    let options = gke_rl::RenderOptions { source: "the web validator", regenerate: "gke-rl render" };
    match gke_rl::render(&deployment, &options) {
        Ok(artifacts) => {
            let artifacts: Vec<_> = artifacts
                .iter()
                .map(|a| serde_json::json!({ "name": a.name, "contents": a.contents, "executable": a.executable }))
                .collect();
            let cost = gke_rl::cost::estimate(&deployment);
            serde_json::json!({ "artifacts": artifacts, "cost": { "text": cost.to_string(), "summary": cost.summary() } })
        }
        Err(e) => serde_json::json!({ "error": { "message": e.to_string() } }),
    }
}

fn to_js(value: &serde_json::Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap_or(JsValue::NULL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_json_matches_the_sdk() {
        let files = serde_json::json!({ ".rayignore": "[z-a]\n" }).to_string();
        let findings = validate_json(&files);
        assert_eq!(findings["findings"][0]["code"], "syntax", "{findings}");
        assert!(findings["skipped"].as_array().is_some_and(|s| s.iter().any(|s| s["code"] == "ray-version-mismatch")), "{findings}");
        assert!(validate_json("[1]")["error"].as_str().is_some_and(|e| e.starts_with("validate takes an object")));
    }

    #[test]
    fn render_json_gives_artifacts_or_a_positioned_error() {
        let rendered = render_json("");
        let options = gke_rl::RenderOptions { source: "a test", regenerate: "a test" };
        let count = gke_rl::render(&gke_rl::Deployment::default(), &options).unwrap().iter().count();
        assert_eq!((rendered["artifacts"].as_array().map(Vec::len), count), (Some(8), 8), "with the NetworkPolicy of Ray 2.46");
        assert_eq!(rendered["cost"]["text"], gke_rl::cost::estimate(&gke_rl::Deployment::default()).to_string());
        let error = &render_json("project:\n  nope: 1\n")["error"];
        assert_eq!((error["line"].as_u64(), error["code"].as_str()), (Some(2), Some("config-unknown-key")), "{error}");
    }
}
