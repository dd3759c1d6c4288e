//! `cargo xtask bench render`: rendering every artifact of the embedded default, in process.
//! Target: under 200 µs. Also the native half of `cargo xtask bench wasm`: validating that
//! artifact set, as the web page does in the browser.

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests and benches read fixtures; the library does no I/O

use criterion::{Criterion, criterion_group, criterion_main};

const OPTIONS: gke_rl::RenderOptions<'static> = gke_rl::RenderOptions { source: "the embedded default", regenerate: "cargo xtask render" };

fn render_default(c: &mut Criterion) {
    let deployment = gke_rl::Deployment::default();
    c.bench_function("render the default artifact set", |b| {
        b.iter(|| gke_rl::render(std::hint::black_box(&deployment), &OPTIONS).expect("renders"));
    });
}

fn validate_default(c: &mut Criterion) {
    let artifacts = gke_rl::render(&gke_rl::Deployment::default(), &OPTIONS).expect("renders");
    let sources: Vec<gke_rl_validate::SourceFile<'_>> = artifacts.iter().map(gke_rl_validate::SourceFile::from).collect();
    c.bench_function("validate the default artifact set", |b| b.iter(|| gke_rl_validate::validate(std::hint::black_box(&sources))));
}

criterion_group!(benches, render_default, validate_default);
criterion_main!(benches);
