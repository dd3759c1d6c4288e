//! Facts that change with upstream releases, as data. Each row cites its upstream source; a new
//! image, machine type or release is a table edit, or (a NeMo-RL release) its fixtures and codegen.

pub mod kueue;
mod models;
mod nemo_rl;

pub use nemo_rl::NEMO_RL_RELEASES;

/// Where NVIDIA publishes NeMo-RL's images; a release's image is `<this>:<tag>`.
pub const NEMO_RL_IMAGE_REPOSITORY: &str = "nvcr.io/nvidia/nemo-rl";

/// Images other than the releases' whose Ray version is known, and that version.
///
/// NeMo-RL images run the Ray their `pyproject.toml` pins (from v0.7.0, their `uv.lock`),
/// whatever the RayCluster's `rayVersion` says.
pub const OTHER_IMAGES: &[(&str, &str)] = &[("nvcr.io/nvidia/nemo-rl:v0.3.1", "2.46.0")];

/// Every image whose Ray version is known, and that version: each release's, then the others.
pub fn known_images() -> impl Iterator<Item = (&'static str, &'static str)> {
    NEMO_RL_RELEASES.iter().map(|r| (r.image, r.ray)).chain(OTHER_IMAGES.iter().copied())
}

/// The KubeRay release whose RayCluster CRD the renders are checked against.
pub const KUBERAY_VERSION: &str = "v1.7.0";

/// The recipe whose merged keys gke-rl knows in each release (the codelab's), relative to
/// `/opt/nemo-rl`.
pub const GRPO_RECIPE: &str = "examples/configs/grpo_math_70B_megatron.yaml";

/// A NeMo-RL release gke-rl renders and checks jobs for: a row of the table `cargo xtask
/// codegen` generates from the release's files in `tests/fixtures/upstream/nemo-rl/<tag>/`.
#[derive(Debug, PartialEq, Eq)]
pub struct NemoRlRelease {
    /// The release tag, `v0.6.0`.
    pub tag: &'static str,
    /// Its container image.
    pub image: &'static str,
    /// The Ray its image runs.
    pub ray: &'static str,
    /// The GRPO launcher its guide (`docs/guides/grpo.md`) runs, relative to `/opt/nemo-rl`.
    pub launcher: &'static str,
    /// Every `examples/**/run_grpo*` launcher it ships.
    pub launchers: &'static [&'static str],
    /// The override key that names the training data set.
    pub dataset_key: &'static str,
}

/// The release the codelab runs, and what a job script is checked against when no image says.
pub const CODELAB_NEMO_RL: &NemoRlRelease = &NEMO_RL_RELEASES[0];

/// The newest release gke-rl knows.
pub fn newest_nemo_rl() -> &'static NemoRlRelease {
    NEMO_RL_RELEASES.last().expect("codegen writes at least one release")
}

/// The release whose image `image` is, when gke-rl knows it.
pub fn nemo_rl_release(image: &str) -> Option<&'static NemoRlRelease> {
    NEMO_RL_RELEASES.iter().find(|r| r.image == image)
}

/// What gke-rl knows of the NeMo-RL inside an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NemoRlImage<'a> {
    /// A release gke-rl knows (by its tag, digest-pinned or not).
    Known(&'static NemoRlRelease),
    /// A NeMo-RL image whose version tag names no release gke-rl knows (a newer release, a
    /// patch, a candidate): taken to have the layout of the newest known release at or before
    /// its version, never an older one, which nothing here has checked.
    Assumed {
        /// The image's version tag, `v0.8.0`.
        tag: &'a str,
        /// The release whose layout it is taken to have.
        assumed: &'static NemoRlRelease,
    },
    /// Any other image.
    Unknown,
}

impl<'a> NemoRlImage<'a> {
    /// What `image` is.
    pub fn of(image: &'a str) -> Self {
        let Some(tag) = image_tag(image, NEMO_RL_IMAGE_REPOSITORY) else { return Self::Unknown };
        if let Some(release) = NEMO_RL_RELEASES.iter().find(|r| r.tag == tag) {
            return Self::Known(release);
        }
        let Some(version) = release_version(tag) else { return Self::Unknown };
        let at_or_before = NEMO_RL_RELEASES.iter().rev().find(|r| release_version(r.tag).is_some_and(|v| v <= version));
        at_or_before.map_or(Self::Unknown, |assumed| Self::Assumed { tag, assumed })
    }

    /// The release whose layout (launcher, recipe keys, dataset key) the image has, known or
    /// assumed.
    pub fn layout(self) -> Option<&'static NemoRlRelease> {
        match self {
            Self::Known(release) | Self::Assumed { assumed: release, .. } => Some(release),
            Self::Unknown => None,
        }
    }
}

/// The tag of `image` when it is in `repository`, without a `@sha256:` digest.
fn image_tag<'a>(image: &'a str, repository: &str) -> Option<&'a str> {
    without_digest(image).strip_prefix(repository)?.strip_prefix(':')
}

/// `image` without its `@sha256:…` digest: a digest pins the bytes, the tag names the release.
fn without_digest(image: &str) -> &str {
    image.split_once('@').map_or(image, |(named, _)| named)
}

/// `[0, 7, 0]` for a release tag such as `v0.7.0`, `v0.7` or `v0.7.0-rc1` (a candidate or
/// build of a version counts as the version).
pub fn release_version(tag: &str) -> Option<[u64; 3]> {
    let version = tag.strip_prefix('v')?.split(['-', '+']).next()?;
    let parts: Vec<u64> =
        version.split('.').map(|p| p.bytes().all(|b| b.is_ascii_digit()).then(|| p.parse().ok()).flatten()).collect::<Option<_>>()?;
    match parts[..] {
        [major, minor] => Some([major, minor, 0]),
        [major, minor, patch] => Some([major, minor, patch]),
        _ => None,
    }
}

/// Keys a release moved: (the release, the key before it, the key from it on)
/// (NVIDIA-NeMo/RL PR #1649 split the data config in v0.6.0).
pub const MOVED_KEYS: &[(&str, &str, &str)] = &[
    ("v0.6.0", "data.dataset_name", "data.train.dataset_name"),
    ("v0.6.0", "data.prompt_file", "data.default.prompt_file"),
    ("v0.6.0", "data.system_prompt_file", "data.default.system_prompt_file"),
    ("v0.6.0", "data.processor", "data.default.processor"),
    ("v0.6.0", "data.env_name", "data.default.env_name"),
];

/// Override keys a release's recipe has but its code never reads: (release, key). Recorded
/// by reading each release's source; releases not listed have none recorded.
pub const NO_OP_OVERRIDES: &[(&str, &str)] = &[
    // NVIDIA-NeMo/RL v0.4.0 to v0.6.0: no Python file reads `converter_type` (issue #749, "Remove
    // unused converter_type"); the model's config.json decides the architecture. v0.7.0's
    // recipe dropped the key.
    ("v0.4.0", "policy.megatron_cfg.converter_type"),
    ("v0.5.0", "policy.megatron_cfg.converter_type"),
    ("v0.6.0", "policy.megatron_cfg.converter_type"),
];

impl NemoRlRelease {
    /// The key's type and value in this release's recipe.
    pub fn recipe_key(&self, key: &str) -> Option<(ValueType, &'static str)> {
        let bit = self.bit();
        recipe_rows_of(key).find(|row| row.releases & bit != 0).map(|row| (row.kind, row.value))
    }

    /// Every key of this release's recipe, sorted.
    pub fn recipe_keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        let bit = self.bit();
        recipe_rows().filter(move |row| row.releases & bit != 0).map(|row| row.key)
    }

    /// Whether this release ships the recipe `path` (under `examples/configs/`, relative to the
    /// image's NeMo-RL folder); `None` for a path elsewhere, whose file gke-rl cannot know.
    pub fn has_recipe(&self, path: &str) -> Option<bool> {
        let name = recipe_name(path)?;
        Some(self.recipes().any(|r| r == name))
    }

    /// Every recipe this release ships, under `examples/configs/` and without that prefix, sorted.
    pub fn recipes(&self) -> impl Iterator<Item = &'static str> + '_ {
        let bit = self.bit();
        nemo_rl::RECIPES.lines().filter_map(move |line| {
            let (name, releases) = line.split_once(' ')?;
            (u16::from_str_radix(releases, 16).ok()? & bit != 0).then_some(name)
        })
    }

    /// Whether this release's code never reads `key`, although its recipe has it.
    pub fn never_reads(&self, key: &str) -> bool {
        NO_OP_OVERRIDES.contains(&(self.tag, key))
    }

    /// Why `key` is not in this release's recipe, when another release explains it: it moved
    /// (to the new key), or another release has it.
    pub fn missing_key(&self, key: &str) -> Option<String> {
        if let Some((since, _, new)) = MOVED_KEYS.iter().find(|(since, old, _)| *old == key && self.is_at_least(since)) {
            return Some(format!("NeMo-RL {since} moved `{key}` to `{new}`"));
        }
        if let Some((since, old, _)) = MOVED_KEYS.iter().find(|(since, _, new)| *new == key && !self.is_at_least(since)) {
            return Some(format!("`{key}` is NeMo-RL {since}'s; {} calls it `{old}`", self.tag));
        }
        if let Some(later) = LATER_CHECKPOINT_KEYS.iter().find(|k| k.key == key && !nemo_rl_has_key(self.tag, key)) {
            let since = later.since.map_or_else(|| "NeMo-RL's main branch after v0.7.0".to_owned(), |tag| format!("NeMo-RL {tag}"));
            return Some(format!("`{key}` came with {since} ({}: it {}), not {}", later.upstream, later.effect, self.tag));
        }
        let others: Vec<&str> = NEMO_RL_RELEASES.iter().filter(|r| r.recipe_key(key).is_some()).map(|r| r.tag).collect();
        (!others.is_empty()).then(|| format!("`{key}` is in NeMo-RL {}'s recipe, not {}'s", others.join(" and "), self.tag))
    }

    fn index(&self) -> usize {
        NEMO_RL_RELEASES.iter().position(|r| r.tag == self.tag).expect("releases come from the table")
    }

    fn bit(&self) -> u16 {
        1 << self.index()
    }

    fn is_at_least(&self, tag: &str) -> bool {
        NEMO_RL_RELEASES.iter().position(|r| r.tag == tag).is_some_and(|since| self.index() >= since)
    }
}

/// The Ray dashboard's port on the head: the Jobs API.
pub const DASHBOARD_PORT: u16 = 8265;

/// Where a Cluster Toolkit checkout keeps the blueprint gke-rl patches (its GPU family's row of
/// [`GPU_FAMILIES`]), relative to the checkout.
pub fn toolkit_blueprint() -> &'static str {
    let family = GPU_FAMILIES.iter().find(|f| f.blueprint.is_some_and(|(name, _)| name == PATCHED_BLUEPRINT));
    family.and_then(|f| f.blueprint).map_or("", |(_, path)| path)
}

/// The folder of [`toolkit_blueprint`], which holds the templates it stages.
pub fn toolkit_example() -> &'static str {
    toolkit_blueprint().rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// Files the blueprint stages with `$(ghpc_stage("./…"))`, copied beside the patched blueprint.
pub const STAGED_TEMPLATES: &[&str] = &[crate::ArtifactKind::KueueConfiguration.file(), "nccl-installer.yaml.tftpl"];

/// What NeMo-RL prints when a step has finished: the first line of its timing table.
pub const STEP_DONE: &str = "• Total step time: ";

/// What NeMo-RL prints as a checkpoint save begins, before the step.
pub const SAVING: &str = "Saving checkpoint for step ";

/// The first Ray with token authentication, as people name the release (`2.52`): a macro, so
/// that texts fixed at compile time (rule explanations, the config's docs) spell it from here.
#[macro_export]
macro_rules! token_auth_ray {
    () => {
        "2.52"
    };
}

/// The first Ray with token authentication, and the oldest `rayVersion` KubeRay takes with
/// `authOptions` (see [`crate::auth`]).
pub const TOKEN_AUTH_SINCE: &str = concat!(crate::token_auth_ray!(), ".0");

/// Whether Ray `version` has token authentication.
pub fn supports_token(version: &str) -> bool {
    ray_at_least(version, TOKEN_AUTH_SINCE)
}

/// [`TOKEN_AUTH_SINCE`] as people name the release: `2.52`.
pub fn token_auth_ray() -> &'static str {
    crate::token_auth_ray!()
}

/// The images that have token authentication, for people: "an image with Ray 2.52 or newer
/// (NeMo-RL v0.6.0 and later)", from [`TOKEN_AUTH_SINCE`] and the first release that ships it.
pub fn token_auth_images() -> String {
    let ray = token_auth_ray();
    match NEMO_RL_RELEASES.iter().find(|r| supports_token(r.ray)) {
        Some(first) => format!("an image with Ray {ray} or newer (NeMo-RL {} and later)", first.tag),
        None => format!("an image with Ray {ray} or newer"),
    }
}

/// Whether Ray `version` (`2.46.0`, `2.52`, `2.9.3rc1`; a `dev` build counts as new) is at
/// least `needs`.
pub fn ray_at_least(version: &str, needs: &str) -> bool {
    let parse = |v: &str| -> [u64; 3] {
        let mut parts = v.split('.').map(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0));
        std::array::from_fn(|_| parts.next().unwrap_or(0))
    };
    version.contains("dev") || parse(version) >= parse(needs)
}

/// Repositories whose tags are the Ray version (`rayproject/ray:2.46.0-py312-gpu`).
const RAY_IMAGE_REPOSITORIES: &[&str] = &["rayproject/ray", "docker.io/rayproject/ray"];

/// The Ray version inside `image`, when gke-rl knows it.
pub fn ray_version_of_image(image: &str) -> Option<&str> {
    let named = without_digest(image);
    if let Some((_, version)) = known_images().find(|(known, _)| *known == named) {
        return Some(version);
    }
    let (repository, tag) = named.rsplit_once(':')?;
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
/// The label GKE gives a GPU node: its accelerator.
pub const ACCELERATOR_LABEL: &str = "cloud.google.com/gke-accelerator";
/// The label GKE gives a Spot node (`"true"`).
pub const SPOT_LABEL: &str = "cloud.google.com/gke-spot";
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

/// A GPU machine family: what gke-rl renders, patches and checks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuFamily {
    /// Its name: `A4`.
    pub name: &'static str,
    /// Compute Engine machine type.
    pub machine: &'static str,
    /// GKE accelerator label value of its nodes.
    pub accelerator: &'static str,
    /// The GPU.
    pub gpu: &'static str,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// Memory per GPU in GB, where a source states it.
    pub gpu_memory_gb: Option<u64>,
    /// Cluster Toolkit's GKE example blueprint for it, when there is one: its `blueprint_name`
    /// and its path in the toolkit.
    pub blueprint: Option<(&'static str, &'static str)>,
    /// Its GPU-to-GPU network across nodes when [`GPU_FABRICS`] has none for it, for people.
    pub unlisted_network: Option<&'static str>,
}

impl GpuFamily {
    /// Its GPU-to-GPU network across nodes, for people: from [`GPU_FABRICS`] where listed.
    pub fn network(&self) -> String {
        let Some(f) = gpu_fabric(self.machine) else { return self.unlisted_network.unwrap_or("not recorded").to_owned() };
        let wired = if f.is_wired() { "" } else { ", which gke-rl does not wire" };
        let how = match f.interconnect {
            Interconnect::Rdma => "RDMA over RoCE through gIB",
            Interconnect::Dranet => "RDMA as DRANET resource claims",
            Interconnect::Tcpxo => "GPUDirect-TCPXO",
        };
        format!("{how} on {} × {} Gb/s NICs{wired}", f.nics, f.nic_gbps)
    }
}

/// The extended resource of NVIDIA's GPUs in a pod's requests and limits.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// The label that puts a workload in a Kueue LocalQueue.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// The `blueprint_name` of the one blueprint gke-rl's patcher edits; every other family's is
/// named, not patched.
pub const PATCHED_BLUEPRINT: &str = "gke-a4";

/// The families (xpk's `gpu-system-characteristics.tsv` for machine, label and GPUs per node;
/// Cluster Toolkit's `examples/` blueprints; GPU memory from the GPU's name where it carries it,
/// and `cluster-toolkit.md` §4 for A4's 180 GB; the networks from [`GPU_FABRICS`] and xpk's
/// decorators). A4X's GPU memory is not in a source gke-rl cites.
pub const GPU_FAMILIES: &[GpuFamily] = &[
    GpuFamily {
        name: "A3 High",
        machine: "a3-highgpu-8g",
        accelerator: "nvidia-h100-80gb",
        gpu: "NVIDIA H100 80GB",
        gpus_per_node: 8,
        gpu_memory_gb: Some(80),
        blueprint: None,
        unlisted_network: Some("GPUDirect-TCPX on 4 NICs (vpc1…vpc4), which gke-rl does not wire"),
    },
    GpuFamily {
        name: "A3 Mega",
        machine: "a3-megagpu-8g",
        accelerator: "nvidia-h100-mega-80gb",
        gpu: "NVIDIA H100 80GB (Mega)",
        gpus_per_node: 8,
        gpu_memory_gb: Some(80),
        blueprint: Some(("gke-a3-mega", "examples/gke-a3-megagpu/gke-a3-megagpu.yaml")),
        unlisted_network: None,
    },
    GpuFamily {
        name: "A3 Ultra",
        machine: "a3-ultragpu-8g",
        accelerator: "nvidia-h200-141gb",
        gpu: "NVIDIA H200 141GB",
        gpus_per_node: 8,
        gpu_memory_gb: Some(141),
        blueprint: Some(("gke-a3-ultra", "examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml")),
        unlisted_network: None,
    },
    GpuFamily {
        name: "A4",
        machine: "a4-highgpu-8g",
        accelerator: "nvidia-b200",
        gpu: "NVIDIA B200",
        gpus_per_node: 8,
        gpu_memory_gb: Some(180),
        blueprint: Some(("gke-a4", "examples/gke-a4/gke-a4.yaml")),
        unlisted_network: None,
    },
    GpuFamily {
        name: "A4X",
        machine: "a4x-highgpu-4g",
        accelerator: "nvidia-gb200",
        gpu: "NVIDIA GB200",
        gpus_per_node: 4,
        gpu_memory_gb: None,
        blueprint: Some(("gke-a4x", "examples/gke-a4x/gke-a4x.yaml")),
        unlisted_network: None,
    },
];

/// The family of machine type `machine`, when gke-rl knows it.
pub fn gpu_family(machine: &str) -> Option<&'static GpuFamily> {
    GPU_FAMILIES.iter().find(|f| f.machine == machine)
}

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
/// Where the library path points: the NVIDIA driver's `lib64`, as Cluster Toolkit's A4 examples
/// set it (`examples/gke-a4/nccl-jobset-example.yaml`, v1.95.0). gIB's libraries are there too:
/// the blueprint's installer copies them in (`examples/gke-a4/nccl-installer.yaml.tftpl`:
/// `cp -r /var/lib/gib/lib64/. …/bin/nvidia/lib64`), so `/usr/local/gib/lib64` adds nothing.
pub const NVIDIA_LIBRARY_PATH: &str = "/usr/local/nvidia/lib64";

/// A GPU node's health gate: what a worker's init container asks `nvidia-smi` before Ray
/// starts, so that a node with a missing GPU or an uncorrectable memory error is named instead
/// of hanging or corrupting a run. It is Cluster Toolkit's `gpu-healthcheck` init container
/// (`examples/gke-a4/nccl-jobset-example.yaml`, v1.95.0), with the GPU count taken from
/// [`MACHINES`] rather than its literal 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuHealthCheck {
    /// The init container's name, which readiness reports a failure by.
    pub container: &'static str,
    /// `nvidia-smi` as GKE's device plugin mounts it into a container that requests GPUs.
    pub nvidia_smi: &'static str,
    /// The query that prints one line per GPU present: there must be at least the machine's GPUs.
    pub count_query: &'static str,
    /// The query whose value must be 0 on every GPU; anything else it prints for a GPU (`[N/A]`,
    /// `[Unknown Error]`) fails it too.
    pub zero_query: &'static str,
}

/// See [`GpuHealthCheck`].
pub const GPU_HEALTH_CHECK: GpuHealthCheck = GpuHealthCheck {
    container: "gpu-healthcheck",
    nvidia_smi: "/usr/local/nvidia/bin/nvidia-smi",
    count_query: "driver_version",
    zero_query: "ecc.errors.uncorrected.volatile.total",
};

/// How long a flex-start node runs at most: "Flex-start VMs run uninterrupted for up to seven
/// days" (Compute Engine's "About Flex-start VMs", docs.cloud.google.com/compute/docs/instances/about-flex-start-vms;
/// GKE's "About flex-start provisioning mode" gives the same seven days).
pub const FLEX_START_MAX_RUN_SECONDS: u64 = 7 * 24 * 3600;
/// What a flex-start run keeps back from [`FLEX_START_MAX_RUN_SECONDS`] for NeMo-RL's deadline:
/// its clock starts with the training loop, after the nodes came up, the image was pulled, Ray
/// started and the model was downloaded, converted and loaded, and the save it forces still has
/// to be written (NeMo-RL also keeps back its slowest step). Twelve hours holds all of that for
/// the catalogue's largest models on a fresh cluster; a run submitted to nodes that are already
/// days old has less, which validate cannot see.
pub const FLEX_START_SAVE_MARGIN_SECONDS: u64 = 12 * 3600;
/// NeMo-RL's checkpoint deadline key (`checkpointing.checkpoint_must_save_by`, read by
/// `TimeoutChecker` in `nemo_rl/utils/timer.py`: save, then stop training, once the slowest step
/// so far would end past it).
pub const CHECKPOINT_DEADLINE_KEY: &str = "checkpointing.checkpoint_must_save_by";

/// The deadline a flex-start run's NeMo-RL must save by, in seconds of training.
pub const fn flex_start_deadline_seconds() -> u64 {
    FLEX_START_MAX_RUN_SECONDS - FLEX_START_SAVE_MARGIN_SECONDS
}

/// `seconds` as NeMo-RL's `DD:HH:MM:SS` (`convert_to_seconds` in `nemo_rl/utils/timer.py`).
pub fn nemo_rl_duration(seconds: u64) -> String {
    format!("{:02}:{:02}:{:02}:{:02}", seconds / 86_400, seconds / 3600 % 24, seconds / 60 % 60, seconds % 60)
}

/// NeMo-RL's `DD:HH:MM:SS` in seconds, as `convert_to_seconds` reads it (four whole numbers).
pub fn nemo_rl_duration_seconds(text: &str) -> Option<u64> {
    let parts: Vec<u64> = text.split(':').map(|p| p.trim().parse().ok()).collect::<Option<_>>()?;
    let [days, hours, minutes, seconds] = parts[..] else { return None };
    days.checked_mul(86_400)?.checked_add(hours.checked_mul(3600)?)?.checked_add(minutes.checked_mul(60)?)?.checked_add(seconds)
}

/// A Managed Lustre performance tier and its capacity rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LustreTier {
    /// Throughput in MB/s per TiB: `per_unit_storage_throughput` of a numbered tier, the
    /// aggregate figure of the Dynamic tier.
    pub throughput: u32,
    /// The Dynamic tier, which the API chooses by `dynamic_tier_options.mode: DEFAULT_CACHE`
    /// with `per_unit_storage_throughput` unset or zero, not by a throughput.
    pub dynamic: bool,
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

/// Managed Lustre's "Performance tiers" and "Increase capacity" pages
/// (docs.cloud.google.com/managed-lustre/docs/performance-tiers, …/increase-capacity). The Dynamic tier: "an aggregate throughput of 25 MBps per TiB"
/// ("Create a Managed Lustre instance", …/create-instance), 472,000 to 84,016,000 GiB in steps of
/// 472,000 GiB; the docs give it one step size and no threshold, and no per-TiB IOPS figure.
/// `DynamicTierOptions.Mode` in the Managed Lustre v1 API says how it is chosen.
pub const LUSTRE_TIERS: &[LustreTier] = &[
    LustreTier {
        throughput: 1000,
        dynamic: false,
        min_gib: 9_000,
        max_gib: 10_008_000,
        small_step_gib: 9_000,
        threshold_gib: 1_530_000,
        large_step_gib: 72_000,
    },
    LustreTier {
        throughput: 500,
        dynamic: false,
        min_gib: 18_000,
        max_gib: 20_016_000,
        small_step_gib: 18_000,
        threshold_gib: 3_060_000,
        large_step_gib: 144_000,
    },
    LustreTier {
        throughput: 250,
        dynamic: false,
        min_gib: 36_000,
        max_gib: 40_032_000,
        small_step_gib: 36_000,
        threshold_gib: 6_120_000,
        large_step_gib: 288_000,
    },
    LustreTier {
        throughput: 125,
        dynamic: false,
        min_gib: 72_000,
        max_gib: 12_240_000,
        small_step_gib: 72_000,
        threshold_gib: 12_240_000,
        large_step_gib: 72_000,
    },
    LustreTier {
        throughput: 25,
        dynamic: true,
        min_gib: 472_000,
        max_gib: 84_016_000,
        small_step_gib: 472_000,
        threshold_gib: 84_016_000,
        large_step_gib: 472_000,
    },
];

/// The tier whose figure is `throughput`, when it exists: a numbered tier's
/// `per_unit_storage_throughput`, or the Dynamic tier's aggregate 25, as a deployment fitted to
/// an existing Dynamic-tier instance states it.
pub fn lustre_tier(throughput: u64) -> Option<&'static LustreTier> {
    LUSTRE_TIERS.iter().find(|t| u64::from(t.throughput) == throughput)
}

/// The Dynamic tier.
pub fn lustre_dynamic_tier() -> &'static LustreTier {
    LUSTRE_TIERS.iter().find(|t| t.dynamic).expect("the table has the Dynamic tier")
}

impl LustreTier {
    /// The step `capacity_gib` must be a multiple of.
    pub fn step_for(&self, capacity_gib: u64) -> u64 {
        if capacity_gib <= self.threshold_gib { self.small_step_gib } else { self.large_step_gib }
    }

    /// For people: "the 1000 MB/s/TiB tier", "the Dynamic tier (25 MB/s/TiB aggregate)".
    pub fn describe(&self) -> String {
        if self.dynamic {
            format!("the Dynamic tier ({} MB/s/TiB aggregate)", self.throughput)
        } else {
            format!("the {} MB/s/TiB tier", self.throughput)
        }
    }
}

/// A model's architecture as its `config.json` states it, and its parameter count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelFacts {
    /// The Hugging Face repository `policy.model_name` names.
    pub name: &'static str,
    /// The repository whose config the facts come from: the model's own, or its base model's
    /// (same layers, heads and widths) when the Instruct config could not be cited.
    pub config_of: &'static str,
    /// `num_hidden_layers`.
    pub layers: u64,
    /// `num_attention_heads`.
    pub attention_heads: u64,
    /// `num_key_value_heads`.
    pub kv_heads: u64,
    /// `head_dim` (else hidden / heads).
    pub head_dim: u64,
    /// `hidden_size`.
    pub hidden: u64,
    /// `intermediate_size`.
    pub intermediate: u64,
    /// `vocab_size`.
    pub vocab: u64,
    /// `max_position_embeddings`.
    pub max_positions: u64,
    /// `torch_dtype`.
    pub dtype: &'static str,
    /// `tie_word_embeddings`.
    pub tied_embeddings: bool,
    /// `num_experts` (0: dense).
    pub experts: u64,
    /// `num_experts_per_tok` (0: dense).
    pub experts_per_token: u64,
    /// `moe_intermediate_size` (0: dense).
    pub moe_intermediate: u64,
    /// Every parameter, derived from the above by the family's layout (`cargo xtask codegen`).
    /// The fact file and the row's citation are the comment above each entry of the table.
    pub parameters: u64,
}

/// The model catalogue: every model whose architecture gke-rl can cite.
pub use models::MODELS;

/// The model `name` (as `policy.model_name` gives it), when gke-rl knows it.
pub fn model(name: &str) -> Option<&'static ModelFacts> {
    MODELS.iter().find(|m| m.name == name)
}

/// Bytes per parameter of a NeMo-RL v0.4.0 Megatron checkpoint with Adam: bf16 weights plus
/// fp32 master weights and two moments (NVIDIA/Megatron-LM `megatron/core/optimizer/distrib_optimizer.py`
/// `sharded_param_state_fs_model_space`, whose `OptimizerConfig` keeps them in fp32).
pub const CHECKPOINT_BYTES_PER_PARAMETER: u64 = 14;
/// How a NeMo-RL release's policy writes a checkpoint: what the storage check's save pass copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SaveWriter {
    /// The release.
    pub release: &'static str,
    /// The policy's backend: `megatron` (`torch_dist`) or `dtensor` (the default v2 worker).
    pub backend: &'static str,
    /// Writer threads a rank (`FileSystemWriter`'s `thread_count`).
    pub threads: u32,
    /// Whether the save is `dcp.async_save`: training waits only for the staging.
    pub asynchronous: bool,
    /// Where upstream sets it up.
    pub upstream: &'static str,
}

/// Each release's writers, per backend (NVIDIA-NeMo/RL at each tag, and the Automodel,
/// Megatron-Bridge and Megatron-LM commits it pins).
pub const SAVE_WRITERS: &[SaveWriter] = &[
    SaveWriter {
        release: "v0.4.0",
        backend: "megatron",
        threads: 2,
        asynchronous: false,
        upstream: "nemo_rl/models/policy/megatron_policy_worker.py (async_save=False); Megatron-LM af73aa2 \
                   megatron/core/dist_checkpointing/strategies/torch.py (TorchDistSaveShardedStrategy thread_count=2)",
    },
    SaveWriter {
        release: "v0.4.0",
        backend: "dtensor",
        threads: 1,
        asynchronous: false,
        upstream: "nemo_rl/utils/automodel_checkpoint.py; Automodel 277a8a8 checkpoint/checkpointing.py (dcp.save)",
    },
    SaveWriter {
        release: "v0.5.0",
        backend: "megatron",
        threads: 2,
        asynchronous: false,
        upstream: "nemo_rl/models/policy/workers/megatron_policy_worker.py (async_save=False); Megatron-LM torch.py thread_count=2",
    },
    SaveWriter {
        release: "v0.5.0",
        backend: "dtensor",
        threads: 1,
        asynchronous: false,
        upstream: "nemo_rl/utils/automodel_checkpoint.py (is_async defaults to False); Automodel 1d42deb checkpointing.py (dcp.save)",
    },
    SaveWriter {
        release: "v0.6.0",
        backend: "megatron",
        threads: 1,
        asynchronous: false,
        upstream: "nemo_rl/models/megatron/setup.py (async_save=False); Megatron-Bridge 95e5f38 config.py (storage_writers_per_rank=1)",
    },
    SaveWriter {
        release: "v0.6.0",
        backend: "dtensor",
        threads: 1,
        asynchronous: true,
        upstream: "nemo_rl/models/policy/workers/dtensor_policy_worker_v2.py (is_async: True); Automodel 92635e7 checkpointing.py (dcp.async_save)",
    },
    SaveWriter {
        release: "v0.7.0",
        backend: "megatron",
        threads: 1,
        asynchronous: false,
        upstream: "nemo_rl/models/megatron/setup.py (async_save=False); Megatron-Bridge config.py (storage_writers_per_rank=1)",
    },
    SaveWriter {
        release: "v0.7.0",
        backend: "dtensor",
        threads: 1,
        asynchronous: true,
        upstream: "nemo_rl/models/policy/workers/dtensor_policy_worker_v2.py (is_async: True); Automodel 24b47e8 checkpointing.py (dcp.async_save)",
    },
];

/// The writer of `release`'s `backend`; the codelab's release where the image's is unknown.
pub fn save_writer(release: Option<&str>, backend: &str) -> &'static SaveWriter {
    let release = release.unwrap_or(CODELAB_NEMO_RL.tag);
    SAVE_WRITERS
        .iter()
        .find(|w| w.release == release && w.backend == backend)
        .or_else(|| SAVE_WRITERS.iter().find(|w| w.release == CODELAB_NEMO_RL.tag && w.backend == backend))
        .expect("every backend has a writer in the codelab's release")
}

/// Bytes per parameter of one bf16 copy of the model (the HF download, the converted copy).
pub const BF16_BYTES_PER_PARAMETER: u64 = 2;

/// The file system name of a Lustre instance gke-rl creates: the gke-a4 blueprint's
/// `remote_mount` (examples/gke-a4/gke-a4.yaml, v1.95.0); at most 8 letters and digits.
pub const LUSTRE_FILESYSTEM: &str = "lustrefs";

/// Managed Lustre's performance degrades once more than this share of its capacity is used
/// ("Performance considerations", docs.cloud.google.com/managed-lustre/docs/performance).
pub const LUSTRE_FULL_FRACTION: f64 = 0.9;

/// Seconds a rank of NeMo-RL's Megatron policy waits in a collective (a save's closing barrier
/// among them) before NCCL ends the job: PyTorch's NCCL default of 10 minutes
/// (pytorch/pytorch `torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp`,
/// `kProcessGroupNCCLDefaultTimeout`). NVIDIA-NeMo/RL calls `init_process_group("nccl")` with no
/// timeout (`nemo_rl/models/megatron/setup.py` `setup_distributed` in v0.6.0 and v0.7.0,
/// `nemo_rl/models/policy/megatron_policy_worker.py` in v0.4.0 and v0.5.0), and Megatron-Bridge's
/// `DistributedInitConfig.distributed_timeout_minutes`, 10, bounds the parallel groups. No key
/// of NeMo-RL's config and no variable changes it.
pub const NEMO_RL_COLLECTIVE_TIMEOUT_S: u64 = 600;

/// NeMo-RL's key for frequent crash-recovery saves, beside the metric-ranked `save_period` ones.
pub const FT_SAVE_PERIOD_KEY: &str = "checkpointing.ft_save_period";

/// A checkpoint key newer than some release, and the first release that has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointKey {
    /// The key, as an override names it.
    pub key: &'static str,
    /// The first release with it; `None` while only NeMo-RL's main branch has it.
    pub since: Option<&'static str>,
    /// Where it came from upstream.
    pub upstream: &'static str,
    /// What it does to saves.
    pub effect: &'static str,
}

/// Checkpoint keys NeMo-RL added after v0.7.0 (NVIDIA-NeMo/RL main at 7ea279a, 2026-08-22:
/// `nemo_rl/algorithms/grpo.py`, `nemo_rl/utils/checkpoint.py`). Their saves land in the same
/// `tmp_step_N` and `step_N` folders as every other save.
pub const LATER_CHECKPOINT_KEYS: &[CheckpointKey] = &[
    CheckpointKey {
        key: "policy.megatron_cfg.checkpoint.async_save",
        since: None,
        upstream: "NVIDIA-NeMo/RL #2828, 718ee57fc (2026-07-10)",
        effect: "writes in the background: the `checkpointing` timer covers the copy off the GPUs, and `step_N` appears once the writes are done",
    },
    CheckpointKey {
        key: FT_SAVE_PERIOD_KEY,
        since: None,
        upstream: "NVIDIA-NeMo/RL #3157, d17d27d2b (2026-07-14)",
        effect: "saves for crash recovery every this many steps, beside `save_period`",
    },
    CheckpointKey {
        key: "checkpointing.ft_keep_latest_k",
        since: None,
        upstream: "NVIDIA-NeMo/RL #3157, d17d27d2b (2026-07-14)",
        effect: "keeps the newest k checkpoints for crash recovery, beside `keep_top_k`",
    },
];

/// Whether the release `tag` has `key` of [`LATER_CHECKPOINT_KEYS`].
pub fn nemo_rl_has_key(tag: &str, key: &str) -> bool {
    LATER_CHECKPOINT_KEYS
        .iter()
        .filter(|k| k.key == key)
        .any(|k| k.since.and_then(release_version).zip(release_version(tag)).is_some_and(|(since, tag)| tag >= since))
}

/// The release whose data sets [`GRPO_DATASETS`] lists; later releases accept others
/// (NVIDIA-NeMo/RL v0.7.0 `nemo_rl/data/datasets/response_datasets/__init__.py` has a registry).
pub const GRPO_DATASETS_OF: &str = "v0.4.0";

/// `data.dataset_name` values NeMo-RL v0.4.0's GRPO math launcher accepts (NVIDIA-NeMo/RL v0.4.0
/// `nemo_rl/data/datasets/response_datasets/__init__.py`), with the extra keys each needs.
pub const GRPO_DATASETS: &[(&str, &[&str])] =
    &[("OpenMathInstruct-2", &[]), ("DeepScaler", &[]), ("DAPOMath17K", &[]), ("ResponseDataset", &["data.train_data_path"])];

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

impl ValueType {
    /// The type its variant's name names: how `codegen` writes it.
    fn from_name(name: &str) -> Option<Self> {
        use ValueType::*;
        Some(match name {
            "Int" => Int,
            "Float" => Float,
            "Bool" => Bool,
            "Str" => Str,
            "Null" => Null,
            "List" => List,
            "Map" => Map,
            _ => return None,
        })
    }
}

/// Where NeMo-RL lives in its image: the job script runs there.
pub const NEMO_RL_DIR: &str = "/opt/nemo-rl";

/// One of NeMo-RL's converters from a checkpoint's policy weights to a Hugging Face model, in
/// `examples/converters/` of every release gke-rl knows (NVIDIA-NeMo/RL v0.4.0 to v0.7.0: the
/// same scripts and flags in each; v0.6.0 adds an optional `--hf-model-name` to Megatron's, which
/// gke-rl leaves to the step's `config.yaml`). `tests/fixtures/upstream/nemo-rl/v*/examples/converters/`
/// holds each release's scripts, which the tests hold these flags to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HfConverter {
    /// The format of the weights it reads, as gke-rl's checkpoint lister names it.
    pub format: &'static str,
    /// The script, relative to NeMo-RL's folder in the image.
    pub script: &'static str,
    /// The `uv run --extra` it needs: the Megatron one's docstring says "this script requires
    /// mcore. Make sure to launch with the mcore extra".
    pub extra: Option<&'static str>,
    /// The flag that names the weights' folder.
    pub weights_flag: &'static str,
}

/// The flags every converter takes beside its weights': the step's `config.yaml`, and where the
/// model goes.
pub const HF_CONVERTER_FLAGS: [&str; 2] = ["--config", "--hf-ckpt-path"];

/// NeMo-RL's converters, by the format of the weights they read.
pub const HF_CONVERTERS: [HfConverter; 2] = [
    HfConverter {
        format: "megatron",
        script: "examples/converters/convert_megatron_to_hf.py",
        extra: Some("mcore"),
        weights_flag: "--megatron-ckpt-path",
    },
    HfConverter { format: "dcp", script: "examples/converters/convert_dcp_to_hf.py", extra: None, weights_flag: "--dcp-ckpt-path" },
];

/// The converter of weights in `format`, if NeMo-RL has one.
pub fn hf_converter(format: &str) -> Option<&'static HfConverter> {
    HF_CONVERTERS.iter().find(|c| c.format == format)
}

impl HfConverter {
    /// The shell line that converts the step at `step` (its weights at `weights` below it) into
    /// `out`, run in NeMo-RL's folder with its `uv` as the job script runs the training; every
    /// path quoted for POSIX sh.
    pub fn command(&self, step: &str, weights: &str, out: &str) -> String {
        use crate::quote::sh;
        let extra = self.extra.map_or_else(String::new, |extra| format!(" --extra {extra}"));
        let step = step.trim_end_matches('/');
        let [config_flag, out_flag] = HF_CONVERTER_FLAGS;
        format!(
            "cd {NEMO_RL_DIR} && exec uv run{extra} python {script} {config_flag} {config} {weights_flag} {weights} {out_flag} {out}",
            script = self.script,
            config = sh(&format!("{step}/config.yaml")),
            weights_flag = self.weights_flag,
            weights = sh(&format!("{step}/{weights}")),
            out = sh(out),
        )
    }
}

/// Where a release keeps its recipes, relative to its folder in the image.
pub const RECIPES_DIR: &str = "examples/configs/";

/// A recipe's path under [`RECIPES_DIR`], given relative to NeMo-RL's folder in the image (where
/// the job script runs it) or absolute inside it.
fn recipe_name(path: &str) -> Option<&str> {
    path.strip_prefix(NEMO_RL_DIR).and_then(|p| p.strip_prefix('/')).unwrap_or(path).strip_prefix(RECIPES_DIR)
}

/// One line of the generated `RECIPE_KEYS`.
struct RecipeRow {
    key: &'static str,
    kind: ValueType,
    releases: u16,
    value: &'static str,
}

impl RecipeRow {
    fn read(line: &'static str) -> Option<Self> {
        let mut fields = line.splitn(4, ' ');
        Some(RecipeRow {
            key: fields.next()?,
            kind: ValueType::from_name(fields.next()?)?,
            releases: u16::from_str_radix(fields.next()?, 16).ok()?,
            value: fields.next().unwrap_or_default(),
        })
    }
}

/// The lines of the generated `RECIPE_KEYS` whose key is `key`, read.
fn recipe_rows_of(key: &str) -> impl Iterator<Item = RecipeRow> {
    nemo_rl::RECIPE_KEYS
        .lines()
        .skip_while(move |line| line.split(' ').next().is_some_and(|k| k < key))
        .take_while(move |line| line.split(' ').next() == Some(key))
        .filter_map(RecipeRow::read)
}

/// Every row of the generated `RECIPE_KEYS`, sorted by key.
fn recipe_rows() -> impl Iterator<Item = RecipeRow> {
    nemo_rl::RECIPE_KEYS.lines().filter_map(RecipeRow::read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nemo_rl_v0_4_0_ships_ray_2_46_0_not_the_codelab_2_54_0() {
        assert_eq!(ray_version_of_image("nvcr.io/nvidia/nemo-rl:v0.4.0"), Some("2.46.0"));
    }

    #[test]
    fn every_line_of_the_recipe_key_table_reads_in_key_order() {
        let lines: Vec<&str> = nemo_rl::RECIPE_KEYS.lines().filter(|line| !line.is_empty()).collect();
        let rows: Vec<RecipeRow> = recipe_rows().collect();
        assert_eq!(rows.len(), lines.len());
        assert!(rows.windows(2).all(|pair| pair[0].key <= pair[1].key), "sorted, so a lookup stops at the first greater key");
        let all = (1u32 << NEMO_RL_RELEASES.len()) - 1;
        assert!(rows.iter().all(|row| row.releases != 0 && u32::from(row.releases) & !all == 0));
        let save_period = CODELAB_NEMO_RL.recipe_key("checkpointing.save_period");
        assert_eq!(save_period, Some((ValueType::Int, "10")));
        let map = CODELAB_NEMO_RL.recipe_key("checkpointing");
        assert_eq!(map, Some((ValueType::Map, "")));
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
        for (image, version) in known_images() {
            assert_eq!(ray_version_of_image(image), Some(version));
        }
    }

    #[test]
    fn lustre_steps_follow_the_tier_table() {
        let tier = lustre_tier(1000).unwrap();
        assert_eq!(tier.step_for(9_000), 9_000);
        assert_eq!(tier.step_for(1_602_000), 72_000);
        assert!(LUSTRE_TIERS.iter().all(|t| t.min_gib % t.small_step_gib == 0 && t.max_gib % t.large_step_gib == 0));
        let dynamic = lustre_dynamic_tier();
        assert_eq!((dynamic.throughput, dynamic.min_gib, dynamic.max_gib), (25, 472_000, 84_016_000));
        assert_eq!((dynamic.step_for(472_000), dynamic.step_for(84_016_000)), (472_000, 472_000));
        assert_eq!(lustre_tier(25), Some(dynamic), "the Dynamic tier's figure, as a fitted deployment states it");
    }

    #[test]
    fn the_flex_start_deadline_is_nemo_rls_format_inside_seven_days() {
        assert_eq!(nemo_rl_duration(flex_start_deadline_seconds()), "06:12:00:00");
        assert_eq!(nemo_rl_duration(3_723), "00:01:02:03");
        assert_eq!(nemo_rl_duration_seconds("06:12:00:00"), Some(flex_start_deadline_seconds()));
        assert_eq!(nemo_rl_duration_seconds("00:03:45:00"), Some(13_500), "NeMo-RL's own default");
        assert_eq!(nemo_rl_duration_seconds("3:45:00"), None);
        assert_eq!(nemo_rl_duration_seconds("a:b:c:d"), None);
        for release in NEMO_RL_RELEASES {
            assert!(release.recipe_key(CHECKPOINT_DEADLINE_KEY).is_some(), "{}", release.tag);
        }
    }

    #[test]
    fn the_library_path_is_the_drivers_lib64() {
        assert_eq!(NVIDIA_LIBRARY_PATH, format!("{NVIDIA_MOUNT_PATH}/lib64"));
        assert!(GPU_HEALTH_CHECK.nvidia_smi.starts_with(NVIDIA_MOUNT_PATH));
    }

    #[test]
    fn the_codelab_recipe_keys_are_known() {
        let find = |k: &str| CODELAB_NEMO_RL.recipe_key(k);
        assert_eq!(find("grpo.max_num_steps"), Some((ValueType::Int, "1000000")));
        assert_eq!(find("policy.megatron_cfg.tensor_model_parallel_size"), Some((ValueType::Int, "4")));
        assert_eq!(find("checkpointing.metric_name"), Some((ValueType::Str, "val:accuracy")));
        assert_eq!(find("policy.megatron_cfg").map(|(t, _)| t), Some(ValueType::Map));
        assert_eq!(find("policy.megatron_cfg.foo"), None);
    }

    #[test]
    fn moved_keys_are_in_the_releases_on_either_side() {
        for (since, old, new) in MOVED_KEYS {
            let at = NEMO_RL_RELEASES.iter().position(|r| r.tag == *since).unwrap();
            let (before, after) = (&NEMO_RL_RELEASES[at - 1], &NEMO_RL_RELEASES[at]);
            assert!(before.recipe_key(old).is_some() && after.recipe_key(old).is_none(), "{old} before {since}");
            assert!(after.recipe_key(new).is_some(), "{new} from {since}");
        }
        let v6 = nemo_rl_release("nvcr.io/nvidia/nemo-rl:v0.6.0").unwrap();
        assert_eq!(v6.missing_key("data.dataset_name").unwrap(), "NeMo-RL v0.6.0 moved `data.dataset_name` to `data.train.dataset_name`");
        assert_eq!(
            CODELAB_NEMO_RL.missing_key("data.train.dataset_name").unwrap(),
            "`data.train.dataset_name` is NeMo-RL v0.6.0's; v0.4.0 calls it `data.dataset_name`"
        );
        assert_eq!(v6.missing_key("no.such.key"), None);
        assert!(v6.recipe_key(v6.dataset_key).is_some() && CODELAB_NEMO_RL.recipe_key(CODELAB_NEMO_RL.dataset_key).is_some());
    }

    /// The keys NeMo-RL main added after v0.7.0 are in no release's recipe yet, and an override
    /// of one on a release says where it comes from.
    #[test]
    fn later_checkpoint_keys_are_known_and_in_no_release_yet() {
        let newest = newest_nemo_rl();
        for later in LATER_CHECKPOINT_KEYS {
            assert!(NEMO_RL_RELEASES.iter().all(|r| r.recipe_key(later.key).is_none()), "{} is in a release's recipe", later.key);
            assert!(!nemo_rl_has_key(newest.tag, later.key), "{}: set `since` to the release that has it", later.key);
        }
        assert_eq!(
            newest.missing_key(FT_SAVE_PERIOD_KEY).unwrap(),
            "`checkpointing.ft_save_period` came with NeMo-RL's main branch after v0.7.0 (NVIDIA-NeMo/RL #3157, d17d27d2b (2026-07-14): it \
             saves for crash recovery every this many steps, beside `save_period`), not v0.7.0"
        );
    }

    #[test]
    fn every_fabric_belongs_to_its_family() {
        for fabric in GPU_FABRICS {
            let family = gpu_family(fabric.machine).unwrap_or_else(|| panic!("{} has no family", fabric.machine));
            assert_eq!(family.accelerator, fabric.accelerator, "{}", family.name);
        }
        assert_eq!(gpu_family("a4-highgpu-8g").unwrap().network(), "RDMA over RoCE through gIB on 8 × 400 Gb/s NICs");
        assert!(gpu_family("a3-highgpu-8g").unwrap().network().starts_with("GPUDirect-TCPX on 4 NICs"));
    }

    #[test]
    fn every_release_image_has_its_ray() {
        for release in NEMO_RL_RELEASES {
            assert!(ray_version_of_image(release.image).is_some(), "{}", release.tag);
            assert!(release.launchers.contains(&release.launcher));
        }
    }

    #[test]
    fn ray_versions_compare_by_their_numbers() {
        assert!(ray_at_least("2.52", "2.52.0") && ray_at_least("2.54.0", "2.52.0") && ray_at_least("3.0.0.dev0", "2.52.0"));
        assert!(!ray_at_least("2.46.0", "2.52.0") && !ray_at_least("2.9.3rc1", "2.10.0"));
    }

    #[test]
    fn ray_images_carry_their_version_in_the_tag() {
        assert_eq!(ray_version_of_image("rayproject/ray:2.46.0-py312-gpu"), Some("2.46.0"));
        assert_eq!(ray_version_of_image("rayproject/ray:2.54.0"), Some("2.54.0"));
        assert_eq!(ray_version_of_image("rayproject/ray:nightly"), None);
        assert_eq!(ray_version_of_image("example.com/my/image:1.0"), None);
    }
}
