//! Suspending a deployment's RayCluster while no job needs it, and resuming it. KubeRay
//! deletes a suspended cluster's pods and keeps its spec; GPU nodes without pods can then be
//! removed by an autoscaling node pool, and a resume recreates the pods on new ones. A queued
//! cluster (`job.queue`) is suspended and resumed through its Kueue Workload.

use std::time::Duration;

use gke_rl::Deployment;
use gke_rl_kube::Wait;

use crate::events::{LifecycleEvent, Progress};
use crate::{Env, LifecycleError};

/// How a suspend or a resume ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Changed {
    /// Done now: the pods are gone (suspend), or every pod is Ready (resume).
    Now,
    /// It was so already.
    Already,
    /// The deployment has no RayCluster.
    NoCluster,
}

/// Suspends (`suspended`) or resumes the deployment's RayCluster, then waits, at most `wait`,
/// until its pods are gone or, reporting what holds them back as deploy does, all Ready.
pub async fn set_suspended(
    deployment: &Deployment,
    suspended: bool,
    wait: Duration,
    env: &Env,
    progress: &dyn Progress,
) -> Result<Changed, LifecycleError> {
    if deployment.job.mode == gke_rl::model::JobMode::Rayjob {
        let instead =
            "a RayJob's cluster goes after its run (job.rayjob_ttl_seconds_after_finished), and the GPU pool then scales to zero by itself";
        return Err(LifecycleError::RayJobMode { command: if suspended { "suspend" } else { "resume" }, instead });
    }
    let clusters = crate::head::namespaced(deployment, env).await?;
    let name = deployment.project.cluster_name.as_str();
    let Some(now) = clusters.is_suspended(name).await? else { return Ok(Changed::NoCluster) };
    let mut held = false;
    if deployment.job.queue.is_some() {
        // Kueue owns a queued cluster's `suspend` (it resumes an admitted one that anything else
        // suspends): its Workload is deactivated instead, which also gives the quota back.
        let workload = clusters.queued(name).await?.ok_or_else(|| LifecycleError::NoWorkload { cluster: name.to_owned() })?;
        match (suspended, workload.active) {
            // Deactivated, and Kueue has suspended it: pods may still be going, waited for below.
            (true, false) if now => return Ok(Changed::Already),
            (true, false) => {}
            // Running; one Kueue still holds back is waited for below, as a resume.
            (false, true) if !now => return Ok(Changed::Already),
            (false, true) => held = true,
            (_, active) => clusters.set_workload_active(&workload.name, !active).await?,
        }
    } else {
        if now == suspended {
            return Ok(Changed::Already);
        }
        clusters.set_suspended(name, suspended).await?;
    }
    let wait = Wait { timeout: wait, poll: env.poll };
    if suspended {
        progress.lifecycle(LifecycleEvent::SuspendRequested { name });
        clusters.wait_pods_gone(name, wait).await?;
        progress.lifecycle(LifecycleEvent::PodsGone);
    } else {
        progress.lifecycle(if held { LifecycleEvent::AwaitingKueue { name } } else { LifecycleEvent::ResumeRequested { name } });
        clusters.wait_ready(name, deployment.topology.node_count.get(), wait, crate::events::pod_reporter(progress)).await?;
    }
    Ok(Changed::Now)
}

/// Whether the deployment's RayCluster is suspended; `None` when there is none.
pub async fn is_suspended(deployment: &Deployment, env: &Env) -> Result<Option<bool>, crate::CommonError> {
    let clusters = crate::head::namespaced(deployment, env).await?;
    Ok(clusters.is_suspended(deployment.project.cluster_name.as_str()).await?)
}
