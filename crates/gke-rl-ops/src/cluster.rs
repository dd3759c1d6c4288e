//! Cluster mode: jobs go to the long-lived RayCluster's head, reached by the address given or a
//! port-forward to its head pod ([`crate::head`]). A submit brings a suspended RayCluster back
//! first and, when the deployment says so, suspends it after the run; a suspended cluster is
//! its own status.

use std::sync::Arc;
use std::time::Duration;

use gke_rl::model::WhenDone;
use gke_rl::{Artifacts, Deployment};

use crate::events::{JobEvent, LifecycleEvent, Progress};
use crate::head::{self, Head, HeadOptions};
use crate::jobs::{self, Followed, Stopped};
use crate::run::{AfterRun, Ran, RunOptions, Status};
use crate::{CommonError, Env, JobError, LifecycleError};

/// How long a suspend after a run waits for the pods to be gone.
const SUSPEND_WAIT: Duration = Duration::from_secs(600);

/// The RayCluster's head, and the job `id` names there (a submission id, as given).
pub(crate) async fn connect(
    deployment: &Deployment,
    options: &HeadOptions,
    id: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<(Head, Option<String>), JobError> {
    Ok((head::connect_cluster(deployment, options, env, progress).await?, id.map(str::to_owned)))
}

/// Checks and packages the job (everything refusable is refused before connecting), brings a
/// suspended RayCluster back when the head is reached through Kubernetes, submits it under the
/// supervisor, follows the run through its restarts and then suspends the cluster when
/// `when_done` says so.
pub(crate) async fn submit(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &RunOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Ran, JobError> {
    let prepared = jobs::prepare(deployment, artifacts, &options.submit, env, &*progress)?;
    if options.head.forwards(env) {
        // A suspended cluster has no head pod to forward to. What fails here, the port-forward
        // meets again and explains.
        match crate::suspend::set_suspended(deployment, false, options.restart_wait, env, &*progress).await {
            // Kueue holds it back still: there is no head to submit to, and Kueue said why.
            Err(LifecycleError::Common(CommonError::Kube(error))) if matches!(&*error, gke_rl_kube::Error::NotReady { readiness, .. } if readiness.state == gke_rl_kube::ClusterState::Queued) =>
            {
                return Err(CommonError::Kube(error).into());
            }
            Err(error) => progress.job(JobEvent::SuspendedUnknown { error: &error }),
            Ok(_) => {}
        }
    }
    let (head, _) = connect(deployment, &options.head, None, env, progress.clone()).await?;
    let id = jobs::submit_supervised(&head.client, prepared, &*progress).await?.id;
    if options.no_wait {
        return Ok(Ran::Submitted { id, head });
    }
    let observed = jobs::follow_run(&head.client, &id, Some(options.restart_wait), env, &*progress).await?;
    let Followed::Finished { job, log } = &observed.followed else {
        return Ok(Ran::Followed { id, head, observed, after: AfterRun::Kept });
    };
    progress.job(JobEvent::job_ended(job, log, Some(&observed.records)));
    let after = match options.when_done.unwrap_or(deployment.job.when_done) {
        WhenDone::Keep => AfterRun::Kept,
        WhenDone::Suspend if !head.is_forwarded() => AfterRun::NotSuspendedByAddress,
        WhenDone::Suspend => {
            crate::suspend::set_suspended(deployment, true, SUSPEND_WAIT, env, &*progress)
                .await
                .map_err(|e| JobError::SuspendAfterRun(Box::new(e)))?;
            AfterRun::Suspended
        }
    };
    Ok(Ran::Followed { id, head, observed, after })
}

/// The job `id` names (its newest restart), else the latest submission: its state, its earlier
/// submissions, its run's records and its cluster. A suspended cluster is the answer itself.
pub(crate) async fn status(
    deployment: &Deployment,
    options: &HeadOptions,
    id: Option<&str>,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Status, JobError> {
    if options.forwards(env) && matches!(crate::suspend::is_suspended(deployment, env).await, Ok(Some(true))) {
        // Kueue suspends a queued cluster until it admits it; one gke-rl suspended is deactivated.
        if deployment.job.queue.is_some() {
            let clusters = head::namespaced(deployment, env).await?;
            match clusters.queued(deployment.project.cluster_name.as_str()).await {
                Ok(Some(queued)) if queued.is_held() => return Ok(Status::Queued(queued)),
                Ok(_) => {}
                Err(error) => progress.lifecycle(LifecycleEvent::QueueUnknown { error: &error }),
            }
        }
        return Ok(Status::Suspended);
    }
    let (head, id) = connect(deployment, options, id, env, progress).await?;
    Ok(Status::Job(Box::new(jobs::report(deployment, &head, id.as_deref(), None, env).await?)))
}

/// Stops the newest submission of the job `id` names; with `wait`, until it has ended.
pub(crate) async fn stop(
    deployment: &Deployment,
    options: &HeadOptions,
    id: &str,
    wait: bool,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<(String, Stopped), JobError> {
    let (head, _) = connect(deployment, options, None, env, progress.clone()).await?;
    let id = jobs::job_id(&head.client, Some(id)).await?;
    let stopped = jobs::stop(&head.client, &id, wait, env, &*progress).await?;
    Ok((id, stopped))
}
