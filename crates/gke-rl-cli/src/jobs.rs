//! `gke-rl submit | status | logs | stop | jobs`: arguments into `gke_rl_ops` options, the
//! outcome into lines and an exit code. Exit codes: 0 SUCCEEDED, 1 FAILED or STOPPED, 2 for
//! errors, 130 when Ctrl-C detaches (the job keeps running).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use gke_rl::Deployment;
use gke_rl::model::WhenDone;
use gke_rl_ops::Env;
use gke_rl_ops::head::{Head, HeadOptions};
use gke_rl_ops::jobs::{Followed, Stopped, SubmitOptions, Supervise};
use gke_rl_ray::{JobDetails, JobStatus};

use crate::config::{self, Loaded};
use crate::console::{Console, explain};
use crate::terminal::outln;

/// The process exit code when Ctrl-C detaches from a job.
pub(crate) const DETACHED: u8 = 130;

/// Which cluster and how to reach its Ray dashboard.
#[derive(clap::Args)]
pub(crate) struct Connection {
    #[command(flatten)]
    source: config::Source,
    /// Ray dashboard address, e.g. http://localhost:8265 [default: a port-forward to the config's RayCluster]
    #[arg(long, value_name = "URL", env = "RAY_API_SERVER_ADDRESS")]
    address: Option<String>,
    /// Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads
    /// it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with
    /// --address), or from the RayCluster's Secret (through the port-forward)
    #[arg(long, value_name = "JSON", env = "RAY_JOB_HEADERS", hide_env_values = true)]
    headers: Option<String>,
    /// Give up on a request the dashboard does not answer within this many seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    request_timeout: u64,
}

/// A loaded config and a connection to its cluster's dashboard.
pub(crate) struct Connected {
    pub loaded: Loaded,
    pub head: Head,
    pub console: Arc<Console>,
}

impl Connection {
    /// The config (from `--config`/`--env-file`) and a client for `--address` (or
    /// `RAY_ADDRESS`); without one, a port-forward to the head pod of that config's RayCluster,
    /// through its cluster's kubeconfig context.
    pub(crate) async fn connect(&self, env: &Env) -> anyhow::Result<Connected> {
        let loaded = self.source.load()?;
        let console = Arc::new(Console::stderr(false));
        let head = self.head(&loaded.deployment, env, console.clone()).await?;
        Ok(Connected { loaded, head, console })
    }

    /// Whether no address is given, so that the dashboard is reached through Kubernetes.
    fn forwards(&self) -> bool {
        self.address.is_none() && std::env::var("RAY_ADDRESS").map_or(true, |a| a.is_empty())
    }

    async fn head(&self, deployment: &Deployment, env: &Env, console: Arc<Console>) -> anyhow::Result<Head> {
        let headers: BTreeMap<String, String> = match &self.headers {
            // serde's message would quote the value, which may hold a secret: only where it is.
            Some(json) => serde_json::from_str(json).map_err(|e| {
                anyhow::anyhow!("--headers / RAY_JOB_HEADERS must be a JSON object of strings (line {}, column {})", e.line(), e.column())
            })?,
            None => BTreeMap::new(),
        };
        let address = self.address.clone().or_else(|| std::env::var("RAY_ADDRESS").ok()).filter(|a| !a.is_empty());
        let options = HeadOptions { address, headers, request_timeout: Duration::from_secs(self.request_timeout) };
        let forwarding = options.address.is_none();
        gke_rl_ops::head::connect(deployment, &options, env, console).await.map_err(|e| {
            if !forwarding {
                return crate::reported(e, &|e| gke_rl_ops::chain(e));
            }
            let cluster = &deployment.project.cluster_name;
            let project = deployment.project.project_id.as_ref().map_or("PROJECT_ID", |p| p.as_str());
            anyhow::anyhow!(
                "no Ray address, and the port-forward to the head failed: {}\nhelp: or reach the dashboard yourself: \
                 `kubectl port-forward service/{cluster}-head-svc 8265:8265`, then pass --address http://localhost:8265 (or set RAY_ADDRESS)",
                explain(&e, None, &gke_rl::lifecycle::credentials(deployment, project))
            )
        })
    }
}

/// Submit the training job to the Ray cluster and follow it to the end
#[derive(clap::Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    connection: Connection,
    /// Upload this folder (its .gitignore/.rayignore apply), or this .zip as it is, instead of the job folder
    #[arg(long, value_name = "DIR")]
    working_dir: Option<PathBuf>,
    /// Add a file to the job folder (repeatable)
    #[arg(long, value_name = "FILE", conflicts_with = "working_dir")]
    include: Vec<PathBuf>,
    /// Upload what symlinks out of the working dir point at, as Ray does [default: refuse them]
    #[arg(long, requires = "working_dir")]
    follow_links_out: bool,
    /// Upload credential files in the working dir (.ssh/, .aws/, .npmrc, *.pem, ...), as Ray does [default: leave them out]
    #[arg(long, requires = "working_dir")]
    with_credential_files: bool,
    /// Runtime env file (JSON or YAML) [default: the rendered ray_runtime_env.json]
    #[arg(long, value_name = "FILE")]
    runtime_env: Option<PathBuf>,
    /// Submission id [default: raysubmit_ and 16 random characters, as Ray makes them]
    #[arg(long, value_name = "ID")]
    submission_id: Option<String>,
    /// Return once the job is accepted
    #[arg(long)]
    no_wait: bool,
    /// Restart the training after a lost node (a preemption) up to N times, in the cluster;
    /// NeMo-RL resumes from its newest checkpoint [default: the config's job.max_restarts, else 3 on Spot, 0 on a reservation]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    max_restarts: Option<u32>,
    /// Stop restarting once restarts have lost this much wall time in all (2h, 1d) [default: no bound]
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
    max_lost: Option<Duration>,
    /// How long to wait before each restart for the cluster to be whole again (90s, 30m, 1h)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::parse_duration)]
    restart_wait: Duration,
    /// Where the run keeps its records, on the cluster's shared file system [default: LUSTRE_MOUNT/gke-rl/runs]
    #[arg(long, value_name = "DIR", env = "GKE_RL_RUNS_DIR")]
    runs_dir: Option<String>,
    /// NeMo-RL's checkpoint dir, whose half-written checkpoints a restart removes [default: the config's checkpointing.dir]
    #[arg(long, value_name = "DIR")]
    checkpoint_dir: Option<String>,
    /// What to do with the RayCluster once the job and its restarts have ended: keep it, or
    /// suspend it (its pods deleted, its GPU nodes given back) [default: the config's job.when_done]
    #[arg(long, value_name = "WHAT", value_enum)]
    then: Option<WhenDoneArg>,
    /// Pass this variable from your environment to the job (its value becomes readable
    /// through the Jobs API; prefer the Kubernetes Secret)
    #[arg(long, value_name = "NAME")]
    env_from_local: Vec<String>,
    /// Job metadata KEY=VALUE (repeatable)
    #[arg(long, value_name = "KEY=VALUE", value_parser = key_value)]
    metadata: Vec<(String, String)>,
    /// CPUs reserved for the entrypoint
    #[arg(long, value_name = "N", value_parser = amount)]
    entrypoint_num_cpus: Option<f64>,
    /// GPUs reserved for the entrypoint
    #[arg(long, value_name = "N", value_parser = amount)]
    entrypoint_num_gpus: Option<f64>,
    /// Memory reserved for the entrypoint, in bytes
    #[arg(long, value_name = "BYTES")]
    entrypoint_memory: Option<u64>,
    /// Custom resources for the entrypoint, as a JSON object
    #[arg(long, value_name = "JSON")]
    entrypoint_resources: Option<String>,
    /// Node labels the entrypoint must run on, KEY=VALUE (repeatable; Ray 2.54+)
    #[arg(long, value_name = "KEY=VALUE", value_parser = key_value)]
    entrypoint_label_selector: Vec<(String, String)>,
    /// The command to run [default: bash run_nemo_rl.sh]
    #[arg(last = true, value_name = "ENTRYPOINT")]
    entrypoint: Vec<String>,
}

/// A resource amount Ray can reserve: a finite number, 0 or more. (JSON has no NaN or infinity:
/// serde_json would send them as `null`, which Ray reads as "not given".)
fn amount(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
        Ok(_) => Err(format!("`{s}` is not an amount Ray can reserve: give a finite number, 0 or more")),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).ok_or_else(|| format!("expected KEY=VALUE, got `{s}`"))
}

/// Show a job's status (default: the latest submitted job)
#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    connection: Connection,
    /// Submission id
    id: Option<String>,
    /// Print JSON (secret values redacted)
    #[arg(long)]
    json: bool,
}

/// Print a job's log (default: the latest submitted job)
#[derive(clap::Args)]
pub struct LogsArgs {
    #[command(flatten)]
    connection: Connection,
    /// Submission id
    id: Option<String>,
    /// Keep streaming until the job ends
    #[arg(long, short)]
    follow: bool,
}

/// Stop a running job and wait until it has stopped
#[derive(clap::Args)]
pub struct StopArgs {
    #[command(flatten)]
    connection: Connection,
    /// Submission id (its newest restart is stopped)
    id: String,
    /// Return once the stop is requested
    #[arg(long)]
    no_wait: bool,
}

/// List the cluster's jobs
#[derive(clap::Args)]
pub struct JobsArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print JSON (secret values redacted)
    #[arg(long)]
    json: bool,
}

impl SubmitArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let cli = crate::name();
        let loaded = self.connection.source.load()?;
        let artifacts = loaded.render()?;
        let runtime_env = match &self.runtime_env {
            Some(path) => Some((path.display().to_string(), gke_rl_ops::files::read_text(path)?)),
            None => None,
        };
        let entrypoint_resources: Option<std::collections::BTreeMap<String, f64>> = match &self.entrypoint_resources {
            Some(json) => Some(serde_json::from_str(json).context("--entrypoint-resources must be a JSON object of numbers")?),
            None => None,
        };
        if let Some((name, n)) = entrypoint_resources.iter().flatten().find(|(_, n)| !(n.is_finite() && **n >= 0.0)) {
            anyhow::bail!("--entrypoint-resources: `{name}` is {n}; give a finite number, 0 or more");
        }
        let options = SubmitOptions {
            working_dir: self.working_dir.clone(),
            include: self.include.clone(),
            runtime_env,
            submission_id: self.submission_id.clone(),
            env_from_local: self.env_from_local.clone(),
            metadata: self.metadata.iter().cloned().collect(),
            entrypoint_num_cpus: self.entrypoint_num_cpus,
            entrypoint_num_gpus: self.entrypoint_num_gpus,
            entrypoint_memory: self.entrypoint_memory,
            entrypoint_resources,
            entrypoint_label_selector: self.entrypoint_label_selector.iter().cloned().collect(),
            entrypoint: self.entrypoint.clone(),
            follow_links_out: self.follow_links_out,
            with_credential_files: self.with_credential_files,
            supervise: Some(Supervise {
                max_restarts: self.max_restarts.unwrap_or_else(|| loaded.deployment.max_restarts()),
                max_lost: self.max_lost,
                wait: self.restart_wait,
                runs_dir: self.runs_dir.clone().unwrap_or_else(|| gke_rl::supervisor::runs_dir(&loaded.deployment)),
                cluster: gke_rl::supervisor::cluster_id(&loaded.deployment),
                checkpoints: self.checkpoint_dir.clone().unwrap_or_else(|| loaded.deployment.job.checkpointing.dir.to_string()),
            }),
        };
        let env = Env::real();
        let console = Arc::new(Console::stderr(false));
        // Everything that can be refused is, before connecting.
        let prepared = gke_rl_ops::jobs::prepare(&loaded.deployment, &artifacts, &options, &env, &*console).map_err(submit_error)?;
        let d = &loaded.deployment;
        let when_done = self.then.map_or(d.job.when_done, WhenDone::from);
        crate::runtime()?.block_on(async {
            if self.connection.forwards() {
                // A suspended cluster has no head pod to forward to: bring it back first. What
                // fails here, the port-forward below meets again and explains.
                if let Err(e) = gke_rl_ops::suspend::set_suspended(d, false, self.restart_wait, &env, &*console).await {
                    console.say(format_args!("warning: cannot tell whether the RayCluster is suspended: {}", gke_rl_ops::chain(&e)));
                }
            }
            let head = self.connection.head(d, &env, console.clone()).await?;
            let submitted = gke_rl_ops::jobs::submit_supervised(&head.client, prepared, &*console).await.map_err(submit_error)?;
            if self.no_wait {
                console.say(format_args!("follow it with: {}", follow_command(&head, &submitted.id)));
                return Ok(0);
            }
            let id = submitted.id;
            let recovered = gke_rl_ops::jobs::follow_run(&head.client, &id, self.restart_wait, &env, &*console)
                .await
                .map_err(|e| crate::reported(e, &|e| gke_rl_ops::chain(e)))?;
            let report = recovered.records.report();
            if !report.is_empty() {
                crate::terminal::err(&crate::terminal::shown(&report));
            }
            let finished = matches!(recovered.followed, Followed::Finished { .. });
            let code = ended(&head, &id, recovered.followed, &console)?;
            if finished && when_done == WhenDone::Suspend {
                if head.is_forwarded() {
                    gke_rl_ops::suspend::set_suspended(d, true, Duration::from_secs(600), &env, &*console)
                        .await
                        .map_err(|e| crate::reported(e, &|e| gke_rl_ops::chain(e)))?;
                    console.say(format_args!(
                        "RayCluster {} is suspended; `{cli} resume` or the next submit brings it back",
                        d.project.cluster_name
                    ));
                } else {
                    console.say("warning: not suspending the RayCluster: with --address, gke-rl does not reach Kubernetes");
                }
            }
            Ok(code)
        })
    }
}

/// `--then`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum WhenDoneArg {
    Keep,
    Suspend,
}

impl From<WhenDoneArg> for WhenDone {
    fn from(arg: WhenDoneArg) -> Self {
        match arg {
            WhenDoneArg::Keep => WhenDone::Keep,
            WhenDoneArg::Suspend => WhenDone::Suspend,
        }
    }
}

/// The submissions of the job `id` names with its restarts, oldest first; without an id, the
/// most recently started submission alone.
async fn chain_of(client: &gke_rl_ray::Client, id: Option<&str>) -> anyhow::Result<Vec<String>> {
    Ok(match id {
        Some(id) => gke_rl_ops::jobs::chain(client, id).await?,
        None => vec![gke_rl_ops::jobs::job_id(client, None).await?],
    })
}

/// A submit error, with the findings of a refused runtime env shown first.
fn submit_error(error: gke_rl_ops::Error) -> anyhow::Error {
    crate::reported(error, &|e| gke_rl_ops::chain(e))
}

/// The `--address` that reaches the same dashboard again, when it was given.
/// `gke-rl logs ID --follow`, with the `--address` that reaches the same dashboard when one was
/// given: each word shell-quoted, since it is printed to be pasted.
fn follow_command(head: &Head, id: &str) -> String {
    let mut words = crate::name().split_whitespace().map(str::to_owned);
    let program = words.next().unwrap_or_default();
    let mut args: Vec<String> = words.chain(["logs".to_owned(), id.to_owned(), "--follow".to_owned()]).collect();
    if !head.is_forwarded() {
        args.extend(["--address".to_owned(), head.client.address().to_owned()]);
    }
    gke_rl::lifecycle::Command { program, args, dir: None }.to_string()
}

/// Follows the job to its end; Ctrl-C detaches.
async fn watch(head: &Head, id: &str, env: &Env, console: &Console) -> anyhow::Result<u8> {
    let followed =
        gke_rl_ops::jobs::follow(&head.client, id, env, console).await.map_err(|e| crate::reported(e, &|e| gke_rl_ops::chain(e)))?;
    ended(head, id, followed, console)
}

/// The end of following a job: the re-attach hint on Ctrl-C, else the checkpoint report and
/// the final state; the exit code.
fn ended(head: &Head, id: &str, followed: Followed, console: &Console) -> anyhow::Result<u8> {
    match followed {
        Followed::Detached { signal } => {
            console.say(format_args!("\ndetached from job {id}; it keeps running. Re-attach with:\n  {}", follow_command(head, id)));
            // 128 + the signal, as a shell reports a command it ended: 130 for Ctrl-C.
            Ok(u8::try_from(128 + signal).unwrap_or(DETACHED))
        }
        Followed::Finished { job, checkpoints } => {
            let report = checkpoints.report();
            if !report.is_empty() {
                crate::terminal::err(&crate::terminal::shown(&report));
            }
            let message = job.message.as_deref().unwrap_or_default();
            console.say(format_args!("job {} {}: {message}", job.id(), job.status));
            Ok(u8::from(job.status != JobStatus::Succeeded))
        }
        other => anyhow::bail!("following ended in a way this version does not know: {other:?}"),
    }
}

impl StatusArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(async {
            let env = Env::real();
            // A suspended cluster has no head to ask about jobs: that is the answer.
            if self.connection.forwards() {
                let loaded = self.connection.source.load()?;
                if let Ok(Some(true)) = gke_rl_ops::suspend::is_suspended(&loaded.deployment, &env).await {
                    let state = gke_rl_ops::ClusterState::Suspended.describe();
                    let d = &loaded.deployment;
                    let bill = match gke_rl::cost::suspended(d) {
                        (idle, true) => format!("costing {} once GKE has removed its GPU nodes", idle.summary()),
                        (kept, false) => {
                            format!("still costing {}: its GPU pool does not scale to zero, so the nodes stay", kept.summary())
                        }
                    };
                    outln!("cluster {}: {state}, {bill}", d.project.cluster_name);
                    return Ok(0);
                }
            }
            let connected = self.connection.connect(&env).await?;
            let client = &connected.head.client;
            let chain = chain_of(client, self.id.as_deref()).await?;
            let id = chain.last().cloned().unwrap_or_default();
            let job = client.job(&id).await?;
            for earlier in &chain[..chain.len() - 1] {
                // A head that restarted forgot the earlier submissions.
                if let Ok(earlier) = client.job(earlier).await {
                    let why = earlier.message.as_deref().and_then(|m| m.lines().next()).unwrap_or_default();
                    connected.console.say(format_args!("resubmitted by the keeper: {} {} {why}", earlier.id(), earlier.status));
                }
            }
            // What the run's supervisors recorded, whether or not anyone followed it.
            let log = client.logs(&id).await.unwrap_or_else(|e| {
                connected.console.say(format_args!("warning: the run's records cannot be read from job {id}'s log: {e}"));
                String::new()
            });
            let records = gke_rl::supervisor::Records::of(&log);
            let report = records.report();
            if !report.is_empty() {
                crate::terminal::err(&crate::terminal::shown(&report));
            }
            match records.ended() {
                Some((status, reason)) => connected.console.say(format_args!("run {status}: {reason}")),
                None if records.supervised() && job.status == JobStatus::Failed => connected.console.say(format_args!(
                    "the run's supervisor ended without its record (it was killed, or its head was lost); in a deployment, \
                     the run keeper resubmits it within a minute unless its restarts are used up"
                )),
                None => {}
            }
            if let Some(clusters) = connected.head.clusters() {
                let d = &connected.loaded.deployment;
                let name = d.project.cluster_name.as_str();
                // The job's state is the answer; the cluster's is context, so failing to read it is not fatal.
                match clusters.readiness(name, d.topology.node_count.get()).await {
                    Ok(readiness) => {
                        let (ready, wanted) = readiness.progress();
                        let cost = format!("costing {}", gke_rl::cost::estimate(d).summary());
                        let now = i64::try_from(env.clock.unix_millis() / 1000).unwrap_or(i64::MAX);
                        let age = readiness.created.map_or_else(String::new, |created| {
                            format!(
                                ", created {} ago",
                                gke_rl_ops::took(Duration::from_secs(now.saturating_sub(created).max(0).unsigned_abs()))
                            )
                        });
                        connected
                            .console
                            .say(format_args!("cluster {name}: {ready}/{wanted} pods Ready, {}{age}, {cost}", readiness.state.describe()));
                        for problem in &readiness.problems {
                            connected.console.say(format_args!("  ! {problem}"));
                        }
                    }
                    Err(e) => connected.console.say(format_args!("cluster {name}: unknown ({e})")),
                }
            }
            if self.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&gke_rl_ops::jobs::redacted(
                        &job,
                        &connected.loaded.deployment,
                        connected.head.client.token()
                    ))?
                );
            } else {
                outln!("{}", crate::terminal::shown(&describe(&job, env.clock.unix_millis())));
            }
            Ok(0)
        })
    }
}

impl LogsArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(async {
            let env = Env::real();
            let connected = self.connection.connect(&env).await?;
            let client = &connected.head.client;
            let chain = chain_of(client, self.id.as_deref()).await?;
            if self.follow {
                let latest = chain.last().cloned().unwrap_or_default();
                return watch(&connected.head, &latest, &env, &connected.console).await;
            }
            // A restarted job's log is its submissions' logs, in order.
            for id in &chain {
                if chain.len() > 1 {
                    connected.console.say(format_args!("== job {id} =="));
                }
                crate::terminal::out(&client.logs(id).await?);
            }
            Ok(0)
        })
    }
}

impl StopArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(async {
            let env = Env::real();
            let connected = self.connection.connect(&env).await?;
            let console = &connected.console;
            let id = gke_rl_ops::jobs::job_id(&connected.head.client, Some(&self.id)).await.map_err(anyhow::Error::from)?;
            let stopped =
                gke_rl_ops::jobs::stop(&connected.head.client, &id, !self.no_wait, &env, &**console).await.map_err(anyhow::Error::from)?;
            match stopped {
                Stopped::NotRunning(status) => console.say(format_args!("job {id} was not running: {status}")),
                Stopped::Ended(status) => console.say(format_args!("job {id} {status}")),
                _ => {}
            }
            Ok(0)
        })
    }
}

impl JobsArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(async {
            let env = Env::real();
            let connected = self.connection.connect(&env).await?;
            let jobs = connected.head.client.jobs().await?;
            if self.json {
                let jobs: Vec<_> = jobs
                    .iter()
                    .map(|job| gke_rl_ops::jobs::redacted(job, &connected.loaded.deployment, connected.head.client.token()))
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&jobs)?);
                return Ok(0);
            }
            let now = env.clock.unix_millis();
            outln!("{:<28} {:<10} {:<20} {:>9}  ENTRYPOINT", "ID", "STATUS", "STARTED (UTC)", "DURATION");
            for job in &jobs {
                let entrypoint: String = job.entrypoint.chars().take(60).collect();
                let line =
                    format!("{:<28} {:<10} {:<20} {:>9}  {entrypoint}", job.id(), job.status.to_string(), started(job), duration(job, now));
                outln!("{}", crate::terminal::shown(&line));
            }
            Ok(0)
        })
    }
}

/// Several lines about one job, for people.
fn describe(job: &JobDetails, now: u64) -> String {
    let mut out = format!("{}  {}", job.id(), job.status);
    if let Some(message) = &job.message {
        out.push_str(&format!("  {message}"));
    }
    out.push_str(&format!("\n  entrypoint: {}\n  started:    {} UTC, ran {}", job.entrypoint, started(job), duration(job, now)));
    if let Some(code) = job.driver_exit_code {
        out.push_str(&format!("\n  exit code:  {code}"));
    }
    if let Some(error) = &job.error_type {
        out.push_str(&format!("\n  error type: {error}"));
    }
    out
}

/// `YYYY-MM-DD HH:MM:SS` of the start time, UTC.
fn started(job: &JobDetails) -> String {
    let Some(ms) = job.start_time.filter(|ms| *ms > 0) else { return "-".into() };
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// How long the job ran (or has run by `now`, in Unix milliseconds).
fn duration(job: &JobDetails, now: u64) -> String {
    let Some(start) = job.start_time.filter(|ms| *ms > 0) else { return "-".into() };
    let end = job.end_time.filter(|ms| *ms > 0).unwrap_or(now);
    let secs = end.saturating_sub(start) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_print_in_utc_and_secrets_are_redacted_by_name_and_shape() {
        let job: JobDetails = serde_json::from_value(serde_json::json!({
            "type": "SUBMISSION", "job_id": null, "submission_id": "s", "status": "RUNNING", "entrypoint": "x",
            "message": null, "error_type": null, "start_time": 1_795_000_000_000u64, "end_time": null,
            "metadata": {"note": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "pip": "https://u:pw@pypi.example.com"},
            "runtime_env": {"env_vars": {"HF_TOKEN": "hf_x", "HF_HOME": "/lustre", "MY_HF": "hf_renamed", "OTHER": "ghp_0123456789abcdefghij0123456789abcdef"}}
        }))
        .unwrap();
        assert_eq!(started(&job), "2026-11-18 11:06:40"); // Python: datetime.utcfromtimestamp(1795000000)
        assert_eq!(duration(&job, 1_795_000_090_000), "1m30s");
        let renamed = gke_rl::config::from_yaml("secrets:\n  hf_token_env: MY_HF\n").unwrap();
        let json = gke_rl_ops::jobs::redacted(&job, &renamed, None);
        assert_eq!(json["runtime_env"]["env_vars"]["HF_TOKEN"], "<redacted>");
        assert_eq!(json["runtime_env"]["env_vars"]["MY_HF"], "<redacted>", "the config's own name for the token");
        assert_eq!(json["runtime_env"]["env_vars"]["HF_HOME"], "/lustre");
        // By shape, under any name and anywhere (issue 13, item 9).
        assert_eq!(json["runtime_env"]["env_vars"]["OTHER"], "<redacted>");
        assert_eq!(json["metadata"]["note"], "<redacted>");
        assert_eq!(json["metadata"]["pip"], "https://u:<redacted>@pypi.example.com");
    }
}
