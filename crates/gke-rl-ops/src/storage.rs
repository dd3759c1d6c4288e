//! The storage check on a running cluster: the job of [`gke_rl_in_cluster::storage`] submitted like any
//! job (same connection, same checks before upload), followed to its end, and its log judged
//! against the deployment's Lustre instance and run. Unlike the fabric check it never keeps
//! running unwatched: an interrupt stops the job, whose driver then removes what it wrote.

use std::io::Write as _;
use std::time::Duration;

use gke_rl::{Artifacts, Deployment};
use gke_rl_in_cluster::storage::{
    CHECK_SCRIPT_FILE, DEFAULT_MAX_NODE_BYTES, DEFAULT_MIN_FRACTION, Expectation, MEASURED_SAVE_FILE, MeasuredSave, Plan, Report, Verdict,
};
use gke_rl_ray::{Client, JobStatus};

use crate::events::Progress;
use crate::jobs::{self, Followed, SubmitOptions};
use crate::{CommonError, Env, JobError};

/// The most time beyond the job's own limit for it to start and report.
const FOLLOW_GRACE: Duration = Duration::from_secs(120);
/// How long a stopped check has to clean up and end: Ray's wait for its driver, and some.
const STOP_GRACE: Duration = Duration::from_secs(gke_rl_in_cluster::storage::STOP_WAIT_S + 30);
/// How often a stopped job is asked whether it has ended.
const STOP_POLL: Duration = Duration::from_millis(500);

/// How to run the check.
#[derive(Clone, Debug)]
pub struct StorageCheckOptions {
    /// The folder to measure on every node [default: the config's Lustre mount].
    pub dir: Option<gke_rl::model::AbsPath>,
    /// The most each node writes, in bytes.
    pub max_node_bytes: u64,
    /// The fraction of the tier's ceiling the aggregate write and read must reach.
    pub min_fraction: f64,
    /// The longest the job may run; it stops itself then.
    pub timeout: Duration,
    /// Whether each node also saves its share as a real distributed checkpoint, as the run's
    /// release does (where torch imports in the job's Python).
    pub save_pass: bool,
    /// Whether what a save measured is kept in the deployment folder ([`MEASURED_SAVE_FILE`]),
    /// for `report`: only for a check of the deployment's own mount through its own head.
    pub record: bool,
}

impl Default for StorageCheckOptions {
    fn default() -> Self {
        StorageCheckOptions {
            dir: None,
            max_node_bytes: DEFAULT_MAX_NODE_BYTES,
            min_fraction: DEFAULT_MIN_FRACTION,
            timeout: Duration::from_secs(900),
            save_pass: true,
            record: false,
        }
    }
}

/// How a storage check ended.
#[derive(Debug)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one a check
pub enum StorageChecked {
    /// The job ended and its log was read.
    Finished {
        /// The job's submission id.
        id: String,
        /// How the job ended.
        status: JobStatus,
        /// What its log says.
        report: Report,
        /// What the report had to show.
        expected: Expectation,
        /// The figures and what keeps them from passing.
        verdict: Verdict,
        /// Where what a save measured was kept, when asked and there was a prediction (or why
        /// it could not be).
        recorded: Option<Result<std::path::PathBuf, CommonError>>,
    },
    /// Interrupted (Ctrl-C): the job was stopped.
    Stopped {
        /// The job's submission id.
        id: String,
        /// Whether its driver said it removed its folder before it ended.
        cleaned: bool,
        /// The signal that interrupted.
        signal: i32,
    },
}

/// Submits the storage-check job through `client`, follows it and judges its report.
pub async fn check(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &StorageCheckOptions,
    client: &Client,
    env: &Env,
    progress: &dyn Progress,
) -> Result<StorageChecked, JobError> {
    let expected = Expectation::for_deployment(deployment, options.min_fraction);
    let local = |what: &str| {
        let what = what.to_owned();
        move |source| CommonError::Local { what, source }
    };
    let dir = tempfile::Builder::new().prefix("gke-rl-storage-check-").tempdir().map_err(local("cannot create the job folder"))?;
    std::fs::File::create_new(dir.path().join(CHECK_SCRIPT_FILE))
        .and_then(|mut f| f.write_all(gke_rl_in_cluster::storage::program().as_bytes()))
        .map_err(local("cannot write the storage-check job"))?;
    let id = jobs::helper_id("storage-check");
    let timeout_s = options.timeout.as_secs().max(1);
    let mut plan =
        Plan::for_deployment(deployment, options.dir.as_ref().map(gke_rl::model::AbsPath::as_str), &id, options.max_node_bytes, timeout_s);
    plan.writer = plan.writer.filter(|_| options.save_pass);
    let submit = SubmitOptions {
        working_dir: Some(dir.path().to_owned()),
        runtime_env: Some(("the storage-check runtime env".to_owned(), gke_rl_in_cluster::storage::runtime_env())),
        submission_id: Some(id),
        program: plan.entrypoint(),
        ..SubmitOptions::default()
    };
    let prepared = jobs::mark_helper(jobs::prepare(deployment, artifacts, &submit, env, progress)?, "storage-check");
    let id = jobs::submit(client, prepared, progress).await?;
    // The job stops itself at its timeout; this bounds a job that never starts or a driver
    // that hangs.
    let limit = options.timeout + options.timeout.min(FOLLOW_GRACE);
    let followed = match tokio::time::timeout(limit, jobs::follow(client, &id, env, progress)).await {
        Ok(followed) => followed?,
        Err(_) => {
            stop(client, &id).await;
            return Err(JobError::JobTimedOut { id, after: limit });
        }
    };
    let job = match followed {
        Followed::Finished { job, .. } => job,
        Followed::Detached { signal } => {
            stop(client, &id).await;
            let cleaned =
                client.logs(&id).await.is_ok_and(|log| Report::parse(&log).errors.iter().any(|e| e == gke_rl_in_cluster::storage::STOPPED));
            return Ok(StorageChecked::Stopped { id, cleaned, signal });
        }
    };
    let report = Report::parse(&client.logs(&id).await?);
    let mut verdict = report.judge(&expected);
    // A job that failed without saying why in its log: Ray's message says it.
    if job.status != JobStatus::Succeeded && report.errors.is_empty() {
        let message = job.message.clone().unwrap_or_else(|| format!("it ended {}", job.status));
        verdict.problems.insert(0, gke_rl_in_cluster::storage::Problem::JobFailed { message });
    }
    let recorded = MeasuredSave::of(&verdict, deployment).filter(|_| options.record).map(|measured| {
        let folder = crate::site::default_folder(deployment);
        let path = folder.join(MEASURED_SAVE_FILE);
        std::fs::create_dir_all(&folder).map_err(|source| CommonError::Write { path: folder.clone(), source })?;
        let json = serde_json::to_string_pretty(&measured).expect("plain data serializes");
        crate::files::write_atomically(&path, json.as_bytes(), false).map(|()| path)
    });
    Ok(StorageChecked::Finished { id, status: job.status, report, expected, verdict, recorded })
}

/// What the last check of `deployment`'s own mount measured one save at, when it is kept in the
/// deployment folder and measured the storage, nodes and image the deployment has now.
pub fn measured_save(deployment: &Deployment) -> Option<MeasuredSave> {
    let path = crate::site::default_folder(deployment).join(MEASURED_SAVE_FILE);
    let bytes = crate::files::read_bytes(&path).ok()?;
    serde_json::from_slice::<MeasuredSave>(&bytes).ok().filter(|m| m.predict(deployment).is_some())
}

/// Stops the job and waits, within [`STOP_GRACE`], until Ray says it has ended: its driver
/// removes the check's folder as it goes.
async fn stop(client: &Client, id: &str) {
    let _ = client.stop(id).await;
    let deadline = tokio::time::Instant::now() + STOP_GRACE;
    while tokio::time::Instant::now() < deadline {
        if client.job(id).await.is_ok_and(|job| job.status.is_terminal()) {
            return;
        }
        tokio::time::sleep(STOP_POLL).await;
    }
}
