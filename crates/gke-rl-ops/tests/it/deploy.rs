//! deploy, destroy, suspend and resume where they live: `gke_rl_ops` itself, with fake gcloud,
//! gcluster, terraform and packer on the runner's PATH (`tests/fixtures/fakes/fake.sh`, which
//! keeps a pretend cloud and records every call) and an in-memory API server on kube's mock
//! service (`gke_rl_kube::fake`) for the Kubernetes steps. What happened is read from the
//! typed outcomes and the events; a front end's wording is its own tests' business.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gke_rl::Deployment;
use gke_rl::lifecycle::Command;
use gke_rl::lifecycle::{State, Step};
use gke_rl::model::{Cidr, ProjectId};
use gke_rl_kube::fake::{FakeApiServer, Pods};
use gke_rl_ops::deploy::{DeployOptions, Deployed};
use gke_rl_ops::destroy::{DestroyOptions, Destroyed, Plan};
use gke_rl_ops::suspend::Changed;
use gke_rl_ops::{
    Env, Event, Interrupt, Kube, LifecycleError, LifecycleEvent, Processes, Progress, Question, RunError, Runner, SiteOptions, SystemClock,
    Unanswerable,
};
use gke_rl_test_support::{files_under, project_root};

const TOKEN: &str = "hf_fake_token_value_0123456789";

/// The events, one line each (the wait's own words where the types have them), and the
/// previews destroy asked about; every question is answered yes.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Progress for Recorder {
    fn event(&self, event: Event<'_>) {
        let line = match event {
            Event::Lifecycle(LifecycleEvent::Running(command)) => format!("$ {command}"),
            Event::Lifecycle(LifecycleEvent::Waiting(problem)) => format!("! {problem}"),
            Event::Lifecycle(LifecycleEvent::ClusterState(state)) => format!("state: {}", state.describe()),
            Event::Lifecycle(other) => format!("{other:?}"),
            other => format!("{other:?}"),
        };
        self.0.lock().unwrap().push(line);
    }

    fn confirm(&self, question: &Question<'_>) -> Result<bool, Unanswerable> {
        if let Question::Destroy { preview } = question {
            self.0.lock().unwrap().push((*preview).to_owned());
        }
        Ok(true)
    }
}

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// The variables the fakes see, on top of this process's.
    vars: Mutex<BTreeMap<String, Option<String>>>,
    server: FakeApiServer,
    client: kube::Client,
    log: Arc<Recorder>,
    /// Queries that start so get no answer, as gcloud on a network that went away.
    silent: Mutex<Option<String>>,
}

/// The fakes, except that queries starting with `silent` give no answer in time.
struct Silent {
    processes: Processes,
    silent: Option<String>,
}

impl Runner for Silent {
    fn read(&self, command: &Command, hidden: &[String]) -> Result<String, RunError> {
        match &self.silent {
            Some(prefix) if command.to_string().starts_with(prefix.as_str()) => {
                Err(RunError::NoAnswer { program: command.program.clone(), within: Duration::from_secs(120), cut: false })
            }
            _ => self.processes.read(command, hidden),
        }
    }

    fn stream(&self, command: &Command, hidden: &[String]) -> bool {
        self.processes.stream(command, hidden)
    }

    fn var(&self, name: &str) -> Option<String> {
        self.processes.var(name)
    }
}

fn world(pods: Pods) -> World {
    let blueprint = project_root().join("tests/fixtures/upstream/cluster-toolkit").join(gke_rl::ArtifactKind::Blueprint.file());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let bin = root.join("bin");
    let example = root.join("toolkit").join(gke_rl::knowledge::toolkit_example());
    for path in [&bin, &example, &root.join("cloud")] {
        std::fs::create_dir_all(path).unwrap();
    }
    let fake = project_root().join("tests/fixtures/fakes/fake.sh");
    for program in ["gcloud", "gcluster", "terraform", "packer", "gke-gcloud-auth-plugin"] {
        std::os::unix::fs::symlink(&fake, bin.join(program)).unwrap();
    }
    std::fs::copy(&blueprint, root.join("toolkit").join(gke_rl::knowledge::toolkit_blueprint())).unwrap();
    for template in gke_rl::knowledge::STAGED_TEMPLATES {
        std::fs::copy(blueprint.with_file_name(template), example.join(template)).unwrap();
    }
    let vars = BTreeMap::from([
        ("PATH".to_owned(), Some(format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))),
        ("FAKE_CLOUD".to_owned(), Some(root.join("cloud").display().to_string())),
        ("HF_TOKEN".to_owned(), Some(TOKEN.to_owned())),
    ]);
    let (server, client) = FakeApiServer::start(pods);
    World { _dir: dir, root, vars: Mutex::new(vars), server, client, log: Arc::default(), silent: Mutex::default() }
}

/// What a deploy or destroy is given besides the defaults.
#[derive(Default)]
struct Given<'a> {
    /// A config file's text.
    config: Option<&'a str>,
    project: Option<&'a str>,
    download_dependencies: bool,
    idle_timeout_minutes: Option<u32>,
    timeout: Option<Duration>,
    /// Destroy without `discard_checkpoints`, as a user does by default: the cluster must
    /// list what the Lustre instance holds first. Off, the tests of the rest of destroy run
    /// with it on.
    keep_checkpoints: bool,
}

impl World {
    fn set_var(&self, name: &str, value: &str) {
        self.vars.lock().unwrap().insert(name.to_owned(), Some(value.to_owned()));
    }

    fn env(&self, interrupt: Interrupt) -> Env {
        let processes = Processes { vars: self.vars.lock().unwrap().clone() };
        let silent = self.silent.lock().unwrap().clone();
        Env {
            runner: Arc::new(Silent { processes, silent }),
            kube: Kube::Given(self.client.clone()),
            clock: Arc::new(SystemClock),
            interrupt,
            poll: Duration::from_millis(1),
            // No head answers here: a port-forward gives up at once.
            reconnect: Duration::from_millis(10),
        }
    }

    fn deployment(&self, given: &Given<'_>) -> Deployment {
        let mut deployment = given.config.map_or_else(Deployment::default, |text| gke_rl::config::from_yaml(text).unwrap());
        deployment.job.idle_timeout_minutes = given.idle_timeout_minutes.and_then(std::num::NonZeroU32::new);
        deployment
    }

    fn target(&self, given: &Given<'_>) -> SiteOptions {
        SiteOptions {
            project: given.project.map(|p| ProjectId::new(p).unwrap()),
            folder: Some(self.folder()),
            toolkit: Some(self.root.join("toolkit")),
        }
    }

    fn deploy_options(&self, given: &Given<'_>) -> DeployOptions {
        DeployOptions {
            target: self.target(given),
            authorized_cidr: Some(Cidr::new("203.0.113.7/32").unwrap()),
            download_dependencies: given.download_dependencies,
            timeout: given.timeout.unwrap_or(Duration::from_secs(2)),
            ..DeployOptions::default()
        }
    }

    async fn deploy_with(&self, given: &Given<'_>, interrupt: Interrupt) -> Deployed {
        let deployment = self.deployment(given);
        let artifacts = gke_rl::render(&deployment, &gke_rl::RenderOptions { source: "a test", regenerate: "a test" }).unwrap();
        let env = self.env(interrupt);
        gke_rl_ops::deploy::deploy(&deployment, &artifacts, &self.deploy_options(given), &env, self.log.clone()).await.unwrap()
    }

    async fn deploy(&self, given: &Given<'_>) -> Deployed {
        self.deploy_with(given, Interrupt::manual().1).await
    }

    fn plan(&self) -> String {
        self.try_plan().unwrap()
    }

    fn try_plan(&self) -> Result<String, LifecycleError> {
        let deployment = Deployment::default();
        let artifacts = gke_rl::render(&deployment, &gke_rl::RenderOptions { source: "a test", regenerate: "a test" }).unwrap();
        gke_rl_ops::deploy::plan(&deployment, &artifacts, &self.deploy_options(&Given::default()), &self.env(Interrupt::manual().1))
    }

    async fn destroy(&self, given: &Given<'_>) -> Result<Destroyed, LifecycleError> {
        let options =
            DestroyOptions { target: self.target(given), discard_checkpoints: !given.keep_checkpoints, ..DestroyOptions::default() };
        gke_rl_ops::destroy::destroy(&self.deployment(given), &options, &self.env(Interrupt::manual().1), self.log.clone()).await
    }

    async fn set_suspended(&self, suspended: bool) -> Changed {
        let env = self.env(Interrupt::manual().1);
        gke_rl_ops::suspend::set_suspended(&Deployment::default(), suspended, Duration::from_secs(2), &env, &*self.log).await.unwrap()
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
        self.log.0.lock().unwrap().join("\n")
    }

    fn applies(&self, plural: &str) -> usize {
        self.server.requests().iter().filter(|r| r.method == "PATCH" && r.uri.contains(&format!("/{plural}/"))).count()
    }

    /// The token is in the Secret's body and nowhere else: not in any call, child environment,
    /// file of the folder, or event.
    fn assert_token_stays_secret(&self) {
        assert!(!self.calls().contains(TOKEN), "a call or a child's environment holds the token:\n{}", self.calls());
        assert!(self.calls().lines().all(|l| l.contains("HF_TOKEN=<unset>")), "children must not inherit the token:\n{}", self.calls());
        assert!(!self.log().contains(TOKEN), "an event holds the token");
        for entry in files_under(&self.folder()) {
            assert!(!std::fs::read_to_string(&entry).unwrap_or_default().contains(TOKEN), "{} holds the token", entry.display());
        }
        for request in self.server.requests() {
            assert!(!request.uri.contains(TOKEN), "{} holds the token", request.uri);
        }
    }
}

/// The step a deploy failed at, and its error's words.
fn failed(deployed: &Deployed) -> (Step, String) {
    match deployed {
        Deployed::Failed { step, error, .. } => (*step, gke_rl_ops::chain(error)),
        other => panic!("not a failure: {other:?}"),
    }
}

/// The problems preflight found, in words.
fn problems(deployed: &Deployed) -> String {
    match deployed {
        Deployed::Failed { step: Step::Preflight, error: LifecycleError::Preflight { problems }, .. } => {
            problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
        }
        other => panic!("not a failed preflight: {other:?}"),
    }
}

fn ready(deployed: &Deployed) -> bool {
    matches!(deployed, Deployed::Ready | Deployed::AlreadyReady { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn deploy_from_scratch_then_a_rerun_changes_nothing() {
    let w = world(Pods::ReadyAfter(2));
    assert!(matches!(w.deploy(&Given::default()).await, Deployed::Ready), "{}", w.log());
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
    assert!(log.contains("StepDone { step: Provision") && log.contains("Pods { ready: 9, wanted: 9 }"), "{log}");
    w.assert_token_stays_secret();

    let calls_before = w.calls();
    let patches_before = w.applies("rayclusters") + w.applies("secrets");
    let again = w.deploy(&Given::default()).await;
    assert!(matches!(again, Deployed::AlreadyReady { ready: 9, wanted: 9 }), "{again:?}");
    let new_calls = &w.calls()[calls_before.len()..];
    assert!(!new_calls.contains("gcluster deploy") && !new_calls.contains("get-credentials"), "{new_calls}");
    assert_eq!(w.applies("rayclusters") + w.applies("secrets"), patches_before, "nothing applied again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn dry_run_shows_every_command_and_changes_nothing() {
    let w = world(Pods::ReadyAfter(0));
    let plan = w.plan();
    for expected in [
        "$ gcloud services list",
        "gcluster deploy",
        "--auto-approve",
        "get-credentials",
        "HF_TOKEN: <the value of $HF_TOKEN>",
        "kind: RayCluster",
    ] {
        assert!(plan.contains(expected), "{expected} missing from\n{plan}");
    }
    assert!(w.calls().lines().all(|l| l.starts_with("gcloud config get-value")), "only the project was read:\n{}", w.calls());
    assert!(!w.folder().exists() && w.server.requests().is_empty());
}

/// Issue 32, item 4: the project exported as `PROJECT_ID` (the codelab's env.sh, the README's
/// step-by-step) is used before gcloud's configuration; with none anywhere, the error lists every
/// way to give one.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_project_comes_from_project_id_and_a_missing_one_lists_every_way() {
    let w = world(Pods::ReadyAfter(0));
    w.set_var("PROJECT_ID", "exported-project");
    assert!(w.plan().contains("project_id=exported-project"), "{}", w.plan());
    assert!(!w.calls().contains("gcloud config get-value"), "gcloud was asked:\n{}", w.calls());

    w.set_var("PROJECT_ID", "Not_An_Id");
    let error = w.try_plan().unwrap_err().to_string();
    assert!(error.starts_with("the PROJECT_ID environment variable: "), "{error}");

    w.set_var("PROJECT_ID", "");
    w.set_var("FAKE_PROJECT", "(unset)");
    let error = w.try_plan().unwrap_err().to_string();
    for way in ["--project", "export PROJECT_ID", "project.project_id", "gcloud config set project"] {
        assert!(error.contains(way), "{way} missing from: {error}");
    }
}

/// A failure at each step stops there, and the next run resumes at that step.
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
        let deployed = w.deploy(&Given::default()).await;
        let completed = w.state().map(|s| s.completed).unwrap_or_default();
        let before: Vec<Step> = Step::ALL.into_iter().filter(|s| *s < failing).collect();
        if failing == Step::Preflight {
            assert!(problems(&deployed).contains("gcloud services enable lustre.googleapis.com --project fake-project"), "{deployed:?}");
            assert!(completed.is_empty() && w.count("gcluster deploy") == 0, "{name}: nothing is created before preflight passes");
        } else {
            assert_eq!(failed(&deployed).0, failing, "{name}: {deployed:?}");
            assert!(matches!(&deployed, Deployed::Failed { state, .. } if *state == w.folder().join("state.json")), "{name}");
            assert_eq!(completed, before, "{name}");
        }
        mend(&w);
        assert!(matches!(w.deploy(&Given::default()).await, Deployed::Ready), "{name}: {}", w.log());
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
    let (step, error) = failed(&w.deploy(&Given::default()).await);
    assert_eq!(step, Step::Ready);
    let log = w.log();
    assert!(log.contains(&format!("! ray-a4-gpu-spot-head: Unschedulable: {message}")), "{log}");
    assert!(error.contains("Spot capacity for a4-highgpu-8g in us-east1-b is likely exhausted"), "{error}");
    assert!(error.contains("gcloud container node-pools describe a4-highgpu-8g-a4-pool --cluster ray-a4-gpu-spot"), "{error}");
    assert_eq!(
        log.lines().filter(|l| l.starts_with("! ray-a4-gpu-spot-head:")).count(),
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
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
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
    assert!(matches!(w.deploy(&Given::default()).await, Deployed::Ready), "{}", w.log());
    let log = w.log();
    assert!(log.contains("PodsNotAllReady { name: \"ray-a4-gpu-spot\", ready: 7, wanted: 9, state: Recovering }"), "{log}");
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
    let given = Given { timeout: Some(Duration::from_secs(3600)), ..Given::default() };
    let deployed = w.deploy_with(&given, interrupt).await;
    assert!(matches!(deployed, Deployed::Interrupted { step: Step::Ready, signal: 2, .. }), "{deployed:?}");
    let state = w.state().unwrap();
    assert!(state.done(Step::RayCluster) && !state.done(Step::Ready), "{state:?}");

    w.server.set_pods(Pods::ReadyAfter(0));
    assert!(matches!(w.deploy(&Given::default()).await, Deployed::Ready), "{}", w.log());
    assert_eq!((w.count("gcluster deploy"), w.applies("rayclusters")), (1, 1), "resumed at the wait");
    assert!(matches!(w.destroy(&Given::default()).await.unwrap(), Destroyed::Destroyed { .. }), "{}", w.log());
    w.assert_token_stays_secret();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn destroy_empties_the_buckets_tears_down_and_verifies() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    let checkpoints = w.root.join("cloud/buckets/checkpoint-ray-a4-gpu-spot-3c4d");
    for object in ["step_2.pt", "step_4.pt"] {
        std::fs::write(checkpoints.join(object), "weights").unwrap();
    }
    assert!(matches!(w.destroy(&Given::default()).await.unwrap(), Destroyed::Destroyed { .. }), "{}", w.log());
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
    assert!(matches!(w.destroy(&Given::default()).await.unwrap(), Destroyed::NothingRecorded { .. }));
    w.assert_token_stays_secret();
}

/// The deployment folder is lost, the cluster still bills: destroy finds the cluster and the
/// Lustre instance by name and the buckets by gcluster's label, deletes them with gcloud, and
/// verifies; it never says "nothing to destroy" while they exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_lost_state_folder_does_not_hide_what_bills() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    std::fs::write(w.root.join("cloud/buckets/checkpoint-ray-a4-gpu-spot-3c4d/step_2.pt"), "weights").unwrap();
    std::fs::remove_dir_all(w.folder()).unwrap();
    // The records of what a bucket holds went with the folder: the instance is not deleted
    // unless its checkpoints are given up.
    let refused = w.destroy(&Given { keep_checkpoints: true, ..Given::default() }).await.unwrap_err().to_string();
    assert!(refused.contains("refusing to delete Lustre instance rl-demo-gpu-lustre: the deployment's state in"), "{refused}");
    let export = "`gcloud lustre instances export-data rl-demo-gpu-lustre --location us-east1-b --project fake-project --lustre-path=/nemo_rl_qwen_72b_ds_cp/nemo-rl-grpo-test1 --gcs-path-uri=gs://BUCKET/PATH/`";
    assert!(refused.contains(export) && refused.contains("--discard-checkpoints"), "{refused}");
    assert!(!w.calls().contains(" delete "), "nothing deleted: {}", w.calls());
    assert!(matches!(w.destroy(&Given::default()).await.unwrap(), Destroyed::Destroyed { .. }), "{}", w.log());
    let log = w.log();
    assert!(log.contains("no deployment state in") && log.contains("LOST with the instance (--discard-checkpoints)"), "{log}");
    let labelled = "GKE cluster ray-a4-gpu-spot (us-east1, labelled ghpc_deployment=ray-a4-gpu-spot and ghpc_blueprint=gke-a4)";
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
    assert!(log.contains("MayRemainWithoutState"), "{log}");
    assert!(matches!(w.destroy(&Given::default()).await.unwrap(), Destroyed::NothingRecorded { .. }), "now nothing bills");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn destroy_says_loudly_what_remains() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    w.set_var("FAKE_DESTROY_LEAVES", "lustre");
    let destroyed = w.destroy(&Given::default()).await.unwrap();
    assert!(
        matches!(&destroyed, Destroyed::NotDestroyed { remains, .. } if remains == &["Managed Lustre instance rl-demo-gpu-lustre"]),
        "{destroyed:?}"
    );
    assert!(w.state().is_some(), "the state stays for the next attempt");
}

/// A verification gcloud gives no answer to is "unknown", never "gone": destroy keeps the state.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_verification_without_an_answer_is_unknown_not_gone() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    *w.silent.lock().unwrap() = Some("gcloud lustre instances describe".to_owned());
    let destroyed = w.destroy(&Given::default()).await.unwrap();
    let Destroyed::NotDestroyed { remains, .. } = &destroyed else { panic!("{destroyed:?}") };
    assert_eq!(remains, &["Managed Lustre instance rl-demo-gpu-lustre (unknown: gcloud did not answer within 120 s)"]);
    assert!(w.state().is_some(), "the state stays for the next attempt");
    *w.silent.lock().unwrap() = None;
    assert!(matches!(w.destroy(&Given::default()).await.unwrap(), Destroyed::Destroyed { .. }), "{}", w.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn another_projects_state_is_refused() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    let error = w.destroy(&Given { project: Some("someone-elses"), ..Given::default() }).await.unwrap_err().to_string();
    assert!(error.starts_with("refusing to act: the state file belongs to deployment ray-a4-gpu-spot in project fake-project"), "{error}");
    assert_eq!(w.count("gcluster destroy"), 0);
    assert!(w.server.object("rayclusters", "ray-a4-gpu-spot").is_some(), "nothing was deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_deploy_that_failed_in_gcluster_can_be_destroyed() {
    let w = world(Pods::ReadyAfter(0));
    w.set_var("FAKE_FAIL", "gcluster deploy");
    assert_eq!(failed(&w.deploy(&Given::default()).await).0, Step::Provision);
    let options = DestroyOptions { target: w.target(&Given::default()), ..DestroyOptions::default() };
    let Plan::Steps(plan) =
        gke_rl_ops::destroy::plan(&Deployment::default(), &options, &w.env(Interrupt::manual().1), w.log.clone()).await.unwrap()
    else {
        panic!("no plan")
    };
    assert!(plan.contains("verify that Managed Lustre instance rl-demo-gpu-lustre is gone"), "{plan}");
    assert!(w.state().is_some(), "a dry run changes nothing");
    assert!(matches!(w.destroy(&Given::default()).await.unwrap(), Destroyed::Destroyed { .. }), "{}", w.log());
    assert_eq!(w.count("gcloud container clusters get-credentials"), 0, "no cluster credentials were ever recorded");
    assert!(w.calls().contains("gcloud lustre instances describe"), "still verified with gcloud");
    assert!(w.state().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_failed_gcluster_destroy_is_never_reported_as_destroyed() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    w.set_var("FAKE_FAIL", "gcluster destroy");
    let destroyed = w.destroy(&Given::default()).await.unwrap();
    let Destroyed::NotDestroyed { remains, .. } = &destroyed else { panic!("{destroyed:?}") };
    let remains = remains.join("\n");
    assert!(remains.contains("GKE cluster ray-a4-gpu-spot") && remains.contains("networks, firewall rules"), "{remains}");
    assert!(w.log().contains("TeardownFailed"), "{}", w.log());
    assert!(w.state().is_some());
    w.set_var("FAKE_FAIL", "");
    assert!(matches!(w.destroy(&Given::default()).await.unwrap(), Destroyed::Destroyed { .. }), "a second destroy finishes the job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_rerun_repairs_a_ray_cluster_deleted_behind_its_back() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    let clusters = gke_rl_kube::Namespaced::new(w.client.clone(), "default");
    assert!(clusters.delete("ray-a4-gpu-spot").await.unwrap());
    assert!(matches!(w.deploy(&Given::default()).await, Deployed::Ready), "{}", w.log());
    assert!(w.log().contains("RayClusterGone { name: \"ray-a4-gpu-spot\" }"), "{}", w.log());
    assert_eq!((w.count("gcluster deploy"), w.applies("secrets"), w.applies("rayclusters")), (1, 2, 2));
    assert!(w.server.object("rayclusters", "ray-a4-gpu-spot").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn preflight_reports_every_problem_at_once_and_creates_nothing() {
    let w = world(Pods::ReadyAfter(0));
    w.set_var("FAKE_NO_ACCOUNT", "1");
    w.set_var("HF_TOKEN", "");
    std::fs::remove_file(w.root.join("bin/packer")).unwrap();
    let problems = problems(&w.deploy(&Given::default()).await);
    for expected in ["no active gcloud account: run `gcloud auth login`", "packer is not on PATH", "$HF_TOKEN is not set"] {
        assert!(problems.contains(expected), "{expected} missing from\n{problems}");
    }
    assert!(!problems.contains("gke.gcsfuse.profileUser does not exist"), "no role verdict without an account:\n{problems}");
    assert!(!w.log().contains("GcsfuseValidatorSkipped"), "{}", w.log());
    assert!(w.state().is_none() && w.count("gcluster deploy") == 0);

    w.set_var("FAKE_NO_ACCOUNT", "");
    w.set_var("FAKE_NO_GCSFUSE_ROLE", "1");
    w.set_var("HF_TOKEN", TOKEN);
    let given = Given { download_dependencies: true, ..Given::default() };
    assert!(matches!(w.deploy(&given).await, Deployed::Ready), "{}", w.log());
    assert!(w.log().contains("GcsfuseValidatorSkipped { project: \"fake-project\""), "{}", w.log());
    let deploy = w.calls().lines().find(|l| l.starts_with("gcluster deploy")).unwrap().to_owned();
    assert!(deploy.contains("--download-dependencies --skip-validators test_gcsfuse_iam_role_exists"), "{deploy}");
}

/// An idle timeout installs the guard beside the RayCluster: its service account, a role on
/// this RayCluster only, the program and the CronJob.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn deploy_installs_the_idle_guard() {
    let w = world(Pods::ReadyAfter(0));
    assert!(matches!(w.deploy(&Given { idle_timeout_minutes: Some(120), ..Given::default() }).await, Deployed::Ready), "{}", w.log());
    let log = w.log();
    assert!(
        log.contains(r#"HelperApplied { what: "idle guard", namespace: "default", objects: [("ServiceAccount", "ray-a4-gpu-spot-idle-guard"), ("Role", "ray-a4-gpu-spot-idle-guard")"#),
        "{log}"
    );
    let cronjob = w.server.object("cronjobs", "ray-a4-gpu-spot-idle-guard").expect("the CronJob");
    let env = &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"];
    assert!(env.as_array().unwrap().iter().any(|e| e["name"] == "GKE_RL_IDLE_SECONDS" && e["value"] == "7200"), "{env}");
    assert_eq!(
        w.server.object("configmaps", "ray-a4-gpu-spot-idle-guard").unwrap()["data"]["idle_guard.py"],
        gke_rl_in_cluster::guard::program()
    );
    let blueprint = std::fs::read_to_string(w.folder().join("gke-a4.yaml")).unwrap();
    assert!(blueprint.contains("autoscaling_total_min_nodes: 0"), "the GPU pool gives its nodes back when suspended");
}

/// Suspend deletes the pods and keeps the RayCluster; resume brings every pod back; each says
/// what it found when there is nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn suspend_and_resume_through_kuberay() {
    let w = world(Pods::ReadyAfter(0));
    assert_eq!(w.set_suspended(true).await, Changed::NoCluster, "no RayCluster yet");
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    assert_eq!(w.set_suspended(true).await, Changed::Now);
    assert!(w.log().contains("SuspendRequested { name: \"ray-a4-gpu-spot\" }") && w.log().contains("PodsGone"), "{}", w.log());
    assert_eq!(w.server.object("rayclusters", "ray-a4-gpu-spot").unwrap()["spec"]["suspend"], true);
    assert_eq!(w.set_suspended(true).await, Changed::Already);
    assert_eq!(w.set_suspended(false).await, Changed::Now);
    assert!(w.log().contains("ResumeRequested { name: \"ray-a4-gpu-spot\" }"), "{}", w.log());
    assert_eq!(w.set_suspended(false).await, Changed::Already);
}

/// A queued RayCluster (`job.queue`) is deployed with gke-rl's Kueue configuration staged
/// beside the blueprint; while Kueue holds it back, deploy says so with Kueue's reason (not a
/// stock-out); suspend and resume go through its Workload, as Kueue would undo a suspended
/// cluster, and a resume waits for Kueue as deploy does; a change of queue is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_queued_cluster_waits_for_kueue_and_is_suspended_through_its_workload() {
    let w = world(Pods::ReadyAfter(0));
    let why = "couldn't assign flavors to pod set workers: insufficient unused quota for nvidia.com/gpu in flavor a4, 64 more needed";
    w.server.kueue_holds(Some(why));
    // The checkout's template, not the one gke-rl embeds, is what is staged.
    let checkout = w.root.join("toolkit/examples/gke-a4/kueue-configuration.yaml.tftpl");
    let upstream = std::fs::read_to_string(&checkout).unwrap().replace("description: \"Very High\"", "description: \"The checkout's\"");
    std::fs::write(&checkout, &upstream).unwrap();
    let queued = Given { config: Some("job:\n  queue: a4\n"), ..Given::default() };
    let (step, error) = failed(&w.deploy(&queued).await);
    assert_eq!(step, Step::Ready, "{}", w.log());
    assert!(error.contains("queued by Kueue") && error.contains(&format!("Kueue, LocalQueue a4: Pending: {why}")), "{error}");
    assert!(!error.contains("capacity"), "not a stock-out: {error}");
    assert!(w.log().contains("state: queued by Kueue"), "{}", w.log());
    let staged = std::fs::read_to_string(w.folder().join("kueue-configuration.yaml.tftpl")).unwrap();
    assert_eq!(staged, gke_rl::kueue::staged(&upstream, &w.deployment(&queued)).unwrap(), "gke-rl's, from the checkout's");
    assert!(staged.contains("The checkout's"));
    let cluster = w.server.object("rayclusters", "ray-a4-gpu-spot").unwrap();
    assert_eq!(
        (&cluster["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], &cluster["spec"]["suspend"]),
        (&serde_json::json!("a4"), &serde_json::json!(true))
    );

    w.server.kueue_admits("ray-a4-gpu-spot");
    assert!(ready(&w.deploy(&queued).await), "{}", w.log());
    let (env, deployment) = (w.env(Interrupt::manual().1), w.deployment(&queued));
    let set = |suspended: bool| gke_rl_ops::suspend::set_suspended(&deployment, suspended, Duration::from_secs(2), &env, &*w.log);
    assert_eq!(set(true).await.unwrap(), Changed::Now);
    let workload = w.server.objects("workloads").pop().expect("Kueue's Workload");
    assert_eq!(workload["spec"]["active"], false, "deactivated, not suspended behind Kueue's back");
    assert_eq!(w.server.object("rayclusters", "ray-a4-gpu-spot").unwrap()["spec"]["suspend"], true, "Kueue suspended it");
    assert_eq!(set(true).await.unwrap(), Changed::Already);
    // Resumed while Kueue holds it back: it waits, telling Kueue's reason, and so does the next.
    for _ in 0..2 {
        let held = gke_rl_ops::chain(&set(false).await.unwrap_err());
        assert!(held.contains("queued by Kueue") && held.contains(why), "{held}");
        assert_eq!(w.server.objects("workloads").pop().unwrap()["spec"]["active"], true);
    }
    w.server.kueue_admits("ray-a4-gpu-spot");
    assert_eq!(set(false).await.unwrap(), Changed::Already, "running");

    // Out of its queue (or into another) only by being made again.
    let (step, error) = failed(&w.deploy(&Given::default()).await);
    assert_eq!(step, Step::RayCluster, "{}", w.log());
    assert!(error.contains("is in Kueue queue `a4`, and the config says in no Kueue queue: Kueue moves no cluster"), "{error}");
}

/// A project with no B200 quota, or a zone without A4, fails in preflight, before gcluster
/// spends 30-60 minutes finding out.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn missing_capacity_is_found_before_anything_is_created() {
    let w = world(Pods::ReadyAfter(0));
    // A new project: no B200 quota at all.
    w.set_var("FAKE_GPU_QUOTA", "0");
    let problems_now = problems(&w.deploy(&Given::default()).await);
    assert!(
        problems_now.contains("PREEMPTIBLE_NVIDIA_B200_GPUS quota in us-east1 has 0 of 0 free, but 64 GPUs are needed"),
        "{problems_now}"
    );
    w.set_var("FAKE_GPU_QUOTA", "16");
    w.set_var("FAKE_ZONE_LACKS", "a4,lustre");
    let problems_now = problems(&w.deploy(&Given::default()).await);
    for expected in [
        "PREEMPTIBLE_NVIDIA_B200_GPUS quota in us-east1 has 16 of 16 free, but 64 GPUs are needed",
        "https://console.cloud.google.com/iam-admin/quotas?project=fake-project",
        "zone us-east1-b does not offer a4-highgpu-8g",
        "zone us-east1-b has no RoCE network profile (us-east1-b-vpc-roce)",
        "Managed Lustre does not answer for zone us-east1-b (",
        "INVALID_ARGUMENT: location is not supported): pick a zone it serves",
    ] {
        assert!(problems_now.contains(expected), "{expected} missing from\n{problems_now}");
    }
    assert!(w.state().is_none() && w.count("gcluster deploy") == 0);
    w.set_var("FAKE_GPU_QUOTA", "64");
    w.set_var("FAKE_ZONE_LACKS", "");
    assert!(matches!(w.deploy(&Given::default()).await, Deployed::Ready), "exactly enough: {}", w.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_lustre_mount_failure_is_named_while_waiting() {
    let message = "MountVolume.MountDevice failed for volume \"lustre-pv\": rpc error: mount failed: exit status 110";
    let w = world(Pods::MountFails(message.into()));
    let (step, error) = failed(&w.deploy(&Given::default()).await);
    assert_eq!(step, Step::Ready);
    let log = w.log();
    assert!(log.contains(&format!("! ray-a4-gpu-spot-worker-0: FailedMount: {message}")), "{log}");
    assert!(!log.contains("Spot capacity") && !error.contains("Spot capacity"), "a mount failure is not a capacity problem:\n{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_changed_config_runs_again_from_render() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    let two_nodes = Given { config: Some("topology:\n  node_count: 2\n"), ..Given::default() };
    assert!(matches!(w.deploy(&two_nodes).await, Deployed::Ready), "{}", w.log());
    assert!(w.log().contains("ConfigChanged"), "{}", w.log());
    assert_eq!((w.count("gcluster deploy"), w.applies("rayclusters")), (2, 2));
    let deployment_file = std::fs::read_to_string(w.folder().join("gke-a4-deployment.yaml")).unwrap();
    assert!(deployment_file.contains("static_node_count: 2"), "{deployment_file}");
    assert!(w.log().contains("Pods { ready: 3, wanted: 3 }"), "{}", w.log());
}

/// A RayCluster in a namespace of its own: deploy creates the namespace before the Secret, and
/// the blueprint's PVC goes there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_namespace_of_its_own_is_created_before_the_secret() {
    let w = world(Pods::ReadyAfter(0));
    let own = Given { config: Some("ray:\n  namespace: rl\n"), ..Given::default() };
    assert!(matches!(w.deploy(&own).await, Deployed::Ready), "{}", w.log());
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
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    assert!(w.server.object("networkpolicies", "ray-a4-gpu-spot-ray-pods").is_some(), "Ray 2.46: the NetworkPolicy");
    // Issue 51: the token is made on every Ray, where it signs the run records; the RayCluster
    // asks for it only on a Ray with token authentication.
    let token = w.server.secret_value("ray-a4-gpu-spot-ray-token", "auth_token").expect("a token");
    assert!(token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()), "{}", token.len());
    let cluster = w.server.object("rayclusters", "ray-a4-gpu-spot").unwrap();
    assert!(cluster["spec"].get("authOptions").is_none(), "Ray 2.46 has no token authentication");
    assert!(
        w.log().contains(r#"RayTokenSecret { namespace: "default", name: "ray-a4-gpu-spot-ray-token", created: true }"#),
        "{}",
        w.log()
    );

    let tokens = Given { config: Some("ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\n"), ..Given::default() };
    std::fs::remove_file(w.folder().join("state.json")).unwrap();
    assert!(matches!(w.deploy(&tokens).await, Deployed::Ready), "{}", w.log());
    assert_eq!(w.server.secret_value("ray-a4-gpu-spot-ray-token", "auth_token"), Some(token.clone()), "the same token");
    let cluster = w.server.object("rayclusters", "ray-a4-gpu-spot").unwrap();
    assert_eq!(cluster["spec"]["authOptions"], serde_json::json!({"mode": "token", "secretName": "ray-a4-gpu-spot-ray-token"}));
    let log = w.log();
    assert!(log.contains(r#"PodsWithoutToken { namespace: "default", name: "ray-a4-gpu-spot" }"#), "{log}");
    assert!(w.server.object("networkpolicies", "ray-a4-gpu-spot-ray-pods").is_none(), "tokens take the NetworkPolicy's place");

    std::fs::remove_file(w.folder().join("state.json")).unwrap();
    assert!(matches!(w.deploy(&tokens).await, Deployed::Ready), "{}", w.log());
    assert_eq!(w.server.secret_value("ray-a4-gpu-spot-ray-token", "auth_token"), Some(token.clone()), "kept: the pods hold it");
    assert!(
        w.log().contains(r#"RayTokenSecret { namespace: "default", name: "ray-a4-gpu-spot-ray-token", created: false }"#),
        "{}",
        w.log()
    );

    assert!(!w.log().contains(&token) && !w.calls().contains(&token), "in an event or passed to a program");
    assert!(files_under(&w.root).iter().all(|f| !std::fs::read_to_string(f).unwrap_or_default().contains(&token)), "written to a file");
    assert!(w.server.requests().iter().all(|r| !r.uri.contains(&token)), "in a request's URI");
    w.assert_token_stays_secret();
}

/// RayJob mode deploys everything but the long-lived RayCluster: the one an earlier deploy in
/// cluster mode made is deleted, no RayCluster or helper is applied, nothing is waited for, and
/// a rerun has nothing to do. What acts on the long-lived cluster is refused with what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn rayjob_mode_deploys_all_but_the_raycluster() {
    let w = world(Pods::ReadyAfter(0));
    assert!(matches!(w.deploy(&Given::default()).await, Deployed::Ready), "{}", w.log());
    let applied_before = w.applies("rayclusters");
    let rayjob = Given { config: Some("ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\njob:\n  mode: rayjob\n"), ..Given::default() };
    let deployed = w.deploy(&rayjob).await;
    assert!(matches!(deployed, Deployed::Ready), "{deployed:?}\n{}", w.log());
    let log = w.log();
    assert!(log.contains("ConfigChanged") && log.contains("Deleted { kind: \"RayCluster\""), "{log}");
    assert!(w.server.object("rayclusters", "ray-a4-gpu-spot").is_none(), "the long-lived cluster is gone");
    assert!(log.contains("HelperDeleted { what: \"run keeper\""), "and the run keeper that looked after it: {log}");
    assert_eq!(w.applies("rayclusters"), applied_before, "no RayCluster applied");
    assert!(w.server.object("networkpolicies", "ray-a4-gpu-spot-ray-pods").is_none(), "RayJob mode has tokens: the policy goes");
    assert!(w.server.secret_value("ray-a4-gpu-spot-ray-token", "auth_token").is_some_and(|t| t.len() == 64), "the RayJobs' token");
    let state = w.state().unwrap();
    assert_eq!((state.completed.as_slice(), state.created.ray_cluster_uid.as_deref()), (Step::ALL.as_slice(), None));
    assert!(!w.folder().join("ray-cluster.yaml").exists(), "the folder holds what this deploy applies");
    let patched = std::fs::read_to_string(w.folder().join("gke-a4.yaml")).unwrap();
    assert!(
        patched.contains("autoscaling_total_min_nodes: 0") && patched.contains("num_gpus: 64"),
        "the pool scales from zero, with Kueue's quota"
    );
    let requests = w.server.requests().len();
    assert!(matches!(w.deploy(&rayjob).await, Deployed::AlreadyDeployed));
    assert_eq!(w.server.requests().len(), requests, "a rerun asks the cluster nothing");

    let deployment = w.deployment(&rayjob);
    let env = w.env(Interrupt::manual().1);

    // A run is there: its RayJob, and the RayCluster KubeRay named for it.
    let clusters = gke_rl_kube::Namespaced::new(w.client.clone(), "default");
    let job = "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: nemo-rl-grpo-test1\n  labels:\n    app.kubernetes.io/managed-by: gke-rl\nstatus:\n  rayClusterName: nemo-rl-grpo-test1-x7k2p\n";
    clusters.apply_all(job).await.unwrap();
    clusters.apply_all("apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: theirs\n").await.unwrap();
    clusters
        .apply("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: nemo-rl-grpo-test1-x7k2p\nspec:\n  workerGroupSpecs: []\n")
        .await
        .unwrap();
    let Plan::Steps(plan) = gke_rl_ops::destroy::plan(
        &deployment,
        &DestroyOptions { target: w.target(&rayjob), ..DestroyOptions::default() },
        &env,
        w.log.clone(),
    )
    .await
    .unwrap() else {
        panic!("a state")
    };
    assert!(plan.contains("gke-rl's RayJobs in default (their RayClusters go with them)"), "{plan}");

    let suspended = gke_rl_ops::suspend::set_suspended(&deployment, true, Duration::from_secs(1), &env, &*w.log).await.unwrap_err();
    assert!(matches!(suspended, LifecycleError::RayJobMode { command: "suspend", .. }), "{suspended}");
    let head = gke_rl_ops::mode::connect(&deployment, &gke_rl_ops::head::HeadOptions::default(), &env, w.log.clone()).await;
    let refused = head.err().expect("no cluster up to reach");
    assert!(refused.to_string().contains("RayJob default/nemo-rl-grpo-test1 is Initializing: its job is not submitted yet"), "{refused}");

    // destroy ends the run before the nodes and Lustre go: the RayJob, and with it its cluster.
    assert!(matches!(w.destroy(&rayjob).await.unwrap(), Destroyed::Destroyed { .. }), "{}", w.log());
    let log = w.log();
    assert!(
        log.contains("Deleted { kind: \"RayJob\", namespace: \"default\", name: \"nemo-rl-grpo-test1\" }") && log.contains("PodsGone"),
        "{log}"
    );
    assert!(
        w.server.object("rayjobs", "nemo-rl-grpo-test1").is_none() && w.server.object("rayclusters", "nemo-rl-grpo-test1-x7k2p").is_none()
    );
    assert!(w.server.object("rayjobs", "theirs").is_some(), "a RayJob gke-rl did not make stays");
}

/// Issue 64: a destroy that cannot list what the Lustre instance holds (no head answers here)
/// cannot know what it would lose: it refuses, and deletes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn destroy_refuses_when_the_cluster_cannot_list_what_the_instance_holds() {
    let w = world(Pods::ReadyAfter(0));
    assert!(ready(&w.deploy(&Given::default()).await), "{}", w.log());
    let error = w.destroy(&Given { keep_checkpoints: true, ..Given::default() }).await.unwrap_err();
    assert!(matches!(error.keep(), Some(gke_rl_ops::KeepError::CannotSurvey { .. })), "{error}");
    assert!(error.to_string().contains("--discard-checkpoints"), "{error}");
    // A config that attaches the instance now does not change what deploy made, which gcluster
    // destroy deletes.
    let attached = Given { keep_checkpoints: true, config: Some("lustre:\n  existing: true\n"), ..Given::default() };
    let error = w.destroy(&attached).await.unwrap_err();
    assert!(matches!(error.keep(), Some(gke_rl_ops::KeepError::CannotSurvey { .. })), "{error}");
    // A deploy of a changed config that stopped at gcluster redoes the steps after the render:
    // the pods that may have written the instance ran all the same.
    let changed = Given { config: Some("topology:\n  node_count: 4\n"), ..Given::default() };
    w.set_var("FAKE_FAIL", "gcluster deploy");
    assert!(!ready(&w.deploy(&changed).await), "{}", w.log());
    w.set_var("FAKE_FAIL", "");
    let error = w.destroy(&Given { keep_checkpoints: true, ..changed }).await.unwrap_err();
    assert!(matches!(error.keep(), Some(gke_rl_ops::KeepError::CannotSurvey { .. })), "{error}");
    assert_eq!(w.count("gcluster destroy"), 0);
    assert!(w.server.object("rayclusters", "ray-a4-gpu-spot").is_some() && w.state().is_some(), "nothing was deleted");
}
