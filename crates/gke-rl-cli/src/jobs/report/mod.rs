//! `gke-rl report`: where a run is, its steps, goodput and cost, from its log through the Jobs
//! API, or from a saved log without a cluster; `--out` adds a self-contained HTML page of plots.

mod html;

use std::path::PathBuf;

use anyhow::Context as _;

use gke_rl_in_cluster::lustre_usage::Usage;
use gke_rl_in_cluster::run_report::Report;

use super::{Connection, failed};
use crate::terminal::outln;

/// Report a run's progress, goodput and cost from its log (default: the latest submitted job)
#[derive(clap::Args)]
pub struct ReportArgs {
    #[command(flatten)]
    connection: Connection,
    /// Submission id (any of a run's restarts)
    id: Option<String>,
    /// Read a saved log instead of the cluster's (its wall time comes from the supervisor's records, if it has them)
    #[arg(long, value_name = "FILE", conflicts_with = "id")]
    log: Option<PathBuf>,
    /// Output format: text, or json (every step's figures)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also write DIR/report.html: the plots in one file that loads nothing from anywhere (for a job on the cluster, with its Lustre instance's figures whenever gcloud can read them)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Add the config's Lustre instance's read and write throughput and space used during the run, from Cloud Monitoring with gcloud's login; an error (after the rest) when they cannot be read
    #[arg(long)]
    lustre: bool,
    /// Cloud Monitoring's endpoint; tests point it at a fake on loopback, the only other place it may be
    #[arg(long, value_name = "URL", env = "GKE_RL_MONITORING_ENDPOINT", default_value = gke_rl_in_cluster::lustre_usage::ENDPOINT, hide = true)]
    monitoring_endpoint: String,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

impl ReportArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let (mut report, title, deployment) = match &self.log {
            Some(path) => {
                let loaded = self.connection.config()?;
                let report = gke_rl_ops::commands::report_of_log(&loaded.deployment, path)
                    .map_err(|e| anyhow::anyhow!("{}", gke_rl_ops::chain(&e)))?;
                (report, path.display().to_string(), loaded.deployment)
            }
            None => {
                let job = self.connection.job()?;
                let d = &job.loaded.deployment;
                let (id, report) = crate::runtime()?
                    .block_on(gke_rl_ops::commands::report(d, &job.head, self.id.as_deref(), &job.env, job.console.clone()))
                    .map_err(|e| failed(e, d))?;
                (report, id, job.loaded.deployment)
            }
        };
        // Asked for, Lustre's side must be read; a live run's page has it whenever it can be (a
        // saved log's page stays offline unless asked).
        let mut lustre_failed = None;
        if self.lustre || (self.out.is_some() && self.log.is_none()) {
            match self.lustre_usage(&report, &deployment, crate::runtime()?) {
                Ok(usage) => report.lustre = Some(usage),
                Err(e) => lustre_failed = Some(e),
            }
        }
        let lustre_missing = lustre_failed.as_ref().map(|e| gke_rl_ops::chain(e));
        if let Some(why) = lustre_missing.as_ref().filter(|_| !self.lustre) {
            crate::terminal::errln!("note: the page has no Lustre figures: {}", crate::terminal::shown(why));
        }
        if let Some(out) = &self.out {
            std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
            gke_rl_ops::files::remove_temporaries_on_signals().context("cannot listen for signals")?;
            let path = out.join("report.html");
            gke_rl_ops::files::write_atomically(&path, html::page(&report, &title, lustre_missing.as_deref())?.as_bytes(), false)?;
            crate::terminal::errln!("wrote {}", crate::terminal::shown(&path.display().to_string()));
        }
        match self.format {
            Format::Text => outln!("{}", crate::terminal::shown(report.summary().trim_end())),
            Format::Json => outln!("{}", serde_json::to_string_pretty(&report)?),
        }
        match lustre_failed {
            Some(e) if self.lustre => Err(crate::reported(e, &|e| gke_rl_ops::chain(e))),
            _ => Ok(0),
        }
    }

    /// What the config's Lustre instance did during the run, from Cloud Monitoring.
    fn lustre_usage(
        &self,
        report: &Report,
        deployment: &gke_rl::Deployment,
        runtime: crate::Runtime,
    ) -> Result<Usage, gke_rl_ops::ReportError> {
        let Some(window) = report.window() else {
            let why = if self.log.is_some() {
                "the log has no supervisor's record of its start, or of its end"
            } else {
                "Ray has no start time for the job"
            };
            return Err(gke_rl_ops::ReportError::NoRunWindow { why });
        };
        let instance = crate::terminal::shown(deployment.lustre.instance_id.as_str());
        crate::terminal::errln!("reading what the Lustre instance {instance} did from Cloud Monitoring");
        let env = gke_rl_ops::Env::real();
        runtime.block_on(gke_rl_ops::monitoring::lustre_usage(deployment, window, &self.monitoring_endpoint, &env))
    }
}
