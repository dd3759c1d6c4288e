//! Facts that change with upstream releases, as data. Each row cites its source in
//! `../shared/research/`; a new image, machine type or release is a table edit.

mod nemo_rl_v0_4_0;

pub use nemo_rl_v0_4_0::RECIPE_KEYS as GRPO_MATH_70B_MEGATRON_KEYS;

/// Container images whose Ray version is known, and that version.
///
/// NeMo-RL images run the Ray their `pyproject.toml` pins, whatever the RayCluster's
/// `rayVersion` says (`kuberay-ray-jobs.md` §5, `nemo-rl.md` §6).
pub const KNOWN_IMAGES: &[(&str, &str)] = &[
    ("nvcr.io/nvidia/nemo-rl:v0.3.1", "2.46.0"),
    ("nvcr.io/nvidia/nemo-rl:v0.4.0", "2.46.0"),
    ("nvcr.io/nvidia/nemo-rl:v0.5.0", "2.49.2"),
    ("nvcr.io/nvidia/nemo-rl:v0.6.0", "2.54.0"),
];

/// The KubeRay release whose RayCluster CRD the renders are checked against.
pub const KUBERAY_VERSION: &str = "v1.7.0";
/// The NeMo-RL release whose GRPO recipe keys gke-rl knows.
pub const NEMO_RL_VERSION: &str = "v0.4.0";

/// Repositories whose tags are the Ray version (`rayproject/ray:2.46.0-py312-gpu`).
const RAY_IMAGE_REPOSITORIES: &[&str] = &["rayproject/ray", "docker.io/rayproject/ray"];

/// The Ray version inside `image`, when gke-rl knows it.
pub fn ray_version_of_image(image: &str) -> Option<&str> {
    if let Some(&(_, version)) = KNOWN_IMAGES.iter().find(|(known, _)| *known == image) {
        return Some(version);
    }
    let (repository, tag) = image.rsplit_once(':')?;
    if !RAY_IMAGE_REPOSITORIES.contains(&repository) {
        return None;
    }
    let version = tag.split('-').next()?;
    let is_release = version.split('.').count() == 3 && version.split('.').all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    is_release.then_some(version)
}

/// A GPU machine type and what a pod on it can request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Compute Engine machine type.
    pub name: &'static str,
    /// GPUs per node.
    pub gpus: u32,
    /// GKE accelerator label value.
    pub accelerator: &'static str,
    /// Allocatable CPU in millicores after GKE's reservation.
    pub allocatable_millicpu: u64,
    /// Allocatable memory in bytes after GKE's reservation (the lower of the two readings of
    /// the published 3,968 "GB").
    pub allocatable_memory_bytes: u64,
}

/// `cluster-toolkit.md` §4: 8 × B200, 224 vCPU, 3,968 GB; allocatable ≈ 223.37 CPU and
/// 3,615–3,882 GiB.
/// The CPU machines are for the Ray head: its own pool's choices and the gke-a4 system pool's.
pub const MACHINES: &[Machine] = &[
    Machine {
        name: "a4-highgpu-8g",
        gpus: 8,
        accelerator: "nvidia-b200",
        allocatable_millicpu: 223_370,
        allocatable_memory_bytes: 3_615 * GIB,
    },
    cpu_machine("e2-standard-8", 8, 32),
    cpu_machine("e2-standard-16", 16, 64),
    cpu_machine("e2-standard-32", 32, 128),
    cpu_machine("n2-standard-16", 16, 64),
    cpu_machine("n2-standard-32", 32, 128),
    cpu_machine("n2-highmem-8", 8, 64),
    cpu_machine("n2-highmem-16", 16, 128),
    cpu_machine("n2-highmem-32", 32, 256),
];

/// A CPU machine of `vcpus` and `memory_gib` (Compute Engine's "GB" are GiB), with what GKE
/// reserves for the kubelet and the system taken off, by GKE's published tiers: CPU 6 % of the
/// first core, 1 % of the second, 0.5 % of the next two, 0.25 % above four; memory 25 % of the
/// first 4 GiB, 20 % of the next 4, 10 % of the next 8, 6 % of the next 112, 2 % above 128,
/// and 100 MiB for eviction.
const fn cpu_machine(name: &'static str, vcpus: u64, memory_gib: u64) -> Machine {
    let reserved_millicpu = 60 + 10 + 10 + (vcpus - 4) * 5 / 2;
    let mib = memory_gib * 1024;
    let reserved_mib =
        tier(mib, 0, 4, 25) + tier(mib, 4, 8, 20) + tier(mib, 8, 16, 10) + tier(mib, 16, 128, 6) + tier(mib, 128, mib, 2) + 100;
    Machine {
        name,
        gpus: 0,
        accelerator: "",
        allocatable_millicpu: vcpus * 1000 - reserved_millicpu,
        allocatable_memory_bytes: (mib - reserved_mib) * (1 << 20),
    }
}

/// `percent` of the MiB of `mib` that lie between `from_gib` and `to_gib`.
const fn tier(mib: u64, from_gib: u64, to_gib: u64, percent: u64) -> u64 {
    let top = if mib < to_gib * 1024 { mib } else { to_gib * 1024 };
    if top > from_gib * 1024 { (top - from_gib * 1024) * percent / 100 } else { 0 }
}

/// The default machine of the Ray head's own node pool: 16 vCPUs and 128 GiB hold the head's
/// default requests (8 CPUs, 64 GiB) with room for the driver.
pub const HEAD_POOL_MACHINE_TYPE: &str = "n2-highmem-16";
/// The name of the head's node pool, and of its blueprint module (`<name>-pool`).
pub const HEAD_POOL_NAME: &str = "ray-head";
/// The node label the head's pool carries and the head selects.
pub const HEAD_POOL_LABEL: (&str, &str) = ("gke-rl/node-role", "ray-head");
/// The label GKE gives every node: its node pool's name.
pub const NODE_POOL_LABEL: &str = "cloud.google.com/gke-nodepool";
/// The gke-cluster module's system node pool (`system_node_pool_name`,
/// `system_node_pool_machine_type` in gke-a4.yaml).
pub const SYSTEM_POOL: (&str, &str) = ("system", "e2-standard-16");

/// Bytes in a GiB.
pub const GIB: u64 = 1 << 30;

/// The machine type `name`, when gke-rl knows it.
pub fn machine(name: &str) -> Option<&'static Machine> {
    MACHINES.iter().find(|m| m.name == name)
}

/// How a machine type's GPUs reach the GPUs of other nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interconnect {
    /// GPUDirect RDMA over RoCE through Google's gIB NCCL plugin: the pod attaches the RDMA
    /// networks the blueprint creates, and NCCL loads gIB from the node (`/home/kubernetes/bin/gib`).
    Rdma,
    /// The RDMA NICs reach pods as DRANET resource claims (`default-rdma`), not networks:
    /// gke-rl does not wire these yet.
    Dranet,
    /// GPUDirect-TCPXO over the `vpc1`…`vpc8` networks and a receive-data-path sidecar:
    /// gke-rl does not wire these yet.
    Tcpxo,
}

/// The GPU-to-GPU network of a machine type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuFabric {
    /// Compute Engine machine type.
    pub machine: &'static str,
    /// GKE accelerator label value of its nodes.
    pub accelerator: &'static str,
    /// How its GPUs talk across nodes.
    pub interconnect: Interconnect,
    /// NICs that carry GPU traffic, per node.
    pub nics: u32,
    /// Line rate of each, in Gb/s.
    pub nic_gbps: u32,
}

impl GpuFabric {
    /// A node's line rate for GPU traffic in GB/s: the ceiling of an inter-node all-reduce's
    /// bus bandwidth, since each of the node's rings leaves it through its own NIC.
    pub fn line_rate_gbytes(&self) -> f64 {
        f64::from(self.nics * self.nic_gbps) / 8.0
    }

    /// Whether gke-rl wires this fabric into the Ray workers.
    pub fn is_wired(&self) -> bool {
        self.interconnect == Interconnect::Rdma
    }

    /// Why gke-rl leaves this fabric alone, when it does.
    pub fn unsupported(&self) -> Option<&'static str> {
        match self.interconnect {
            Interconnect::Rdma => None,
            Interconnect::Dranet => Some("A4X hands its RDMA NICs to pods as DRANET resource claims, which gke-rl does not render yet"),
            Interconnect::Tcpxo => Some("A3 Mega uses GPUDirect-TCPXO (a receive-data-path sidecar), which gke-rl does not render yet"),
        }
    }
}

/// Cluster Toolkit's blueprints of each family (`cluster-toolkit/derived/gke-network-names.md`,
/// `gke-a4.yaml`, `gke-a3-ultragpu.yaml`, `gke-a4x.yaml`, `gke-a3-megagpu.yaml`) and Compute
/// Engine's machine table: A4 and A3 Ultra have 8 × 400 Gb/s RoCE NICs, A4X 4 × 400 Gb/s,
/// A3 Mega 8 × 200 Gb/s.
pub const GPU_FABRICS: &[GpuFabric] = &[
    GpuFabric { machine: "a4-highgpu-8g", accelerator: "nvidia-b200", interconnect: Interconnect::Rdma, nics: 8, nic_gbps: 400 },
    GpuFabric { machine: "a3-ultragpu-8g", accelerator: "nvidia-h200-141gb", interconnect: Interconnect::Rdma, nics: 8, nic_gbps: 400 },
    GpuFabric { machine: "a4x-highgpu-4g", accelerator: "nvidia-gb200", interconnect: Interconnect::Dranet, nics: 4, nic_gbps: 400 },
    GpuFabric { machine: "a3-megagpu-8g", accelerator: "nvidia-h100-mega-80gb", interconnect: Interconnect::Tcpxo, nics: 8, nic_gbps: 200 },
];

/// The GPU network of machine type `name`, when gke-rl knows it.
pub fn gpu_fabric(machine: &str) -> Option<&'static GpuFabric> {
    GPU_FABRICS.iter().find(|f| f.machine == machine)
}

/// The GPU network of the nodes labelled with `accelerator`, when gke-rl knows it.
pub fn gpu_fabric_of_accelerator(accelerator: &str) -> Option<&'static GpuFabric> {
    GPU_FABRICS.iter().find(|f| f.accelerator == accelerator)
}

/// The GKE networks Cluster Toolkit's gke-cluster module names after an RDMA VPC of `count`
/// subnets, with its default `k8s_network_names` (`rdma-0`…); `blueprint::gke_networks`
/// reads them from a blueprint.
pub fn rdma_networks(count: u32) -> Vec<String> {
    (0..count).map(|i| format!("{RDMA_NETWORK_PREFIX}{i}")).collect()
}

/// The gke-cluster module's default `k8s_network_names.rdma_prefix` (start index 0, no postfix).
pub const RDMA_NETWORK_PREFIX: &str = "rdma-";

/// Where Google's gIB NCCL plugin lives on a GPU node, and where the pods mount it.
pub const GIB_HOST_PATH: &str = "/home/kubernetes/bin/gib";
/// See [`GIB_HOST_PATH`].
pub const GIB_MOUNT_PATH: &str = "/usr/local/gib";
/// The NVIDIA driver's libraries on a GKE GPU node, and where the pods mount them (xpk's RDMA
/// decorator mounts both).
pub const NVIDIA_HOST_PATH: &str = "/home/kubernetes/bin/nvidia";
/// See [`NVIDIA_HOST_PATH`].
pub const NVIDIA_MOUNT_PATH: &str = "/usr/local/nvidia";
/// The `NCCL_NET` value that selects gIB: NCCL then fails instead of falling back to sockets.
pub const GIB_NCCL_NET: &str = "gIB";

/// A Managed Lustre throughput tier and its capacity rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LustreTier {
    /// `per_unit_storage_throughput`, MB/s per TiB.
    pub throughput: u32,
    /// Smallest capacity, GiB.
    pub min_gib: u64,
    /// Largest capacity, GiB.
    pub max_gib: u64,
    /// Capacity step up to `threshold_gib`.
    pub small_step_gib: u64,
    /// Above this capacity the step is `large_step_gib`.
    pub threshold_gib: u64,
    /// Capacity step above the threshold.
    pub large_step_gib: u64,
}

/// `cluster-toolkit.md` §3.1 (Managed Lustre "Performance tiers" and "Increase capacity").
pub const LUSTRE_TIERS: &[LustreTier] = &[
    LustreTier {
        throughput: 1000,
        min_gib: 9_000,
        max_gib: 10_008_000,
        small_step_gib: 9_000,
        threshold_gib: 1_530_000,
        large_step_gib: 72_000,
    },
    LustreTier {
        throughput: 500,
        min_gib: 18_000,
        max_gib: 20_016_000,
        small_step_gib: 18_000,
        threshold_gib: 3_060_000,
        large_step_gib: 144_000,
    },
    LustreTier {
        throughput: 250,
        min_gib: 36_000,
        max_gib: 40_032_000,
        small_step_gib: 36_000,
        threshold_gib: 6_120_000,
        large_step_gib: 288_000,
    },
    LustreTier {
        throughput: 125,
        min_gib: 72_000,
        max_gib: 12_240_000,
        small_step_gib: 72_000,
        threshold_gib: 12_240_000,
        large_step_gib: 72_000,
    },
];

/// The tier with this throughput, when it exists.
pub fn lustre_tier(throughput: u64) -> Option<&'static LustreTier> {
    LUSTRE_TIERS.iter().find(|t| u64::from(t.throughput) == throughput)
}

impl LustreTier {
    /// The step `capacity_gib` must be a multiple of.
    pub fn step_for(&self, capacity_gib: u64) -> u64 {
        if capacity_gib <= self.threshold_gib { self.small_step_gib } else { self.large_step_gib }
    }
}

/// Parameter counts of models gke-rl can size storage for (`nemo-rl.md` §5.1).
pub const MODEL_PARAMETERS: &[(&str, u64)] = &[("Qwen/Qwen2.5-72B-Instruct", 72_706_203_648)];

/// Bytes per parameter of a NeMo-RL v0.4.0 Megatron checkpoint with Adam: bf16 weights plus
/// fp32 master weights and two moments (`nemo-rl.md` §5.2).
pub const CHECKPOINT_BYTES_PER_PARAMETER: u64 = 14;
/// Bytes per parameter of one bf16 copy of the model (the HF download, the converted copy).
pub const BF16_BYTES_PER_PARAMETER: u64 = 2;

/// `data.dataset_name` values NeMo-RL v0.4.0's GRPO math launcher accepts (`nemo-rl.md` §4.1),
/// with the extra keys each needs.
pub const GRPO_DATASETS: &[(&str, &[&str])] =
    &[("OpenMathInstruct-2", &[]), ("DeepScaler", &[]), ("DAPOMath17K", &[]), ("ResponseDataset", &["data.train_data_path"])];

/// Recipes whose merged keys gke-rl knows, by path relative to `/opt/nemo-rl`.
pub fn recipe_keys(recipe: &str) -> Option<&'static [(&'static str, ValueType, &'static str)]> {
    (recipe == "examples/configs/grpo_math_70B_megatron.yaml").then_some(GRPO_MATH_70B_MEGATRON_KEYS)
}

/// Override keys NeMo-RL v0.4.0 accepts but never reads (`nemo-rl.md` §4.2).
pub const NO_OP_OVERRIDES: &[&str] = &["policy.megatron_cfg.converter_type"];

/// The type of a key's value in a merged NeMo-RL config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// A whole number.
    Int,
    /// A floating-point number.
    Float,
    /// `true` or `false`.
    Bool,
    /// Text.
    Str,
    /// `null` in the recipe: any type.
    Null,
    /// A list.
    List,
    /// A mapping (a subtree).
    Map,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nemo_rl_v0_4_0_ships_ray_2_46_0_not_the_codelab_2_54_0() {
        assert_eq!(ray_version_of_image("nvcr.io/nvidia/nemo-rl:v0.4.0"), Some("2.46.0"));
    }

    #[test]
    fn gke_reserves_by_its_published_tiers() {
        // The gke-a4 system pool's e2-standard-16 (16 vCPU, 64 GiB): 16 − (0.06 + 0.01 + 0.01
        // + 12 × 0.0025) CPUs, and 64 GiB − (1 + 0.8 + 0.8 + 48 × 0.06) GiB − 100 MiB.
        let system = machine(SYSTEM_POOL.1).unwrap();
        assert_eq!(system.allocatable_millicpu, 15_890);
        assert_eq!(system.allocatable_memory_bytes, (65_536 - 5_611 - 100) * (1 << 20));
        let head = machine(HEAD_POOL_MACHINE_TYPE).unwrap();
        assert!(head.allocatable_memory_bytes > 64 * GIB && head.allocatable_millicpu > 8_000 && head.gpus == 0);
    }

    #[test]
    fn every_known_image_row_resolves() {
        for (image, version) in KNOWN_IMAGES {
            assert_eq!(ray_version_of_image(image), Some(*version));
        }
    }

    #[test]
    fn lustre_steps_follow_the_tier_table() {
        let tier = lustre_tier(1000).unwrap();
        assert_eq!(tier.step_for(9_000), 9_000);
        assert_eq!(tier.step_for(1_602_000), 72_000);
        assert!(LUSTRE_TIERS.iter().all(|t| t.min_gib % t.small_step_gib == 0 && t.max_gib % t.large_step_gib == 0));
    }

    #[test]
    fn the_codelab_recipe_keys_are_known() {
        let keys = recipe_keys("examples/configs/grpo_math_70B_megatron.yaml").unwrap();
        let find = |k: &str| keys.iter().find(|(key, _, _)| *key == k).map(|(_, t, v)| (*t, *v));
        assert_eq!(find("grpo.max_num_steps"), Some((ValueType::Int, "1000000")));
        assert_eq!(find("policy.megatron_cfg.tensor_model_parallel_size"), Some((ValueType::Int, "4")));
        assert_eq!(find("checkpointing.metric_name"), Some((ValueType::Str, "val:accuracy")));
        assert_eq!(find("policy.megatron_cfg").map(|(t, _)| t), Some(ValueType::Map));
        assert_eq!(find("policy.megatron_cfg.foo"), None);
    }

    #[test]
    fn ray_images_carry_their_version_in_the_tag() {
        assert_eq!(ray_version_of_image("rayproject/ray:2.46.0-py312-gpu"), Some("2.46.0"));
        assert_eq!(ray_version_of_image("rayproject/ray:2.54.0"), Some("2.54.0"));
        assert_eq!(ray_version_of_image("rayproject/ray:nightly"), None);
        assert_eq!(ray_version_of_image("example.com/my/image:1.0"), None);
    }
}
