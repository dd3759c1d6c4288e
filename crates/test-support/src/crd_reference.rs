//! The reference the compiled CRD schemas are held to: the `jsonschema` crate on the same JSON
//! Schema ([`gke_rl::validate::json_schema`]), with formats asserted as the API server does.
//! The equivalence test and the `crd_schema` fuzz target (which includes this file) both use it.

use std::collections::BTreeSet;

use gke_rl::validate::CrdSchema;
use gke_rl::validate::crd::Kind;
use gke_rl::yaml::Node;

/// A RayCluster or RayJob schema twice: KubeRay v1.7.0's compiled table, and `jsonschema`.
pub struct Reference {
    compiled: CrdSchema,
    validator: jsonschema::Validator,
}

/// Where a schema is broken and by which keyword: (JSON pointer, keyword). An unknown field is
/// at its own pointer.
pub type Errors = BTreeSet<(String, String)>;

impl Reference {
    /// The built-in schema of `kind` beside `jsonschema` compiling `crd` (the CRD's text).
    pub fn new(kind: Kind, crd: &str) -> Reference {
        let schema = gke_rl::validate::json_schema(crd, true).expect("the CRD has a v1 schema");
        let validator = jsonschema::options().should_validate_formats(true).build(&schema).expect("jsonschema compiles the CRD's schema");
        Reference { compiled: CrdSchema::kuberay(kind), validator }
    }

    /// The errors each finds in `document`: (the compiled table's, `jsonschema`'s).
    pub fn errors(&self, document: &Node) -> (Errors, Errors) {
        let ours = self.compiled.violations(document).iter().map(|v| (v.pointer(), v.keyword.to_owned())).collect();
        let instance = document.to_json();
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
