//! The fabric-check report on real NCCL INFO logs (both transports), on the check job's own
//! output recorded on two H200 GPUs, and on written A4 logs: what each says and whether it passes.

use gke_rl::knowledge::gpu_fabric;
use gke_rl_in_cluster::fabric::{Expectation, Problem, Report};
use gke_rl_test_support::project_root;
use gke_rl_test_support::upstream;

fn read(path: std::path::PathBuf) -> Report {
    Report::parse(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn recorded(name: &str) -> Report {
    read(project_root().join("tests/fixtures/fabric-check").join(name))
}

/// Two A4 nodes that must use gIB at 60 % of 8 × 400 Gb/s.
fn a4_pair() -> Expectation {
    Expectation { nodes: Some(2), fabric: gpu_fabric("a4-highgpu-8g"), min_fraction: 0.6 }
}

fn busbw_at_1_gib(report: &Report) -> f64 {
    report.samples.iter().find(|s| s.bytes == 1 << 30).expect("a 1 GiB sample").busbw
}

#[test]
fn raw_nccl_logs_name_the_socket_transport_per_rank() {
    for (log, busbw) in [("nccl/allreduce-2xH200-socket.log", 3.3), ("nccl/allreduce-2xH200-nvlink.log", 329.2)] {
        let report = read(upstream(log));
        assert_eq!(report.nodes.len(), 1, "{log}: both ranks are on host vm");
        assert_eq!(report.nodes[0].name, "vm");
        assert_eq!(report.nodes[0].transports, [("Socket".to_owned(), 2)], "{log}");
        assert_eq!(report.samples.len(), 4, "{log}");
        assert_eq!(busbw_at_1_gib(&report), busbw, "{log}");
    }
}

#[test]
fn the_check_jobs_own_output_reads_the_same() {
    let socket = recorded("fabric-check-2xH200-socket.log");
    assert_eq!(socket.gpus_per_node, Some(2));
    assert_eq!(socket.nodes[0].ranks, Some((0, 1)));
    assert_eq!(socket.nodes[0].transports, [("Socket".to_owned(), 2)]);
    assert_eq!(busbw_at_1_gib(&socket), 3.2);
    let nvlink = recorded("fabric-check-2xH200-nvlink.log");
    assert_eq!(busbw_at_1_gib(&nvlink), 329.31);
    // Sockets 100x below NVLink, as the upstream recording shows.
    assert!(busbw_at_1_gib(&nvlink) / busbw_at_1_gib(&socket) > 90.0);
    let problems = socket.problems(&a4_pair());
    assert!(problems.iter().any(|p| matches!(p, Problem::TooFewNodes { found: 1, .. })), "{problems:?}");
    assert!(problems.iter().any(|p| p.to_string() == "node vm: 2 rank(s) used Socket over TCP sockets, not gIB"), "{problems:?}");
    assert!(problems.iter().any(|p| matches!(p, Problem::Slow { .. })), "{problems:?}");
}

#[test]
fn an_a4_pair_on_gib_passes_and_a_fallback_to_sockets_fails() {
    let gib = recorded("written-2xA4-gib.log");
    assert_eq!(gib.nodes.len(), 2);
    assert!(gib.nodes.iter().all(|n| n.transports == [("gIB".to_owned(), 8)]), "{:?}", gib.nodes);
    assert_eq!(gib.problems(&a4_pair()), []);
    let eight = Expectation { nodes: Some(8), ..a4_pair() };
    assert_eq!(gib.problems(&eight), [Problem::TooFewNodes { found: 2, expected: Some(8) }]);
    let strict = Expectation { min_fraction: 0.9, ..a4_pair() };
    let slow = gib.problems(&strict);
    assert_eq!(slow.len(), 1);
    assert_eq!(slow[0].to_string(), "bus bandwidth at 1 GiB is 341.6 GB/s, below the floor of 360.0 GB/s (90% of the 400 GB/s line rate)");

    let fallback = recorded("written-2xA4-one-node-on-sockets.log");
    let problems: Vec<String> = fallback.problems(&a4_pair()).iter().map(ToString::to_string).collect();
    assert_eq!(problems[0], "node 7be41d05: 8 rank(s) used Socket over TCP sockets, not gIB");
    assert!(problems[1].starts_with("bus bandwidth at 1 GiB is 3.9 GB/s"), "{problems:?}");
    assert!(!fallback.nodes[0].used_sockets() && fallback.nodes[1].used_sockets());
}

#[test]
fn without_a_fabric_the_check_only_measures() {
    let measured = Expectation { nodes: Some(2), fabric: None, min_fraction: 0.6 };
    assert_eq!(recorded("written-2xA4-one-node-on-sockets.log").problems(&measured), []);
    let deployment = gke_rl::config::from_yaml("topology:\n  node_count: 2\nfabric:\n  mode: \"off\"\n").unwrap();
    assert_eq!(Expectation::for_deployment(&deployment, 0.6).unwrap(), measured);
    assert_eq!(Expectation::for_deployment(&gke_rl::Deployment::default(), 0.6).unwrap().fabric.map(|f| f.line_rate_gbytes()), Some(400.0));
}

#[test]
fn every_problem_serializes_for_json_output() {
    let report = Report::parse(
        "fabric-check nodes=1 gpus_per_node=8 backend=nccl\nfabric-check error: 1 node; an inter-node collective needs at least two\n",
    );
    let problems = report.problems(&a4_pair());
    assert!(matches!(problems[0], Problem::JobFailed { .. }), "{problems:?}");
    let json = serde_json::to_value(&problems).expect("problems serialize");
    assert_eq!(json[0]["problem"], "job-failed");
    assert_eq!(json[0]["message"], "1 node; an inter-node collective needs at least two");
    assert_eq!(json[1]["problem"], "too-few-nodes");
    for problem in [Problem::NoSamples, Problem::NoTransport { node: "n".into() }] {
        serde_json::to_string(&problem).expect("serializes");
    }
}
