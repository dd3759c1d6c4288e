//! Jobs on the Ray cluster: submit (package, check, upload, submit), follow to the end, status,
//! logs, stop and the list. Secrets are the model's: their values are scanned for in every
//! upload and redacted from job details.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gke_rl::{ArtifactKind, Artifacts, Deployment, Severity, lifecycle};
use gke_rl_in_cluster::records::Records;
use gke_rl_in_cluster::run_log::RunLog;
use gke_rl_ray::package::{Hashed, Options as PackageOptions, Plan, Secret};
use gke_rl_ray::{Client, Error as RayError, FollowOptions, JobDetails, JobStatus, SubmitRequest};
use gke_rl_validate::{SourceFile, count};

use gke_rl_kube::{RayJobState, Readiness};

use crate::env::Armed;
use crate::events::{JobEvent, Progress};
use crate::head::Head;
use crate::{CommonError, Env, JobError};

/// What to submit. Without a working dir, the job folder holds the rendered job script and
/// the `include` files.
#[derive(Clone, Debug, Default)]
pub struct SubmitOptions {
    /// A folder to upload (its `.gitignore`/`.rayignore` apply), or a `.zip` uploaded as it is.
    pub working_dir: Option<PathBuf>,
    /// Files added to the job folder.
    pub include: Vec<PathBuf>,
    /// A runtime env to use instead of the rendered one: its name, for messages, and its text
    /// (JSON or YAML).
    pub runtime_env: Option<(String, String)>,
    /// The submission id [default: one in Ray's format].
    pub submission_id: Option<String>,
    /// Variables passed from this environment into the job's runtime env.
    pub env_from_local: Vec<String>,
    /// Job metadata.
    pub metadata: BTreeMap<String, String>,
    /// CPUs reserved for the entrypoint.
    pub entrypoint_num_cpus: Option<f64>,
    /// GPUs reserved for the entrypoint.
    pub entrypoint_num_gpus: Option<f64>,
    /// Memory reserved for the entrypoint, in bytes.
    pub entrypoint_memory: Option<u64>,
    /// Custom resources for the entrypoint.
    pub entrypoint_resources: Option<BTreeMap<String, f64>>,
    /// Node labels the entrypoint must run on (Ray 2.54+).
    pub entrypoint_label_selector: BTreeMap<String, String>,
    /// The user's command, as words, joined as `ray job submit` joins them [default: `bash
    /// run_nemo_rl.sh`].
    pub entrypoint: Vec<String>,
    /// gke-rl's own program and its arguments, each passed to the job's shell as one word
    /// (quoted for POSIX sh, so no value of the user's is read by the shell): the command
    /// instead of `entrypoint`, when not empty.
    pub program: Vec<String>,
    /// Run it under the in-cluster supervisor, which recovers it from lost nodes.
    pub supervise: Option<Supervise>,
    /// Upload what symlinks out of the working dir point at, as Ray does, instead of refusing.
    pub follow_links_out: bool,
    /// Upload credential files (`.ssh/`, `.npmrc`, ...), as Ray does, instead of leaving them out.
    pub with_credential_files: bool,
}

/// A job checked and packaged, ready to go to a cluster.
pub struct Prepared {
    request: SubmitRequest,
    package: Option<Hashed>,
    supervise: Option<Supervise>,
    /// The variables whose values the supervisor never writes down.
    secret_names: Vec<String>,
}

/// Everything `submit` checks before it connects: the runtime env validated, the package
/// built and scanned for the values of the model's secret variables (and the
/// `env_from_local` ones). Refusals happen here, before anything is sent.
pub fn prepare(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &SubmitOptions,
    env: &Env,
    progress: &dyn Progress,
) -> Result<Prepared, JobError> {
    if options.metadata.contains_key(HELPER_KEY) {
        return Err(JobError::ReservedMetadata(HELPER_KEY));
    }
    let mut runtime_env = runtime_env(artifacts, options, progress)?;
    let package = package(deployment, artifacts, options, &runtime_env, env, progress)?;
    let mut env_vars = Vec::new();
    for name in &options.env_from_local {
        if name == gke_rl::auth::TOKEN_VARIABLE {
            return Err(JobError::RayTokenToJob);
        }
        let value = env.runner.var(name).ok_or_else(|| JobError::EnvFromLocalUnset(name.clone()))?;
        progress.job(JobEvent::EnvFromLocal { name });
        env_vars.push((name.clone(), value));
    }
    if !env_vars.is_empty() {
        let name = options.runtime_env.as_ref().map_or(artifacts.runtime_env.name, |(name, _)| name.as_str());
        let map = runtime_env.entry("env_vars").or_insert_with(|| serde_json::json!({}));
        let map = map
            .as_object_mut()
            .ok_or_else(|| JobError::RuntimeEnvShape { name: name.to_owned(), problem: "its env_vars must be a mapping".into() })?;
        for (name, value) in env_vars {
            map.insert(name, value.into());
        }
    }
    if let Some((id, problem)) =
        options.submission_id.as_deref().and_then(|id| Some((id, gke_rl_in_cluster::supervisor::run_id_problem(id)?)))
    {
        return Err(JobError::RunId { id: id.to_owned(), problem });
    }
    let entrypoint = match (&options.program[..], &options.entrypoint[..]) {
        ([], []) => gke_rl::render::entrypoint(),
        ([], words) => gke_rl_ray::entrypoint(words),
        (program, _) => gke_rl::quote::command(program),
    };
    let request = SubmitRequest {
        entrypoint,
        submission_id: Some(options.submission_id.clone().unwrap_or_else(gke_rl_ray::new_submission_id)),
        runtime_env: Some(runtime_env),
        metadata: (!options.metadata.is_empty()).then(|| options.metadata.clone()),
        entrypoint_num_cpus: options.entrypoint_num_cpus,
        entrypoint_num_gpus: options.entrypoint_num_gpus,
        entrypoint_memory: options.entrypoint_memory,
        entrypoint_resources: options.entrypoint_resources.clone(),
        entrypoint_label_selector: (!options.entrypoint_label_selector.is_empty()).then(|| options.entrypoint_label_selector.clone()),
    };
    let secret_names = lifecycle::secret_variables(deployment).into_iter().chain(options.env_from_local.iter().cloned()).collect();
    Ok(Prepared { request, package, supervise: options.supervise.clone(), secret_names })
}

/// The metadata key that marks the jobs gke-rl submits for itself (checks, listings,
/// conversions); its value says which. `status` and `logs` without an id pass over them.
const HELPER_KEY: &str = "gke-rl-helper";

/// A new submission id for gke-rl's own job `what`, e.g. `gke-rl-checkpoints-…`.
pub(crate) fn helper_id(what: &str) -> String {
    format!("gke-rl-{what}-{}", gke_rl_ray::new_submission_id().trim_start_matches("raysubmit_"))
}

/// The metadata that marks gke-rl's own job `what`.
fn helper_metadata(what: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(HELPER_KEY.to_owned(), what.to_owned())])
}

/// `prepared` marked as gke-rl's own job `what`.
pub(crate) fn mark_helper(mut prepared: Prepared, what: &str) -> Prepared {
    prepared.request.metadata.get_or_insert_with(BTreeMap::new).extend(helper_metadata(what));
    prepared
}

fn is_helper(job: &JobDetails) -> bool {
    job.metadata.as_ref().is_some_and(|metadata| metadata.contains_key(HELPER_KEY))
}

/// A job of gke-rl's own program `what`, whose files (`name`, bytes, executable) are gke-rl's
/// and hold nothing of the user's (none: no working dir): its package, an empty runtime env,
/// and its entrypoint, a shell line whose every value is quoted for POSIX sh.
pub(crate) fn own_job(what: &str, files: Vec<(String, Vec<u8>, bool)>, entrypoint: String) -> Result<Prepared, JobError> {
    let package = if files.is_empty() { None } else { Some(Plan::for_files(files).hash(&[])?) };
    let request = SubmitRequest {
        entrypoint,
        submission_id: Some(helper_id(what)),
        runtime_env: Some(serde_json::Map::new()),
        metadata: Some(helper_metadata(what)),
        entrypoint_num_cpus: None,
        entrypoint_num_gpus: None,
        entrypoint_memory: None,
        entrypoint_resources: None,
        entrypoint_label_selector: None,
    };
    Ok(Prepared { request, package, supervise: None, secret_names: Vec::new() })
}

/// Waits, at most `within`, until the job `id` has ended; `None` when `interrupt` came first
/// (the job is stopped then, and waited for a moment).
pub(crate) async fn ended(
    client: &Client,
    id: &str,
    within: Duration,
    env: &Env,
    interrupt: &mut Armed,
) -> Result<Option<JobDetails>, JobError> {
    let deadline = env.clock.now() + within;
    loop {
        let job = client.job(id).await?;
        if job.status.is_terminal() {
            return Ok(Some(job));
        }
        if env.clock.now() >= deadline {
            let _ = client.stop(id).await;
            return Err(JobError::JobTimedOut { id: id.to_owned(), after: within });
        }
        tokio::select! {
            () = tokio::time::sleep(env.poll.clamp(Duration::from_millis(100), Duration::from_secs(2))) => {}
            () = interrupt.wait() => {
                let _ = client.stop(id).await;
                return Ok(None);
            }
        }
    }
}

impl Prepared {
    /// The id the job will be submitted as.
    pub fn submission_id(&self) -> &str {
        self.request.submission_id.as_deref().unwrap_or_default()
    }

    /// The command line the job's shell runs.
    pub fn entrypoint(&self) -> &str {
        &self.request.entrypoint
    }

    /// Records the RayCluster the supervised job runs on (`gke_rl_in_cluster::supervisor::cluster_id_of`),
    /// where it is known only once the cluster is (a RayJob's).
    pub(crate) fn supervise_on(&mut self, cluster: &str) {
        if let Some(supervise) = &mut self.supervise {
            cluster.clone_into(&mut supervise.cluster);
        }
    }
}

/// Uploads the package unless the cluster has it, and submits; the submission id.
pub async fn submit(client: &Client, prepared: Prepared, progress: &dyn Progress) -> Result<String, JobError> {
    Ok(submit_supervised(client, prepared, progress).await?.id)
}

/// A job on the cluster.
pub struct Submitted {
    /// Its submission id, which names the run.
    pub id: String,
}

/// How the in-cluster supervisor recovers a run (`gke_rl_in_cluster::supervisor`).
#[derive(Clone, Debug)]
pub struct Supervise {
    /// Restarts after lost nodes, at most; 0 records the failure and restarts nothing.
    pub max_restarts: u32,
    /// Wall time restarts may lose in all, if bounded.
    pub max_lost: Option<Duration>,
    /// How long to wait for the cluster to be whole before each restart.
    pub wait: Duration,
    /// The folder of runs on the cluster's shared file system.
    pub runs_dir: String,
    /// The RayCluster whose keeper may resubmit the run (`gke_rl_in_cluster::supervisor::cluster_id`).
    pub cluster: String,
    /// NeMo-RL's checkpoint dir, whose half-written checkpoints a restart removes.
    pub checkpoints: String,
}

impl Supervise {
    /// The deployment's own: its `job.max_restarts` (by default 3 on Spot, 0 on a reservation),
    /// its runs dir on Lustre, its RayCluster and checkpoint dir, with `wait` before each restart.
    pub fn of(deployment: &Deployment, wait: Duration) -> Self {
        Supervise {
            max_restarts: deployment.max_restarts(),
            max_lost: None,
            wait,
            runs_dir: gke_rl_in_cluster::supervisor::runs_dir(deployment),
            cluster: gke_rl_in_cluster::supervisor::cluster_id(deployment),
            checkpoints: deployment.job.checkpointing.dir.to_string(),
        }
    }
}

/// [`submit`]: when the job is supervised, the supervisor's package is uploaded too and the
/// entrypoint becomes the supervisor running the command, with the cluster's size as Ray counts
/// it now.
pub async fn submit_supervised(client: &Client, prepared: Prepared, progress: &dyn Progress) -> Result<Submitted, JobError> {
    let server = client.version().await?;
    progress.job(JobEvent::Connected { ray_version: &server.ray_version, address: client.address(), tested: server.is_tested() });
    let mut request = prepared.request;
    if let Some(hashed) = &prepared.package {
        upload_unless_present(client, hashed, progress).await?;
        request.runtime_env.get_or_insert_with(serde_json::Map::new).insert("working_dir".into(), hashed.uri.clone().into());
    }
    if let Some(supervise) = prepared.supervise {
        let nodes = client.alive_nodes().await?;
        let program = gke_rl_in_cluster::supervisor::program().into_bytes();
        let package = Plan::for_files(vec![(format!("{}.py", gke_rl_in_cluster::supervisor::MODULE), program, false)]).hash(&[])?;
        upload_unless_present(client, &package, progress).await?;
        let runtime_env = request.runtime_env.get_or_insert_with(serde_json::Map::new);
        let modules = runtime_env.entry("py_modules").or_insert_with(|| serde_json::json!([]));
        let modules = modules
            .as_array_mut()
            .ok_or_else(|| JobError::RuntimeEnvShape { name: "the runtime env".into(), problem: "its py_modules must be a list".into() })?;
        modules.push(package.uri.clone().into());
        let supervision = gke_rl_in_cluster::supervisor::Supervision {
            run: request.submission_id.clone().unwrap_or_default(),
            runs_dir: supervise.runs_dir,
            cluster: supervise.cluster,
            nodes,
            max_restarts: supervise.max_restarts,
            max_lost: supervise.max_lost,
            wait: supervise.wait,
            checkpoints: supervise.checkpoints,
            secrets: prepared.secret_names,
        };
        request.entrypoint = supervision.entrypoint(&request.entrypoint);
    }
    let mut said = false;
    let id = client
        .submit(&request, &server, &mut |error| {
            // Once: the head asks to be asked again, and is, within a bound.
            if !std::mem::replace(&mut said, true) {
                progress.job(JobEvent::AgentNotReady { error, within: gke_rl_ray::AGENT_WAIT });
            }
        })
        .await?;
    progress.job(JobEvent::Submitted { id: &id });
    Ok(Submitted { id })
}

/// Uploads the package unless the cluster has it.
async fn upload_unless_present(client: &Client, hashed: &Hashed, progress: &dyn Progress) -> Result<(), JobError> {
    let files = hashed.file_count();
    if client.package_exists(&hashed.uri).await? {
        progress.job(JobEvent::PackageReused { uri: &hashed.uri, files });
    } else {
        let package = hashed.zip()?;
        if let Some(token) = client.token().filter(|t| package.holds(t.reveal())) {
            return Err(JobError::RayTokenInPackage { from: token.source().to_string() });
        }
        progress.job(JobEvent::Uploading { uri: &hashed.uri, files, bytes: package.zip.len() as u64 });
        client.upload_package(&hashed.uri, package.zip).await?;
    }
    Ok(())
}

/// A supervised run followed to its end.
#[derive(Debug)]
pub struct Observed {
    /// How following its newest submission ended.
    pub followed: Followed,
    /// What its supervisors recorded: restarts, and how it ended.
    pub records: Records,
}

/// Follows a run as an observer: its log and state, through the supervisor's restarts (the Ray
/// job stays RUNNING), and, when its submission disappears with a restarted head or ends
/// without the supervisor's final record, into the keeper's resubmission (`<id>-rN`), which it
/// waits `wait` for; with no `wait` (no keeper runs, as beside a RayJob), such a run is lost. It
/// never submits anything.
pub async fn follow_run(
    client: &Client,
    id: &str,
    wait: Option<Duration>,
    env: &Env,
    progress: &dyn Progress,
) -> Result<Observed, JobError> {
    // Armed once for the whole run: a signal between two submissions is heard too.
    let mut interrupt = env.interrupt.arm()?;
    let mut current = latest_in_chain(client, id).await?;
    let mut records = Records::default();
    loop {
        let mut log = RunLog::default();
        let detached = |interrupt: &Armed| Followed::Detached { signal: interrupt.signal().unwrap_or(2) };
        let (gone, lost) = match follow_logging(client, &current, env, progress, &mut log, &mut records, &mut interrupt).await {
            Ok(None) => return Ok(Observed { followed: detached(&interrupt), records }),
            // A supervisor that recorded nothing refused before the run began (no runs folder):
            // there is nothing for the keeper to resubmit.
            Ok(Some(job)) if records.ended().is_some() || !records.supervised() || job.status != JobStatus::Failed => {
                return Ok(Observed { followed: Followed::Finished { job: Box::new(job), log: Box::new(log) }, records });
            }
            Ok(Some(job)) => (format!("job {current} ended {} without its supervisor's record", job.status), None),
            Err(JobError::Ray(lost @ RayError::JobNotFound { .. })) => (format!("job {current} is gone ({lost})"), None),
            Err(JobError::Ray(lost @ (RayError::Unreachable { .. } | RayError::Timeout { .. }))) => {
                (format!("job {current} is gone ({lost})"), Some(JobError::Ray(lost)))
            }
            Err(e) => return Err(e),
        };
        let Some(wait) = wait else {
            // A head out of reach says nothing of the run: only a job gone or failed is lost.
            return Err(match lost {
                Some(unreached) => unreached,
                None => JobError::RunLost { id: current, why: gone },
            });
        };
        progress.job(JobEvent::AwaitingKeeper { id: &current, why: &gone, wait });
        let resubmitted = tokio::select! {
            resubmitted = await_resubmission(client, id, &current, wait, env) => resubmitted,
            () = interrupt.wait() => return Ok(Observed { followed: detached(&interrupt), records }),
        };
        current = resubmitted.ok_or_else(|| JobError::NotResubmitted { id: current.clone(), why: gone, after: wait })?;
        progress.job(JobEvent::Resubmitted { id: &current });
    }
}

/// The keeper's resubmission after `current` in `id`'s chain, once the head answers; `None`
/// when `within` passes first.
async fn await_resubmission(client: &Client, id: &str, current: &str, within: Duration, env: &Env) -> Option<String> {
    let deadline = env.clock.now() + within;
    loop {
        if let Ok(latest) = latest_in_chain(client, id).await
            && restart_number(id, &latest) > restart_number(id, current)
        {
            return Some(latest);
        }
        if env.clock.now() >= deadline {
            return None;
        }
        tokio::time::sleep(env.poll.clamp(Duration::from_millis(100), Duration::from_secs(5))).await;
    }
}

/// The submissions of the run `id` names (its first, or any restart), oldest first: the first
/// and the keeper's resubmissions (`<run>-r1`, `-r2`…) that the cluster knows, each a job whose
/// supervisor's entrypoint names the run (`gke_rl_in_cluster::supervisor::run_of`), never a job that only
/// shares a prefix. A head that restarted forgot the earlier ones, so there may be gaps.
pub async fn chain(client: &Client, id: &str) -> Result<Vec<String>, JobError> {
    let jobs = client.jobs().await?;
    // The run the named job supervises: its first submission, whichever of them was named; a
    // first submission a restarted head forgot names its run itself.
    let run = jobs
        .iter()
        .find(|job| job.id() == id)
        .and_then(|job| gke_rl_in_cluster::supervisor::run_of(&job.entrypoint))
        .unwrap_or_else(|| id.to_owned());
    let mut members: Vec<(u32, String)> = jobs
        .iter()
        .filter(|job| gke_rl_in_cluster::supervisor::run_of(&job.entrypoint).as_deref() == Some(run.as_str()))
        .filter_map(|job| Some((restart_number(&run, job.id())?, job.id().to_owned())))
        .collect();
    members.sort();
    members.dedup();
    Ok(if members.is_empty() { vec![id.to_owned()] } else { members.into_iter().map(|(_, id)| id).collect() })
}

/// 0 for `first` itself, N for its Nth resubmission, else `None`.
fn restart_number(first: &str, id: &str) -> Option<u32> {
    if id == first {
        return Some(0);
    }
    id.strip_prefix(first)?.strip_prefix(gke_rl_in_cluster::recovery::RESTART_SUFFIX)?.parse().ok()
}

/// The newest submission of `id`'s chain of restarts.
pub async fn latest_in_chain(client: &Client, id: &str) -> Result<String, JobError> {
    Ok(chain(client, id).await?.pop().unwrap_or_else(|| id.to_owned()))
}

/// The runtime env to submit: the one given, else the render's; checked like `validate`.
fn runtime_env(
    artifacts: &Artifacts,
    options: &SubmitOptions,
    progress: &dyn Progress,
) -> Result<serde_json::Map<String, serde_json::Value>, JobError> {
    let (name, text) = match &options.runtime_env {
        Some((name, text)) => (name.as_str(), text.as_str()),
        None => (artifacts.runtime_env.name, artifacts.runtime_env.contents.as_str()),
    };
    let findings = gke_rl_validate::validate(&[SourceFile { name, text }]);
    for finding in &findings {
        progress.job(JobEvent::RuntimeEnvFinding { text, finding });
    }
    if count(&findings, Severity::Error) > 0 {
        return Err(JobError::RuntimeEnv { name: name.to_owned(), findings });
    }
    let shape = |problem: &str| JobError::RuntimeEnvShape { name: name.to_owned(), problem: problem.to_owned() };
    let value = gke_rl_yaml::Node::try_parse(text).map_err(|e| shape(&e.to_string()))?.to_json();
    match value {
        serde_json::Value::Object(map) => Ok(map),
        serde_json::Value::Null => Ok(serde_json::Map::new()),
        _ => Err(shape("a runtime env must be a mapping")),
    }
}

/// The package to upload, built and checked, or `None` when the runtime env names a remote
/// `working_dir` already.
fn package(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &SubmitOptions,
    runtime_env: &serde_json::Map<String, serde_json::Value>,
    env: &Env,
    progress: &dyn Progress,
) -> Result<Option<Hashed>, JobError> {
    let from_env = runtime_env.get("working_dir").and_then(|v| v.as_str());
    let dir = match (&options.working_dir, from_env) {
        (None, Some(uri)) if uri.contains("://") => return Ok(None),
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(dir)) => Some(PathBuf::from(dir)),
        (None, None) => None,
    };
    // The model's secret variables, whatever the config names them, and the ones passed in.
    let names: Vec<String> = lifecycle::secret_variables(deployment).into_iter().chain(options.env_from_local.iter().cloned()).collect();
    let mut values: Vec<(&str, String)> =
        names.iter().filter_map(|name| env.runner.var(name).filter(|v| v.len() >= 8).map(|v| (name.as_str(), v))).collect();
    // The Ray token wherever Ray's CLI finds it (the cluster's own, from its Secret, is
    // checked at the upload: it is read after connecting).
    let variable = |name: &str| env.runner.var(name).map(std::ffi::OsString::from);
    let token = gke_rl_ray::Token::discover(variable, env.runner.var("HOME").map(PathBuf::from).as_deref())?;
    if let Some(token) = token.filter(|t| t.reveal().len() >= 8) {
        values.push((gke_rl::auth::TOKEN_VARIABLE, token.reveal().to_owned()));
    }
    let secrets: Vec<Secret<'_>> = values.iter().map(|(name, value)| Secret { name, value }).collect();
    let plan = match dir {
        Some(zip) if zip.is_file() && zip.extension().is_some_and(|e| e == "zip") => {
            return Ok(Some(Hashed::for_zip_file(&zip, &secrets)?));
        }
        Some(dir) => {
            if options.working_dir.is_some() && from_env.is_some() {
                progress.job(JobEvent::WorkingDirOverridden);
            }
            let package_options = PackageOptions {
                follow_links_out: options.follow_links_out,
                credential_files: options.with_credential_files,
                ..PackageOptions::for_runtime_env(runtime_env, |name| env.runner.var(name))?
            };
            let plan = Plan::for_dir(&dir, &package_options, &secrets)?;
            progress.job(JobEvent::IgnoreFiles { dir: &dir.display().to_string(), count: plan.ignore_files.len() });
            if !plan.credentials_left_out.is_empty() {
                progress.job(JobEvent::CredentialFilesLeftOut { paths: &plan.credentials_left_out });
            }
            plan
        }
        None => {
            let plan = Plan::for_files(job_folder(artifacts, &options.include)?);
            // The job folder's files are the job script and `--include`s: a secret is in one of those.
            return match plan.hash(&secrets) {
                Err(gke_rl_ray::Error::SecretInFile { path, name }) if path != ArtifactKind::JobScript.file() => {
                    let path = options.include.iter().find(|p| p.file_name().is_some_and(|n| *n == *path)).cloned().unwrap_or(path.into());
                    let problem = format!("contains the value of {name}; a secret must never be uploaded: leave it out of --include");
                    Err(JobError::Include { path, problem })
                }
                result => Ok(Some(result?)),
            };
        }
    };
    for (path, bytes) in plan.large_files() {
        progress.job(JobEvent::LargeFile { path: &path, bytes });
    }
    plan.check_size()?;
    Ok(Some(plan.hash(&secrets)?))
}

/// The rendered job script plus each included file, by file name.
fn job_folder(artifacts: &Artifacts, include: &[PathBuf]) -> Result<Vec<(String, Vec<u8>, bool)>, JobError> {
    let script = &artifacts.job_script;
    let mut files = vec![(ArtifactKind::JobScript.file().to_owned(), script.contents.clone().into_bytes(), true)];
    for path in include {
        let problem = |problem: String| JobError::Include { path: path.clone(), problem };
        let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| problem("not a file name".into()))?;
        if files.iter().any(|(n, _, _)| n == name) {
            return Err(problem(format!("the job folder already has a file named {name}")));
        }
        let meta = std::fs::metadata(path).map_err(|source| CommonError::Read { path: path.clone(), source })?;
        if meta.is_dir() {
            return Err(problem("is a directory: upload a folder as the working dir".into()));
        }
        if !meta.is_file() {
            return Err(problem("is not a regular file (a pipe, socket or device)".into()));
        }
        use std::os::unix::fs::PermissionsExt as _;
        let bytes = read_bounded(path)?;
        files.push((name.to_owned(), bytes, meta.permissions().mode() & 0o111 != 0));
    }
    Ok(files)
}

/// A file for the job folder, at most the upload limit.
fn read_bounded(path: &Path) -> Result<Vec<u8>, JobError> {
    use std::io::Read as _;
    let read = |source| CommonError::Read { path: path.to_owned(), source };
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(read)?.take(gke_rl_ray::package::MAX_UPLOAD_BYTES + 1).read_to_end(&mut bytes).map_err(read)?;
    Ok(bytes)
}

/// How following a job ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Followed {
    /// The job ended.
    Finished {
        /// Its final details.
        job: Box<JobDetails>,
        /// What its log said: the steps and the checkpoint saves.
        log: Box<RunLog>,
    },
    /// Interrupted (Ctrl-C, SIGTERM, SIGHUP): the job keeps running.
    Detached {
        /// The signal's number.
        signal: i32,
    },
}

/// Streams the job's log and state changes until it ends; the interrupt detaches.
pub async fn follow(client: &Client, id: &str, env: &Env, progress: &dyn Progress) -> Result<Followed, JobError> {
    // Armed before anything else, so no interrupt from here on ends the process.
    let mut interrupt = env.interrupt.arm()?;
    let mut log = RunLog::default();
    Ok(match follow_logging(client, id, env, progress, &mut log, &mut Records::default(), &mut interrupt).await? {
        Some(job) => Followed::Finished { job: Box::new(job), log: Box::new(log) },
        None => Followed::Detached { signal: interrupt.signal().unwrap_or(2) },
    })
}

/// `chunk` cut before each line that holds a NeMo-RL step header.
fn by_step(chunk: &str) -> impl Iterator<Item = &str> {
    let mut rest = chunk;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        // The next header after the first line: the piece runs up to the start of its line.
        let cut = rest
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .find(|&start| {
                start < rest.len() && rest[start..].split('\n').next().is_some_and(|l| l.contains(gke_rl_in_cluster::run_log::STEP_HEADER))
            })
            .unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// [`follow`], reading the log into `log`, which outlives a head that goes away
/// mid-job; the job's final details, or `None` when detached.
async fn follow_logging(
    client: &Client,
    id: &str,
    env: &Env,
    progress: &dyn Progress,
    log: &mut RunLog,
    records: &mut Records,
    interrupt: &mut Armed,
) -> Result<Option<JobDetails>, JobError> {
    let started = env.clock.now();
    // Progress is worked out again when a step finishes or a save is timed, not for every
    // figure: following a long finished job replays thousands of steps at once.
    let (mut next, mut shown) = (0, log.progress_mark());
    let options = FollowOptions::default();
    let follow = gke_rl_ray::follow(client, id, &options, |event| match event {
        gke_rl_ray::Event::Log(chunk) => {
            // Step by step: a step's progress is said before the next step's output, which a
            // front end showing both in one stream puts between them.
            for text in by_step(chunk) {
                log.feed(text, Some((env.clock.now() - started).as_secs_f64()));
                records.feed(text);
                progress.job(JobEvent::Log(text));
                if log.progress_mark() != shown {
                    shown = log.progress_mark();
                    progress.job(JobEvent::RunProgress(&gke_rl_in_cluster::run_report::progress(log, records)));
                }
            }
            // Only the newest save gets its path, so the saves before `next` are done with.
            let saves = log.saves();
            while let Some(save) = saves.get(next) {
                match &save.path {
                    Some(_) => progress.job(JobEvent::CheckpointSaved(save)),
                    None if next + 1 == saves.len() => break,
                    None => {}
                }
                next += 1;
            }
        }
        gke_rl_ray::Event::Reconnecting(reason) => progress.job(JobEvent::Reconnecting(reason)),
        gke_rl_ray::Event::Unread(why) => progress.job(JobEvent::LogUnread(why)),
    });
    let job = {
        tokio::pin!(follow);
        let mut ticker = tokio::time::interval(Duration::from_secs(2).min(env.poll.max(Duration::from_millis(100))));
        let mut last_status = None;
        loop {
            tokio::select! {
                result = &mut follow => break result?,
                _ = ticker.tick() => {
                    if let Ok(job) = client.job(id).await
                        && last_status != Some(job.status)
                        && !job.status.is_terminal()
                    {
                        progress.job(JobEvent::JobState { id, status: job.status, message: job.message.as_deref() });
                        last_status = Some(job.status);
                    }
                }
                () = interrupt.wait() => return Ok(None),
            }
        }
    };
    Ok(Some(job))
}

/// The newest submission of the chain of restarts of the id given, else the most recently
/// started submission that is not one of gke-rl's own jobs.
pub async fn job_id(client: &Client, id: Option<&str>) -> Result<String, JobError> {
    if let Some(id) = id {
        return latest_in_chain(client, id).await;
    }
    let jobs: Vec<JobDetails> = client.jobs().await?.into_iter().filter(|job| !is_helper(job)).collect();
    gke_rl_ray::latest_submission(&jobs).map(|j| j.id().to_owned()).ok_or(JobError::NoJobs)
}

/// How a stop ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Stopped {
    /// The job had ended already, in this state.
    NotRunning(JobStatus),
    /// The stop was requested and not waited for.
    Requested,
    /// The job ended, in this state.
    Ended(JobStatus),
    /// The RayJob was deleted: KubeRay stops its job, and its cluster goes with it.
    RayJobDeleted {
        /// Its state before.
        was: Box<gke_rl_kube::RayJobState>,
        /// Whether the stop waited until it was gone.
        waited: bool,
    },
}

/// Stops a running job; with `wait`, until it has ended (a minute at most).
pub async fn stop(client: &Client, id: &str, wait: bool, env: &Env, progress: &dyn Progress) -> Result<Stopped, JobError> {
    if !client.stop(id).await? {
        return Ok(Stopped::NotRunning(client.job(id).await?.status));
    }
    progress.job(JobEvent::StopRequested { id });
    if !wait {
        return Ok(Stopped::Requested);
    }
    let deadline = env.clock.now() + Duration::from_secs(60);
    loop {
        let job = client.job(id).await?;
        if job.status.is_terminal() {
            return Ok(Stopped::Ended(job.status));
        }
        if env.clock.now() > deadline {
            return Err(JobError::StillRunning { id: id.to_owned(), status: job.status });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The job as JSON with secrets replaced: the local values of `deployment`'s secret
/// variables wherever they appear, values held by secret names (the config's own among them),
/// and tokens by their shape in any string (metadata, entrypoint, messages). The API returns
/// every env var to anyone; gke-rl's output need not repeat them.
pub fn redacted(job: &JobDetails, deployment: &Deployment, token: Option<&gke_rl_ray::Token>, env: &Env) -> serde_json::Value {
    let mut value = serde_json::to_value(job).unwrap_or_default();
    let names = lifecycle::secret_variables(deployment);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    // Shorter values would redact ordinary words.
    let mut local: Vec<String> = names.iter().filter_map(|name| env.var(name)).filter(|v| v.len() >= 8).collect();
    local.extend(token.map(|t| t.reveal().to_owned()));
    redact_json(&mut value, "", &names, &local);
    value
}

fn redact_json(value: &mut serde_json::Value, key: &str, names: &[&str], local: &[String]) {
    match value {
        serde_json::Value::Object(entries) => entries.iter_mut().for_each(|(key, value)| redact_json(value, key, names, local)),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|item| redact_json(item, key, names, local)),
        serde_json::Value::String(text) => {
            // Tokens by shape are cut out of their string (a URL keeps its host); the rest of a
            // secret name's value goes whole.
            let mut shown = gke_rl::secrets::redact(text).into_owned();
            if shown == *text && gke_rl::secrets::secret_value(key, text, names).is_some() {
                shown = gke_rl::secrets::REDACTED.into();
            }
            for secret in local {
                shown = shown.replace(secret.as_str(), gke_rl::secrets::REDACTED);
            }
            *text = shown;
        }
        _ => {}
    }
}

/// A job, its run and its cluster: what `status` tells in either job mode.
pub struct JobReport {
    /// The newest submission of the chain.
    pub job: JobDetails,
    /// The earlier submissions the head still knows, oldest first.
    pub earlier: Vec<JobDetails>,
    /// What the run's supervisors recorded in its log.
    pub records: Records,
    /// Why the log (and so the records) could not be read, if it could not.
    pub records_unread: Option<JobError>,
    /// The RayCluster's name and pods, when the head is reached through Kubernetes.
    pub cluster: Option<(String, Result<Readiness, gke_rl_kube::Error>)>,
    /// In `rayjob` mode, the RayJob's name and state.
    pub ray_job: Option<(String, RayJobState)>,
    /// The job as JSON, secrets redacted.
    pub redacted: serde_json::Value,
}

/// The report of the job `id` names (its newest restart), else of the latest submission, on
/// `head`; `ray_job` is the RayJob that runs it, in `rayjob` mode.
pub(crate) async fn report(
    deployment: &Deployment,
    head: &Head,
    id: Option<&str>,
    ray_job: Option<(String, RayJobState)>,
    env: &Env,
) -> Result<JobReport, JobError> {
    let client = &head.client;
    let chain = chain_of(client, id).await?;
    let (latest, earlier_ids) = chain.split_last().ok_or(JobError::NoJobs)?;
    let job = client.job(latest).await?;
    let mut earlier = Vec::new();
    for id in earlier_ids {
        // A head that restarted forgot the earlier submissions.
        earlier.extend(client.job(id).await.ok());
    }
    // The records, read as the log streams: a log of any size, in bounded memory.
    let mut records = Records::default();
    let supervised = gke_rl_in_cluster::supervisor::run_of(&job.entrypoint).is_some();
    let records_unread = match gke_rl_ray::read_log(client, latest, LOG_QUIET, LOG_WITHIN, |text| records.feed(text)).await {
        // A supervisor that ran prints its records at once; one not started yet has none.
        Ok(gke_rl_ray::LogRead::Empty) if supervised && job.status.is_terminal() => Some(JobError::EmptyLog { id: latest.clone() }),
        Ok(_) => None,
        Err(e) => Some(JobError::from(e)),
    };
    records.finish();
    let cluster = match head.clusters() {
        Some((clusters, name)) => Some(readiness(deployment, clusters, name).await),
        None => None,
    };
    let redacted = redacted(&job, deployment, client.token(), env);
    Ok(JobReport { job, earlier, records, records_unread, cluster, ray_job, redacted })
}

/// The RayCluster `name`'s pods, as a report shows them: with their name, and what kept them
/// from being read.
pub(crate) async fn readiness(
    deployment: &Deployment,
    clusters: &gke_rl_kube::Namespaced,
    name: &str,
) -> (String, Result<Readiness, gke_rl_kube::Error>) {
    (name.to_owned(), clusters.readiness(name, deployment.topology.node_count.get()).await)
}

/// A running job's log is read until it has been quiet this long: what it had written.
pub(crate) const LOG_QUIET: Duration = Duration::from_secs(2);
/// A log is read for at most this long (a running job that never stops printing).
pub(crate) const LOG_WITHIN: Duration = Duration::from_secs(300);

/// The submissions of the job `id` names with its restarts, oldest first; without an id, the
/// most recently started submission alone.
pub(crate) async fn chain_of(client: &Client, id: Option<&str>) -> Result<Vec<String>, JobError> {
    Ok(match id {
        Some(id) => chain(client, id).await?,
        None => vec![job_id(client, None).await?],
    })
}

#[cfg(test)]
mod tests {
    use super::by_step;

    #[test]
    fn a_chunk_is_cut_before_each_step_header() {
        let header = |n| format!("========================= Step {n}/9 =========================\n");
        let chunk = format!("  • Total step time: 1.0s\n  • generation: 0.5s\n\n{}x\n\n{}y", header(2), header(3));
        let pieces: Vec<&str> = by_step(&chunk).collect();
        assert_eq!(
            pieces,
            ["  • Total step time: 1.0s\n  • generation: 0.5s\n\n", &format!("{}x\n\n", header(2)), &format!("{}y", header(3))]
        );
        assert_eq!(by_step(&header(1)).collect::<Vec<_>>(), [header(1).as_str()]);
        assert_eq!(by_step("").count(), 0);
    }
}
