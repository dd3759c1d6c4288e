//! The reference the compiled CRD schemas are held to: the `jsonschema` crate on the same JSON
//! Schema ([`gke_rl_validate::json_schema`]), with formats asserted as the API server does.
//! The equivalence test and the `crd_schema` fuzz target (which includes this file) both use it.

use std::collections::BTreeSet;

use gke_rl::yaml::Node;
use gke_rl_validate::CrdSchema;
use gke_rl_validate::crd::Kind;

/// A RayCluster or RayJob schema twice: compiled by gke-rl, and by `jsonschema`.
pub struct Reference {
    compiled: CrdSchema,
    schema: serde_json::Value,
    validator: jsonschema::Validator,
}

/// Where a schema is broken and by which keyword: (JSON pointer, keyword). An unknown field is
/// at its own pointer.
pub type Errors = BTreeSet<(String, String)>;

impl Reference {
    /// The built-in schema of `kind` beside `jsonschema` compiling `crd` (the CRD's text).
    pub fn new(kind: Kind, crd: &str) -> Reference {
        Reference::with(CrdSchema::kuberay(kind), crd)
    }

    /// `crd` (a CRD's or a schema's text) compiled at run time, as `--crd` does, beside
    /// `jsonschema` compiling it.
    pub fn compiled(crd: &str) -> Reference {
        Reference::with(CrdSchema::from_crd(crd, true).expect("gke-rl compiles the CRD"), crd)
    }

    fn with(compiled: CrdSchema, crd: &str) -> Reference {
        let schema = gke_rl_validate::json_schema(crd, true).expect("the CRD has a v1 schema");
        let validator = jsonschema::options().should_validate_formats(true).build(&schema).expect("jsonschema compiles the CRD's schema");
        Reference { compiled, schema, validator }
    }

    /// The errors each finds in `document`: (the compiled table's, `jsonschema`'s).
    pub fn errors(&self, document: &Node) -> (Errors, Errors) {
        let ours = self.compiled.violations(document).iter().map(|v| (v.pointer(), v.keyword.to_owned())).collect();
        let mut instance = document.to_json();
        prune_nulls(&mut instance, &self.schema);
        let mut theirs = Errors::new();
        for error in self.validator.iter_errors(&instance) {
            let pointer = error.instance_path().to_string();
            match error.kind() {
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    for key in unexpected {
                        theirs.insert((
                            format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
                            "additionalProperties".to_owned(),
                        ));
                    }
                }
                kind => {
                    theirs.insert((pointer, kind.keyword().to_owned()));
                }
            }
        }
        (ours, theirs)
    }
}

/// What the API server does before it validates (apiextensions-apiserver,
/// PruneNonNullableNullsWithoutDefaults): a null in a field (a listed property or a map's value)
/// whose schema is not `nullable` is dropped; the structure is followed, not the junctors.
fn prune_nulls(instance: &mut serde_json::Value, schema: &serde_json::Value) {
    use serde_json::Value;
    let nullable = |schema: &Value| schema.get("nullable") == Some(&Value::Bool(true));
    match instance {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let child = |key: &str| properties.and_then(|p| p.get(key)).or(additional);
            map.retain(|key, value| !(value.is_null() && child(key).is_some_and(|c| !nullable(c))));
            for (key, value) in map.iter_mut() {
                if let Some(child) = child(key) {
                    prune_nulls(value, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(child) = schema.get("items") {
                items.iter_mut().for_each(|item| prune_nulls(item, child));
            }
        }
        _ => {}
    }
}
