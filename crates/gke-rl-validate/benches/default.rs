//! The native half of `cargo xtask bench wasm`: validating the embedded default's artifact set,
//! as the web page does in the browser.

use criterion::{Criterion, criterion_group, criterion_main};

fn validate_default(c: &mut Criterion) {
    let options = gke_rl::RenderOptions { source: "the embedded default", regenerate: "cargo xtask render" };
    let artifacts = gke_rl::render(&gke_rl::Deployment::default(), &options).expect("renders");
    let sources: Vec<gke_rl_validate::SourceFile<'_>> = artifacts.iter().map(gke_rl_validate::SourceFile::from).collect();
    c.bench_function("validate the default artifact set", |b| b.iter(|| gke_rl_validate::validate(std::hint::black_box(&sources))));
}

criterion_group!(benches, validate_default);
criterion_main!(benches);
