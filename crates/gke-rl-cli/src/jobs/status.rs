//! `gke-rl status`: a job, its run's restarts and how it ended, and its cluster.

use std::time::Duration;

use gke_rl_ops::jobs::JobReport;
use gke_rl_ops::run::Status;
use gke_rl_ray::{JobDetails, JobStatus};

use super::{Connection, duration, failed, started};
use crate::console::Console;
use crate::terminal::outln;

/// Show a job's status (default: the latest submitted job)
#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    connection: Connection,
    /// Submission id; in rayjob mode, the RayJob's name [default: the config's job.name]
    id: Option<String>,
    /// Print JSON (secret values redacted)
    #[arg(long)]
    json: bool,
}

impl StatusArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let job = self.connection.job()?;
        let d = &job.loaded.deployment;
        let status = crate::runtime()?
            .block_on(gke_rl_ops::commands::status(d, &job.head, self.id.as_deref(), &job.env, job.console.clone()))
            .map_err(|e| failed(e, d))?;
        let report = match status {
            Status::Job(report) => report,
            Status::Suspended => {
                let state = gke_rl_ops::ClusterState::Suspended.describe();
                let bill = match gke_rl::cost::suspended(d) {
                    (idle, true) => format!("costing {} once GKE has removed its GPU nodes", idle.summary()),
                    (kept, false) => format!("still costing {}: its GPU pool does not scale to zero, so the nodes stay", kept.summary()),
                };
                outln!("cluster {}: {state}, {bill}", d.project.cluster_name);
                return Ok(0);
            }
            Status::Queued(queued) => {
                outln!("cluster {}: {}", d.project.cluster_name, crate::console::queued_line(&queued));
                return Ok(0);
            }
            Status::RayJob(report) => {
                if let Some(error) = &report.unreached {
                    job.console.say(format_args!("warning: its cluster's head cannot be reached: {}", gke_rl_ops::chain(error)));
                }
                match &report.queued {
                    Some(Ok(queued)) => job.console.say(crate::console::queued_line(queued)),
                    Some(Err(e)) => {
                        job.console.say(format_args!("warning: what Kueue says of it cannot be read: {}", gke_rl_ops::chain(e)))
                    }
                    None => {}
                }
                if let Some((name, readiness)) = &report.cluster {
                    cluster(name, readiness, d, job.env.clock.unix_millis(), &job.console);
                }
                if self.json {
                    outln!("{}", serde_json::to_string_pretty(&ray_job_json(&report.name, &report.state))?);
                } else {
                    outln!("{}", ray_job(&report.name, &report.state));
                }
                return Ok(0);
            }
            _ => anyhow::bail!("status ended in a way this version does not know"),
        };
        let now = job.env.clock.unix_millis();
        if let Some((name, state)) = &report.ray_job {
            job.console.say(ray_job(name, state));
        }
        run(&report, &job.console);
        if let Some((name, readiness)) = &report.cluster {
            cluster(name, readiness, d, now, &job.console);
        }
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&report.redacted)?);
        } else {
            outln!("{}", crate::terminal::shown(&describe(&report.job, now)));
        }
        Ok(0)
    }
}

/// The earlier submissions, and what the run's supervisors recorded.
fn run(report: &JobReport, console: &Console) {
    for earlier in &report.earlier {
        let why = earlier.message.as_deref().and_then(|m| m.lines().next()).unwrap_or_default();
        console.say(format_args!("resubmitted by the keeper: {} {} {why}", earlier.id(), earlier.status));
    }
    if let Some(e) = &report.records_unread {
        console.say(format_args!("warning: the run's records cannot be read from job {}'s log: {}", report.job.id(), gke_rl_ops::chain(e)));
    }
    crate::terminal::err(&crate::terminal::shown(&report.records.restarts_summary()));
    match report.records.ended() {
        Some((status, reason)) => console.say(format_args!("run {status}: {reason}")),
        None if report.records.supervised() && report.job.status == JobStatus::Failed => console.say(
            "the run's supervisor ended without its record (it was killed, or its head was lost); in a deployment, \
             the run keeper resubmits it within a minute unless its restarts are used up",
        ),
        None => {}
    }
}

/// A RayJob as KubeRay reports it: its state, the job it follows and how that ended, and why
/// it failed.
fn ray_job(name: &str, state: &gke_rl_ops::RayJobState) -> String {
    let mut line = format!("RayJob {name}: {}", state.state());
    if let Some(id) = &state.job_id {
        line.push_str(&format!(", job {id}"));
    }
    if !state.job.is_empty() {
        line.push_str(&format!(" {}", state.job));
    }
    for why in [&state.reason, &state.message].into_iter().flatten() {
        line.push_str(&format!(": {why}"));
    }
    crate::terminal::shown(&line)
}

/// A RayJob as KubeRay reports it, as JSON.
fn ray_job_json(name: &str, state: &gke_rl_ops::RayJobState) -> serde_json::Value {
    serde_json::json!({
        "kind": "RayJob", "name": name, "jobDeploymentStatus": state.deployment, "deleting": state.deleting, "jobStatus": state.job,
        "jobId": state.job_id, "rayClusterName": state.cluster, "reason": state.reason, "message": state.message,
    })
}

/// The RayCluster's pods, age and cost, when it was reached; its state is context, so failing to
/// read it is not fatal.
fn cluster(
    name: &str,
    readiness: &Result<gke_rl_ops::Readiness, gke_rl_ops::KubeError>,
    d: &gke_rl::Deployment,
    now_millis: u64,
    console: &Console,
) {
    match readiness {
        Ok(readiness) => {
            let (ready, wanted) = readiness.progress();
            let cost = format!("costing {}", gke_rl::cost::estimate(d).summary());
            let now = i64::try_from(now_millis / 1000).unwrap_or(i64::MAX);
            let age = readiness.created.map_or_else(String::new, |created| {
                let age = Duration::from_secs(now.saturating_sub(created).max(0).unsigned_abs());
                format!(", created {} ago", gke_rl_ops::took(age))
            });
            console.say(format_args!("cluster {name}: {ready}/{wanted} pods Ready, {}{age}, {cost}", readiness.state.describe()));
            for problem in &readiness.problems {
                console.say(format_args!("  ! {problem}"));
            }
        }
        Err(e) => console.say(format_args!("cluster {name}: unknown ({})", gke_rl_ops::chain(e))),
    }
}

/// Several lines about one job, for people.
fn describe(job: &JobDetails, now: u64) -> String {
    let mut out = format!("{}  {}", job.id(), job.status);
    if let Some(message) = &job.message {
        out.push_str(&format!("  {message}"));
    }
    out.push_str(&format!("\n  entrypoint: {}\n  started:    {} UTC, ran {}", job.entrypoint, started(job), duration(job, now)));
    if let Some(code) = job.driver_exit_code {
        out.push_str(&format!("\n  exit code:  {code}"));
    }
    if let Some(error) = &job.error_type {
        out.push_str(&format!("\n  error type: {error}"));
    }
    out
}
