//! Runs as RayJobs (`job.mode: rayjob`). Submit creates the RayJob, waits for KubeRay to bring
//! its own cluster up, uploads and submits the job to that cluster's head through a
//! port-forward, only then names the job in `spec.jobId`, and follows the run as in cluster
//! mode. In InteractiveMode KubeRay makes the cluster and waits in `Waiting` for `spec.jobId`,
//! bounded by the pre-running deadline; once the id is set it follows that job, and a job that
//! is not there it waits for without bound (`rayjob_controller.go`, KubeRay v1.7.0). So the id
//! goes last: a submit that dies before it leaves a RayJob that the deadline ends. Whatever
//! fails between the create and KubeRay following the job deletes the RayJob, so that its GPU
//! nodes go, as does a cluster taken away while the run is followed. Stop deletes the RayJob:
//! KubeRay's finalizer stops its job, and the cluster goes with it.
//!
//! Through Kubernetes only: the RayJob's cluster is found by its name, so no Ray address
//! applies.

use std::sync::Arc;
use std::time::Duration;

use gke_rl::{ArtifactKind, Artifacts, Deployment, lifecycle};
use gke_rl_kube::{Namespaced, RayJobState, Wait};

use crate::events::{JobEvent, LifecycleEvent, Progress};
use crate::head::{self, Head, HeadOptions};
use crate::jobs::Stopped;
use crate::run::{AfterRun, Ran, RayJobReport, RunOptions, Status};
use crate::{CommonError, Env, JobError, NotDeleted, jobs};

/// How long a finished RayJob of the same name, or a stopped one, may take to go.
const GONE_WAIT: Duration = Duration::from_secs(300);

/// Creates the RayJob of the rendered `ray-job.yaml`, waits for its cluster, submits the job to
/// it, names the job in the RayJob and follows the run (see the module's documentation).
pub(crate) async fn submit(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &RunOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Ran, JobError> {
    refuse_address(&options.head, env)?;
    let manifest = match &artifacts.ray_job {
        Some(ray_job) => ray_job.contents.as_str(),
        None => {
            return Err(CommonError::Invalid {
                errors: vec![format!("{}: not rendered, though job.mode is rayjob", ArtifactKind::RayJob.file())],
            }
            .into());
        }
    };
    let mut prepared = jobs::prepare(deployment, artifacts, &options.submit, env, &*progress)?;
    let id = prepared.submission_id().to_owned();
    let clusters = clusters(deployment, env).await?;
    let (name, namespace) = (deployment.job.name.as_str(), deployment.ray.namespace.as_str());
    // A cluster-mode RayCluster that is up holds the GPU nodes this RayJob's cluster needs
    // (`submit --as rayjob` on a cluster-mode deployment; deploy in rayjob mode deletes it).
    let long_lived = deployment.project.cluster_name.as_str();
    if clusters.is_suspended(long_lived).await? == Some(false) {
        return Err(JobError::ClusterHoldsNodes { cluster: long_lived.to_owned(), namespace: namespace.to_owned() });
    }
    // A finished RayJob keeps its name: it is replaced (its cluster, if still there for its TTL,
    // goes now); one that has not finished is refused.
    if let Some(state) = read(&clusters, name, deployment, env).await? {
        if !state.is_finished() && !state.deleting {
            return Err(JobError::RayJobBusy { name: name.to_owned(), namespace: namespace.to_owned(), state: state.state().to_owned() });
        }
        progress.lifecycle(LifecycleEvent::RayJobState { name, state: &state });
        stop_ray_job(deployment, &clusters, name, true, env, &*progress).await?;
    }
    // Armed before the create: an interrupt from here on deletes the RayJob, not the process.
    let mut interrupt = env.interrupt.arm()?;
    let uid = match clusters.create_ray_job(manifest, &id).await {
        Ok((_, uid)) => uid,
        Err(gke_rl_kube::Error::RayJobExists(_)) => {
            let state = read(&clusters, name, deployment, env).await?;
            let state = state.map_or_else(|| "just made by another submit".to_owned(), |state| state.state().to_owned());
            return Err(JobError::RayJobBusy { name: name.to_owned(), namespace: namespace.to_owned(), state });
        }
        // A create that got no answer may have made it: deleted if it is this submit's.
        Err(error @ gke_rl_kube::Error::Unreachable { .. }) => {
            return Err(match read(&clusters, name, deployment, env).await {
                Ok(Some(made)) if made.submission.as_deref() == Some(id.as_str()) => {
                    not_started(&clusters, deployment, Some(&made.uid), error.into(), &*progress).await
                }
                Ok(_) => error.into(),
                Err(unread) => told(deployment, Err(NotDeleted::Unread(Box::new(unread))), error.into()),
            });
        }
        Err(error) => return Err(error.into()),
    };
    progress.lifecycle(LifecycleEvent::RayJobCreated { namespace, name, submission: &id });
    let started = async {
        let cluster = wait_up(deployment, &clusters, &uid, &id, env, &*progress).await?;
        prepared.supervise_on(&gke_rl_in_cluster::supervisor::cluster_id_of(namespace, &cluster));
        let head = head::connect_to(deployment, clusters.clone(), cluster.clone(), &options.head, env, progress.clone()).await?;
        let id = jobs::submit_supervised(&head.client, prepared, &*progress).await?.id;
        if let Err(error) = name_the_job(deployment, &clusters, &uid, &id, env, &*progress).await {
            // The job dies with the cluster anyway; stopping it first is the orderly way.
            let _ = head.client.stop(&id).await;
            return Err(error);
        }
        Ok::<_, JobError>((id, head, cluster))
    };
    let started = tokio::select! {
        started = started => started,
        () = interrupt.wait() => Err(JobError::Interrupted { signal: interrupt.signal().unwrap_or(2) }),
    };
    let (id, head, cluster) = match started {
        Ok(started) => started,
        // Gone, or another submit's now: nothing of this submit's to delete.
        Err(error @ JobError::RayJobGone { .. }) => return Err(error),
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
    // No keeper runs beside a RayJob: a run its head lost is lost. The RayJob is watched
    // meanwhile: a cluster taken away ends following at once.
    let followed = tokio::select! {
        followed = jobs::follow_run(&head.client, &id, None, env, &*progress) => followed,
        state = taken_away(deployment, &clusters, &uid, &cluster, env) => return Err(preempted(deployment, &clusters, &uid, state, &*progress).await),
    };
    let observed = match followed {
        Ok(observed) => observed,
        Err(error) => {
            let now = read(&clusters, name, deployment, env).await.ok().flatten();
            return Err(match now.filter(|state| is_taken_away(state, &uid, &cluster)) {
                Some(state) => preempted(deployment, &clusters, &uid, state, &*progress).await,
                None => error,
            });
        }
    };
    if let jobs::Followed::Finished { job, log } = &observed.followed {
        progress.job(JobEvent::job_ended(job, log, Some(&observed.records)));
    }
    Ok(Ran::Followed { id, head, observed, after: AfterRun::RayJobEnds })
}

/// Whether the RayJob of `uid`, whose run went to `cluster`, has had that cluster taken away
/// (as Kueue's preemption does: `Suspending`, `Suspended`, or let back in on a new cluster;
/// KubeRay keeps `spec.jobId` and would wait for the job there without bound). Not one being
/// deleted: its cluster goes with it anyway.
fn is_taken_away(state: &RayJobState, uid: &str, cluster: &str) -> bool {
    state.uid == uid
        && !state.is_finished()
        && !state.deleting
        && (state.deployment.starts_with("Suspend") || state.cluster.as_deref() != Some(cluster))
}

/// Resolves, with the RayJob's state, once [`is_taken_away`] holds; looks as often as waits do.
async fn taken_away(deployment: &Deployment, clusters: &Namespaced, uid: &str, cluster: &str, env: &Env) -> RayJobState {
    loop {
        tokio::time::sleep(env.poll).await;
        if let Ok(Some(state)) = read(clusters, deployment.job.name.as_str(), deployment, env).await
            && is_taken_away(&state, uid, cluster)
        {
            return state;
        }
    }
}

/// The run is lost with its cluster: the RayJob is deleted, so that it waits for nothing.
async fn preempted(deployment: &Deployment, clusters: &Namespaced, uid: &str, state: RayJobState, progress: &dyn Progress) -> JobError {
    let deleted = delete(clusters, deployment, Some(uid), progress).await;
    let (name, namespace) = (deployment.job.name.to_string(), deployment.ray.namespace.to_string());
    JobError::RunPreempted { name, namespace, state: state.state().to_owned(), not_deleted: deleted.err().map(Box::new) }
}

/// `error`, which stopped a submit before its job was named, once the RayJob it made (the
/// one of `uid`, else whichever has the name) is deleted so that its nodes go, or with why it
/// could not be.
async fn not_started(
    clusters: &Namespaced,
    deployment: &Deployment,
    uid: Option<&str>,
    error: JobError,
    progress: &dyn Progress,
) -> JobError {
    told(deployment, delete(clusters, deployment, uid, progress).await.map_err(|e| NotDeleted::Refused(Box::new(e))), error)
}

/// `error`, which stopped a submit before its job was named, with whether its RayJob is
/// deleted, or why not and so until when its nodes stay.
fn told(deployment: &Deployment, deleted: Result<(), NotDeleted>, error: JobError) -> JobError {
    JobError::RayJobNotStarted {
        name: deployment.job.name.to_string(),
        namespace: deployment.ray.namespace.to_string(),
        deleted,
        deadline: deployment.job.rayjob_pre_running_deadline_seconds.map(|s| s.get()),
        source: Box::new(error),
    }
}

/// Deletes the deployment's RayJob (the one of `uid`, else whichever has the name), telling it.
async fn delete(
    clusters: &Namespaced,
    deployment: &Deployment,
    uid: Option<&str>,
    progress: &dyn Progress,
) -> Result<(), gke_rl_kube::Error> {
    let (name, namespace) = (deployment.job.name.as_str(), deployment.ray.namespace.as_str());
    if clusters.delete_ray_job(name, uid).await? {
        progress.lifecycle(LifecycleEvent::Deleted { kind: "RayJob", namespace, name });
    }
    Ok(())
}

/// How long naming the job in the RayJob, and KubeRay taking it up, may take.
const NAMING_WAIT: Duration = Duration::from_secs(120);

/// Names the job `id` in the RayJob of `uid` (`spec.jobId`; a patch that got no answer is sent
/// again) and waits until KubeRay follows it (`status.jobId`; a short job may be `Complete`
/// already). KubeRay may have failed the RayJob meanwhile (its pre-running deadline runs until
/// then).
async fn name_the_job(
    deployment: &Deployment,
    clusters: &Namespaced,
    uid: &str,
    id: &str,
    env: &Env,
    progress: &dyn Progress,
) -> Result<(), JobError> {
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
            read(clusters, name, deployment, env).await
        };
        match step.await {
            Ok(Some(state)) if state.uid == uid && state.following.as_deref() == Some(id) => return Ok(()),
            Ok(Some(state)) if state.uid == uid && state.is_finished() => return Err(ended(deployment, &state)),
            Ok(Some(state)) if state.uid == uid && state.deleting => return Err(gone(deployment, "it is being deleted")),
            Ok(Some(state)) if state.uid == uid => last = state.state().to_owned(),
            // Deleted (404), or made anew by someone (its uid is another: 422 to the patch).
            Ok(_) => return Err(gone(deployment, "it was deleted")),
            Err(e) if matches!(e.status_code(), Some(404 | 422)) => return Err(gone(deployment, "it was deleted")),
            Err(e @ gke_rl_kube::Error::Unreachable { .. }) => progress.lifecycle(LifecycleEvent::Retrying { error: &e }),
            Err(e) => return Err(e.into()),
        }
        tokio::time::sleep(env.poll).await;
    }
    Err(JobError::RayJobNotFollowing {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        id: id.to_owned(),
        state: last,
        waited: start.elapsed(),
    })
}

/// The deployment's RayJob went, or is another now, while its submit waited: `why`.
fn gone(deployment: &Deployment, why: &str) -> JobError {
    JobError::RayJobGone { name: deployment.job.name.to_string(), namespace: deployment.ray.namespace.to_string(), why: why.to_owned() }
}

/// The deployment's RayJob ended before its job ran: in KubeRay's words.
fn ended(deployment: &Deployment, state: &RayJobState) -> JobError {
    JobError::RayJobEnded {
        name: deployment.job.name.to_string(),
        namespace: deployment.ray.namespace.to_string(),
        state: state.state().to_owned(),
        reason: state.reason.clone(),
        message: state.message.clone(),
    }
}

/// The RayJob `name` as KubeRay reports it, its message cut to its first line and redacted:
/// KubeRay copies the end of the job's log into it (`rayjob_controller.go`, v1.7.0), where a
/// token may be.
async fn read(clusters: &Namespaced, name: &str, deployment: &Deployment, env: &Env) -> Result<Option<RayJobState>, gke_rl_kube::Error> {
    let mut state = clusters.ray_job(name).await?;
    if let Some(message) = state.as_mut().and_then(|s| s.message.as_mut()) {
        // Redacted whole, then cut: a secret cut first would no longer be found.
        let mut shown = gke_rl::secrets::redact(message.lines().next().unwrap_or_default()).into_owned();
        for secret in lifecycle::secret_variables(deployment).iter().filter_map(|v| env.var(v)).filter(|v| v.len() >= 8) {
            shown = shown.replace(&secret, gke_rl::secrets::REDACTED);
        }
        *message = shown.chars().take(MESSAGE_CHARS).collect();
    }
    Ok(state)
}

/// The most of KubeRay's message shown.
const MESSAGE_CHARS: usize = 300;

/// The Kubernetes API of the deployment's namespace; a failure to reach it is a failed
/// port-forward, which the front ends explain.
async fn clusters(deployment: &Deployment, env: &Env) -> Result<Namespaced, JobError> {
    head::namespaced(deployment, env).await.map_err(|source| JobError::PortForward { source: Box::new(source.into()) })
}

/// RayJob mode reaches the RayJob's cluster through Kubernetes only.
fn refuse_address(options: &HeadOptions, env: &Env) -> Result<(), JobError> {
    if options.forwards(env) { Ok(()) } else { Err(JobError::RayJobByAddress) }
}

/// Waits until KubeRay has the RayJob's cluster up (its pods all Ready once, and its dashboard
/// known), telling its states, its pods and what holds it back; the cluster's name. The RayJob
/// must stay the one made for `submission` (of `uid`). The wait is KubeRay's pre-running
/// deadline and a minute, not counting time held back (suspended, as by Kueue: KubeRay starts
/// its deadline anew after), which [`QUEUE_WAIT`] bounds. An API server out of reach is asked
/// again until the wait's end: a flex-start pool may have waited hours for these nodes.
async fn wait_up(
    deployment: &Deployment,
    clusters: &Namespaced,
    uid: &str,
    submission: &str,
    env: &Env,
    progress: &dyn Progress,
) -> Result<String, JobError> {
    let (name, namespace) = (deployment.job.name.as_str(), deployment.ray.namespace.as_str());
    let timeout = lifecycle::rayjob_start_wait(deployment);
    // Restarted when the RayJob is let go: KubeRay's own deadline starts anew then.
    let mut start = tokio::time::Instant::now();
    let queued_since = start;
    let (mut told, mut pods) = (None::<String>, crate::events::pod_reporter(progress));
    let (mut queued, mut queue_unknown) = (None, false);
    let mut last = String::new();
    loop {
        let held = last == "Suspended";
        if (!held && start.elapsed() >= timeout) || queued_since.elapsed() >= QUEUE_WAIT + timeout {
            return Err(JobError::RayJobNotUp {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
                state: last,
                waited: queued_since.elapsed(),
            });
        }
        match read(clusters, name, deployment, env).await {
            Ok(None) => return Err(gone(deployment, "it was deleted")),
            Ok(Some(state)) if state.uid != uid || state.submission.as_deref() != Some(submission) => {
                return Err(gone(
                    deployment,
                    &format!("it was deleted, and another submit ({}) made it anew", state.submission.as_deref().unwrap_or("unknown")),
                ));
            }
            Ok(Some(state)) => {
                if told.as_deref() != Some(state.state()) {
                    progress.lifecycle(LifecycleEvent::RayJobState { name, state: &state });
                    told = Some(state.state().to_owned());
                }
                if held && state.deployment != "Suspended" {
                    start = tokio::time::Instant::now();
                }
                // Held back, as Kueue does: why, whenever that changes. What cannot be read is
                // told once; the wait goes on.
                if state.deployment == "Suspended" {
                    match clusters.workload_of(uid).await {
                        Ok(now) if now != queued => {
                            if let Some(now) = &now {
                                progress.lifecycle(LifecycleEvent::Queued { name, queued: now });
                            }
                            queued = now;
                        }
                        Ok(_) => {}
                        Err(e) if !queue_unknown => {
                            progress.lifecycle(LifecycleEvent::QueueUnknown { error: &e });
                            queue_unknown = true;
                        }
                        Err(_) => {}
                    }
                }
                match &state.cluster {
                    _ if state.deleting => return Err(gone(deployment, "it is being deleted")),
                    _ if state.is_finished() => return Err(ended(deployment, &state)),
                    Some(cluster) if state.has_cluster_up() => return Ok(cluster.clone()),
                    // Its pods, while KubeRay makes the cluster.
                    Some(cluster) if state.deployment == "Initializing" => {
                        match clusters.readiness(cluster, deployment.topology.node_count.get()).await {
                            // Named before it is made: no pods to tell of until it is.
                            Ok(readiness) if readiness.created.is_some() => pods(&readiness),
                            Ok(_) => {}
                            Err(e @ gke_rl_kube::Error::Unreachable { .. }) => progress.lifecycle(LifecycleEvent::Retrying { error: &e }),
                            Err(e) => return Err(e.into()),
                        }
                    }
                    _ => {}
                }
                last = state.state().to_owned();
            }
            Err(e @ gke_rl_kube::Error::Unreachable { .. }) => progress.lifecycle(LifecycleEvent::Retrying { error: &e }),
            Err(e) => return Err(e.into()),
        }
        tokio::time::sleep(env.poll).await;
    }
}

/// The longest a RayJob may be held back (as Kueue holds it in its queue) before its cluster
/// comes: a week, beside the wait for the cluster itself.
const QUEUE_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// A RayJob found through Kubernetes, and its cluster's head when its job is named and its
/// cluster is there (its TTL after the run included).
struct Found {
    name: String,
    state: RayJobState,
    clusters: Namespaced,
    /// The head, or why it could not be reached; `None` where there is no job to ask about.
    head: Option<Result<Head, JobError>>,
}

/// The RayJob `name` (the config's by default), with its cluster's head when there is a job on
/// it to ask about.
async fn find(
    deployment: &Deployment,
    options: &HeadOptions,
    name: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Found, JobError> {
    refuse_address(options, env)?;
    let name = name.unwrap_or(deployment.job.name.as_str()).to_owned();
    let clusters = clusters(deployment, env).await?;
    let namespace = deployment.ray.namespace.to_string();
    let state = read(&clusters, &name, deployment, env).await?.ok_or_else(|| JobError::NoRayJob { name: name.clone(), namespace })?;
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
) -> Result<(Head, Option<String>), JobError> {
    let Found { name, state, head, .. } = find(deployment, options, name, env, progress).await?;
    let why = match head {
        Some(head) => return Ok((head?, state.job_id)),
        None if state.job_id.is_none() && !state.is_finished() && !state.deleting => "its job is not submitted yet",
        None => "it has no RayCluster up to reach",
    };
    Err(JobError::RayJobNoCluster { name, namespace: deployment.ray.namespace.to_string(), state: state.state().to_owned(), why })
}

/// Stops the RayJob `name` of the deployment: deletes it (KubeRay's finalizer stops its job,
/// and its cluster goes with it), with `wait` until it is gone.
pub(crate) async fn stop(
    deployment: &Deployment,
    options: &HeadOptions,
    name: &str,
    wait: bool,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<(String, Stopped), JobError> {
    refuse_address(options, env)?;
    let clusters = clusters(deployment, env).await?;
    let namespace = deployment.ray.namespace.to_string();
    let was = stop_ray_job(deployment, &clusters, name, wait, env, &*progress).await?;
    let was = was.ok_or_else(|| JobError::NoRayJob { name: name.to_owned(), namespace })?;
    Ok((name.to_owned(), Stopped::RayJobDeleted { was: Box::new(was), waited: wait }))
}

/// The RayJob `name` names (the config's by default): its job, while its cluster is up, else
/// what KubeRay says of it.
pub(crate) async fn status(
    deployment: &Deployment,
    options: &HeadOptions,
    name: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Status, JobError> {
    let Found { name, state, clusters, head } = find(deployment, options, name, env, progress).await?;
    let unreached = match head {
        Some(Ok(head)) => {
            let id = state.job_id.clone();
            return Ok(Status::Job(Box::new(jobs::report(deployment, &head, id.as_deref(), Some((name, state)), env).await?)));
        }
        Some(Err(error)) => Some(error),
        None => None,
    };
    let cluster = match state.cluster.clone() {
        // A RayJob names its cluster before it makes it, and while held back makes none.
        Some(cluster) if !state.is_finished() => {
            Some(jobs::readiness(deployment, &clusters, &cluster).await).filter(|(_, r)| r.as_ref().map_or(true, |r| r.created.is_some()))
        }
        _ => None,
    };
    let queued = match state.is_finished() {
        false => clusters.workload_of(&state.uid).await.transpose(),
        true => None,
    };
    Ok(Status::RayJob(Box::new(RayJobReport { name, state, cluster, unreached, queued })))
}

async fn stop_ray_job(
    deployment: &Deployment,
    clusters: &Namespaced,
    name: &str,
    wait: bool,
    env: &Env,
    progress: &dyn Progress,
) -> Result<Option<RayJobState>, JobError> {
    let namespace = deployment.ray.namespace.as_str();
    let Some(state) = read(clusters, name, deployment, env).await? else { return Ok(None) };
    if !state.deleting && clusters.delete_ray_job(name, None).await? {
        progress.lifecycle(LifecycleEvent::Deleted { kind: "RayJob", namespace, name });
    }
    if wait {
        clusters.wait_ray_job_gone(name, Wait { timeout: GONE_WAIT, poll: env.poll }).await?;
    }
    Ok(Some(state))
}
