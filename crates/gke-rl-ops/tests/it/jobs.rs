//! The job operations where they live: submit, follow, logs, stop and the list, each one
//! `gke_rl_ops::commands` call against a fake Ray head on loopback (`gke_rl_ray::fake`), with
//! the events recorded. The address policy (`--address`, else `RAY_ADDRESS` from the `Env`) and
//! the run's end (suspend only through Kubernetes) are decided here, not in a front end.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gke_rl::model::WhenDone;
use gke_rl_ops::commands::{self, Logs};
use gke_rl_ops::head::HeadOptions;
use gke_rl_ops::jobs::{Followed, Stopped, SubmitOptions, Supervise};
use gke_rl_ops::run::{AfterRun, Ran, RunOptions};
use gke_rl_ops::{Env, Event, Interrupt, Kube, Processes, Progress, Question, SystemClock};
use gke_rl_ray::JobStatus;
use gke_rl_ray::fake::{JOB, job_body, respond, serve, upgrade, version_body};
use tokio_tungstenite::tungstenite::Message;

/// Every event, as its debug text.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Progress for Recorder {
    fn event(&self, event: Event<'_>) {
        self.0.lock().unwrap().push(format!("{event:?}"));
    }

    fn confirm(&self, _: &Question<'_>) -> Result<bool, gke_rl_ops::Unanswerable> {
        Err(gke_rl_ops::Unanswerable("the job operations ask nothing".into()))
    }
}

impl Recorder {
    fn saw(&self, what: &str) -> bool {
        self.0.lock().unwrap().iter().any(|e| e.contains(what))
    }

    fn events(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

/// The body of a request whose head is `head`, read from `stream` (a handler that answered
/// before reading it would reset the connection under the client).
fn body(head: &str, stream: &mut TcpStream) -> Vec<u8> {
    let length = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("content-length")))
        .and_then(|(_, n)| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut bytes = vec![0; length];
    let _ = stream.read_exact(&mut bytes);
    bytes
}

/// A Ray 2.54 head that takes one submission ([`JOB`]), whose job logs `log` and ends
/// `SUCCEEDED`; what it was sent is kept in `requests` (request line, then body).
fn head(log: &'static str, requests: Arc<Mutex<Vec<String>>>) -> String {
    serve(move |path, head, stream| {
        let sent = body(head, stream);
        requests.lock().unwrap().push(format!("{}\n{}", head.lines().next().unwrap_or_default(), String::from_utf8_lossy(&sent)));
        let job = format!("/api/jobs/{JOB}");
        match path {
            "/api/version" => respond(stream, "200 OK", "", &version_body("2.54.0")),
            p if p.starts_with("/api/packages/") && head.starts_with("GET") => respond(stream, "404 Not Found", "", ""),
            p if p.starts_with("/api/packages/") => respond(stream, "200 OK", "", ""),
            p if p.starts_with("/api/v0/nodes") => {
                respond(stream, "200 OK", "", r#"{"data": {"result": {"result": [{"state": "ALIVE"}, {"state": "ALIVE"}]}}}"#)
            }
            "/api/jobs/" if head.starts_with("POST") => respond(stream, "200 OK", "", &format!(r#"{{"submission_id": "{JOB}"}}"#)),
            "/api/jobs/" => respond(stream, "200 OK", "", &format!("[{}]", job_body("SUCCEEDED"))),
            p if p == job || p == format!("{job}/") => respond(stream, "200 OK", "", &job_body("SUCCEEDED")),
            p if p == format!("{job}/logs") => respond(stream, "200 OK", "", &serde_json::json!({ "logs": log }).to_string()),
            p if p == format!("{job}/stop") => respond(stream, "200 OK", "", r#"{"stopped": false}"#),
            p if p == format!("{job}/logs/tail") => {
                let mut socket = upgrade(head, stream);
                let _ = socket.send(Message::text(log));
                let _ = socket.close(None);
                while socket.read().is_ok() {}
            }
            _ => respond(stream, "404 Not Found", "", ""),
        }
    })
}

/// Real effects but for the variables, which are `vars` (and this process's), no Kubernetes
/// and a manual interrupt.
fn env(vars: &[(&str, &str)]) -> Env {
    let vars: BTreeMap<String, Option<String>> = vars.iter().map(|(k, v)| ((*k).to_owned(), Some((*v).to_owned()))).collect();
    Env {
        runner: Arc::new(Processes { vars }),
        kube: Kube::FromKubeconfig,
        clock: Arc::new(SystemClock),
        interrupt: Interrupt::manual().1,
        poll: Duration::from_millis(50),
        reconnect: Duration::from_secs(30),
    }
}

fn render(deployment: &gke_rl::Deployment) -> gke_rl::Artifacts {
    gke_rl::render(deployment, &gke_rl::RenderOptions { source: "a test", regenerate: "a test" }).unwrap()
}

fn run_options(address: Option<String>, no_wait: bool, when_done: Option<WhenDone>) -> RunOptions {
    let deployment = gke_rl::Deployment::default();
    let submit = SubmitOptions {
        submission_id: Some(JOB.to_owned()),
        supervise: Some(Supervise::of(&deployment, Duration::from_secs(5))),
        ..SubmitOptions::default()
    };
    RunOptions { head: HeadOptions { address, ..HeadOptions::default() }, submit, no_wait, restart_wait: Duration::from_secs(5), when_done }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_uploads_runs_under_the_supervisor_and_follows_the_run_to_its_end() {
    gke_rl_ray::ensure_crypto_provider();
    let requests = Arc::default();
    let address = head("step 1\nstep 2\n", Arc::clone(&requests));
    let deployment = gke_rl::Deployment::default();
    let recorder = Arc::new(Recorder::default());
    let options = run_options(Some(address), false, Some(WhenDone::Suspend));
    let ran = commands::submit(&deployment, &render(&deployment), &options, &env(&[]), recorder.clone()).await.unwrap();
    let Ran::Followed { id, observed, after, .. } = ran else { panic!("not followed:\n{}", recorder.events()) };
    assert_eq!(id, JOB);
    assert!(matches!(&observed.followed, Followed::Finished { job, .. } if job.status == JobStatus::Succeeded));
    // With an address Kubernetes is not reached: asked to suspend, the cluster is left as it is.
    assert_eq!(after, AfterRun::NotSuspendedByAddress);
    for event in ["Connected", "Uploading", "Submitted", "Log(\"step 1\\nstep 2\\n\")", "JobEnded"] {
        assert!(recorder.saw(event), "no {event} in\n{}", recorder.events());
    }
    let requests = requests.lock().unwrap().join("\n\n");
    let submitted = requests.split("POST /api/jobs/").nth(1).expect("a submission");
    // The supervisor wraps the rendered job script, with the cluster's size as Ray counts it.
    let wrapped = format!("{} -m {} --run {JOB}", gke_rl_in_cluster::supervisor::INTERPRETERS[0], gke_rl_in_cluster::supervisor::MODULE);
    assert!(submitted.contains(&wrapped) && submitted.contains("--nodes 2 ") && submitted.contains("'bash run_nemo_rl.sh'"), "{submitted}");
    assert!(submitted.contains("py_modules") && submitted.contains("working_dir"), "{submitted}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_is_the_one_given_else_ray_address_and_no_wait_returns_at_acceptance() {
    gke_rl_ray::ensure_crypto_provider();
    let given = head("", Arc::default());
    let from_environment = head("", Arc::default());
    let deployment = gke_rl::Deployment::default();
    let artifacts = render(&deployment);
    let env = env(&[("RAY_ADDRESS", &from_environment)]);
    let options = run_options(None, true, None);
    assert!(!options.head.forwards(&env), "RAY_ADDRESS, read through the Env, is an address");
    let Ran::Submitted { head, .. } =
        commands::submit(&deployment, &artifacts, &options, &env, Arc::new(Recorder::default())).await.unwrap()
    else {
        panic!("--no-wait followed")
    };
    assert_eq!(head.client.address(), from_environment.trim_end_matches('/'));
    assert!(!head.is_forwarded());
    let options = run_options(Some(given.clone()), true, None);
    let Ran::Submitted { head, .. } =
        commands::submit(&deployment, &artifacts, &options, &env, Arc::new(Recorder::default())).await.unwrap()
    else {
        panic!("--no-wait followed")
    };
    assert_eq!(head.client.address(), given.trim_end_matches('/'), "--address wins over RAY_ADDRESS");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_follow_stop_and_the_list_reach_the_job_and_redact_what_the_env_holds() {
    gke_rl_ray::ensure_crypto_provider();
    let address = head("loss 0.5\n", Arc::default());
    let deployment = gke_rl::Deployment::default();
    let options = HeadOptions { address: Some(address), ..HeadOptions::default() };
    let env = env(&[]);
    let recorder = Arc::new(Recorder::default());
    let Logs::Read(1) = commands::logs(&deployment, &options, None, false, &env, recorder.clone()).await.unwrap() else {
        panic!("not one log read")
    };
    assert!(recorder.saw(&format!("JobLog {{ id: \"{JOB}\", text: \"loss 0.5\\n\", introduce: false }}")), "{}", recorder.events());
    let Logs::Followed { followed, .. } = commands::logs(&deployment, &options, Some(JOB), true, &env, recorder.clone()).await.unwrap()
    else {
        panic!("not followed")
    };
    assert!(matches!(followed, Followed::Finished { .. }) && recorder.saw("JobEnded"), "{}", recorder.events());
    let (id, stopped) = commands::stop(&deployment, &options, JOB, true, &env, recorder.clone()).await.unwrap();
    assert!(id == JOB && matches!(stopped, Stopped::NotRunning(JobStatus::Succeeded)), "{stopped:?}");
    let listed = commands::list(&deployment, &options, &env, recorder).await.unwrap();
    assert_eq!(listed.len(), 1);
}

/// The JSON of `status --json` and `jobs --json`: secrets by name, by shape, and the values of
/// the deployment's secret variables as the `Env`'s runner has them.
#[test]
fn a_jobs_json_hides_secrets_by_name_by_shape_and_by_the_envs_values() {
    let job: gke_rl_ray::JobDetails = serde_json::from_value(serde_json::json!({
        "type": "SUBMISSION", "job_id": null, "submission_id": "s", "status": "RUNNING", "entrypoint": "echo local-token-value-42",
        "message": null, "error_type": null, "start_time": 1_795_000_000_000u64, "end_time": null,
        "metadata": {"note": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "pip": "https://u:pw@pypi.example.com"},
        "runtime_env": {"env_vars": {"HF_TOKEN": "hf_x", "HF_HOME": "/lustre", "MY_HF": "hf_renamed", "OTHER": "ghp_0123456789abcdefghij0123456789abcdef"}}
    }))
    .unwrap();
    let renamed = gke_rl::config::from_yaml("secrets:\n  hf_token_env: MY_HF\n").unwrap();
    let json = gke_rl_ops::jobs::redacted(&job, &renamed, None, &env(&[("MY_HF", "local-token-value-42")]));
    assert_eq!(json["runtime_env"]["env_vars"]["HF_TOKEN"], "<redacted>");
    assert_eq!(json["runtime_env"]["env_vars"]["MY_HF"], "<redacted>", "the config's own name for the token");
    assert_eq!(json["runtime_env"]["env_vars"]["HF_HOME"], "/lustre");
    assert_eq!(json["entrypoint"], "echo <redacted>", "the Env's value of the token, wherever it is");
    // By shape, under any name and anywhere (issue 13, item 9).
    assert_eq!(json["runtime_env"]["env_vars"]["OTHER"], "<redacted>");
    assert_eq!(json["metadata"]["note"], "<redacted>");
    assert_eq!(json["metadata"]["pip"], "https://u:<redacted>@pypi.example.com");
}

/// Through Kubernetes (no address anywhere): a suspended RayCluster is the status itself, and a
/// head that cannot be forwarded to is `JobError::PortForward`, with the cause inside. With
/// `ray_address` off, `RAY_ADDRESS` is not read (the fabric check after a deploy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_kubernetes_a_suspended_cluster_is_the_status_and_a_failed_forward_says_so() {
    gke_rl_ray::ensure_crypto_provider();
    let (_server, client) = gke_rl_kube::fake::FakeApiServer::start(gke_rl_kube::fake::Pods::ReadyAfter(0));
    let mut env = env(&[("RAY_ADDRESS", "http://127.0.0.1:9")]);
    env.kube = Kube::Given(client.clone());
    let deployment = gke_rl::Deployment::default();
    let options = HeadOptions { ray_address: false, ..HeadOptions::default() };
    assert!(options.forwards(&env), "RAY_ADDRESS is not read");

    let error = match commands::status(&deployment, &options, None, &env, Arc::new(Recorder::default())).await {
        Err(error) => error,
        Ok(_) => panic!("a status without a RayCluster"),
    };
    assert!(matches!(&error, gke_rl_ops::JobError::PortForward { .. }), "{error:?}");
    assert!(gke_rl_ops::chain(&error).starts_with("no Ray address, and the port-forward to the head failed: "), "{error}");

    let clusters = gke_rl_kube::Namespaced::new(client, "default");
    clusters.apply(&render(&deployment).ray_cluster.expect("cluster mode").contents).await.unwrap();
    assert!(clusters.set_suspended("ray-a4-gpu-spot", true).await.unwrap());
    let status = commands::status(&deployment, &options, None, &env, Arc::new(Recorder::default())).await.unwrap();
    assert!(matches!(status, gke_rl_ops::run::Status::Suspended), "a suspended cluster has no head to ask");

    // A queued one Kueue holds back is told as queued, with Kueue's reason; one deactivated
    // (gke-rl's suspend) is suspended.
    let (server, client) = gke_rl_kube::fake::FakeApiServer::start(gke_rl_kube::fake::Pods::ReadyAfter(0));
    env.kube = Kube::Given(client.clone());
    server.kueue_holds(Some("insufficient unused quota"));
    let queued = gke_rl::config::from_yaml("job:\n  queue: a4\n").unwrap();
    let clusters = gke_rl_kube::Namespaced::new(client, "default");
    clusters.apply(&render(&queued).ray_cluster.expect("cluster mode").contents).await.unwrap();
    let status = commands::status(&queued, &options, None, &env, Arc::new(Recorder::default())).await.unwrap();
    let gke_rl_ops::run::Status::Queued(kueue) = status else { panic!("not told as queued") };
    assert_eq!(
        (kueue.queue.as_str(), kueue.admitted, kueue.waiting),
        ("a4", false, Some(("Pending".to_owned(), "insufficient unused quota".to_owned())))
    );
    // A submit waits for Kueue (--restart-wait), then says why, and connects to nothing.
    let mut wait = run_options(None, true, None);
    (wait.restart_wait, wait.head.ray_address) = (Duration::from_millis(300), false);
    let artifacts = render(&queued);
    let recorder = Arc::new(Recorder::default());
    let error = commands::submit(&queued, &artifacts, &wait, &env, recorder.clone()).await.err().expect("held back");
    let words = gke_rl_ops::chain(&error);
    assert!(words.contains("queued by Kueue") && words.contains("insufficient unused quota"), "{words}");
    assert!(recorder.saw("AwaitingKueue") && !recorder.saw("ResumeRequested"), "{}", recorder.events());
    assert!(server.requests().iter().all(|r| !r.uri.contains("portforward")), "no head to reach");
    clusters.set_workload_active(&kueue.name, false).await.unwrap();
    let status = commands::status(&queued, &options, None, &env, Arc::new(Recorder::default())).await.unwrap();
    assert!(matches!(status, gke_rl_ops::run::Status::Suspended), "deactivated");
}

/// `submit --as rayjob` on a cluster-mode deployment: refused while the deployment's RayCluster
/// is up (it holds the GPU nodes the RayJob's cluster needs), then made once it is suspended; a
/// deployment whose Ray has no tokens cannot run as a RayJob at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_mode_deployment_runs_a_rayjob_only_once_its_raycluster_is_suspended() {
    gke_rl_ray::ensure_crypto_provider();
    let (server, client) = gke_rl_kube::fake::FakeApiServer::start(gke_rl_kube::fake::Pods::ReadyAfter(1));
    let mut env = env(&[]);
    env.kube = Kube::Given(client.clone());
    use gke_rl::model::{JobMode, ModeConflict};
    assert_eq!(gke_rl::Deployment::default().in_mode(JobMode::Rayjob).err(), Some(ModeConflict::NeedsToken), "the default's Ray 2.46");
    let cluster_mode = gke_rl::config::from_yaml("ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\njob:\n  name: grpo-rayjob\n").unwrap();
    let as_rayjob = cluster_mode.in_mode(JobMode::Rayjob).unwrap();
    let clusters = gke_rl_kube::Namespaced::new(client, "default");
    clusters.apply(&render(&cluster_mode).ray_cluster.expect("cluster mode").contents).await.unwrap();
    let artifacts = render(&as_rayjob);
    let options = run_options(None, true, None);
    let submit = || commands::submit(&as_rayjob, &artifacts, &options, &env, Arc::new(Recorder::default()));
    let error = submit().await.err().expect("refused");
    assert!(matches!(&error, gke_rl_ops::JobError::ClusterHoldsNodes { .. }), "{error:?}");
    assert!(error.to_string().contains("suspend it first (`gke-rl suspend`)"), "{error}");
    assert!(server.requests().iter().all(|r| !r.uri.contains("/rayjobs")), "nothing made");
    clusters.set_suspended("ray-a4-gpu-spot", true).await.unwrap();
    let error = submit().await.err().expect("no head to reach");
    assert!(matches!(&error, gke_rl_ops::JobError::RayJobNotStarted { deleted: Ok(()), .. }), "made, then deleted: {error:?}");
    assert!(server.requests().iter().any(|r| r.method == "POST" && r.uri.contains("/rayjobs")));
}

/// RayJob mode through Kubernetes (the in-process fake API server, which cannot forward a port):
/// submit creates the RayJob for the submission, waits for KubeRay's cluster, and, when the
/// submit then fails, deletes the RayJob so that its nodes go, never having named a job in it.
/// A RayJob that has not finished is refused before anything is applied; a finished one is
/// replaced. `status` without a job to ask about is KubeRay's word; `stop` deletes the RayJob.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rayjob_is_made_for_its_submission_and_deleted_when_the_submit_fails() {
    gke_rl_ray::ensure_crypto_provider();
    let (server, client) = gke_rl_kube::fake::FakeApiServer::start(gke_rl_kube::fake::Pods::ReadyAfter(1));
    let mut env = env(&[]);
    env.kube = Kube::Given(client.clone());
    let deployment = rayjob_config(None);
    let artifacts = render(&deployment);
    let manifest = &artifacts.ray_job.as_ref().unwrap().contents;
    let (name, recorder) = ("grpo-rayjob", Arc::new(Recorder::default()));
    let options = run_options(None, true, None);
    let clusters = gke_rl_kube::Namespaced::new(client, "default");
    let quick = gke_rl_kube::Wait { timeout: Duration::from_secs(5), poll: Duration::from_millis(1) };

    let error = commands::submit(&deployment, &artifacts, &options, &env, recorder.clone()).await.err().expect("no head to reach");
    let gke_rl_ops::JobError::RayJobNotStarted { deleted: Ok(()), source, .. } = &error else { panic!("{error:?}") };
    assert!(matches!(**source, gke_rl_ops::JobError::PortForward { .. } | gke_rl_ops::JobError::Ray(_)), "{source:?}");
    assert!(error.to_string().ends_with("; RayJob default/grpo-rayjob is deleted, so that its nodes go"), "{error}");
    let create = server.requests().into_iter().find(|r| r.method == "POST" && r.uri.contains("/rayjobs")).expect("the RayJob created");
    assert!(
        create.uri.contains("fieldManager=gke-rl") && create.body.contains(&format!(r#""gke-rl/submission":"{JOB}""#)),
        "{}",
        create.body
    );
    assert!(server.requests().iter().all(|r| !r.body.contains("jobId")), "no job named: KubeRay's pre-running deadline still holds");
    for seen in ["RayJobCreated", "\"Initializing\"", "\"Waiting\"", "Pods { ready: 9, wanted: 9 }", "Deleted { kind: \"RayJob\""] {
        assert!(recorder.saw(seen), "{seen} in\n{}", recorder.events());
    }
    let delete = server.requests().into_iter().rfind(|r| r.method == "DELETE").unwrap();
    assert!(
        delete.body.contains(r#""preconditions":{"uid":"#) && delete.body.contains("Foreground"),
        "only the RayJob it made: {}",
        delete.body
    );
    clusters.wait_ray_job_gone(name, quick).await.unwrap();
    let first = recorder.events().split("cluster: Some(\"").nth(1).and_then(|rest| rest.split('"').next()).map(str::to_owned).unwrap();
    assert!(server.object("rayclusters", &first).is_none(), "{first} went with its RayJob");

    // One that has not finished is refused, and left alone.
    clusters.create_ray_job(manifest, "earlier").await.unwrap();
    let state = clusters.ray_job(name).await.unwrap().unwrap();
    assert_eq!((state.state(), state.submission.as_deref(), state.job_id.as_deref()), ("Initializing", Some("earlier"), None));
    let made = state.cluster.expect("KubeRay's cluster, named after the RayJob");
    assert!(made.starts_with("grpo-rayjob-") && made.len() == "grpo-rayjob-".len() + 5, "{made}");
    let busy = commands::submit(&deployment, &artifacts, &options, &env, Arc::new(Recorder::default())).await;
    assert!(matches!(&busy, Err(gke_rl_ops::JobError::RayJobBusy { state, .. }) if state == "Initializing"), "{:?}", busy.err());
    assert_eq!(clusters.ray_job(name).await.unwrap().unwrap().submission.as_deref(), Some("earlier"));

    let status = commands::status(&deployment, &HeadOptions::default(), None, &env, Arc::new(Recorder::default())).await.unwrap();
    let gke_rl_ops::run::Status::RayJob(report) = status else { panic!("KubeRay's word") };
    let Some((cluster, Ok(readiness))) = &report.cluster else { panic!("its pods") };
    assert_eq!((report.state.state(), cluster.as_str(), readiness.progress().1), ("Initializing", made.as_str(), 9));
    assert!(report.queued.is_none(), "no Kueue here: its API answers 404");

    // A finished one keeps its cluster for its TTL, and is replaced: deleted, then applied anew.
    server.end_ray_job(name, "SUCCEEDED");
    assert!(server.object("rayclusters", &made).is_some(), "kept for ttlSecondsAfterFinished");
    server.expire_ray_job(name);
    assert!(server.object("rayclusters", &made).is_none(), "shutdownAfterJobFinishes");
    let replaced = Arc::new(Recorder::default());
    let again = commands::submit(&deployment, &artifacts, &options, &env, replaced.clone()).await;
    assert!(matches!(again, Err(gke_rl_ops::JobError::RayJobNotStarted { deleted: Ok(()), .. })), "{:?}", again.err());
    assert!(
        replaced.events().find("Deleted { kind: \"RayJob\"").unwrap() < replaced.events().find("RayJobCreated").unwrap(),
        "{}",
        replaced.events()
    );

    // Stop deletes it; a second stop finds none; an address is refused.
    clusters.wait_ray_job_gone(name, quick).await.unwrap();
    clusters.create_ray_job(manifest, "again").await.unwrap();
    let (_, stopped) = commands::stop(&deployment, &HeadOptions::default(), name, true, &env, Arc::new(Recorder::default())).await.unwrap();
    assert!(matches!(stopped, Stopped::RayJobDeleted { waited: true, .. }) && server.object("rayjobs", name).is_none());
    let none = commands::stop(&deployment, &HeadOptions::default(), name, true, &env, Arc::new(Recorder::default())).await;
    assert!(matches!(none, Err(gke_rl_ops::JobError::NoRayJob { .. })), "{:?}", none.err());
    let by_address = HeadOptions { address: Some("http://127.0.0.1:9".into()), ..HeadOptions::default() };
    let refused = commands::status(&deployment, &by_address, None, &env, Arc::new(Recorder::default())).await;
    assert!(matches!(refused, Err(gke_rl_ops::JobError::RayJobByAddress)), "{:?}", refused.err());
}

/// While a RayJob's cluster comes up (its pods wait for nodes): Ctrl-C deletes the RayJob;
/// KubeRay's pre-running deadline failing it ends the wait with KubeRay's reason; someone
/// deleting it, and another submit making its own, ends the wait and leaves that one alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rayjob_that_does_not_come_up_is_told_and_deleted_unless_another_submit_took_it() {
    gke_rl_ray::ensure_crypto_provider();
    let stock_out = gke_rl_kube::fake::Pods::Unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.".into());
    let (server, client) = gke_rl_kube::fake::FakeApiServer::start(stock_out);
    let (interrupt, interrupted) = Interrupt::manual();
    let mut env = env(&[]);
    (env.kube, env.interrupt) = (Kube::Given(client.clone()), interrupted);
    let clusters = gke_rl_kube::Namespaced::new(client, "default");
    let quick = gke_rl_kube::Wait { timeout: Duration::from_secs(5), poll: Duration::from_millis(1) };
    let options = run_options(None, true, None);
    let (deployment, late) = (rayjob_config(None), rayjob_config(Some(1)));
    let artifacts = render(&deployment);
    // Once the submit's RayJob waits for its pods.
    let waiting = |clusters: gke_rl_kube::Namespaced| async move {
        let made = async {
            while !clusters
                .ray_job("grpo-rayjob")
                .await
                .unwrap()
                .is_some_and(|s| s.submission.as_deref() == Some(JOB) && s.cluster.is_some())
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), made).await.expect("the submit's RayJob waits for its pods");
    };

    let recorder = Arc::new(Recorder::default());
    let watched = clusters.clone();
    let sender = tokio::spawn(async move {
        waiting(watched).await;
        interrupt.send(Some(2)).unwrap();
    });
    let error = commands::submit(&deployment, &artifacts, &options, &env, recorder.clone()).await.err().expect("interrupted");
    sender.await.unwrap();
    assert!(
        matches!(&error, gke_rl_ops::JobError::RayJobNotStarted { deleted: Ok(()), source, .. } if matches!(**source, gke_rl_ops::JobError::Interrupted { signal: 2 })),
        "{error:?}"
    );
    clusters.wait_ray_job_gone("grpo-rayjob", quick).await.unwrap();

    let mut env = env.clone();
    env.interrupt = Interrupt::manual().1;
    let recorder = Arc::new(Recorder::default());
    let error = commands::submit(&late, &render(&late), &options, &env, recorder.clone()).await.err().expect("past its deadline");
    let gke_rl_ops::JobError::RayJobNotStarted { source, .. } = &error else { panic!("{error:?}") };
    assert!(
        matches!(&**source, gke_rl_ops::JobError::RayJobEnded { state, reason: Some(reason), .. } if state == "Failed" && reason == "PreRunningDeadlineExceeded"),
        "{source:?}"
    );
    assert!(recorder.saw("Unschedulable: 0/3 nodes are available"), "the pods' reason is told: {}", recorder.events());
    clusters.wait_ray_job_gone("grpo-rayjob", quick).await.unwrap();

    let manifest = artifacts.ray_job.as_ref().unwrap().contents.clone();
    let other = clusters.clone();
    let taker = tokio::spawn(async move {
        waiting(other.clone()).await;
        other.delete_ray_job("grpo-rayjob", None).await.unwrap();
        other.wait_ray_job_gone("grpo-rayjob", quick).await.unwrap();
        other.create_ray_job(&manifest, "another-submit").await.unwrap();
    });
    let error = commands::submit(&deployment, &artifacts, &options, &env, Arc::new(Recorder::default())).await.err().expect("taken");
    taker.await.unwrap();
    let gke_rl_ops::JobError::RayJobGone { why, .. } = &error else { panic!("{error:?}") };
    assert!(why.contains("deleted"), "someone deleted it, whichever the submit saw first: {why}");
    let kept = clusters.ray_job("grpo-rayjob").await.unwrap().expect("left to the other submit");
    assert!(!kept.deleting && kept.submission.as_deref() == Some("another-submit"), "{kept:?}");
    assert_eq!(server.requests().iter().filter(|r| r.method == "DELETE").count(), 3, "the first two submits' and the taker's");
    // A create meanwhile is never taken over: the submit that finds it is refused.
    let busy = commands::submit(&deployment, &artifacts, &options, &env, Arc::new(Recorder::default())).await;
    assert!(matches!(&busy, Err(gke_rl_ops::JobError::RayJobBusy { .. })), "{:?}", busy.err());
}

/// A RayJob that Kueue manages (`job.queue` labels it with a LocalQueue) waits, suspended, while Kueue holds
/// it back: the wait and `status` tell Kueue's reason apart from pods waiting for nodes; once
/// admitted, KubeRay makes its cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rayjob_held_back_by_kueue_says_why_until_admitted() {
    gke_rl_ray::ensure_crypto_provider();
    let (server, client) = gke_rl_kube::fake::FakeApiServer::start(gke_rl_kube::fake::Pods::ReadyAfter(0));
    let mut env = env(&[]);
    env.kube = Kube::Given(client.clone());
    let deployment = rayjob_config(None);
    let artifacts = render(&deployment);
    assert!(artifacts.ray_job.as_ref().unwrap().contents.contains("    kueue.x-k8s.io/queue-name: a4\n"), "the config's job.queue");
    let why = "couldn't assign flavors to pod set workers: insufficient unused quota for nvidia.com/gpu in flavor a4, 64 more needed";
    server.kueue_holds(Some(why));
    let recorder = Arc::new(Recorder::default());
    let (admitter, status_env, status_deployment) = (server.clone(), env.clone(), deployment.clone());
    let told = recorder.clone();
    let admit = tokio::spawn(async move {
        // Once the submit has told Kueue's reason.
        let held = async {
            while !told.saw(why) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), held).await.expect("the submit tells Kueue's reason");
        let status = commands::status(&status_deployment, &HeadOptions::default(), None, &status_env, Arc::new(Recorder::default())).await;
        admitter.kueue_admits("grpo-rayjob");
        status
    });
    let error =
        commands::submit(&deployment, &artifacts, &run_options(None, true, None), &env, recorder.clone()).await.err().expect("no head");
    assert!(matches!(error, gke_rl_ops::JobError::RayJobNotStarted { .. }), "{error:?}");
    let Ok(gke_rl_ops::run::Status::RayJob(report)) = admit.await.unwrap() else { panic!("KubeRay's and Kueue's word") };
    let Some(Ok(queued)) = &report.queued else { panic!("Kueue's word: {:?}", report.queued.as_ref().map(|q| q.as_ref().err())) };
    assert_eq!((report.state.state(), queued.queue.as_str(), queued.admitted), ("Suspended", "a4", false));
    assert_eq!(queued.waiting, Some(("Pending".to_owned(), why.to_owned())));
    assert!(report.cluster.is_none(), "no cluster, so no pods to wait for capacity");
    let events = recorder.events();
    let (held, admitted) = (events.find(why).expect("Kueue's reason told"), events.find("\"Waiting\"").expect("then its cluster came"));
    assert!(events.contains("\"Suspended\"") && held < admitted, "{events}");
    assert!(events.find("Pods {").is_some_and(|pods| pods > held), "no pods told while held back: {events}");
}

/// The RayJob test config (`tests/fixtures/configs/rayjob.yaml`), with its pre-running
/// deadline `seconds` when given.
fn rayjob_config(pre_running_deadline: Option<u32>) -> gke_rl::Deployment {
    let text = std::fs::read_to_string(gke_rl_test_support::project_root().join("tests/fixtures/configs/rayjob.yaml")).unwrap();
    let key = "rayjob_pre_running_deadline_seconds: ";
    let text = match pre_running_deadline {
        Some(seconds) => text.replace(&format!("{key}1800"), &format!("{key}{seconds}")),
        None => text,
    };
    gke_rl::config::from_yaml(&text).unwrap()
}

/// Issue 65, class 4: gke-rl's own programs reach the job's shell word for word, whatever a
/// value of the user's holds (a folder named `data$x`, a `$(…)`): the storage check's folder,
/// the fabric check's sizes, the checkpoint lister's request and the supervisor's run, folders
/// and command are each one word to `/bin/sh`, and nothing in them runs.
#[test]
fn gke_rls_own_programs_reach_the_shell_word_for_word() {
    use std::os::unix::fs::PermissionsExt as _;
    let hostile = "/lustre/data$x/$(touch pwned)/`touch pwned`/it's \"here\" \\ *";
    let deployment = gke_rl::Deployment::default();
    let plan = gke_rl_in_cluster::storage::Plan::for_deployment(&deployment, Some(hostile), "gke-rl-storage-check-x", 1 << 20, 60);
    let programs =
        [plan.entrypoint(), gke_rl_in_cluster::fabric::entrypoint(&[65536, 1 << 20], 60), gke_rl_in_cluster::checkpoints::entrypoint()];
    let work = tempfile::tempdir().unwrap();
    // Stand-ins for the interpreters, which print the words they were given.
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for name in gke_rl_in_cluster::supervisor::INTERPRETERS {
        std::fs::write(bin.join(name), "#!/bin/sh\nprintf '%s\\0' \"$0\" \"$@\"\n").unwrap();
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let run = |line: &str| -> Vec<String> {
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", line])
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("x", "SHELL-EXPANDED")
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}: {}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8(out.stdout).unwrap();
        said.split_terminator('\0').skip(1).map(str::to_owned).collect()
    };
    let artifacts = render(&deployment);
    for program in programs {
        let options = SubmitOptions { program: program.clone(), ..SubmitOptions::default() };
        let prepared = gke_rl_ops::jobs::prepare(&deployment, &artifacts, &options, &env(&[]), &Recorder::default()).unwrap();
        assert_eq!(run(prepared.entrypoint()), program[1..], "{}", prepared.entrypoint());
    }
    let supervision = gke_rl_in_cluster::supervisor::Supervision {
        run: "raysubmit_1".to_owned(),
        runs_dir: hostile.to_owned(),
        cluster: "default/ray".to_owned(),
        nodes: 2,
        max_restarts: 1,
        max_lost: None,
        wait: Duration::from_secs(60),
        checkpoints: hostile.to_owned(),
        secrets: vec!["HF_TOKEN".to_owned()],
    };
    let words = run(&supervision.entrypoint(hostile));
    assert_eq!(words.iter().filter(|w| *w == hostile).count(), 3, "{words:?}");
    assert!(!work.path().join("pwned").exists(), "nothing in a value ran");
}
