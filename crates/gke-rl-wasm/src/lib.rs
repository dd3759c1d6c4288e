//! The SDK in the browser: the same validation and rendering as `gke-rl validate` and
//! `gke-rl render`, behind three functions. Every result is a value; bad input gives
//! `{"error": …}`, never an exception.
//!
//! The page loads two builds of this crate: the validator (feature `validator`) at once, and the
//! renderer (feature `renderer`), whose config reader and templates are a fifth of the page,
//! only when a config is first rendered.
//!
//! The JSON shapes are computed by [`validate_files`] and [`render_json`], which native tests
//! call directly, so the browser and the CLI cannot drift apart.

use serde::Serialize;
use wasm_bindgen::prelude::*;

/// `validate({"env.sh": "…", "ray-cluster.yaml": "…"})`: `{findings, skipped, rules_checked,
/// rules}`, what `gke-rl validate --format json` prints.
#[cfg(feature = "validator")]
#[wasm_bindgen]
pub fn validate(files: JsValue) -> JsValue {
    // Read field by field, not through serde_json: its typed reader would bring core's float
    // formatting into the page (7 KB gzip) for its error messages.
    let entries = (files.is_object() && !js_sys::Array::is_array(&files)).then(|| js_sys::Object::entries(&files.into()));
    let files: Option<Vec<(String, String)>> = entries.and_then(|entries| {
        entries
            .iter()
            .map(|entry| {
                let pair = js_sys::Array::from(&entry);
                Some((pair.get(0).as_string()?, pair.get(1).as_string()?))
            })
            .collect()
    });
    to_js(&files.map_or_else(|| failed("validate takes an object mapping file names to their text"), |files| validate_files(&files)))
}

/// `render("gke-rl.yaml text")`: `{"artifacts": [{name, contents, executable}], "cost": {text,
/// summary}}` (the cost block `gke-rl cost` prints), or
/// `{"error": diagnostic}` with the line and column in the config.
#[cfg(feature = "renderer")]
#[wasm_bindgen]
pub fn render(config: &str) -> JsValue {
    to_js(&render_json(config))
}

/// The SDK's version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// [`validate`] on (name, text) pairs: the validation, as JSON text. The files are taken in
/// name order, as the CLI takes them, so the page and the CLI agree whatever order the page
/// added them in.
#[cfg(feature = "validator")]
pub fn validate_files(files: &[(String, String)]) -> String {
    let mut sources: Vec<gke_rl_validate::SourceFile<'_>> =
        files.iter().map(|(name, text)| gke_rl_validate::SourceFile { name, text }).collect();
    sources.sort_by_key(|source| source.name);
    json(&gke_rl_validate::check(&sources).finish())
}

/// [`render`]'s value for a config's text, as JSON text.
#[cfg(feature = "renderer")]
pub fn render_json(config: &str) -> String {
    #[derive(Serialize)]
    struct Rendered<'a> {
        artifacts: Vec<Artifact<'a>>,
        cost: Cost,
    }
    #[derive(Serialize)]
    struct Artifact<'a> {
        name: &'a str,
        contents: &'a str,
        executable: bool,
    }
    #[derive(Serialize)]
    struct Cost {
        text: String,
        summary: String,
    }
    #[derive(Serialize)]
    struct Message {
        message: String,
    }
    let deployment = match gke_rl::config::from_yaml(config) {
        Ok(deployment) => deployment,
        Err(diagnostic) => return failed(diagnostic),
    };
    let options = gke_rl::RenderOptions { source: "the web validator", regenerate: "gke-rl render" };
    match gke_rl::render(&deployment, &options) {
        Ok(artifacts) => {
            let artifacts = artifacts.iter().map(|a| Artifact { name: a.name, contents: &a.contents, executable: a.executable }).collect();
            let cost = gke_rl::cost::estimate(&deployment);
            json(&Rendered { artifacts, cost: Cost { text: cost.to_string(), summary: cost.summary() } })
        }
        Err(e) => failed(Message { message: e.to_string() }),
    }
}

/// `{"error": …}`.
fn failed(error: impl Serialize) -> String {
    #[derive(Serialize)]
    struct Failed<T> {
        error: T,
    }
    json(&Failed { error })
}

fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("maps with string keys serialize")
}

fn to_js(json: &str) -> JsValue {
    js_sys::JSON::parse(json).unwrap_or(JsValue::NULL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "validator")]
    #[test]
    fn validate_files_matches_the_sdk_in_any_order() {
        let files = [(".rayignore".to_owned(), "[z-a]\n".to_owned())];
        let findings: serde_json::Value = serde_json::from_str(&validate_files(&files)).unwrap();
        assert_eq!(findings["findings"][0]["code"], "syntax", "{findings}");
        assert!(findings["skipped"].as_array().is_some_and(|s| s.iter().any(|s| s["code"] == "ray-version-mismatch")), "{findings}");
        let env = |dir: &str, zone: &str| (format!("{dir}env.sh"), format!("export ZONE={zone}\nexport LUSTRE_CAPACITY=nope\n"));
        let (a, b) = (env("", "us-central1-b"), env("old/", "europe-west4-a"));
        assert_eq!(validate_files(&[a.clone(), b.clone()]), validate_files(&[b, a]));
    }

    #[cfg(feature = "renderer")]
    #[test]
    fn render_json_gives_artifacts_or_a_positioned_error() {
        let read = |config: &str| serde_json::from_str::<serde_json::Value>(&render_json(config)).unwrap();
        let rendered = read("");
        let options = gke_rl::RenderOptions { source: "a test", regenerate: "a test" };
        let count = gke_rl::render(&gke_rl::Deployment::default(), &options).unwrap().iter().count();
        assert_eq!((rendered["artifacts"].as_array().map(Vec::len), count), (Some(8), 8), "with the NetworkPolicy of Ray 2.46");
        assert_eq!(rendered["cost"]["text"], gke_rl::cost::estimate(&gke_rl::Deployment::default()).to_string());
        let error = &read("project:\n  nope: 1\n")["error"];
        assert_eq!((error["line"].as_u64(), error["code"].as_str()), (Some(2), Some("config-unknown-key")), "{error}");
    }
}
