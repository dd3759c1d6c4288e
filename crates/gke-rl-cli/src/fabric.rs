//! `gke-rl fabric-check`: the fabric-check job on the config's cluster, its report as tables.
//! Exit codes: 0 when it passes, 1 when a rank used the wrong transport, the bandwidth is low
//! or the job failed, 2 for errors, 130 when Ctrl-C detaches.

use std::sync::Arc;
use std::time::Duration;

use gke_rl_in_cluster::fabric::{DEFAULT_MIN_FRACTION, Expectation, Problem, Report, size};
use gke_rl_ops::fabric::{FabricCheckOptions, FabricChecked};
use gke_rl_ops::head::Head;
use gke_rl_ops::{Env, Event, JobEvent, Progress, Question};

use crate::config::Loaded;
use crate::console::Console;
use crate::jobs::{Connection, DETACHED};
use crate::terminal::outln;

/// Measure the GPU fabric: an all-reduce across every GPU of every GPU node, the network
/// transport each node's NCCL chose, and the bus bandwidth against the line rate
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    connection: Connection,
    #[command(flatten)]
    check: CheckArgs,
}

/// How the check runs and what it must reach; shared with `deploy --fabric-check`.
#[derive(clap::Args, Clone)]
pub struct CheckArgs {
    /// Message sizes of the all-reduce sweep, with K, M or G (powers of 1024)
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = parse_size, default_value = "1M,16M,256M,1G")]
    sizes: Vec<u64>,
    /// Fail when the largest message's bus bandwidth is below this fraction of the line rate
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_MIN_FRACTION, value_parser = crate::parse_fraction)]
    min_fraction: f64,
    /// The longest the check job may run (90s, 30m, 1h)
    #[arg(long = "check-timeout", value_name = "DURATION", default_value = "15m", value_parser = crate::parse_duration)]
    timeout: Duration,
    /// Print the job's log (NCCL's lines included) as it runs
    #[arg(long)]
    verbose: bool,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
}

/// The largest message: GPU memory holds two copies of it on every GPU.
const MAX_SIZE: u64 = 8 << 30;

fn parse_size(text: &str) -> Result<u64, String> {
    crate::parse_size(text, MAX_SIZE)
}

impl Args {
    pub fn run(self) -> anyhow::Result<u8> {
        let job = self.connection.job()?;
        crate::runtime()?.block_on(async {
            let head = job.connect().await?;
            self.check.run(&job.loaded, &head, &job.env, &job.console).await
        })
    }
}

impl CheckArgs {
    /// Runs the check through `head` and prints its report; the exit code.
    pub async fn run(&self, loaded: &Loaded, head: &Head, env: &Env, console: &Arc<Console>) -> anyhow::Result<u8> {
        let artifacts = loaded.artifacts()?;
        let options = FabricCheckOptions { sizes: self.sizes.clone(), min_fraction: self.min_fraction, timeout: self.timeout };
        let progress = Filtered { console, logs: self.verbose };
        let checked = gke_rl_ops::fabric::check(&loaded.deployment, &artifacts, &options, &head.client, env, &progress)
            .await
            .map_err(|e| crate::reported(e, &|e| gke_rl_ops::chain(e)))?;
        match checked {
            FabricChecked::Detached { id } => {
                console.say(format_args!("detached from fabric-check job {id}; it keeps running: {} logs {id}", crate::name()));
                Ok(DETACHED)
            }
            FabricChecked::Finished { id, report, expected, problems, .. } => {
                if self.json {
                    let json = serde_json::json!({ "id": id, "report": report, "problems": problems, "passed": problems.is_empty() });
                    outln!("{}", serde_json::to_string_pretty(&json)?);
                } else {
                    outln!("{}", crate::terminal::shown(&describe(&report, &expected, &problems)));
                }
                Ok(u8::from(!problems.is_empty()))
            }
            other => anyhow::bail!("the fabric check ended in a way this version does not know: {other:?}"),
        }
    }
}

/// The console, without the job's log unless asked for.
pub(crate) struct Filtered<'a> {
    pub console: &'a Console,
    pub logs: bool,
}

impl Progress for Filtered<'_> {
    fn event(&self, event: Event<'_>) {
        if self.logs || !matches!(event, Event::Jobs(JobEvent::Log(_))) {
            self.console.event(event);
        }
    }

    fn confirm(&self, question: &Question<'_>) -> Result<bool, gke_rl_ops::Unanswerable> {
        self.console.confirm(question)
    }
}

/// The report as people read it: nodes, the sweep, the verdict.
pub fn describe(report: &Report, expected: &Expectation, problems: &[Problem]) -> String {
    let mut out = String::new();
    let what = match report.gpus_per_node {
        Some(0) => "no GPUs: gloo on CPU, over TCP".to_owned(),
        Some(gpus) => format!("{gpus} GPUs each, NCCL"),
        None => "the job reported no GPU count".to_owned(),
    };
    out += &format!("fabric-check: {} nodes, {what}\n\n", report.nodes.len());
    out += &format!("{:<12} {:<16} {:<8} TRANSPORT\n", "NODE", "IP", "RANKS");
    for node in &report.nodes {
        let ranks = node.ranks.map_or_else(|| "?".to_owned(), |(a, b)| format!("{a}-{b}"));
        let transports: Vec<String> = node.transports.iter().map(|(t, n)| format!("{t} ({n})")).collect();
        let transports = if transports.is_empty() { "none named".to_owned() } else { transports.join(", ") };
        out += &format!("{:<12} {:<16} {:<8} {transports}\n", node.name, node.ip.as_deref().unwrap_or("?"), ranks);
    }
    let line_rate = expected.fabric.map(|f| f.line_rate_gbytes());
    out += &format!("\n{:<10} {:>12}  {}\n", "SIZE", "BUSBW", line_rate.map_or(String::new(), |r| format!("OF {r:.0} GB/s")));
    for sample in &report.samples {
        let share = line_rate.map_or(String::new(), |r| format!("{:.0}%", sample.busbw / r * 100.0));
        out += &format!("{:<10} {:>7.2} GB/s  {share}\n", size(sample.bytes), sample.busbw);
    }
    out.push('\n');
    match (problems, expected.fabric) {
        ([], Some(fabric)) => {
            let largest = report.samples.iter().max_by_key(|s| s.bytes);
            out += &format!(
                "passed: every rank used gIB; {} on {} reaches at least {:.0}% of its {:.0} GB/s line rate",
                largest.map_or(String::new(), |s| format!("{:.1} GB/s at {}", s.busbw, size(s.bytes))),
                fabric.machine,
                expected.min_fraction * 100.0,
                fabric.line_rate_gbytes()
            );
        }
        ([], None) => out += "measured only: the deployment wires no GPU fabric (fabric.mode off, or a machine type without one)",
        (problems, _) => {
            out += "failed:";
            for problem in problems {
                out += &format!("\n  {problem}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deploy_checks_with_the_commands_defaults() {
        let defaults = crate::defaults::<CheckArgs>();
        assert_eq!(defaults.sizes, gke_rl_in_cluster::fabric::DEFAULT_SIZES);
        assert_eq!((defaults.min_fraction, defaults.timeout), (DEFAULT_MIN_FRACTION, Duration::from_secs(900)));
    }

    #[test]
    fn sizes_take_binary_suffixes_within_bounds() {
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("9G").unwrap_err().contains("outside 1 byte to 8G"));
        assert!(parse_size("0").is_err() && parse_size("-1M").is_err() && parse_size("99999999999999999999G").is_err());
        assert!(crate::parse_fraction("1.5").is_err() && crate::parse_fraction("NaN").is_err());
    }
}
