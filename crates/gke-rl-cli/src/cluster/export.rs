//! `gke-rl export`: a run's checkpoints, out of the Lustre instance into a bucket, verified.

use std::sync::Arc;
use std::time::Duration;

use gke_rl_ops::Env;
use gke_rl_ops::keep::{ExportOptions, Exported, Steps};

use super::Target;
use crate::console::{Console, explain};
use crate::interrupted;

/// Copy a run's newest complete checkpoint (or --step N, or --all) from the Lustre instance to
/// a bucket, with the run's records, config and report, through Managed Lustre's own
/// transfers; verify that the bucket holds every file with its size, and record the copy in the
/// deployment's state, where destroy looks before it deletes the instance
#[derive(clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    target: Target,
    /// The run whose checkpoints to export (its first submission id) [default: the config's
    /// job.checkpointing.dir, else the most recently active run's]
    #[arg(value_name = "RUN")]
    run: Option<String>,
    /// The bucket folder, gs://BUCKET/PATH/ (made in the cluster's region when missing); each
    /// run goes into a folder of its own [default: the config's storage.export_to]
    #[arg(long, value_name = "GS_FOLDER", value_parser = gcs_path)]
    to: Option<gke_rl::model::GcsPath>,
    /// Export this step instead of the newest
    #[arg(long, value_name = "N", conflicts_with = "all")]
    step: Option<u64>,
    /// Export every complete step
    #[arg(long)]
    all: bool,
    /// Also convert each step to a Hugging Face model with the release's own converter
    /// (examples/converters/), as a job on the cluster, and export it beside the checkpoint
    #[arg(long)]
    hf: bool,
    /// Where the runs keep their records, on the cluster's shared file system, as `submit
    /// --runs-dir` named it [default: LUSTRE_MOUNT/gke-rl/runs]
    #[arg(long, value_name = "DIR", env = "GKE_RL_RUNS_DIR")]
    runs_dir: Option<String>,
    /// Ray dashboard address, where the cluster lists the files [default: a port-forward to the
    /// config's RayCluster]
    #[arg(long, value_name = "URL")]
    address: Option<String>,
    /// Follow one transfer at most this long (it goes on after; running export again follows it)
    #[arg(long, value_name = "DURATION", default_value = "6h", value_parser = crate::parse_duration)]
    timeout: Duration,
}

/// A `--to` value.
pub(super) fn gcs_path(text: &str) -> Result<gke_rl::model::GcsPath, String> {
    gke_rl::model::GcsPath::new(text).map_err(|e| e.to_string())
}

impl ExportArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(self.execute(Env::real(), Console::stderr(false)))
    }

    pub(super) async fn execute(&self, env: Env, console: Console) -> anyhow::Result<u8> {
        let loaded = self.target.source.load()?.fitted_to_cluster()?;
        let d = &loaded.deployment;
        let steps = match (self.step, self.all) {
            (Some(step), _) => Steps::Step(step),
            (None, true) => Steps::All,
            (None, false) => Steps::Newest,
        };
        let head = gke_rl_ops::head::HeadOptions { address: self.address.clone(), ray_address: false, ..Default::default() };
        let options = ExportOptions {
            target: self.target.options(),
            head,
            run: self.run.clone(),
            runs_dir: self.runs_dir.clone(),
            steps,
            to: self.to.clone(),
            hf: self.hf,
            timeout: self.timeout,
        };
        let get_credentials = self.target.get_credentials(d);
        let console = Arc::new(console);
        let exported = gke_rl_ops::keep::export(d, &options, &env, console.clone())
            .await
            .map_err(|e| crate::reported(e, &|e| explain(e, None, &get_credentials)))?;
        Ok(match exported {
            Exported::Kept { copies, already, run_folder } => {
                let made: Vec<String> = copies
                    .iter()
                    .map(|kept| {
                        format!(
                            "  {} ({}, {}): every file in the bucket with its size",
                            kept.uri,
                            gke_rl::durability::files(usize::try_from(kept.files).unwrap_or(usize::MAX)),
                            gke_rl::quote::bytes(kept.bytes as f64)
                        )
                    })
                    .collect();
                let before = if already > 0 { format!("; {already} verified before") } else { String::new() };
                console.say(format_args!(
                    "exported to {run_folder}{before}:\n{}",
                    if made.is_empty() { "  nothing new".to_owned() } else { made.join("\n") }
                ));
                console.say(format_args!(
                    "resume anywhere: set project.zone, then `{} deploy --resume-from {run_folder}step_N/`",
                    crate::name()
                ));
                0
            }
            Exported::Interrupted { signal } => {
                console.say(format_args!(
                    "interrupted: a transfer in flight goes on in Managed Lustre; `{} export` again follows it, never starts it over",
                    crate::name()
                ));
                interrupted(signal)
            }
            other => anyhow::bail!("export ended in a way this version does not know: {other:?}"),
        })
    }
}
