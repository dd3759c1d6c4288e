//! `gke-rl submit`: submit the training job and follow its run to the end.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use gke_rl::model::WhenDone;
use gke_rl_ops::jobs::{Followed, SubmitOptions, Supervise};
use gke_rl_ops::run::{AfterRun, Ran, RunOptions};

use super::{Connection, ended, failed, follow_command};

/// Submit the training job to the Ray cluster and follow it to the end
#[derive(clap::Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    connection: Connection,
    /// Upload this folder (its .gitignore/.rayignore apply), or this .zip as it is, instead of the job folder
    #[arg(long, value_name = "DIR")]
    working_dir: Option<PathBuf>,
    /// Add a file to the job folder (repeatable)
    #[arg(long, value_name = "FILE", conflicts_with = "working_dir")]
    include: Vec<PathBuf>,
    /// Upload what symlinks out of the working dir point at, as Ray does [default: refuse them]
    #[arg(long, requires = "working_dir")]
    follow_links_out: bool,
    /// Upload credential files in the working dir (.ssh/, .aws/, .npmrc, *.pem, ...), as Ray does [default: leave them out]
    #[arg(long, requires = "working_dir")]
    with_credential_files: bool,
    /// Runtime env file (JSON or YAML) [default: the rendered ray_runtime_env.json]
    #[arg(long, value_name = "FILE")]
    runtime_env: Option<PathBuf>,
    /// Submission id [default: raysubmit_ and 16 random characters, as Ray makes them]
    #[arg(long, value_name = "ID")]
    submission_id: Option<String>,
    /// Return once the job is accepted
    #[arg(long)]
    no_wait: bool,
    /// Hide the job's log while following it, keep the run's one-line progress
    #[arg(long, short, conflicts_with = "no_wait")]
    quiet: bool,
    /// Run the command as given, without gke-rl's supervisor: no restart after a lost node, no
    /// run records (for a head whose jobs' `python` has no Ray, say)
    #[arg(long, conflicts_with_all = ["max_restarts", "max_lost", "checkpoint_dir"])]
    no_supervisor: bool,
    /// Restart the training after a lost node (a preemption) up to N times, in the cluster;
    /// NeMo-RL resumes from its newest checkpoint [default: the config's job.max_restarts, else 3 on Spot, 0 on a reservation]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    max_restarts: Option<u32>,
    /// Stop restarting once restarts have lost this much wall time in all (2h, 1d) [default: no bound]
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
    max_lost: Option<Duration>,
    /// How long to wait before each restart for the cluster to be whole again, and for a suspended (or Kueue-held) cluster to come up (90s, 30m, 1h)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::parse_duration)]
    restart_wait: Duration,
    /// Where the run keeps its records, on the cluster's shared file system [default: LUSTRE_MOUNT/gke-rl/runs]
    #[arg(long, value_name = "DIR", env = "GKE_RL_RUNS_DIR")]
    runs_dir: Option<String>,
    /// NeMo-RL's checkpoint dir, whose half-written checkpoints a restart removes [default: the config's checkpointing.dir]
    #[arg(long, value_name = "DIR")]
    checkpoint_dir: Option<String>,
    /// What to do with the RayCluster once the job and its restarts have ended: keep it, or
    /// suspend it (its pods deleted, its GPU nodes given back) [default: the config's job.when_done]
    #[arg(long, value_name = "WHAT", value_enum)]
    then: Option<WhenDoneArg>,
    /// Pass this variable from your environment to the job (its value becomes readable
    /// through the Jobs API; prefer the Kubernetes Secret)
    #[arg(long, value_name = "NAME")]
    env_from_local: Vec<String>,
    /// Job metadata KEY=VALUE (repeatable)
    #[arg(long, value_name = "KEY=VALUE", value_parser = key_value)]
    metadata: Vec<(String, String)>,
    /// CPUs reserved for the entrypoint
    #[arg(long, value_name = "N", value_parser = amount)]
    entrypoint_num_cpus: Option<f64>,
    /// GPUs reserved for the entrypoint
    #[arg(long, value_name = "N", value_parser = amount)]
    entrypoint_num_gpus: Option<f64>,
    /// Memory reserved for the entrypoint, in bytes
    #[arg(long, value_name = "BYTES")]
    entrypoint_memory: Option<u64>,
    /// Custom resources for the entrypoint, as a JSON object
    #[arg(long, value_name = "JSON")]
    entrypoint_resources: Option<String>,
    /// Node labels the entrypoint must run on, KEY=VALUE (repeatable; Ray 2.54+)
    #[arg(long, value_name = "KEY=VALUE", value_parser = key_value)]
    entrypoint_label_selector: Vec<(String, String)>,
    /// The command to run [default: bash run_nemo_rl.sh]
    #[arg(last = true, value_name = "ENTRYPOINT")]
    entrypoint: Vec<String>,
}

/// A resource amount Ray can reserve: a finite number, 0 or more. (JSON has no NaN or infinity:
/// serde_json would send them as `null`, which Ray reads as "not given".)
fn amount(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
        Ok(_) => Err(format!("`{s}` is not an amount Ray can reserve: give a finite number, 0 or more")),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).ok_or_else(|| format!("expected KEY=VALUE, got `{s}`"))
}

/// `--then`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum WhenDoneArg {
    Keep,
    Suspend,
}

impl SubmitArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let job = self.connection.job()?;
        if self.quiet {
            job.console.hide_job_log();
        }
        let d = &job.loaded.deployment;
        let artifacts = job.loaded.artifacts()?;
        let runtime_env = match &self.runtime_env {
            Some(path) => Some((path.display().to_string(), gke_rl_ops::files::read_text(path)?)),
            None => None,
        };
        let entrypoint_resources: Option<std::collections::BTreeMap<String, f64>> = match &self.entrypoint_resources {
            Some(json) => Some(serde_json::from_str(json).context("--entrypoint-resources must be a JSON object of numbers")?),
            None => None,
        };
        if let Some((name, n)) = entrypoint_resources.iter().flatten().find(|(_, n)| !(n.is_finite() && **n >= 0.0)) {
            anyhow::bail!("--entrypoint-resources: `{name}` is {n}; give a finite number, 0 or more");
        }
        let mut supervise = Supervise::of(d, self.restart_wait);
        supervise.max_restarts = self.max_restarts.unwrap_or(supervise.max_restarts);
        supervise.max_lost = self.max_lost;
        supervise.runs_dir = self.runs_dir.unwrap_or(supervise.runs_dir);
        supervise.checkpoints = self.checkpoint_dir.unwrap_or(supervise.checkpoints);
        let submit = SubmitOptions {
            working_dir: self.working_dir,
            include: self.include,
            runtime_env,
            submission_id: self.submission_id,
            env_from_local: self.env_from_local,
            metadata: self.metadata.into_iter().collect(),
            entrypoint_num_cpus: self.entrypoint_num_cpus,
            entrypoint_num_gpus: self.entrypoint_num_gpus,
            entrypoint_memory: self.entrypoint_memory,
            entrypoint_resources,
            entrypoint_label_selector: self.entrypoint_label_selector.into_iter().collect(),
            entrypoint: self.entrypoint,
            program: Vec::new(),
            follow_links_out: self.follow_links_out,
            with_credential_files: self.with_credential_files,
            supervise: (!self.no_supervisor).then_some(supervise),
        };
        let when_done = self.then.map(|then| match then {
            WhenDoneArg::Keep => WhenDone::Keep,
            WhenDoneArg::Suspend => WhenDone::Suspend,
        });
        let options = RunOptions { head: job.head.clone(), submit, no_wait: self.no_wait, restart_wait: self.restart_wait, when_done };
        let ran = crate::runtime()?
            .block_on(gke_rl_ops::commands::submit(d, &artifacts, &options, &job.env, job.console.clone()))
            .map_err(|e| failed(e, d))?;
        match ran {
            Ran::Submitted { id, head } => {
                job.console.say(format_args!("follow it with: {}", follow_command(&head, gke_rl_ops::mode::job_name(d, &head, &id, None))));
                Ok(0)
            }
            Ran::Followed { id, head, observed, after } => {
                if let Followed::Detached { .. } = observed.followed {
                    crate::terminal::err(&crate::terminal::shown(&observed.records.restarts_summary()));
                }
                let code = ended(&head, &id, gke_rl_ops::mode::job_name(d, &head, &id, None), &observed.followed, &job.console)?;
                match after {
                    AfterRun::Suspended => job.console.say(format_args!(
                        "RayCluster {} is suspended; `{} resume` or the next submit brings it back",
                        d.project.cluster_name,
                        crate::name()
                    )),
                    AfterRun::RayJobEnds if matches!(observed.followed, Followed::Finished { .. }) => job.console.say(format_args!(
                        "KubeRay deletes RayJob {}'s cluster {}s after the run (job.rayjob_ttl_seconds_after_finished); its GPU nodes then go",
                        d.job.name, d.job.rayjob_ttl_seconds_after_finished
                    )),
                    AfterRun::NotSuspendedByAddress => {
                        job.console.say("warning: not suspending the RayCluster: with --address, gke-rl does not reach Kubernetes")
                    }
                    _ => {}
                }
                Ok(code)
            }
            _ => anyhow::bail!("the submit ended in a way this version does not know"),
        }
    }
}
