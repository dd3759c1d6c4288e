//! The fabric check: a Ray job that runs one all-reduce across every GPU of every GPU node
//! ([`CHECK_SCRIPT`]), and the reading of what it prints ([`Report`]) against what the deployment
//! should reach ([`Expectation`]). The job prints NCCL's own INFO lines, so the same parser
//! reads a raw NCCL log.

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;

use gke_rl::Deployment;
use gke_rl::knowledge::{GIB_NCCL_NET, GpuFabric};

/// The job's Python program, run in the training image (torch, NCCL, Ray).
pub const CHECK_SCRIPT: &str = include_str!("../python/fabric_check.py");
/// Its file name in the job's working dir.
pub const CHECK_SCRIPT_FILE: &str = "fabric_check.py";
/// Message sizes of the sweep: 1 MiB to 1 GiB, as nccl-tests reports them.
pub const DEFAULT_SIZES: [u64; 4] = [1 << 20, 16 << 20, 256 << 20, 1 << 30];
/// The bus bandwidth at the largest size must reach this fraction of the node's line rate.
pub const DEFAULT_MIN_FRACTION: f64 = 0.6;
/// What marks the job's own lines.
const PREFIX: &str = "fabric-check ";

/// The job's command: the script with the sweep's sizes and its own time limit.
pub fn entrypoint(sizes: &[u64], timeout_secs: u64) -> Vec<String> {
    let sizes: Vec<String> = sizes.iter().map(u64::to_string).collect();
    ["python", CHECK_SCRIPT_FILE, "--sizes", &sizes.join(","), "--timeout", &timeout_secs.to_string()].map(str::to_owned).to_vec()
}

/// What the check read from the job's log.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// The nodes, in the order the log names them.
    pub nodes: Vec<NodeReport>,
    /// The sweep, by message size.
    pub samples: Vec<Sample>,
    /// GPUs per node the job found (0: it ran on CPU with gloo).
    pub gpus_per_node: Option<u32>,
    /// Nodes the job found in the cluster, even when it could not use them.
    pub nodes_found: Option<u32>,
    /// Errors the job reported.
    pub errors: Vec<String>,
}

/// One node and the network transports its ranks used.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NodeReport {
    /// Ray's node id (short), or the host name in a raw NCCL log.
    pub name: String,
    /// Its IP address, when the job printed it.
    pub ip: Option<String>,
    /// Its first and last global rank.
    pub ranks: Option<(u32, u32)>,
    /// Each transport and the ranks (by process) that chose it: NCCL's network (`gIB`, `IB`,
    /// `Socket`), or `gloo` for the CPU collective, which always goes over TCP.
    pub transports: Vec<(String, usize)>,
    #[serde(skip)]
    processes: BTreeSet<(String, String)>,
}

impl NodeReport {
    /// Whether any rank of the node went over TCP sockets.
    pub fn used_sockets(&self) -> bool {
        self.transports.iter().any(|(t, _)| is_socket(t))
    }
}

fn is_socket(transport: &str) -> bool {
    transport == "Socket" || transport == "gloo"
}

/// The all-reduce's speed at one message size (nccl-tests' convention: busbw = algbw × 2(n−1)/n).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Message size in bytes.
    pub bytes: u64,
    /// Algorithm bandwidth, GB/s.
    pub algbw: f64,
    /// Bus bandwidth, GB/s: comparable with a link's line rate.
    pub busbw: f64,
}

impl Report {
    /// Reads the fabric-check job's log, or a raw NCCL INFO log. Lines it does not know are
    /// skipped, so Ray's own log lines may be mixed in.
    pub fn parse(log: &str) -> Report {
        let mut report = Report::default();
        for line in log.lines() {
            let line = line.trim_end_matches('\r');
            if let Some(rest) = line.strip_prefix(PREFIX) {
                report.job_line(rest);
            } else if let Some(sample) = sample(line) {
                report.samples.push(sample);
            } else if line.starts_with("size=") {
                // A figure past its type, or not finite: said, never dropped in silence.
                if report.errors.len() < 100 {
                    report.errors.push(format!("a bandwidth line cannot be read: {}", line.chars().take(120).collect::<String>()));
                }
            } else {
                report.nccl_line(None, line);
            }
        }
        report
    }

    fn node(&mut self, name: &str) -> &mut NodeReport {
        if let Some(index) = self.nodes.iter().position(|n| n.name == name) {
            return &mut self.nodes[index];
        }
        self.nodes.push(NodeReport { name: name.to_owned(), ..NodeReport::default() });
        self.nodes.last_mut().expect("just pushed")
    }

    /// `nodes=2 gpus_per_node=8 …`, `node=ID ip=… ranks=0-7 backend=…`, `node=ID: <NCCL line>`,
    /// `error: …`.
    fn job_line(&mut self, rest: &str) {
        if let Some(error) = rest.strip_prefix("error: ") {
            self.errors.push(error.to_owned());
            return;
        }
        if let Some((node, nccl)) = rest.strip_prefix("node=").and_then(|r| r.split_once(": ")) {
            self.nccl_line(Some(node), nccl);
            return;
        }
        let fields: Vec<(&str, &str)> = rest.split_whitespace().filter_map(|f| f.split_once('=')).collect();
        let field = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        if let Some(gpus) = field("gpus_per_node").and_then(|g| g.parse().ok()) {
            self.gpus_per_node = Some(gpus);
        }
        if let Some(nodes) = field("nodes").and_then(|n| n.parse().ok()) {
            self.nodes_found = Some(nodes);
        }
        let Some(name) = field("node") else { return };
        let ip = field("ip").map(str::to_owned);
        let ranks = field("ranks").and_then(|r| r.split_once('-')).and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
        let gloo = field("backend") == Some("gloo");
        let node = self.node(name);
        node.ip = ip;
        node.ranks = ranks;
        if gloo {
            let count = ranks.map_or(1, |(a, b)| (b.saturating_sub(a) + 1) as usize);
            node.transports.push(("gloo".to_owned(), count));
        }
    }

    /// `host:pid:tid [dev] NCCL INFO Using network <name>`: the transport NCCL chose for a rank.
    fn nccl_line(&mut self, node: Option<&str>, line: &str) {
        let Some((origin, network)) = line.split_once(" NCCL INFO Using network ") else { return };
        let mut fields = origin.split(':');
        let (Some(host), Some(pid)) = (fields.next(), fields.next()) else { return };
        let network = network.trim().to_owned();
        let node = self.node(node.unwrap_or(host));
        if !node.processes.insert((host.to_owned(), pid.to_owned())) {
            return;
        }
        match node.transports.iter_mut().find(|(t, _)| *t == network) {
            Some((_, count)) => *count += 1,
            None => node.transports.push((network, 1)),
        }
    }

    /// What keeps the report from meeting `expected`; empty when it passes.
    pub fn problems(&self, expected: &Expectation) -> Vec<Problem> {
        let mut problems: Vec<Problem> = self.errors.iter().map(|message| Problem::JobFailed { message: message.clone() }).collect();
        let found = self.nodes.len().max(self.nodes_found.unwrap_or_default() as usize);
        if found < 2 || expected.nodes.is_some_and(|n| found < n as usize) {
            problems.push(Problem::TooFewNodes { found, expected: expected.nodes });
        }
        let Some(fabric) = expected.fabric else {
            return problems;
        };
        for node in &self.nodes {
            match node.transports.as_slice() {
                [] => problems.push(Problem::NoTransport { node: node.name.clone() }),
                transports => {
                    for (transport, ranks) in transports.iter().filter(|(t, _)| t != GIB_NCCL_NET) {
                        problems.push(Problem::NotGib { node: node.name.clone(), transport: transport.clone(), ranks: *ranks });
                    }
                }
            }
        }
        match self.samples.iter().max_by_key(|s| s.bytes) {
            None => problems.push(Problem::NoSamples),
            Some(largest) => {
                let line_rate = fabric.line_rate_gbytes();
                let floor = line_rate * expected.min_fraction;
                if largest.busbw < floor {
                    problems.push(Problem::Slow { bytes: largest.bytes, busbw: largest.busbw, floor, line_rate });
                }
            }
        }
        problems
    }
}

/// `size=<bytes> bytes time=…us algbw=<x>GB/s busbw=<y>GB/s`.
fn sample(line: &str) -> Option<Sample> {
    let rest = line.strip_prefix("size=")?;
    let value = |key: &str| -> Option<f64> {
        let start = rest.find(key)? + key.len();
        rest[start..].split("GB/s").next()?.trim().parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0)
    };
    Some(Sample { bytes: rest.split_whitespace().next()?.parse().ok()?, algbw: value("algbw=")?, busbw: value("busbw=")? })
}

/// What a deployment's fabric check must show.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expectation {
    /// The GPU nodes the cluster should have.
    pub nodes: Option<u32>,
    /// The fabric every rank must use; `None`: only measure.
    pub fabric: Option<&'static GpuFabric>,
    /// Fraction of the line rate the largest message must reach.
    pub min_fraction: f64,
}

impl Expectation {
    /// The deployment's node count and the fabric it wires ([`gke_rl::Error::NoFabric`] as for
    /// the render). On a cluster gke-rl did not create whose networks the config leaves to
    /// deploy (`fabric.rdma_networks` null), deploy wired RDMA or TCP by what the GPU pool has:
    /// the check says which transport it found and measures it, holding it to no line rate.
    pub fn for_deployment(deployment: &Deployment, min_fraction: f64) -> Result<Self, gke_rl::Error> {
        let fabric = deployment.wired_fabric()?;
        let unknown = deployment.project.existing_cluster && deployment.fabric.rdma_networks.is_none();
        Ok(Expectation { nodes: Some(deployment.topology.node_count.get()), fabric: fabric.filter(|_| !unknown), min_fraction })
    }
}

/// Why a fabric check failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "problem", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Problem {
    /// The job said it could not run.
    JobFailed {
        /// What it said.
        message: String,
    },
    /// Fewer nodes took part than an inter-node check needs, or than the deployment has.
    TooFewNodes {
        /// Nodes in the report.
        found: usize,
        /// Nodes the deployment has.
        expected: Option<u32>,
    },
    /// NCCL named no network for a node's ranks.
    NoTransport {
        /// The node.
        node: String,
    },
    /// Ranks of a node used a transport other than gIB.
    NotGib {
        /// The node.
        node: String,
        /// The transport.
        transport: String,
        /// How many of its ranks.
        ranks: usize,
    },
    /// The sweep printed no bandwidth.
    NoSamples,
    /// The largest message's bus bandwidth is below the floor.
    Slow {
        /// Message size.
        bytes: u64,
        /// Its bus bandwidth, GB/s.
        busbw: f64,
        /// The floor, GB/s.
        floor: f64,
        /// The node's line rate, GB/s.
        line_rate: f64,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::JobFailed { message } => write!(f, "the check job failed: {message}"),
            Problem::TooFewNodes { found, expected: Some(expected) } => {
                write!(f, "{found} of the {expected} GPU nodes took part; an inter-node check needs them all (at least two)")
            }
            Problem::TooFewNodes { found, expected: None } => write!(f, "{found} node took part; an inter-node check needs at least two"),
            Problem::NoTransport { node } => write!(f, "node {node}: NCCL named no network transport (is NCCL_DEBUG=INFO reaching it?)"),
            Problem::NotGib { node, transport, ranks } if is_socket(transport) => {
                write!(f, "node {node}: {ranks} rank(s) used {transport} over TCP sockets, not {GIB_NCCL_NET}")
            }
            Problem::NotGib { node, transport, ranks } => write!(f, "node {node}: {ranks} rank(s) used {transport}, not {GIB_NCCL_NET}"),
            Problem::NoSamples => write!(f, "the job printed no bandwidth"),
            Problem::Slow { bytes, busbw, floor, line_rate } => write!(
                f,
                "bus bandwidth at {} is {busbw:.1} GB/s, below the floor of {floor:.1} GB/s ({:.0}% of the {line_rate:.0} GB/s line rate)",
                size(*bytes),
                floor / line_rate * 100.0
            ),
        }
    }
}

/// `1 GiB`, `16 MiB`, `512 B`.
pub fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map_or_else(|| format!("{bytes} B"), |(unit, name)| format!("{} {name}", bytes / unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 65, class 7: a bandwidth past its type or not finite is no figure, and is said.
    #[test]
    fn a_bandwidth_that_cannot_be_read_is_said() {
        let log = "size=1048576 bytes time=1us algbw=NaNGB/s busbw=NaNGB/s\nsize=99999999999999999999999 bytes time=1us algbw=1GB/s busbw=1GB/s\n";
        let report = Report::parse(log);
        assert!(report.samples.is_empty());
        assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
        assert!(report.errors[0].starts_with("a bandwidth line cannot be read: size=1048576"));
    }

    #[test]
    fn job_lines_name_nodes_ranks_and_transports() {
        let log = "fabric-check nodes=2 gpus_per_node=0 backend=gloo\n\
                   (raylet) a Ray line\n\
                   fabric-check node=aa ip=10.0.0.1 ranks=0-0 backend=gloo\n\
                   fabric-check node=bb ip=10.0.0.2 ranks=1-1 backend=gloo\n\
                   size=1048576 bytes time=1778.2us algbw=0.59GB/s busbw=0.59GB/s\n";
        let report = Report::parse(log);
        assert_eq!(report.gpus_per_node, Some(0));
        assert_eq!(report.nodes.len(), 2);
        assert_eq!(report.nodes[1].ip.as_deref(), Some("10.0.0.2"));
        assert_eq!(report.nodes[1].transports, [("gloo".to_owned(), 1)]);
        assert_eq!(report.samples, [Sample { bytes: 1 << 20, algbw: 0.59, busbw: 0.59 }]);
    }

    #[test]
    fn a_rank_counts_once_and_errors_are_kept() {
        let line = "fabric-check node=aa: h:7:7 [0] NCCL INFO Using network gIB\n";
        let report = Report::parse(&format!("{line}{line}fabric-check error: 1 node; an inter-node collective needs at least two\n"));
        assert_eq!(report.nodes[0].transports, [("gIB".to_owned(), 1)]);
        assert_eq!(report.errors, ["1 node; an inter-node collective needs at least two"]);
        let one = Report::parse("fabric-check nodes=1 gpus_per_node=8 backend=nccl\n");
        let expected = Expectation { nodes: Some(2), fabric: None, min_fraction: 0.6 };
        assert_eq!(one.problems(&expected), [Problem::TooFewNodes { found: 1, expected: Some(2) }]);
        // An existing cluster's wiring is deploy's finding, unless the config pins its networks.
        let mut existing = Deployment::default();
        existing.project.existing_cluster = true;
        assert_eq!(Expectation::for_deployment(&existing, 0.6).unwrap().fabric, None);
        existing.fabric.rdma_networks = Some(vec![gke_rl::model::Name::new("rdma-0").unwrap()]);
        assert!(Expectation::for_deployment(&existing, 0.6).unwrap().fabric.is_some());
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(1 << 30), "1 GiB");
        assert_eq!(size(16 << 20), "16 MiB");
        assert_eq!(size(1000), "1000 B");
    }
}
