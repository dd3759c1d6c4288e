//! The RayCluster against a KubeRay CRD's `openAPIV3Schema`, with each schema error mapped
//! back to the line and column of the offending value.

use super::rules::CRD_SCHEMA;
use super::{Sink, Views};

/// A compiled RayCluster schema.
pub struct CrdSchema {
    validator: jsonschema::Validator,
}

impl CrdSchema {
    /// Compiles the `v1` schema of a RayCluster CRD (the YAML text of the CRD file).
    /// `strict` also rejects fields the schema does not list, which the API server would
    /// silently drop.
    pub fn from_crd(crd_yaml: &str, strict: bool) -> Result<Self, String> {
        let schema = openapi_schema(crd_yaml, strict)?;
        let validator = jsonschema::validator_for(&schema).map_err(|e| format!("the CRD's schema does not compile: {e}"))?;
        Ok(Self { validator })
    }

    pub(super) fn check(&self, views: &Views<'_>, sink: &mut Sink) {
        for cluster in &views.ray_clusters {
            let instance = cluster.root.to_json();
            for error in self.validator.iter_errors(&instance) {
                let mut pointer = error.instance_path().to_string();
                // Point at the unexpected key itself, not at the object holding it.
                if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } = error.kind()
                    && let Some(first) = unexpected.first()
                {
                    pointer = format!("{pointer}/{}", first.replace('~', "~0").replace('/', "~1"));
                }
                let at = cluster.root.pointer(&pointer).map_or((1, 1), |n| n.key_at.unwrap_or(n.at()));
                let path = if pointer.is_empty() { "the manifest".to_owned() } else { pointer.trim_start_matches('/').replace('/', ".") };
                sink.emit(
                    &CRD_SCHEMA,
                    cluster.file,
                    at,
                    format!("{path}: {error}"),
                    "fix the field to match the KubeRay CRD (kubectl explain raycluster.spec…)",
                );
            }
        }
    }
}

/// The JSON Schema of a RayCluster CRD's `v1` version; `strict` closes every object schema
/// that lists its properties.
pub fn openapi_schema(crd_yaml: &str, strict: bool) -> Result<serde_json::Value, String> {
    let crd: serde_json::Value = serde_saphyr::from_str(crd_yaml).map_err(|e| format!("the CRD is not YAML: {e}"))?;
    let versions = crd.pointer("/spec/versions").and_then(serde_json::Value::as_array).ok_or("the file is not a CRD: no spec.versions")?;
    let v1 = versions.iter().find(|v| v["name"] == "v1").ok_or("the CRD has no v1 version")?;
    let mut schema = v1.pointer("/schema/openAPIV3Schema").cloned().ok_or("the CRD's v1 version has no openAPIV3Schema")?;
    if strict {
        close_objects(&mut schema);
    }
    Ok(schema)
}

/// Object schemas that list their properties accept no others.
fn close_objects(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            let open = map.contains_key("additionalProperties") || map.contains_key("x-kubernetes-preserve-unknown-fields");
            if map.contains_key("properties") && !open {
                map.insert("additionalProperties".into(), serde_json::Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}
