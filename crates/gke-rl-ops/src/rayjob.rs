//! Runs as RayJobs (`job.mode: rayjob`). Submit applies the RayJob, waits for KubeRay to bring
//! its own cluster up, uploads and submits the job to that cluster's head through a
//! port-forward, and only then names the job in `spec.jobId`, and follows the run as in cluster
//! mode. In InteractiveMode KubeRay makes the cluster and waits in `Waiting` for `spec.jobId`,
//! bounded by the pre-running deadline; once the id is set it follows that job, and a job that
//! is not there it waits for without bound (`rayjob_controller.go`, KubeRay v1.7.0). So the id
//! goes last: a submit that dies before it leaves a RayJob that the deadline ends. Whatever
//! fails between the apply and the id deletes the RayJob, so that its GPU nodes go. Stop
//! deletes the RayJob: KubeRay's finalizer stops its job, and the cluster goes with it.
//!
//! Through Kubernetes only: the RayJob's cluster is found by its name, so no Ray address
//! applies.

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

/// Applies the RayJob `manifest` (the rendered `ray-job.yaml`), waits for its cluster, submits
/// the job to it, names the job in the RayJob and follows the run (see the module's
/// documentation).
pub(crate) async fn submit(
    deployment: &Deployment,
    artifacts: &Artifacts,
    manifest: &str,
    options: &RunOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Ran, Error> {
    refuse_address(&options.head, env)?;
    let mut prepared = jobs::prepare(deployment, artifacts, &options.submit, env, &*progress)?;
    let id = prepared.submission_id().to_owned();
    let clusters = clusters(deployment, env).await?;
    let (name, namespace) = (deployment.job.name.as_str(), deployment.ray.namespace.as_str());
    let busy =
        |state: &RayJobState| Error::RayJobBusy { name: name.to_owned(), namespace: namespace.to_owned(), state: state.state().to_owned() };
    // A finished RayJob keeps its name: it is replaced (its cluster, if still there for its TTL,
    // goes now); one that has not finished is refused.
    if let Some(state) = clusters.ray_job(name).await? {
        if !state.is_finished() && !state.deleting {
            return Err(busy(&state));
        }
        progress.event(Event::RayJobState { name, state: &state });
        stop(deployment, &clusters, name, true, env, &*progress).await?;
    }
    // Armed before the create: an interrupt from here on deletes the RayJob, not the process.
    let mut interrupt = env.interrupt.arm().map_err(|source| Error::Local { what: "cannot listen for Ctrl-C".into(), source })?;
    let uid = match clusters.create_ray_job(manifest, &id).await {
        Ok((_, uid)) => uid,
        Err(gke_rl_kube::Error::RayJobExists(_)) => {
            return Err(clusters.ray_job(name).await?.map_or_else(|| busy(&RayJobState::default()), |state| busy(&state)));
        }
        // A create that got no answer may have made it.
        Err(error @ gke_rl_kube::Error::Unreachable { .. }) => {
            return Err(not_started(&clusters, deployment, None, error.into(), &*progress).await);
        }
        Err(error) => return Err(error.into()),
    };
    progress.event(Event::RayJobCreated { namespace, name, submission: &id });
    let started = async {
        let cluster = wait_up(deployment, &clusters, &uid, &id, env, &*progress).await?;
        prepared.supervise_on(&gke_rl::supervisor::cluster_id_of(namespace, &cluster));
        let head = head::connect_to(deployment, clusters.clone(), cluster, &options.head, env, progress.clone()).await?;
        let id = jobs::submit_supervised(&head.client, prepared, &*progress).await?.id;
        if let Err(error) = name_the_job(deployment, &clusters, &uid, &id, env, &*progress).await {
            // The job dies with the cluster anyway; stopping it first is the orderly way.
            let _ = head.client.stop(&id).await;
            return Err(error);
        }
        Ok::<_, Error>((id, head))
    };
    let started = tokio::select! {
        started = started => started,
        () = interrupt.wait() => Err(Error::Interrupted { signal: interrupt.signal().unwrap_or(2) }),
    };
    let (id, head) = match started {
        Ok(started) => started,
        // Gone, or another submit's now: nothing of this submit's to delete.
        Err(error @ Error::RayJobGone { .. }) => return Err(error),
        Err(error) => return Err(not_started(&clusters, deployment, Some(&uid), error, &*progress).await),
    };
    if options.no_wait {
        return Ok(Ran::Submitted { id, head });
    }
    // A signal since the job went in detaches, as one while following does.
    if let Some(signal) = interrupt.signal() {
        let observed = jobs::Observed { followed: jobs::Followed::Detached { signal }, records: Default::default() };
        return Ok(Ran::Followed { id, head, observed, after: AfterRun::RayJobEnds });
    }
    drop(interrupt);
    // No keeper runs beside a RayJob: a run its head lost is lost.
    let observed = jobs::follow_run(&head.client, &id, None, env, &*progress).await?;
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

/// `error`, which stopped a submit before its job was named, once the RayJob it applied (the
/// one of `uid`, else whichever has the name) is deleted so that its nodes go, or with why it
/// could not be.
async fn not_started(clusters: &RayClusters, deployment: &Deployment, uid: Option<&str>, error: Error, progress: &dyn Progress) -> Error {
    let (name, namespace) = (deployment.job.name.as_str(), deployment.ray.namespace.as_str());
    let deleted = match clusters.delete_ray_job(name, uid).await {
        Ok(true) => {
            progress.event(Event::Deleted { kind: "RayJob", namespace, name });
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(e) => Err((crate::chain(&e), deployment.job.rayjob_pre_running_deadline_seconds.map(|s| s.get()))),
    };
    Error::RayJobNotStarted { name: name.to_owned(), namespace: namespace.to_owned(), deleted, source: Box::new(error) }
}

/// How long naming the job in the RayJob, and KubeRay taking it up, may take.
const NAMING_WAIT: Duration = Duration::from_secs(120);

/// Names the job `id` in the RayJob of `uid` (`spec.jobId`; a patch that got no answer is sent
/// again) and waits until KubeRay follows it (`Running`, `status.jobId`). KubeRay may have
/// failed the RayJob meanwhile (its pre-running deadline runs until then).
async fn name_the_job(
    deployment: &Deployment,
    clusters: &RayClusters,
    uid: &str,
    id: &str,
    env: &Env,
    progress: &dyn Progress,
) -> Result<(), Error> {
    let (name, namespace) = (deployment.job.name.as_str(), deployment.ray.namespace.as_str());
    let start = tokio::time::Instant::now();
    let mut named = false;
    let mut last = String::new();
    while start.elapsed() < NAMING_WAIT {
        let step = async {
            if !named {
                clusters.set_ray_job_id(name, uid, id).await?;
                named = true;
            }
            clusters.ray_job(name).await
        };
        match step.await {
            Ok(Some(state)) if state.uid == uid && state.following.as_deref() == Some(id) && state.deployment == "Running" => return Ok(()),
            Ok(Some(state)) if state.uid == uid && state.is_finished() => return Err(ended(deployment, &state)),
            Ok(Some(state)) if state.uid == uid && state.deleting => {
                return Err(Error::RayJobGone {
                    name: name.to_owned(),
                    namespace: namespace.to_owned(),
                    why: "it is being deleted".to_owned(),
                });
            }
            Ok(Some(state)) if state.uid == uid => last = state.state().to_owned(),
            Ok(_) => {
                return Err(Error::RayJobGone { name: name.to_owned(), namespace: namespace.to_owned(), why: "it was deleted".to_owned() });
            }
            Err(e @ gke_rl_kube::Error::Unreachable { .. }) => progress.event(Event::Retrying { error: &e }),
            Err(e) => return Err(e.into()),
        }
        tokio::time::sleep(env.poll).await;
    }
    Err(Error::RayJobNotFollowing {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        id: id.to_owned(),
        state: last,
        waited: start.elapsed(),
    })
}

/// The deployment's RayJob ended before its job ran: in KubeRay's words.
fn ended(deployment: &Deployment, state: &RayJobState) -> Error {
    Error::RayJobEnded {
        name: deployment.job.name.to_string(),
        namespace: deployment.ray.namespace.to_string(),
        state: state.state().to_owned(),
        reason: state.reason.clone(),
        message: state.message.clone(),
    }
}

/// The Kubernetes API of the deployment's namespace; a failure to reach it is a failed
/// port-forward, which the front ends explain.
async fn clusters(deployment: &Deployment, env: &Env) -> Result<RayClusters, Error> {
    head::ray_clusters(deployment, env).await.map_err(|source| Error::PortForward { source: Box::new(source) })
}

/// RayJob mode reaches the RayJob's cluster through Kubernetes only.
fn refuse_address(options: &HeadOptions, env: &Env) -> Result<(), Error> {
    if options.forwards(env) { Ok(()) } else { Err(Error::RayJobByAddress) }
}

/// Waits until KubeRay has the RayJob's cluster up (its pods all Ready once, and its dashboard
/// known), telling its states and its pods; the cluster's name. The RayJob must stay the one
/// applied for `submission` (of `uid`). An API server out of reach is asked again until the
/// wait's end: a flex-start pool may have waited hours for these nodes.
async fn wait_up(
    deployment: &Deployment,
    clusters: &RayClusters,
    uid: &str,
    submission: &str,
    env: &Env,
    progress: &dyn Progress,
) -> Result<String, Error> {
    let (name, namespace) = (deployment.job.name.as_str(), deployment.ray.namespace.as_str());
    let timeout = lifecycle::rayjob_start_wait(deployment);
    let start = tokio::time::Instant::now();
    let (mut told, mut pods) = (None::<String>, crate::deploy::pod_reporter(progress));
    let mut queued = None;
    let gone = |why: &str| Error::RayJobGone { name: name.to_owned(), namespace: namespace.to_owned(), why: why.to_owned() };
    let mut last = String::new();
    while start.elapsed() < timeout {
        match clusters.ray_job(name).await {
            Ok(None) => return Err(gone("it was deleted")),
            Ok(Some(state)) if state.uid != uid || state.submission.as_deref() != Some(submission) => {
                return Err(gone(&format!(
                    "it was deleted, and another submit ({}) made it anew",
                    state.submission.as_deref().unwrap_or("unknown")
                )));
            }
            Ok(Some(state)) => {
                if told.as_deref() != Some(state.state()) {
                    progress.event(Event::RayJobState { name, state: &state });
                    told = Some(state.state().to_owned());
                }
                // Held back by Kueue: why, whenever that changes.
                if state.deployment == "Suspended" {
                    match clusters.workload_of(uid).await {
                        Ok(now) if now != queued => {
                            if let Some(now) = &now {
                                progress.event(Event::Queued { name, queued: now });
                            }
                            queued = now;
                        }
                        Ok(_) => {}
                        Err(e @ gke_rl_kube::Error::Unreachable { .. }) => progress.event(Event::Retrying { error: &e }),
                        Err(e) => return Err(e.into()),
                    }
                }
                match &state.cluster {
                    _ if state.deleting => return Err(gone("it is being deleted")),
                    _ if state.is_finished() => return Err(ended(deployment, &state)),
                    Some(cluster) if state.has_cluster_up() => return Ok(cluster.clone()),
                    Some(cluster) => match clusters.readiness(cluster, deployment.topology.node_count.get()).await {
                        Ok(readiness) => pods(&readiness),
                        Err(e @ gke_rl_kube::Error::Unreachable { .. }) => progress.event(Event::Retrying { error: &e }),
                        Err(e) => return Err(e.into()),
                    },
                    None => {}
                }
                last = state.state().to_owned();
            }
            Err(e @ gke_rl_kube::Error::Unreachable { .. }) => progress.event(Event::Retrying { error: &e }),
            Err(e) => return Err(e.into()),
        }
        tokio::time::sleep(env.poll).await;
    }
    Err(Error::RayJobNotUp { name: name.to_owned(), namespace: namespace.to_owned(), state: last, waited: start.elapsed() })
}

/// A RayJob found through Kubernetes, and its cluster's head when its job is named and its
/// cluster is there (its TTL after the run included).
pub(crate) struct Found {
    pub name: String,
    pub state: RayJobState,
    pub clusters: RayClusters,
    /// The head, or why it could not be reached; `None` where there is no job to ask about.
    pub head: Option<Result<Head, Error>>,
}

/// The RayJob `name` (the config's by default), with its cluster's head when there is a job on
/// it to ask about.
pub(crate) async fn find(
    deployment: &Deployment,
    options: &HeadOptions,
    name: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Found, Error> {
    refuse_address(options, env)?;
    let name = name.unwrap_or(deployment.job.name.as_str()).to_owned();
    let clusters = clusters(deployment, env).await?;
    let namespace = deployment.ray.namespace.to_string();
    let state = clusters.ray_job(&name).await?.ok_or_else(|| Error::NoRayJob { name: name.clone(), namespace })?;
    let head = match state.cluster.clone() {
        Some(cluster) if state.job_id.is_some() && !state.deleting && clusters.uid(&cluster).await?.is_some() => {
            Some(head::connect_to(deployment, clusters.clone(), cluster, options, env, progress).await)
        }
        _ => None,
    };
    Ok(Found { name, state, clusters, head })
}

/// The head of the RayJob `name` (the config's by default) and the job it follows.
pub(crate) async fn connect(
    deployment: &Deployment,
    options: &HeadOptions,
    name: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<(Head, Option<String>), Error> {
    let Found { name, state, head, .. } = find(deployment, options, name, env, progress).await?;
    let why = match head {
        Some(head) => return Ok((head?, state.job_id)),
        None if state.job_id.is_none() && !state.is_finished() && !state.deleting => "its job is not submitted yet",
        None => "it has no RayCluster up to reach",
    };
    Err(Error::RayJobNoCluster { name, namespace: deployment.ray.namespace.to_string(), state: state.state().to_owned(), why })
}

/// Stops the RayJob `name` of the deployment: deletes it (KubeRay's finalizer stops its job,
/// and its cluster goes with it), with `wait` until it is gone. Its state before, if there was one.
pub(crate) async fn stop_by_name(
    deployment: &Deployment,
    options: &HeadOptions,
    name: &str,
    wait: bool,
    env: &Env,
    progress: &dyn Progress,
) -> Result<Option<RayJobState>, Error> {
    refuse_address(options, env)?;
    let clusters = clusters(deployment, env).await?;
    stop(deployment, &clusters, name, wait, env, progress).await
}

async fn stop(
    deployment: &Deployment,
    clusters: &RayClusters,
    name: &str,
    wait: bool,
    env: &Env,
    progress: &dyn Progress,
) -> Result<Option<RayJobState>, Error> {
    let namespace = deployment.ray.namespace.as_str();
    let Some(state) = clusters.ray_job(name).await? else { return Ok(None) };
    if !state.deleting && clusters.delete_ray_job(name, None).await? {
        progress.event(Event::Deleted { kind: "RayJob", namespace, name });
    }
    if wait {
        clusters.wait_ray_job_gone(name, Wait { timeout: GONE_WAIT, poll: env.poll }).await?;
    }
    Ok(Some(state))
}
