//! What a submit is asked to do besides submitting, and how it ended: the same in either job
//! mode.

use std::time::Duration;

use gke_rl::model::WhenDone;

use crate::head::{Head, HeadOptions};
use crate::jobs::{Observed, SubmitOptions};

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
