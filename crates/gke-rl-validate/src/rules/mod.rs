//! The rule registry: every rule's stable code, default severity and explanation, and the
//! checks that emit them.

mod fabric;
mod infra;
mod kueue;
mod model;
mod nemo;
mod numbers;
mod ray;
mod rayjob;
mod secrets;
mod storage;

use super::facts::{self, Facts};
use super::{Sink, Views};
use gke_rl::ArtifactKind;
use gke_rl::diagnostic::{Fix, Severity};

/// A rule: what it checks and how bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable kebab-case identifier.
    pub code: &'static str,
    /// Severity of its findings.
    pub severity: Severity,
    /// The kinds of file it reads, any of them (none: every file).
    pub reads: &'static [ArtifactKind],
}

impl Rule {
    /// What it checks and why it matters. Kept out of the rule itself, so that a program that
    /// never explains (the browser's) carries none of the text.
    pub fn explanation(&self) -> &'static str {
        EXPLANATIONS.iter().find(|(code, _)| *code == self.code).map_or("", |(_, text)| text)
    }
}

macro_rules! rules {
    ($($name:ident = $code:literal, $severity:ident, [$($reads:ident),*], $explanation:expr;)*) => {
        $(
            #[doc = $explanation]
            pub const $name: Rule = Rule { code: $code, severity: Severity::$severity, reads: &[$(ArtifactKind::$reads),*] };
        )*
        /// Every rule, in documentation order.
        pub const RULES: &[Rule] = &[$($name),*];
        /// Each rule's explanation, by code.
        const EXPLANATIONS: &[(&str, &str)] = &[$(($code, $explanation)),*];
    };
}

rules! {
    SYNTAX = "syntax", Error, [], "The file cannot be parsed as what its name and content say it is (YAML, JSON, gitignore patterns, or the env.sh subset).";
    FILE_TOO_LARGE = "file-too-large", Error, [], "Files over 10 MiB are not read: no artifact of a deployment is that large.";
    PLACEHOLDER = "placeholder", Error, [], "A template placeholder (`{{…}}`, `<YOUR-…>`) was left in a value; the tools that read it would use it literally.";
    NUMBER_INVALID = "number-invalid", Error, [EnvSh, RayCluster, DeploymentFile, Blueprint], "A numeric field is not a whole number in its range: negative, text, a fraction, or larger than the field holds (Kubernetes' int32 fields stop at 2147483647).";
    RAY_VERSION_MISMATCH = "ray-version-mismatch", Error, [RayCluster], "`rayVersion` differs from the Ray inside the image. KubeRay 1.6+ chooses the pods' health probes by `rayVersion`; an image with an older Ray never becomes Ready.";
    RAY_UNKNOWN_IMAGE = "ray-unknown-image", Warning, [RayCluster], "gke-rl does not know which Ray the image ships, so it cannot check `rayVersion`.";
    RAY_AUTH_OFF = "ray-auth-off", Warning, [RayCluster], concat!("The cluster's Ray (", gke_rl::token_auth_ray!(), " or newer) has token authentication, but the RayCluster leaves it off: every pod that reaches the head's port 8265 can run commands with the pods' Secrets.");
    RAY_AUTH_UNSUPPORTED = "ray-auth-unsupported", Error, [RayCluster], concat!("`authOptions.mode: token` needs Ray ", gke_rl::token_auth_ray!(), " or newer (and `rayVersion` set): KubeRay refuses the RayCluster otherwise and creates no pods.");
    RAYCLUSTER_NAME = "raycluster-name", Error, [RayCluster], "KubeRay rejects RayCluster names over 53 characters (RayJob names over 47: its cluster adds six) or that are not DNS-1035 labels, at reconcile time, as an event.";
    RAY_START_PARAM_NOT_STRING = "ray-start-param-not-string", Error, [RayCluster], "`rayStartParams` values must be strings; the API server rejects `num-gpus: 8` and accepts `num-gpus: \"8\"`.";
    HEAD_DASHBOARD_PORT = "head-dashboard-port-missing", Error, [RayCluster], "The head container lists ports but not 8265, so the head service exposes no dashboard and no Jobs API.";
    WORKER_REPLICAS_RANGE = "worker-replicas-out-of-range", Error, [RayCluster], "A worker group's `replicas` is outside [`minReplicas`, `maxReplicas`], or min exceeds max.";
    WORKER_REPLICAS_NODES = "worker-replicas-node-count", Error, [RayCluster], "The GPU worker group's replicas differ from the number of GPU nodes: workers stay Pending or nodes sit idle.";
    GPU_LIMIT = "gpu-limit-mismatch", Error, [RayCluster], "A worker's `nvidia.com/gpu` limit differs from the GPUs per node of the machine type.";
    RESOURCES_EXCEED_NODE = "resources-exceed-node", Error, [RayCluster], "Pod CPU or memory requests exceed what a node can allocate, alone or with the worker that shares its node.";
    HEAD_ON_SPOT = "head-on-spot", Warning, [RayCluster], "The Ray head runs on Spot nodes (the codelab puts it on the GPU nodes, which are Spot): a preemption of its node ends the GCS, the dashboard and the job's driver, so the whole Ray cluster and the run start over.";
    GPU_TOLERATION = "gpu-toleration-missing", Error, [RayCluster], "A pod selects GPU nodes but neither requests a GPU nor tolerates the `nvidia.com/gpu` taint GKE puts on them, so it never schedules.";
    VOLUME_DUPLICATE_NAME = "volume-duplicate-name", Error, [RayCluster], "Two volumes of a pod have the same name; the API server rejects the pod.";
    MOUNT_DUPLICATE_PATH = "mount-duplicate-path", Error, [RayCluster], "Two mounts of a container use the same path; the API server rejects the pod.";
    MOUNT_UNKNOWN_VOLUME = "mount-unknown-volume", Error, [RayCluster], "A container mounts a volume the pod does not define; pod creation fails.";
    DEV_SHM_TWICE = "dev-shm-mounted-twice", Error, [RayCluster], "`/dev/shm` is mounted twice in a container.";
    FABRIC_INTERFACES = "fabric-interfaces-missing", Warning, [RayCluster], "A GPU worker on a machine type with an RDMA fabric (A4, A3 Ultra) does not attach the RDMA networks (`networking.gke.io/interfaces`): every collective across nodes goes over TCP on one NIC.";
    FABRIC_GIB = "fabric-gib-missing", Warning, [RayCluster], "A GPU worker on an RDMA machine type lacks part of Google's gIB NCCL plugin: the node's /home/kubernetes/bin/gib mounted at /usr/local/gib, /usr/local/nvidia/lib64 (where gIB's installer copies its libraries) on LD_LIBRARY_PATH, and set_nccl_env.sh sourced before `ray start`. NCCL then falls back to sockets.";
    FABRIC_NCCL_NET = "fabric-nccl-net", Warning, [RayCluster, RuntimeEnv], "`NCCL_NET` names a transport other than gIB on an RDMA machine type, so NCCL never uses the fabric (gIB is the one that fails loudly instead of falling back).";
    FABRIC_IB_DISABLED = "fabric-ib-disabled", Warning, [RayCluster, RuntimeEnv], "`NCCL_IB_DISABLE=1` on an RDMA machine type turns the RDMA NICs off for NCCL: collectives go over TCP.";
    FABRIC_UNKNOWN_NETWORK = "fabric-unknown-network", Error, [RayCluster], "The pod attaches a GKE network the blueprint does not create; GKE cannot schedule the pod.";
    FABRIC_NOT_WIRED = "fabric-not-wired", Info, [RayCluster], "The machine type has a GPU fabric gke-rl does not wire or check yet (A4X's DRANET claims, A3 Mega's GPUDirect-TCPXO).";
    PVC_NAME_MISMATCH = "pvc-name-mismatch", Error, [RayCluster], "The RayCluster claims a PVC other than the one the blueprint creates; pods stay Pending.";
    PVC_NAMESPACE_MISMATCH = "pvc-namespace-mismatch", Error, [RayCluster], "The RayCluster is in another namespace than the one the blueprint creates the Lustre PVC in; pods can only claim PVCs of their own namespace, so they stay Pending.";
    LUSTRE_TIER_UNKNOWN = "lustre-tier-unknown", Error, [EnvSh, DeploymentFile, Blueprint], "Managed Lustre's numbered tiers are 125, 250, 500 and 1000 MB/s per TiB (`per_unit_storage_throughput`); its Dynamic tier (25 MB/s per TiB aggregate, 472,000 GiB steps) has no throughput setting and is chosen by `enable_dynamic_tier` on the managed-lustre module.";
    LUSTRE_CAPACITY_STEP = "lustre-capacity-step", Error, [EnvSh, DeploymentFile, Blueprint], "Managed Lustre capacity must be a multiple of its tier's step.";
    LUSTRE_CAPACITY_RANGE = "lustre-capacity-range", Error, [EnvSh, DeploymentFile, Blueprint], "Managed Lustre capacity is outside its tier's minimum and maximum.";
    LUSTRE_TOO_SMALL = "lustre-too-small", Error, [JobScript], "The run's peak footprint — (keep_top_k + 1) checkpoints at 14 bytes per parameter plus the HF download and the converted copy — does not fit in the Lustre instance.";
    CHECKPOINT_SAVE_TIME = "checkpoint-save-time", Info, [JobScript], "Estimated time of one synchronous checkpoint save at the instance's aggregate throughput (capacity × tier).";
    CHECKPOINT_SAVE_TIMEOUT = "checkpoint-save-timeout", Error, [JobScript], "One checkpoint save at the instance's aggregate throughput (capacity × tier) takes longer than the 10 minutes NeMo-RL's Megatron ranks wait at a collective (PyTorch's NCCL default, which no NeMo-RL key changes): the save ends at a barrier where every rank waits for the slowest share, and the longer the save, the less imbalance it takes for that wait to end the run.";
    CHECKPOINT_SAVE_PERIOD = "checkpoint-save-period", Info, [JobScript], "`checkpointing.save_period` is more than twice or less than half the period that loses the least time, Young's √(2 · save time · time between preemptions), from the tier's save time, `job.expected_step_seconds` and `job.mean_minutes_between_preemptions`.";
    CHECKPOINT_DEADLINE = "checkpoint-deadline", Warning, [JobScript], "`grpo.max_num_steps` × the measured step time (env.sh's EXPECTED_STEP_SECONDS, the config's `job.expected_step_seconds`: gke-rl has no estimate of its own) runs past `checkpointing.checkpoint_must_save_by`, which flex-start sets 12 hours inside its nodes' 7 days: NeMo-RL then saves and stops short of its steps.";
    PATH_OUTSIDE_LUSTRE = "path-outside-lustre", Warning, [JobScript, RuntimeEnv, RayCluster], "A path the job writes or reads at scale (`checkpoint_dir`, `logger.log_dir`, `HF_HOME` and the other download caches) is outside the Lustre mount: checkpoints are lost with a preempted node, and each node downloads the model again.";
    WORLD_SIZE_PARALLELISM = "world-size-parallelism", Error, [JobScript], "nodes × GPUs per node is not a multiple of TP × PP × CP; NeMo-RL stops before training.";
    ROLLOUT_BATCH = "rollout-batch-multiple", Error, [JobScript], "prompts × generations per step is not a multiple of `train_global_batch_size`.";
    GLOBAL_BATCH_DATA_PARALLEL = "global-batch-data-parallel", Error, [JobScript], "`train_global_batch_size` is not divisible by data-parallel size × micro batch.";
    CLUSTER_SIZE_MISMATCH = "cluster-size-mismatch", Error, [JobScript], "`cluster.num_nodes` or `cluster.gpus_per_node` differs from the RayCluster.";
    SAVE_PERIOD = "save-period-invalid", Error, [JobScript], "`checkpointing.save_period` must be at least 1 (0 divides by zero in NeMo-RL).";
    METRIC_NAME = "metric-name-invalid", Error, [JobScript], "`checkpointing.metric_name` must be null or start with `val:` or `train:`.";
    DATASET_UNKNOWN = "dataset-unknown", Error, [JobScript], "`data.dataset_name` is not a dataset NeMo-RL's GRPO launcher knows, or lacks the keys it needs.";
    OVERRIDE_NO_OP = "override-no-op", Warning, [JobScript], "The override sets a key NeMo-RL never reads.";
    OVERRIDE_UNKNOWN_KEY = "override-unknown-key", Error, [JobScript], "The override names a key the recipe does not have; Hydra rejects it unless it is added with `+`.";
    OVERRIDE_QUOTED = "override-quoted-value", Error, [JobScript], "A quoted number or boolean reaches NeMo-RL as a string and fails much later.";
    RECIPE_MISSING = "recipe-missing", Error, [JobScript], "The launch's `--config` names a recipe under `examples/configs/` that the image's NeMo-RL release does not ship: the job fails at its start.";
    RECIPE_UNKNOWN = "recipe-unknown", Info, [JobScript], "gke-rl does not know this recipe's keys, so overrides are not checked against it.";
    MODEL_UNKNOWN = "model-unknown", Info, [JobScript], "`policy.model_name` is not in gke-rl's model catalogue (`gke-rl models`), so the head, layer, expert, memory and storage checks are skipped.";
    TP_HEADS = "tp-heads", Error, [JobScript], "The policy's tensor parallelism (Megatron or DTensor) must divide the model's attention heads and its KV heads.";
    VLLM_TP_HEADS = "vllm-tp-heads", Error, [JobScript], "vLLM's tensor parallelism must divide the model's attention heads, and divide or be a multiple of its KV heads; vLLM refuses the model otherwise.";
    PP_LAYERS = "pp-layers", Error, [JobScript], "Megatron's pipeline parallelism must split the model's layers evenly.";
    EXPERT_PARALLEL = "expert-parallel", Error, [JobScript], "Megatron's expert parallelism needs a MoE model whose experts it divides, and must divide the ranks TP × PP leave.";
    GPU_MEMORY = "gpu-memory", Warning, [JobScript], "An estimate of each GPU's training memory (bf16 weights, fp32 gradients, Adam state under the parallelism) exceeds the GPU's memory.";
    NEMO_RL_UNKNOWN_IMAGE = "nemo-rl-unknown-image", Info, [JobScript], "The Ray pods' image is not a NeMo-RL release gke-rl knows (`gke-rl --version` lists them), so the launcher, the override keys and the dataset are not checked.";
    NEMO_RL_ASSUMED_LAYOUT = "nemo-rl-assumed-layout", Warning, [JobScript], "The Ray pods' image is a NeMo-RL version gke-rl does not know (newer than every known release, a patch, a candidate): the job is rendered with the launcher, dataset key and recipe of the newest known release at or before it, an assumption nothing has checked, so the launcher, the override keys and the dataset are not checked.";
    LAUNCHER_MISSING = "launcher-missing", Error, [JobScript], "The job launches a script the image's NeMo-RL release does not ship (v0.6.0 has only `examples/run_grpo.py`).";
    SECRET_LITERAL = "secret-literal", Error, [EnvSh, RuntimeEnv, JobScript, RayCluster, DeploymentFile, Blueprint], "A token is written in a file (by the name of its variable, or its shape: Hugging Face, GitHub, W&B keys, passwords in URLs); files get copied, committed and uploaded.";
    UPLOAD_INCLUDES_SECRETS = "upload-includes-secrets", Error, [RayIgnore], "`.rayignore` lets env.sh, the runtime-env JSON or `.git/` into the Ray working_dir upload.";
    RUNTIME_ENV_TYPES = "runtime-env-env-vars-not-strings", Error, [RuntimeEnv], "Ray requires runtime_env `env_vars` to map strings to strings.";
    RAY_OVERRIDE_MISSING = "ray-override-runtime-env-missing", Error, [JobScript], "NeMo-RL passes os.environ to ray.init; without `RAY_OVERRIDE_JOB_RUNTIME_ENV=1` that conflicts with the job's runtime env.";
    ZONE_NOT_IN_REGION = "zone-not-in-region", Error, [EnvSh, DeploymentFile, Blueprint], "The zone is not in the region.";
    COUNT_NOT_POSITIVE = "count-not-positive", Error, [EnvSh, DeploymentFile], "Node and GPU counts must be positive whole numbers.";
    GPUS_PER_NODE = "gpus-per-node-mismatch", Error, [EnvSh], "GPUS_PER_NODE differs from the GPUs of the machine type (8 on A4, 4 on A4X).";
    DEPLOYMENT_NAME_TOO_LONG = "deployment-name-too-long", Error, [EnvSh, DeploymentFile, Blueprint], "Cluster Toolkit prefixes service-account ids (at most 30 characters) with the deployment name, so it must be at most 20 characters.";
    AUTHORIZED_CIDR_WIDE = "authorized-cidr-wide", Warning, [EnvSh, DeploymentFile, Blueprint], "The authorized CIDR is a /0 to /7 block: it lets 33 million or more addresses (all of the internet for /0) reach the cluster's control plane.";
    PROJECT_ID_EMPTY = "project-id-empty", Error, [EnvSh, DeploymentFile], "The project id is empty; gcluster and gcloud cannot deploy.";
    BLUEPRINT_SPOT_RESERVATION = "blueprint-spot-with-reservation", Error, [Blueprint], "Spot node pools must not consume a SPECIFIC_RESERVATION; the node pool's precondition fails at terraform plan.";
    BLUEPRINT_FLEX_START = "blueprint-flex-start-conflict", Error, [Blueprint], "A flex-start node pool needs no reservation, `auto_repair: false`, autoscaling instead of static_node_count, and no Spot; the node pool's preconditions fail at terraform plan.";
    BLUEPRINT_LUSTRE_COMMENTED = "blueprint-lustre-commented-out", Error, [Blueprint], "The blueprint's Managed Lustre modules are still commented out while the RayCluster mounts Lustre.";
    BLUEPRINT_RAY_OPERATOR = "blueprint-ray-operator-missing", Error, [Blueprint], "The GKE cluster module does not set `enable_ray_operator: true`; no RayCluster is ever reconciled.";
    BLUEPRINT_VAR_AND_SETTING = "blueprint-var-and-setting", Error, [Blueprint], "An input is set on a module and also given as a var; the var is unused and gcluster's validator fails the deploy.";
    CRD_SCHEMA = "crd-schema", Error, [RayCluster, RayJob], "The RayCluster or RayJob does not match the KubeRay CRD's schema (v1.7.0's, embedded, unless `--crd` gives another): KubeRay's API server would refuse it, or drop a misspelt field without a word.";
    KUEUE_INADMISSIBLE = "kueue-inadmissible", Error, [RayJob, RayCluster, Blueprint, KueueConfiguration], "Kueue never admits the queued RayJob or RayCluster: its LocalQueue is not one the Kueue configuration (gke-rl's, else the gke-a4 blueprint's) creates or is in another namespace, a pod asks for a resource the ClusterQueue does not cover (gke-a4's covers GPUs only) or, the queue being topology-aware, for none it covers (a CPU-only head), the GPU pool autoscales from zero (topology-aware admission needs the nodes first), or the run's GPUs exceed the nominal quota.";
    RAYJOB_INVALID = "rayjob-invalid", Error, [RayJob], "KubeRay or Kueue refuses the RayJob: KubeRay marks it `ValidationFailed` and never runs it (backoffLimit with InteractiveMode, a TTL without shutdownAfterJobFinishes, no cluster to run on); Kueue refuses a queued RayJob that keeps its cluster or uses an existing one.";
}

/// Runs every check on the views.
pub(super) fn run(views: &Views<'_>, sink: &mut Sink) {
    let facts: Facts = facts::gather(views);
    numbers::check(views, sink);
    infra::check(views, &facts, sink);
    ray::check(views, &facts, sink);
    fabric::check(views, &facts, sink);
    storage::check(views, &facts, sink);
    nemo::check(views, &facts, sink);
    model::check(views, &facts, sink);
    secrets::check(views, sink);
    rayjob::check(views, sink);
    kueue::check(views, &facts, sink);
    // `CRD_SCHEMA` runs in `Checked::finish`, after any CRD given in place of a built-in one.
}

impl Views<'_> {
    fn has(&self, kind: ArtifactKind) -> bool {
        match kind {
            ArtifactKind::EnvSh => !self.env_sh.is_empty(),
            ArtifactKind::RayCluster => !self.ray_clusters.is_empty(),
            ArtifactKind::RuntimeEnv => !self.runtime_envs.is_empty(),
            ArtifactKind::RayIgnore => !self.ray_ignores.is_empty(),
            ArtifactKind::JobScript => !self.jobs.is_empty(),
            ArtifactKind::DeploymentFile => !self.deployment_files.is_empty(),
            ArtifactKind::Blueprint => !self.blueprints.is_empty(),
            ArtifactKind::RayJob => !self.ray_jobs.is_empty(),
            ArtifactKind::KueueConfiguration => !self.kueue_configurations.is_empty(),
            ArtifactKind::SecretInstructions | ArtifactKind::NetworkPolicy | ArtifactKind::BlueprintPatch => false,
        }
    }
}

/// Why `rule` did not run when no check said: none of the files it reads was given (or, when
/// one was, a gap in gke-rl that `Validation::unaccounted` makes visible to its tests).
pub(super) fn unaccounted(rule: &Rule, views: &Views<'_>) -> (String, String, bool) {
    let reads = if rule.reads.is_empty() { &ArtifactKind::CHECKED[..] } else { rule.reads };
    let files: Vec<&str> = reads.iter().map(|k| k.file()).collect();
    let whats: Vec<&str> = reads.iter().map(|k| k.what()).collect();
    if reads.iter().any(|k| views.has(*k)) {
        return ("the values it reads are not in the files given".to_owned(), format!("give {}", or_list(&files)), true);
    }
    (format!("no {}", or_list(&whats)), format!("add {}", or_list(&files)), false)
}

/// "a", "a or b", "a, b or c".
pub(super) fn or_list(items: &[&str]) -> String {
    match items {
        [] => "a file gke-rl knows".to_owned(),
        [only] => (*only).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Whether `text` holds a template placeholder: `{{…}}` or `<WORD>`.
pub(super) fn has_placeholder(text: &str) -> bool {
    if text.contains("{{") {
        return true;
    }
    text.split('<').skip(1).any(|rest| {
        rest.split_once('>').is_some_and(|(inner, _)| {
            !inner.is_empty()
                && inner.starts_with(|c: char| c.is_ascii_alphabetic())
                && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
    })
}
