//! Real two-node Ray clusters: a head and a second node joined with `ray start --address`, for
//! each Ray in `gke_rl_ray::TESTED_RAY`, from `target/ray/<version>/`; the second node is killed
//! and restarted as a preempted Spot VM would be. Every Ray runs the recovery of a killed node,
//! the check across both nodes and a lost node; the other trials are spread over the Rays.
//!
//! - `gke-rl fabric-check`: no GPU here, so the job's collective is gloo on CPU (torch from
//!   Debian's python3-torch, which `cargo xtask ci` installs). It places one task per node,
//!   reduces across both, reports each node's transport and the sweep, and gke-rl judges it.
//! - `gke-rl storage-check`: a local folder stands in for the Lustre mount. Both nodes write,
//!   read back each other's files and make small files; the report names each node, the
//!   mount's file system (not Lustre here), and a node slowed from outside (its processes
//!   stopped most of the time, as a starved VM's are). A stop and a kill leave nothing behind.
//!   The newest Ray's venv has the torch of NeMo-RL's newest release (which `cargo xtask ci`
//!   installs there): its nodes save a real distributed checkpoint on CPU, and the prediction
//!   comes from it; the other Rays see Debian's torch 1.13, which the save pass refuses by name.
//! - `gke-rl submit`'s recovery: a job that trains in steps on the second node (its actor needs
//!   the `trainer` resource only that node has), writes `step_N` markers and resumes from the
//!   newest; the node is killed mid-run and restarted.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{project_root, stderr, stdout};
use gke_rl_kube::fake::Pods;
use gke_rl_ray::TESTED_RAY;
use gke_rl_test_support::ray_head::{self, Head, Node};
use libtest_mimic::{Arguments, Failed, Trial};

/// Debian's CPU build of torch (python3-torch) and its numpy, for the venvs' Python 3.11.
const DEBIAN_PACKAGES: &str = "/usr/lib/python3/dist-packages";

fn main() {
    let mut args = Arguments::from_args();
    // The last trial takes a node away: the trials run in order, one at a time.
    args.test_threads = Some(1);
    let mut trials = Vec::new();
    let torch = torch_path();
    for version in TESTED_RAY {
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
        // The newest Ray's own torch, where `ci` installed it, stays in front of Debian's.
        let own_torch = Command::new(bin.join("python")).args(["-c", "import numpy, torch"]).output().is_ok_and(|o| o.status.success());
        assert!(
            own_torch || version != gke_rl_ray::NEWEST_TESTED_RAY || std::env::var_os("CI").is_none(),
            "{} has no torch of its own: `cargo xtask ci` installs it",
            bin.display()
        );
        let path = if own_torch { EMPTY.get_or_init(|| tempfile::tempdir().expect("temp dir")).path() } else { torch.path() };
        trials.extend(cluster_trials(version, bin, path.to_owned()));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// An empty PYTHONPATH, for a venv with a torch of its own.
static EMPTY: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();

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

/// Which Rays a trial runs on.
enum On {
    /// Every tested Ray: a run recovering from a killed node.
    Every,
    /// One Ray: the expensive trials, each on the next Ray of [`TESTED_RAY`] in turn, so that
    /// each runs on one Ray and every Ray runs some. The paths every Ray must take (a run
    /// recovering from a killed node, the check across both nodes, a lost node, the guard's
    /// reading of the Jobs API) are [`On::Every`] or [`On::Ends`].
    Spread,
    /// The oldest and the newest tested Ray: paths every Ray takes (the checks across both
    /// nodes, a lost node, the guard's reading of the Jobs API), run on the two Rays that
    /// bracket the others to keep CI's run short.
    Ends,
}

/// The trials of one version on one cluster, started by the first trial and kept for the rest.
fn cluster_trials(version: &'static str, bin: PathBuf, torch: PathBuf) -> Vec<Trial> {
    type Case = fn(&Cluster) -> Result<(), Failed>;
    // In this order: the recovery trials first, since a stopped check's collective may hold the
    // second node's CPUs until its rendezvous times out; `lost_node` takes the node away, and
    // `head_restarted` restarts the whole cluster.
    let cases: [(&str, On, Case); 22] = [
        ("a_program_failure_is_not_retried", On::Spread, application_error),
        ("max_restarts_0_fails_on_a_lost_node_as_before", On::Spread, no_restarts),
        (
            "a_preempted_run_recovers_in_the_cluster_with_nobody_watching_and_sets_aside_a_half_written_checkpoint",
            On::Every,
            nobody_watching,
        ),
        ("a_preempted_run_is_observed_through_the_port_forward", On::Spread, preempted),
        ("a_node_that_never_comes_back_ends_in_a_clear_failed", On::Spread, never_returns),
        ("a_run_preempted_between_a_saves_renames_resumes_from_the_checkpoint_it_swapped_out", On::Spread, preempted_mid_swap),
        ("a_run_preempted_during_an_async_save_resumes_from_the_newest_durable_one", On::Spread, preempted_mid_async_save),
        ("a_killed_supervisor_is_resubmitted_by_the_keeper", On::Spread, supervisor_killed),
        ("a_run_is_known_by_its_supervisor_not_by_an_id_prefix", On::Spread, run_identity),
        ("a_second_run_never_trains_into_a_live_runs_checkpoint_folder", On::Spread, one_writer),
        ("without_a_fabric_the_check_measures_both_nodes_and_passes", On::Ends, measures_without_a_fabric),
        ("ranks_on_tcp_sockets_fail_an_rdma_deployment", On::Spread, sockets_fail_rdma),
        ("a_check_past_its_time_is_stopped", On::Spread, past_its_time),
        ("the_storage_check_measures_both_nodes_and_removes_what_it_wrote", On::Ends, storage_measures),
        ("the_storage_check_names_a_node_slowed_from_outside", On::Spread, storage_slow_node),
        ("a_storage_check_stopped_by_ctrl_c_removes_what_it_wrote", On::Spread, storage_interrupted),
        ("a_killed_storage_checks_folder_is_removed_by_the_next", On::Spread, storage_killed),
        // The walkthrough trains on the second node.
        ("a_run_is_exported_destroyed_and_resumed_in_another_zone", On::Spread, export_destroy_and_resume_in_another_zone),
        ("export_refuses_what_it_cannot_keep", On::Spread, export_refuses_what_it_cannot_keep),
        ("a_lost_node_fails_the_check", On::Ends, lost_node),
        ("a_restarted_head_is_resubmitted_in_the_cluster", On::Spread, head_restarted),
        ("the_idle_guard_keeps_a_busy_cluster_and_suspends_an_idle_one", On::Ends, idle_guard),
    ];
    let index = TESTED_RAY.iter().position(|v| *v == version).unwrap_or(0);
    let mut spread = 0;
    let mut mine = |on: &On| match on {
        On::Every => true,
        On::Ends => index == 0 || index + 1 == TESTED_RAY.len(),
        On::Spread => {
            spread += 1;
            (spread - 1) % TESTED_RAY.len() == index
        }
    };
    let cluster: Arc<Slot> = Arc::default();
    // The recovery benchmark (`cargo xtask bench recovery`) runs alone, when asked for.
    let bench_wanted = std::env::var_os("GKE_RL_BENCH_RECOVERY").is_some();
    let cases: Vec<(&str, Case)> = if bench_wanted {
        vec![("recovery_overhead", recovery_overhead)]
    } else {
        cases.into_iter().filter(|(_, on, _)| mine(on)).map(|(name, _, case)| (name, case)).collect()
    };
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
                let began = std::time::Instant::now();
                let result = match started {
                    Ok(started) => case(&started),
                    Err(e) => Err(e.into()),
                };
                // Where the suite's time goes, for keeping CI's run short.
                eprintln!("ray_{version}::{name} took {:.0} s", began.elapsed().as_secs_f64());
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
type Slot = Mutex<Option<Result<Arc<Cluster>, String>>>;

struct Cluster {
    // Dropped in order: the second node, then the head.
    node: Mutex<Option<Node>>,
    /// `None` only while it restarts.
    head: Mutex<Option<Head>>,
    version: &'static str,
    /// The head's dashboard: the same after a restart (the head's ports are fixed).
    address: String,
    bin: PathBuf,
    env: [(&'static str, String); 2],
}

/// The cluster's run key, in the Ray processes' environment as KubeRay gives it to the head from
/// the cluster's Secret, and in the keeper's.
const RUN_KEY: &str = "gke-rl-test-run-key-6d1f0c2a9b";

impl Cluster {
    fn start(version: &'static str, bin: &Path, torch: &Path) -> Result<Cluster, String> {
        let env = [("PYTHONPATH", torch.display().to_string()), (gke_rl::auth::RUN_KEY_VARIABLE, RUN_KEY.to_owned())];
        let head = Cluster::start_head(version, bin, &env)?;
        let address = head.address.clone();
        let cluster = Cluster { node: Mutex::new(None), head: Mutex::new(Some(head)), version, address, bin: bin.to_owned(), env };
        cluster.join()?;
        Ok(cluster)
    }

    fn start_head(version: &'static str, bin: &Path, env: &[(&str, String)]) -> Result<Head, String> {
        let head = Head::start_with(version, bin, env)?;
        // The dashboard's job manager attaches to a raylet by IP at its first job: attach it
        // to the head's before the second node exists. (Attached to the second node, Ray 2.46
        // fails every later job once that node is gone.)
        let mut first = Command::new("timeout");
        if let Some(token) = &head.token {
            // Ray's CLI sends its token only in token mode.
            first.env("RAY_AUTH_MODE", "token").env("RAY_AUTH_TOKEN", token);
        }
        let first = first
            .args(["120", &bin.join("ray").display().to_string(), "job", "submit", "--address", &head.address, "--", "true"])
            .output()
            .map_err(|e| e.to_string())?;
        if !first.status.success() {
            return Err(format!("a first job did not run on ray {version}: {}", String::from_utf8_lossy(&first.stderr)));
        }
        Ok(head)
    }

    /// Starts the second node (again), with the resource the trainer actor needs.
    fn join(&self) -> Result<(), String> {
        let head = self.head.lock().unwrap();
        let node = Node::join(head.as_ref().ok_or("no head")?, &self.bin, &self.env, &[r#"--resources={"trainer": 1}"#.to_owned()], 2)?;
        *self.node.lock().unwrap() = Some(node);
        Ok(())
    }

    /// Kills the second node's processes and waits until the head counts it dead.
    fn kill_node(&self) -> Result<(), String> {
        if let Some(node) = self.node.lock().unwrap().take() {
            node.stop();
        }
        self.head.lock().unwrap().as_ref().ok_or("no head")?.wait_for_nodes(1, Duration::from_secs(120))
    }

    /// Kills every Ray process, head included, and starts them again on the same ports: the
    /// new head knows no job and no package.
    fn restart(&self) -> Result<(), String> {
        if let Some(node) = self.node.lock().unwrap().take() {
            node.stop();
        }
        let mut head = self.head.lock().unwrap();
        // The old head stops, freeing its ports, before the new one starts.
        drop(head.take());
        let restarted = Cluster::start_head(self.version, &self.bin, &self.env)?;
        if restarted.address != self.address {
            return Err(format!("the restarted head listens at {}, not {}", restarted.address, self.address));
        }
        *head = Some(restarted);
        drop(head);
        self.join()
    }
}

/// `gke-rl fabric-check` against the cluster with `config`.
fn fabric_check(cluster: &Cluster, config: &str, extra: &[&str]) -> Output {
    gke_rl(config, &[&["fabric-check", "--address", &cluster.address, "--sizes", "64K,1M"], extra].concat())
}

/// The gke-rl binary in a folder holding `config` as gke-rl.yaml.
fn gke_rl(config: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("gke-rl.yaml"), config).expect("config");
    let out = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .env("GKE_RL_RUNS_DIR", common::runs_dir())
        .current_dir(dir.path())
        .args(args)
        .env_remove("RAY_ADDRESS")
        .env("RAY_AUTH_TOKEN", ray_head::test_token())
        .env("KUBECONFIG", dir.path().join("no-kubeconfig"))
        .output()
        .expect("gke-rl runs");
    common::exited_cleanly(out)
}

fn check(condition: bool, what: &str, out: &Output) -> Result<(), Failed> {
    common::clean_exit(out)?;
    if [stdout(out), stderr(out)].iter().any(|text| text.contains(ray_head::test_token())) {
        return Err(format!("{what}: the Ray token was printed").into());
    }
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
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = gke_rl(TWO_NODES_NO_FABRIC, &["status", &id, "--address", &cluster.address]);
        if stdout(&status).contains("STOPPED") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return check(false, "the job was stopped", &status);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// `gke-rl storage-check` of a fresh folder standing in for the mount, each node writing
/// `size`: its output and the folder.
fn storage_check(cluster: &Cluster, size: &str, extra: &[&str]) -> (Output, tempfile::TempDir) {
    let mount = tempfile::tempdir().expect("temp dir");
    let dir = mount.path().display().to_string();
    let out =
        gke_rl(TWO_NODES_NO_FABRIC, &[&["storage-check", "--address", &cluster.address, "--dir", &dir, "--size", size], extra].concat());
    (out, mount)
}

/// What is left in the checks' folder under `mount`.
fn left_in(mount: &Path) -> Vec<String> {
    listing(&mount.join("gke-rl/storage-check"))
}

fn json_of(out: &Output) -> Result<serde_json::Value, Failed> {
    serde_json::from_str(&stdout(out)).map_err(|e| format!("not JSON: {e}\n{}\n{}", stdout(out), stderr(out)).into())
}

fn storage_measures(cluster: &Cluster) -> Result<(), Failed> {
    let (out, mount) = storage_check(cluster, "64M", &["--json", "--raw-only"]);
    // A local folder is no Lustre: the check measures, and fails on the mount and the tier.
    check(out.status.code() == Some(1), "a folder that is not Lustre fails the check", &out)?;
    let json = json_of(&out)?;
    let nodes = json["report"]["nodes"].as_array().cloned().unwrap_or_default();
    check(nodes.len() == 2, "both nodes report", &out)?;
    let ips: Vec<&str> = nodes.iter().filter_map(|n| n["ip"].as_str()).collect();
    check(ips.len() == 2 && ips[0] != ips[1] && ips.contains(&"127.0.0.2"), "each node by its address", &out)?;
    for node in &nodes {
        // 8 ranks (A4's GPUs) of 8 MiB each, written, and another node's read back.
        let moved = [&node["write"]["bytes"], &node["read"]["bytes"]].iter().all(|b| b.as_u64() == Some(64 << 20));
        check(moved && node["metadata"]["files"] == 2000, "each node moved its share and made its small files", &out)?;
    }
    let problems = json["verdict"]["problems"].as_array().cloned().unwrap_or_default();
    let not_lustre = problems.iter().filter(|p| p["problem"] == "not-lustre").count();
    check(not_lustre == 2 && !problems.iter().any(|p| p["problem"] == "job-failed"), "the mount is named as not Lustre", &out)?;
    check(json["verdict"]["write"]["bytes"] == 128u64 << 20 && json["expected"]["ceiling"]["tier"] == 1000, "the aggregate", &out)?;
    check(json["verdict"]["prediction"]["save_s"].as_f64().is_some_and(|s| s > 0.0), "the configured model's save, predicted", &out)?;
    check(left_in(mount.path()).is_empty(), "the check removed what it wrote", &out)?;
    let (text, mount) = storage_check(cluster, "16M", &[]);
    let said = stdout(&text);
    check(
        said.contains("storage-check: 2 nodes, 8 files of 2 MB each in parallel") && said.contains("slowest writers: "),
        "the tables",
        &text,
    )?;
    check(said.contains("not Managed Lustre") && said.contains("each save of 1.02 TB takes about"), "the verdict and the save", &text)?;
    // The save pass: a real checkpoint on CPU where the venv has a torch that can, else why not.
    if cluster.version == gke_rl_ray::NEWEST_TESTED_RAY {
        check(
            said.contains("save: a distributed checkpoint of ")
                && said.contains(" MB from the host memory: no GPU on the nodes (torch 2.11.0")
                && said.contains("(from a distributed checkpoint the check saved from host memory: no GPU on the nodes)"),
            "both nodes saved a checkpoint, and the prediction comes from it",
            &text,
        )?;
    } else {
        check(
            said.contains("save: not measured: torch 1.13")
                && said.contains("is older than 2.3")
                && said.contains("(from the measured write rate"),
            "an old torch is refused by name, and the raw rate predicts at its efficiency",
            &text,
        )?;
    }
    check(left_in(mount.path()).is_empty(), "the text run removed what it wrote too", &text)
}

fn storage_slow_node(cluster: &Cluster) -> Result<(), Failed> {
    let slowed = cluster.node.lock().unwrap().as_ref().map(|node| node.throttle(0.9)).ok_or("no second node")?;
    let (out, _mount) = storage_check(cluster, "128M", &["--json", "--raw-only"]);
    drop(slowed);
    let json = json_of(&out)?;
    let problems = json["verdict"]["problems"].as_array().cloned().unwrap_or_default();
    let slow: Vec<&serde_json::Value> = problems.iter().filter(|p| p["problem"] == "slow-node").collect();
    check(!slow.is_empty() && slow.iter().all(|p| p["ip"] == "127.0.0.2"), "the slowed node, and only it, is named", &out)?;
    let report = json["report"]["nodes"].as_array().cloned().unwrap_or_default();
    let rate = |ip: &str| {
        report
            .iter()
            .find(|n| n["ip"] == ip)
            .and_then(|n| Some(n["write"]["bytes"].as_f64()? / (n["write"]["end"].as_f64()? - n["write"]["start"].as_f64()?)))
    };
    let head = report.iter().find_map(|n| n["ip"].as_str().filter(|ip| *ip != "127.0.0.2")).ok_or("no head node")?;
    check(rate("127.0.0.2") < rate(head), "it wrote slower", &out)
}

fn storage_interrupted(cluster: &Cluster) -> Result<(), Failed> {
    let mount = tempfile::tempdir().expect("temp dir");
    let config = tempfile::tempdir().expect("temp dir");
    std::fs::write(config.path().join("gke-rl.yaml"), TWO_NODES_NO_FABRIC).expect("config");
    let dir = mount.path().display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .current_dir(config.path())
        .args(["storage-check", "--address", &cluster.address, "--dir", &dir, "--size", "4G", "--raw-only"])
        .env_remove("RAY_ADDRESS")
        .env("RAY_AUTH_TOKEN", ray_head::test_token())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gke-rl runs");
    // Ctrl-C once the ranks are writing.
    let writing = wait_for(Duration::from_secs(120), || find_files(&mount.path().join("gke-rl/storage-check"), "rank-"));
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let out = common::exited_cleanly(child.wait_with_output().expect("gke-rl ends"));
    check(writing, "the check was writing when it was interrupted", &out)?;
    check(out.status.code() == Some(130) && stderr(&out).contains("; it removed what it wrote"), "Ctrl-C stops the check", &out)?;
    check(left_in(mount.path()).is_empty(), "nothing is left", &out)
}

fn storage_killed(cluster: &Cluster) -> Result<(), Failed> {
    let mount = tempfile::tempdir().expect("temp dir");
    let checks = mount.path().join("gke-rl/storage-check");
    let dir = mount.path().display().to_string();
    let address = cluster.address.clone();
    let first = std::thread::spawn(move || {
        gke_rl(TWO_NODES_NO_FABRIC, &["storage-check", "--address", &address, "--dir", &dir, "--size", "4G", "--raw-only"])
    });
    // The driver killed mid-write, as an OOM kill or a lost head would: it cleans nothing.
    let writing = wait_for(Duration::from_secs(120), || find_files(&checks, "rank-"));
    let killed = driver_group(&checks)
        .map(|group| Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).status().is_ok_and(|s| s.success()));
    let out = first.join().map_err(|_| "the first check panicked")?;
    check(writing && killed == Some(true), "the first check's driver was killed mid-write", &out)?;
    let left = left_in(mount.path());
    check(left.len() == 1, "a killed check leaves its folder", &out)?;
    // Long after: its lease is stale.
    let lease = std::fs::File::options().write(true).open(checks.join(&left[0]).join(".lease")).map_err(|e| e.to_string())?;
    lease.set_modified(std::time::SystemTime::now() - Duration::from_secs(600)).map_err(|e| e.to_string())?;
    let dir = mount.path().display().to_string();
    let next = gke_rl(TWO_NODES_NO_FABRIC, &["storage-check", "--address", &cluster.address, "--dir", &dir, "--size", "16M", "--raw-only"]);
    check(stdout(&next).contains(&format!("removed {}, left by a check that was killed", left[0])), "the next check says so", &next)?;
    check(left_in(mount.path()).is_empty(), "and removes it", &next)
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned())).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Whether a file whose name starts with `prefix` is anywhere under `dir`.
fn find_files(dir: &Path, prefix: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.filter_map(Result::ok).any(|e| {
        let path = e.path();
        e.file_name().to_string_lossy().starts_with(prefix) || (path.is_dir() && !path.is_symlink() && find_files(&path, prefix))
    })
}

/// Polls `ready` every 100 ms until it holds or `within` passes.
fn wait_for(within: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// The process group of the storage-check driver writing under `checks` (Ray runs each job's
/// entrypoint in a session of its own).
fn driver_group(checks: &Path) -> Option<String> {
    let name = std::fs::read_dir(checks).ok()?.filter_map(Result::ok).next()?.file_name().to_string_lossy().into_owned();
    std::fs::read_dir("/proc").ok()?.filter_map(Result::ok).find_map(|proc| {
        let cmdline = std::fs::read(proc.path().join("cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline);
        if !(cmdline.contains("storage_check.py") && cmdline.contains(&name)) {
            return None;
        }
        let stat = std::fs::read_to_string(proc.path().join("stat")).ok()?;
        // pid (comm) state ppid pgrp …: the comm may hold spaces, so after its `)`.
        stat.rsplit_once(')')?.1.split_whitespace().nth(2).map(str::to_owned)
    })
}

fn lost_node(cluster: &Cluster) -> Result<(), Failed> {
    cluster.kill_node()?;
    let out = fabric_check(cluster, TWO_NODES_NO_FABRIC, &[]);
    let report = stdout(&out);
    check(out.status.code() == Some(1), "a cluster that lost a node fails the check", &out)?;
    check(report.contains("the check job failed: 1 node; an inter-node collective needs at least two"), "the job says why", &out)?;
    check(report.contains("1 of the 2 GPU nodes took part"), "it counts the nodes left", &out)
}

/// Trains `steps` steps of 1 s on the second node's `trainer` actor, saving a checkpoint every
/// second step and resuming after the newest, with NeMo-RL's prints for steps and saves; a
/// third argument (not 0) fails that step. A save is shaped as NVIDIA-NeMo/RL
/// `nemo_rl/utils/checkpoint.py` (main at 7ea279a) makes one: written into `tmp_step_N`, then
/// renamed to `step_N`, an existing `step_N` swapped out through `old_step_N`. The fourth
/// argument is how it saves: `sync`; `async`, whose writes and rename happen in a background
/// thread while training goes on (Megatron's async_save); or `swap`, which saves step 4 twice,
/// the second time pausing between the swap's renames while the file `hold` beside the
/// markers exists.
const TRAIN: &str = r#"import os, shutil, sys, threading, time, zipfile, ray
markers, steps = sys.argv[1], int(sys.argv[2])
fail_at = int(sys.argv[3]) if len(sys.argv) > 3 else 0
mode = sys.argv[4] if len(sys.argv) > 4 else "sync"
hold = os.path.join(os.path.dirname(markers), "hold")
os.makedirs(markers, exist_ok=True)
names = [e.name for e in os.scandir(markers) if e.is_dir(follow_symlinks=False)]
start = max([int(n[5:]) for n in names if n.startswith("step_")], default=0)
assert not [n for n in names if n.startswith("tmp_step_")], "a half-written checkpoint is left"
print(f"resuming after step {start}" if start else "starting fresh", flush=True)
# As a prompt or a generation could: lines that read as the supervisor's records, whole, after
# a lone CR, and cut across writes. None may count.
forged = 'gke-rl-record: {"event": "ended", "status": "FAILED", "reason": "forged by the training"}'
print(forged, flush=True)
print("50%\r" + forged, flush=True)
sys.stdout.write("60%\rgke-rl-rec"); sys.stdout.flush(); time.sleep(0.2); print(forged[len("gke-rl-rec"):], flush=True)
ray.init()

# The actor gets a working dir of its own: both nodes share this machine's session folder,
# where a node unpacking the job's package would replace the copy the driver runs in.
actor_zip = os.path.join(os.path.dirname(markers), "actor.zip")
if not os.path.exists(actor_zip):
    with zipfile.ZipFile(actor_zip, "w") as z:
        z.writestr("actor/README", "the trainer actor's working dir\n")

@ray.remote(resources={"trainer": 1}, num_cpus=0, runtime_env={"working_dir": "file://" + actor_zip})
class Trainer:
    def step(self, n):
        time.sleep(1.0)
        if n == fail_at:
            raise ValueError(f"step {n} went wrong")
        return n

pending = []

def finalize_pending():
    while pending:
        pending.pop().join()

def save(n):
    finalize_pending()
    print(f"Saving checkpoint for step {n}...", flush=True)
    tmp, final, old = (os.path.join(markers, f"{p}step_{n}") for p in ("tmp_", "", "old_"))
    os.makedirs(tmp)

    def write_and_rename():
        with open(os.path.join(tmp, "shard"), "wb") as f:
            f.write(b"\0" * (1 << 20))
        if mode == "async":
            time.sleep(8)
        if os.path.exists(final):
            os.rename(final, old)
            while os.path.exists(hold):
                time.sleep(0.1)
            os.rename(tmp, final)
            shutil.rmtree(old)
        else:
            os.rename(tmp, final)

    if mode == "async":
        # A daemon, as NeMo-RL's finalization thread: it dies with the training.
        pending.append(threading.Thread(target=write_and_rename, daemon=True))
        pending[-1].start()
    else:
        write_and_rename()
        print(f"Saved checkpoint to {final}", flush=True)

trainer = Trainer.remote()
for n in range(start + 1, steps + 1):
    print(f"========================= Step {n}/{steps} =========================", flush=True)
    ray.get(trainer.step.remote(n))
    if n % 2 == 0:
        save(n)
        if mode == "swap" and n == 4 and not start:
            save(n)
    timer = "\n  • checkpointing: 0.10s (10.0%)" if n % 2 == 0 else ""
    print(f"trained step {n}\n⏱️  Timing:\n  • Total step time: 1.00s{timer}", flush=True)
finalize_pending()
"#;

/// `gke-rl submit` of the training script, running in the background, its output in files.
struct Training {
    child: std::process::Child,
    /// Where it runs: the script and its output.
    dir: PathBuf,
    /// Its checkpoint folder, where the script writes its markers.
    markers: PathBuf,
    /// Its runs folder, where the supervisor keeps its records.
    runs: PathBuf,
    _scratch: Option<tempfile::TempDir>,
    started: Instant,
}

impl Training {
    /// Through `--address`, in a scratch folder.
    fn start(cluster: &Cluster, steps: u32, extra: &[&str], fail_at: Option<u32>) -> Training {
        Training::start_saving(cluster, steps, extra, fail_at, "sync")
    }

    /// [`Training::start`], saving as `mode` says (see [`TRAIN`]); `swap` starts holding.
    fn start_saving(cluster: &Cluster, steps: u32, extra: &[&str], fail_at: Option<u32>, mode: &str) -> Training {
        let scratch = tempfile::tempdir().expect("temp dir");
        if mode == "swap" {
            std::fs::write(scratch.path().join("hold"), "").expect("hold");
        }
        std::fs::write(scratch.path().join("gke-rl.yaml"), TWO_NODES_NO_FABRIC).expect("config");
        let mut command = Command::new(env!("CARGO_BIN_EXE_gke-rl"));
        command
            .args(["submit", "--address", &cluster.address])
            .env("HF_TOKEN", "hf_gkerlTestSecretValue42")
            .env("RAY_AUTH_TOKEN", ray_head::test_token())
            .env_remove("RAY_ADDRESS")
            .env("KUBECONFIG", scratch.path().join("no-kubeconfig"));
        let mut training = Training::spawn_saving(command, scratch.path(), steps, extra, fail_at, mode);
        training._scratch = Some(scratch);
        training
    }

    /// `command` (gke-rl submit and how it reaches the cluster) in `dir`, with the script.
    fn spawn(command: Command, dir: &Path, steps: u32, extra: &[&str], fail_at: Option<u32>) -> Training {
        Training::spawn_saving(command, dir, steps, extra, fail_at, "sync")
    }

    /// [`Training::spawn`], saving as `mode` says (see [`TRAIN`]).
    fn spawn_saving(command: Command, dir: &Path, steps: u32, extra: &[&str], fail_at: Option<u32>, mode: &str) -> Training {
        Training::spawn_into(command, dir, &dir.join("markers"), &dir.join("runs"), steps, extra, fail_at, mode)
    }

    /// [`Training::spawn_saving`], its markers in `markers` and its records in `runs`.
    #[allow(clippy::too_many_arguments)] // one run's whole setup
    fn spawn_into(
        mut command: Command,
        dir: &Path,
        markers_dir: &Path,
        runs_dir: &Path,
        steps: u32,
        extra: &[&str],
        fail_at: Option<u32>,
        mode: &str,
    ) -> Training {
        std::fs::write(dir.join("train.py"), TRAIN).expect("script");
        // A package of its own for every run: both nodes share this machine's session folder,
        // and an unpacked copy an earlier run left there may have been replaced or removed by
        // the other node (a second machine has its own).
        let nonce = format!("{:?} {:?}\n", dir, std::time::SystemTime::now());
        std::fs::write(dir.join("run.txt"), nonce).expect("run file");
        let markers = markers_dir.display().to_string();
        let runs = runs_dir.display().to_string();
        let file = |name: &str| std::fs::File::create(dir.join(name)).expect("output file");
        let child = command
            .current_dir(dir)
            .args(["--include", "train.py", "--include", "run.txt", "--runs-dir", &runs, "--checkpoint-dir", &markers])
            .args(extra)
            .args(["--", "python", "train.py", &markers, &steps.to_string(), &fail_at.unwrap_or(0).to_string(), mode])
            .stdout(file("stdout"))
            .stderr(file("stderr"))
            .spawn()
            .expect("gke-rl runs");
        Training {
            child,
            dir: dir.to_owned(),
            markers: markers_dir.to_owned(),
            runs: runs_dir.to_owned(),
            _scratch: None,
            started: Instant::now(),
        }
    }

    fn markers(&self) -> usize {
        checkpoints_in(&self.markers)
    }

    /// Everything gke-rl and the job printed.
    fn output(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        format!("{}{}", read("stdout"), read("stderr"))
    }

    /// The run's folder, where its supervisor keeps its records.
    fn runs(&self) -> PathBuf {
        self.runs.clone()
    }

    /// The run's id, once gke-rl has said it.
    fn id(&self) -> Result<String, Failed> {
        self.wait_until("the submission", |t| t.stderr().contains(" submitted"))?;
        let said = self.stderr();
        Ok(said.split_whitespace().skip_while(|w| *w != "job").nth(1).ok_or("no job id")?.to_owned())
    }

    /// The pid of the newest supervisor of the run, from its records.
    fn supervisor_pid(&self, id: &str) -> Option<i32> {
        let events = std::fs::read_to_string(self.runs().join(id).join("events.jsonl")).ok()?;
        events
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find_map(|e| e["pid"].as_i64())
            .map(|p| p as i32)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    /// Waits (at most 3 minutes) until `ready` holds.
    fn wait_until(&self, what: &str, ready: impl Fn(&Training) -> bool) -> Result<Duration, Failed> {
        let deadline = Instant::now() + Duration::from_secs(180);
        while !ready(self) {
            if Instant::now() > deadline {
                return Err(format!("{what} did not happen within 180 s; gke-rl said:\n{}", self.stderr()).into());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(self.started.elapsed())
    }

    /// Waits (at most 5 minutes) for gke-rl to end; its output.
    fn finish(mut self) -> Result<Output, Failed> {
        let deadline = Instant::now() + Duration::from_secs(300);
        let status = loop {
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return Err(format!("gke-rl submit did not end within 300 s:\n{}", self.stderr()).into());
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let read = |name: &str| std::fs::read(self.dir.join(name)).unwrap_or_default();
        Ok(common::exited_cleanly(Output { status, stdout: read("stdout"), stderr: read("stderr") }))
    }
}

fn application_error(cluster: &Cluster) -> Result<(), Failed> {
    let out = Training::start(cluster, 4, &["--max-restarts", "3"], Some(2)).finish()?;
    let said = format!("{}{}", stdout(&out), stderr(&out));
    check(out.status.code() == Some(1), "a failed program exits 1", &out)?;
    check(said.contains("the program failed (ValueError: step 2 went wrong)"), "the failure is the program's", &out)?;
    check(said.contains("not restarted: a resubmission would fail the same way") && !said.contains("restart 1"), "and not retried", &out)
}

fn no_restarts(cluster: &Cluster) -> Result<(), Failed> {
    let training = Training::start(cluster, 30, &["--max-restarts", "0"], None);
    training.wait_until("a first checkpoint", |t| t.markers() >= 1)?;
    cluster.kill_node()?;
    let out = training.finish()?;
    cluster.join()?;
    let said = format!("{}{}", stdout(&out), stderr(&out));
    check(out.status.code() == Some(1), "the lost node fails the job, as without recovery", &out)?;
    check(said.contains("a Ray node was lost") && said.contains("not restarted: no restart left"), "it says why", &out)
}

/// `gke-rl status` of `id` until it reports `state` (3 minutes at most).
fn status_until(cluster: &Cluster, id: &str, state: &str) -> Result<Output, Failed> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let status = gke_rl(TWO_NODES_NO_FABRIC, &["status", id, "--address", &cluster.address]);
        if stdout(&status).contains(state) {
            return Ok(status);
        }
        if ["SUCCEEDED", "FAILED", "STOPPED"].iter().any(|end| stdout(&status).contains(&format!("{id}  {end}"))) {
            return Err(format!("job {id} ended, not {state}:\n{}{}", stdout(&status), stderr(&status)).into());
        }
        if Instant::now() > deadline {
            let logs = gke_rl(TWO_NODES_NO_FABRIC, &["logs", id, "--address", &cluster.address]);
            return Err(format!(
                "job {id} is not {state} after 180 s:\n{}{}\nits log:\n{}",
                stdout(&status),
                stderr(&status),
                stdout(&logs)
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The `step_N` markers in `folder`: the checkpoints, not the supervisor's claim beside them.
fn checkpoints_in(folder: &Path) -> usize {
    std::fs::read_dir(folder).map_or(0, |d| d.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("step_")).count())
}

/// The run recovers in the cluster: submitted with `--no-wait`, no gke-rl process runs while
/// its node is lost, a half-written checkpoint is left behind, and the node comes back.
fn nobody_watching(cluster: &Cluster) -> Result<(), Failed> {
    let began = epoch();
    let training = Training::start(cluster, 8, &["--no-wait", "--max-restarts", "2", "--restart-wait", "3m"], None);
    let markers = training.dir.join("markers");
    let id = training.id()?;
    let dir = training.dir.clone();
    let submitted = training.finish()?;
    check(submitted.status.code() == Some(0), "submit --no-wait returns at once", &submitted)?;
    let deadline = Instant::now() + Duration::from_secs(180);
    while checkpoints_in(&markers) < 2 {
        if Instant::now() > deadline {
            return Err("no checkpoint of step 4 within 180 s".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    cluster.kill_node()?;
    // A save the preemption interrupted.
    std::fs::create_dir_all(markers.join("tmp_step_6"))?;
    std::fs::write(markers.join("tmp_step_6/shard"), vec![0u8; 1 << 20])?;
    cluster.join()?;
    let status = status_until(cluster, &id, "SUCCEEDED")?;
    let said = stderr(&status);
    check(said.contains("restarts: 1 (") && said.contains(" a Ray node was lost ("), "status reports the restart and its cause", &status)?;
    check(said.contains("removed the half-written checkpoints tmp_step_6 (1.0 MiB freed)"), "the half-written save is set aside", &status)?;
    check(said.contains("run SUCCEEDED: the training succeeded"), "and the run's end", &status)?;
    check(!said.contains("forged by the training"), "no line the training printed counts as a record", &status)?;
    let logs = gke_rl(TWO_NODES_NO_FABRIC, &["logs", &id, "--address", &cluster.address]);
    let log = stdout(&logs);
    let resumed: u64 = log
        .lines()
        .find_map(|l| l.strip_prefix("resuming after step "))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("the run did not resume:\n{log}"))?;
    let redone = log.lines().filter(|l| l.starts_with("trained step ")).count() - 8;
    check(resumed >= 4 && redone <= 1 && log.contains("trained step 8"), "it resumed from its newest marker", &logs)?;
    check(said.contains(&format!("resumed from step {resumed}: {redone} steps redone")), "the record counts the steps redone", &status)?;
    // Each save is timed in the log by the supervisor, right after NeMo-RL's line for it.
    let lines: Vec<&str> = log.lines().collect();
    let saves: Vec<(&str, &str)> = lines.windows(2).filter(|w| w[0].starts_with(gke_rl::knowledge::SAVING)).map(|w| (w[0], w[1])).collect();
    let timed = saves.iter().all(|(save, next)| {
        matches!(gke_rl_in_cluster::records::Record::of_line(next), Some(gke_rl_in_cluster::records::Record::Checkpoint { step, at })
            if save.ends_with(&format!(" {step}...")) && (began..=epoch()).contains(&at))
    });
    check(saves.len() >= 4 && timed, "the supervisor times each save in the log", &logs)?;
    drop(dir);
    Ok(())
}

/// A preemption between the two renames of a save's swap: the supervisor puts `old_step_4`
/// back, and the run resumes from it, not from step 2.
fn preempted_mid_swap(cluster: &Cluster) -> Result<(), Failed> {
    let mut training = Training::start_saving(cluster, 8, &["--no-wait", "--max-restarts", "2", "--restart-wait", "3m"], None, "swap");
    let markers = training.dir.join("markers");
    let id = training.id()?;
    // The scratch folder outlives submit: the run writes into it.
    let scratch = training._scratch.take();
    let submitted = training.finish()?;
    check(submitted.status.code() == Some(0), "submit --no-wait returns at once", &submitted)?;
    if !wait_for(Duration::from_secs(180), || markers.join("old_step_4").is_dir() && !markers.join("step_4").exists()) {
        let logs = gke_rl(TWO_NODES_NO_FABRIC, &["logs", &id, "--address", &cluster.address]);
        return Err(format!("the save of step 4 did not pause between its renames: {:?}\n{}", listing(&markers), stdout(&logs)).into());
    }
    cluster.kill_node()?;
    cluster.join()?;
    let status = status_until(cluster, &id, "SUCCEEDED")?;
    let said = stderr(&status);
    check(said.contains("put back step_4 from old_step_N: a save was stopped between its renames"), "the record says so", &status)?;
    let logs = gke_rl(TWO_NODES_NO_FABRIC, &["logs", &id, "--address", &cluster.address]);
    let log = stdout(&logs);
    check(log.contains("put back old_step_4 as step_4: a save was stopped between its renames"), "the supervisor says so", &logs)?;
    check(log.contains("resuming after step 4") && log.contains("trained step 8"), "it resumed from the swapped checkpoint", &logs)?;
    let trained: Vec<&str> = log.lines().filter(|l| l.starts_with("trained step ")).collect();
    let once = trained.iter().all(|l| trained.iter().filter(|m| *m == l).count() == 1);
    check(once, "no step was trained twice", &logs)?;
    let left = listing(&markers);
    check(!left.iter().any(|n| n.starts_with("old_step_") || n.starts_with("tmp_step_")), "no orphan is left", &logs)?;
    drop(scratch);
    Ok(())
}

/// A preemption while an async save writes in the background: that save is half-written and
/// removed, the run resumes from the newest durable one, and each save's time until durable
/// is recorded beside its pause.
fn preempted_mid_async_save(cluster: &Cluster) -> Result<(), Failed> {
    let mut training = Training::start_saving(cluster, 8, &["--no-wait", "--max-restarts", "2", "--restart-wait", "3m"], None, "async");
    let markers = training.dir.join("markers");
    let id = training.id()?;
    // The scratch folder outlives submit: the run writes into it.
    let scratch = training._scratch.take();
    let submitted = training.finish()?;
    check(submitted.status.code() == Some(0), "submit --no-wait returns at once", &submitted)?;
    if !wait_for(Duration::from_secs(180), || markers.join("step_2").is_dir() && markers.join("tmp_step_4").is_dir()) {
        let logs = gke_rl(TWO_NODES_NO_FABRIC, &["logs", &id, "--address", &cluster.address]);
        return Err(format!("step 2 was not durable while step 4 was written: {:?}\n{}", listing(&markers), stdout(&logs)).into());
    }
    cluster.kill_node()?;
    cluster.join()?;
    let status = status_until(cluster, &id, "SUCCEEDED")?;
    check(stderr(&status).contains("removed the half-written checkpoints tmp_step_4"), "the interrupted save is removed", &status)?;
    let logs = gke_rl(TWO_NODES_NO_FABRIC, &["logs", &id, "--address", &cluster.address]);
    let log = stdout(&logs);
    check(log.contains("resuming after step 2") && log.contains("trained step 8"), "it resumed from the newest durable save", &logs)?;
    let durable: Vec<(u64, f64)> = log
        .lines()
        .filter_map(|l| match gke_rl_in_cluster::records::Record::of_line(l)? {
            gke_rl_in_cluster::records::Record::Durable { step, after_s } => Some((step, after_s)),
            _ => None,
        })
        .collect();
    check(durable.iter().any(|(step, after)| *step == 2 && *after >= 7.5), "the save was durable after its background writes", &logs)?;
    let report = gke_rl(TWO_NODES_NO_FABRIC, &["report", &id, "--address", &cluster.address, "--format", "json"]);
    let json = json_of(&report)?;
    let checkpoints = &json["checkpoints"];
    let (blocking, durable) = (checkpoints["blocking_s"].as_f64(), checkpoints["durable_s"].as_f64());
    check(blocking == Some(0.1) && durable.is_some_and(|d| d >= 7.5), "the report has the pause and the time until durable", &report)?;
    drop(scratch);
    Ok(())
}

/// The whole path: a deployment on the fake API server over HTTPS, whose head pod forwards to
/// this cluster's head; submit reaches it through the port-forward and observes the restart.
fn preempted(cluster: &Cluster) -> Result<(), Failed> {
    let cloud = common::Cloud::new(Pods::ReadyAfter(0));
    cloud.api.forward_head_to(cluster.address.trim_start_matches("http://").parse()?);
    let deploy = cloud.deploy(&["--authorized-cidr", "203.0.113.7/32"], &[]);
    check(deploy.status.success(), "deploy", &deploy)?;
    check(stderr(&deploy).contains("run keeper applied in default: ConfigMap ray-a4-gpu-spot-keeper, CronJob"), "the keeper", &deploy)?;
    // The head's token, given explicitly: it wins over the RayCluster's (here none, Ray 2.46's render).
    let mut submit = cloud.command(&["submit"]);
    submit.env("RAY_AUTH_TOKEN", ray_head::test_token());
    let training = Training::spawn(submit, &cloud.root, 8, &["--max-restarts", "2", "--restart-wait", "3m"], None);
    training.wait_until("the checkpoint of step 4", |t| t.markers() >= 2)?;
    cluster.kill_node()?;
    training.wait_until("the restart", |t| t.output().contains("restarting (1 of 2)"))?;
    cluster.join()?;
    let out = training.finish()?;
    let (said, log) = (stderr(&out), stdout(&out));
    check(out.status.code() == Some(0), "the restarted run succeeds", &out)?;
    check(said.contains("restarts: 1 (") && said.contains(" a Ray node was lost ("), "the report, with the cause in Ray's words", &out)?;
    check(log.contains("resuming after step") && log.contains("trained step 8"), "it resumed from its newest marker", &out)?;
    let first = said.split_whitespace().skip_while(|w| *w != "job").nth(1).ok_or("no job id")?.to_owned();
    let status = cloud.gke_rl(&["status", &first], &[("RAY_AUTH_TOKEN", ray_head::test_token())]);
    check(stdout(&status).contains("SUCCEEDED") && stderr(&status).contains("restarts: 1 ("), "status reads the records", &status)?;
    cloud.assert_token_stays_secret(&[&deploy, &out, &status]);
    Ok(())
}

fn never_returns(cluster: &Cluster) -> Result<(), Failed> {
    let training = Training::start(cluster, 30, &["--max-restarts", "2", "--restart-wait", "5s"], None);
    training.wait_until("a first checkpoint", |t| t.markers() >= 1)?;
    cluster.kill_node()?;
    let out = training.finish()?;
    cluster.join()?;
    let said = format!("{}{}", stdout(&out), stderr(&out));
    check(out.status.code() == Some(1), "no node, no restart: the run fails", &out)?;
    check(said.contains("the cluster had 1 of its 2 nodes after 5s, so the run was not restarted"), "a clear reason", &out)
}

/// The keeper, as its CronJob runs it, against this cluster and a run folder, until it has
/// resubmitted (2 minutes at most); what it said.
fn keep(cluster: &Cluster, runs: &Path) -> Result<String, Failed> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut said = String::new();
    while Instant::now() < deadline {
        said.push_str(&keep_once(cluster, runs)?);
        if said.contains("resubmitted as") {
            return Ok(said);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    Err(format!("the keeper did not resubmit within 120 s:\n{said}").into())
}

/// One run of the keeper, within 50 s (its CronJob's deadline); what it said.
fn keep_once(cluster: &Cluster, runs: &Path) -> Result<String, Failed> {
    let keeper = tempfile::NamedTempFile::new()?;
    std::fs::write(keeper.path(), gke_rl_in_cluster::supervisor::keeper())?;
    let out = Command::new("timeout")
        .arg("50")
        .arg("python3")
        .arg(keeper.path())
        // As the CronJob gives it, from the cluster's Secret.
        .env("RAY_AUTH_TOKEN", ray_head::test_token())
        .env("GKE_RL_DASHBOARD", &cluster.address)
        .env("GKE_RL_RUNS", runs)
        .env("GKE_RL_CLUSTER", "default/ray-a4-gpu-spot")
        .env(gke_rl::auth::RUN_KEY_VARIABLE, RUN_KEY)
        .output()?;
    if !out.status.success() {
        return Err(format!("the keeper failed or hung ({:?}):\n{}{}", out.status.code(), stdout(&out), stderr(&out)).into());
    }
    Ok(stdout(&out))
}

/// The head restarts mid-run (a repaired node, an upgrade): Ray forgets the job and the
/// packages. The keeper uploads them again from the run's folder and resubmits; the attached
/// submit follows into the resubmission.
///
/// A package replaced in the run's folder (as anyone who can write it could) is never uploaded:
/// the keeper says so and resubmits nothing until the recorded one is back.
fn head_restarted(cluster: &Cluster) -> Result<(), Failed> {
    cluster.join()?;
    let training = Training::start(cluster, 8, &["--max-restarts", "2", "--restart-wait", "3m"], None);
    let id = training.id()?;
    training.wait_until("a first checkpoint", |t| t.markers() >= 1)?;
    cluster.restart()?;
    let package = training.runs().join(&id).join("working_dir.zip");
    let original = std::fs::read(&package)?;
    std::fs::write(&package, b"PK\x05\x06 not the run's code")?;
    let refused = keep_once(cluster, &training.runs())?;
    std::fs::write(&package, &original)?;
    if !refused.contains("working_dir.zip is not the package recorded at the run's start: not uploading it")
        || refused.contains("resubmitted")
    {
        return Err(format!("the keeper used a replaced package: {refused}").into());
    }
    let kept = keep(cluster, &training.runs())?;
    let out = training.finish()?;
    let (said, log) = (stderr(&out), stdout(&out));
    check(kept.contains("the Ray head restarted; resubmitted as "), &format!("the keeper says why: {kept}"), &out)?;
    check(out.status.code() == Some(0), "the resubmitted run succeeds", &out)?;
    check(said.contains("following the keeper's resubmission "), "submit follows it", &out)?;
    check(log.contains("resuming after step") && log.contains("trained step 8"), "it resumed from its newest marker", &out)?;
    check(said.contains("the job's driver was lost (the Jobs API no longer knows job"), "the restart's cause", &out)
}

/// The supervisor's own process is killed: its training goes with it, the job ends FAILED
/// without the supervisor's record, and the keeper resubmits the run.
///
/// As an attacker who can write the runs folder (any pod with the PVC) would: a forged run with
/// this cluster's id and a command, a FIFO for a run.json, a link to the real run; another job
/// holds the id the keeper would give the restart. The keeper runs none of theirs, is not held
/// by the FIFO, and resubmits the real run under the next free id. No process of the killed
/// supervisor's training outlives it.
fn supervisor_killed(cluster: &Cluster) -> Result<(), Failed> {
    let training = Training::start(cluster, 8, &["--max-restarts", "2", "--restart-wait", "3m"], None);
    let id = training.id()?;
    training.wait_until("a first checkpoint", |t| t.markers() >= 1)?;
    let pid = training.supervisor_pid(&id).ok_or("no supervisor pid recorded")?;
    let runs = training.runs();
    let pwned = training.dir.join("pwned");
    plant_hostile_runs(&runs, &id, &pwned)?;
    let token = cluster.head.lock().unwrap().as_ref().and_then(|h| h.token.clone());
    let foreign = format!("{{\"entrypoint\": \"sleep 120\", \"submission_id\": \"{id}-r1\"}}");
    let posted = ray_head::http_send(&cluster.address, "POST", "/api/jobs/", &foreign, token.as_deref());
    if posted.as_ref().is_none_or(|(code, _)| *code != 200) {
        return Err(format!("another job could not take {id}-r1: {posted:?}").into());
    }
    Command::new("kill").args(["-KILL", &pid.to_string()]).status()?;
    // The guardian ends the training: nothing marked as this submission's attempt runs on.
    let gone = wait_for(Duration::from_secs(30), || marked_processes(&format!("{id}:{id}:")).is_empty());
    let kept = keep(cluster, &runs)?;
    let _ = ray_head::http_send(&cluster.address, "POST", &format!("/api/jobs/{id}-r1/stop"), "", token.as_deref());
    let out = training.finish()?;
    let said = stderr(&out);
    check(gone, "no process of the killed supervisor's training runs on", &out)?;
    check(kept.contains(&format!("the supervisor of {id} ended without its record")), &format!("the keeper says why: {kept}"), &out)?;
    check(kept.contains(&format!("resubmitted as {id}-r2")), &format!("the keeper skips the id another job holds: {kept}"), &out)?;
    check(!kept.contains("0-forged") && !kept.contains("0-fifo") && !pwned.exists(), &format!("the forged run never runs: {kept}"), &out)?;
    let jobs = ray_head::http_get(&cluster.address, "/api/jobs/", token.as_deref()).unwrap_or_default();
    check(!jobs.contains("0-forged"), "no job of the forged run was submitted", &out)?;
    check(out.status.code() == Some(0), "the resubmitted run succeeds", &out)?;
    check(stdout(&out).contains("resuming after step") && said.contains("restarts: 1 ("), "it resumed and was recorded", &out)
}

/// A user's id shaped as a restart's is refused before anything is uploaded; another job whose
/// id merely starts with a run's is neither stopped nor reported with it.
fn run_identity(cluster: &Cluster) -> Result<(), Failed> {
    let refused =
        gke_rl(TWO_NODES_NO_FABRIC, &["submit", "--address", &cluster.address, "--submission-id", "exp-r1", "--no-wait", "--", "true"]);
    check(
        refused.status.code() == Some(2) && stderr(&refused).contains("ends as the keeper's restarts of a run are named"),
        "refused",
        &refused,
    )?;
    check(!stderr(&refused).contains("uploading"), "before any upload", &refused)?;
    let training = Training::start(cluster, 30, &["--no-wait", "--max-restarts", "0"], None);
    let id = training.id()?;
    let submitted = training.finish()?;
    let token = cluster.head.lock().unwrap().as_ref().and_then(|h| h.token.clone());
    let foreign = format!("{{\"entrypoint\": \"sleep 120\", \"submission_id\": \"{id}-r1\"}}");
    let posted = ray_head::http_send(&cluster.address, "POST", "/api/jobs/", &foreign, token.as_deref());
    if posted.as_ref().is_none_or(|(code, _)| *code != 200) {
        return Err(format!("another job could not take {id}-r1: {posted:?}").into());
    }
    let status = gke_rl(TWO_NODES_NO_FABRIC, &["status", &id, "--address", &cluster.address]);
    let stopped = gke_rl(TWO_NODES_NO_FABRIC, &["stop", &id, "--address", &cluster.address]);
    let state = |job: &str| {
        let body = ray_head::http_get(&cluster.address, &format!("/api/jobs/{job}"), token.as_deref()).unwrap_or_default();
        ["RUNNING", "STOPPED", "PENDING", "SUCCEEDED", "FAILED"]
            .into_iter()
            .find(|s| body.contains(&format!("\"status\": \"{s}\"")))
            .unwrap_or("?")
    };
    let foreign_state = state(&format!("{id}-r1"));
    let run_stopped = wait_for(Duration::from_secs(60), || state(&id) == "STOPPED");
    let _ = ray_head::http_send(&cluster.address, "POST", &format!("/api/jobs/{id}-r1/stop"), "", token.as_deref());
    check(submitted.status.code() == Some(0), "submitted", &submitted)?;
    check(
        !format!("{}{}", stdout(&status), stderr(&status)).contains(&format!("{id}-r1")),
        "status of the run does not take in the other job",
        &status,
    )?;
    check(stopped.status.code() == Some(0) && run_stopped, "stop stops the run itself", &stopped)?;
    check(foreign_state == "RUNNING", &format!("and leaves the other job running ({foreign_state})"), &stopped)
}

/// A second run with the same checkpoint folder refuses to train while the first one's
/// supervisor lives, and names it.
fn one_writer(cluster: &Cluster) -> Result<(), Failed> {
    let mut first = Training::start(cluster, 40, &["--no-wait", "--max-restarts", "0"], None);
    let id = first.id()?;
    let scratch = first._scratch.take();
    let markers = first.dir.join("markers");
    let dir = first.dir.clone();
    first.finish()?;
    if !wait_for(Duration::from_secs(120), || markers.join(".gke-rl-writer").is_file()) {
        return Err(format!("the first run never claimed {}: {:?}", markers.display(), listing(&markers)).into());
    }
    let second = tempfile::tempdir()?;
    std::fs::write(second.path().join("train.py"), TRAIN)?;
    std::fs::write(second.path().join("gke-rl.yaml"), TWO_NODES_NO_FABRIC)?;
    let (markers_arg, runs) = (markers.display().to_string(), second.path().join("runs").display().to_string());
    let out = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .current_dir(second.path())
        .args(["submit", "--address", &cluster.address, "--include", "train.py", "--runs-dir", &runs, "--checkpoint-dir", &markers_arg])
        .args(["--max-restarts", "0", "--", "python", "train.py", &markers_arg, "4"])
        .env("HF_TOKEN", "hf_gkerlTestSecretValue42")
        .env("RAY_AUTH_TOKEN", ray_head::test_token())
        .env_remove("RAY_ADDRESS")
        .output()?;
    let out = common::exited_cleanly(out);
    let _ = gke_rl(TWO_NODES_NO_FABRIC, &["stop", &id, "--address", &cluster.address]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    check(out.status.code() == Some(1), "the second run fails", &out)?;
    check(said.contains(&format!("the checkpoint folder {markers_arg} is written by run {id}")), "and names the first", &out)?;
    check(!said.contains("starting fresh") && !said.contains("resuming after"), "without training", &out)?;
    drop((scratch, dir));
    Ok(())
}

/// What an attacker who can write `runs` plants there: a forged run of this cluster whose
/// request would create `pwned`, with records claiming its job is gone; a FIFO for a run.json,
/// sorted first; a link to the real run `id`'s folder.
fn plant_hostile_runs(runs: &Path, id: &str, pwned: &Path) -> std::io::Result<()> {
    let forged = runs.join("0-forged");
    std::fs::create_dir_all(&forged)?;
    let request = serde_json::json!({
        "run": "0-forged", "cluster": "default/ray-a4-gpu-spot", "nodes": 1, "max_restarts": 3, "max_lost_s": 0, "wait_s": 60,
        "checkpoints": "", "packages": {}, "request": {"entrypoint": format!("touch {}", pwned.display())}, "mac": "00",
    });
    std::fs::write(forged.join("run.json"), request.to_string())?;
    std::fs::write(forged.join("events.jsonl"), "{\"event\": \"started\", \"submission\": \"0-forged\", \"mac\": \"00\"}\n")?;
    std::fs::create_dir_all(runs.join("0-fifo"))?;
    let fifo = Command::new("mkfifo").arg(runs.join("0-fifo/run.json")).status()?;
    assert!(fifo.success(), "mkfifo");
    std::os::unix::fs::symlink(runs.join(id), runs.join("0-link"))
}

/// The pids of the processes whose attempt mark (the supervisor's `GKE_RL_ATTEMPT`) starts with
/// `prefix`.
fn marked_processes(prefix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let wanted = format!("GKE_RL_ATTEMPT={prefix}");
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|environ| environ.split(|b| *b == 0).any(|v| v.starts_with(wanted.as_bytes())))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Seconds since the epoch, as the supervisor's records say them.
fn epoch() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The recovery's own overheads, over 5 preemptions of one run: from the node's kill to the
/// supervisor noticing, and from Ray counting the node again to the training running.
fn recovery_overhead(cluster: &Cluster) -> Result<(), Failed> {
    const PREEMPTIONS: usize = 5;
    let training = Training::start(cluster, 200, &["--max-restarts", "5", "--restart-wait", "3m"], None);
    let id = training.id()?;
    let (mut killed, mut back, mut detect, mut join) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for n in 1..=PREEMPTIONS {
        training.wait_until("a checkpoint after the last restart", |t| t.output().matches("Saved checkpoint to").count() >= 2 * n)?;
        killed.push(epoch());
        cluster.kill_node()?;
        detect.push(epoch() - killed[n - 1]);
        let joining = epoch();
        cluster.join()?;
        back.push(epoch());
        join.push(back[n - 1] - joining);
        training.wait_until("the restart's record", |t| t.output().matches("\"event\": \"restart\"").count() >= n)?;
    }
    let records = gke_rl_in_cluster::records::Records::of(&training.output());
    let restarts: Vec<_> = records.restarts().collect();
    if restarts.len() != PREEMPTIONS {
        return Err(format!("{} restarts recorded, not {PREEMPTIONS}:\n{}", restarts.len(), training.stderr()).into());
    }
    // From the kill, since the supervisor polls Ray faster than this harness does.
    let noticed: Vec<f64> = restarts.iter().zip(&killed).map(|(r, killed)| r.noticed_at - killed).collect();
    let running: Vec<f64> = restarts.iter().zip(&back).map(|(r, back)| r.running_at - back).collect();
    let stop = gke_rl(TWO_NODES_NO_FABRIC, &["stop", &id, "--address", &cluster.address]);
    check(stop.status.success(), "the benchmark's run stops", &stop)?;
    training.finish()?;
    eprintln!(
        "ray {}: recovery overhead, median of {PREEMPTIONS} preemptions (target: under 10 s each, beyond Ray's own times):\n  \
         the node killed -> Ray counts it dead:   {:6.2} s (Ray's own, as this harness polls)\n  \
         the node killed -> the supervisor notices: {:6.2} s\n  \
         Ray's node join:                         {:6.2} s (Ray's own)\n  \
         the node back -> the training running:   {:6.2} s\n  \
         each: noticed {noticed:.2?}, running {running:.2?}",
        cluster.version,
        median(detect),
        median(noticed.clone()),
        median(join),
        median(running.clone()),
    );
    Ok(())
}

/// The idle guard's decisions on a real Ray head and the fake API server over HTTPS, as its
/// CronJob runs it: a running job keeps the cluster; an idle one is kept until the timeout,
/// then suspended.
fn idle_guard(cluster: &Cluster) -> Result<(), Failed> {
    let cloud = common::Cloud::new(Pods::ReadyAfter(0));
    let deploy = cloud.deploy(&["--authorized-cidr", "203.0.113.7/32"], &[]);
    check(deploy.status.success(), "deploy", &deploy)?;
    let sa = tempfile::tempdir()?;
    std::fs::write(sa.path().join("token"), common::KUBE_TOKEN)?;
    std::fs::copy(cloud.root.join("ca.pem"), sa.path().join("ca.crt"))?;
    std::fs::write(sa.path().join("idle_guard.py"), gke_rl_in_cluster::guard::program())?;
    let run_guard = |idle_seconds: &str, token: Option<&str>| {
        let mut command = Command::new("python3");
        match token {
            Some(token) => command.env("RAY_AUTH_TOKEN", token),
            None => command.env_remove("RAY_AUTH_TOKEN"),
        };
        command
            .arg(sa.path().join("idle_guard.py"))
            .env("GKE_RL_API", &cloud.https.url)
            .env("GKE_RL_SERVICE_ACCOUNT_DIR", sa.path())
            .env("GKE_RL_NAMESPACE", "default")
            .env("GKE_RL_CLUSTER", "ray-a4-gpu-spot")
            .env("GKE_RL_DASHBOARD", &cluster.address)
            .env("GKE_RL_IDLE_SECONDS", idle_seconds)
            .output()
    };
    // As its CronJob gives it, the cluster's Ray token (the 2.46 head ignores it).
    let guard = |idle_seconds: &str| -> Result<String, Failed> {
        let out = run_guard(idle_seconds, Some(ray_head::test_token()))?;
        if !out.status.success() {
            return Err(format!("the guard failed:\n{}{}", stdout(&out), stderr(&out)).into());
        }
        Ok(stdout(&out))
    };
    let suspended = || cloud.api.object("rayclusters", "ray-a4-gpu-spot").is_some_and(|c| c["spec"]["suspend"] == true);
    if ray_head::has_token_auth(cluster.version) {
        // Without the token the guard cannot tell: it decides nothing and fails, saying why.
        let out = run_guard("1", None)?;
        let said = stdout(&out);
        if out.status.code() != Some(1) || !said.contains("the dashboard refused the guard (401)") || suspended() {
            return Err(format!("a guard without the token must fail loudly and suspend nothing: {said}{}", stderr(&out)).into());
        }
    }

    let busy = gke_rl(TWO_NODES_NO_FABRIC, &["submit", "--address", &cluster.address, "--no-wait", "--", "sleep", "60"]);
    let id = stderr(&busy).split_whitespace().skip_while(|w| *w != "job").nth(1).ok_or("no job id")?.to_owned();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stdout(&gke_rl(TWO_NODES_NO_FABRIC, &["status", &id, "--address", &cluster.address])).contains("RUNNING") {
        if Instant::now() > deadline {
            return Err("the busy job never ran".into());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let said = guard("1")?;
    if !said.starts_with("busy: ") || !said.contains(&id) || suspended() {
        return Err(format!("a running job keeps the cluster: {said}").into());
    }
    let stop = gke_rl(TWO_NODES_NO_FABRIC, &["stop", &id, "--address", &cluster.address]);
    check(stop.status.success(), "the busy job stops", &stop)?;
    let said = guard("3600")?;
    if !said.starts_with("idle for ") || suspended() {
        return Err(format!("idle, but not for an hour: {said}").into());
    }
    std::thread::sleep(Duration::from_secs(2));
    let said = guard("1")?;
    if !said.starts_with("suspended RayCluster ray-a4-gpu-spot after ") || !suspended() {
        return Err(format!("idle past the timeout: {said}").into());
    }
    let said = guard("1")?;
    if !said.contains("is suspended already") {
        return Err(format!("a suspended cluster is left alone: {said}").into());
    }
    Ok(())
}

/// Issue 64, a deployment whose Lustre instance is a folder of this machine: the fake API server's
/// head pod forwards to this cluster's head, the fake gcloud's transfers copy between the folder
/// (the file system's root) and its pretend buckets. The deployment's config, with the runs'
/// records and checkpoints in the folder.
struct Kept {
    cloud: common::Cloud,
    /// The folder standing for the Lustre mount.
    mount: PathBuf,
    /// The checkpoint folder, in the mount.
    markers: PathBuf,
    /// The runs folder, in the mount.
    runs: PathBuf,
}

impl Kept {
    fn new(cluster: &Cluster, zone: &str) -> Result<Kept, Failed> {
        let cloud = common::Cloud::new(Pods::ReadyAfter(0));
        cloud.api.forward_head_to(cluster.address.trim_start_matches("http://").parse()?);
        let mount = cloud.root.join("lustre");
        std::fs::create_dir_all(&mount)?;
        let kept = Kept { markers: mount.join("ckpt"), runs: mount.join("gke-rl/runs"), mount, cloud };
        kept.configure(zone)?;
        Ok(kept)
    }

    /// The config, in `zone` (and its region).
    fn configure(&self, zone: &str) -> Result<(), Failed> {
        let region = zone.rsplit_once('-').map_or(zone, |(region, _)| region);
        let config = format!(
            "project:\n  region: {region}\n  zone: {zone}\nlustre:\n  mount_path: {}\njob:\n  checkpointing:\n    dir: {}\nstorage:\n  export_to: gs://kept-runs/grpo/\n",
            self.mount.display(),
            self.markers.display()
        );
        Ok(std::fs::write(self.cloud.root.join("gke-rl.yaml"), config)?)
    }

    /// The variables every command runs with here: the head's token, the mount as the file
    /// system's root for the transfers, the runs folder in the mount.
    fn env(&self) -> [(&'static str, String); 3] {
        [
            ("RAY_AUTH_TOKEN", ray_head::test_token().to_owned()),
            ("FAKE_LUSTRE_ROOT", self.mount.display().to_string()),
            ("GKE_RL_RUNS_DIR", self.runs.display().to_string()),
        ]
    }

    fn gke_rl(&self, args: &[&str], more: &[(&str, &str)]) -> Output {
        let env = self.env();
        let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        all.extend_from_slice(more);
        self.cloud.gke_rl(args, &all)
    }

    fn deploy(&self, extra: &[&str]) -> Output {
        self.gke_rl(&[&["deploy", "--yes", "--toolkit", "toolkit", "--folder", "deployment", "--timeout", "20s"], extra].concat(), &[])
    }

    fn destroy(&self, extra: &[&str]) -> Output {
        self.gke_rl(&[&["destroy", "--yes", "--toolkit", "toolkit", "--folder", "deployment"], extra].concat(), &[])
    }

    fn export(&self, extra: &[&str], more: &[(&str, &str)]) -> Output {
        self.gke_rl(&[&["export", "--folder", "deployment"], extra].concat(), more)
    }

    /// A supervised run of `steps` steps through the port-forward, saving every second step.
    fn train(&self, steps: u32) -> Result<Output, Failed> {
        let mut submit = self.cloud.command(&["submit"]);
        submit.envs(self.env().iter().map(|(k, v)| (*k, v.as_str())));
        Training::spawn_into(submit, &self.cloud.root, &self.markers, &self.runs, steps, &[], None, "sync").finish()
    }

    /// `gke-rl ARGS` on a terminal of its own (util-linux `script`), as a person runs it: once it
    /// asks its question, `meanwhile` runs, then `answer` is typed. What the terminal showed.
    fn on_a_terminal(&self, args: &[&str], meanwhile: impl FnOnce() -> std::io::Result<()>, answer: &str) -> Result<Output, Failed> {
        use std::io::{Read as _, Write as _};
        let gke_rl = self.cloud.command(args);
        let words = std::iter::once(gke_rl.get_program()).chain(gke_rl.get_args());
        let line = words.map(|w| gke_rl::quote::sh(&w.to_string_lossy())).collect::<Vec<_>>().join(" ");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let script = std::env::split_paths(&path).map(|dir| dir.join("script")).find(|p| p.is_file()).ok_or("no util-linux script")?;
        let mut command = Command::new(script);
        command.args(["-q", "-e", "-c", &line, "/dev/null"]).current_dir(&self.cloud.root);
        for (name, value) in gke_rl.get_envs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        command.envs(self.env().iter().map(|(k, v)| (*k, v.as_str())));
        let mut child = command.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn()?;
        let shown = Arc::new(Mutex::new(Vec::new()));
        let mut out = child.stdout.take().ok_or("no stdout")?;
        let reader = std::thread::spawn({
            let shown = shown.clone();
            move || {
                let mut buffer = [0u8; 4096];
                while let Ok(n @ 1..) = out.read(&mut buffer) {
                    shown.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
            }
        });
        let asked = wait_for(Duration::from_secs(180), || String::from_utf8_lossy(&shown.lock().unwrap()).contains("[y/N]"));
        if asked {
            meanwhile()?;
        }
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let _ = stdin.write_all(answer.as_bytes());
        let status = if asked { child.wait()? } else { child.kill().and_then(|()| child.wait())? };
        drop(stdin);
        let _ = reader.join();
        let stdout = shown.lock().unwrap().clone();
        Ok(Output { status, stdout, stderr: Vec::new() })
    }

    /// An object of the pretend bucket `kept-runs`.
    fn object(&self, name: &str) -> PathBuf {
        self.cloud.root.join("cloud/gcs/kept-runs").join(name)
    }
}

/// Issue 64's walkthrough: train, destroy (refused: step 4 is on the instance only), export,
/// destroy, deploy in another zone with `--resume-from`, train again: the step counter goes on.
fn export_destroy_and_resume_in_another_zone(cluster: &Cluster) -> Result<(), Failed> {
    let kept = Kept::new(cluster, "us-east1-b")?;
    let deploy = kept.deploy(&[]);
    check(deploy.status.success(), "deploy", &deploy)?;
    let trained = kept.train(4)?;
    check(trained.status.success() && stdout(&trained).contains("trained step 4"), "the first run trains 4 steps", &trained)?;
    let run = stderr(&trained).split_whitespace().skip_while(|w| *w != "job").nth(1).ok_or("no job id")?.to_owned();

    let refused = kept.destroy(&[]);
    let said = stderr(&refused);
    check(refused.status.code() == Some(2), "destroy refuses to lose step 4", &refused)?;
    check(
        said.contains("refusing to destroy: these checkpoints are on the Lustre instance only")
            && said.contains(&format!("step 4 of run {run} (1 file, 1.0 MiB; never exported)"))
            && said.contains(&format!("$ gke-rl export {run} --step 4 --to gs://kept-runs/grpo/")),
        "it names the run, the step, its size and the command that keeps it",
        &refused,
    )?;
    check(!kept.cloud.calls().contains("gcluster destroy"), "nothing was deleted", &refused)?;
    let plan = kept.destroy(&["--dry-run"]);
    let planned = format!("{}{}", stdout(&plan), stderr(&plan));
    check(planned.contains("destroy refuses: these checkpoints are on the instance only"), "the plan says what destroy would do", &plan)?;

    let exported = kept.export(&[], &[]);
    check(exported.status.success(), "export", &exported)?;
    let said = stderr(&exported);
    check(
        said.contains("made bucket gs://kept-runs in us-east1") && said.contains("granted roles/storage.objectUser"),
        "the bucket",
        &exported,
    )?;
    check(
        said.contains(&format!("exporting /ckpt/step_4 to gs://kept-runs/grpo/{run}/step_4/")),
        "the step's path in the file system",
        &exported,
    )?;
    let shard = std::fs::metadata(kept.object(&format!("grpo/{run}/step_4/shard")))?;
    check(shard.len() == 1 << 20, "the bucket holds the step", &exported)?;
    for file in ["gke-rl/records/run.json", "gke-rl/records/events.jsonl", "gke-rl/gke-rl.json", "gke-rl/report.json"] {
        check(kept.object(&format!("grpo/{run}/{file}")).is_file(), &format!("and the run's {file}"), &exported)?;
    }
    let again = kept.export(&["--all"], &[]);
    let said = stderr(&again);
    check(
        again.status.success() && said.contains(&format!("gs://kept-runs/grpo/{run}/step_4/ was verified before")),
        "step 4 is not copied again",
        &again,
    )?;
    check(said.contains(&format!("exporting /ckpt/step_2 to gs://kept-runs/grpo/{run}/step_2/")), "--all copies step 2 too", &again)?;

    // A copy changed in its bucket since it was verified does not count.
    let shard = kept.object(&format!("grpo/{run}/step_4/shard"));
    std::fs::rename(&shard, kept.cloud.root.join("shard"))?;
    let plan = kept.destroy(&["--dry-run"]);
    let planned = format!("{}{}", stdout(&plan), stderr(&plan));
    check(
        planned.contains(&format!(
            "warning: gs://kept-runs/grpo/{run}/step_4/ no longer holds what was verified (0 files, 0 B now; 1 files, 1.0 MiB when verified)"
        )) && planned.contains("destroy refuses: these checkpoints are on the instance only"),
        "a copy emptied since it was verified",
        &plan,
    )?;
    std::fs::rename(kept.cloud.root.join("shard"), &shard)?;
    let plan = kept.destroy(&["--dry-run"]);
    let planned = format!("{}{}", stdout(&plan), stderr(&plan));
    check(planned.contains("every complete checkpoint on the instance is in a bucket, verified"), "the plan says so", &plan)?;
    check(planned.contains("exported: 2.0 MiB in a Standard bucket in us-east1: $0.00/month"), "and what the copy costs", &plan)?;
    // A step saved while the question waits is found before anything is deleted.
    let step_6 = kept.markers.join("step_6");
    let saved = || std::fs::create_dir_all(&step_6).and_then(|()| std::fs::write(step_6.join("shard"), vec![6u8; 4096]));
    let asked = kept.on_a_terminal(&["destroy", "--toolkit", "toolkit", "--folder", "deployment"], saved, "y\n")?;
    check(
        asked.status.code() == Some(2)
            && stdout(&asked).contains("refusing to destroy")
            && stdout(&asked).contains(&format!("step 6 of run {run} (1 file, 4.0 KiB; step 4 is the newest in a bucket)")),
        "a step saved while destroy asks",
        &asked,
    )?;
    check(!kept.cloud.calls().contains("gcluster destroy"), "nothing was deleted", &asked)?;
    std::fs::remove_dir_all(&step_6)?;
    let destroyed = kept.destroy(&[]);
    check(destroyed.status.success() && stderr(&destroyed).contains("destroyed in"), "destroy goes through", &destroyed)?;
    // The instance is gone, and with it every file on it.
    std::fs::remove_dir_all(&kept.mount)?;
    std::fs::create_dir_all(&kept.mount)?;

    kept.configure("us-central1-a")?;
    let uri = format!("gs://kept-runs/grpo/{run}/step_4/");
    let resumed = kept.deploy(&["--resume-from", &uri]);
    check(resumed.status.success(), "a deploy in another zone, resuming from the bucket", &resumed)?;
    check(stderr(&resumed).contains(&format!("importing {uri} to /ckpt/tmp_step_4")), "the import", &resumed)?;
    check(kept.markers.join("step_4/shard").is_file() && !kept.markers.join("tmp_step_4").exists(), "step_4 is back", &resumed)?;
    // A deploy killed between the rename into place and the record: its state still holds the
    // transfer. The next deploy finds step_4 as the bucket has it and records it, copying nothing.
    let state_path = kept.cloud.root.join("deployment/state.json");
    let mut state: serde_json::Value = serde_json::from_slice(&std::fs::read(&state_path)?)?;
    let record = state["kept"].as_array_mut().and_then(Vec::pop).ok_or("no record of the import")?;
    let calls = kept.cloud.calls();
    let import = calls.lines().rfind(|l| l.contains("import-data")).ok_or("no import-data call")?;
    let request = import.split_whitespace().find_map(|w| w.strip_prefix("--request-id=")).ok_or("no request id")?;
    state["transfer"] = serde_json::json!({"direction": "import", "kind": record["kind"], "run": record["run"],
        "checkpoints": record["checkpoints"], "step": 4, "lustre_path": "/ckpt/tmp_step_4", "uri": uri, "request_id": request});
    std::fs::write(&state_path, state.to_string())?;
    let recorded = kept.deploy(&["--resume-from", &uri]);
    let state: serde_json::Value = serde_json::from_slice(&std::fs::read(&state_path)?)?;
    let operation = |out: &Output| stderr(out).lines().find_map(|l| Some(l.split_once("tmp_step_4: operation ")?.1.to_owned()));
    check(
        recorded.status.success()
            && operation(&recorded).is_some_and(|o| Some(o) == operation(&resumed))
            && state["transfer"].is_null()
            && state["kept"].as_array().is_some_and(|kept| kept.iter().any(|k| k["uri"] == uri && k["kind"] == record["kind"])),
        "an import renamed into place before its record is recorded, not copied again",
        &recorded,
    )?;
    check(
        calls.matches("import-data").count() == kept.cloud.calls().matches("import-data").count() - 1,
        "asked once more, by its request id",
        &recorded,
    )?;
    let second = kept.train(6)?;
    let log = stdout(&second);
    let first = log.lines().find_map(|l| l.strip_prefix("trained step ")).and_then(|n| n.trim().parse::<u32>().ok());
    check(second.status.success() && log.contains("resuming after step 4") && first == Some(5), "the next run's first step is 5", &second)?;
    // Its step 6 is on the new instance only: destroy exports it first when asked.
    let last = kept.destroy(&["--export-to", "gs://kept-runs/moved/"]);
    check(last.status.success() && stderr(&last).contains("destroyed in"), "destroy --export-to", &last)?;
    let run2 = stderr(&second).split_whitespace().skip_while(|w| *w != "job").nth(1).ok_or("no job id")?.to_owned();
    check(kept.object(&format!("moved/{run2}/step_6/shard")).is_file(), "exported step 6 before the instance went", &last)?;
    kept.cloud.assert_token_stays_secret(&[&deploy, &exported, &destroyed, &resumed, &last]);
    Ok(())
}

/// Issue 64's bad inputs that need the cluster to tell: a step that is a link, one still being
/// written, an empty one, a live run's claim, a transfer that says it is done but left a file
/// out, a second export while one runs, destroy while it runs, an import into a folder with a
/// newer step, an import of an export cut short.
fn export_refuses_what_it_cannot_keep(cluster: &Cluster) -> Result<(), Failed> {
    let kept = Kept::new(cluster, "us-east1-b")?;
    let deploy = kept.deploy(&[]);
    check(deploy.status.success(), "deploy", &deploy)?;
    std::fs::create_dir_all(kept.markers.join("step_2/policy/weights"))?;
    std::fs::write(kept.markers.join("step_2/policy/weights/.metadata"), "dcp")?;
    std::fs::write(kept.markers.join("step_2/policy/weights/__0_0.distcp"), vec![7u8; 4096])?;
    std::fs::write(kept.markers.join("step_2/config.yaml"), "a: 1\n")?;
    std::fs::create_dir_all(kept.markers.join("tmp_step_6"))?;
    std::os::unix::fs::symlink("/etc", kept.markers.join("step_4"))?;
    let refusal = |extra: &[&str], env: &[(&str, &str)], said: &str, what: &str| -> Result<(), Failed> {
        let out = kept.export(extra, env);
        check(out.status.code() == Some(2) && stderr(&out).contains(said), what, &out)?;
        check(!kept.cloud.calls().contains("export-data"), &format!("{what}: before any transfer"), &out)
    };
    refusal(&["--step", "4"], &[], "step 4 of", "a step that is a link")?;
    refusal(&["--step", "4"], &[], "step_4 is a link or a file, not a folder", "is named as such")?;
    refusal(&["--step", "6"], &[], "it is still being written (tmp_step_6)", "a step being written")?;
    std::fs::create_dir_all(kept.markers.join("step_12"))?;
    refusal(&["--step", "12"], &[], "step_12 holds no file: no checkpoint was saved there", "an empty step")?;
    std::fs::remove_dir(kept.markers.join("step_12"))?;
    refusal(&["--to", "gs://kept-runs/grpo"], &[], "does not end with `/`", "a bucket folder without its slash")?;
    refusal(&["--to", "gs://kept-runs/../x/"], &[], "the folder `..`", "a bucket folder with ..")?;
    let denied = [("FAKE_BUCKET_DENIED", "denied-runs")];
    refusal(&["--to", "gs://denied-runs/x/"], &denied, "bucket denied-runs cannot be read", "a bucket it cannot read")?;

    // A live run's claim on the folder, as its supervisor keeps it.
    let claim = serde_json::json!({"run": "raysubmit_live", "submission": "raysubmit_live", "cluster": "c", "folder": kept.markers.display().to_string(), "host": "h", "pid": 1, "at": epoch()});
    let text = claim.to_string();
    let mut signed = claim;
    signed["mac"] = gke_rl_in_cluster::records::mac(RUN_KEY.as_bytes(), "raysubmit_live", ".gke-rl-writer", &text).into();
    std::fs::write(kept.markers.join(".gke-rl-writer"), signed.to_string())?;
    refusal(&["--step", "2"], &[], "run raysubmit_live is writing", "a live run's folder")?;
    std::fs::remove_file(kept.markers.join(".gke-rl-writer"))?;

    // Done, but one file short: the check against the cluster's list catches it; the next export
    // copies what is missing.
    let short = kept.export(&["--step", "2"], &[("FAKE_TRANSFER", "drops")]);
    check(short.status.code() == Some(2) && stderr(&short).contains("said it was done, but"), "a DONE that left a file out", &short)?;
    check(stderr(&short).contains("1 file missing (config.yaml)"), "names the file", &short)?;
    let whole = kept.export(&["--step", "2"], &[]);
    check(whole.status.success() && stderr(&whole).contains("holds every file with its size"), "the next export completes it", &whole)?;

    // --hf: NeMo-RL's converter runs as a job on the head (no NeMo-RL here: it fails, and says
    // so); a model converted before is exported beside its step.
    let hf = kept.export(&["--step", "2", "--hf"], &[]);
    check(hf.status.code() == Some(2) && stderr(&hf).contains("the Hugging Face conversion (job gke-rl-hf-"), "a failed conversion", &hf)?;
    check(stderr(&hf).contains("convert_dcp_to_hf.py"), "DCP weights, DCP's converter", &hf)?;
    std::fs::create_dir_all(kept.markers.join("step_2-hf"))?;
    std::fs::write(kept.markers.join("step_2-hf/model.safetensors"), vec![3u8; 2048])?;
    let hf = kept.export(&["--step", "2", "--hf"], &[]);
    check(
        hf.status.success() && kept.object("grpo/nemo-rl-grpo-test1/step_2-hf/model.safetensors").is_file(),
        "the model beside its step",
        &hf,
    )?;

    // A transfer that fails; a bucket folder that holds what the step lacks.
    std::fs::create_dir_all(kept.markers.join("step_8"))?;
    std::fs::write(kept.markers.join("step_8/shard"), vec![1u8; 1024])?;
    let failed = kept.export(&["--step", "8"], &[("FAKE_TRANSFER", "error")]);
    check(
        failed.status.code() == Some(2)
            && stderr(&failed)
                .contains("failed: transfer failed: the service agent could not write the bucket (code 13); PERMISSION_DENIED: 1"),
        "a failed transfer",
        &failed,
    )?;
    let stale = kept.object("grpo/nemo-rl-grpo-test1/step_8/stale");
    std::fs::create_dir_all(kept.object("grpo/nemo-rl-grpo-test1/step_8"))?;
    std::fs::write(&stale, "from an earlier step 8")?;
    let taken = kept.export(&["--step", "8"], &[]);
    check(
        taken.status.code() == Some(2) && stderr(&taken).contains("holds objects this checkpoint lacks (1 object the step lacks (stale))"),
        "nothing is deleted from a bucket",
        &taken,
    )?;
    std::fs::remove_file(&stale)?;
    // Another deployment's export of step 8 in that folder is never written over.
    let theirs = kept.object("grpo/nemo-rl-grpo-test1/gke-rl/kept/step_8.json");
    std::fs::create_dir_all(theirs.parent().ok_or("no parent")?)?;
    let manifest =
        r#"{"source": "other-project/us-west1-a/their-lustre:/lustre/ckpt", "run": "nemo-rl-grpo-test1", "step": 8, "files": []}"#;
    std::fs::write(&theirs, manifest)?;
    let another = kept.export(&["--step", "8"], &[]);
    check(
        another.status.code() == Some(2)
            && stderr(&another).contains("holds step 8 exported from other-project/us-west1-a/their-lustre:/lustre/ckpt, not from fake-project/us-east1-b/rl-demo-gpu-lustre:"),
        "another deployment's export",
        &another,
    )?;
    std::fs::remove_file(&theirs)?;

    // A transfer that does not end: a second export is refused while the first holds the
    // deployment; once it is stopped, destroy refuses while the transfer runs.
    let mut first = kept.cloud.command(&["export", "--folder", "deployment", "--step", "8"]);
    first.envs(kept.env().iter().map(|(k, v)| (*k, v.as_str()))).env("FAKE_TRANSFER", "never");
    let before = kept.cloud.calls().matches("lustre instances export-data").count();
    check(before == 4, "the short export, the one that completed it, the model's, and the one that failed", &whole)?;
    let first = first.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn()?;
    let started = wait_for(Duration::from_secs(120), || kept.cloud.calls().matches("lustre instances export-data").count() > before);
    let second = kept.export(&["--step", "8"], &[("FAKE_TRANSFER", "never")]);
    check(
        started && second.status.code() == Some(2) && stderr(&second).contains(&format!("is in use by pid {}: gke-rl export", first.id())),
        "a second export waits its turn, and names the first",
        &second,
    )?;
    let _ = Command::new("kill").args(["-INT", &first.id().to_string()]).status();
    let first = common::exited_cleanly(first.wait_with_output()?);
    check(
        first.status.code() == Some(130) && stderr(&first).contains("never starts it over"),
        "Ctrl-C leaves the transfer running",
        &first,
    )?;
    let busy = kept.destroy(&[]);
    check(busy.status.code() == Some(2) && stderr(&busy).contains("runs (operation projects/"), "destroy while an export runs", &busy)?;
    // Its step removed meanwhile (NeMo-RL's keep_top_k): the next export forgets it.
    let step_8 = kept.markers.join("step_8");
    std::fs::rename(&step_8, kept.markers.join("elsewhere"))?;
    let forgot = kept.export(&["--step", "2"], &[]);
    check(
        forgot.status.success()
            && stderr(&forgot).contains("the transfer of gs://kept-runs/grpo/nemo-rl-grpo-test1/step_8/ is forgotten: ")
            && stderr(&forgot).contains("/ckpt/step_8 is gone since the export began, so nothing of it is recorded"),
        "a transfer whose step is gone is forgotten",
        &forgot,
    )?;
    std::fs::rename(kept.markers.join("elsewhere"), &step_8)?;

    // An import never lands over a newer step.
    let newer = kept.deploy(&["--resume-from", "gs://kept-runs/grpo/nemo-rl-grpo-test1/step_2/"]);
    check(!newer.status.success() && stderr(&newer).contains("holds a newer step than 2 (step_8"), "an import over a newer step", &newer)?;
    // Only a whole export is imported: one cut short has no manifest.
    std::fs::create_dir_all(kept.object("grpo/cut-short/step_10"))?;
    std::fs::write(kept.object("grpo/cut-short/step_10/shard"), vec![5u8; 512])?;
    let partial = kept.deploy(&["--resume-from", "gs://kept-runs/grpo/cut-short/step_10/"]);
    check(
        !partial.status.success()
            && stderr(&partial)
                .contains("gs://kept-runs/grpo/cut-short/step_10/ is not a checkpoint `gke-rl export` verified: there is no "),
        "an export cut short is not imported",
        &partial,
    )?;
    check(!kept.markers.join("tmp_step_10").exists() && !kept.markers.join("step_10").exists(), "and nothing of it lands", &partial)?;
    Ok(())
}
