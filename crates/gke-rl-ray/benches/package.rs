//! Hash and zip a working dir (`cargo xtask bench submit` makes a 3000-file, 50 MB tree and
//! points GKE_RL_BENCH_TREE at it).

use criterion::{Criterion, criterion_group, criterion_main};
use gke_rl_ray::package::{Options, Plan};

fn package(c: &mut Criterion) {
    let Some(tree) = std::env::var_os("GKE_RL_BENCH_TREE") else {
        eprintln!("GKE_RL_BENCH_TREE is not set: run `cargo xtask bench submit`");
        return;
    };
    let mut group = c.benchmark_group("package");
    group.sample_size(20);
    group.bench_function("hash and zip the benchmark tree", |b| {
        b.iter(|| Plan::for_dir(tree.as_ref(), &Options::default(), &[]).and_then(|plan| plan.build(&[])).expect("the tree packages"));
    });
    group.bench_function("hash the benchmark tree", |b| {
        b.iter(|| Plan::for_dir(tree.as_ref(), &Options::default(), &[]).and_then(|plan| plan.hash(&[])).expect("the tree hashes"));
    });
    group.bench_function("walk the benchmark tree", |b| {
        b.iter(|| Plan::for_dir(tree.as_ref(), &Options::default(), &[]).expect("the tree walks"));
    });
    group.finish();
}

criterion_group!(benches, package);
criterion_main!(benches);
