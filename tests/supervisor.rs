//! The in-cluster supervisor and gke-rl agree on what failed a run: the generated program's
//! `classify` and `gke_rl::recovery::classify` give the same verdict on every message of the
//! corpus in `tests/fixtures/ray-messages/`, recorded from real Ray heads.

mod common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use gke_rl::recovery::{Failure, classify};

#[test]
fn the_supervisor_and_gke_rl_classify_every_recorded_message_alike() {
    let corpus = common::project_root().join("tests/fixtures/ray-messages/corpus.json");
    let text = std::fs::read_to_string(&corpus).unwrap_or_else(|e| panic!("{}: {e}", corpus.display()));
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).expect("the corpus is JSON");
    let versions: std::collections::BTreeSet<&str> = cases.iter().filter_map(|c| c["ray"].as_str()).collect();
    assert!(versions.contains("2.46.0") && versions.contains("2.54.0"), "messages of each tested Ray: {versions:?}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gke_rl_supervise.py"), gke_rl::supervisor::program()).unwrap();
    let driver = "import json, sys\nfrom gke_rl_supervise import classify\n\
                  print(json.dumps([classify(c['message'], c['log_tail']) for c in json.load(sys.stdin)]))";
    let mut python = Command::new("python3")
        .args(["-c", driver])
        .current_dir(dir.path())
        .env("PYTHONPATH", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    python.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(out.status.success(), "the supervisor's classify ran");
    let verdicts: Vec<(String, String)> = serde_json::from_slice(&out.stdout).expect("verdicts");
    let mut kinds = std::collections::BTreeSet::new();
    for (case, (kind, detail)) in cases.iter().zip(verdicts) {
        let rust = classify(case["message"].as_str().unwrap(), case["log_tail"].as_str().unwrap());
        let rust_kind = match &rust {
            Failure::NodeLost(_) => "node-lost",
            Failure::DriverLost(_) => "driver-lost",
            _ => "program",
        };
        assert_eq!((rust_kind, rust.detail()), (kind.as_str(), detail.as_str()), "{}", case["source"]);
        assert_eq!(case["verdict"].as_str(), Some(rust_kind), "the recorded verdict of {}", case["source"]);
        kinds.insert(kind);
    }
    assert_eq!(kinds.len(), 3, "the corpus has a lost node, a lost driver and a program failure: {kinds:?}");
}
