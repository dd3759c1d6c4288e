//! The RayCluster against a KubeRay CRD's `openAPIV3Schema`, with each schema error mapped
//! back to the line and column of the offending value.

use super::rules::CRD_SCHEMA;
use super::{Sink, Views};
use crate::Error;

/// A compiled RayCluster schema.
pub struct CrdSchema {
    validator: jsonschema::Validator,
}

impl CrdSchema {
    /// Compiles the `v1` schema of a RayCluster CRD (its YAML or JSON text, or the schema
    /// itself as JSON).
    /// `strict` also rejects fields the schema does not list, which the API server would
    /// silently drop.
    pub fn from_crd(crd_yaml: &str, strict: bool) -> Result<Self, Error> {
        let schema = openapi_schema(crd_yaml, strict)?;
        let validator =
            jsonschema::validator_for(&schema).map_err(|e| Error::Crd { problem: format!("has a schema that does not compile: {e}") })?;
        Ok(Self { validator })
    }

    pub(super) fn check(&self, views: &Views<'_>, sink: &mut Sink) {
        if !views.ray_clusters.is_empty() {
            sink.ran(&CRD_SCHEMA);
        }
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

/// The JSON Schema of a RayCluster CRD's `v1` version, from the CRD (YAML or JSON) or from
/// the schema itself (JSON); `strict` closes every object schema that lists its properties.
pub fn openapi_schema(text: &str, strict: bool) -> Result<serde_json::Value, Error> {
    // JSON first: it is also YAML, but serde_json reads it an order of magnitude faster.
    let document: serde_json::Value = match serde_json::from_str(text) {
        Ok(json) => json,
        Err(_) => crate::yaml::Node::try_parse(text).map_err(Error::CrdSyntax)?.to_json(),
    };
    let problem = |problem: &str| Error::Crd { problem: problem.to_owned() };
    let mut schema = match document.pointer("/spec/versions").and_then(serde_json::Value::as_array) {
        Some(versions) => {
            let v1 = versions.iter().find(|v| v["name"] == "v1").ok_or_else(|| problem("has no v1 version"))?;
            v1.pointer("/schema/openAPIV3Schema").cloned().ok_or_else(|| problem("has no openAPIV3Schema in its v1 version"))?
        }
        None if document.get("properties").is_some() => document,
        None => return Err(problem("file is neither a CRD (spec.versions) nor a JSON Schema (properties)")),
    };
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
