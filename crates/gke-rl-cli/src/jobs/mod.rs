//! `gke-rl submit | status | logs | report | stop | jobs`, one file each: arguments into one
//! `gke_rl_ops::commands` call, its outcome into lines and an exit code. Exit codes: 0
//! SUCCEEDED, 1 FAILED or STOPPED, 2 for errors, 128 + the signal when one detaches (130 for
//! Ctrl-C; the job keeps running).

mod list;
mod logs;
mod report;
mod status;
mod stop;
mod submit;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gke_rl::Deployment;
use gke_rl_ops::Env;
use gke_rl_ops::head::{Head, HeadOptions};
use gke_rl_ops::jobs::Followed;
use gke_rl_ray::{JobDetails, JobStatus};

pub use list::JobsArgs;
pub use logs::LogsArgs;
pub use report::ReportArgs;
pub use status::StatusArgs;
pub use stop::StopArgs;
pub use submit::SubmitArgs;

use crate::config;
use crate::console::{Console, explain};

/// Which cluster and how to reach its Ray dashboard.
#[derive(clap::Args)]
pub(crate) struct Connection {
    #[command(flatten)]
    source: config::Source,
    /// Ray dashboard address, e.g. http://localhost:8265 [default: RAY_API_SERVER_ADDRESS, else RAY_ADDRESS, as `ray job`
    /// reads them; else a port-forward to the config's RayCluster]
    #[arg(long, value_name = "URL", env = "RAY_API_SERVER_ADDRESS")]
    address: Option<String>,
    /// Extra HTTP headers for every request, as a JSON object. Never the Ray token: gke-rl reads
    /// it from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names or ~/.ray/auth_token (with
    /// --address), or from the RayCluster's Secret (through the port-forward)
    #[arg(long, value_name = "JSON", env = "RAY_JOB_HEADERS", hide_env_values = true)]
    headers: Option<String>,
    /// Give up on a request the dashboard does not answer within this many seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    request_timeout: u64,
    /// Run as this job.mode instead of the config's: `--as rayjob` submits one run as a RayJob
    /// with a cluster of its own (the deployment's RayCluster suspended), and finds it again
    #[arg(long = "as", value_name = "MODE", value_parser = job_mode)]
    as_mode: Option<gke_rl::model::JobMode>,
}

/// A `--as` value.
fn job_mode(text: &str) -> Result<gke_rl::model::JobMode, String> {
    let modes = gke_rl::model::JobMode::ALL;
    modes
        .into_iter()
        .find(|m| m.as_str() == text)
        .ok_or_else(|| format!("expected {}", modes.map(gke_rl::model::JobMode::as_str).join(" or ")))
}

/// What every job command starts from: the loaded config, the head options, the real effects
/// and the console.
pub(crate) struct Job {
    pub loaded: config::Loaded,
    pub head: HeadOptions,
    pub env: Env,
    pub console: Arc<Console>,
}

impl Connection {
    /// The config (from `--config`/`--env-file`) and how to reach its head.
    pub(crate) fn job(&self) -> anyhow::Result<Job> {
        let headers: BTreeMap<String, String> = match &self.headers {
            // serde's message would quote the value, which may hold a secret: only where it is.
            Some(json) => serde_json::from_str(json).map_err(|e| {
                anyhow::anyhow!("--headers / RAY_JOB_HEADERS must be a JSON object of strings (line {}, column {})", e.line(), e.column())
            })?,
            None => BTreeMap::new(),
        };
        let request_timeout = Duration::from_secs(self.request_timeout);
        let head = HeadOptions { address: self.address.clone(), ray_address: true, headers, request_timeout };
        let mut loaded = self.source.load()?.fitted_to_cluster()?;
        if let Some(mode) = self.as_mode {
            loaded.deployment = loaded
                .deployment
                .in_mode(mode)
                .map_err(|conflict| anyhow::anyhow!("--as {}: {}\nhelp: {}", mode.as_str(), conflict.message(), conflict.help()))?;
        }
        Ok(Job { loaded, head, env: Env::real(), console: Arc::new(Console::stderr(false)) })
    }

    /// The config alone, for what needs no cluster.
    pub(crate) fn config(&self) -> anyhow::Result<config::Loaded> {
        self.source.load()?.fitted_to_cluster()
    }
}

impl Job {
    /// A client for the head (`fabric-check` runs its own operation through it).
    pub(crate) async fn connect(&self) -> anyhow::Result<Head> {
        let deployment = &self.loaded.deployment;
        gke_rl_ops::mode::connect(deployment, &self.head, &self.env, self.console.clone()).await.map_err(|e| failed(e, deployment))
    }
}

/// The exit code when following is detached and the signal is not known: Ctrl-C's.
pub(crate) const DETACHED: u8 = 130;

/// An error of a job command, with the fix when it is about reaching the cluster's API: a
/// failed port-forward also says how to reach the dashboard instead.
pub(crate) fn failed(error: gke_rl_ops::JobError, deployment: &Deployment) -> anyhow::Error {
    let project = deployment.project.project_id.as_ref().map_or("PROJECT_ID", |p| p.as_str());
    let credentials = gke_rl::lifecycle::credentials(deployment, project);
    let said = error.to_string();
    let gke_rl_ops::JobError::PortForward { source } = error else { return crate::reported(error, &|e| explain(e, None, &credentials)) };
    let cluster = &deployment.project.cluster_name;
    anyhow::anyhow!(
        "{said}: {}\nhelp: or reach the dashboard yourself: `kubectl port-forward service/{cluster}-head-svc 8265:8265`, \
         then pass --address http://localhost:8265 (or set RAY_ADDRESS)",
        explain(&(*source).into(), None, &credentials)
    )
}

/// `gke-rl logs ID --follow`, with the `--address` that reaches the same dashboard when one was
/// given: each word shell-quoted, since it is printed to be pasted.
fn follow_command(head: &Head, id: &str) -> String {
    let mut words = crate::name().split_whitespace().map(str::to_owned);
    let program = words.next().unwrap_or_default();
    let mut args: Vec<String> = words.chain(["logs".to_owned(), id.to_owned(), "--follow".to_owned()]).collect();
    if !head.is_forwarded() {
        args.extend(["--address".to_owned(), head.client.address().to_owned()]);
    }
    gke_rl::lifecycle::Command { program, args, dir: None }.to_string()
}

/// The exit code of a followed job, with the re-attach hint when following was detached (the
/// console has shown how a finished job ended). `target` names the job to `logs`.
fn ended(head: &Head, id: &str, target: &str, followed: &Followed, console: &Console) -> anyhow::Result<u8> {
    console.end_progress();
    match followed {
        Followed::Detached { signal } => {
            console.say(format_args!("\ndetached from job {id}; it keeps running. Re-attach with:\n  {}", follow_command(head, target)));
            Ok(crate::interrupted(*signal))
        }
        Followed::Finished { job, .. } => Ok(u8::from(job.status != JobStatus::Succeeded)),
        other => anyhow::bail!("following ended in a way this version does not know: {other:?}"),
    }
}

/// `YYYY-MM-DD HH:MM:SS` of the start time, UTC.
fn started(job: &JobDetails) -> String {
    let Some(ms) = job.start_time.filter(|ms| *ms > 0) else { return "-".into() };
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// How long the job ran (or has run by `now`, in Unix milliseconds).
fn duration(job: &JobDetails, now: u64) -> String {
    let Some(start) = job.start_time.filter(|ms| *ms > 0) else { return "-".into() };
    let end = job.end_time.filter(|ms| *ms > 0).unwrap_or(now);
    let secs = end.saturating_sub(start) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_print_in_utc_with_the_time_they_ran() {
        let job: JobDetails = serde_json::from_value(serde_json::json!({
            "type": "SUBMISSION", "job_id": null, "submission_id": "s", "status": "RUNNING", "entrypoint": "x",
            "message": null, "error_type": null, "start_time": 1_795_000_000_000u64, "end_time": null
        }))
        .unwrap();
        assert_eq!(started(&job), "2026-11-18 11:06:40"); // Python: datetime.utcfromtimestamp(1795000000)
        assert_eq!(duration(&job, 1_795_000_090_000), "1m30s");
    }
}
