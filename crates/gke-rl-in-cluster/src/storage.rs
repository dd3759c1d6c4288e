//! The storage check: a Ray job that measures the shared file system on every GPU node as a
//! distributed checkpoint uses it ([`program`]), and the reading of what it prints
//! ([`Report`]) against what the deployment's Lustre instance lists and its run needs
//! ([`Expectation`]): throughput against the tier's ceiling, the slowest nodes, the mount's file
//! system, its fullness, and each save's time and share of the run predicted from the measured
//! write rate.

use std::fmt;

use serde::{Deserialize, Serialize};

use gke_rl::Deployment;
use gke_rl::checkpoint_plan::{Basis, Device, Mtbf, Prediction, Saving, rate, size};
use gke_rl::knowledge::{self, GIB, LUSTRE_FULL_FRACTION};

const CHECK_SCRIPT: &str = include_str!("../python/storage_check.py");

/// The job's program: standard-library Python on the nodes, Ray in the driver.
pub fn program() -> String {
    crate::supervisor::with_mount_rules(CHECK_SCRIPT)
}
/// Its file name in the job's working dir.
pub const CHECK_SCRIPT_FILE: &str = "storage_check.py";
/// The most each node writes by default: enough for the rate to settle, little enough that the
/// check takes minutes even at a tenth of the tier.
pub const DEFAULT_MAX_NODE_BYTES: u64 = 32 << 30;
/// The aggregate write and read must reach this fraction of the tier's ceiling (docs/storage.md says why).
pub const DEFAULT_MIN_FRACTION: f64 = 0.5;
/// Small files per node in the metadata pass.
pub const DEFAULT_FILES: u32 = 2000;
/// A node whose rate is below this share of the median node's holds every save back.
pub const SLOW_NODE_SHARE: f64 = 0.5;
/// A Lustre mount whose size differs from the configured capacity by more than this share is
/// another instance.
pub const CAPACITY_TOLERANCE: f64 = 0.1;
/// The file system type Managed Lustre mounts as.
pub const LUSTRE_TYPE: &str = "lustre";
/// The folder under the mount that checks write in; each check makes its own folder inside.
pub const CHECK_FOLDER: &str = "gke-rl/storage-check";
/// The most nodes read from one log: a cluster far larger than any GKE node pool.
const MAX_NODES: usize = 4096;
/// The most errors and removed folders kept.
const MAX_NOTES: usize = 64;
/// What the job's driver says when a stop (Ctrl-C, `ray job stop`) ended it and it removed its
/// folder.
pub const STOPPED: &str = "stopped; the check's folder was removed";
/// Seconds Ray gives the stopped check's driver (`RAY_JOB_STOP_WAIT_TIME_S`, 3 by default in
/// ray-project/ray `dashboard/modules/job/job_supervisor.py`) before it kills it: time to kill
/// its tasks and remove what they wrote.
pub const STOP_WAIT_S: u64 = 60;

/// The job's runtime env: Ray's stop waits [`STOP_WAIT_S`] for the driver to clean up.
pub fn runtime_env() -> String {
    format!("{{\"env_vars\": {{\"RAY_JOB_STOP_WAIT_TIME_S\": \"{STOP_WAIT_S}\"}}}}")
}

/// What marks the job's own lines.
const PREFIX: &str = "storage-check ";

/// What one run of the check writes: its folder, and how much.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The file system's mount, which must exist on every node: a check never makes it.
    pub root: String,
    /// The folder its own folder is made in, on the file system under test.
    pub parent: String,
    /// Its own folder's name (the job's submission id), removed when it ends.
    pub name: String,
    /// Files written in parallel per node (one per GPU rank); 0: the node's GPUs.
    pub ranks: u32,
    /// Bytes each node writes.
    pub node_bytes: u64,
    /// Small files per node.
    pub files: u32,
    /// Seconds the whole check may take.
    pub timeout_s: u64,
    /// How the save pass writes, as the deployment's release and backend do; `None`: no save
    /// pass (`--raw-only`).
    pub writer: Option<&'static knowledge::SaveWriter>,
}

impl Plan {
    /// The deployment's check: in `<mount>/gke-rl/storage-check` (or under `dir`), each node
    /// writing its share of one checkpoint of the configured model (a full checkpoint when the
    /// model is unknown to gke-rl: the cap then decides), at most `max_node_bytes`.
    pub fn for_deployment(d: &Deployment, dir: Option<&str>, name: &str, max_node_bytes: u64, timeout_s: u64) -> Plan {
        let nodes = u64::from(d.topology.node_count.get());
        let share = Saving::of(d).bytes.map_or(max_node_bytes, |bytes| bytes.div_ceil(nodes));
        let root = dir.unwrap_or(d.lustre.mount_path.as_str()).trim_end_matches('/');
        Plan {
            root: if root.is_empty() { "/".to_owned() } else { root.to_owned() },
            parent: format!("{root}/{CHECK_FOLDER}"),
            name: name.to_owned(),
            ranks: d.topology.gpus_per_node.get(),
            node_bytes: share.min(max_node_bytes).max(1),
            files: DEFAULT_FILES,
            timeout_s,
            writer: Some(gke_rl::checkpoint_plan::writer(d)),
        }
    }

    /// The job's command.
    pub fn entrypoint(&self) -> Vec<String> {
        let ranks = self.ranks.max(1);
        let rank_bytes = self.node_bytes.div_ceil(u64::from(ranks)).max(1);
        let args = [
            ("--root", self.root.clone()),
            ("--dir", self.parent.clone()),
            ("--name", self.name.clone()),
            ("--ranks", ranks.to_string()),
            ("--rank-bytes", rank_bytes.to_string()),
            ("--files", self.files.to_string()),
            ("--max-fill", LUSTRE_FULL_FRACTION.to_string()),
            ("--timeout", self.timeout_s.to_string()),
        ];
        let mut command = vec!["python".to_owned(), CHECK_SCRIPT_FILE.to_owned()];
        for (flag, value) in args {
            command.extend([flag.to_owned(), value]);
        }
        match self.writer {
            Some(writer) => {
                command.extend(["--save-threads".to_owned(), writer.threads.to_string()]);
                if writer.asynchronous {
                    command.push("--save-async".to_owned());
                }
            }
            None => command.push("--raw-only".to_owned()),
        }
        command
    }
}

/// What the check read from the job's log.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// The check's setup, as the job printed it.
    pub setup: Option<Setup>,
    /// Each node's figures, in the order they finished.
    pub nodes: Vec<NodeReport>,
    /// Errors the job reported.
    pub errors: Vec<String>,
    /// Folders of killed checks the job removed.
    pub removed: Vec<String>,
    /// Folders of killed checks the job could not remove.
    pub not_removed: Vec<String>,
    /// Lines that looked like the job's but could not be read.
    pub unreadable: usize,
}

/// The check's setup.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// Nodes the job found to measure.
    pub nodes: u32,
    /// How many of them have GPUs: with none up, the job measures the other nodes.
    pub gpu_nodes: u32,
    /// Files each node wrote in parallel.
    pub ranks: u32,
    /// Bytes of each file.
    pub rank_bytes: u64,
    /// Small files per node.
    pub files: u32,
    /// The check's own folder.
    pub folder: String,
    /// How the mount as given leads to where the check ran, when it is a link (`/home is a
    /// link to /mnt/home: using /mnt/home`): resolved once, up front.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_link: Option<String>,
}

/// The mount that holds the check's folder on a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// Its mount point.
    pub point: String,
    /// The file system type (`lustre`, `ext4`, `nfs4`, …).
    #[serde(rename = "type")]
    pub fs_type: String,
    /// What is mounted: for Lustre, `<ip>@tcp:/<fsname>`.
    pub source: String,
}

/// The file system's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Space {
    /// Bytes in all.
    pub total: u64,
    /// Bytes in use.
    pub used: u64,
    /// Bytes a user may still write.
    pub available: u64,
}

impl Space {
    /// The share in use.
    pub fn fullness(&self) -> f64 {
        if self.total == 0 { 1.0 } else { self.used as f64 / self.total as f64 }
    }

    /// Bytes that may still be written before the file system is [`LUSTRE_FULL_FRACTION`] full.
    pub fn room(&self) -> u64 {
        ((self.total as f64 * LUSTRE_FULL_FRACTION) as u64).saturating_sub(self.used)
    }
}

/// A timed pass over bytes: wall-clock seconds since the epoch, so nodes compare.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pass {
    /// When the node started it (after the barrier).
    pub start: f64,
    /// When its last file was done.
    pub end: f64,
    /// Bytes moved.
    pub bytes: u64,
}

impl Pass {
    /// Seconds it took.
    pub fn seconds(&self) -> f64 {
        self.end - self.start
    }

    /// Bytes per second.
    pub fn rate(&self) -> f64 {
        self.bytes as f64 / self.seconds()
    }

    fn is_sound(&self) -> bool {
        self.start.is_finite() && self.end.is_finite() && self.end > self.start && self.bytes > 0
    }
}

/// The metadata pass: seconds for each kind of operation over `files` small files.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Files created (each with one small write), stat'ed and deleted.
    pub files: u32,
    /// Seconds creating.
    pub create: f64,
    /// Seconds stat'ing.
    pub stat: f64,
    /// Seconds deleting.
    pub delete: f64,
}

impl Metadata {
    /// Operations per second over the three kinds.
    pub fn ops_per_second(&self) -> f64 {
        3.0 * f64::from(self.files) / (self.create + self.stat + self.delete)
    }

    fn is_sound(&self) -> bool {
        [self.create, self.stat, self.delete].iter().all(|s| s.is_finite() && *s >= 0.0) && self.create + self.stat + self.delete > 0.0
    }
}

/// One node's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeReport {
    /// Ray's node id (short), or the host name of a local run.
    pub node: String,
    /// Its IP address.
    pub ip: String,
    /// Its host name (the pod's).
    pub host: String,
    /// The mount of the check's folder, where the node could read it.
    pub mount: Option<Mount>,
    /// The file system's size before the check wrote.
    pub space: Space,
    /// Its ranks' files, written in parallel and fsync'ed.
    pub write: Pass,
    /// Another node's files, read back.
    pub read: Pass,
    /// The small files.
    pub metadata: Metadata,
    /// The node's share saved as a distributed checkpoint, or why not; absent with `--raw-only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save: Option<SavePass>,
}

impl NodeReport {
    fn is_sound(&self) -> bool {
        self.write.is_sound() && self.read.is_sound() && self.metadata.is_sound() && self.save.as_ref().is_none_or(SavePass::is_sound)
    }
}

/// A node's save pass: its figures, or why it did not save.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SavePass {
    /// It saved.
    Saved(Saved),
    /// It could not (no torch, or one too old), and said why.
    Skipped {
        /// Why.
        skipped: String,
    },
}

impl SavePass {
    fn is_sound(&self) -> bool {
        match self {
            SavePass::Saved(saved) => saved.is_sound(),
            SavePass::Skipped { .. } => true,
        }
    }
}

/// A distributed checkpoint one node saved: wall-clock times since the epoch, so nodes compare.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    /// The torch that saved it.
    pub torch: String,
    /// Where the tensors came from: the node's GPUs, or host memory.
    #[serde(deserialize_with = "device")]
    pub device: Device,
    /// The GPU's name, where there was one.
    #[serde(default)]
    pub gpu: Option<String>,
    /// Ranks (one process each).
    pub ranks: u32,
    /// Writer threads a rank.
    pub threads: u32,
    /// Parameters of the node's share.
    pub parameters: u64,
    /// Bytes a parameter took, as laid out.
    pub bytes_per_parameter: u64,
    /// Bytes the synchronous save wrote.
    pub bytes: u64,
    /// When its ranks began.
    pub start: f64,
    /// When the last rank's `save()` returned.
    pub returned: f64,
    /// When the last rank's files were on disk.
    pub durable: f64,
    /// Seconds the slowest rank took to copy its tensors off the GPU.
    #[serde(default)]
    pub staging_s: Option<f64>,
    /// The asynchronous save, where the release saves so.
    #[serde(default, rename = "async")]
    pub asynchronous: Option<AsyncSave>,
}

/// `gpu` or `cpu`, as the check says where a save's tensors came from; anything else does not
/// read.
fn device<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Device, D::Error> {
    match <&str>::deserialize(deserializer)? {
        "gpu" => Ok(Device::Gpu),
        "cpu" => Ok(Device::Cpu),
        other => Err(serde::de::Error::unknown_variant(other, &["gpu", "cpu"])),
    }
}

/// An asynchronous save's times.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AsyncSave {
    /// When it began.
    pub start: f64,
    /// When the last rank's `async_save()` returned: what training waits for.
    pub blocked: f64,
    /// When the last rank's files had landed.
    pub landed: f64,
}

impl Saved {
    fn is_sound(&self) -> bool {
        let ordered = |a: f64, b: f64| a.is_finite() && b.is_finite() && b >= a;
        ordered(self.start, self.returned)
            && ordered(self.returned, self.durable)
            && self.durable > self.start
            && self.bytes > 0
            && self.staging_s.is_none_or(|s| s.is_finite() && s >= 0.0)
            && self.asynchronous.is_none_or(|a| ordered(a.start, a.blocked) && ordered(a.blocked, a.landed))
    }
}

/// Every node's save pass together: all bytes over the span from the first start to the last
/// durable file, as one save of the run waits for its slowest rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SaveFigures {
    /// The GPUs when every node saved from its GPUs, else host memory.
    pub device: Device,
    /// The torch of the first node.
    pub torch: String,
    /// Bytes saved, all nodes.
    pub bytes: u64,
    /// Seconds to the last `save()` returning.
    pub returned_s: f64,
    /// Seconds to the last file on disk.
    pub durable_s: f64,
    /// The slowest rank's staging off the GPU.
    pub staging_s: Option<f64>,
    /// Seconds an asynchronous save blocked, where there was one.
    pub blocking_s: Option<f64>,
    /// Seconds to an asynchronous save's last file landing.
    pub landed_s: Option<f64>,
}

impl SaveFigures {
    /// Bytes per second to durable: what a save of the run reaches.
    pub fn rate(&self) -> f64 {
        self.bytes as f64 / self.durable_s
    }
}

impl Report {
    /// Reads the job's log. Lines it does not know are skipped, so Ray's own lines may be
    /// mixed in; a line of its own it cannot read is counted, never a wrong figure.
    pub fn parse(log: &str) -> Report {
        let mut report = Report::default();
        for line in log.lines() {
            let Some(rest) = line.trim_end_matches('\r').strip_prefix(PREFIX) else { continue };
            report.line(rest);
        }
        report
    }

    fn line(&mut self, rest: &str) {
        if let Some(message) = rest.strip_prefix("error: ") {
            push_bounded(&mut self.errors, message);
        } else if let Some(name) = rest.strip_prefix("removed ") {
            self.folder_name(name, |report| &mut report.removed);
        } else if let Some(name) = rest.strip_prefix("cannot remove ") {
            self.folder_name(name, |report| &mut report.not_removed);
        } else if let Some(json) = rest.strip_prefix("setup ") {
            match serde_json::from_str(json) {
                Ok(setup) => self.setup = Some(setup),
                Err(_) => self.unreadable += 1,
            }
        } else if let Some(json) = rest.strip_prefix("node ") {
            match serde_json::from_str::<NodeReport>(json) {
                // A node reports once: another line of it is not another node.
                Ok(node) if self.nodes.iter().any(|n| n.node == node.node) => self.unreadable += 1,
                Ok(node) if node.is_sound() && self.nodes.len() < MAX_NODES => self.nodes.push(node),
                Ok(_) if self.nodes.len() >= MAX_NODES => {}
                _ => self.unreadable += 1,
            }
        }
    }

    /// A folder's name as the job quotes it (JSON), into the list `into` picks.
    fn folder_name(&mut self, quoted: &str, into: fn(&mut Report) -> &mut Vec<String>) {
        match serde_json::Deserializer::from_str(quoted).into_iter::<String>().next() {
            Some(Ok(name)) => push_bounded(into(self), &name),
            _ => self.unreadable += 1,
        }
    }

    /// The write over every node: all bytes over the span from the first start to the last end.
    pub fn write(&self) -> Option<Pass> {
        aggregate(self.nodes.iter().map(|n| n.write))
    }

    /// The read over every node.
    pub fn read(&self) -> Option<Pass> {
        aggregate(self.nodes.iter().map(|n| n.read))
    }

    /// Metadata operations per second over every node (they run side by side).
    pub fn metadata_ops_per_second(&self) -> Option<f64> {
        (!self.nodes.is_empty()).then(|| self.nodes.iter().map(|n| n.metadata.ops_per_second()).sum())
    }

    /// The save pass over every node, when each one saved.
    pub fn save(&self) -> Option<SaveFigures> {
        let saved: Vec<&Saved> = self
            .nodes
            .iter()
            .map(|n| match &n.save {
                Some(SavePass::Saved(saved)) => Some(saved),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let first = saved.first()?;
        let start = earliest(saved.iter().map(|s| s.start));
        let asynchronous: Option<Vec<AsyncSave>> = saved.iter().map(|s| s.asynchronous).collect();
        let (blocking_s, landed_s) = match asynchronous.filter(|all| !all.is_empty()) {
            Some(all) => {
                let start = earliest(all.iter().map(|a| a.start));
                (Some(latest(all.iter().map(|a| a.blocked)) - start), Some(latest(all.iter().map(|a| a.landed)) - start))
            }
            None => (None, None),
        };
        Some(SaveFigures {
            device: if saved.iter().all(|s| s.device == Device::Gpu) { Device::Gpu } else { Device::Cpu },
            torch: first.torch.clone(),
            bytes: saved.iter().map(|s| s.bytes).fold(0u64, u64::saturating_add),
            returned_s: latest(saved.iter().map(|s| s.returned)) - start,
            durable_s: latest(saved.iter().map(|s| s.durable)) - start,
            staging_s: saved.iter().filter_map(|s| s.staging_s).reduce(f64::max),
            blocking_s,
            landed_s,
        })
    }

    /// Why nodes did not save, each reason once.
    pub fn save_skipped(&self) -> Vec<String> {
        let mut reasons: Vec<String> = self
            .nodes
            .iter()
            .filter_map(|n| match &n.save {
                Some(SavePass::Skipped { skipped }) => Some(skipped.clone()),
                _ => None,
            })
            .collect();
        reasons.sort();
        reasons.dedup();
        reasons
    }

    /// The file system's size as the first node saw it.
    pub fn space(&self) -> Option<Space> {
        self.nodes.first().map(|n| n.space)
    }

    /// The nodes, slowest writer first.
    pub fn slowest(&self) -> Vec<&NodeReport> {
        let mut nodes: Vec<&NodeReport> = self.nodes.iter().collect();
        nodes.sort_by(|a, b| a.write.rate().total_cmp(&b.write.rate()));
        nodes
    }

    /// Judges the report against `expected`: the figures and what keeps them from passing.
    pub fn judge(&self, expected: &Expectation) -> Verdict {
        let mut problems: Vec<Problem> = self.errors.iter().map(|message| Problem::JobFailed { message: message.clone() }).collect();
        let found = self.nodes.len();
        if found > 0 && self.setup.as_ref().is_some_and(|s| s.gpu_nodes == 0) {
            problems.push(Problem::NoGpuNodes { measured: found });
        } else if found == 0 || expected.nodes.is_some_and(|n| found < n as usize) {
            problems.push(Problem::TooFewNodes { found, expected: expected.nodes });
        }
        if self.unreadable > 0 {
            problems.push(Problem::Unreadable { lines: self.unreadable });
        }
        problems.extend(self.mount_problems(expected));
        let (write, read) = (self.write(), self.read());
        for (pass, which) in [(write, Direction::Write), (read, Direction::Read)] {
            let (Some(pass), Some(ceiling)) = (pass, expected.ceiling) else { continue };
            if pass.rate() < expected.min_fraction * ceiling.bytes_per_second {
                problems.push(Problem::BelowCeiling {
                    direction: which,
                    rate: pass.rate(),
                    ceiling: ceiling.bytes_per_second,
                    min_fraction: expected.min_fraction,
                });
            }
        }
        problems.extend(self.slow_nodes());
        let space = self.space();
        if let Some(space) = space.filter(|s| s.fullness() > LUSTRE_FULL_FRACTION) {
            problems.push(Problem::Full { used: space.used, total: space.total });
        }
        let peak = expected.saving.bytes.zip(expected.saving.peak_kept).filter(|_| expected.saving.enabled);
        let fits = space.zip(peak).map(|(space, (bytes, kept))| bytes.saturating_mul(kept) <= space.room());
        if let (Some(false), Some(space), Some((bytes, kept))) = (fits, space, peak) {
            problems.push(Problem::CheckpointsDoNotFit { kept, bytes, room: space.room() });
        }
        let save = self.save();
        // The saved checkpoint's own rate where every node saved; else the raw write's, at
        // the efficiency a real save reaches.
        let basis = match &save {
            Some(saved) => Some(Basis::Saved {
                rate: saved.rate(),
                pause_rate: saved.blocking_s.filter(|b| *b > 0.0).map(|b| saved.bytes as f64 / b),
                device: saved.device,
                staging_s: saved.staging_s,
            }),
            None => write.map(|w| Basis::MeasuredRate { raw: w.rate() }),
        };
        let mtbf = expected.saving.mtbf_minutes.map(|minutes| Mtbf::Configured { minutes });
        let prediction = basis.filter(|_| expected.saving.enabled).and_then(|basis| Prediction::new(&expected.saving, basis, mtbf));
        if let Some(prediction) = prediction.filter(|p| p.past_timeout) {
            problems.push(Problem::SavePastTimeout { save_s: prediction.save_s, bytes: prediction.bytes });
        }
        let save_skipped = self.save_skipped();
        Verdict {
            write,
            read,
            metadata_ops_per_second: self.metadata_ops_per_second(),
            space,
            checkpoints_fit: fits,
            save,
            save_skipped,
            prediction,
            problems,
        }
    }

    /// The mount every node must have: Lustre, one instance, of the configured size.
    fn mount_problems(&self, expected: &Expectation) -> Vec<Problem> {
        let mut problems = Vec::new();
        for node in &self.nodes {
            match &node.mount {
                None => problems.push(Problem::MountUnknown { node: node.node.clone() }),
                Some(mount) if mount.fs_type != LUSTRE_TYPE => problems.push(Problem::NotLustre {
                    node: node.node.clone(),
                    fs_type: mount.fs_type.clone(),
                    source: mount.source.clone(),
                    point: mount.point.clone(),
                }),
                Some(_) => {}
            }
        }
        let mut sources: Vec<&str> = self.nodes.iter().filter_map(|n| Some(n.mount.as_ref()?.source.as_str())).collect();
        sources.sort_unstable();
        sources.dedup();
        if sources.len() > 1 {
            problems.push(Problem::MountsDiffer { sources: sources.iter().map(|s| (*s).to_owned()).collect() });
        }
        let lustre = self.nodes.first().filter(|n| n.mount.as_ref().is_some_and(|m| m.fs_type == LUSTRE_TYPE));
        if let (Some(node), Some(capacity_gib)) = (lustre, expected.capacity_gib) {
            let configured = capacity_gib.saturating_mul(GIB) as f64;
            if (node.space.total as f64 - configured).abs() > CAPACITY_TOLERANCE * configured {
                problems.push(Problem::OtherInstance {
                    source: node.mount.as_ref().map(|m| m.source.clone()).unwrap_or_default(),
                    total: node.space.total,
                    capacity_gib,
                });
            }
        }
        problems
    }

    /// Nodes whose write or read rate is below [`SLOW_NODE_SHARE`] of the median node's.
    fn slow_nodes(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for which in [Direction::Write, Direction::Read] {
            let rate = |n: &NodeReport| match which {
                Direction::Write => n.write.rate(),
                Direction::Read => n.read.rate(),
            };
            let mut rates: Vec<f64> = self.nodes.iter().map(rate).collect();
            rates.sort_by(f64::total_cmp);
            let Some(median) = median(&rates) else { continue };
            for node in self.nodes.iter().filter(|n| rate(n) < SLOW_NODE_SHARE * median) {
                problems.push(Problem::SlowNode {
                    node: node.node.clone(),
                    ip: node.ip.clone(),
                    host: node.host.clone(),
                    direction: which,
                    rate: rate(node),
                    median,
                });
            }
        }
        problems
    }
}

/// The least of wall-clock times, as nodes report them.
fn earliest(times: impl Iterator<Item = f64>) -> f64 {
    times.fold(f64::INFINITY, f64::min)
}

/// The greatest.
fn latest(times: impl Iterator<Item = f64>) -> f64 {
    times.fold(f64::NEG_INFINITY, f64::max)
}

fn push_bounded(list: &mut Vec<String>, text: &str) {
    if list.len() < MAX_NOTES {
        list.push(text.chars().take(1000).collect());
    }
}

fn aggregate(passes: impl Iterator<Item = Pass>) -> Option<Pass> {
    passes.reduce(|a, b| Pass { start: a.start.min(b.start), end: a.end.max(b.end), bytes: a.bytes.saturating_add(b.bytes) })
}

/// The median of sorted `values`.
fn median(values: &[f64]) -> Option<f64> {
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// The instance's list throughput.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ceiling {
    /// Capacity × the tier's MB/s per TiB, in bytes per second.
    pub bytes_per_second: f64,
    /// The capacity, GiB.
    pub capacity_gib: u64,
    /// The tier, MB/s per TiB.
    pub tier: u32,
}

/// What a deployment's storage check must show.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Expectation {
    /// The GPU nodes that must take part.
    pub nodes: Option<u32>,
    /// The instance's list throughput, when the config's tier is one Managed Lustre has.
    pub ceiling: Option<Ceiling>,
    /// The configured capacity, GiB.
    pub capacity_gib: Option<u64>,
    /// The fraction of the ceiling the aggregate write and read must reach.
    pub min_fraction: f64,
    /// What the run saves.
    pub saving: Saving,
    /// How the run's release writes a save, which the save pass copies.
    pub writer: &'static knowledge::SaveWriter,
}

impl Expectation {
    /// The deployment's nodes, instance and run.
    pub fn for_deployment(d: &Deployment, min_fraction: f64) -> Expectation {
        let capacity_gib = u64::from(d.lustre.capacity_gib.get());
        let tier = d.lustre.throughput_mbps_per_tib.get();
        Expectation {
            nodes: Some(d.topology.node_count.get()),
            ceiling: Saving::tier_ceiling(d).map(|bytes_per_second| Ceiling { bytes_per_second, capacity_gib, tier }),
            capacity_gib: Some(capacity_gib),
            min_fraction,
            saving: Saving::of(d),
            writer: gke_rl::checkpoint_plan::writer(d),
        }
    }
}

/// The figures of a judged report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// The aggregate write.
    pub write: Option<Pass>,
    /// The aggregate read.
    pub read: Option<Pass>,
    /// Metadata operations per second, all nodes.
    pub metadata_ops_per_second: Option<f64>,
    /// The file system's size.
    pub space: Option<Space>,
    /// Whether the run's checkpoints at their peak fit below the fill line.
    pub checkpoints_fit: Option<bool>,
    /// The save pass over every node, when each one saved.
    pub save: Option<SaveFigures>,
    /// Why nodes did not save (the prediction then comes from the raw write rate).
    pub save_skipped: Vec<String>,
    /// The run's saves, predicted from the save pass, else the raw write rate.
    pub prediction: Option<Prediction>,
    /// What keeps the check from passing; empty when it passes.
    pub problems: Vec<Problem>,
}

/// The file, in the deployment folder, where a storage check of the deployment's own mount keeps
/// what it measured one save at: `report` predicts from it while the deployment's storage and
/// nodes are the ones measured.
pub const MEASURED_SAVE_FILE: &str = "measured-save.json";

/// What a storage check measured one save at, kept for later predictions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasuredSave {
    /// The rate a save reaches, and where it comes from.
    pub basis: KeptBasis,
    /// What it measured: the rate holds for the same storage, nodes and image only.
    pub of: Measured,
}

/// A [`Basis`] a check measures, as kept (the SDK's stays serialize-only: the page's wasm
/// carries no reader of it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "kebab-case")]
pub enum KeptBasis {
    /// [`Basis::Saved`].
    Saved {
        /// Bytes per second to durable.
        rate: f64,
        /// Bytes per second of an asynchronous save's pause.
        pause_rate: Option<f64>,
        /// Whether the tensors came off the GPUs.
        gpu: bool,
        /// The slowest rank's staging off the GPU.
        staging_s: Option<f64>,
    },
    /// [`Basis::MeasuredRate`].
    MeasuredRate {
        /// The raw write rate.
        raw: f64,
    },
}

impl KeptBasis {
    /// The basis a check measured; none for one it cannot have measured.
    pub fn kept(basis: Basis) -> Option<KeptBasis> {
        match basis {
            Basis::Saved { rate, pause_rate, device, staging_s } => {
                Some(KeptBasis::Saved { rate, pause_rate, gpu: device == Device::Gpu, staging_s })
            }
            Basis::MeasuredRate { raw } => Some(KeptBasis::MeasuredRate { raw }),
            Basis::ListThroughput { .. } => None,
        }
    }

    /// The SDK's basis.
    pub fn basis(self) -> Basis {
        match self {
            KeptBasis::Saved { rate, pause_rate, gpu, staging_s } => {
                Basis::Saved { rate, pause_rate, device: if gpu { Device::Gpu } else { Device::Cpu }, staging_s }
            }
            KeptBasis::MeasuredRate { raw } => Basis::MeasuredRate { raw },
        }
    }
}

/// The storage, nodes and image a check measured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// Lustre's capacity, GiB.
    pub capacity_gib: u64,
    /// Its tier, MB/s per TiB.
    pub tier: u32,
    /// The mount.
    pub mount: String,
    /// GPU nodes.
    pub nodes: u32,
    /// GPUs (ranks) a node.
    pub gpus_per_node: u32,
    /// The image, whose release decides how a save writes.
    pub image: String,
}

impl Measured {
    /// What `d` has.
    pub fn of(d: &Deployment) -> Measured {
        Measured {
            capacity_gib: u64::from(d.lustre.capacity_gib.get()),
            tier: d.lustre.throughput_mbps_per_tib.get(),
            mount: d.lustre.mount_path.as_str().to_owned(),
            nodes: d.topology.node_count.get(),
            gpus_per_node: d.topology.gpus_per_node.get(),
            image: d.ray.image.as_str().to_owned(),
        }
    }
}

impl MeasuredSave {
    /// What `verdict` measured on `d`'s mount, when it predicted a save.
    pub fn of(verdict: &Verdict, d: &Deployment) -> Option<MeasuredSave> {
        let prediction = verdict.prediction?;
        Some(MeasuredSave { basis: KeptBasis::kept(prediction.basis)?, of: Measured::of(d) })
    }

    /// `d`'s saves at the measured rate, when it measured `d`'s storage, nodes and image.
    pub fn predict(&self, d: &Deployment) -> Option<Prediction> {
        let saving = Saving::of(d);
        let mtbf = saving.mtbf_minutes.map(|minutes| Mtbf::Configured { minutes });
        (self.of == Measured::of(d) && saving.enabled).then(|| Prediction::new(&saving, self.basis.basis(), mtbf)).flatten()
    }
}

/// Writing or reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Writing, as a save does.
    Write,
    /// Reading, as a resume does.
    Read,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Write => "write",
            Direction::Read => "read",
        })
    }
}

/// Why a storage check failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Problem {
    /// The job said it could not run.
    JobFailed {
        /// What it said.
        message: String,
    },
    /// Fewer nodes reported than the deployment has.
    TooFewNodes {
        /// Nodes that reported.
        found: usize,
        /// Nodes the deployment has.
        expected: Option<u32>,
    },
    /// No node of the cluster has GPUs: the job measured the others (the head).
    NoGpuNodes {
        /// Nodes it measured instead.
        measured: usize,
    },
    /// Lines of the job's own that could not be read: their figures are not counted.
    Unreadable {
        /// How many.
        lines: usize,
    },
    /// A node could not say what is mounted at the folder.
    MountUnknown {
        /// The node.
        node: String,
    },
    /// The folder is on a file system other than Lustre.
    NotLustre {
        /// The node.
        node: String,
        /// Its file system type.
        fs_type: String,
        /// What is mounted there.
        source: String,
        /// Where.
        point: String,
    },
    /// Nodes mount different file systems at the folder.
    MountsDiffer {
        /// Each source.
        sources: Vec<String>,
    },
    /// The mount's size is not the configured instance's.
    OtherInstance {
        /// What is mounted.
        source: String,
        /// Its size, bytes.
        total: u64,
        /// The configured capacity.
        capacity_gib: u64,
    },
    /// The aggregate rate is below the floor.
    BelowCeiling {
        /// Writing or reading.
        direction: Direction,
        /// The aggregate rate, bytes per second.
        rate: f64,
        /// The instance's list throughput.
        ceiling: f64,
        /// The floor's fraction of it.
        min_fraction: f64,
    },
    /// A node is far slower than the others.
    SlowNode {
        /// The node.
        node: String,
        /// Its IP address (the pod's).
        ip: String,
        /// Its host.
        host: String,
        /// Writing or reading.
        direction: Direction,
        /// Its rate, bytes per second.
        rate: f64,
        /// The median node's.
        median: f64,
    },
    /// The file system is past the fill line.
    Full {
        /// Bytes in use.
        used: u64,
        /// Bytes in all.
        total: u64,
    },
    /// The run's checkpoints at their peak do not fit below the fill line.
    CheckpointsDoNotFit {
        /// Checkpoints at the peak.
        kept: u64,
        /// Bytes of one.
        bytes: u64,
        /// Bytes left below the line.
        room: u64,
    },
    /// A save at the measured rate runs past NeMo-RL's collective timeout.
    SavePastTimeout {
        /// Seconds one save takes.
        save_s: f64,
        /// Bytes of one.
        bytes: u64,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let percent = |x: f64| format!("{:.0}%", x * 100.0);
        match self {
            Problem::JobFailed { message } => write!(f, "the check job failed: {message}"),
            Problem::TooFewNodes { found, expected: Some(expected) } => {
                write!(f, "{found} of the {expected} GPU nodes reported; every node that trains must be measured")
            }
            Problem::TooFewNodes { found, expected: None } => write!(f, "{found} nodes reported"),
            Problem::NoGpuNodes { measured } => write!(
                f,
                "no GPU node is up, so the check measured {measured} other node(s): resume the cluster or let its GPU pool scale up, then check again"
            ),
            Problem::Unreadable { lines } => {
                write!(f, "{lines} line(s) of the check's own output could not be read; their figures are not counted")
            }
            Problem::MountUnknown { node } => write!(f, "node {node}: /proc/self/mountinfo does not say what holds the folder"),
            Problem::NotLustre { node, fs_type, source, point } => write!(
                f,
                "node {node}: the folder is on {fs_type} ({source} at {point}), not Managed Lustre: is the PVC bound to another volume, or the mount path wrong?"
            ),
            Problem::MountsDiffer { sources } => write!(f, "the nodes mount different file systems: {}", sources.join(", ")),
            Problem::OtherInstance { source, total, capacity_gib } => write!(
                f,
                "{source} holds {}, but the config's instance has {capacity_gib} GiB ({}): is the PVC bound to another instance?",
                size(*total),
                size(capacity_gib.saturating_mul(GIB))
            ),
            Problem::BelowCeiling { direction, rate: measured, ceiling, min_fraction } => write!(
                f,
                "the nodes {direction} at {} together, {} of the instance's {} (the floor is {}): a smaller instance or tier than the config's, \
                 or nodes that cannot drive it (their NICs; the Lustre CSI driver's multi-NIC off)",
                rate(*measured),
                percent(measured / ceiling),
                rate(*ceiling),
                percent(*min_fraction)
            ),
            Problem::SlowNode { node, ip, host, direction, rate: measured, median } => write!(
                f,
                "node {node} ({ip}, {host}) {direction}s at {}, {} of the median node's {}: every save waits for its slowest rank",
                rate(*measured),
                percent(measured / median),
                rate(*median)
            ),
            Problem::Full { used, total } => write!(
                f,
                "the file system is {} full ({} of {}): Managed Lustre slows down above {}",
                percent(*used as f64 / *total as f64),
                size(*used),
                size(*total),
                percent(LUSTRE_FULL_FRACTION)
            ),
            Problem::CheckpointsDoNotFit { kept, bytes, room } => write!(
                f,
                "{kept} checkpoints of {} (keep_top_k and the one being written) need {} beside what the file system holds now, and {} is left below {} full",
                size(*bytes),
                size(bytes.saturating_mul(*kept)),
                size(*room),
                percent(LUSTRE_FULL_FRACTION)
            ),
            Problem::SavePastTimeout { save_s, bytes } => write!(
                f,
                "a save of {} as measured takes {save_s:.0} s, past the {} s a rank of NeMo-RL waits at a collective, such as the barrier that ends a save",
                size(*bytes),
                knowledge::NEMO_RL_COLLECTIVE_TIMEOUT_S
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node line as the job prints it: `rate` GB/s writing and reading 8 GiB, on `fs`.
    fn node_line(name: &str, write_gbps: f64, read_gbps: f64, fs: &str, total: u64, used: u64) -> String {
        let bytes = 8u64 << 30;
        let (write_s, read_s) = (bytes as f64 / (write_gbps * 1e9), bytes as f64 / (read_gbps * 1e9));
        let node = serde_json::json!({
            "node": name, "ip": "10.0.0.1", "host": format!("host-{name}"), "index": 0, "ranks": 8, "rank_bytes": 1 << 30,
            "mount": {"point": "/lustre", "type": fs, "source": "10.90.0.2@tcp:/lfs"},
            "space": {"total": total, "used": used, "available": total - used},
            "write": {"start": 1000.0, "end": 1000.0 + write_s, "bytes": bytes},
            "read": {"start": 1100.0, "end": 1100.0 + read_s, "bytes": bytes, "from": 1},
            "metadata": {"files": 2000, "create": 1.0, "stat": 0.5, "delete": 0.5},
        });
        format!("storage-check node {node}\n")
    }

    /// The codelab's instance: 9,000 GiB at 1000 MB/s/TiB, 8.79 GB/s.
    fn codelab() -> Deployment {
        gke_rl::config::from_yaml("job:\n  expected_step_seconds: 600\n  mean_minutes_between_preemptions: 360\n").expect("a config")
    }

    const TIB: u64 = 1 << 40;

    #[test]
    fn eight_lustre_nodes_at_the_tier_pass_and_predict_the_save() {
        let total = 9000 * GIB;
        let log: String = (0..8).map(|i| node_line(&format!("n{i}"), 1.1, 1.2, "lustre", total, total / 10)).collect();
        let report = Report::parse(&format!("(raylet) a Ray line\n{log}"));
        assert_eq!(report.nodes.len(), 8);
        let expected = Expectation::for_deployment(&codelab(), DEFAULT_MIN_FRACTION);
        let verdict = report.judge(&expected);
        assert_eq!(verdict.problems, []);
        let write = verdict.write.expect("a write");
        assert!((write.rate() - 8.8e9).abs() < 1e6, "8 nodes at 1.1 GB/s side by side: {}", write.rate());
        assert_eq!(verdict.metadata_ops_per_second, Some(8.0 * 3000.0));
        // No save pass: Qwen2.5-72B's 1,017,886,851,072 bytes at half of 8.8 GB/s, 231.34 s;
        // √(2 · 231.34 · 21,600) = 3,161 s, 5 steps of 600 s.
        let prediction = verdict.prediction.expect("a prediction");
        assert_eq!(prediction.basis, Basis::MeasuredRate { raw: write.rate() });
        assert!((prediction.save_s - 231.338).abs() < 0.01, "{}", prediction.save_s);
        assert!((prediction.wall_share.unwrap() - 231.338 / 1431.338).abs() < 1e-4);
        assert_eq!(prediction.interval.map(|i| i.steps), Some(5));
        assert_eq!(verdict.checkpoints_fit, Some(true));
    }

    /// `line` with a save pass: `bytes` saved from `start`, durable `seconds` later.
    fn with_save(line: &str, save: serde_json::Value) -> String {
        let mut node: serde_json::Value = serde_json::from_str(line.trim().strip_prefix("storage-check node ").unwrap()).unwrap();
        node["save"] = save;
        format!("storage-check node {node}\n")
    }

    /// Issue 66's measure, on a lent H100: the check's node line, judged as gke-rl judges it,
    /// predicts a real distributed checkpoint of the same bytes, saved from the GPU on the same
    /// disk, within 20% (tests/fixtures/storage-check/README.md).
    #[test]
    fn the_save_pass_predicts_a_real_save_from_a_gpu_within_a_fifth() {
        let runs = [
            include_str!("../../../tests/fixtures/storage-check/save-pass-h100-threads1.json"),
            include_str!("../../../tests/fixtures/storage-check/save-pass-h100-threads2.json"),
        ];
        for run in runs {
            let run: serde_json::Value = serde_json::from_str(run).expect("the device run's JSON");
            let lines: Vec<&str> = run["storage_check"]["lines"].as_array().expect("lines").iter().filter_map(|l| l.as_str()).collect();
            let report = Report::parse(&lines.join("\n"));
            let save = report.save().expect("the node saved");
            assert_eq!(save.device, Device::Gpu);
            let real_s = run["sync"]["durable_s"].as_f64().expect("the real save");
            let predicted_s = run["sync"]["bytes"].as_f64().expect("bytes") / save.rate();
            let ratio = predicted_s / real_s;
            assert!((0.8..=1.2).contains(&ratio), "predicted {predicted_s:.1} s, measured {real_s:.1} s");
            // The raw rate alone, at full value, would have been far off.
            let raw = run["sync"]["bytes"].as_f64().unwrap() / report.write().expect("a write").rate() / real_s;
            assert!(raw < 0.7, "{raw}");
        }
    }

    #[test]
    fn a_saved_checkpoint_predicts_the_save_and_says_how() {
        let total = 9000 * GIB;
        let saved = |start: f64, durable: f64| {
            serde_json::json!({
                "torch": "2.11.0", "device": "gpu", "gpu": "NVIDIA B200", "ranks": 8, "threads": 2, "parameters": 1_000_000_000u64,
                "bytes_per_parameter": 14, "bytes": 14_000_000_000u64, "start": start, "returned": durable - 1.0, "durable": durable,
                "staging_s": 3.5,
            })
        };
        // Two nodes save 28 GB together from t=100 to the slowest's t=114: 2 GB/s.
        let log = [
            with_save(&node_line("n0", 1.1, 1.2, "lustre", total, 0), saved(100.0, 110.0)),
            with_save(&node_line("n1", 1.1, 1.2, "lustre", total, 0), saved(101.0, 114.0)),
        ]
        .concat();
        let report = Report::parse(&log);
        assert_eq!(report.unreadable, 0);
        let verdict = report.judge(&Expectation::for_deployment(&codelab(), DEFAULT_MIN_FRACTION));
        let save = verdict.save.clone().expect("both nodes saved");
        assert_eq!((save.device, save.bytes, save.durable_s, save.staging_s), (Device::Gpu, 28_000_000_000, 14.0, Some(3.5)));
        let prediction = verdict.prediction.expect("a prediction");
        assert_eq!(prediction.basis, Basis::Saved { rate: 2e9, pause_rate: None, device: Device::Gpu, staging_s: Some(3.5) });
        assert!((prediction.rate - 2e9).abs() < 1.0, "{}", prediction.rate);
        assert!(
            prediction.advice(&Saving::of(&codelab()), None)[0].contains("from a distributed checkpoint the check saved from the GPUs")
        );

        // A node without torch: no saved figures for the cluster, the raw rate instead, and why.
        let skipped = serde_json::json!({"skipped": "torch does not import in /usr/bin/python3"});
        let log = [
            with_save(&node_line("n0", 1.1, 1.2, "lustre", total, 0), saved(100.0, 110.0)),
            with_save(&node_line("n1", 1.1, 1.2, "lustre", total, 0), skipped),
        ]
        .concat();
        let verdict = Report::parse(&log).judge(&Expectation::for_deployment(&codelab(), DEFAULT_MIN_FRACTION));
        assert_eq!(verdict.save, None);
        assert_eq!(verdict.save_skipped, ["torch does not import in /usr/bin/python3"]);
        assert!(matches!(verdict.prediction.map(|p| p.basis), Some(Basis::MeasuredRate { .. })));

        // An asynchronous release pauses training only for what its save blocked on.
        let asynchronous = |start: f64| {
            let mut figures = saved(start, start + 10.0);
            figures["async"] = serde_json::json!({"start": start + 20.0, "blocked": start + 22.0, "landed": start + 31.0});
            figures
        };
        let log = [
            with_save(&node_line("n0", 1.1, 1.2, "lustre", total, 0), asynchronous(100.0)),
            with_save(&node_line("n1", 1.1, 1.2, "lustre", total, 0), asynchronous(100.0)),
        ]
        .concat();
        let v060 = "ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\njob:\n  recipe: examples/configs/grpo_math_8B.yaml\n  expected_step_seconds: 600\n";
        let dtensor = gke_rl::config::from_yaml(v060).expect("a config");
        let expected = Expectation::for_deployment(&dtensor, DEFAULT_MIN_FRACTION);
        assert!(expected.writer.asynchronous && expected.saving.asynchronous);
        let prediction = Report::parse(&log).judge(&expected).prediction.expect("a prediction");
        // 28 GB durable in 10 s, blocking 2 s: a save of the model pauses a fifth of its time.
        assert!((prediction.pause_s / prediction.save_s - 0.2).abs() < 1e-9, "{prediction:?}");
        assert!(prediction.advice(&expected.saving, Some("v0.6.0"))[1].contains("the release saves asynchronously"));

        // Times out of order are no figures.
        let backwards = with_save(&node_line("n0", 1.1, 1.2, "lustre", total, 0), saved(100.0, 90.0));
        assert_eq!(Report::parse(&backwards).unreadable, 1);
    }

    #[test]
    fn a_slow_node_a_wrong_mount_and_a_full_file_system_are_named() {
        let total = 9000 * GIB;
        let log = [
            node_line("fast1", 1.1, 1.2, "lustre", total, total / 2),
            node_line("fast2", 1.1, 1.2, "lustre", total, total / 2),
            node_line("slow", 0.1, 1.2, "lustre", total, total / 2),
        ]
        .concat();
        let expected = Expectation::for_deployment(&codelab(), DEFAULT_MIN_FRACTION);
        let verdict = Report::parse(&log).judge(&expected);
        let slow: Vec<&Problem> = verdict.problems.iter().filter(|p| matches!(p, Problem::SlowNode { .. })).collect();
        assert_eq!(slow.len(), 1, "{:?}", verdict.problems);
        assert!(
            slow[0].to_string().starts_with("node slow (10.0.0.1, host-slow) writes at 0.10 GB/s, 9% of the median node's 1.10 GB/s"),
            "{}",
            slow[0]
        );
        assert!(verdict.problems.contains(&Problem::TooFewNodes { found: 3, expected: Some(8) }));
        assert!(verdict.problems.iter().any(|p| matches!(p, Problem::BelowCeiling { direction: Direction::Write, .. })));
        // Half full: 4,500 GiB used of 9,000; 3 checkpoints of 1.02 TB need 3.05 TB, and 3,600 GiB (3.87 TB) is left.
        assert_eq!(verdict.checkpoints_fit, Some(true));

        let full = Report::parse(&node_line("n0", 9.0, 9.0, "lustre", total, total / 100 * 95)).judge(&expected);
        assert!(full.problems.iter().any(|p| matches!(p, Problem::Full { .. })), "{:?}", full.problems);
        assert!(full.problems.iter().any(|p| matches!(p, Problem::CheckpointsDoNotFit { kept: 3, .. })));

        let other = Report::parse(&node_line("n0", 9.0, 9.0, "lustre", 18 * TIB, 0)).judge(&expected);
        let found = other.problems.iter().find(|p| matches!(p, Problem::OtherInstance { .. })).expect("another instance");
        assert!(found.to_string().contains("is the PVC bound to another instance?"), "{found}");

        let local = Report::parse(&node_line("n0", 9.0, 9.0, "ext4", total, 0)).judge(&expected);
        let not_lustre = local.problems.iter().find(|p| matches!(p, Problem::NotLustre { .. })).expect("not lustre");
        assert!(not_lustre.to_string().starts_with("node n0: the folder is on ext4 (10.90.0.2@tcp:/lfs at /lustre), not Managed Lustre"));
    }

    #[test]
    fn garbage_and_hostile_lines_are_counted_never_figures() {
        let log = concat!(
            "storage-check node {\"node\": 1}\n",
            "storage-check node not json\n",
            "storage-check setup {\"nodes\": -1}\n",
            "storage-check error: disk on fire\n",
            "storage-check removed \"check-old\": left by a check that was killed\n",
            "storage-check cannot remove \"check-odd\\nstorage-check error: injected\": left by a check that was killed\n",
            "storage-check removed not-quoted\n",
        );
        let mut hostile = node_line("n0", 1.0, 1.0, "lustre", TIB, 0);
        hostile = hostile.replace("\"end\":", "\"end\": 1e400, \"x\":");
        let report = Report::parse(&format!("{log}{hostile}"));
        assert!(report.nodes.is_empty(), "{:?}", report.nodes);
        assert_eq!(report.unreadable, 5);
        assert_eq!(report.errors, ["disk on fire"], "a folder's name cannot say it is an error");
        assert_eq!(report.removed, ["check-old"]);
        assert_eq!(report.not_removed, ["check-odd\nstorage-check error: injected"]);
        let verdict = report.judge(&Expectation::for_deployment(&codelab(), DEFAULT_MIN_FRACTION));
        assert_eq!(verdict.prediction, None);
        assert!(verdict.problems.contains(&Problem::JobFailed { message: "disk on fire".to_owned() }));
        assert!(verdict.problems.contains(&Problem::Unreadable { lines: 5 }));

        // A node reports once; a second line of it is not a second node.
        let twice = Report::parse(&node_line("n0", 1.0, 1.0, "lustre", TIB, 0).repeat(2));
        assert_eq!((twice.nodes.len(), twice.unreadable), (1, 1));
    }

    #[test]
    fn each_node_writes_its_share_of_the_checkpoint_up_to_the_cap() {
        let d = Deployment::default();
        let plan = Plan::for_deployment(&d, None, "check-1", DEFAULT_MAX_NODE_BYTES, 900);
        assert_eq!(plan.parent, "/lustre/gke-rl/storage-check");
        // 1.02 TB over 8 nodes is 127 GB each: capped at 32 GiB, 4 GiB a rank.
        assert_eq!(plan.node_bytes, 32 << 30);
        let command = plan.entrypoint().join(" ");
        assert_eq!(
            command,
            "python storage_check.py --root /lustre --dir /lustre/gke-rl/storage-check --name check-1 --ranks 8 --rank-bytes 4294967296 --files 2000 --max-fill 0.9 --timeout 900 --save-threads 2"
        );
        let raw_only = Plan { writer: None, ..plan.clone() };
        assert!(raw_only.entrypoint().join(" ").ends_with(" --timeout 900 --raw-only"));
        // v0.6.0's DTensor v2 worker saves asynchronously, one writer thread a rank.
        let dtensor =
            gke_rl::config::from_yaml("ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\njob:\n  recipe: examples/configs/grpo_math_8B.yaml\n");
        let plan = Plan::for_deployment(&dtensor.expect("a config"), None, "check-1", DEFAULT_MAX_NODE_BYTES, 900);
        assert!(plan.entrypoint().join(" ").ends_with(" --save-threads 1 --save-async"), "{:?}", plan.entrypoint());
        let uncapped = Plan::for_deployment(&d, Some("/tmp/x/"), "c", u64::MAX, 60);
        assert_eq!((uncapped.parent.as_str(), uncapped.node_bytes), ("/tmp/x/gke-rl/storage-check", 127_235_856_384));
    }

    #[test]
    fn the_program_says_what_gke_rl_reads() {
        assert!(CHECK_SCRIPT.contains(&format!("error(\"{STOPPED}\")")));
        assert!(CHECK_SCRIPT.contains(&format!("PREFIX = \"{}\"", PREFIX.trim_end())));
        assert!(CHECK_SCRIPT.contains(&format!("--max-fill\", type=float, default={LUSTRE_FULL_FRACTION}")));
    }
}
