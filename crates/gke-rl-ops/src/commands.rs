//! The job commands whole, one call each: reach the deployment's head through its job mode
//! ([`crate::mode`]), act, and hand back what happened for a front end to show. What differs
//! between the modes is the modes' own; what is here is the same in both.

use std::sync::Arc;

use gke_rl::checkpoint_plan::Saving;
use gke_rl::{Artifacts, Deployment};
use gke_rl_in_cluster::records::Records;
use gke_rl_ray::JobDetails;

use crate::events::{JobEvent, Progress};
use crate::head::{Head, HeadOptions};
use crate::jobs::{self, Followed, LOG_QUIET, LOG_WITHIN, Stopped, chain_of};
use crate::mode::Mode;
use crate::run::{Ran, RunOptions, Status};
use crate::{Env, JobError};

/// Checks and packages the job (everything refusable is refused before connecting), submits it
/// under the supervisor and follows the run through its restarts, as the deployment's job mode
/// does it: in cluster mode bringing a suspended RayCluster back first and suspending it after
/// the run when `when_done` says so; in RayJob mode through a RayJob of its own.
pub async fn submit(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &RunOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Ran, JobError> {
    Mode::of(deployment).submit(deployment, artifacts, options, env, progress).await
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
) -> Result<Status, JobError> {
    Mode::of(deployment).status(deployment, options, id, env, progress).await
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
) -> Result<(String, Stopped), JobError> {
    Mode::of(deployment).stop(deployment, options, id, wait, env, progress).await
}

/// What `logs` did.
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one per command
pub enum Logs {
    /// Each submission's log went out as a [`JobEvent::JobLog`], oldest first: this many.
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
) -> Result<Logs, JobError> {
    let (head, id) = Mode::of(deployment).connect(deployment, options, id, env, progress.clone()).await?;
    let chain = chain_of(&head.client, id.as_deref()).await?;
    if follow {
        let id = chain.last().cloned().ok_or(JobError::NoJobs)?;
        let followed = jobs::follow(&head.client, &id, env, &*progress).await?;
        if let Followed::Finished { job, log } = &followed {
            progress.job(JobEvent::job_ended(job, log, None));
        }
        return Ok(Logs::Followed { id, head, followed });
    }
    let restarted = chain.len() > 1;
    for id in &chain {
        let mut introduce = restarted;
        let read = gke_rl_ray::read_log(&head.client, id, LOG_QUIET, LOG_WITHIN, |text| {
            progress.job(JobEvent::JobLog { id, text, introduce });
            introduce = false;
        })
        .await?;
        if read == gke_rl_ray::LogRead::Empty {
            progress.job(JobEvent::EmptyLog { id });
        }
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
) -> Result<(String, gke_rl_in_cluster::run_report::Report), JobError> {
    let (head, id) = Mode::of(deployment).connect(deployment, options, id, env, progress).await?;
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
        // An empty log is no run without restarts, steps or end: it is said, never reported.
        if gke_rl_ray::read_log(&head.client, id, LOG_QUIET, LOG_WITHIN, |text| run.feed(text)).await? == gke_rl_ray::LogRead::Empty {
            return Err(JobError::EmptyLog { id: id.clone() });
        }
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
        // The last storage check of this deployment's mount, where one is kept; else the tier.
        let prediction = crate::storage::measured_save(deployment)
            .and_then(|measured| measured.predict(deployment))
            .or_else(|| gke_rl::checkpoint_plan::at_the_tier(deployment));
        let saving = Some((Saving::of(deployment), prediction));
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
pub fn report_of_log(deployment: &Deployment, path: &std::path::Path) -> Result<gke_rl_in_cluster::run_report::Report, crate::CommonError> {
    let mut run = RunText::default();
    crate::files::read_log(path, |text| run.feed(text))?;
    let span = run.records.span();
    let wall_s = span.and_then(|(start, end)| Some(end? - start));
    Ok(run.report(deployment, span.map(|(start, _)| start), wall_s, run.records.ended().is_some(), None))
}

/// The cluster's jobs (not the supervisors' own driver rows), each with its JSON form, secrets redacted.
pub async fn list(
    deployment: &Deployment,
    options: &HeadOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Vec<(JobDetails, serde_json::Value)>, JobError> {
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
