//! In-process half of `cargo xtask bench validate`, which pins it to one core: 100 RayCluster
//! manifests, with the default env.sh, job script, runtime env and .rayignore beside them,
//! validated fully (parse, typed rules, cross-file rules, the built-in KubeRay CRD schema). The
//! end-to-end comparison with check-jsonschema is in `xtask/src/bench.rs`.

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests and benches read fixtures; the library does no I/O

use criterion::{Criterion, criterion_group, criterion_main};
use gke_rl_validate::{CrdSchema, SourceFile, validate};

fn validate_100(c: &mut Criterion) {
    let crd_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/upstream/kuberay/ray.io_rayclusters.yaml");
    let crd_text = std::fs::read_to_string(crd_path).expect("tests/fixtures/upstream/kuberay/ray.io_rayclusters.yaml");
    c.bench_function("compile the strict RayCluster CRD (what --crd does)", |b| {
        b.iter(|| CrdSchema::from_crd(&crd_text, true).expect("compiles"))
    });

    let dir = std::env::var("GKE_RL_BENCH_FILES").expect("run through `cargo xtask bench validate`, which writes the files");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("the benchmark files")
        .map(|e| e.expect("a directory entry").path())
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("readable")))
        .collect();
    files.sort();
    let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
    let validation = gke_rl_validate::check(&sources).finish();
    assert_eq!(gke_rl_validate::count(&validation.findings, gke_rl::Severity::Error), 0, "the benchmark files are valid");
    assert!(!validation.skipped.iter().any(|s| s.code == "crd-schema"), "the CRD check runs");
    c.bench_function("validate 100 RayClusters, every rule and the CRD, one core", |b| b.iter(|| validate(std::hint::black_box(&sources))));
}

criterion_group!(benches, validate_100);
criterion_main!(benches);
