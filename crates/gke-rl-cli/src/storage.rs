//! `gke-rl storage-check`: the storage-check job on the config's cluster, its figures as
//! tables. Exit codes: 0 when it passes, 1 when the mount is not the configured Lustre, a rate
//! is below the floor, a node is slow, the file system is too full or the job failed, 2 for
//! errors, 130 when Ctrl-C stopped it (after it removed what it wrote).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use gke_rl::checkpoint_plan::{Device, Saving, rate, size};
use gke_rl_in_cluster::storage::{DEFAULT_MIN_FRACTION, Expectation, Report, Verdict};
use gke_rl_ops::head::Head;
use gke_rl_ops::storage::{StorageCheckOptions, StorageChecked};

use crate::config::Loaded;
use crate::console::Console;
use crate::fabric::Filtered;
use crate::jobs::Connection;
use crate::terminal::outln;

/// Measure the shared file system as a checkpoint uses it: every GPU node writes its ranks'
/// files in parallel, reads back another node's, and creates, stats and deletes small files;
/// judged against the Lustre instance's tier and the run's checkpoints
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    connection: Connection,
    #[command(flatten)]
    check: CheckArgs,
}

/// How the check runs and what it must reach; shared with `deploy --storage-check`.
#[derive(clap::Args, Clone)]
pub struct CheckArgs {
    /// The most each node writes, with K, M, G or T; by default each writes its share of one
    /// checkpoint of the configured model, up to this
    #[arg(long, value_name = "SIZE", default_value = "32G", value_parser = parse_size)]
    size: u64,
    /// Fail when the nodes' aggregate write or read is below this fraction of the instance's
    /// list throughput (capacity × tier)
    #[arg(long, value_name = "FRACTION", default_value_t = DEFAULT_MIN_FRACTION, value_parser = crate::parse_fraction)]
    min_fraction: f64,
    /// The folder to measure, on every node [default: the config's lustre.mount_path]: an
    /// absolute path of letters, digits and `_ - . / : @ +`, as lustre.mount_path is
    #[arg(long, value_name = "PATH", value_parser = parse_dir)]
    dir: Option<gke_rl::model::AbsPath>,
    /// The longest the check job may run (90s, 30m, 1h)
    #[arg(long = "check-timeout", value_name = "DURATION", default_value = "15m", value_parser = crate::parse_duration)]
    timeout: Duration,
    /// Measure the file system only: no second pass saving a real distributed checkpoint with
    /// the job's torch (the save prediction then comes from the raw write rate)
    #[arg(long)]
    raw_only: bool,
    /// Print the job's log as it runs
    #[arg(long)]
    verbose: bool,
    /// Print every figure as JSON
    #[arg(long)]
    json: bool,
}

/// The most a node may be asked to write: a checkpoint share of the largest models.
const MAX_NODE_SIZE: u64 = 16 << 40;

fn parse_dir(text: &str) -> Result<gke_rl::model::AbsPath, String> {
    gke_rl::model::AbsPath::new(text).map_err(|e| e.to_string())
}

fn parse_size(text: &str) -> Result<u64, String> {
    crate::parse_size(text, MAX_NODE_SIZE)
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
    /// Runs the check through `head` and prints its figures; the exit code.
    pub async fn run(&self, loaded: &Loaded, head: &Head, env: &gke_rl_ops::Env, console: &Arc<Console>) -> anyhow::Result<u8> {
        let artifacts = loaded.artifacts()?;
        let options = StorageCheckOptions {
            dir: self.dir.clone(),
            max_node_bytes: self.size,
            min_fraction: self.min_fraction,
            timeout: self.timeout,
            save_pass: !self.raw_only,
            // Kept for `report` only when this is the deployment's own mount, through its own head.
            record: self.dir.is_none() && head.is_forwarded(),
        };
        let progress = Filtered { console, logs: self.verbose };
        let checked = gke_rl_ops::storage::check(&loaded.deployment, &artifacts, &options, &head.client, env, &progress)
            .await
            .map_err(|e| crate::reported(e, &|e| gke_rl_ops::chain(e)))?;
        match checked {
            StorageChecked::Stopped { id, cleaned, signal } => {
                let words = if cleaned {
                    "it removed what it wrote"
                } else {
                    "it did not say it removed what it wrote: the next check removes the folder once its lease is stale (2 minutes)"
                };
                console.say(format_args!("stopped storage-check job {id}; {words}"));
                Ok(crate::interrupted(signal))
            }
            StorageChecked::Finished { id, report, expected, verdict, recorded, .. } => {
                match recorded {
                    Some(Ok(path)) => console.say(format_args!("kept the measured save in {}: `report` predicts from it", path.display())),
                    Some(Err(e)) => console.say(format_args!("warning: the measured save was not kept: {}", gke_rl_ops::chain(&e))),
                    None => {}
                }
                let release = gke_rl::knowledge::nemo_rl_release(loaded.deployment.ray.image.as_str()).map(|r| r.tag);
                if self.json {
                    let json = serde_json::json!({
                        "id": id, "report": report, "expected": expected, "verdict": verdict, "passed": verdict.problems.is_empty(),
                    });
                    outln!("{}", serde_json::to_string_pretty(&json)?);
                } else {
                    outln!("{}", crate::terminal::shown(&describe(&report, &expected, &verdict, release)));
                }
                Ok(u8::from(!verdict.problems.is_empty()))
            }
            other => anyhow::bail!("the storage check ended in a way this version does not know: {other:?}"),
        }
    }
}

/// `12.3 s`.
fn seconds(s: f64) -> String {
    format!("{s:.1} s")
}

/// The figures as people read them: nodes, the aggregate, the file system, the run's saves,
/// the verdict.
pub fn describe(report: &Report, expected: &Expectation, verdict: &Verdict, release: Option<&str>) -> String {
    let mut out = String::new();
    let setup = report.setup.as_ref();
    let _ = writeln!(
        out,
        "storage-check: {} node{}, {} files of {} each in parallel, then {} small files each{}\n",
        report.nodes.len(),
        if report.nodes.len() == 1 { "" } else { "s" },
        setup.map_or(0, |s| s.ranks),
        setup.map_or_else(|| "?".to_owned(), |s| size(s.rank_bytes)),
        setup.map_or(0, |s| s.files),
        setup.map_or_else(String::new, |s| format!(", in {}", s.folder)),
    );
    if let Some(link) = setup.and_then(|s| s.mount_link.as_deref()) {
        let _ = writeln!(out, "note: {link}\n");
    }
    let _ = writeln!(out, "{:<10} {:<16} {:>11} {:>11} {:>10}  MOUNT", "NODE", "HOST", "WRITE", "READ", "META OP/S");
    for node in &report.nodes {
        let mount = node.mount.as_ref().map_or_else(|| "?".to_owned(), |m| format!("{} {}", m.fs_type, m.source));
        let _ = writeln!(
            out,
            "{:<10} {:<16} {:>11} {:>11} {:>10.0}  {mount}",
            node.node,
            node.host,
            rate(node.write.rate()),
            rate(node.read.rate()),
            node.metadata.ops_per_second()
        );
    }
    let slowest: Vec<String> = report.slowest().iter().take(3).map(|n| format!("{} ({})", n.node, rate(n.write.rate()))).collect();
    if report.nodes.len() > 1 {
        let _ = writeln!(out, "slowest writers: {}", slowest.join(", "));
    }
    out.push('\n');
    let of_ceiling =
        |r: f64| expected.ceiling.map_or(String::new(), |c| format!(", {:.0}% of the ceiling", r / c.bytes_per_second * 100.0));
    if let Some(ceiling) = expected.ceiling {
        let _ = writeln!(out, "ceiling: {} ({} GiB at {} MB/s/TiB)", rate(ceiling.bytes_per_second), ceiling.capacity_gib, ceiling.tier);
    }
    for (name, pass) in [("write", verdict.write), ("read", verdict.read)] {
        if let Some(pass) = pass {
            let _ = writeln!(out, "{name}: {} in all{}", rate(pass.rate()), of_ceiling(pass.rate()));
        }
    }
    if let Some(ops) = verdict.metadata_ops_per_second {
        let _ = writeln!(out, "metadata: {ops:.0} operations/s in all (create, stat, delete)");
    }
    if verdict.save.is_some() || !verdict.save_skipped.is_empty() {
        let w = expected.writer;
        let assumed = if release.is_some() { "" } else { " (the image's NeMo-RL release is unknown: the codelab's assumed)" };
        let _ = writeln!(
            out,
            "save pass: as NeMo-RL {}'s {} policy writes, {} writer thread{} a rank, {}{assumed}",
            w.release,
            w.backend,
            w.threads,
            if w.threads == 1 { "" } else { "s" },
            if w.asynchronous { "asynchronous" } else { "synchronous" }
        );
    }
    if let Some(save) = &verdict.save {
        let staging = save.staging_s.map_or_else(String::new, |s| format!(", {} of it staging off the GPUs", seconds(s)));
        let _ = writeln!(
            out,
            "save: a distributed checkpoint of {} from the {} (torch {}): returned after {}, durable after {} ({}){staging}",
            size(save.bytes),
            match save.device {
                Device::Gpu => "GPUs",
                Device::Cpu => "host memory: no GPU on the nodes",
            },
            save.torch,
            seconds(save.returned_s),
            seconds(save.durable_s),
            rate(save.rate()),
        );
        if let (Some(blocking), Some(landed)) = (save.blocking_s, save.landed_s) {
            let _ = writeln!(out, "save, asynchronous as the release's: blocked {}, landed after {}", seconds(blocking), seconds(landed));
        }
    }
    for why in &verdict.save_skipped {
        let _ = writeln!(out, "save: not measured: {why}");
    }
    if let Some(space) = verdict.space {
        let fits = match verdict.checkpoints_fit {
            Some(true) => ", room for the run's checkpoints",
            Some(false) => ", no room for the run's checkpoints",
            None => "",
        };
        let _ = writeln!(out, "file system: {} of {} used ({:.0}%){fits}", size(space.used), size(space.total), space.fullness() * 100.0);
    }
    if let Some(prediction) = &verdict.prediction {
        let saving: &Saving = &expected.saving;
        out.push_str(&format!("\n{}:\n", saving.model.unwrap_or("the configured model")));
        for line in prediction.advice(saving, release) {
            let _ = writeln!(out, "  {line}");
        }
    }
    if !(report.removed.is_empty() && report.not_removed.is_empty()) {
        out.push('\n');
    }
    for name in &report.removed {
        let _ = writeln!(out, "removed {name}, left by a check that was killed");
    }
    for name in &report.not_removed {
        let _ = writeln!(out, "cannot remove {name:?}, left by a check that was killed: remove it by hand");
    }
    out.push('\n');
    if verdict.problems.is_empty() {
        out += "passed: the mount is the configured Lustre, and every node writes and reads at the tier";
    } else {
        out += "failed:";
        for problem in &verdict.problems {
            let _ = write!(out, "\n  {problem}");
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
        assert_eq!((defaults.size, defaults.min_fraction), (gke_rl_in_cluster::storage::DEFAULT_MAX_NODE_BYTES, DEFAULT_MIN_FRACTION));
        assert_eq!(defaults.timeout, Duration::from_secs(900));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert!(parse_size("17T").unwrap_err().contains("outside"));
    }
}
