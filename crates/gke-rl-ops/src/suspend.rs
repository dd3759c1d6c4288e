//! Suspending a deployment's RayCluster while no job needs it, and resuming it. KubeRay
//! deletes a suspended cluster's pods and keeps its spec; GPU nodes without pods can then be
//! removed by an autoscaling node pool, and a resume recreates the pods on new ones.

use std::time::Duration;

use gke_rl::Deployment;
use gke_rl_kube::Wait;

use crate::events::{Event, Progress};
use crate::{Env, Error};

/// How a suspend ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Suspended {
    /// Suspended now; its pods are gone.
    Now,
    /// It was suspended already.
    Already,
    /// The deployment has no RayCluster.
    NoCluster,
}

/// Suspends the deployment's RayCluster and waits (at most `wait`) until its pods are gone.
pub async fn suspend(deployment: &Deployment, wait: Duration, env: &Env, progress: &dyn Progress) -> Result<Suspended, Error> {
    let clusters = crate::head::ray_clusters(deployment, env).await?;
    let name = deployment.project.cluster_name.as_str();
    match clusters.is_suspended(name).await? {
        None => return Ok(Suspended::NoCluster),
        Some(true) => return Ok(Suspended::Already),
        Some(false) => {}
    }
    clusters.set_suspended(name, true).await?;
    progress.event(Event::SuspendRequested { name });
    clusters.wait_pods_gone(name, Wait { timeout: wait, poll: env.poll }).await?;
    progress.event(Event::PodsGone);
    Ok(Suspended::Now)
}

/// How a resume ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resumed {
    /// Resumed now, every pod Ready.
    Now,
    /// It was not suspended (its pods may still be starting: see `status`).
    NotSuspended,
    /// The deployment has no RayCluster.
    NoCluster,
}

/// Resumes the deployment's RayCluster and waits (at most `wait`) until every pod is Ready,
/// reporting what holds them back as deploy does.
pub async fn resume(deployment: &Deployment, wait: Duration, env: &Env, progress: &dyn Progress) -> Result<Resumed, Error> {
    let clusters = crate::head::ray_clusters(deployment, env).await?;
    let name = deployment.project.cluster_name.as_str();
    match clusters.is_suspended(name).await? {
        None => return Ok(Resumed::NoCluster),
        Some(false) => return Ok(Resumed::NotSuspended),
        Some(true) => {}
    }
    clusters.set_suspended(name, false).await?;
    progress.event(Event::ResumeRequested { name });
    let wait = Wait { timeout: wait, poll: env.poll };
    clusters.wait_ready(name, deployment.topology.node_count.get(), wait, crate::deploy::pod_reporter(progress)).await?;
    Ok(Resumed::Now)
}
