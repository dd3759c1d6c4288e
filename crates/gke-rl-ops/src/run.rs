//! What the job commands are asked and what they found, the same in either job mode: what a
//! submit does besides submitting and how it ended, and what `status` found.

use std::time::Duration;

use gke_rl::model::WhenDone;

use gke_rl_kube::{Queued, RayJobState, Readiness};

use crate::JobError;
use crate::head::{Head, HeadOptions};
use crate::jobs::{JobReport, Observed, SubmitOptions};

/// What `submit` does besides submitting.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// How to reach the head.
    pub head: HeadOptions,
    /// What to submit.
    pub submit: SubmitOptions,
    /// Return once the job is accepted.
    pub no_wait: bool,
    /// How long to wait for a suspended cluster to come back, and for the keeper's resubmission.
    pub restart_wait: Duration,
    /// What to do with the RayCluster once the run has ended [default: the deployment's `job.when_done`].
    pub when_done: Option<WhenDone>,
}

/// How a submit ended.
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one per command
pub enum Ran {
    /// Accepted, not followed.
    Submitted {
        /// Its submission id.
        id: String,
        /// The head it went to.
        head: Head,
    },
    /// Followed to its end, or detached from.
    Followed {
        /// Its submission id.
        id: String,
        /// The head it went to.
        head: Head,
        /// How following ended, and what the run's supervisors recorded.
        observed: Observed,
        /// What became of the RayCluster.
        after: AfterRun,
    },
}

/// What became of the RayCluster after a followed run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AfterRun {
    /// It was kept (as configured, or because following was detached).
    Kept,
    /// It was suspended.
    Suspended,
    /// It should have been suspended, but the head was given by address: Kubernetes is not reached.
    NotSuspendedByAddress,
    /// It is the RayJob's: KubeRay deletes it once the job has ended (`ttlSecondsAfterFinished`).
    RayJobEnds,
}

/// What `status` found.
#[non_exhaustive]
pub enum Status {
    /// The RayCluster is suspended: it has no head to ask.
    Suspended,
    /// The RayCluster waits in Kueue's queue (`job.queue`), suspended until admitted: what
    /// Kueue says of it.
    Queued(Queued),
    /// The job.
    Job(Box<JobReport>),
    /// A RayJob with no job to ask its cluster about (its cluster not up yet, or gone, or not
    /// reached): what KubeRay says of it.
    RayJob(Box<RayJobReport>),
}

/// A RayJob as KubeRay reports it, and its cluster's pods.
pub struct RayJobReport {
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: RayJobState,
    /// Its cluster's name and pods, while it has one.
    pub cluster: Option<(String, Result<Readiness, gke_rl_kube::Error>)>,
    /// Why its cluster's head could not be reached, when it should have been.
    pub unreached: Option<JobError>,
    /// What Kueue says of it, when Kueue manages it and it has not finished.
    pub queued: Option<Result<Queued, gke_rl_kube::Error>>,
}
