//! `cargo xtask submit | status | logs | stop | jobs`: the Ray Jobs API, natively.
//!
//! `submit` uploads a job folder holding only the rendered `run_nemo_rl.sh` (plus `--include`
//! files) unless `--working-dir` names a folder, refuses a package holding a secret, and
//! follows the job to its end. Exit codes: 0 SUCCEEDED, 1 FAILED or STOPPED, 2 for errors,
//! 130 when Ctrl-C detaches (the job keeps running).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use gke_rl::checkpoints::CheckpointLog;
use gke_rl::validate::{SourceFile, count};
use gke_rl::{Artifacts, Severity};
use gke_rl_kube::portforward::Forwarding;
use gke_rl_ray::package::{self, Plan, Secret};
use gke_rl_ray::{Client, ClientOptions, Event, FollowOptions, JobDetails, JobStatus, SubmitRequest};

use crate::config::{self, read_input};
use crate::report::Report;

/// The process exit code when Ctrl-C detaches from a job.
const DETACHED: u8 = 130;
/// The job script `submit` runs by default, from the render.
const JOB_SCRIPT: &str = "run_nemo_rl.sh";
/// Environment variables whose values must never be uploaded.
const SECRET_ENV: &[&str] = &["HF_TOKEN", "WANDB_API_KEY"];

/// Where the Ray dashboard is.
#[derive(clap::Args)]
pub struct Connection {
    /// Ray dashboard address, e.g. http://localhost:8265 [env: RAY_API_SERVER_ADDRESS, RAY_ADDRESS]
    #[arg(long, value_name = "URL")]
    address: Option<String>,
    /// Extra HTTP headers for every request, as a JSON object
    #[arg(long, value_name = "JSON", env = "RAY_JOB_HEADERS", hide_env_values = true)]
    headers: Option<String>,
    /// Give up on a request the dashboard does not answer within this many seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    request_timeout: u64,
}

impl Connection {
    /// A client for `--address` (or RAY_ADDRESS); without one, a port-forward to the head pod
    /// of the config's RayCluster, through the current kubeconfig context (which `deploy`
    /// sets). The forward lives as long as the returned guard.
    async fn connect(&self) -> anyhow::Result<(Client, Option<Forwarding>)> {
        let from_env = || ["RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"].iter().find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
        let (address, forwarding) = match self.address.clone().or_else(from_env) {
            Some(address) => (address, None),
            None => {
                let forwarding = forward_to_head().await?;
                (format!("http://{}", forwarding.local), Some(forwarding))
            }
        };
        let headers: BTreeMap<String, String> = match &self.headers {
            Some(json) => serde_json::from_str(json).context("--headers / RAY_JOB_HEADERS must be a JSON object of strings")?,
            None => BTreeMap::new(),
        };
        let request_timeout = Duration::from_secs(self.request_timeout);
        Ok((Client::new(&address, ClientOptions { headers, request_timeout, ..ClientOptions::default() })?, forwarding))
    }
}

/// The Ray dashboard's port on the head pod (the Jobs API).
const DASHBOARD_PORT: u16 = 8265;

/// Forwards a free local port to port 8265 of the RayCluster's head pod.
async fn forward_to_head() -> anyhow::Result<Forwarding> {
    let deployment = config::Source::default().load()?.deployment;
    let (cluster, namespace) = (deployment.project.cluster_name.to_string(), deployment.ray.namespace.to_string());
    let manual = format!(
        "help: or reach the dashboard yourself: `kubectl port-forward service/{cluster}-head-svc 8265:8265`, then pass --address http://localhost:8265 (or set RAY_ADDRESS)"
    );
    let project = deployment.project.project_id.as_ref().map_or("PROJECT_ID", |p| p.as_str());
    let get_credentials = gke_rl::lifecycle::credentials(&deployment, project).to_string();
    let explain = |e: gke_rl_kube::Error| {
        let e = anyhow::Error::from(e);
        let help = crate::cluster::kube_help(&e, &get_credentials).map(|h| format!("\n{h}")).unwrap_or_default();
        anyhow::anyhow!("no Ray address, and the port-forward to the head failed: {e}{help}\n{manual}")
    };
    let hidden = gke_rl::lifecycle::secret_entries(&deployment).into_iter().map(|(_, variable, _)| variable.to_owned()).collect();
    let options = gke_rl_kube::Options { hidden_env: hidden, ..gke_rl_kube::Options::default() };
    let client = gke_rl_kube::connect(None, None, &options).await.map_err(explain)?.client;
    let clusters = gke_rl_kube::RayClusters::new(client, &namespace);
    // Fail now, with the reason, rather than on the first request.
    let head = clusters.head_pod(&cluster).await.map_err(explain)?;
    let on_error: gke_rl_kube::portforward::OnError = Arc::new(|e| eprintln!("warning: port-forward: {e}"));
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let forwarding =
        gke_rl_kube::portforward::forward(local, clusters.head_port(&cluster, DASHBOARD_PORT), Duration::from_secs(30), on_error).await?;
    eprintln!("port-forward {} -> {namespace}/{head}:{DASHBOARD_PORT}", forwarding.local);
    Ok(forwarding)
}

/// Submit the training job to the Ray cluster and follow it to the end
#[derive(clap::Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    source: config::Source,
    #[command(flatten)]
    connection: Connection,
    /// Upload this folder (its .gitignore/.rayignore apply), or this .zip as it is, instead of the job folder
    #[arg(long, value_name = "DIR")]
    working_dir: Option<PathBuf>,
    /// Add a file to the job folder (repeatable)
    #[arg(long, value_name = "FILE", conflicts_with = "working_dir")]
    include: Vec<PathBuf>,
    /// Runtime env file (JSON or YAML) [default: the rendered ray_runtime_env.json]
    #[arg(long, value_name = "FILE")]
    runtime_env: Option<PathBuf>,
    /// Submission id [default: raysubmit_ and 16 random characters, as Ray makes them]
    #[arg(long, value_name = "ID")]
    submission_id: Option<String>,
    /// Return once the job is accepted
    #[arg(long)]
    no_wait: bool,
    /// Pass this variable from your environment to the job (its value becomes readable
    /// through the Jobs API; prefer the Kubernetes Secret)
    #[arg(long, value_name = "NAME")]
    env_from_local: Vec<String>,
    /// Job metadata KEY=VALUE (repeatable)
    #[arg(long, value_name = "KEY=VALUE", value_parser = key_value)]
    metadata: Vec<(String, String)>,
    /// CPUs reserved for the entrypoint
    #[arg(long, value_name = "N")]
    entrypoint_num_cpus: Option<f64>,
    /// GPUs reserved for the entrypoint
    #[arg(long, value_name = "N")]
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
    /// Print JSON (secret-looking env vars redacted)
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
    /// Submission id
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
    /// Print JSON (secret-looking env vars redacted)
    #[arg(long)]
    json: bool,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

impl SubmitArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let loaded = self.source.load()?;
        let artifacts = loaded.render()?;
        let mut runtime_env = self.runtime_env(&artifacts)?;
        let upload = self.upload(&artifacts, &runtime_env)?;
        let env_from_local = self.env_from_local()?;
        let entrypoint = if self.entrypoint.is_empty() { format!("bash {JOB_SCRIPT}") } else { list2cmdline(&self.entrypoint) };
        let entrypoint_resources = match &self.entrypoint_resources {
            Some(json) => Some(serde_json::from_str(json).context("--entrypoint-resources must be a JSON object of numbers")?),
            None => None,
        };
        runtime()?.block_on(async {
            let (client, _forwarding) = self.connection.connect().await?;
            let server = client.version().await?;
            eprintln!("Ray {} at {}", server.ray_version, client.address());
            if let Some(hashed) = upload {
                let uri = hashed.uri.clone();
                let files = hashed.file_count();
                if client.package_exists(&uri).await? {
                    eprintln!("package {uri} ({files} files) is already on the cluster: not uploading");
                } else {
                    let package = hashed.zip()?;
                    eprintln!("uploading {uri} ({files} files, {})", package::mib(package.zip.len() as u64));
                    client.upload_package(&uri, package.zip).await?;
                }
                runtime_env.insert("working_dir".into(), uri.into());
            }
            if !env_from_local.is_empty() {
                let env_vars = runtime_env.entry("env_vars").or_insert_with(|| serde_json::json!({}));
                let env_vars = env_vars.as_object_mut().context("the runtime env's env_vars must be an object")?;
                for (name, value) in env_from_local {
                    env_vars.insert(name, value.into());
                }
            }
            let request = SubmitRequest {
                entrypoint,
                submission_id: Some(self.submission_id.clone().unwrap_or_else(gke_rl_ray::new_submission_id)),
                runtime_env: Some(runtime_env),
                metadata: (!self.metadata.is_empty()).then(|| self.metadata.iter().cloned().collect()),
                entrypoint_num_cpus: self.entrypoint_num_cpus,
                entrypoint_num_gpus: self.entrypoint_num_gpus,
                entrypoint_memory: self.entrypoint_memory,
                entrypoint_resources,
                entrypoint_label_selector: (!self.entrypoint_label_selector.is_empty())
                    .then(|| self.entrypoint_label_selector.iter().cloned().collect()),
            };
            let id = client.submit(&request, &server).await?;
            eprintln!("job {id} submitted");
            if self.no_wait {
                eprintln!("follow it with: cargo xtask logs {id} --follow --address {}", client.address());
                return Ok(0);
            }
            watch(&client, &id).await
        })
    }

    /// The runtime env to submit: the file given, else the render's; checked like `validate`.
    fn runtime_env(&self, artifacts: &Artifacts) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
        let (name, text) = match &self.runtime_env {
            Some(path) => (path.display().to_string(), read_input(path)?),
            None => {
                (artifacts.runtime_env.name.to_owned(), artifacts.runtime_env.contents.clone())
            }
        };
        let findings = gke_rl::validate::validate(&[SourceFile { name: &name, text: &text }]);
        for finding in &findings {
            eprintln!("{}\n", Report { file: Path::new(&name), source: &text, diagnostic: &finding.diagnostic });
        }
        if count(&findings, Severity::Error) > 0 {
            bail!("{name} has errors; nothing was submitted");
        }
        let value: serde_json::Value = serde_saphyr::from_str(&text).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        match value {
            serde_json::Value::Object(map) => Ok(map),
            serde_json::Value::Null => Ok(serde_json::Map::new()),
            _ => bail!("{name}: a runtime env must be a mapping"),
        }
    }

    /// The package to upload, built and checked, or `None` when the runtime env already
    /// names a remote `working_dir`.
    fn upload(
        &self,
        artifacts: &Artifacts,
        runtime_env: &serde_json::Map<String, serde_json::Value>,
    ) -> anyhow::Result<Option<package::Hashed>> {
        let from_env = runtime_env.get("working_dir").and_then(|v| v.as_str());
        let plan = match (&self.working_dir, from_env) {
            (None, Some(uri)) if uri.contains("://") => return Ok(None),
            (Some(dir), _) => Some(dir.clone()),
            (None, Some(dir)) => Some(PathBuf::from(dir)),
            (None, None) => None,
        };
        let plan = match plan {
            Some(zip) if zip.is_file() && zip.extension().is_some_and(|e| e == "zip") => {
                return Ok(Some(package::Hashed::for_zip_file(&zip)?));
            }
            Some(dir) => {
                if self.working_dir.is_some() && from_env.is_some() {
                    eprintln!("warning: --working-dir overrides the runtime env's working_dir");
                }
                let options = package_options(runtime_env)?;
                let plan = Plan::for_dir(&dir, &options)?;
                eprintln!("working dir {}: {} ignore file(s) applied", dir.display(), plan.ignore_files.len());
                plan
            }
            None => Plan::for_files(self.job_folder(artifacts)?),
        };
        for (path, size) in plan.large_files() {
            eprintln!("warning: {path} is large ({}); add it to .rayignore unless the job needs it", package::mib(size));
        }
        plan.check_size()?;
        let values: Vec<(&str, String)> = SECRET_ENV
            .iter()
            .copied()
            .chain(self.env_from_local.iter().map(String::as_str))
            .filter_map(|name| std::env::var(name).ok().filter(|v| v.len() >= 8).map(|v| (name, v)))
            .collect();
        let secrets: Vec<Secret<'_>> = values.iter().map(|(name, value)| Secret { name, value }).collect();
        Ok(Some(plan.hash(&secrets)?))
    }

    /// The rendered job script plus each `--include` file, by file name.
    fn job_folder(&self, artifacts: &Artifacts) -> anyhow::Result<Vec<(String, Vec<u8>, bool)>> {
        let script = &artifacts.job_script;
        let mut files = vec![(JOB_SCRIPT.to_owned(), script.contents.clone().into_bytes(), true)];
        for path in &self.include {
            let name =
                path.file_name().and_then(|n| n.to_str()).with_context(|| format!("--include {}: not a file name", path.display()))?;
            if files.iter().any(|(n, _, _)| n == name) {
                bail!("--include {}: the job folder already has a file named {name}", path.display());
            }
            let meta = std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
            if meta.is_dir() {
                bail!("--include {} is a directory: pass --working-dir to upload a folder", path.display());
            }
            use std::os::unix::fs::PermissionsExt as _;
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            files.push((name.to_owned(), bytes, meta.permissions().mode() & 0o111 != 0));
        }
        Ok(files)
    }

    /// Values of `--env-from-local` variables, read now and kept in memory only.
    fn env_from_local(&self) -> anyhow::Result<Vec<(String, String)>> {
        let mut values = Vec::new();
        for name in &self.env_from_local {
            let value = std::env::var(name).with_context(|| format!("--env-from-local {name}: {name} is not set in this environment"))?;
            eprintln!(
                "warning: {name} goes into the job's runtime env: Ray stores it and returns it to anyone who can reach the Jobs API; \
                 the Kubernetes Secret (see hf-token-secret.yaml) keeps it out"
            );
            values.push((name.clone(), value));
        }
        Ok(values)
    }
}

/// Ray's packaging switches, from the runtime env and the variables Ray itself reads.
fn package_options(runtime_env: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<package::Options> {
    let mut options = package::Options::default();
    if let Ok(defaults) = std::env::var("RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES") {
        options.default_excludes = defaults.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    }
    options.gitignore = std::env::var("RAY_RUNTIME_ENV_IGNORE_GITIGNORE").as_deref() != Ok("1");
    if let Some(excludes) = runtime_env.get("excludes") {
        let list = excludes.as_array().context("the runtime env's excludes must be a list of strings")?;
        for item in list {
            options.excludes.push(item.as_str().context("the runtime env's excludes must be a list of strings")?.to_owned());
        }
    }
    Ok(options)
}

/// `subprocess.list2cmdline`, as `ray job submit` joins the words after `--`.
fn list2cmdline(words: &[String]) -> String {
    let mut out = String::new();
    for word in words {
        if !out.is_empty() {
            out.push(' ');
        }
        let quote = word.is_empty() || word.contains([' ', '\t']);
        if quote {
            out.push('"');
        }
        let mut backslashes = 0;
        for c in word.chars() {
            match c {
                '\\' => backslashes += 1,
                '"' => {
                    out.push_str(&"\\".repeat(backslashes * 2 + 1));
                    out.push('"');
                    backslashes = 0;
                }
                _ => {
                    out.push_str(&"\\".repeat(backslashes));
                    out.push(c);
                    backslashes = 0;
                }
            }
        }
        out.push_str(&"\\".repeat(if quote { backslashes * 2 } else { backslashes }));
        if quote {
            out.push('"');
        }
    }
    out
}

/// Streams the job's log with state changes until it ends; Ctrl-C detaches.
async fn watch(client: &Client, id: &str) -> anyhow::Result<u8> {
    // Registered before anything else, so no Ctrl-C from here on kills the process.
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let started = Instant::now();
    let mut checkpoints = CheckpointLog::default();
    let mut stdout = std::io::stdout();
    let options = FollowOptions::default();
    let follow = gke_rl_ray::follow(client, id, &options, |event| match event {
        Event::Log(text) => {
            checkpoints.feed(text, started.elapsed().as_secs_f64());
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
        }
        Event::Reconnecting(reason) => eprintln!("log stream lost ({reason}); reconnecting"),
    });
    let job = {
        tokio::pin!(follow);
        let mut ticker = tokio::time::interval(Duration::from_secs(2));
        let mut last_status = None;
        loop {
            tokio::select! {
                result = &mut follow => break result?,
                _ = ticker.tick() => {
                    if let Ok(job) = client.job(id).await
                        && last_status != Some(job.status)
                        && !job.status.is_terminal()
                    {
                        eprintln!("job {id}: {}{}", job.status, job.message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default());
                        last_status = Some(job.status);
                    }
                }
                _ = interrupt.recv() => {
                    eprintln!("\ndetached from job {id}; it keeps running. Re-attach with:\n  cargo xtask logs {id} --follow --address {}", client.address());
                    return Ok(DETACHED);
                }
            }
        }
    };
    let report = checkpoints.report();
    if !report.is_empty() {
        eprint!("{report}");
    }
    Ok(finish(&job))
}

/// Prints the final state; the exit code for it.
fn finish(job: &JobDetails) -> u8 {
    let message = job.message.as_deref().unwrap_or_default();
    eprintln!("job {} {}: {message}", job.id(), job.status);
    u8::from(job.status != JobStatus::Succeeded)
}

/// The id given, else the most recently started submission.
async fn job_id(client: &Client, id: Option<String>) -> anyhow::Result<String> {
    if let Some(id) = id {
        return Ok(id);
    }
    let jobs = client.jobs().await?;
    let latest = jobs.iter().filter(|j| j.kind == "SUBMISSION").max_by_key(|j| j.start_time.unwrap_or(0));
    latest.map(|j| j.id().to_owned()).context("the cluster has no submitted jobs yet")
}

impl StatusArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        runtime()?.block_on(async {
            let (client, _forwarding) = self.connection.connect().await?;
            let id = job_id(&client, self.id).await?;
            let job = client.job(&id).await?;
            if self.json {
                println!("{}", serde_json::to_string_pretty(&redacted(&job))?);
            } else {
                println!("{}", describe(&job));
            }
            Ok(0)
        })
    }
}

impl LogsArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        runtime()?.block_on(async {
            let (client, _forwarding) = self.connection.connect().await?;
            let id = job_id(&client, self.id).await?;
            if self.follow {
                return watch(&client, &id).await;
            }
            print!("{}", client.logs(&id).await?);
            Ok(0)
        })
    }
}

impl StopArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        runtime()?.block_on(async {
            let (client, _forwarding) = self.connection.connect().await?;
            if !client.stop(&self.id).await? {
                let job = client.job(&self.id).await?;
                eprintln!("job {} was not running: {}", self.id, job.status);
                return Ok(0);
            }
            eprintln!("stop requested for job {}", self.id);
            if self.no_wait {
                return Ok(0);
            }
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let job = client.job(&self.id).await?;
                if job.status.is_terminal() {
                    eprintln!("job {} {}", self.id, job.status);
                    return Ok(0);
                }
                if Instant::now() > deadline {
                    bail!("job {} is still {} a minute after the stop request", self.id, job.status);
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    }
}

impl JobsArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        runtime()?.block_on(async {
            let (client, _forwarding) = self.connection.connect().await?;
            let jobs = client.jobs().await?;
            if self.json {
                let jobs: Vec<_> = jobs.iter().map(redacted).collect();
                println!("{}", serde_json::to_string_pretty(&jobs)?);
                return Ok(0);
            }
            println!("{:<28} {:<10} {:<20} {:>9}  ENTRYPOINT", "ID", "STATUS", "STARTED (UTC)", "DURATION");
            for job in &jobs {
                let entrypoint: String = job.entrypoint.chars().take(60).collect();
                println!("{:<28} {:<10} {:<20} {:>9}  {entrypoint}", job.id(), job.status.to_string(), started(job), duration(job));
            }
            Ok(0)
        })
    }
}

/// Several lines about one job, for people.
fn describe(job: &JobDetails) -> String {
    let mut out = format!("{}  {}", job.id(), job.status);
    if let Some(message) = &job.message {
        out.push_str(&format!("  {message}"));
    }
    out.push_str(&format!("\n  entrypoint: {}\n  started:    {} UTC, ran {}", job.entrypoint, started(job), duration(job)));
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

/// How long the job ran (or has run so far).
fn duration(job: &JobDetails) -> String {
    let Some(start) = job.start_time.filter(|ms| *ms > 0) else { return "-".into() };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let end = job.end_time.filter(|ms| *ms > 0).unwrap_or(now);
    let secs = end.saturating_sub(start) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// The job as JSON with the values of secret-looking env vars replaced: the API returns
/// every env var to anyone, but gke-rl's output need not repeat them.
fn redacted(job: &JobDetails) -> serde_json::Value {
    let mut value = serde_json::to_value(job).unwrap_or_default();
    if let Some(env_vars) = value.pointer_mut("/runtime_env/env_vars").and_then(serde_json::Value::as_object_mut) {
        for (name, value) in env_vars.iter_mut() {
            let upper = name.to_ascii_uppercase();
            if ["TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL"].iter().any(|w| upper.contains(w)) {
                *value = "<redacted>".into();
            }
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entrypoints_are_joined_like_ray_job_submit() {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(list2cmdline(&words(&["bash", "run_nemo_rl.sh", "arg with space"])), r#"bash run_nemo_rl.sh "arg with space""#);
        assert_eq!(list2cmdline(&words(&["a\"b", "", "c\\"])), r#"a\"b "" c\"#);
    }

    #[test]
    fn start_times_print_in_utc() {
        let job: JobDetails = serde_json::from_value(serde_json::json!({
            "type": "SUBMISSION", "job_id": null, "submission_id": "s", "status": "RUNNING", "entrypoint": "x",
            "message": null, "error_type": null, "start_time": 1_795_000_000_000u64, "end_time": null,
            "runtime_env": {"env_vars": {"HF_TOKEN": "hf_x", "HF_HOME": "/lustre"}}
        }))
        .unwrap();
        assert_eq!(started(&job), "2026-11-18 11:06:40"); // Python: datetime.utcfromtimestamp(1795000000)
        let json = redacted(&job);
        assert_eq!(json["runtime_env"]["env_vars"]["HF_TOKEN"], "<redacted>");
        assert_eq!(json["runtime_env"]["env_vars"]["HF_HOME"], "/lustre");
    }
}
