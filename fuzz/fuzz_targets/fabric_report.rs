//! The fabric-check report parser reads a job's log, which anything on the cluster can write
//! into: any text parses without a panic, and the verdict never panics either.
#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| {
    let report = gke_rl_in_cluster::fabric::Report::parse(text);
    let a4 = gke_rl_in_cluster::fabric::Expectation { nodes: Some(2), fabric: gke_rl::knowledge::gpu_fabric("a4-highgpu-8g"), min_fraction: 0.6 };
    for problem in report.problems(&a4) {
        let _ = problem.to_string();
    }
});
