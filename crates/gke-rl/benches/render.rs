//! `cargo xtask bench render`: rendering every artifact of the embedded default, in process.
//! Target: under 200 µs.

use criterion::{Criterion, criterion_group, criterion_main};

fn render_default(c: &mut Criterion) {
    let deployment = gke_rl::Deployment::default();
    c.bench_function("render the default artifact set", |b| {
        b.iter(|| gke_rl::render(std::hint::black_box(&deployment), "the embedded default").expect("renders"));
    });
}

criterion_group!(benches, render_default);
criterion_main!(benches);
