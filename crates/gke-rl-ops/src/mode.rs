//! The deployment's job mode, decided here once. Cluster mode ([`crate::cluster`]) sends jobs to
//! the long-lived RayCluster's head; RayJob mode ([`crate::rayjob`]) makes a RayJob per run and
//! reaches the head of the cluster KubeRay made for it. Both answer the same calls (connect,
//! submit, status, stop), and the job commands do not know which one they have.

use std::sync::Arc;

use gke_rl::model::JobMode;
use gke_rl::{Artifacts, Deployment};

use crate::events::Progress;
use crate::head::{Head, HeadOptions};
use crate::jobs::Stopped;
use crate::run::{Ran, RunOptions, Status};
use crate::{Env, JobError, cluster, rayjob};

/// Where a deployment's jobs go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// To the long-lived RayCluster's head.
    Cluster,
    /// Each run to a RayJob of its own.
    RayJob,
}

impl Mode {
    /// The mode `deployment` runs its jobs in.
    pub(crate) fn of(deployment: &Deployment) -> Mode {
        match deployment.job.mode {
            JobMode::Cluster => Mode::Cluster,
            JobMode::Rayjob => Mode::RayJob,
        }
    }

    /// The head to ask about the job `id` names, and the id to ask about there: in RayJob mode
    /// `id` names a RayJob [default: the config's], and the job is the one it follows.
    pub(crate) async fn connect(
        self,
        deployment: &Deployment,
        options: &HeadOptions,
        id: Option<&str>,
        env: &Env,
        progress: Arc<dyn Progress>,
    ) -> Result<(Head, Option<String>), JobError> {
        match self {
            Mode::Cluster => cluster::connect(deployment, options, id, env, progress).await,
            Mode::RayJob => rayjob::connect(deployment, options, id, env, progress).await,
        }
    }

    /// Submits the job under the supervisor and follows its run (see each mode's `submit`).
    pub(crate) async fn submit(
        self,
        deployment: &Deployment,
        artifacts: &Artifacts,
        options: &RunOptions,
        env: &Env,
        progress: Arc<dyn Progress>,
    ) -> Result<Ran, JobError> {
        match self {
            Mode::Cluster => cluster::submit(deployment, artifacts, options, env, progress).await,
            Mode::RayJob => rayjob::submit(deployment, artifacts, options, env, progress).await,
        }
    }

    /// What the job `id` names is doing, or why there is no job to ask about.
    pub(crate) async fn status(
        self,
        deployment: &Deployment,
        options: &HeadOptions,
        id: Option<&str>,
        env: &Env,
        progress: Arc<dyn Progress>,
    ) -> Result<Status, JobError> {
        match self {
            Mode::Cluster => cluster::status(deployment, options, id, env, progress).await,
            Mode::RayJob => rayjob::status(deployment, options, id, env, progress).await,
        }
    }

    /// Stops the job `id` names; with `wait`, until it has ended.
    pub(crate) async fn stop(
        self,
        deployment: &Deployment,
        options: &HeadOptions,
        id: &str,
        wait: bool,
        env: &Env,
        progress: Arc<dyn Progress>,
    ) -> Result<(String, Stopped), JobError> {
        match self {
            Mode::Cluster => cluster::stop(deployment, options, id, wait, env, progress).await,
            Mode::RayJob => rayjob::stop(deployment, options, id, wait, env, progress).await,
        }
    }
}

/// Connects to the head `deployment`'s jobs go to: the RayCluster's ([`HeadOptions::address`], or
/// a port-forward to its head pod), or, in RayJob mode, that of the cluster the config's RayJob
/// made, while it has one (no address applies). `progress` is kept to report the forward's
/// failed connections for as long as it runs.
pub async fn connect(deployment: &Deployment, options: &HeadOptions, env: &Env, progress: Arc<dyn Progress>) -> Result<Head, JobError> {
    Mode::of(deployment).connect(deployment, options, None, env, progress).await.map(|(head, _)| head)
}

/// What names the job `id` to the job commands, as hints print it: in RayJob mode, when the head
/// is reached through Kubernetes, the RayJob `ray_job` (the config's by default); else the
/// submission id.
pub fn job_name<'a>(deployment: &'a Deployment, head: &Head, id: &'a str, ray_job: Option<&'a str>) -> &'a str {
    match Mode::of(deployment) {
        Mode::RayJob if head.is_forwarded() => ray_job.unwrap_or(deployment.job.name.as_str()),
        Mode::RayJob | Mode::Cluster => id,
    }
}
