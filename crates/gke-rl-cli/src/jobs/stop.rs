//! `gke-rl stop`: stop a job's newest restart and wait until it has stopped.

use gke_rl_ops::jobs::Stopped;

use super::{Connection, failed};

/// Stop a running job and wait until it has stopped
#[derive(clap::Args)]
pub struct StopArgs {
    #[command(flatten)]
    connection: Connection,
    /// Submission id (its newest restart is stopped); in rayjob mode, the RayJob's name (it is
    /// deleted, and its cluster with it)
    id: String,
    /// Return once the stop is requested
    #[arg(long)]
    no_wait: bool,
}

impl StopArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let job = self.connection.job()?;
        let d = &job.loaded.deployment;
        let (id, stopped) = crate::runtime()?
            .block_on(gke_rl_ops::commands::stop(d, &job.head, &self.id, !self.no_wait, &job.env, job.console.clone()))
            .map_err(|e| failed(e, d))?;
        match stopped {
            Stopped::NotRunning(status) => job.console.say(format_args!("job {id} was not running: {status}")),
            Stopped::Ended(status) => job.console.say(format_args!("job {id} {status}")),
            Stopped::RayJobDeleted { was, waited } => {
                let deleted = if waited { "is deleted" } else { "is being deleted" };
                let after =
                    if was.is_finished() { "its cluster goes with it" } else { "KubeRay stops its job, and its cluster goes with it" };
                job.console.say(format_args!("RayJob {id} ({}) {deleted}: {after}", was.state()));
            }
            _ => {}
        }
        Ok(0)
    }
}
