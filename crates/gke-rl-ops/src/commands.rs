//! The job commands whole, one call each: reach the deployment's head (the address given, or a
//! port-forward), act, and hand back what happened for a front end to show. Their policy lives
//! here: which address, bringing a suspended cluster back before a submit, suspending it after
//! the run when the deployment says so.

use std::sync::Arc;
use std::time::Duration;

use gke_rl::checkpoint_plan::Saving;
use gke_rl::model::{JobMode, WhenDone};
use gke_rl::{Artifacts, Deployment};
use gke_rl_in_cluster::records::Records;
use gke_rl_kube::{Queued, RayJobState, Readiness};
use gke_rl_ray::JobDetails;

use crate::events::{Event, Progress};
use crate::head::{Head, HeadOptions};
use crate::jobs::{self, Followed, Stopped};
use crate::rayjob;
use crate::run::{AfterRun, Ran, RunOptions};

use crate::{Env, Error};

/// How long a suspend after a run waits for the pods to be gone.
const SUSPEND_WAIT: Duration = Duration::from_secs(600);

/// Checks and packages the job (everything refusable is refused before connecting), brings a
/// suspended RayCluster back when the head is reached through Kubernetes, submits it under the
/// supervisor, follows the run through its restarts and then suspends the cluster when
/// `when_done` says so.
pub async fn submit(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &RunOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Ran, Error> {
    if let Some(ray_job) = &artifacts.ray_job {
        return crate::rayjob::submit(deployment, artifacts, &ray_job.contents, options, env, progress).await;
    }
    let prepared = jobs::prepare(deployment, artifacts, &options.submit, env, &*progress)?;
    if options.head.forwards(env) {
        // A suspended cluster has no head pod to forward to. What fails here, the port-forward
        // meets again and explains.
        match crate::suspend::set_suspended(deployment, false, options.restart_wait, env, &*progress).await {
            // Kueue holds it back still: there is no head to submit to, and Kueue said why.
            Err(Error::Kube(error)) if matches!(&*error, gke_rl_kube::Error::NotReady { readiness, .. } if readiness.state == gke_rl_kube::ClusterState::Queued) =>
            {
                return Err(Error::Kube(error));
            }
            Err(error) => progress.event(Event::SuspendedUnknown { error: &error }),
            Ok(_) => {}
        }
    }
    let head = crate::mode::connect(deployment, &options.head, env, progress.clone()).await?;
    let id = jobs::submit_supervised(&head.client, prepared, &*progress).await?.id;
    if options.no_wait {
        return Ok(Ran::Submitted { id, head });
    }
    let observed = jobs::follow_run(&head.client, &id, Some(options.restart_wait), env, &*progress).await?;
    let Followed::Finished { job, log } = &observed.followed else {
        return Ok(Ran::Followed { id, head, observed, after: AfterRun::Kept });
    };
    progress.event(Event::job_ended(job, log, Some(&observed.records)));
    let after = match options.when_done.unwrap_or(deployment.job.when_done) {
        WhenDone::Keep => AfterRun::Kept,
        WhenDone::Suspend if !head.is_forwarded() => AfterRun::NotSuspendedByAddress,
        WhenDone::Suspend => {
            crate::suspend::set_suspended(deployment, true, SUSPEND_WAIT, env, &*progress).await?;
            AfterRun::Suspended
        }
    };
    Ok(Ran::Followed { id, head, observed, after })
}

/// What `status` found.
#[non_exhaustive]
pub enum Status {
    /// The RayCluster is suspended: it has no head to ask.
    Suspended,
    /// The RayCluster waits in Kueue's queue (`job.queue`), suspended until admitted: what
    /// Kueue says of it.
    Queued(gke_rl_kube::Queued),
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
    pub cluster: Option<(String, Result<Readiness, Error>)>,
    /// Why its cluster's head could not be reached, when it should have been.
    pub unreached: Option<Error>,
    /// What Kueue says of it, when Kueue manages it and it has not finished.
    pub queued: Option<Result<Queued, Error>>,
}

/// A job, its run and its cluster.
pub struct JobReport {
    /// The newest submission of the chain.
    pub job: JobDetails,
    /// The earlier submissions the head still knows, oldest first.
    pub earlier: Vec<JobDetails>,
    /// What the run's supervisors recorded in its log.
    pub records: Records,
    /// Why the log (and so the records) could not be read, if it could not.
    pub records_unread: Option<Error>,
    /// The RayCluster's name and pods, when the head is reached through Kubernetes.
    pub cluster: Option<(String, Result<Readiness, Error>)>,
    /// In `rayjob` mode, the RayJob's name and state.
    pub ray_job: Option<(String, RayJobState)>,
    /// The job as JSON, secrets redacted.
    pub redacted: serde_json::Value,
}

/// The job `id` names (its newest restart), else the latest submission: its state, its earlier
/// submissions, its run's records and its cluster. A suspended cluster is the answer itself.
/// In `rayjob` mode `id` names a RayJob [default: the config's]: its job, while its cluster is
/// up, else what KubeRay says of it.
pub async fn status(
    deployment: &Deployment,
    options: &HeadOptions,
    id: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Status, Error> {
    if deployment.job.mode == JobMode::Rayjob {
        let rayjob::Found { name, state, clusters, head } = rayjob::find(deployment, options, id, env, progress).await?;
        let unreached = match head {
            Some(Ok(head)) => {
                let id = state.job_id.clone();
                return job_report(deployment, &head, id.as_deref(), Some((name, state)), env).await;
            }
            Some(Err(error)) => Some(error),
            None => None,
        };
        let cluster = match state.cluster.clone() {
            // A RayJob names its cluster before it makes it, and while held back makes none.
            Some(cluster) if !state.is_finished() => {
                Some(readiness(deployment, &clusters, &cluster).await).filter(|(_, r)| r.as_ref().map_or(true, |r| r.created.is_some()))
            }
            _ => None,
        };
        let queued = match state.is_finished() {
            false => clusters.workload_of(&state.uid).await.map_err(Error::from).transpose(),
            true => None,
        };
        return Ok(Status::RayJob(Box::new(RayJobReport { name, state, cluster, unreached, queued })));
    }
    if options.forwards(env) && matches!(crate::suspend::is_suspended(deployment, env).await, Ok(Some(true))) {
        // Kueue suspends a queued cluster until it admits it; one gke-rl suspended is deactivated.
        if deployment.job.queue.is_some() {
            let clusters = crate::head::ray_clusters(deployment, env).await?;
            match clusters.queued(deployment.project.cluster_name.as_str()).await {
                Ok(Some(queued)) if queued.is_held() => return Ok(Status::Queued(queued)),
                Ok(_) => {}
                Err(error) => progress.event(Event::QueueUnknown { error: &error }),
            }
        }
        return Ok(Status::Suspended);
    }
    let head = crate::mode::connect(deployment, options, env, progress).await?;
    job_report(deployment, &head, id, None, env).await
}

/// The report of the job `id` names (its newest restart), else of the latest submission.
async fn job_report(
    deployment: &Deployment,
    head: &Head,
    id: Option<&str>,
    ray_job: Option<(String, RayJobState)>,
    env: &Env,
) -> Result<Status, Error> {
    let client = &head.client;
    let chain = chain_of(client, id).await?;
    let (latest, earlier_ids) = chain.split_last().ok_or(Error::NoJobs)?;
    let job = client.job(latest).await?;
    let mut earlier = Vec::new();
    for id in earlier_ids {
        // A head that restarted forgot the earlier submissions.
        earlier.extend(client.job(id).await.ok());
    }
    // The records, read as the log streams: a log of any size, in bounded memory.
    let mut records = Records::default();
    let records_unread =
        gke_rl_ray::read_log(client, latest, LOG_QUIET, LOG_WITHIN, |text| records.feed(text)).await.err().map(Error::from);
    records.finish();
    let cluster = match head.clusters() {
        Some((clusters, name)) => Some(readiness(deployment, clusters, name).await),
        None => None,
    };
    let redacted = jobs::redacted(&job, deployment, client.token(), env);
    Ok(Status::Job(Box::new(JobReport { job, earlier, records, records_unread, cluster, ray_job, redacted })))
}

/// The RayCluster `name`'s pods, as a report shows them: with their name, and what kept them
/// from being read.
async fn readiness(deployment: &Deployment, clusters: &gke_rl_kube::RayClusters, name: &str) -> (String, Result<Readiness, Error>) {
    (name.to_owned(), clusters.readiness(name, deployment.topology.node_count.get()).await.map_err(Error::from))
}

/// The head to ask about the job `id` names, and the id to ask about: in `rayjob` mode `id`
/// names a RayJob [default: the config's], and the job is the one it follows.
async fn reach(
    deployment: &Deployment,
    options: &HeadOptions,
    id: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<(Head, Option<String>), Error> {
    match deployment.job.mode {
        JobMode::Rayjob => rayjob::connect(deployment, options, id, env, progress).await,
        JobMode::Cluster => Ok((crate::head::connect_cluster(deployment, options, env, progress).await?, id.map(str::to_owned))),
    }
}

/// What `logs` did.
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one per command
pub enum Logs {
    /// Each submission's log went out as an [`Event::JobLog`], oldest first: this many.
    Read(usize),
    /// The newest submission, followed to its end or detached from.
    Followed {
        /// Its submission id.
        id: String,
        /// The head it runs on.
        head: Head,
        /// How following ended.
        followed: Followed,
    },
}

/// The log of the job `id` names (every submission of its chain of restarts, each as it is
/// read), else of the latest submission; with `follow`, the newest submission's, streamed to
/// its end.
pub async fn logs(
    deployment: &Deployment,
    options: &HeadOptions,
    id: Option<&str>,
    follow: bool,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Logs, Error> {
    let (head, id) = reach(deployment, options, id, env, progress.clone()).await?;
    let chain = chain_of(&head.client, id.as_deref()).await?;
    if follow {
        let id = chain.last().cloned().ok_or(Error::NoJobs)?;
        let followed = jobs::follow(&head.client, &id, env, &*progress).await?;
        if let Followed::Finished { job, log } = &followed {
            progress.event(Event::job_ended(job, log, None));
        }
        return Ok(Logs::Followed { id, head, followed });
    }
    let restarted = chain.len() > 1;
    for id in &chain {
        let mut introduce = restarted;
        gke_rl_ray::read_log(&head.client, id, LOG_QUIET, LOG_WITHIN, |text| {
            progress.event(Event::JobLog { id, text, introduce });
            introduce = false;
        })
        .await?;
    }
    Ok(Logs::Read(chain.len()))
}

/// The report of the run the job `id` names (else the latest submission), from the logs of all
/// its submissions read through the Jobs API: its wall time runs from Ray's start of the first
/// to the end of the last (now, while it runs), priced at the deployment's hourly cost. With
/// the run's first submission id, which names it.
pub async fn report(
    deployment: &Deployment,
    options: &HeadOptions,
    id: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<(String, gke_rl_in_cluster::run_report::Report), Error> {
    let (head, id) = reach(deployment, options, id, env, progress).await?;
    // The whole run, from its first submission, whichever of them was named (or is the latest).
    let named = jobs::job_id(&head.client, id.as_deref()).await?;
    let chain = jobs::chain(&head.client, &named).await?;
    let first = chain.first().cloned().unwrap_or(named);
    let mut run = RunText::default();
    let (mut started, mut ended, mut terminal) = (None, None, false);
    for id in &chain {
        let job = head.client.job(id).await?;
        started = started.or(job.start_time);
        terminal = job.status.is_terminal();
        ended = if terminal { job.end_time } else { None };
        gke_rl_ray::read_log(&head.client, id, LOG_QUIET, LOG_WITHIN, |text| run.feed(text)).await?;
        // A submission cut mid-line must not join the next's first line.
        run.end_submission();
    }
    let wall_s = started.map(|start| ended.unwrap_or_else(|| env.clock.unix_millis()).saturating_sub(start) as f64 / 1000.0);
    // The config's price is for its cluster: a head of one's own without a GPU is not priced.
    let unpriced = match head.is_forwarded() {
        true => None,
        false => head.client.gpus().await.ok().filter(|gpus| *gpus == 0.0).map(|_| {
            let estimate = gke_rl::cost::estimate(deployment);
            format!(
                "the Ray cluster at {} has no GPU, and the config's {}/hour is for its GPU nodes",
                head.client.address(),
                gke_rl::cost::dollars(estimate.per_hour())
            )
        }),
    };
    Ok((first, run.report(deployment, started.map(|start| start as f64 / 1000.0), wall_s, terminal, unpriced)))
}

/// A running job's log is read until it has been quiet this long: what it had written.
const LOG_QUIET: Duration = Duration::from_secs(2);
/// A log is read for at most this long (a running job that never stops printing).
const LOG_WITHIN: Duration = Duration::from_secs(300);

/// A run's log read without arrival times: its steps and its supervisor's records.
#[derive(Default)]
struct RunText {
    log: gke_rl_in_cluster::run_log::RunLog,
    records: Records,
}

impl RunText {
    fn feed(&mut self, text: &str) {
        self.log.feed(text, None);
        self.records.feed(text);
    }

    /// The end of one submission's log: its unfinished last line is dropped.
    fn end_submission(&mut self) {
        self.log.drop_partial_line();
        self.records.drop_partial_line();
    }

    /// The report of a run that started at `started_at` (seconds since the epoch) and ran for
    /// `wall_s`, priced at the deployment's hourly cost.
    fn report(
        &self,
        deployment: &Deployment,
        started_at: Option<f64>,
        wall_s: Option<f64>,
        ended: bool,
        unpriced: Option<String>,
    ) -> gke_rl_in_cluster::run_report::Report {
        let per_hour = Some(gke_rl::cost::estimate(deployment).per_hour());
        let saving = Some((Saving::of(deployment), Saving::tier_ceiling(deployment)));
        gke_rl_in_cluster::run_report::report(&gke_rl_in_cluster::run_report::Inputs {
            log: &self.log,
            records: &self.records,
            wall_s,
            per_hour,
            started_at,
            saving,
            ended,
            unpriced,
        })
    }
}

/// The report of a run from a saved log: its wall time from its supervisor's records, if they
/// say, priced at the deployment's hourly cost.
pub fn report_of_log(deployment: &Deployment, path: &std::path::Path) -> Result<gke_rl_in_cluster::run_report::Report, Error> {
    let mut run = RunText::default();
    crate::files::read_log(path, |text| run.feed(text))?;
    let span = run.records.span();
    let wall_s = span.and_then(|(start, end)| Some(end? - start));
    Ok(run.report(deployment, span.map(|(start, _)| start), wall_s, run.records.ended().is_some(), None))
}

/// Stops the newest submission of the job `id` names; with `wait`, until it has ended. In
/// `rayjob` mode `id` names a RayJob, which is deleted: KubeRay stops its job, and its cluster
/// goes with it.
pub async fn stop(
    deployment: &Deployment,
    options: &HeadOptions,
    id: &str,
    wait: bool,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<(String, Stopped), Error> {
    if deployment.job.mode == JobMode::Rayjob {
        let namespace = deployment.ray.namespace.to_string();
        let was = rayjob::stop_by_name(deployment, options, id, wait, env, &*progress).await?;
        let was = was.ok_or_else(|| Error::NoRayJob { name: id.to_owned(), namespace })?;
        return Ok((id.to_owned(), Stopped::RayJobDeleted { was: Box::new(was), waited: wait }));
    }
    let head = crate::mode::connect(deployment, options, env, progress.clone()).await?;
    let id = jobs::job_id(&head.client, Some(id)).await?;
    let stopped = jobs::stop(&head.client, &id, wait, env, &*progress).await?;
    Ok((id, stopped))
}

/// The cluster's jobs (not the supervisors' own driver rows), each with its JSON form, secrets redacted.
pub async fn list(
    deployment: &Deployment,
    options: &HeadOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Vec<(JobDetails, serde_json::Value)>, Error> {
    let head = crate::mode::connect(deployment, options, env, progress).await?;
    let jobs = head.client.jobs().await?;
    Ok(jobs
        .into_iter()
        // A supervisor's own driver row is part of its submission, not a job of the user's.
        .filter(|j| !gke_rl_in_cluster::supervisor::is_supervisor_driver(&j.kind, j.submission_id.as_deref(), &j.entrypoint))
        .map(|job| {
            let redacted = jobs::redacted(&job, deployment, head.client.token(), env);
            (job, redacted)
        })
        .collect())
}

/// The submissions of the job `id` names with its restarts, oldest first; without an id, the
/// most recently started submission alone.
async fn chain_of(client: &gke_rl_ray::Client, id: Option<&str>) -> Result<Vec<String>, Error> {
    Ok(match id {
        Some(id) => jobs::chain(client, id).await?,
        None => vec![jobs::job_id(client, None).await?],
    })
}
