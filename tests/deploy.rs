//! `cargo xtask deploy` as a user runs it: the binary, fake gcloud and gcluster on PATH
//! (`tests/fixtures/fakes/fake.sh`), and a real SIGINT to its process group while gcluster
//! runs, as Ctrl-C in a terminal sends it. The Kubernetes steps are tested in process
//! (`xtask/src/cluster/tests.rs`).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{project_root, stderr, upstream};

#[test]
fn ctrl_c_while_gcluster_runs_saves_the_state_and_exits_130() {
    let Some(blueprint) = upstream("cluster-toolkit/gke-a4.yaml") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (bin, example, cloud) = (root.join("bin"), root.join("toolkit/examples/gke-a4"), root.join("cloud"));
    for path in [&bin, &example, &cloud] {
        std::fs::create_dir_all(path).unwrap();
    }
    for program in ["gcloud", "gcluster", "terraform", "packer"] {
        std::os::unix::fs::symlink(project_root().join("tests/fixtures/fakes/fake.sh"), bin.join(program)).unwrap();
    }
    std::fs::copy(blueprint, example.join("gke-a4.yaml")).unwrap();
    for template in ["kueue-configuration.yaml.tftpl", "nccl-installer.yaml.tftpl"] {
        std::fs::write(example.join(template), "# template\n").unwrap();
    }
    let folder = root.join("deployment");
    let child = {
        use std::os::unix::process::CommandExt as _;
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .current_dir(root)
            .args(["deploy", "--yes", "--project", "p", "--authorized-cidr", "203.0.113.7/32", "--toolkit", "toolkit", "--folder"])
            .arg(&folder)
            .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))
            .env("FAKE_CLOUD", &cloud)
            .env("FAKE_SLEEP", "30")
            .env("HF_TOKEN", "hf_value")
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let started = Instant::now();
    while !calls(&cloud).contains("gcluster deploy") {
        assert!(started.elapsed() < Duration::from_secs(30), "gcluster never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let group = format!("-{}", child.id());
    assert!(Command::new("kill").args(["-INT", "--", &group]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(20), "gcluster's 30 s sleep was cut short");
    assert!(stderr(&out).contains("interrupted during \"provision with gcluster"), "{}", stderr(&out));
    let state = std::fs::read_to_string(folder.join("state.json")).unwrap();
    assert!(state.contains("\"render\"") && !state.contains("\"provision\""), "{state}");
}

fn calls(cloud: &Path) -> String {
    std::fs::read_to_string(cloud.join("calls")).unwrap_or_default()
}
