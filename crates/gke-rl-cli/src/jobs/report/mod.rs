//! `gke-rl report`: where a run is, its steps, goodput and cost, from its log through the Jobs
//! API, or from a saved log without a cluster; `--out` adds a self-contained HTML page of plots.

mod html;

use std::path::PathBuf;

use anyhow::Context as _;

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
    /// Also write DIR/report.html: the plots in one file that loads nothing from anywhere (with the Lustre instance's figures whenever gcloud can read them)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Add the Lustre instance's read and write throughput and space used during the run, from Cloud Monitoring with gcloud's login; an error when they cannot be read
    #[arg(long)]
    lustre: bool,
    /// Cloud Monitoring's endpoint; tests point it at a fake on loopback, the only other place it may be
    #[arg(long, value_name = "URL", env = "GKE_RL_MONITORING_ENDPOINT", default_value = gke_rl_ops::monitoring::ENDPOINT, hide = true)]
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
                    .map_err(|e| crate::reported(e, &|e| gke_rl_ops::chain(e)))?;
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
        // The page has Lustre's side whenever it can be read; asked for, it must be.
        let mut lustre_missing = None;
        if self.lustre || self.out.is_some() {
            let usage = match report.window() {
                Some(window) => crate::runtime()?.block_on(gke_rl_ops::monitoring::lustre_usage(
                    &deployment,
                    window,
                    &self.monitoring_endpoint,
                    &gke_rl_ops::Env::real(),
                )),
                None => Err(gke_rl_ops::Error::NoRunWindow {
                    why: if self.log.is_some() {
                        "the log has no supervisor's records of its start and end"
                    } else {
                        "Ray has no start time for it"
                    },
                }),
            };
            match usage {
                Ok(usage) => report.lustre = Some(usage),
                Err(e) if self.lustre => return Err(crate::reported(e, &|e| gke_rl_ops::chain(e))),
                Err(e) => {
                    let why = gke_rl_ops::chain(&e);
                    crate::terminal::errln!("note: the page has no Lustre figures: {}", crate::terminal::shown(&why));
                    lustre_missing = Some(why);
                }
            }
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
        Ok(0)
    }
}
