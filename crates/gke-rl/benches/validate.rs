//! In-process half of `cargo xtask bench validate`: 100 RayCluster manifests, with the
//! default env.sh, job script, runtime env and .rayignore beside them, validated fully
//! (parse, typed rules, cross-file rules, CRD schema). The end-to-end comparison with
//! check-jsonschema is in `xtask/src/bench.rs`.

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests and benches read fixtures; the library does no I/O

use criterion::{Criterion, criterion_group, criterion_main};
use gke_rl::validate::{CrdSchema, SourceFile, validate_with_crd};

fn validate_100(c: &mut Criterion) {
    let crd_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/upstream/kuberay/ray.io_rayclusters.yaml");
    let crd_text = std::fs::read_to_string(crd_path).expect("tests/fixtures/upstream/kuberay/ray.io_rayclusters.yaml");
    c.bench_function("compile the strict RayCluster CRD schema", |b| b.iter(|| CrdSchema::from_crd(&crd_text, true).expect("compiles")));

    let crd = CrdSchema::from_crd(&crd_text, true).expect("compiles");
    let dir = std::env::var("GKE_RL_BENCH_FILES").expect("run through `cargo xtask bench validate`, which writes the files");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("the benchmark files")
        .map(|e| e.expect("a directory entry").path())
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("readable")))
        .collect();
    files.sort();
    let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
    let errors = validate_with_crd(&sources, &crd).into_iter().filter(|f| f.diagnostic.severity == gke_rl::Severity::Error).count();
    assert_eq!(errors, 0, "the benchmark files are valid");
    c.bench_function("validate 100 RayClusters with the CRD schema", |b| {
        b.iter(|| validate_with_crd(std::hint::black_box(&sources), &crd))
    });
}

criterion_group!(benches, validate_100);
criterion_main!(benches);
