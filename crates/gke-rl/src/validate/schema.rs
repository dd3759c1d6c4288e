//! RayClusters and RayJobs against a KubeRay CRD's `openAPIV3Schema`, with each schema error
//! mapped back to the line and column of the offending value. The CRDs of the KubeRay release
//! gke-rl targets (v1.7.0) are embedded ([`KUBERAY_CRDS`]).

use super::rules::CRD_SCHEMA;
use super::{Sink, Views};
use crate::Error;

/// The RayCluster and RayJob CRDs of KubeRay v1.7.0 (ray-project/kuberay
/// `helm-chart/kuberay-operator/crds/`, copied in `tests/fixtures/upstream/kuberay`).
pub const KUBERAY_CRDS: [&str; 2] = [
    include_str!("../../../../tests/fixtures/upstream/kuberay/ray.io_rayclusters.yaml"),
    include_str!("../../../../tests/fixtures/upstream/kuberay/ray.io_rayjobs.yaml"),
];

/// A compiled RayCluster or RayJob schema.
pub struct CrdSchema {
    validator: jsonschema::Validator,
    kind: String,
}

impl CrdSchema {
    /// Compiles the `v1` schema of a RayCluster or RayJob CRD (its YAML or JSON text, or a
    /// RayCluster's schema itself as JSON).
    /// `strict` also rejects fields the schema does not list, which the API server would
    /// silently drop.
    pub fn from_crd(crd_yaml: &str, strict: bool) -> Result<Self, Error> {
        let (schema, kind) = openapi_schema_of(crd_yaml, strict)?;
        let validator =
            jsonschema::validator_for(&schema).map_err(|e| Error::Crd { problem: format!("has a schema that does not compile: {e}") })?;
        Ok(Self { validator, kind })
    }

    /// The kind whose objects it checks (`spec.names.kind`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    pub(super) fn check(&self, views: &Views<'_>, sink: &mut Sink) {
        // A RayJob's cluster is also a RayCluster view: the RayJob's own schema checks it there.
        let trees: Vec<&super::Tree<'_>> = match self.kind.as_str() {
            "RayJob" => views.ray_jobs.iter().collect(),
            _ => views.ray_clusters.iter().filter(|t| t.root.get(&["kind"]).and_then(crate::yaml::Node::text) != Some("RayJob")).collect(),
        };
        if !trees.is_empty() {
            sink.ran(&CRD_SCHEMA);
        }
        let explain = self.kind.to_lowercase();
        for cluster in trees {
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
                    format!("fix the field to match the KubeRay CRD (kubectl explain {explain}.spec…)"),
                );
            }
        }
    }
}

/// The JSON Schema of a RayCluster CRD's `v1` version, from the CRD (YAML or JSON) or from
/// the schema itself (JSON); `strict` closes every object schema that lists its properties.
pub fn openapi_schema(text: &str, strict: bool) -> Result<serde_json::Value, Error> {
    openapi_schema_of(text, strict).map(|(schema, _)| schema)
}

/// [`openapi_schema`], and the kind it is for: the CRD's `spec.names.kind`, a RayCluster for a
/// bare schema.
fn openapi_schema_of(text: &str, strict: bool) -> Result<(serde_json::Value, String), Error> {
    // JSON first: it is also YAML, but serde_json reads it an order of magnitude faster.
    let document: serde_json::Value = match serde_json::from_str(text) {
        Ok(json) => json,
        Err(_) => crate::yaml::Node::try_parse(text).map_err(Error::CrdSyntax)?.to_json(),
    };
    let problem = |problem: &str| Error::Crd { problem: problem.to_owned() };
    let kind = document.pointer("/spec/names/kind").and_then(serde_json::Value::as_str).unwrap_or("RayCluster").to_owned();
    if !["RayCluster", "RayJob"].contains(&kind.as_str()) {
        return Err(problem(&format!("is for {kind}: gke-rl checks RayClusters and RayJobs")));
    }
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
    Ok((schema, kind))
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
