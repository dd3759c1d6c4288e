//! What a deployment costs while it exists, per hour and per day, from an offline price table:
//! the GPU nodes by provisioning mode, the Ray head's pool, the system pool, and Lustre.
//!
//! The table is a dated copy of list prices, so every estimate names its source and date; a
//! config's `cost` section replaces any price with the user's own (negotiated rates, a newer
//! list, a region the table lacks). A component with no price is shown as unpriced, never
//! guessed.

use std::fmt;

use crate::knowledge::SYSTEM_POOL;
use crate::model::{Deployment, HeadNodePool, Provisioning, Usd};

/// Where the embedded prices come from, printed with every estimate.
pub const PRICE_SOURCE: &str = "SkyPilot's GCP catalog (github.com/skypilot-org/skypilot-catalog, catalogs/v8/gcp/vms.csv \
     at commit 8427bbff988abdd050a9f51addd314ef31cb4e85), Compute Engine list prices in USD";
/// When the embedded prices were read.
pub const PRICE_DATE: &str = "2026-12-01";

/// Dynamic Workload Scheduler's largest discount on flex-start's vCPUs and GPUs against
/// on-demand: GKE's "About flex-start provisioning mode", section "Flex-start pricing"
/// (cloud.google.com/kubernetes-engine/docs/concepts/dws): "Discounted (up to 53%) for vCPUs,
/// GPUs, and TPUs". No source gives an A4 node's own flex-start price, so its nodes are priced
/// as a range from the largest discount up to on-demand.
pub const FLEX_START_MAX_DISCOUNT: f64 = 0.53;
/// Where [`FLEX_START_MAX_DISCOUNT`] comes from, printed with a flex-start estimate.
pub const FLEX_START_PRICING: &str = "GKE's flex-start pricing (cloud.google.com/kubernetes-engine/docs/concepts/dws)";

/// "up to 53%".
fn flex_start_discount() -> String {
    format!("up to {}%", crate::yaml::decimal::fixed(FLEX_START_MAX_DISCOUNT * 100.0, 0))
}

/// Hours Google Cloud bills as a month, to turn a per-GiB-month storage price into an hourly one.
const HOURS_PER_MONTH: f64 = 730.0;

/// Nodes of gke-a4's system pool that always run: the gke-cluster module's default
/// `system_node_pool_node_count.total_min_nodes` (gke-a4 sets only the machine type).
pub const SYSTEM_POOL_MIN_NODES: u32 = 2;

/// One machine type's list price per node-hour in one region.
struct MachinePrice {
    machine_type: &'static str,
    region: &'static str,
    on_demand: f64,
    spot: f64,
}

const fn price(machine_type: &'static str, region: &'static str, on_demand: f64, spot: f64) -> MachinePrice {
    MachinePrice { machine_type, region, on_demand, spot }
}

/// The embedded table, copied from [`PRICE_SOURCE`]: the regions that offer A4, and the
/// machines of the head and system pools in those regions. The catalog prices an A4 node
/// through its 8 B200 GPUs (its `a4-highgpu-8g` row is 0.0: Compute Engine bills A4 as GPU
/// slices that include the vCPUs and memory), so the A4 rows are the catalog's `B200,8` rows.
const MACHINE_PRICES: &[MachinePrice] = &[
    price("a4-highgpu-8g", "asia-northeast1", 64.44, 39.128),
    price("a4-highgpu-8g", "asia-southeast1", 64.44, 35.5712),
    price("a4-highgpu-8g", "europe-north1", 64.44, 35.8672),
    price("a4-highgpu-8g", "europe-west4", 90.216, 35.8672),
    price("a4-highgpu-8g", "us-central1", 90.216, 32.6064),
    price("a4-highgpu-8g", "us-east1", 90.216, 32.6064),
    price("a4-highgpu-8g", "us-east4", 64.44, 32.6064),
    price("a4-highgpu-8g", "us-south1", 90.216, 32.6064),
    price("a4-highgpu-8g", "us-west2", 64.44, 32.6064),
    price("a4-highgpu-8g", "us-west3", 64.44, 32.6064),
    price("n2-highmem-16", "asia-northeast1", 1.34352, 0.31984),
    price("n2-highmem-16", "asia-southeast1", 1.29291, 0.4617),
    price("n2-highmem-16", "europe-north1", 1.15389, 0.38934),
    price("n2-highmem-16", "europe-west4", 1.15382, 0.40192),
    price("n2-highmem-16", "us-central1", 1.04811, 0.3263),
    price("n2-highmem-16", "us-east1", 1.04811, 0.3263),
    price("n2-highmem-16", "us-east4", 1.18037, 0.23686),
    price("n2-highmem-16", "us-south1", 1.23677, 0.33853),
    price("n2-highmem-16", "us-west2", 1.25891, 0.33894),
    price("n2-highmem-16", "us-west3", 1.25891, 0.47853),
    price("e2-standard-16", "asia-northeast1", 0.68773, 0.31779),
    price("e2-standard-16", "asia-southeast1", 0.66133, 0.30544),
    price("e2-standard-16", "europe-north1", 0.59022, 0.1295),
    price("e2-standard-16", "europe-west4", 0.59018, 0.23392),
    price("e2-standard-16", "us-central1", 0.53609, 0.24752),
    price("e2-standard-16", "us-east1", 0.53609, 0.24752),
    price("e2-standard-16", "us-east4", 0.60377, 0.29066),
    price("e2-standard-16", "us-south1", 0.63259, 0.14656),
    price("e2-standard-16", "us-west2", 0.64392, 0.16525),
    price("e2-standard-16", "us-west3", 0.64392, 0.14829),
];

/// Where one line's price came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriceFrom {
    /// The embedded table.
    Table,
    /// The config's `cost` section.
    Config,
}

/// One component of the bill.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// What bills: "8 × a4-highgpu-8g (Spot)".
    pub component: String,
    /// USD per hour, when priced; the most it bills when its price is a range.
    pub per_hour: Option<f64>,
    /// The least it bills per hour, when its price is a range up to `per_hour` (flex-start).
    pub lowest_per_hour: Option<f64>,
    /// Where the price came from, when priced.
    pub from: Option<PriceFrom>,
    /// Why the price is what it is, or why there is none.
    pub note: Option<String>,
}

/// The estimate: every component, and where the prices come from.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The components, GPU nodes first.
    pub lines: Vec<Line>,
    /// The region priced.
    pub region: String,
    /// The config's source for its own prices, if it gave any.
    pub config_source: Option<String>,
    /// Whether the GPU nodes bill only while a run is there (`job.mode: rayjob`: the pool
    /// autoscales from zero, and each RayJob's cluster goes after its run).
    pub gpu_nodes_only_during_runs: bool,
}

impl Estimate {
    /// The sum of the priced lines, USD per hour (the most, where a price is a range).
    pub fn per_hour(&self) -> f64 {
        self.lines.iter().filter_map(|l| l.per_hour).sum()
    }

    /// The sum of the priced lines at their least, USD per hour.
    pub fn lowest_per_hour(&self) -> f64 {
        self.lines.iter().filter_map(|l| l.lowest_per_hour.or(l.per_hour)).sum()
    }

    /// Whether a line's price is a range.
    fn is_range(&self) -> bool {
        self.lines.iter().any(|l| l.lowest_per_hour.is_some())
    }

    /// The components with no price.
    pub fn unpriced(&self) -> impl Iterator<Item = &Line> {
        self.lines.iter().filter(|l| l.per_hour.is_none())
    }

    /// "about $300.17/hour ($7,204.08/day)", with "at least" when a component is unpriced, and
    /// "$141.08–$300.17" when a price is a range: the one-line form for questions and status.
    pub fn summary(&self) -> String {
        let at_least = if self.unpriced().next().is_some() { "at least " } else { "about " };
        format!("{at_least}{}/hour ({}/day)", self.amount(1.0), self.amount(24.0))
    }

    /// The total over `hours`: one amount, or the range.
    fn amount(&self, hours: f64) -> String {
        let most = dollars(self.per_hour() * hours);
        if self.is_range() { format!("{}–{most}", dollars(self.lowest_per_hour() * hours)) } else { most }
    }

    /// The estimate without the GPU nodes (the first line).
    fn without_gpu_nodes(&self) -> Estimate {
        Estimate { lines: self.lines[1..].to_vec(), ..self.clone() }
    }
}

/// `$7,204.08`.
pub fn dollars(amount: f64) -> String {
    let cents = (amount * 100.0).round() as u64;
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("${grouped}.{:02}", cents % 100)
}

impl fmt::Display for Estimate {
    /// The cost block of `cost`, `deploy --dry-run` and the web page.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.lines.iter().map(|l| l.component.chars().count()).max().unwrap_or(0);
        let width = if self.gpu_nodes_only_during_runs { width.max(BETWEEN_RUNS.len() + ", at least".len()) } else { width };
        writeln!(f, "cost in {} while the deployment exists:", self.region)?;
        for line in &self.lines {
            let range = |most: f64, hours: f64| match line.lowest_per_hour {
                Some(least) => format!("{}–{}", dollars(least * hours), dollars(most * hours)),
                None => dollars(most * hours),
            };
            let money = match line.per_hour {
                Some(hour) => format!("{:>12}/hour {:>13}/day", range(hour, 1.0), range(hour, 24.0)),
                None => format!("{:>12}", "unpriced"),
            };
            let config = if line.from == Some(PriceFrom::Config) { " (config price)" } else { "" };
            let note = line.note.as_deref().map(|n| format!("  {n}")).unwrap_or_default();
            writeln!(f, "  {:<width$}  {money}{config}{note}", line.component)?;
        }
        let label = if self.unpriced().next().is_some() { "total, at least" } else { "total" };
        writeln!(f, "  {label:<width$}  {:>12}/hour {:>13}/day", self.amount(1.0), self.amount(24.0))?;
        if self.gpu_nodes_only_during_runs {
            let idle = self.without_gpu_nodes();
            let label = if idle.unpriced().next().is_some() { format!("{BETWEEN_RUNS}, at least") } else { BETWEEN_RUNS.to_owned() };
            writeln!(f, "  {label:<width$}  {:>12}/hour {:>13}/day", idle.amount(1.0), idle.amount(24.0))?;
        }
        write!(f, "prices: {PRICE_SOURCE}, read {PRICE_DATE}")?;
        if self.is_range() {
            write!(f, "; flex-start: {} off on-demand, {FLEX_START_PRICING}", flex_start_discount())?;
        }
        if let Some(source) = &self.config_source {
            write!(f, "; config prices: {source}")?;
        }
        Ok(())
    }
}

fn table_price(machine_type: &str, region: &str) -> Option<&'static MachinePrice> {
    MACHINE_PRICES.iter().find(|p| p.machine_type == machine_type && p.region == region)
}

/// A node pool's line: `count` nodes at the config's price, else the table's (less up to
/// `discount` of it, for a range), else unpriced.
fn node_line(
    component: String,
    configured: Option<Usd>,
    listed: Option<f64>,
    discount: Option<f64>,
    count: u32,
    note: Option<String>,
) -> Line {
    let unit = configured.map(|p| (p.dollars(), PriceFrom::Config)).or(listed.map(|p| (p, PriceFrom::Table)));
    let missing = "no price in the table for this machine and region: set `cost` prices in the config".to_owned();
    let per_hour = unit.map(|(p, _)| p * f64::from(count));
    Line {
        component,
        per_hour,
        // A config price is the user's own: never a range.
        lowest_per_hour: match (unit, discount) {
            (Some((_, PriceFrom::Table)), Some(discount)) => per_hour.map(|p| p * (1.0 - discount)),
            _ => None,
        },
        from: unit.map(|(_, from)| from),
        // The mode's note explains a table price; a config price is the user's own.
        note: match unit {
            Some((_, PriceFrom::Table)) => note,
            Some((_, PriceFrom::Config)) => None,
            None => Some(missing),
        },
    }
}

/// What a suspended RayCluster of `d` costs once GKE has acted on it, and whether its GPU
/// nodes went: a pool that autoscales from zero gives them back; a static one keeps them.
pub fn suspended(d: &Deployment) -> (Estimate, bool) {
    let running = estimate(d);
    if d.gpu_pool_scales_to_zero() { (running.without_gpu_nodes(), true) } else { (running, false) }
}

/// What `d` costs per hour while it exists, at list prices for its region.
pub fn estimate(d: &Deployment) -> Estimate {
    let region = d.project.region.as_str();
    let prices = &d.cost;
    let topology = &d.topology;
    let gpu = table_price(topology.machine_type.as_str(), region);
    let (listed, discount, note) = match &topology.provisioning {
        Provisioning::Spot => (gpu.map(|p| p.spot), None, Some("Spot price; it changes with demand".to_owned())),
        Provisioning::OnDemand => (gpu.map(|p| p.on_demand), None, None),
        Provisioning::Reservation(_) => {
            (gpu.map(|p| p.on_demand), None, Some("on-demand price: a reservation bills at it unless a commitment applies".to_owned()))
        }
        Provisioning::FlexStart => (
            gpu.map(|p| p.on_demand),
            Some(FLEX_START_MAX_DISCOUNT),
            Some(format!("flex-start: {} below on-demand; nodes bill only while GKE holds them", flex_start_discount())),
        ),
    };
    let mut lines = vec![node_line(
        format!("{} × {} ({})", topology.node_count, topology.machine_type, topology.provisioning.describe()),
        prices.gpu_node_per_hour,
        listed,
        discount,
        topology.node_count.get(),
        note,
    )];
    // On a cluster gke-rl did not create, the head's node is one of the cluster's CPU pool's.
    let existing = d.project.existing_cluster;
    if d.ray.head.node_pool == HeadNodePool::Dedicated || (existing && d.ray.head.node_pool == HeadNodePool::System) {
        let machine = d.ray.head.machine_type.as_str();
        let pool = d.ray.head.pool.as_ref().filter(|_| existing).map_or_else(String::new, |p| format!(", pool {p}"));
        lines.push(node_line(
            format!("1 × {machine} (Ray head{pool}, on-demand)"),
            prices.head_node_per_hour,
            table_price(machine, region).map(|p| p.on_demand),
            None,
            1,
            None,
        ));
    }
    let (_, system_machine) = SYSTEM_POOL;
    // An existing cluster's other pools are its own business.
    lines.extend((!existing).then(|| {
        node_line(
            format!("{SYSTEM_POOL_MIN_NODES} × {system_machine} (system pool, on-demand)"),
            prices.system_node_per_hour,
            table_price(system_machine, region).map(|p| p.on_demand),
            None,
            SYSTEM_POOL_MIN_NODES,
            Some("its minimum; it autoscales to 10".to_owned()),
        )
    }));
    let capacity = d.lustre.capacity_gib.get();
    lines.push(Line {
        component: format!("Lustre {capacity} GiB at {} MB/s per TiB", d.lustre.throughput_mbps_per_tib),
        per_hour: prices.lustre_per_gib_month.map(|p| p.dollars() * f64::from(capacity) / HOURS_PER_MONTH),
        lowest_per_hour: None,
        from: prices.lustre_per_gib_month.map(|_| PriceFrom::Config),
        note: prices
            .lustre_per_gib_month
            .is_none()
            .then(|| "no citable list price in the table: set cost.lustre_per_gib_month (USD per GiB-month) in the config".to_owned()),
    });
    // A reservation bills whether or not its nodes run.
    let gpu_nodes_only_during_runs =
        d.job.mode == crate::model::JobMode::Rayjob && !matches!(topology.provisioning, Provisioning::Reservation(_));
    if gpu_nodes_only_during_runs {
        let gpu = &mut lines[0];
        gpu.note = Some(gpu.note.take().map_or_else(|| ONLY_DURING_RUNS.to_owned(), |note| format!("{note}; {ONLY_DURING_RUNS}")));
    }
    Estimate { lines, region: region.to_owned(), config_source: prices.source.clone(), gpu_nodes_only_during_runs }
}

/// The line of what `rayjob` mode costs while no run is there.
const BETWEEN_RUNS: &str = "between runs (no RayJob, no GPU node)";

/// The GPU line's note in `rayjob` mode.
const ONLY_DURING_RUNS: &str = "only while a RayJob runs: the pool autoscales from zero";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_a_price_of_a_machine_gke_rl_uses() {
        for row in MACHINE_PRICES {
            assert!(row.on_demand > 0.0 && row.spot > 0.0 && row.spot < row.on_demand, "{} {}", row.machine_type, row.region);
        }
        let a4_regions: Vec<_> = MACHINE_PRICES.iter().filter(|p| p.machine_type == "a4-highgpu-8g").map(|p| p.region).collect();
        for pool in ["n2-highmem-16", "e2-standard-16"] {
            for region in &a4_regions {
                assert!(table_price(pool, region).is_some(), "{pool} has no price in {region}, where A4 runs");
            }
        }
    }

    #[test]
    fn the_default_costs_its_spot_nodes_head_and_system_pool_and_leaves_lustre_unpriced() {
        let e = estimate(&Deployment::default());
        assert_eq!(e.region, "us-east1");
        let hour: Vec<_> = e.lines.iter().map(|l| l.per_hour).collect();
        assert_eq!(hour[0], Some(8.0 * 32.6064));
        assert_eq!(hour[1], Some(1.04811));
        assert_eq!(hour[2], Some(2.0 * 0.53609));
        assert_eq!(hour[3], None);
        assert!(e.summary().starts_with("at least $262.97/hour"), "{}", e.summary());
    }

    #[test]
    fn config_prices_replace_the_table_and_price_lustre() {
        let mut d = Deployment::default();
        d.project.region = crate::model::Region::new("me-west1").unwrap();
        assert!(estimate(&d).lines[0].note.as_deref().unwrap().contains("no price in the table"));
        d.cost.gpu_node_per_hour = Usd::new(20.0);
        d.cost.lustre_per_gib_month = Usd::new(0.73);
        d.cost.source = Some("our contract".to_owned());
        let e = estimate(&d);
        assert_eq!((e.lines[0].per_hour, e.lines[0].from), (Some(160.0), Some(PriceFrom::Config)));
        assert!((e.lines[3].per_hour.unwrap() - 9.0).abs() < 1e-9, "9000 GiB × $0.73 / 730 h");
        assert!(e.to_string().ends_with("; config prices: our contract"));
        let (kept, nodes_go) = suspended(&d);
        assert_eq!((kept, nodes_go), (e, false), "a static Spot pool keeps its nodes while suspended");
        d.job.when_done = crate::model::WhenDone::Suspend;
        let (idle, nodes_go) = suspended(&d);
        assert!(nodes_go && idle.lines.len() == 3 && !idle.lines[0].component.contains("a4-highgpu-8g"));
    }

    #[test]
    fn flex_start_is_a_range_up_to_on_demand_unless_the_config_prices_it() {
        let mut d = Deployment::default();
        d.topology.provisioning = Provisioning::FlexStart;
        let e = estimate(&d);
        let on_demand = 8.0 * 90.216;
        assert_eq!(e.lines[0].per_hour, Some(on_demand));
        assert!((e.lines[0].lowest_per_hour.unwrap() - on_demand * 0.47).abs() < 1e-9);
        assert!((e.per_hour() - e.lowest_per_hour() - on_demand * 0.53).abs() < 1e-9, "only the GPU nodes are discounted");
        assert!(e.summary().starts_with("at least $341.33–$723.85/hour"), "{}", e.summary());
        assert!(e.to_string().contains("GKE's flex-start pricing (cloud.google.com/kubernetes-engine/docs/concepts/dws)"), "{e}");
        d.cost.gpu_node_per_hour = Usd::new(50.0);
        let e = estimate(&d);
        assert_eq!((e.lines[0].per_hour, e.lines[0].lowest_per_hour), (Some(400.0), None), "the config's own price");
        assert!(!e.summary().contains('–') && !e.to_string().contains("flex-start pricing"), "{e}");
    }

    #[test]
    fn dollars_are_grouped_and_rounded_to_cents() {
        assert_eq!(dollars(7204.084), "$7,204.08");
        assert_eq!(dollars(0.005), "$0.01");
        assert_eq!(dollars(1_234_567.0), "$1,234,567.00");
        assert_eq!(Usd::new(-1.0), None);
        assert_eq!(Usd::new(f64::NAN), None);
    }
}
