//! The fabric check on a running cluster: the job of [`gke_rl_in_cluster::fabric`] submitted like any job
//! (same connection, same checks before upload), followed to its end, and its log read into a
//! report judged against what the deployment wires.

use std::io::Write as _;
use std::time::Duration;

use gke_rl::{Artifacts, Deployment};
use gke_rl_in_cluster::fabric::{CHECK_SCRIPT, CHECK_SCRIPT_FILE, DEFAULT_MIN_FRACTION, DEFAULT_SIZES, Expectation, Problem, Report};
use gke_rl_ray::{Client, JobStatus};

use crate::events::Progress;
use crate::jobs::{self, Followed, SubmitOptions};
use crate::{CommonError, Env, JobError};

/// The most time beyond the job's own limit for it to start and report.
const FOLLOW_GRACE: Duration = Duration::from_secs(120);

/// How to run the check.
#[derive(Clone, Debug)]
pub struct FabricCheckOptions {
    /// Message sizes of the all-reduce sweep, in bytes.
    pub sizes: Vec<u64>,
    /// The fraction of the line rate the largest message must reach.
    pub min_fraction: f64,
    /// The longest the job may run; it stops itself then.
    pub timeout: Duration,
}

impl Default for FabricCheckOptions {
    fn default() -> Self {
        FabricCheckOptions { sizes: DEFAULT_SIZES.to_vec(), min_fraction: DEFAULT_MIN_FRACTION, timeout: Duration::from_secs(900) }
    }
}

/// How a fabric check ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum FabricChecked {
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
        /// What keeps it from passing; empty when it passes.
        problems: Vec<Problem>,
    },
    /// Interrupted (Ctrl-C): the job keeps running under this id.
    Detached {
        /// The job's submission id.
        id: String,
    },
}

/// Submits the fabric-check job through `client`, follows it and judges its report.
pub async fn check(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &FabricCheckOptions,
    client: &Client,
    env: &Env,
    progress: &dyn Progress,
) -> Result<FabricChecked, JobError> {
    let expected = Expectation::for_deployment(deployment, options.min_fraction)?;
    let local = |what: &str| {
        let what = what.to_owned();
        move |source| CommonError::Local { what, source }
    };
    let dir = tempfile::Builder::new().prefix("gke-rl-fabric-check-").tempdir().map_err(local("cannot create the job folder"))?;
    std::fs::File::create_new(dir.path().join(CHECK_SCRIPT_FILE))
        .and_then(|mut f| f.write_all(CHECK_SCRIPT.as_bytes()))
        .map_err(local("cannot write the fabric-check job"))?;
    let submit = SubmitOptions {
        working_dir: Some(dir.path().to_owned()),
        runtime_env: Some(("the fabric-check runtime env".to_owned(), "{}".to_owned())),
        submission_id: Some(jobs::helper_id("fabric-check")),
        program: gke_rl_in_cluster::fabric::entrypoint(&options.sizes, options.timeout.as_secs().max(1)),
        ..SubmitOptions::default()
    };
    let prepared = jobs::mark_helper(jobs::prepare(deployment, artifacts, &submit, env, progress)?, "fabric-check");
    let id = jobs::submit(client, prepared, progress).await?;
    // The job stops itself at its timeout; this bounds a job that never starts (no runtime env,
    // no resources) or a driver that hangs.
    let limit = options.timeout + options.timeout.min(FOLLOW_GRACE);
    let followed = match tokio::time::timeout(limit, jobs::follow(client, &id, env, progress)).await {
        Ok(followed) => followed?,
        Err(_) => {
            let _ = client.stop(&id).await;
            return Err(JobError::JobTimedOut { id, after: limit });
        }
    };
    let job = match followed {
        Followed::Finished { job, .. } => job,
        Followed::Detached { .. } => return Ok(FabricChecked::Detached { id }),
    };
    let report = Report::parse(&client.logs(&id).await?);
    let mut problems = report.problems(&expected);
    // A job that failed without saying why in its log: Ray's message says it.
    if job.status != JobStatus::Succeeded && report.errors.is_empty() {
        let message = job.message.clone().unwrap_or_else(|| format!("it ended {}", job.status));
        problems.insert(0, Problem::JobFailed { message });
    }
    Ok(FabricChecked::Finished { id, status: job.status, report, expected, problems })
}
