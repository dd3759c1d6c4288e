//! Runs as RayJobs (`job.mode: rayjob`). Submit applies the RayJob with `spec.jobId` naming the
//! job it is about to submit, waits for KubeRay to bring the RayJob's own cluster up, then
//! uploads and submits to that cluster's head through a port-forward and follows the run as in
//! cluster mode. In InteractiveMode KubeRay makes the cluster and then follows the job
//! `spec.jobId` names, waiting while that job is not there yet (`rayjob_controller.go`,
//! KubeRay v1.7.0). Whatever fails between the apply and the submit deletes the RayJob, so that
//! its GPU nodes go. Stop deletes the RayJob: KubeRay's finalizer stops its job, and the
//! cluster goes with it.

use std::sync::Arc;
use std::time::Duration;

use gke_rl::{Artifacts, Deployment, lifecycle};
use gke_rl_kube::{RayClusters, RayJobState, Wait};

use crate::commands::{AfterRun, Ran, RunOptions};
use crate::events::{Event, Progress};
use crate::head::{self, Head, HeadOptions};
use crate::{Env, Error, jobs};

/// How long a finished RayJob of the same name, or a stopped one, may take to go.
const GONE_WAIT: Duration = Duration::from_secs(300);

/// Applies the RayJob `manifest` (the rendered `ray-job.yaml`), waits for its cluster, submits the job to it and follows the run (see
/// the module's documentation).
pub(crate) async fn submit(
    deployment: &Deployment,
    artifacts: &Artifacts,
    manifest: &str,
    options: &RunOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Ran, Error> {
    if !options.head.forwards(env) {
        return Err(Error::RayJobByAddress);
    }
    let prepared = jobs::prepare(deployment, artifacts, &options.submit, env, &*progress)?;
    let id = prepared.submission_id().to_owned();
    let clusters = head::ray_clusters(deployment, env).await?;
    let (name, namespace) = (deployment.job.name.as_str(), deployment.ray.namespace.as_str());
    // A finished RayJob keeps its name: it is replaced; one that has not finished is refused.
    if let Some(state) = clusters.ray_job(name).await? {
        if !state.is_finished() {
            return Err(Error::RayJobBusy { name: name.to_owned(), namespace: namespace.to_owned(), state: state.state().to_owned() });
        }
        stop(deployment, name, true, env, &*progress).await?;
    }
    // Armed before the apply: an interrupt from here on deletes the RayJob, not the process.
    let mut interrupt = env.interrupt.arm().map_err(|source| Error::Local { what: "cannot listen for Ctrl-C".into(), source })?;
    clusters.apply_ray_job(manifest, &id).await?;
    progress.event(Event::RayJobApplied { namespace, name, job_id: &id });
    let started = async {
        let cluster = wait_up(deployment, &clusters, env, &*progress).await?;
        let head = head::connect_to(deployment, clusters.clone(), cluster, &options.head, env, progress.clone()).await?;
        let id = jobs::submit_supervised(&head.client, prepared, &*progress).await?.id;
        Ok::<_, Error>((id, head))
    };
    let started = tokio::select! {
        started = started => started,
        () = interrupt.wait() => Err(Error::RayJobInterrupted { name: name.to_owned(), signal: interrupt.signal().unwrap_or(2) }),
    };
    let (id, head) = match started {
        Ok(started) => started,
        Err(error) => {
            // Its GPU nodes go with it. What fails here leaves the first error the one to tell.
            if clusters.delete_ray_job(name).await.unwrap_or(false) {
                progress.event(Event::Deleted { kind: "RayJob", namespace, name });
            }
            return Err(error);
        }
    };
    drop(interrupt);
    if options.no_wait {
        return Ok(Ran::Submitted { id, head });
    }
    let observed = jobs::follow_run(&head.client, &id, options.restart_wait, env, &*progress).await?;
    if let jobs::Followed::Finished { job, log } = &observed.followed {
        progress.event(Event::JobEnded {
            id: job.id(),
            status: job.status,
            message: job.message.as_deref(),
            log,
            records: Some(&observed.records),
        });
    }
    Ok(Ran::Followed { id, head, observed, after: AfterRun::RayJobEnds })
}

/// Waits until KubeRay has the RayJob's cluster up (its pods all Ready once, and its dashboard
/// known), telling its states and its pods; the cluster's name.
async fn wait_up(deployment: &Deployment, clusters: &RayClusters, env: &Env, progress: &dyn Progress) -> Result<String, Error> {
    let name = deployment.job.name.as_str();
    let timeout = lifecycle::rayjob_start_wait(deployment);
    let start = tokio::time::Instant::now();
    let (mut told, mut pods) = (None::<String>, crate::deploy::pod_reporter(progress));
    loop {
        let namespace = deployment.ray.namespace.to_string();
        let state = clusters.ray_job(name).await?.ok_or_else(|| Error::NoRayJob { name: name.to_owned(), namespace })?;
        if told.as_deref() != Some(state.state()) {
            progress.event(Event::RayJobState { name, state: &state });
            told = Some(state.state().to_owned());
        }
        match &state.cluster {
            Some(cluster) if state.has_cluster_up() => return Ok(cluster.clone()),
            _ if state.is_finished() => {
                let RayJobState { deployment: state, reason, message, .. } = state;
                return Err(Error::RayJobEnded { name: name.to_owned(), state, reason, message });
            }
            Some(cluster) => pods(&clusters.readiness(cluster, deployment.topology.node_count.get()).await?),
            None => {}
        }
        if start.elapsed() >= timeout {
            return Err(Error::RayJobNotUp { name: name.to_owned(), state: state.state().to_owned(), waited: start.elapsed() });
        }
        tokio::time::sleep(env.poll).await;
    }
}

/// A RayJob found through Kubernetes, and its cluster's head when it has one up.
pub(crate) struct Found {
    pub name: String,
    pub state: RayJobState,
    pub clusters: RayClusters,
    pub head: Option<Head>,
}

/// The RayJob `name` (the one [`HeadOptions::ray_job`] names by default), with its cluster's
/// head when it has one up.
pub(crate) async fn find(
    deployment: &Deployment,
    options: &HeadOptions,
    name: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Found, Error> {
    let name = name.unwrap_or(options.ray_job(deployment)).to_owned();
    let clusters = head::ray_clusters(deployment, env).await.map_err(|source| Error::PortForward { source: Box::new(source) })?;
    let namespace = deployment.ray.namespace.to_string();
    let state = clusters.ray_job(&name).await?.ok_or_else(|| Error::NoRayJob { name: name.clone(), namespace })?;
    let head = match state.cluster.clone().filter(|_| state.has_cluster_up()) {
        Some(cluster) => Some(head::connect_to(deployment, clusters.clone(), cluster, options, env, progress).await?),
        None => None,
    };
    Ok(Found { name, state, clusters, head })
}

/// The head of the RayJob `name` (the one [`HeadOptions::ray_job`] names by default) and the
/// job it follows; with an address, the head there, and no job named.
pub(crate) async fn connect(
    deployment: &Deployment,
    options: &HeadOptions,
    name: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<(Head, Option<String>), Error> {
    if let Some(address) = options.address(env) {
        return Ok((head::by_address(address, options, env)?, name.map(str::to_owned)));
    }
    let Found { name, state, head, .. } = find(deployment, options, name, env, progress).await?;
    match head {
        Some(head) => Ok((head, state.job_id)),
        None => Err(Error::RayJobNoCluster { name, namespace: deployment.ray.namespace.to_string(), state: state.state().to_owned() }),
    }
}

/// Deletes the RayJob `name`: KubeRay's finalizer stops its job, and its cluster goes with it;
/// with `wait`, until it is gone. Whether there was one.
pub(crate) async fn stop(deployment: &Deployment, name: &str, wait: bool, env: &Env, progress: &dyn Progress) -> Result<bool, Error> {
    let clusters = head::ray_clusters(deployment, env).await?;
    let namespace = deployment.ray.namespace.as_str();
    let deleted = clusters.delete_ray_job(name).await?;
    if deleted {
        progress.event(Event::Deleted { kind: "RayJob", namespace, name });
        if wait {
            clusters.wait_ray_job_gone(name, Wait { timeout: GONE_WAIT, poll: env.poll }).await?;
        }
    }
    Ok(deleted)
}
