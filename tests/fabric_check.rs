//! `gke-rl fabric-check` end to end on real two-node Ray clusters: a head and a second node
//! joined with `ray start --address`, for Ray 2.46.0 and 2.54.0 from `target/ray/<version>/`.
//! No GPU here, so the job's collective is gloo on CPU (torch from Debian's python3-torch,
//! which `cargo xtask ci` installs): it places one task per node, reduces across both, reports
//! each node's transport and the sweep, and gke-rl judges it. Then the second node is taken
//! away, as a lost machine would be.

mod common;
#[path = "../xtask/src/ray_head.rs"]
mod ray_head;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use common::{project_root, stderr, stdout};
use libtest_mimic::{Arguments, Failed, Trial};
use ray_head::{Head, Node, RAY_VERSIONS};

/// Debian's CPU build of torch (python3-torch) and its numpy, for the venvs' Python 3.11.
const DEBIAN_PACKAGES: &str = "/usr/lib/python3/dist-packages";

fn main() {
    let mut args = Arguments::from_args();
    // The last trial takes a node away: the trials run in order, one at a time.
    args.test_threads = Some(1);
    let mut trials = Vec::new();
    let torch = torch_path();
    for version in RAY_VERSIONS {
        let bin = project_root().join("target/ray").join(version).join("bin");
        let (Some(torch), true) = (&torch, bin.join("ray").is_file()) else {
            assert!(
                std::env::var_os("CI").is_none(),
                "{} or Debian's python3-torch is missing: `cargo xtask ci` installs both",
                bin.display()
            );
            eprintln!("skipping Ray {version}: run `cargo xtask ci` once to install Ray and torch");
            trials.push(Trial::test(format!("ray_{version}"), || Ok(())).with_ignored_flag(true));
            continue;
        };
        trials.extend(cluster_trials(version, bin, torch.path().to_owned()));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// A folder holding only torch and numpy from Debian's packages, for PYTHONPATH: the rest of
/// dist-packages stays out of the venvs.
fn torch_path() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("temp dir");
    for package in ["torch", "numpy"] {
        let target = Path::new(DEBIAN_PACKAGES).join(package);
        if !target.is_dir() {
            return None;
        }
        std::os::unix::fs::symlink(target, dir.path().join(package)).expect("symlink");
    }
    Some(dir)
}

/// The trials of one version on one cluster, started by the first trial and kept for the rest.
fn cluster_trials(version: &'static str, bin: PathBuf, torch: PathBuf) -> Vec<Trial> {
    type Case = fn(&Cluster) -> Result<(), Failed>;
    let cases: [(&str, Case); 4] = [
        ("without_a_fabric_the_check_measures_both_nodes_and_passes", measures_without_a_fabric),
        ("ranks_on_tcp_sockets_fail_an_rdma_deployment", sockets_fail_rdma),
        ("a_check_past_its_time_is_stopped", past_its_time),
        ("a_lost_node_fails_the_check", lost_node),
    ];
    let cluster: Arc<Slot> = Arc::default();
    let count = cases.len();
    cases
        .into_iter()
        .enumerate()
        .map(|(index, (name, case))| {
            let (cluster, bin, torch) = (cluster.clone(), bin.clone(), torch.clone());
            Trial::test(format!("ray_{version}::{name}"), move || {
                let started = {
                    let mut slot = cluster.lock().unwrap();
                    slot.get_or_insert_with(|| Cluster::start(version, &bin, &torch).map(Arc::new)).clone()
                };
                let result = match started {
                    Ok(started) => case(&started),
                    Err(e) => Err(e.into()),
                };
                // The last trial stops this version's cluster before the next version starts.
                if index + 1 == count {
                    cluster.lock().unwrap().take();
                }
                result
            })
        })
        .collect()
}

/// A version's cluster, started by its first trial (or why it did not start).
type Slot = std::sync::Mutex<Option<Result<Arc<Cluster>, String>>>;

struct Cluster {
    // Dropped in order: the second node, then the head.
    node: Node,
    head: Head,
}

impl Cluster {
    fn start(version: &'static str, bin: &Path, torch: &Path) -> Result<Cluster, String> {
        let env = [("PYTHONPATH", torch.display().to_string())];
        let head = Head::start_with(version, bin, &RAY_VERSIONS, &env)?;
        // The dashboard's job manager attaches to a raylet by IP at its first job, and both
        // nodes here share this machine's: attach it to the head's before the second node
        // exists, as on a cluster where the head has an IP of its own. (Attached to the second
        // node, Ray 2.46 fails every later job once that node is gone.)
        let first = Command::new("timeout")
            .args(["120", &bin.join("ray").display().to_string(), "job", "submit", "--address", &head.address, "--", "true"])
            .output()
            .map_err(|e| e.to_string())?;
        if !first.status.success() {
            return Err(format!("a first job did not run on ray {version}: {}", String::from_utf8_lossy(&first.stderr)));
        }
        let node = Node::join(&head, bin, &env)?;
        Ok(Cluster { node, head })
    }
}

/// `gke-rl fabric-check` against the cluster with `config`.
fn fabric_check(cluster: &Cluster, config: &str, extra: &[&str]) -> Output {
    gke_rl(config, &[&["fabric-check", "--address", &cluster.head.address, "--sizes", "64K,1M"], extra].concat())
}

/// The gke-rl binary in a folder holding `config` as gke-rl.yaml.
fn gke_rl(config: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("gke-rl.yaml"), config).expect("config");
    let out = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .current_dir(dir.path())
        .args(args)
        .env_remove("RAY_ADDRESS")
        .env("KUBECONFIG", dir.path().join("no-kubeconfig"))
        .output()
        .expect("gke-rl runs");
    common::exited_cleanly(out)
}

fn check(condition: bool, what: &str, out: &Output) -> Result<(), Failed> {
    common::clean_exit(out)?;
    if condition {
        return Ok(());
    }
    Err(format!("{what}\nexit: {:?}\nstdout:\n{}\nstderr:\n{}", out.status.code(), stdout(out), stderr(out)).into())
}

const TWO_NODES_NO_FABRIC: &str = "topology:\n  node_count: 2\nfabric:\n  mode: \"off\"\n";
const TWO_A4_NODES: &str = "topology:\n  node_count: 2\n";

fn measures_without_a_fabric(cluster: &Cluster) -> Result<(), Failed> {
    let out = fabric_check(cluster, TWO_NODES_NO_FABRIC, &[]);
    let report = stdout(&out);
    check(out.status.code() == Some(0), "a cluster without a fabric is measured and passes", &out)?;
    check(report.contains("fabric-check: 2 nodes, no GPUs: gloo on CPU, over TCP"), "both nodes took part", &out)?;
    check(report.matches(" gloo (1)\n").count() == 2, "one rank per node, each named with its transport", &out)?;
    check(report.contains("0-0") && report.contains("1-1"), "the nodes' ranks", &out)?;
    check(report.contains("64 KiB") && report.contains("1 MiB") && report.contains("GB/s"), "the sweep", &out)?;
    check(report.contains("measured only"), "no fabric to judge", &out)?;
    check(stderr(&out).contains("job gke-rl-fabric-check-") && !report.contains("NCCL"), "the job's own log stays out", &out)
}

fn sockets_fail_rdma(cluster: &Cluster) -> Result<(), Failed> {
    let out = fabric_check(cluster, TWO_A4_NODES, &["--json"]);
    check(out.status.code() == Some(1), "an A4 deployment whose ranks use TCP fails", &out)?;
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).map_err(|e| format!("not JSON: {e}\n{}", stdout(&out)))?;
    let problems = json["problems"].as_array().cloned().unwrap_or_default();
    let sockets = problems.iter().filter(|p| p["problem"] == "not-gib" && p["transport"] == "gloo").count();
    check(json["passed"] == false && sockets == 2, "both nodes are named for using sockets", &out)?;
    check(problems.iter().any(|p| p["problem"] == "slow" && p["line_rate"] == 400.0), "far below A4's 400 GB/s", &out)?;
    check(json["report"]["nodes"].as_array().map(Vec::len) == Some(2), "the report lists both nodes", &out)
}

fn past_its_time(cluster: &Cluster) -> Result<(), Failed> {
    // 1 s for the job, 1 s more to start: it cannot even start its driver in that time.
    let out = fabric_check(cluster, TWO_NODES_NO_FABRIC, &["--check-timeout", "1s"]);
    let message = stderr(&out);
    check(out.status.code() == Some(2) && message.contains("did not end within 2s; it was asked to stop"), "the wait is bounded", &out)?;
    let id = message.split_whitespace().find(|w| w.starts_with("gke-rl-fabric-check-")).ok_or("no job id")?.to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let status = gke_rl(TWO_NODES_NO_FABRIC, &["status", &id, "--address", &cluster.head.address]);
        if stdout(&status).contains("STOPPED") {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return check(false, "the job was stopped", &status);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn lost_node(cluster: &Cluster) -> Result<(), Failed> {
    cluster.node.stop();
    cluster.head.wait_for_nodes(1, Duration::from_secs(120))?;
    let out = fabric_check(cluster, TWO_NODES_NO_FABRIC, &[]);
    let report = stdout(&out);
    check(out.status.code() == Some(1), "a cluster that lost a node fails the check", &out)?;
    check(report.contains("the check job failed: 1 node; an inter-node collective needs at least two"), "the job says why", &out)?;
    check(report.contains("1 of the 2 GPU nodes took part"), "it counts the nodes left", &out)
}
