//! The checkpoint lister ([`gke_rl_in_cluster::checkpoints`]) asked on the RayCluster's head: one
//! small job each question, its program and request its only files, its answer read from its
//! log once it has ended. A job that ended without the answer's last line gave no answer.

use std::time::Duration;

use gke_rl_in_cluster::checkpoints::{self, Failure, Request};
use gke_rl_ray::Client;

use crate::env::Armed;
use crate::events::{LifecycleEvent, Progress};
use crate::{Env, KeepError, LifecycleError};

/// How long one question may take: a survey walks the newest step of each folder, some thousands
/// of files.
const WITHIN: Duration = Duration::from_secs(600);

/// Asks the lister on the head `client` reaches; its job's log, or why there is none.
pub(crate) async fn ask(
    client: &Client,
    request: &Request,
    what: &str,
    env: &Env,
    interrupt: &mut Armed,
    progress: &dyn Progress,
) -> Result<(String, String), LifecycleError> {
    let files = vec![
        (checkpoints::PROGRAM_FILE.to_owned(), checkpoints::program().into_bytes(), false),
        (checkpoints::REQUEST_FILE.to_owned(), request.to_json().into_bytes(), false),
    ];
    let prepared = crate::jobs::own_job("checkpoints", files, gke_rl::quote::command(&checkpoints::entrypoint()))?;
    let id = crate::jobs::submit(client, prepared, progress).await?;
    progress.lifecycle(LifecycleEvent::Listing { what, id: &id });
    match crate::jobs::ended(client, &id, WITHIN, env, interrupt).await? {
        Some(_) => Ok((client.logs(&id).await?, id)),
        None => Err(LifecycleError::Interrupted { signal: interrupt.signal().unwrap_or(2) }),
    }
}

/// The answer to `request`, read by `read` from the log, or why there is none.
pub(crate) async fn answer<T>(
    client: &Client,
    request: &Request,
    what: &str,
    read: fn(&str) -> Result<T, Failure>,
    env: &Env,
    interrupt: &mut Armed,
    progress: &dyn Progress,
) -> Result<T, LifecycleError> {
    let (log, id) = ask(client, request, what, env, interrupt, progress).await?;
    read(&log).map_err(|failure| KeepError::Lister { what: what.to_owned(), id, why: failure.to_string() }.into())
}
