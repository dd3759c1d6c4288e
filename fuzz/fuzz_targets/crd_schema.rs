//! The compiled KubeRay CRD schemas against the `jsonschema` crate: on any YAML document, both
//! find the same errors at the same paths (the equivalence test's comparison, on libFuzzer's
//! inputs).
#![no_main]

use std::sync::LazyLock;

use gke_rl_validate::crd::Kind;
use gke_rl::yaml::Node;

// The target compares the built-in tables; the file also serves the tests' run-time CRDs.
#[allow(dead_code)]
#[path = "../../crates/test-support/src/crd_reference.rs"]
mod crd_reference;

static REFERENCES: LazyLock<[crd_reference::Reference; 2]> = LazyLock::new(|| {
    let crd = |file: &str| std::fs::read_to_string(format!("{}/../tests/fixtures/upstream/kuberay/{file}", env!("CARGO_MANIFEST_DIR"))).expect("the CRD");
    [
        crd_reference::Reference::new(Kind::RayCluster, &crd("ray.io_rayclusters.yaml")),
        crd_reference::Reference::new(Kind::RayJob, &crd("ray.io_rayjobs.yaml")),
    ]
});

libfuzzer_sys::fuzz_target!(|text: &str| {
    let Some(document) = Node::parse(text) else { return };
    let reference = &REFERENCES[usize::from(document.get(&["kind"]).and_then(Node::text) == Some("RayJob"))];
    let (ours, theirs) = reference.errors(&document);
    assert_eq!(ours, theirs, "the compiled schema (left) and jsonschema (right) disagree");
});
