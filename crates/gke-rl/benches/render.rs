//! `cargo xtask bench render`: rendering every artifact of the embedded default, in process.
//! Target: under 200 µs.

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests and benches read fixtures; the library does no I/O

use criterion::{Criterion, criterion_group, criterion_main};

const OPTIONS: gke_rl::RenderOptions<'static> = gke_rl::RenderOptions { source: "the embedded default", regenerate: "cargo xtask render" };

fn render_default(c: &mut Criterion) {
    let deployment = gke_rl::Deployment::default();
    c.bench_function("render the default artifact set", |b| {
        b.iter(|| gke_rl::render(std::hint::black_box(&deployment), &OPTIONS).expect("renders"));
    });
}

criterion_group!(benches, render_default);
criterion_main!(benches);
