//! `gke-rl logs`: a job's log, its restarts' included, or followed to its end.

use gke_rl_ops::commands::Logs;

use super::{Connection, ended, failed};

/// Print a job's log (default: the latest submitted job)
#[derive(clap::Args)]
pub struct LogsArgs {
    #[command(flatten)]
    connection: Connection,
    /// Submission id; in rayjob mode, the RayJob's name [default: the config's job.name]
    id: Option<String>,
    /// Keep streaming until the job ends
    #[arg(long, short)]
    follow: bool,
    /// With --follow: hide the log, keep the run's one-line progress
    #[arg(long, short, requires = "follow")]
    quiet: bool,
}

impl LogsArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let job = self.connection.job()?;
        if self.quiet {
            job.console.hide_job_log();
        }
        let d = &job.loaded.deployment;
        let logs = crate::runtime()?
            .block_on(gke_rl_ops::commands::logs(d, &job.head, self.id.as_deref(), self.follow, &job.env, job.console.clone()))
            .map_err(|e| failed(e, d))?;
        match logs {
            Logs::Followed { id, head, followed } => {
                let target = gke_rl_ops::mode::job_name(d, &head, &id, self.id.as_deref());
                ended(&head, &id, target, &followed, &job.console)
            }
            // The console printed each submission's log as it came.
            Logs::Read(_) => Ok(0),
            _ => anyhow::bail!("logs ended in a way this version does not know"),
        }
    }
}
