//! Why a job operation failed: reaching the head, submitting, following, stopping, or a job
//! command.

use std::path::PathBuf;

use gke_rl_validate::Finding;

use super::{CommonError, Fix, LifecycleError, holds_common};

/// Why a job operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// What any operation can meet.
    #[error(transparent)]
    Common(#[from] CommonError),
    /// Cluster mode suspends the RayCluster after a run (`job.when_done: suspend`): that
    /// failed.
    #[error("the run ended, and suspending the RayCluster after it failed: {0}")]
    SuspendAfterRun(#[source] Box<LifecycleError>),
    /// The deployment's long-lived RayCluster is up where a RayJob's cluster is to come.
    #[error(
        "RayCluster {namespace}/{cluster} is up and holds the GPU nodes the RayJob's own cluster needs: suspend it first (`gke-rl suspend`), or submit to it (without --as rayjob)"
    )]
    ClusterHoldsNodes {
        /// The RayCluster.
        cluster: String,
        /// Its namespace.
        namespace: String,
    },
    /// A supervised run's log is empty: neither Ray's stream nor its whole log gave a byte,
    /// so its records (restarts, end) cannot be told.
    #[error("job {id}'s log is empty: Ray holds nothing the supervisor wrote, so the run's restarts and end cannot be told")]
    EmptyLog {
        /// The submission.
        id: String,
    },
    /// No RayJob of that name.
    #[error("there is no RayJob {namespace}/{name}; `kubectl get rayjobs -n {namespace}` lists them")]
    NoRayJob {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// The RayJob has no RayCluster up to reach.
    #[error("RayJob {namespace}/{name} is {state}: {why}")]
    RayJobNoCluster {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its `jobDeploymentStatus`.
        state: String,
        /// Why there is nothing to reach.
        why: &'static str,
    },
    /// A RayJob of the name a submit applies has not finished.
    #[error("RayJob {namespace}/{name} is {state}, not finished; to replace it, stop it with `gke-rl stop {name}`")]
    RayJobBusy {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its `jobDeploymentStatus`.
        state: String,
    },
    /// The RayJob ended before its job ran.
    #[error("RayJob {namespace}/{name} is {state} before its job was submitted{}{}", .reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default(), .message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
    RayJobEnded {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its state.
        state: String,
        /// KubeRay's reason.
        reason: Option<String>,
        /// KubeRay's message.
        message: Option<String>,
    },
    /// The RayJob's cluster did not come up in time.
    #[error("RayJob {namespace}/{name}'s cluster is not up after {}s (it is {state})", .waited.as_secs())]
    RayJobNotUp {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its last state.
        state: String,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// The RayJob a submit applied went away, or was applied again by another submit, while
    /// its cluster came up.
    #[error("RayJob {namespace}/{name} changed while its cluster came up: {why}")]
    RayJobGone {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// What happened.
        why: String,
    },
    /// The RayJob's cluster was taken away while its run was followed (preempted, as by Kueue):
    /// the run is lost, and the RayJob deleted, or not.
    #[error("RayJob {namespace}/{name} is {state}: its cluster was taken away (preempted), and the run with it; {}", match not_deleted {
        None => "the RayJob is deleted: submit again, and NeMo-RL resumes from its newest checkpoint".to_owned(),
        Some(e) => format!("deleting it failed ({}): delete it with `kubectl delete rayjob {name} -n {namespace}`, or KubeRay waits for the lost job until it is deleted", super::chain(&**e)),
    })]
    RunPreempted {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its state now.
        state: String,
        /// Why it was not deleted, if it was not.
        not_deleted: Option<Box<gke_rl_kube::Error>>,
    },
    /// KubeRay did not take up the job named in the RayJob in time.
    #[error("KubeRay did not follow job {id} in RayJob {namespace}/{name} within {}s (it is {state}): is the KubeRay operator running?", .waited.as_secs())]
    RayJobNotFollowing {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// The job.
        id: String,
        /// Its last state.
        state: String,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// A signal stopped the operation.
    #[error("interrupted (signal {signal})")]
    Interrupted {
        /// The signal's number.
        signal: i32,
    },
    /// A submit stopped before the RayJob it made had its job: the RayJob was deleted, so
    /// that its nodes go, or could not be.
    #[error("{source}; {}", match deleted {
        Ok(()) => format!("RayJob {namespace}/{name} is deleted, so that its nodes go"),
        Err(e) => format!(
            "deleting RayJob {namespace}/{name} failed ({e}): delete it with `kubectl delete rayjob {name} -n {namespace}`, or its GPU nodes stay {}",
            deadline.map_or_else(|| "until it is deleted".to_owned(), |s| format!("until its pre-running deadline ({s} s from its start)"))
        ),
    })]
    RayJobNotStarted {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Whether it was deleted, or why not.
        deleted: Result<(), NotDeleted>,
        /// Its pre-running deadline in seconds, if any: until then its nodes stay when it was
        /// not deleted.
        deadline: Option<u32>,
        /// What stopped the submit.
        source: Box<JobError>,
    },
    /// A RayJob is applied through Kubernetes, so no Ray address applies.
    #[error("in rayjob mode submit applies a RayJob through Kubernetes and reaches its own cluster; drop --address and unset RAY_ADDRESS")]
    RayJobByAddress,
    /// The Ray Jobs API or the packager.
    #[error(transparent)]
    Ray(#[from] gke_rl_ray::Error),
    /// `--env-from-local RAY_AUTH_TOKEN`.
    #[error(
        "--env-from-local RAY_AUTH_TOKEN would write the Ray token into the job's runtime env, which the Jobs API shows to everyone who lists jobs; the Ray pods have it already (KubeRay sets RAY_AUTH_TOKEN in every Ray container)"
    )]
    RayTokenToJob,
    /// A file of the package holds the Ray token.
    #[error("the package holds the Ray token (the one from {from}); a secret must never be uploaded: exclude the file in .rayignore")]
    RayTokenInPackage {
        /// Where the token came from.
        from: String,
    },
    /// A supervised run's submission went away without its supervisor's final record, and no
    /// resubmission followed in time.
    #[error("{why}, and no resubmission of it appeared within {}s", .after.as_secs())]
    NotResubmitted {
        /// The submission.
        id: String,
        /// What happened to it.
        why: String,
        /// How long it waited.
        after: std::time::Duration,
    },
    /// A run's submission went away, or failed without its supervisor's record, and nothing
    /// resubmits it.
    #[error(
        "{why}, and nothing resubmits it (KubeRay retries nothing in InteractiveMode): stop the RayJob and submit again; NeMo-RL resumes from its newest checkpoint"
    )]
    RunLost {
        /// The submission.
        id: String,
        /// What happened to it.
        why: String,
    },
    /// A job did not end within its time; it was asked to stop.
    #[error("job {id} did not end within {}s; it was asked to stop (see `logs {id}`)", .after.as_secs())]
    JobTimedOut {
        /// The job.
        id: String,
        /// How long it was given.
        after: std::time::Duration,
    },
    /// The runtime env has errors: nothing was submitted.
    #[error("{name} has errors; nothing was submitted")]
    RuntimeEnv {
        /// The runtime env's name.
        name: String,
        /// Every finding (errors among them).
        findings: Vec<Finding>,
    },
    /// The runtime env is not a mapping, or a field of it is not of the right type.
    #[error("{name}: {problem}")]
    RuntimeEnvShape {
        /// The runtime env's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// A file for the job folder is not usable.
    #[error("{}: {problem}", path.display())]
    Include {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A submission id that cannot name a run: not a plain name, or shaped as a restart's
    /// (`<run>-rN`), which only the keeper gives.
    #[error("submission id `{id}` {problem}")]
    RunId {
        /// The id given.
        id: String,
        /// What is wrong, and the fix.
        problem: String,
    },
    /// A metadata key gke-rl marks its own jobs with.
    #[error("metadata key `{0}` marks gke-rl's own jobs (which status and logs pass over): name your key otherwise")]
    ReservedMetadata(&'static str),
    /// A variable to pass from the local environment is not set.
    #[error("{0} is not set in this environment")]
    EnvFromLocalUnset(String),
    /// No address was given, and the port-forward to the head pod failed.
    #[error("no Ray address, and the port-forward to the head failed")]
    PortForward {
        /// Why it failed.
        #[source]
        source: Box<JobError>,
    },
    /// No submission to act on.
    #[error("the cluster has no submitted jobs yet")]
    NoJobs,
    /// A job did not stop in time.
    #[error("job {id} is still {status} a minute after the stop request")]
    StillRunning {
        /// Submission id.
        id: String,
        /// Its state.
        status: gke_rl_ray::JobStatus,
    },
}

holds_common!(JobError);

/// Why a RayJob that a submit made, or may have made, was not deleted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotDeleted {
    /// Its create got no answer, and whether it was made cannot be read.
    #[error("whether it was made cannot be read: {}", super::chain(&**.0))]
    Unread(Box<gke_rl_kube::Error>),
    /// The delete failed.
    #[error("{}", super::chain(&**.0))]
    Refused(Box<gke_rl_kube::Error>),
}

impl JobError {
    /// The fix when the error is about reaching the cluster's API.
    pub fn fix(&self, get_credentials: &gke_rl::lifecycle::Command) -> Option<Fix> {
        match self {
            JobError::Common(common) => common.fix(get_credentials),
            JobError::PortForward { source } => source.fix(get_credentials),
            JobError::SuspendAfterRun(suspend) => suspend.common()?.fix(get_credentials),
            _ => None,
        }
    }
}
