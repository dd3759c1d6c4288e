//! A cluster and a Lustre instance gke-rl did not create, as gcloud describes them, and how a
//! deployment fits them: which pool holds the GPUs and which the head, which add-ons are off,
//! which networks the workers attach, and every disagreement with the config, each with its fix.
//!
//! The JSON is gcloud's `--format=json` of the v1 APIs' resources: `Cluster` of
//! <https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters>
//! and `Instance` of <https://cloud.google.com/managed-lustre/docs/reference/rest/v1/projects.locations.instances>.
//! gcloud prints int64 fields (`capacityGib`, `acceleratorCount`) as strings, as proto3's JSON
//! mapping does; both forms are read.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::knowledge::{self, ACCELERATOR_LABEL, SPOT_LABEL};
use crate::model::{Deployment, FabricMode, HeadNodePool, Name, Provisioning};

/// A GKE cluster as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Its name.
    pub name: String,
    /// Its location (a region, or a zone for a zonal cluster).
    pub location: String,
    /// The control plane's version.
    pub version: String,
    /// Its VPC, `projects/P/global/networks/N` (P is a Shared VPC's host project).
    pub network: String,
    /// Its project, from its `selfLink`.
    pub project: String,
    /// Whether the RayOperator add-on is on.
    pub ray_operator: bool,
    /// Whether the Lustre CSI driver add-on is on.
    pub lustre_csi: bool,
    /// Whether the nodes reach Lustre on the legacy port 6988 (`enableLegacyLustrePort`).
    pub legacy_lustre_port: bool,
    /// Its node pools.
    pub pools: Vec<Pool>,
}

/// A node pool as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// Its name (the nodes' `cloud.google.com/gke-nodepool` label).
    pub name: String,
    /// Compute Engine machine type.
    pub machine_type: String,
    /// GPUs per node.
    pub gpus: u32,
    /// How many nodes it may have: a fixed size, or an autoscaler's bounds.
    pub size: PoolSize,
    /// How many Nodes the API server lists in it now, once read ([`Cluster::count_nodes`]).
    pub nodes: Option<u32>,
    /// How its nodes are obtained.
    pub provisioning: PoolProvisioning,
    /// Kubernetes labels of its nodes.
    pub labels: BTreeMap<String, String>,
    /// Taints of its nodes, as `key=value:EFFECT`.
    pub taints: Vec<String>,
    /// The subnetworks of its additional node networks, `(network, subnetwork)`.
    pub additional_networks: Vec<(String, String)>,
}

/// How many nodes a pool may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolSize {
    /// A fixed number of nodes (per zone, times its zones).
    Fixed(u32),
    /// The autoscaler's bounds, over all zones.
    Autoscaled {
        /// The fewest.
        min: u32,
        /// The most.
        max: u32,
    },
}

impl PoolSize {
    /// The most nodes it can have.
    pub fn most(self) -> u32 {
        match self {
            PoolSize::Fixed(n) => n,
            PoolSize::Autoscaled { max, .. } => max,
        }
    }
}

impl fmt::Display for PoolSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolSize::Fixed(n) => write!(f, "{n} nodes"),
            PoolSize::Autoscaled { min, max } => write!(f, "{min} to {max} nodes (autoscaled)"),
        }
    }
}

/// How a pool's nodes are obtained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolProvisioning {
    /// Spot (or the older preemptible) VMs.
    Spot,
    /// On-demand VMs from this reservation.
    Reservation(String),
    /// Flex-start VMs.
    FlexStart,
    /// On-demand VMs.
    OnDemand,
}

impl PoolProvisioning {
    /// Whether a config's provisioning is this pool's.
    fn matches(&self, wanted: &Provisioning) -> bool {
        match (self, wanted) {
            (PoolProvisioning::Spot, Provisioning::Spot)
            | (PoolProvisioning::FlexStart, Provisioning::FlexStart)
            | (PoolProvisioning::OnDemand, Provisioning::OnDemand) => true,
            // `name`, or `name/reservationBlocks/block` of it.
            (PoolProvisioning::Reservation(has), Provisioning::Reservation(wants)) => {
                let short = |r: &str| r.rsplit_once("/reservations/").map_or(r, |(_, n)| n).split('/').next().unwrap_or(r).to_owned();
                short(has) == short(wants.as_str())
            }
            _ => false,
        }
    }

    /// The config's `topology.provisioning` that says this.
    pub fn config(&self) -> String {
        match self {
            PoolProvisioning::Spot => "spot".to_owned(),
            PoolProvisioning::Reservation(name) => format!("{{reservation: {name}}}"),
            PoolProvisioning::FlexStart => "flex-start".to_owned(),
            PoolProvisioning::OnDemand => "on-demand".to_owned(),
        }
    }
}

/// A Managed Lustre instance as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// `projects/P/locations/ZONE/instances/ID`.
    pub name: String,
    /// Capacity in GiB.
    pub capacity_gib: std::num::NonZeroU32,
    /// Throughput tier in MB/s per TiB: `perUnitStorageThroughput`, or the Dynamic tier's
    /// aggregate figure ([`knowledge::lustre_dynamic_tier`]) where the instance has
    /// `dynamicTierOptions` instead.
    pub throughput_mbps_per_tib: std::num::NonZeroU32,
    /// Its VPC, `projects/P/global/networks/N`.
    pub network: String,
    /// The file system name clients mount.
    pub filesystem: String,
    /// The address clients mount from (the mount point's `IP@tcp`).
    pub ip: String,
    /// `ACTIVE`, `CREATING`…
    pub state: String,
    /// Whether it serves GKE on the legacy port 6988 (`gkeSupportEnabled`).
    pub gke_support: bool,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

/// The label gke-rl gives an instance it creates: the deployment's name. An instance of that
/// name that lacks it is someone else's.
pub const INSTANCE_LABEL: &str = "gke-rl-deployment";

/// gcloud's answer could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read gcloud's description of the {what}: {reason}")]
pub struct Unreadable {
    what: &'static str,
    reason: String,
}

/// A count as the JSON holds it: a number, or an int64 as a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Count {
    Number(u64),
    Text(String),
}

impl Count {
    fn get(&self) -> Option<u32> {
        match self {
            Count::Number(n) => u32::try_from(*n).ok(),
            Count::Text(t) => t.parse().ok(),
        }
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Count::Number(n) => write!(f, "{n}"),
            Count::Text(t) => write!(f, "{:?}", t.chars().take(40).collect::<String>()),
        }
    }
}

/// The count `field` holds: 0 where it is absent (proto3's JSON leaves zeros out), an error
/// where it holds what gke-rl cannot read (text, a number past `u32`), never a stand-in.
fn count(value: Option<&Count>, field: &str) -> Result<u32, Unreadable> {
    match value {
        None => Ok(0),
        Some(count) => count.get().ok_or_else(|| Unreadable {
            what: "cluster",
            reason: format!("{field} {count} is not a count gke-rl can read (0 to {})", u32::MAX),
        }),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClusterJson {
    name: String,
    location: String,
    #[serde(default)]
    current_master_version: String,
    #[serde(default)]
    network_config: NetworkConfigJson,
    #[serde(default)]
    addons_config: AddonsJson,
    #[serde(default)]
    node_pools: Vec<PoolJson>,
    #[serde(default)]
    self_link: String,
}

#[derive(Default, Deserialize)]
struct NetworkConfigJson {
    #[serde(default)]
    network: String,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddonsJson {
    #[serde(default)]
    ray_operator_config: Enabled,
    #[serde(default)]
    lustre_csi_driver_config: LustreCsiJson,
}

#[derive(Default, Deserialize)]
struct Enabled {
    #[serde(default)]
    enabled: bool,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LustreCsiJson {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    enable_legacy_lustre_port: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PoolJson {
    name: String,
    #[serde(default)]
    config: NodeConfigJson,
    initial_node_count: Option<Count>,
    #[serde(default)]
    locations: Vec<String>,
    #[serde(default)]
    autoscaling: AutoscalingJson,
    #[serde(default)]
    network_config: PoolNetworkJson,
    #[serde(default)]
    queued_provisioning: Enabled,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeConfigJson {
    #[serde(default)]
    machine_type: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    taints: Vec<TaintJson>,
    #[serde(default)]
    spot: bool,
    #[serde(default)]
    preemptible: bool,
    #[serde(default)]
    flex_start: bool,
    #[serde(default)]
    accelerators: Vec<AcceleratorJson>,
    reservation_affinity: Option<ReservationJson>,
}

#[derive(Deserialize)]
struct TaintJson {
    key: String,
    #[serde(default)]
    value: String,
    #[serde(default)]
    effect: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AcceleratorJson {
    accelerator_count: Option<Count>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReservationJson {
    #[serde(default)]
    consume_reservation_type: String,
    #[serde(default)]
    values: Vec<String>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AutoscalingJson {
    #[serde(default)]
    enabled: bool,
    min_node_count: Option<Count>,
    max_node_count: Option<Count>,
    total_min_node_count: Option<Count>,
    total_max_node_count: Option<Count>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PoolNetworkJson {
    #[serde(default)]
    additional_node_network_configs: Vec<AdditionalNetworkJson>,
}

#[derive(Deserialize)]
struct AdditionalNetworkJson {
    #[serde(default)]
    network: String,
    #[serde(default)]
    subnetwork: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InstanceJson {
    name: String,
    capacity_gib: Count,
    per_unit_storage_throughput: Option<Count>,
    /// Present on the Dynamic tier (`DynamicTierOptions`), which has no throughput setting.
    dynamic_tier_options: Option<serde_json::Value>,
    #[serde(default)]
    network: String,
    #[serde(default)]
    filesystem: String,
    #[serde(default)]
    mount_point: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    gke_support_enabled: bool,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

impl Cluster {
    /// Reads `gcloud container clusters describe --format=json`.
    pub fn from_json(json: &str) -> Result<Cluster, Unreadable> {
        let c: ClusterJson = serde_json::from_str(json).map_err(|e| Unreadable { what: "cluster", reason: e.to_string() })?;
        let pools = c.node_pools.into_iter().map(Pool::from_json).collect::<Result<_, _>>()?;
        Ok(Cluster {
            name: c.name,
            location: c.location,
            version: c.current_master_version,
            network: c.network_config.network,
            project: project_of(&c.self_link).unwrap_or_default().to_owned(),
            ray_operator: c.addons_config.ray_operator_config.enabled,
            lustre_csi: c.addons_config.lustre_csi_driver_config.enabled,
            legacy_lustre_port: c.addons_config.lustre_csi_driver_config.enable_legacy_lustre_port,
            pools,
        })
    }

    /// The VPC's short name.
    pub fn network_name(&self) -> &str {
        self.network.rsplit('/').next().unwrap_or(&self.network)
    }

    /// The VPC's project: a Shared VPC's host project, else the cluster's.
    pub fn network_project(&self) -> &str {
        project_of(&self.network).unwrap_or(&self.project)
    }

    /// `--location L --project P`, for the commands the fixes name.
    fn at(&self) -> String {
        format!("--location {} --project {}", self.location, self.project)
    }

    /// Takes each pool's Nodes as the API server lists them now, by pool name: a pool without
    /// any listed has none.
    pub fn count_nodes(&mut self, listed: &BTreeMap<String, u32>) {
        for pool in &mut self.pools {
            pool.nodes = Some(listed.get(&pool.name).copied().unwrap_or(0));
        }
    }

    /// The add-ons gke-rl needs that are off, by gcloud's `--update-addons` names.
    pub fn addons_off(&self) -> Vec<&'static str> {
        let mut off = Vec::new();
        if !self.ray_operator {
            off.push(RAY_OPERATOR);
        }
        if !self.lustre_csi {
            off.push(LUSTRE_CSI_DRIVER);
        }
        off
    }
}

/// The taint GKE puts on GPU nodes, which the Ray workers tolerate (`nvidia.com/gpu=present`).
const GPU_TAINT_KEY: &str = "nvidia.com/gpu=";

/// gcloud's `--update-addons` name of GKE's KubeRay operator.
pub const RAY_OPERATOR: &str = "RayOperator";
/// gcloud's `--update-addons` name of the Lustre CSI driver.
pub const LUSTRE_CSI_DRIVER: &str = "LustreCsiDriver";

impl Pool {
    fn from_json(p: PoolJson) -> Result<Pool, Unreadable> {
        let config = p.config;
        let zones = u32::try_from(p.locations.len().max(1)).unwrap_or(u32::MAX);
        let size = if p.autoscaling.enabled {
            let a = &p.autoscaling;
            // Total bounds count every zone; per-zone bounds count each.
            match count(a.total_max_node_count.as_ref(), "totalMaxNodeCount")? {
                0 => PoolSize::Autoscaled {
                    min: count(a.min_node_count.as_ref(), "minNodeCount")?.saturating_mul(zones),
                    max: count(a.max_node_count.as_ref(), "maxNodeCount")?.saturating_mul(zones),
                },
                max => PoolSize::Autoscaled { min: count(a.total_min_node_count.as_ref(), "totalMinNodeCount")?, max },
            }
        } else {
            PoolSize::Fixed(count(p.initial_node_count.as_ref(), "initialNodeCount")?.saturating_mul(zones))
        };
        let reservation = config
            .reservation_affinity
            .as_ref()
            .filter(|r| r.consume_reservation_type == "SPECIFIC_RESERVATION")
            .and_then(|r| r.values.first().cloned());
        let provisioning = if config.spot || config.preemptible {
            PoolProvisioning::Spot
        } else if config.flex_start || p.queued_provisioning.enabled {
            PoolProvisioning::FlexStart
        } else if let Some(reservation) = reservation {
            PoolProvisioning::Reservation(reservation)
        } else {
            PoolProvisioning::OnDemand
        };
        let gpus =
            config.accelerators.iter().map(|a| count(a.accelerator_count.as_ref(), "acceleratorCount")).collect::<Result<Vec<u32>, _>>();
        Ok(Pool {
            name: p.name,
            gpus: gpus?.into_iter().fold(0, u32::saturating_add),
            machine_type: config.machine_type,
            size,
            nodes: None,
            provisioning,
            taints: config.taints.iter().map(|t| format!("{}={}:{}", t.key, t.value, t.effect)).collect(),
            labels: config.labels,
            additional_networks: p.network_config.additional_node_network_configs.into_iter().map(|n| (n.network, n.subnetwork)).collect(),
        })
    }

    /// The most nodes it can have. A fixed pool resized up since it was made has the Nodes
    /// listed: gcloud's `initialNodeCount` is the size it was made with, which a resize leaves.
    pub fn capacity(&self) -> u32 {
        match (self.size, self.nodes) {
            (PoolSize::Fixed(made), Some(listed)) => made.max(listed),
            (size, _) => size.most(),
        }
    }

    /// A fixed pool's Nodes listed and the size it was made with, when fewer are listed: Spot
    /// nodes preempted and not back yet, nodes being repaired, or a resize down (which only the
    /// managed instance groups' target sizes would tell apart).
    pub fn short(&self) -> Option<(u32, u32)> {
        match (self.size, self.nodes) {
            (PoolSize::Fixed(made), Some(listed)) if listed < made => Some((listed, made)),
            _ => None,
        }
    }

    /// Its size as [`Pool::capacity`] counts it, in words.
    fn size_now(&self) -> String {
        match (self.size, self.nodes) {
            (PoolSize::Fixed(made), Some(listed)) if listed > made => format!("{listed} nodes now (made with {made})"),
            (size, _) => size.to_string(),
        }
    }

    /// Whether a pod that tolerates nothing may run on its nodes.
    fn untainted(&self) -> bool {
        self.taints.iter().all(|t| !t.ends_with(":NO_SCHEDULE") && !t.ends_with(":NO_EXECUTE"))
    }

    /// The node labels GKE adds to these: a Spot node's, a GPU node's.
    fn holds_gpus(&self) -> bool {
        self.gpus > 0 || self.labels.contains_key(ACCELERATOR_LABEL)
    }
}

impl Instance {
    /// Whether gke-rl created it for `d`: it carries [`INSTANCE_LABEL`] with the deployment's
    /// name, as `create_lustre` labels it.
    pub fn made_by(&self, d: &Deployment) -> bool {
        self.labels.get(INSTANCE_LABEL).is_some_and(|v| v == d.project.cluster_name.as_str())
    }

    /// Reads `gcloud lustre instances describe --format=json`.
    pub fn from_json(json: &str) -> Result<Instance, Unreadable> {
        let unreadable = |reason: String| Unreadable { what: "Lustre instance", reason };
        let i: InstanceJson = serde_json::from_str(json).map_err(|e| unreadable(e.to_string()))?;
        // The mount point is `IP@tcp:/FILESYSTEM`.
        let ip = i.mount_point.split('@').next().unwrap_or_default().to_owned();
        // What cannot be read is an error, never the config's figure in its place.
        let capacity_gib = i.capacity_gib.get().and_then(std::num::NonZeroU32::new).ok_or_else(|| {
            unreadable(format!("capacityGib {} is not a capacity gke-rl can read (whole GiB, from 1 to {})", i.capacity_gib, u32::MAX))
        })?;
        let throughput_mbps_per_tib = match (&i.per_unit_storage_throughput, &i.dynamic_tier_options) {
            (Some(count), _) if count.get() != Some(0) => count.get().and_then(std::num::NonZeroU32::new).ok_or_else(|| {
                unreadable(format!("perUnitStorageThroughput {count} is not a throughput tier gke-rl can read (MB/s per TiB)"))
            })?,
            // The Dynamic tier has no throughput setting (unset, or 0): its figure is the table's.
            (_, Some(_)) => std::num::NonZeroU32::new(knowledge::lustre_dynamic_tier().throughput).expect("a figure"),
            (_, None) => {
                return Err(unreadable(
                    "it states neither perUnitStorageThroughput nor dynamicTierOptions, so its performance tier cannot be told".to_owned(),
                ));
            }
        };
        Ok(Instance {
            name: i.name,
            capacity_gib,
            throughput_mbps_per_tib,
            network: i.network,
            filesystem: i.filesystem,
            ip,
            state: i.state,
            gke_support: i.gke_support_enabled,
            labels: i.labels,
        })
    }
}

/// How a deployment fits an existing cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fit {
    /// The pool of the GPU workers.
    pub gpu_pool: String,
    /// The pool of the head and its machine type; `None` when it shares a GPU node
    /// (`ray.head.node_pool: gpu`).
    pub head_pool: Option<(String, String)>,
    /// The subnetworks of the GPU pool's additional networks (their GKE networks are looked up
    /// in the cluster: [`rdma_networks`]).
    pub gpu_subnetworks: Vec<String>,
    /// The add-ons gke-rl turns on.
    pub addons_off: Vec<&'static str>,
}

/// A disagreement between the config and what exists, with its fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misfit {
    /// What disagrees.
    pub what: String,
    /// How to make them agree.
    pub fix: String,
}

impl fmt::Display for Misfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; fix: {}", self.what, self.fix)
    }
}

/// How `d` fits `cluster`, or every disagreement.
pub fn fit(d: &Deployment, cluster: &Cluster) -> Result<Fit, Vec<Misfit>> {
    let mut misfits = Vec::new();
    let machine = d.topology.machine_type.as_str();
    let mut gpu_pools: Vec<&Pool> = cluster.pools.iter().filter(|p| p.machine_type == machine).collect();
    // A pool the config names is the one, or none.
    let named = d.topology.pool.as_ref().map(Name::as_str);
    if let Some(named) = named.filter(|n| !gpu_pools.is_empty() && gpu_pools.iter().all(|p| p.name != *n)) {
        let of_machine: Vec<String> = gpu_pools.iter().map(|p| p.name.clone()).collect();
        misfits.push(Misfit {
            what: format!("cluster {} has no {machine} node pool {named} (topology.pool)", cluster.name),
            fix: format!("set topology.pool to one of {}, or remove it to let deploy pick", of_machine.join(", ")),
        });
    }
    gpu_pools.retain(|p| named.is_none_or(|n| p.name == n));
    let gpu_pool = match gpu_pools.as_slice() {
        [] if named.is_some() && !misfits.is_empty() => None,
        [] => {
            let has: Vec<String> = cluster.pools.iter().map(|p| format!("{} ({})", p.name, p.machine_type)).collect();
            let gpus: Vec<&Pool> = cluster.pools.iter().filter(|p| p.holds_gpus()).collect();
            misfits.push(Misfit {
                what: format!("cluster {} has no {machine} node pool (it has {})", cluster.name, list_or_none(&has)),
                fix: match gpus.first() {
                    Some(pool) => format!("set topology.machine_type: {} (pool {}), or add a {machine} pool", pool.machine_type, pool.name),
                    None => format!(
                        "add a {machine} node pool to the cluster (xpk cluster create --device-type, or gcloud container node-pools create)"
                    ),
                },
            });
            None
        }
        // Of several, one provisioned as the config says, then the one with the most nodes.
        pools => pools.iter().max_by_key(|p| (p.provisioning.matches(&d.topology.provisioning), p.capacity())).copied(),
    };
    if let Some(pool) = gpu_pool {
        let wanted = d.topology.node_count.get();
        if pool.capacity() < wanted {
            misfits.push(Misfit {
                what: format!("node pool {} has {}, the config wants {wanted}", pool.name, pool.size_now()),
                fix: format!("set topology.node_count: {}, or resize the pool", pool.capacity()),
            });
        }
        if pool.gpus > 0 && pool.gpus != d.topology.gpus_per_node.get() {
            misfits.push(Misfit {
                what: format!("node pool {} has {} GPUs a node, the config says {}", pool.name, pool.gpus, d.topology.gpus_per_node),
                fix: format!("set topology.gpus_per_node: {}", pool.gpus),
            });
        }
        // The workers tolerate GKE's GPU taint, NoSchedule; any other keeps them off the pool.
        let foreign: Vec<&str> = pool
            .taints
            .iter()
            .map(String::as_str)
            .filter(|t| !(t.starts_with(GPU_TAINT_KEY) && t.ends_with(":NO_SCHEDULE")))
            .filter(|t| t.ends_with(":NO_SCHEDULE") || t.ends_with(":NO_EXECUTE"))
            .collect();
        if !foreign.is_empty() {
            misfits.push(Misfit {
                what: format!("node pool {} has taints the Ray workers do not tolerate: {}", pool.name, foreign.join(", ")),
                fix: format!(
                    "keep only GKE's GPU taint (gcloud container node-pools update {} --cluster {} {} --node-taints=nvidia.com/gpu=present:NoSchedule)",
                    pool.name,
                    cluster.name,
                    cluster.at()
                ),
            });
        }
        if !pool.provisioning.matches(&d.topology.provisioning) {
            misfits.push(Misfit {
                what: format!(
                    "node pool {} is {}, the config says {}",
                    pool.name,
                    describe(&pool.provisioning),
                    d.topology.provisioning.describe()
                ),
                fix: format!("set topology.provisioning: {}", pool.provisioning.config()),
            });
        }
    }
    let head_pool = match d.ray.head.node_pool {
        HeadNodePool::Gpu => None,
        HeadNodePool::Dedicated | HeadNodePool::System => match head_pool(d, cluster) {
            Ok(pool) => Some((pool.name.clone(), pool.machine_type.clone())),
            Err(misfit) => {
                misfits.push(misfit);
                None
            }
        },
    };
    match gpu_pool {
        Some(pool) if misfits.is_empty() => Ok(Fit {
            gpu_pool: pool.name.clone(),
            head_pool,
            gpu_subnetworks: pool.additional_networks.iter().map(|(_, subnetwork)| short(subnetwork).to_owned()).collect(),
            addons_off: cluster.addons_off(),
        }),
        _ => Err(misfits),
    }
}

/// The on-demand CPU pool of the head: the configured one, else the first (by name) whose nodes
/// hold the head's requests and take pods without tolerations.
fn head_pool<'c>(d: &Deployment, cluster: &'c Cluster) -> Result<&'c Pool, Misfit> {
    let head = &d.ray.head;
    let fits = |pool: &Pool, named: bool| -> Result<(), String> {
        if pool.holds_gpus() {
            return Err("it has GPUs".to_owned());
        }
        if pool.provisioning == PoolProvisioning::Spot || pool.labels.get(SPOT_LABEL).is_some_and(|v| v == "true") {
            return Err("its nodes are Spot: a preemption would take the Ray cluster".to_owned());
        }
        if pool.provisioning == PoolProvisioning::FlexStart {
            return Err("its nodes are flex-start: held for a bounded time".to_owned());
        }
        if pool.capacity() == 0 {
            return Err("it has no nodes".to_owned());
        }
        if !pool.untainted() {
            return Err(format!("its nodes are tainted ({})", pool.taints.join(", ")));
        }
        let Some(machine) = knowledge::machine(&pool.machine_type) else {
            // Its size unknown, it is taken only when named.
            return if named {
                Ok(())
            } else {
                Err(format!("gke-rl does not know the size of a {} node (name the pool in ray.head.pool to use it)", pool.machine_type))
            };
        };
        let (cpu, memory) = (quantity(head.cpu_request.as_str()), quantity(head.memory_request.as_str()));
        let (has_cpu, has_memory) = (machine.allocatable_millicpu as f64 / 1000.0, machine.allocatable_memory_bytes as f64);
        if cpu.is_some_and(|c| c > has_cpu) || memory.is_some_and(|m| m > has_memory) {
            return Err(format!(
                "a {} node holds less than the head's requests ({} CPUs, {} memory)",
                pool.machine_type, head.cpu_request, head.memory_request
            ));
        }
        Ok(())
    };
    let fallback =
        "or set ray.head.node_pool: gpu to share a GPU node with a worker (a preempted Spot node then takes the Ray cluster with it)";
    if let Some(name) = &head.pool {
        let Some(pool) = cluster.pools.iter().find(|p| p.name == name.as_str()) else {
            return Err(Misfit {
                what: format!("cluster {} has no node pool {name} (ray.head.pool)", cluster.name),
                fix: format!(
                    "set ray.head.pool to one of {}",
                    cluster.pools.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            });
        };
        return fits(pool, true).map(|()| pool).map_err(|why| Misfit {
            what: format!("node pool {name} (ray.head.pool) cannot hold the Ray head: {why}"),
            fix: format!("name another pool in ray.head.pool, {fallback}"),
        });
    }
    let mut pools: Vec<&Pool> = cluster.pools.iter().collect();
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    let mut refused = Vec::new();
    for pool in pools {
        match fits(pool, false) {
            Ok(()) => return Ok(pool),
            Err(why) => refused.push(format!("{}: {why}", pool.name)),
        }
    }
    Err(Misfit {
        what: format!("cluster {} has no on-demand CPU node pool for the Ray head ({})", cluster.name, refused.join("; ")),
        fix: format!(
            "add one (gcloud container node-pools create ray-head --cluster {} {} --machine-type {} --num-nodes 1), {fallback}",
            cluster.name,
            cluster.at(),
            knowledge::HEAD_POOL_MACHINE_TYPE
        ),
    })
}

/// Whether the instance serves the cluster, with what disagrees.
pub fn check_instance(d: &Deployment, cluster: &Cluster, instance: &Instance) -> Vec<Misfit> {
    let mut misfits = Vec::new();
    let id = d.lustre.instance_id.as_str();
    if instance.state != "ACTIVE" {
        misfits.push(Misfit {
            what: format!(
                "Lustre instance {id} is {}, not ACTIVE",
                if instance.state.is_empty() { "in no state" } else { &instance.state }
            ),
            fix: "wait until `gcloud lustre instances describe` says ACTIVE, then deploy again".to_owned(),
        });
    }
    let other_project = matches!((project_of(&instance.network), project_of(&cluster.network)), (Some(a), Some(b)) if a != b);
    if short(&instance.network) != cluster.network_name() || other_project {
        misfits.push(Misfit {
            what: format!(
                "Lustre instance {id} is on VPC {}, cluster {} on {}: its nodes cannot reach it",
                instance.network, cluster.name, cluster.network
            ),
            fix: format!("attach an instance on {} (its VPC cannot change), or set lustre.existing: false to create one", cluster.network),
        });
    }
    // An instance with GKE support listens on the legacy port 6988, which the nodes use only
    // with the CSI driver's legacy port on (`LustreCsiDriverConfig.enableLegacyLustrePort`,
    // "install Lustre kernel modules using port 6988" in the v1 API reference and gcloud's
    // `--enable-legacy-lustre-port`); one without it listens on 988, which they use otherwise.
    if instance.gke_support && !cluster.legacy_lustre_port {
        misfits.push(Misfit {
            what: format!("Lustre instance {id} was created with GKE support and listens on port 6988, but cluster {}'s Lustre CSI driver uses port 988", cluster.name),
            fix: format!(
                "gcloud container clusters update {} {} --enable-legacy-lustre-port (the firewall must also let the nodes reach TCP 6988)",
                cluster.name,
                cluster.at()
            ),
        });
    }
    if !instance.gke_support && cluster.legacy_lustre_port {
        misfits.push(Misfit {
            what: format!("cluster {} reaches Lustre on the legacy port 6988, but instance {id} has no GKE support and listens on 988", cluster.name),
            fix: "attach an instance created with --gke-support-enabled, or set lustre.existing: false and let deploy create one that matches".to_owned(),
        });
    }
    misfits
}

/// A GKENetworkParamSet (`networking.gke.io/v1`): its name, `spec.vpcSubnet`, `spec.deviceMode`.
pub type ParamSet = (String, String, String);
/// A GKE Network (`networking.gke.io/v1`): its name, `spec.parametersRef.name`.
pub type NetworkRef = (String, String);

/// The GKE networks of the GPU pool's RDMA subnetworks, in the subnetworks' order: the
/// Networks whose parameter sets name those subnetworks with device mode RDMA. Empty when the
/// pool has none.
pub fn rdma_networks(fit: &Fit, param_sets: &[ParamSet], networks: &[NetworkRef]) -> Vec<String> {
    fit.gpu_subnetworks
        .iter()
        .filter_map(|subnetwork| {
            let set = param_sets.iter().find(|(_, subnet, mode)| short(subnet) == subnetwork && mode == "RDMA")?;
            networks.iter().find(|(_, reference)| *reference == set.0).map(|(name, _)| name.clone())
        })
        .collect()
}

/// The deployment fitted to the cluster: the head's pool, the workers' RDMA networks (or TCP,
/// where the pool has none), and the instance's real capacity and tier; a name the cluster
/// gives that gke-rl would not write into a manifest is a misfit.
pub fn fitted(d: &Deployment, fit: &Fit, rdma: &[String], instance: Option<&Instance>) -> Result<Deployment, Misfit> {
    let mut d = d.clone();
    let name = |what: &str, text: &str| {
        Name::new(text).map_err(|e| Misfit {
            what: format!("the cluster's {what} `{}` is not a name gke-rl writes into a manifest: {e}", text.escape_debug()),
            fix: "rename it, or name another in the config".to_owned(),
        })
    };
    d.topology.pool = Some(name("node pool", &fit.gpu_pool)?);
    if let Some((pool, machine)) = &fit.head_pool {
        d.ray.head.pool = Some(name("node pool", pool)?);
        // What the head's node costs is its pool's machine's.
        d.ray.head.machine_type = crate::model::Word::new(machine.as_str()).map_err(|e| Misfit {
            what: format!("node pool {pool}'s machine type `{}` is not one gke-rl reads: {e}", machine.escape_debug()),
            fix: "name another pool in ray.head.pool".to_owned(),
        })?;
    }
    if let (None, Some(fabric)) = (&d.fabric.rdma_networks, d.wired_fabric().ok().flatten()) {
        let pool = &fit.gpu_pool;
        match rdma.len() {
            0 if d.fabric.mode == FabricMode::On => {
                return Err(Misfit {
                    what: format!("node pool {pool} has no RDMA networks, and the config says fabric.mode: on"),
                    fix: "attach the pool's RDMA networks (GKENetworkParamSets and Networks of its subnetworks), or set fabric.mode: auto for TCP".to_owned(),
                });
            }
            0 => d.fabric.mode = FabricMode::Off,
            n if n != fabric.nics as usize => {
                return Err(Misfit {
                    what: format!(
                        "node pool {pool} reaches {n} RDMA networks ({}); {} nodes have {}",
                        rdma.iter().map(|r| r.escape_debug().to_string()).collect::<Vec<_>>().join(", "),
                        fabric.machine,
                        fabric.nics
                    ),
                    fix: "give each RDMA subnetwork of the pool its GKENetworkParamSet and Network, or name them in fabric.rdma_networks"
                        .to_owned(),
                });
            }
            _ => d.fabric.rdma_networks = Some(rdma.iter().map(|n| name("GKE network", n)).collect::<Result<_, _>>()?),
        }
    }
    if let Some(instance) = instance {
        d.lustre.capacity_gib = instance.capacity_gib;
        d.lustre.throughput_mbps_per_tib = instance.throughput_mbps_per_tib;
    }
    Ok(d)
}

/// What deploy found on a cluster gke-rl did not create, kept in the deployment folder
/// ([`FOUND_FILE`]) so that the other commands (render, validate, submit, fabric-check,
/// storage-check, report) see the deployment as deploy fitted it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// The GPU workers' pool.
    pub gpu_pool: Option<Name>,
    /// The head's pool and its machine type.
    pub head_pool: Option<Name>,
    /// See [`Found::head_pool`].
    pub head_machine_type: crate::model::Word,
    /// The fabric's mode (`off` where the pool has no RDMA networks) and networks.
    pub fabric_mode: FabricMode,
    /// See [`Found::fabric_mode`].
    pub rdma_networks: Option<Vec<Name>>,
    /// The Lustre instance's capacity and tier.
    pub lustre_capacity_gib: std::num::NonZeroU32,
    /// See [`Found::lustre_capacity_gib`].
    pub lustre_throughput_mbps_per_tib: std::num::NonZeroU32,
}

/// The file of [`Found`] in the deployment folder.
pub const FOUND_FILE: &str = "found.json";

impl Found {
    /// What `fitted` holds of the cluster.
    pub fn of(fitted: &Deployment) -> Found {
        Found {
            gpu_pool: fitted.topology.pool.clone(),
            head_pool: fitted.ray.head.pool.clone(),
            head_machine_type: fitted.ray.head.machine_type.clone(),
            fabric_mode: fitted.fabric.mode,
            rdma_networks: fitted.fabric.rdma_networks.clone(),
            lustre_capacity_gib: fitted.lustre.capacity_gib,
            lustre_throughput_mbps_per_tib: fitted.lustre.throughput_mbps_per_tib,
        }
    }

    /// `d` as deploy fitted it (what the config names itself stays).
    pub fn apply(&self, d: &mut Deployment) {
        d.topology.pool = d.topology.pool.take().or_else(|| self.gpu_pool.clone());
        if d.ray.head.pool.is_none() {
            d.ray.head.pool = self.head_pool.clone();
            d.ray.head.machine_type = self.head_machine_type.clone();
        }
        if d.fabric.rdma_networks.is_none() {
            d.fabric.rdma_networks = self.rdma_networks.clone();
            if self.fabric_mode == FabricMode::Off {
                d.fabric.mode = FabricMode::Off;
            }
        }
        d.lustre.capacity_gib = self.lustre_capacity_gib;
        d.lustre.throughput_mbps_per_tib = self.lustre_throughput_mbps_per_tib;
    }

    /// The file's contents.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("it serializes") + "\n"
    }
}

/// The PersistentVolume and claim that bind the instance, in the shape of the codelab's
/// packaged template (GoogleCloudPlatform/devrel-demos
/// `ai-ml/rl-gke-managed-lustre/rl-demo-gpu-lustre.yaml.tmpl`): a static volume, `Retain`,
/// claimed by name only.
pub fn lustre_volume(d: &Deployment, project_id: &str, instance: &Instance) -> String {
    let (claim, namespace) = (d.lustre.pvc_name.as_str(), d.ray.namespace.as_str());
    let capacity = format!("{}Gi", instance.capacity_gib);
    format!(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: {pv}\n  labels:\n    app.kubernetes.io/managed-by: gke-rl\n\
         spec:\n  capacity:\n    storage: {capacity}\n  accessModes:\n    - ReadWriteMany\n  persistentVolumeReclaimPolicy: Retain\n  \
         volumeMode: Filesystem\n  claimRef:\n    namespace: {namespace}\n    name: {claim}\n  csi:\n    driver: lustre.csi.storage.gke.io\n    \
         volumeHandle: {project_id}/{zone}/{id}\n    volumeAttributes:\n      ip: {ip}\n      filesystem: {filesystem}\n\
         ---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {claim}\n  namespace: {namespace}\n  labels:\n    \
         app.kubernetes.io/managed-by: gke-rl\nspec:\n  accessModes:\n    - ReadWriteMany\n  storageClassName: \"\"\n  volumeName: {pv}\n  \
         resources:\n    requests:\n      storage: {capacity}\n",
        pv = persistent_volume(d),
        zone = d.project.zone,
        id = d.lustre.instance_id,
        ip = crate::quote::yaml(&instance.ip),
        filesystem = crate::quote::yaml(&instance.filesystem),
    )
}

/// The PersistentVolume's name: one a namespace's claim binds (volumes are cluster-wide).
pub fn persistent_volume(d: &Deployment) -> String {
    format!("{}-{}", d.ray.namespace, d.lustre.pvc_name)
}

fn describe(p: &PoolProvisioning) -> String {
    match p {
        PoolProvisioning::Spot => "Spot".to_owned(),
        PoolProvisioning::Reservation(name) => format!("from reservation {name}"),
        PoolProvisioning::FlexStart => "flex-start".to_owned(),
        PoolProvisioning::OnDemand => "on-demand".to_owned(),
    }
}

/// The last part of a resource path (`projects/p/regions/r/subnetworks/NAME`, or a URL).
fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The project of `projects/P/…`, or of a URL holding it; `None` for a bare name.
fn project_of(path: &str) -> Option<&str> {
    let mut parts = path.split('/');
    parts.find(|p| *p == "projects")?;
    parts.next()
}

fn quantity(text: &str) -> Option<f64> {
    crate::model::quantity::parse(text)
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() { "no node pools".to_owned() } else { items.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    const XPK_A4: &str = include_str!("../../../../tests/fixtures/gcloud/cluster-xpk-a4.json");
    const NO_RDMA: &str = include_str!("../../../../tests/fixtures/gcloud/cluster-no-rdma.json");
    const NO_CPU_POOL: &str = include_str!("../../../../tests/fixtures/gcloud/cluster-no-cpu-pool.json");
    const INSTANCE: &str = include_str!("../../../../tests/fixtures/gcloud/lustre-instance.json");
    const NETWORKS: &str = include_str!("../../../../tests/fixtures/gcloud/gke-networks.json");

    fn existing() -> Deployment {
        let mut d = Deployment::default();
        d.project.existing_cluster = true;
        d.lustre.existing = true;
        d
    }

    /// The fixture's (name, vpcSubnet, deviceMode) and (name, parametersRef.name).
    fn gke_networks() -> (Vec<ParamSet>, Vec<NetworkRef>) {
        let all: serde_json::Value = serde_json::from_str(NETWORKS).unwrap();
        let text = |v: &serde_json::Value| v.as_str().unwrap().to_owned();
        let sets = all["paramSets"].as_array().unwrap();
        let sets = sets.iter().map(|s| (text(&s["metadata"]["name"]), text(&s["spec"]["vpcSubnet"]), text(&s["spec"]["deviceMode"])));
        let networks = all["networks"].as_array().unwrap();
        let networks = networks.iter().map(|n| (text(&n["metadata"]["name"]), text(&n["spec"]["parametersRef"]["name"])));
        (sets.collect(), networks.collect())
    }

    #[test]
    fn an_xpk_cluster_is_read_as_gcloud_describes_it() {
        let cluster = Cluster::from_json(XPK_A4).unwrap();
        assert_eq!((cluster.location.as_str(), cluster.network_name()), ("us-east1", "ray-a4-gpu-spot-net-0"));
        assert_eq!((cluster.ray_operator, cluster.lustre_csi, cluster.legacy_lustre_port), (false, true, false));
        let gpu = &cluster.pools[1];
        assert_eq!((gpu.machine_type.as_str(), gpu.gpus, gpu.size), ("a4-highgpu-8g", 8, PoolSize::Fixed(8)));
        assert_eq!(gpu.provisioning, PoolProvisioning::Spot);
        assert_eq!(gpu.taints, ["nvidia.com/gpu=present:NO_SCHEDULE"]);
        assert_eq!(gpu.additional_networks.len(), 9);
        assert_eq!(cluster.pools[0].taints, ["components.gke.io/gke-managed-components=true:NO_SCHEDULE"]);
    }

    #[test]
    fn a_fixed_pool_resized_up_has_the_nodes_listed_and_one_short_of_nodes_is_told() {
        let mut cluster = Cluster::from_json(XPK_A4).unwrap();
        let gpu_pool = "ray-a4-gpu-spot-a4-pool".to_owned();
        let mut d = existing();
        d.topology.node_count = std::num::NonZeroU32::new(10).unwrap();
        cluster.count_nodes(&BTreeMap::from([(gpu_pool.clone(), 9), ("cpu-np".to_owned(), 2)]));
        let misfits = fit(&d, &cluster).unwrap_err();
        assert_eq!(misfits.len(), 1, "{misfits:?}");
        assert_eq!(misfits[0].what, "node pool ray-a4-gpu-spot-a4-pool has 9 nodes now (made with 8), the config wants 10");
        assert_eq!(misfits[0].fix, "set topology.node_count: 9, or resize the pool");
        cluster.count_nodes(&BTreeMap::from([(gpu_pool.clone(), 10), ("cpu-np".to_owned(), 2)]));
        assert_eq!(fit(&d, &cluster).unwrap().gpu_pool, gpu_pool);
        // Fewer listed than made: preempted Spot nodes come back; told, not refused. A CPU pool
        // with none listed still holds the head.
        cluster.count_nodes(&BTreeMap::from([(gpu_pool.clone(), 6)]));
        assert_eq!(fit(&existing(), &cluster).unwrap().head_pool.map(|(name, _)| name).as_deref(), Some("cpu-np"));
        assert_eq!(cluster.pools.iter().find(|p| p.name == gpu_pool).unwrap().short(), Some((6, 8)));
    }

    #[test]
    fn a_pool_the_config_names_is_the_workers_or_a_misfit() {
        let cluster = Cluster::from_json(XPK_A4).unwrap();
        let mut d = existing();
        d.topology.pool = Some(Name::new("other-pool").unwrap());
        let misfits = fit(&d, &cluster).unwrap_err();
        assert_eq!(misfits.len(), 1, "{misfits:?}");
        assert_eq!(misfits[0].what, "cluster ray-a4-gpu-spot has no a4-highgpu-8g node pool other-pool (topology.pool)");
        assert_eq!(misfits[0].fix, "set topology.pool to one of ray-a4-gpu-spot-a4-pool, or remove it to let deploy pick");
        d.topology.pool = Some(Name::new("ray-a4-gpu-spot-a4-pool").unwrap());
        assert_eq!(fit(&d, &cluster).unwrap().gpu_pool, "ray-a4-gpu-spot-a4-pool");
    }

    #[test]
    fn the_head_goes_to_an_on_demand_cpu_pool_and_the_workers_attach_the_pools_rdma_networks() {
        let cluster = Cluster::from_json(XPK_A4).unwrap();
        let fit = fit(&existing(), &cluster).unwrap();
        assert_eq!(fit.gpu_pool, "ray-a4-gpu-spot-a4-pool");
        // The system pool is tainted, the GPU pool has GPUs.
        assert_eq!(fit.head_pool, Some(("cpu-np".to_owned(), "n2-standard-32".to_owned())));
        assert_eq!(fit.addons_off, [RAY_OPERATOR]);
        let (sets, networks) = gke_networks();
        let rdma = rdma_networks(&fit, &sets, &networks);
        assert_eq!(rdma, (0..8).map(|i| format!("rdma-{i}")).collect::<Vec<_>>(), "gvnic-1 is the node's, not the pods'");
        let instance = Instance::from_json(INSTANCE).unwrap();
        let fitted = fitted(&existing(), &fit, &rdma, Some(&instance)).unwrap();
        assert_eq!(fitted.ray.head.pool.as_ref().map(Name::as_str), Some("cpu-np"));
        assert_eq!(fitted.ray.head.machine_type.as_str(), "n2-standard-32", "priced as the pool's machine");
        assert_eq!(fitted.fabric.rdma_networks.as_ref().map(Vec::len), Some(8));
        assert_eq!((fitted.lustre.capacity_gib.get(), fitted.lustre.throughput_mbps_per_tib.get()), (18000, 500));
    }

    #[test]
    fn rdma_networks_are_found_by_subnetwork_whatever_their_names() {
        // xpk's A3 Ultra blueprint names them `<cluster>-rdma-sub-N` (k8s_network_names).
        let cluster = Cluster::from_json(XPK_A4).unwrap();
        let fit = fit(&existing(), &cluster).unwrap();
        let (sets, _) = gke_networks();
        let renamed: Vec<_> =
            sets.iter().map(|(n, s, m)| (n.replace("rdma-", "ray-a4-gpu-spot-rdma-sub-"), s.clone(), m.clone())).collect();
        let networks: Vec<_> = renamed.iter().map(|(n, _, _)| (n.clone(), n.clone())).collect();
        let rdma = rdma_networks(&fit, &renamed, &networks);
        assert_eq!(rdma.first().map(String::as_str), Some("ray-a4-gpu-spot-rdma-sub-0"));
        assert_eq!(rdma.len(), 8);
    }

    #[test]
    fn a_name_from_the_cluster_that_is_no_manifest_name_is_refused_not_dropped() {
        let cluster = Cluster::from_json(XPK_A4).unwrap();
        let fit = fit(&existing(), &cluster).unwrap();
        let mut hostile: Vec<String> = (0..7).map(|i| format!("rdma-{i}")).collect();
        hostile.push("rdma-1\n  hostPath: /".to_owned());
        let misfit = fitted(&existing(), &fit, &hostile, None).unwrap_err();
        assert!(misfit.what.contains("GKE network `rdma-1\\n  hostPath: /` is not a name"), "{misfit}");
    }

    #[test]
    fn what_deploy_found_is_what_the_other_commands_see() {
        let cluster = Cluster::from_json(XPK_A4).unwrap();
        let fit = fit(&existing(), &cluster).unwrap();
        let (sets, networks) = gke_networks();
        let instance = Instance::from_json(INSTANCE).unwrap();
        let fitted = fitted(&existing(), &fit, &rdma_networks(&fit, &sets, &networks), Some(&instance)).unwrap();
        let found: Found = serde_json::from_str(&Found::of(&fitted).to_json()).unwrap();
        let mut seen = existing();
        found.apply(&mut seen);
        assert_eq!(seen, fitted);
        // What the config names stays.
        let mut pinned = existing();
        pinned.ray.head.pool = Some(Name::new("other").unwrap());
        found.apply(&mut pinned);
        assert_eq!(pinned.ray.head.pool.unwrap().as_str(), "other");
    }

    #[test]
    fn a_pool_without_rdma_networks_gets_tcp() {
        let cluster = Cluster::from_json(NO_RDMA).unwrap();
        let fit = fit(&existing(), &cluster).unwrap();
        assert!(fit.addons_off.is_empty());
        let (sets, networks) = gke_networks();
        let rdma = rdma_networks(&fit, &sets, &networks);
        assert!(rdma.is_empty());
        let fitted = fitted(&existing(), &fit, &rdma, None).unwrap();
        assert_eq!(fitted.fabric.mode, FabricMode::Off);
        assert_eq!(fitted.wired_fabric().unwrap(), None);
    }

    #[test]
    fn a_cluster_without_a_cpu_pool_says_how_to_add_one_or_share_a_gpu_node() {
        let cluster = Cluster::from_json(NO_CPU_POOL).unwrap();
        let misfits = fit(&existing(), &cluster).unwrap_err();
        assert_eq!(misfits.len(), 1, "{misfits:?}");
        let text = misfits[0].to_string();
        assert!(text.contains("no on-demand CPU node pool for the Ray head"), "{text}");
        assert!(text.contains("system: its nodes are tainted") && text.contains("it has GPUs"), "{text}");
        assert!(text.contains("gcloud container node-pools create ray-head") && text.contains("ray.head.node_pool: gpu"), "{text}");
        // Sharing a GPU node fits.
        let mut on_gpu = existing();
        on_gpu.ray.head.node_pool = HeadNodePool::Gpu;
        assert_eq!(fit(&on_gpu, &cluster).unwrap().head_pool, None);
    }

    #[test]
    fn every_disagreement_with_the_config_is_named_with_its_fix() {
        let cluster = Cluster::from_json(XPK_A4).unwrap();
        let mut d = existing();
        d.topology.node_count = std::num::NonZeroU32::new(16).unwrap();
        d.topology.provisioning = Provisioning::Reservation(crate::model::Word::new("my-reservation").unwrap());
        d.ray.head.pool = Some(Name::new("nowhere").unwrap());
        let text: Vec<String> = fit(&d, &cluster).unwrap_err().iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 3, "{text:?}");
        assert!(text[0].contains("has 8 nodes, the config wants 16; fix: set topology.node_count: 8"), "{}", text[0]);
        assert!(
            text[1].contains("is Spot, the config says from reservation my-reservation; fix: set topology.provisioning: spot"),
            "{}",
            text[1]
        );
        assert!(text[2].contains("no node pool nowhere (ray.head.pool); fix: set ray.head.pool to one of system, "), "{}", text[2]);

        let mut tainted = cluster.clone();
        tainted.pools[1].taints.push("user-workload=true:NO_SCHEDULE".to_owned());
        let text = fit(&existing(), &tainted).unwrap_err()[0].to_string();
        assert!(text.contains("taints the Ray workers do not tolerate: user-workload=true:NO_SCHEDULE"), "{text}");

        let mut d = existing();
        d.topology.machine_type = crate::model::Word::new("a3-ultragpu-8g").unwrap();
        let text = fit(&d, &cluster).unwrap_err()[0].to_string();
        assert!(text.contains("has no a3-ultragpu-8g node pool") && text.contains("set topology.machine_type: a4-highgpu-8g"), "{text}");
    }

    #[test]
    fn an_instance_on_another_vpc_or_port_is_refused() {
        let cluster = Cluster::from_json(XPK_A4).unwrap();
        let instance = Instance::from_json(INSTANCE).unwrap();
        assert_eq!((instance.ip.as_str(), instance.filesystem.as_str()), ("172.16.0.3", "lustre"));
        assert!(check_instance(&existing(), &cluster, &instance).is_empty());

        let elsewhere = Instance { network: "projects/fake-project/global/networks/default".into(), ..instance.clone() };
        let text = check_instance(&existing(), &cluster, &elsewhere)[0].to_string();
        assert!(text.contains("is on VPC projects/fake-project/global/networks/default"), "{text}");

        let legacy = Instance { gke_support: true, ..instance.clone() };
        let text = check_instance(&existing(), &cluster, &legacy)[0].to_string();
        assert!(text.contains("port 6988") && text.contains("--enable-legacy-lustre-port"), "{text}");

        let creating = Instance { state: "CREATING".into(), ..instance };
        assert!(check_instance(&existing(), &cluster, &creating)[0].to_string().contains("is CREATING, not ACTIVE"));
    }

    #[test]
    fn the_volume_binds_the_instance_as_the_codelabs_template_does() {
        let instance = Instance::from_json(INSTANCE).unwrap();
        let text = lustre_volume(&existing(), "fake-project", &instance);
        let docs: Vec<_> = gke_rl_yaml::documents(&text).map(|d| gke_rl_yaml::Node::parse(d).unwrap()).collect();
        let at = |doc: usize, path: &[&str]| docs[doc].get(path).and_then(gke_rl_yaml::Node::text).map(str::to_owned);
        assert_eq!(at(0, &["spec", "csi", "volumeHandle"]).as_deref(), Some("fake-project/us-east1-b/rl-demo-gpu-lustre"));
        assert_eq!(at(0, &["spec", "csi", "volumeAttributes", "ip"]).as_deref(), Some("172.16.0.3"));
        assert_eq!(at(0, &["spec", "claimRef", "name"]).as_deref(), Some("lustre-pvc"));
        assert_eq!(at(0, &["spec", "persistentVolumeReclaimPolicy"]).as_deref(), Some("Retain"));
        assert_eq!(at(1, &["spec", "volumeName"]).as_deref(), Some("default-lustre-pvc"));
        assert_eq!(at(1, &["spec", "resources", "requests", "storage"]).as_deref(), Some("18000Gi"));
    }
}
