//! deploy and destroy end to end, in process: the arguments, `gke_rl_ops` and the console
//! rendering, with fake gcloud, gcluster, terraform and packer on PATH
//! (`tests/fixtures/fakes/fake.sh`, which keeps a pretend cloud and records every call), and
//! an in-memory API server on kube's mock service for the Kubernetes steps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Args as _, FromArgMatches as _};
use gke_rl::lifecycle::{State, Step};
use gke_rl_kube::fake::{FakeApiServer, Pods};
use gke_rl_ops::{Env, Interrupt, Kube, Processes, SystemClock};

use super::{DeployArgs, DestroyArgs, ResumeArgs, SuspendArgs, interrupted};
use crate::console::Console;

const TOKEN: &str = "hf_fake_token_value_0123456789";

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// The variables the fakes see, on top of this process's.
    vars: Mutex<BTreeMap<String, Option<String>>>,
    server: FakeApiServer,
    client: kube::Client,
    log: Arc<Mutex<Vec<u8>>>,
}

fn world(pods: Pods) -> World {
    let blueprint = crate::project_root().join("tests/fixtures/upstream/cluster-toolkit/gke-a4.yaml");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let bin = root.join("bin");
    let example = root.join("toolkit/examples/gke-a4");
    for path in [&bin, &example, &root.join("cloud")] {
        std::fs::create_dir_all(path).unwrap();
    }
    let fake = crate::project_root().join("tests/fixtures/fakes/fake.sh");
    for program in ["gcloud", "gcluster", "terraform", "packer", "gke-gcloud-auth-plugin"] {
        std::os::unix::fs::symlink(&fake, bin.join(program)).unwrap();
    }
    std::fs::copy(blueprint, example.join("gke-a4.yaml")).unwrap();
    for template in gke_rl::lifecycle::STAGED_TEMPLATES {
        std::fs::write(example.join(template), format!("# {template}\n")).unwrap();
    }
    let vars = BTreeMap::from([
        ("PATH".to_owned(), Some(format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))),
        ("FAKE_CLOUD".to_owned(), Some(root.join("cloud").display().to_string())),
        ("HF_TOKEN".to_owned(), Some(TOKEN.to_owned())),
    ]);
    let (server, client) = FakeApiServer::start(pods);
    World { _dir: dir, root, vars: Mutex::new(vars), server, client, log: Arc::default() }
}

impl World {
    fn set_var(&self, name: &str, value: &str) {
        self.vars.lock().unwrap().insert(name.to_owned(), Some(value.to_owned()));
    }

    fn env(&self, interrupt: Interrupt) -> (Env, Console) {
        let env = Env {
            runner: Arc::new(Processes { vars: self.vars.lock().unwrap().clone() }),
            kube: Kube::Given(self.client.clone()),
            clock: Arc::new(SystemClock),
            interrupt,
            poll: Duration::from_millis(1),
        };
        (env, Console::captured(self.log.clone()))
    }

    fn flags(&self, extra: &[&str]) -> Vec<String> {
        let mut flags = vec!["cmd".to_owned(), "--yes".into(), "--folder".into(), self.folder().display().to_string()];
        flags.extend(["--toolkit".to_owned(), self.root.join("toolkit").display().to_string()]);
        flags.extend(extra.iter().map(|f| (*f).to_owned()));
        flags
    }

    async fn deploy(&self, extra: &[&str]) -> u8 {
        let mut flags = self.flags(extra);
        flags.extend(["--authorized-cidr".into(), "203.0.113.7/32".into(), "--timeout".into(), "2s".into()]);
        let matches = DeployArgs::augment_args(clap::Command::new("deploy")).try_get_matches_from(flags).unwrap();
        let args = DeployArgs::from_arg_matches(&matches).unwrap();
        {
            let (env, console) = self.env(Interrupt::manual().1);
            args.execute(env, console).await.unwrap()
        }
    }

    async fn destroy(&self, extra: &[&str]) -> anyhow::Result<u8> {
        let matches = DestroyArgs::augment_args(clap::Command::new("destroy")).try_get_matches_from(self.flags(extra)).unwrap();
        {
            let (env, console) = self.env(Interrupt::manual().1);
            DestroyArgs::from_arg_matches(&matches).unwrap().execute(env, console).await
        }
    }

    async fn suspend(&self, resume: bool) -> u8 {
        let flags = ["cmd".to_owned(), "--timeout".into(), "2s".into()];
        let (env, console) = self.env(Interrupt::manual().1);
        if resume {
            let matches = ResumeArgs::augment_args(clap::Command::new("resume")).try_get_matches_from(flags).unwrap();
            ResumeArgs::from_arg_matches(&matches).unwrap().execute(env, console).await.unwrap()
        } else {
            let matches = SuspendArgs::augment_args(clap::Command::new("suspend")).try_get_matches_from(flags).unwrap();
            SuspendArgs::from_arg_matches(&matches).unwrap().execute(env, console).await.unwrap()
        }
    }

    fn folder(&self) -> PathBuf {
        self.root.join("deployments/ray-a4-gpu-spot")
    }

    fn state(&self) -> Option<State> {
        std::fs::read_to_string(self.folder().join("state.json")).ok().map(|t| State::from_json(&t).unwrap())
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.root.join("cloud/calls")).unwrap_or_default()
    }

    fn count(&self, call: &str) -> usize {
        self.calls().lines().filter(|l| l.starts_with(call)).count()
    }

    fn log(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }

    fn applies(&self, plural: &str) -> usize {
        self.server.requests().iter().filter(|r| r.method == "PATCH" && r.uri.contains(&format!("/{plural}/"))).count()
    }

    /// The token is in the Secret's body and nowhere else: not in any call, child environment,
    /// file of the folder, or line of the log.
    fn assert_token_stays_secret(&self) {
        assert!(!self.calls().contains(TOKEN), "a call or a child's environment holds the token:\n{}", self.calls());
        assert!(self.calls().lines().all(|l| l.contains("HF_TOKEN=<unset>")), "children must not inherit the token:\n{}", self.calls());
        assert!(!self.log().contains(TOKEN), "the log holds the token");
        for entry in walk(&self.folder()) {
            assert!(!std::fs::read_to_string(&entry).unwrap_or_default().contains(TOKEN), "{} holds the token", entry.display());
        }
        for request in self.server.requests() {
            assert!(!request.uri.contains(TOKEN), "{} holds the token", request.uri);
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn deploy_from_scratch_then_a_rerun_changes_nothing() {
    let w = world(Pods::ReadyAfter(2));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    let state = w.state().unwrap();
    assert_eq!(state.completed, Step::ALL);
    assert_eq!(state.project_id, "fake-project", "read from gcloud's configuration");
    assert_eq!(state.created.cluster.as_deref(), Some("ray-a4-gpu-spot"));
    assert_eq!(state.created.lustre_instance.as_deref(), Some("rl-demo-gpu-lustre"));
    assert!(state.created.ray_cluster_uid.is_some());

    let deploy = w.calls().lines().find(|l| l.starts_with("gcluster deploy")).unwrap().to_owned();
    let folder = w.folder().display().to_string();
    assert!(deploy.starts_with(&format!("gcluster deploy {folder}/gke-a4.yaml -d {folder}/gke-a4-deployment.yaml")), "{deploy}");
    assert!(deploy.contains("--vars project_id=fake-project\\,authorized_cidr=203.0.113.7/32 -o"), "{deploy}");
    assert!(deploy.contains("-w --auto-approve") && deploy.contains(&format!("[cwd={}/toolkit", w.root.display())), "{deploy}");
    assert!(w.folder().join("kueue-configuration.yaml.tftpl").is_file() && w.folder().join("ray-cluster.yaml").is_file());
    let secret = w.server.object("secrets", "gke-rl-secrets").unwrap();
    assert_eq!(secret["data"].as_object().unwrap().keys().collect::<Vec<_>>(), ["HF_TOKEN"], "W&B is optional and unset");
    let log = w.log();
    assert!(
        log.contains("✓ provision with gcluster") && log.contains("9/9 pods Ready") && log.contains("RayCluster ray-a4-gpu-spot is Ready"),
        "{log}"
    );
    w.assert_token_stays_secret();

    let calls_before = w.calls();
    let patches_before = w.applies("rayclusters") + w.applies("secrets");
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    let new_calls = &w.calls()[calls_before.len()..];
    assert!(!new_calls.contains("gcluster deploy") && !new_calls.contains("get-credentials"), "{new_calls}");
    assert_eq!(w.applies("rayclusters") + w.applies("secrets"), patches_before, "nothing applied again");
    assert!(w.log().contains("nothing to do: RayCluster ray-a4-gpu-spot is Ready (9/9 pods)"), "{}", w.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn dry_run_prints_every_command_and_changes_nothing() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&["--dry-run"]).await, 0);
    let log = w.log();
    for expected in [
        "$ gcloud services list",
        "gcluster deploy",
        "--auto-approve",
        "get-credentials",
        "HF_TOKEN: <the value of $HF_TOKEN>",
        "kind: RayCluster",
    ] {
        assert!(log.contains(expected), "{expected} missing from\n{log}");
    }
    assert!(w.calls().lines().all(|l| l.starts_with("gcloud config get-value")), "only the project was read:\n{}", w.calls());
    assert!(!w.folder().exists() && w.server.requests().is_empty());
}

/// A failure at each step stops there with exit 1, and the next run resumes at that step.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_failure_at_any_step_resumes_at_that_step() {
    type Break = fn(&World);
    type Mend = fn(&World);
    let cases: [(&str, Step, Break, Mend); 6] = [
        ("preflight", Step::Preflight, |w| w.set_var("FAKE_DISABLED_APIS", "lustre"), |w| w.set_var("FAKE_DISABLED_APIS", "")),
        ("provision", Step::Provision, |w| w.set_var("FAKE_FAIL", "gcluster deploy"), |w| w.set_var("FAKE_FAIL", "")),
        (
            "credentials",
            Step::Credentials,
            |w| w.set_var("FAKE_FAIL", "gcloud container clusters get-credentials"),
            |w| w.set_var("FAKE_FAIL", ""),
        ),
        ("secret", Step::Secret, |w| w.server.refuse("secrets", true), |w| w.server.refuse("secrets", false)),
        ("raycluster", Step::RayCluster, |w| w.server.refuse("rayclusters", true), |w| w.server.refuse("rayclusters", false)),
        (
            "ready",
            Step::Ready,
            |w| w.server.set_pods(Pods::Unschedulable("0/3 nodes are available".into())),
            |w| w.server.set_pods(Pods::ReadyAfter(0)),
        ),
    ];
    for (name, failing, break_it, mend) in cases {
        let w = world(Pods::ReadyAfter(0));
        break_it(&w);
        assert_eq!(w.deploy(&[]).await, 1, "{name}: {}", w.log());
        let completed = w.state().map(|s| s.completed).unwrap_or_default();
        let before: Vec<Step> = Step::ALL.into_iter().filter(|s| *s < failing).collect();
        if failing == Step::Preflight {
            assert!(w.log().contains("gcloud services enable lustre.googleapis.com --project fake-project"), "{}", w.log());
            assert!(completed.is_empty() && w.count("gcluster deploy") == 0, "{name}: nothing is created before preflight passes");
        } else {
            assert_eq!(completed, before, "{name}");
            assert!(w.log().contains("re-run `gke-rl deploy` to resume from this step"), "{name}: {}", w.log());
        }
        mend(&w);
        assert_eq!(w.deploy(&[]).await, 0, "{name}: {}", w.log());
        assert_eq!(w.state().unwrap().completed, Step::ALL, "{name}");
        let provisions = if failing == Step::Provision { 2 } else { 1 };
        assert_eq!(w.count("gcluster deploy"), provisions, "{name}: gcluster runs again only when it failed");
        assert_eq!(w.applies("secrets"), usize::from(failing == Step::Secret) + 1, "{name}");
        assert_eq!(w.applies("rayclusters"), usize::from(failing == Step::RayCluster) + 1, "{name}");
        w.assert_token_stays_secret();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_spot_stock_out_is_named_while_waiting() {
    let message = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.";
    let w = world(Pods::Unschedulable(message.into()));
    assert_eq!(w.deploy(&[]).await, 1);
    let log = w.log();
    assert!(log.contains(&format!("! ray-a4-gpu-spot-head: Unschedulable: {message}")), "{log}");
    assert!(log.contains("Spot capacity for a4-highgpu-8g in us-east1-b is likely exhausted"), "{log}");
    assert!(log.contains("gcloud container node-pools describe a4-highgpu-8g-a4-pool --cluster ray-a4-gpu-spot"), "{log}");
    assert_eq!(
        log.lines().filter(|l| l.starts_with("  ! ray-a4-gpu-spot-head:")).count(),
        1,
        "each reason is told once while waiting:\n{log}"
    );
    assert_eq!(log.matches("state: waiting for GPU capacity (Spot stock-out").count(), 1, "{log}");
}

/// A deployment whose Spot nodes were preempted: deploy says so and waits for KubeRay to
/// recreate the pods, rather than reporting a stock-out or starting over.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_preempted_deployment_waits_for_its_pods_to_be_recreated() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    w.server.set_pods(Pods::Preempted { lost: 2, message: "0/9 nodes are available: 2 Insufficient nvidia.com/gpu.".into() });
    let server = w.server.clone();
    tokio::spawn(async move {
        // The nodes come back after a few looks.
        let looks = || server.requests().iter().filter(|r| r.uri.contains("/pods")).count();
        let before = looks();
        while looks() < before + 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        server.set_pods(Pods::ReadyAfter(0));
    });
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    let log = w.log();
    assert!(
        log.contains("has 7/9 pods Ready (preempted: KubeRay is recreating the lost pods, which wait for nodes): waiting for them again"),
        "{log}"
    );
    assert!(log.contains("state: preempted: KubeRay is recreating") && !log.contains("likely exhausted"), "{log}");
    assert_eq!(w.count("gcluster deploy"), 1, "nothing is provisioned again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn ctrl_c_mid_deploy_leaves_a_state_that_deploy_and_destroy_accept() {
    let w = world(Pods::ReadyAfter(usize::MAX));
    let (press, interrupt) = Interrupt::manual();
    let server = w.server.clone();
    tokio::spawn(async move {
        // Ctrl-C once the wait for the pods has looked a few times.
        while server.requests().iter().filter(|r| r.uri.contains("/pods")).count() < 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let _ = press.send(Some(2));
    });
    let matches = DeployArgs::augment_args(clap::Command::new("deploy"))
        .try_get_matches_from(w.flags(&["--authorized-cidr", "203.0.113.7/32", "--timeout", "1h"]))
        .unwrap();
    let (env, console) = w.env(interrupt);
    let code = DeployArgs::from_arg_matches(&matches).unwrap().execute(env, console).await.unwrap();
    assert_eq!(code, interrupted(2), "{}", w.log());
    assert!(w.log().contains("gke-rl deploy    resumes from there"), "{}", w.log());
    let state = w.state().unwrap();
    assert!(state.done(Step::RayCluster) && !state.done(Step::Ready), "{state:?}");

    w.server.set_pods(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    assert_eq!((w.count("gcluster deploy"), w.applies("rayclusters")), (1, 1), "resumed at the wait");
    assert_eq!(w.destroy(&[]).await.unwrap(), 0, "{}", w.log());
    w.assert_token_stays_secret();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn destroy_empties_the_buckets_tears_down_and_verifies() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    let checkpoints = w.root.join("cloud/buckets/checkpoint-ray-a4-gpu-spot-3c4d");
    for object in ["step_2.pt", "step_4.pt"] {
        std::fs::write(checkpoints.join(object), "weights").unwrap();
    }
    assert_eq!(w.destroy(&[]).await.unwrap(), 0, "{}", w.log());
    let log = w.log();
    assert!(log.contains("bucket checkpoint-ray-a4-gpu-spot-3c4d (2 objects, emptied first)"), "{log}");
    assert!(log.contains("everything under /lustre, checkpoints included, is lost"), "{log}");
    let calls = w.calls();
    let emptied = calls.find("gcloud storage rm --recursive --all-versions gs://checkpoint-ray-a4-gpu-spot-3c4d/\\*\\*").expect("emptied");
    assert!(emptied < calls.find("gcluster destroy").unwrap(), "buckets are emptied before gcluster destroy");
    assert!(calls.contains("gcluster destroy ") && calls.contains(" --auto-approve"), "{calls}");
    assert!(calls.contains("gcloud lustre instances describe rl-demo-gpu-lustre --location us-east1-b"), "verified with gcloud");
    assert!(w.server.object("rayclusters", "ray-a4-gpu-spot").is_none() && w.server.object("secrets", "gke-rl-secrets").is_none());
    assert!(w.state().is_none(), "a verified destroy removes the state");
    assert!(log.contains("no cluster, Lustre instance or bucket of ray-a4-gpu-spot remains"), "{log}");
    assert_eq!(w.destroy(&[]).await.unwrap(), 0);
    assert!(w.log().contains("nothing to destroy"));
    w.assert_token_stays_secret();
}

/// The deployment folder is lost, the cluster still bills: destroy finds the cluster and the
/// Lustre instance by name and the buckets by gcluster's label, deletes them with gcloud, and
/// verifies; it never says "nothing to destroy" while they exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_lost_state_folder_does_not_hide_what_bills() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    std::fs::write(w.root.join("cloud/buckets/checkpoint-ray-a4-gpu-spot-3c4d/step_2.pt"), "weights").unwrap();
    std::fs::remove_dir_all(w.folder()).unwrap();
    assert_eq!(w.destroy(&[]).await.unwrap(), 0, "{}", w.log());
    let log = w.log();
    assert!(!log.contains("nothing to destroy") && log.contains("no deployment state in"), "{log}");
    let labelled = "GKE cluster ray-a4-gpu-spot (us-east1, labelled ghpc_deployment=ray-a4-gpu-spot)";
    for found in [labelled, "Managed Lustre instance rl-demo-gpu-lustre", "bucket checkpoint-ray-a4-gpu-spot-3c4d"] {
        assert!(log.contains(&format!("  - {found}")), "{found} missing from\n{log}");
    }
    let calls = w.calls();
    for deleted in [
        "gcloud container clusters delete ray-a4-gpu-spot",
        "gcloud lustre instances delete rl-demo-gpu-lustre",
        "gcloud storage buckets delete",
    ] {
        assert!(calls.contains(deleted), "{deleted} missing from\n{calls}");
    }
    assert!(!calls.contains("gcluster destroy"), "no gcluster folder to destroy");
    assert!(log.contains("cannot be found without its state"), "{log}");
    assert_eq!(w.destroy(&[]).await.unwrap(), 0);
    assert!(w.log().contains("nothing to destroy"), "now nothing bills");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn destroy_says_loudly_what_remains() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    w.set_var("FAKE_DESTROY_LEAVES", "lustre");
    assert_eq!(w.destroy(&[]).await.unwrap(), 1);
    assert!(
        w.log().contains("NOT DESTROYED — these still exist and may still bill:\n  - Managed Lustre instance rl-demo-gpu-lustre"),
        "{}",
        w.log()
    );
    assert!(w.state().is_some(), "the state stays for the next attempt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn another_projects_state_is_refused() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    let error = w.destroy(&["--project", "someone-elses"]).await.unwrap_err().to_string();
    assert!(error.starts_with("refusing to act: the state file belongs to deployment ray-a4-gpu-spot in project fake-project"), "{error}");
    assert_eq!(w.count("gcluster destroy"), 0);
    assert!(w.server.object("rayclusters", "ray-a4-gpu-spot").is_some(), "nothing was deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_deploy_that_failed_in_gcluster_can_be_destroyed() {
    let w = world(Pods::ReadyAfter(0));
    w.set_var("FAKE_FAIL", "gcluster deploy");
    assert_eq!(w.deploy(&[]).await, 1);
    assert_eq!(w.destroy(&["--dry-run"]).await.unwrap(), 0);
    assert!(w.log().contains("verify that Managed Lustre instance rl-demo-gpu-lustre is gone"), "{}", w.log());
    assert!(w.state().is_some(), "a dry run changes nothing");
    assert_eq!(w.destroy(&[]).await.unwrap(), 0, "{}", w.log());
    assert_eq!(w.count("gcloud container clusters get-credentials"), 0, "no cluster credentials were ever recorded");
    assert!(w.calls().contains("gcloud lustre instances describe"), "still verified with gcloud");
    assert!(w.state().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_failed_gcluster_destroy_is_never_reported_as_destroyed() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    w.set_var("FAKE_FAIL", "gcluster destroy");
    assert_eq!(w.destroy(&[]).await.unwrap(), 1);
    let log = w.log();
    assert!(
        log.contains("NOT DESTROYED") && log.contains("GKE cluster ray-a4-gpu-spot") && log.contains("networks, firewall rules"),
        "{log}"
    );
    assert!(w.state().is_some());
    w.set_var("FAKE_FAIL", "");
    assert_eq!(w.destroy(&[]).await.unwrap(), 0, "a second destroy finishes the job: {}", w.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_rerun_repairs_a_ray_cluster_deleted_behind_its_back() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    let clusters = gke_rl_kube::RayClusters::new(w.client.clone(), "default");
    assert!(clusters.delete("ray-a4-gpu-spot").await.unwrap());
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    assert!(w.log().contains("RayCluster ray-a4-gpu-spot is gone: applying it again"), "{}", w.log());
    assert_eq!((w.count("gcluster deploy"), w.applies("secrets"), w.applies("rayclusters")), (1, 2, 2));
    assert!(w.server.object("rayclusters", "ray-a4-gpu-spot").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn preflight_reports_every_problem_at_once_and_creates_nothing() {
    let w = world(Pods::ReadyAfter(0));
    w.set_var("FAKE_NO_ACCOUNT", "1");
    w.set_var("HF_TOKEN", "");
    std::fs::remove_file(w.root.join("bin/packer")).unwrap();
    assert_eq!(w.deploy(&[]).await, 1);
    let log = w.log();
    for expected in ["no active gcloud account: run `gcloud auth login`", "packer is not on PATH", "$HF_TOKEN is not set"] {
        assert!(log.contains(expected), "{expected} missing from\n{log}");
    }
    assert!(!log.contains("gke.gcsfuse.profileUser does not exist"), "no role verdict without an account:\n{log}");
    assert!(w.state().is_none() && w.count("gcluster deploy") == 0);

    w.set_var("FAKE_NO_ACCOUNT", "");
    w.set_var("FAKE_NO_GCSFUSE_ROLE", "1");
    w.set_var("HF_TOKEN", TOKEN);
    assert_eq!(w.deploy(&["--download-dependencies"]).await, 0, "{}", w.log());
    assert!(w.log().contains("gcluster's test_gcsfuse_iam_role_exists validator is skipped"), "{}", w.log());
    let deploy = w.calls().lines().find(|l| l.starts_with("gcluster deploy")).unwrap().to_owned();
    assert!(deploy.contains("--download-dependencies --skip-validators test_gcsfuse_iam_role_exists"), "{deploy}");
}

/// deploy --idle-timeout installs the guard beside the RayCluster: its service account, a role
/// on this RayCluster only, the program and the CronJob.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn deploy_installs_the_idle_guard() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&["--idle-timeout", "2h"]).await, 0, "{}", w.log());
    assert!(
        w.log().contains("idle guard applied in default: ServiceAccount ray-a4-gpu-spot-idle-guard, Role ray-a4-gpu-spot-idle-guard"),
        "{}",
        w.log()
    );
    let cronjob = w.server.object("cronjobs", "ray-a4-gpu-spot-idle-guard").expect("the CronJob");
    let env = &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"];
    assert!(env.as_array().unwrap().iter().any(|e| e["name"] == "GKE_RL_IDLE_SECONDS" && e["value"] == "7200"), "{env}");
    assert_eq!(w.server.object("configmaps", "ray-a4-gpu-spot-idle-guard").unwrap()["data"]["idle_guard.py"], gke_rl::guard::program());
    let blueprint = std::fs::read_to_string(w.folder().join("gke-a4.yaml")).unwrap();
    assert!(blueprint.contains("autoscaling_total_min_nodes: 0"), "the GPU pool gives its nodes back when suspended");
}

/// Suspend deletes the pods and keeps the RayCluster; resume brings every pod back; each says
/// what it found when there is nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn suspend_and_resume_through_kuberay() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.suspend(false).await, 1, "no RayCluster yet");
    assert!(w.log().contains("RayCluster ray-a4-gpu-spot does not exist (deploy it first)"), "{}", w.log());
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    assert_eq!(w.suspend(false).await, 0);
    assert!(
        w.log().contains("suspending RayCluster ray-a4-gpu-spot: KubeRay deletes its pods") && w.log().contains("the Ray pods are gone")
    );
    assert_eq!(w.server.object("rayclusters", "ray-a4-gpu-spot").unwrap()["spec"]["suspend"], true);
    assert_eq!(w.suspend(false).await, 0);
    assert!(w.log().contains("was suspended already"), "{}", w.log());
    assert_eq!(w.suspend(true).await, 0);
    assert!(w.log().contains("RayCluster ray-a4-gpu-spot is back: every pod Ready"), "{}", w.log());
    assert_eq!(w.suspend(true).await, 0);
    assert!(w.log().contains("is not suspended"), "{}", w.log());
}

/// A project with no B200 quota, or a zone without A4, fails in preflight, before gcluster
/// spends 30-60 minutes finding out.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn missing_capacity_is_found_before_anything_is_created() {
    let w = world(Pods::ReadyAfter(0));
    // A new project: no B200 quota at all.
    w.set_var("FAKE_GPU_QUOTA", "0");
    assert_eq!(w.deploy(&[]).await, 1);
    assert!(w.log().contains("PREEMPTIBLE_NVIDIA_B200_GPUS quota in us-east1 has 0 of 0 free, but 64 GPUs are needed"), "{}", w.log());
    w.set_var("FAKE_GPU_QUOTA", "16");
    w.set_var("FAKE_ZONE_LACKS", "a4,lustre");
    assert_eq!(w.deploy(&[]).await, 1);
    let log = w.log();
    for expected in [
        "PREEMPTIBLE_NVIDIA_B200_GPUS quota in us-east1 has 16 of 16 free, but 64 GPUs are needed",
        "https://console.cloud.google.com/iam-admin/quotas?project=fake-project",
        "zone us-east1-b does not offer a4-highgpu-8g",
        "zone us-east1-b has no RoCE network profile (us-east1-b-vpc-roce)",
        "Managed Lustre does not answer for zone us-east1-b (",
        "INVALID_ARGUMENT: location is not supported): pick a zone it serves",
    ] {
        assert!(log.contains(expected), "{expected} missing from\n{log}");
    }
    assert!(w.state().is_none() && w.count("gcluster deploy") == 0);
    w.set_var("FAKE_GPU_QUOTA", "64");
    w.set_var("FAKE_ZONE_LACKS", "");
    assert_eq!(w.deploy(&[]).await, 0, "exactly enough: {}", w.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_lustre_mount_failure_is_named_while_waiting() {
    let message = "MountVolume.MountDevice failed for volume \"lustre-pv\": rpc error: mount failed: exit status 110";
    let w = world(Pods::MountFails(message.into()));
    assert_eq!(w.deploy(&[]).await, 1);
    let log = w.log();
    assert!(log.contains(&format!("! ray-a4-gpu-spot-worker-0: FailedMount: {message}")), "{log}");
    assert!(!log.contains("Spot capacity"), "a mount failure is not a capacity problem:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_changed_config_runs_again_from_render() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    let config = w.root.join("gke-rl.yaml");
    std::fs::write(&config, "topology:\n  node_count: 2\n").unwrap();
    assert_eq!(w.deploy(&["--config", config.to_str().unwrap()]).await, 0, "{}", w.log());
    assert!(w.log().contains("the config or the blueprint changed since the last deploy"), "{}", w.log());
    assert_eq!((w.count("gcluster deploy"), w.applies("rayclusters")), (2, 2));
    let deployment_file = std::fs::read_to_string(w.folder().join("gke-a4-deployment.yaml")).unwrap();
    assert!(deployment_file.contains("static_node_count: 2"), "{deployment_file}");
    assert!(w.log().contains("3/3 pods Ready"), "{}", w.log());
}

/// A RayCluster in a namespace of its own: deploy creates the namespace before the Secret, and
/// the blueprint's PVC goes there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_namespace_of_its_own_is_created_before_the_secret() {
    let w = world(Pods::ReadyAfter(0));
    let config = w.root.join("gke-rl.yaml");
    std::fs::write(&config, "ray:\n  namespace: rl\n").unwrap();
    assert_eq!(w.deploy(&["--config", config.to_str().unwrap()]).await, 0, "{}", w.log());
    let namespace = w.server.object("namespaces", "rl").expect("the namespace was applied");
    assert_eq!(namespace["metadata"]["labels"]["app.kubernetes.io/managed-by"], "gke-rl");
    let requests = w.server.requests();
    let first = |needle: &str| requests.iter().position(|r| r.method == "PATCH" && r.uri.contains(needle)).unwrap();
    assert!(first("/api/v1/namespaces/rl?") < first("/secrets/"), "the namespace comes first");
    let blueprint = std::fs::read_to_string(w.folder().join("gke-a4.yaml")).unwrap();
    assert!(blueprint.contains("namespace: rl"), "the Lustre PVC is created in rl");
}

/// A Ray with token authentication: deploy makes the token (32 random bytes in hex) in the
/// Secret the RayCluster names, shows it nowhere, keeps it when it runs again, and warns when it
/// turns tokens on for pods that ran without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn deploy_makes_the_ray_token_once_keeps_it_and_shows_it_nowhere() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.deploy(&[]).await, 0, "{}", w.log());
    assert!(w.server.object("networkpolicies", "ray-a4-gpu-spot-ray-pods").is_some(), "Ray 2.46: the NetworkPolicy");
    assert!(w.server.object("secrets", "ray-a4-gpu-spot-ray-token").is_none(), "and no token");

    let config = w.root.join("tokens.yaml");
    std::fs::write(&config, "ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\n").unwrap();
    let config = config.display().to_string();
    std::fs::remove_file(w.folder().join("state.json")).unwrap();
    assert_eq!(w.deploy(&["--config", &config]).await, 0, "{}", w.log());
    let token = w.server.secret_value("ray-a4-gpu-spot-ray-token", "auth_token").expect("a token");
    assert!(token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()), "{}", token.len());
    let cluster = w.server.object("rayclusters", "ray-a4-gpu-spot").unwrap();
    assert_eq!(cluster["spec"]["authOptions"], serde_json::json!({"mode": "token", "secretName": "ray-a4-gpu-spot-ray-token"}));
    let log = w.log();
    assert!(log.contains("Secret default/ray-a4-gpu-spot-ray-token holds a new Ray token"), "{log}");
    assert!(
        log.contains("RayCluster default/ray-a4-gpu-spot ran without token authentication; its running pods keep running without it"),
        "{log}"
    );
    assert!(w.server.object("networkpolicies", "ray-a4-gpu-spot-ray-pods").is_none(), "tokens take the NetworkPolicy's place");

    std::fs::remove_file(w.folder().join("state.json")).unwrap();
    assert_eq!(w.deploy(&["--config", &config]).await, 0, "{}", w.log());
    assert_eq!(w.server.secret_value("ray-a4-gpu-spot-ray-token", "auth_token"), Some(token.clone()), "kept: the pods hold it");
    assert!(w.log().contains("Secret default/ray-a4-gpu-spot-ray-token keeps the cluster's Ray token"), "{}", w.log());

    assert!(!w.log().contains(&token) && !w.calls().contains(&token), "printed or passed to a program");
    assert!(walk(&w.root).iter().all(|f| !std::fs::read_to_string(f).unwrap_or_default().contains(&token)), "written to a file");
    assert!(w.server.requests().iter().all(|r| !r.uri.contains(&token)), "in a request's URI");
    w.assert_token_stays_secret();
}
