//! `gke-rl jobs`: the cluster's jobs, a line each or as JSON.

use gke_rl_in_cluster::supervisor;

use super::{Connection, duration, failed, started};
use crate::terminal::outln;

/// List the cluster's jobs
#[derive(clap::Args)]
pub struct JobsArgs {
    #[command(flatten)]
    connection: Connection,
    /// Print JSON (secret values redacted)
    #[arg(long)]
    json: bool,
}

impl JobsArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let job = self.connection.job()?;
        let d = &job.loaded.deployment;
        let jobs = crate::runtime()?
            .block_on(gke_rl_ops::commands::list(d, &job.head, &job.env, job.console.clone()))
            .map_err(|e| failed(e, d))?;
        if self.json {
            let redacted: Vec<&serde_json::Value> = jobs.iter().map(|(_, redacted)| redacted).collect();
            outln!("{}", serde_json::to_string_pretty(&redacted)?);
            return Ok(0);
        }
        let now = job.env.clock.unix_millis();
        outln!("{:<28} {:<10} {:<20} {:>9}  ENTRYPOINT", "ID", "STATUS", "STARTED (UTC)", "DURATION");
        for (details, _) in &jobs {
            let command = supervisor::command_of(&details.entrypoint);
            let entrypoint: String = command.as_deref().unwrap_or(&details.entrypoint).chars().take(60).collect();
            let status = details.status.to_string();
            let line = format!("{:<28} {status:<10} {:<20} {:>9}  {entrypoint}", details.id(), started(details), duration(details, now));
            outln!("{}", crate::terminal::shown(&line));
        }
        Ok(0)
    }
}
