//! The rule registry: every rule's stable code, default severity and explanation, and the
//! checks that emit them.

mod infra;
mod nemo;
mod ray;
mod secrets;
mod storage;

use super::facts::{self, Facts};
use super::{Sink, Views};
use crate::diagnostic::Severity;

/// A rule: what it checks and how bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable kebab-case identifier.
    pub code: &'static str,
    /// Severity of its findings.
    pub severity: Severity,
    /// What it checks and why it matters.
    pub explanation: &'static str,
}

macro_rules! rules {
    ($($name:ident = $code:literal, $severity:ident, $explanation:literal;)*) => {
        $(
            #[doc = $explanation]
            pub const $name: Rule = Rule { code: $code, severity: Severity::$severity, explanation: $explanation };
        )*
        /// Every rule, in documentation order.
        pub const RULES: &[Rule] = &[$($name),*];
    };
}

rules! {
    SYNTAX = "syntax", Error, "The file cannot be parsed as what its name and content say it is (YAML, JSON, gitignore patterns, or the env.sh subset).";
    FILE_TOO_LARGE = "file-too-large", Error, "Files over 10 MiB are not read: no artifact of a deployment is that large.";
    PLACEHOLDER = "placeholder", Error, "A template placeholder (`{{…}}`, `<YOUR-…>`) was left in a value; the tools that read it would use it literally.";
    RAY_VERSION_MISMATCH = "ray-version-mismatch", Error, "`rayVersion` differs from the Ray inside the image. KubeRay 1.6+ chooses the pods' health probes by `rayVersion`; an image with an older Ray never becomes Ready.";
    RAY_UNKNOWN_IMAGE = "ray-unknown-image", Warning, "gke-rl does not know which Ray the image ships, so it cannot check `rayVersion`.";
    RAYCLUSTER_NAME = "raycluster-name", Error, "KubeRay rejects RayCluster names over 53 characters or that are not DNS-1035 labels, at reconcile time, as an event.";
    RAY_START_PARAM_NOT_STRING = "ray-start-param-not-string", Error, "`rayStartParams` values must be strings; the API server rejects `num-gpus: 8` and accepts `num-gpus: \"8\"`.";
    HEAD_DASHBOARD_PORT = "head-dashboard-port-missing", Error, "The head container lists ports but not 8265, so the head service exposes no dashboard and no Jobs API.";
    WORKER_REPLICAS_RANGE = "worker-replicas-out-of-range", Error, "A worker group's `replicas` is outside [`minReplicas`, `maxReplicas`], or min exceeds max.";
    WORKER_REPLICAS_NODES = "worker-replicas-node-count", Error, "The GPU worker group's replicas differ from the number of GPU nodes: workers stay Pending or nodes sit idle.";
    GPU_LIMIT = "gpu-limit-mismatch", Error, "A worker's `nvidia.com/gpu` limit differs from the GPUs per node of the machine type.";
    RESOURCES_EXCEED_NODE = "resources-exceed-node", Error, "Pod CPU or memory requests exceed what a node can allocate, alone or with the worker that shares its node.";
    GPU_TOLERATION = "gpu-toleration-missing", Error, "A pod selects GPU nodes but neither requests a GPU nor tolerates the `nvidia.com/gpu` taint GKE puts on them, so it never schedules.";
    VOLUME_DUPLICATE_NAME = "volume-duplicate-name", Error, "Two volumes of a pod have the same name; the API server rejects the pod.";
    MOUNT_DUPLICATE_PATH = "mount-duplicate-path", Error, "Two mounts of a container use the same path; the API server rejects the pod.";
    MOUNT_UNKNOWN_VOLUME = "mount-unknown-volume", Error, "A container mounts a volume the pod does not define; pod creation fails.";
    DEV_SHM_TWICE = "dev-shm-mounted-twice", Error, "`/dev/shm` is mounted twice in a container.";
    PVC_NAME_MISMATCH = "pvc-name-mismatch", Error, "The RayCluster claims a PVC other than the one the blueprint creates; pods stay Pending.";
    LUSTRE_TIER_UNKNOWN = "lustre-tier-unknown", Error, "Managed Lustre throughput tiers are 125, 250, 500 and 1000 MB/s per TiB.";
    LUSTRE_CAPACITY_STEP = "lustre-capacity-step", Error, "Managed Lustre capacity must be a multiple of its tier's step.";
    LUSTRE_CAPACITY_RANGE = "lustre-capacity-range", Error, "Managed Lustre capacity is outside its tier's minimum and maximum.";
    LUSTRE_TOO_SMALL = "lustre-too-small", Error, "The run's peak footprint — (keep_top_k + 1) checkpoints at 14 bytes per parameter plus the HF download and the converted copy — does not fit in the Lustre instance.";
    CHECKPOINT_SAVE_TIME = "checkpoint-save-time", Info, "Estimated time of one synchronous checkpoint save at the instance's aggregate throughput (capacity × tier).";
    PATH_OUTSIDE_LUSTRE = "path-outside-lustre", Error, "`checkpoint_dir` or `HF_HOME` is outside the Lustre mount, so head and workers do not share it.";
    WORLD_SIZE_PARALLELISM = "world-size-parallelism", Error, "nodes × GPUs per node is not a multiple of TP × PP × CP; NeMo-RL stops before training.";
    ROLLOUT_BATCH = "rollout-batch-multiple", Error, "prompts × generations per step is not a multiple of `train_global_batch_size`.";
    GLOBAL_BATCH_DATA_PARALLEL = "global-batch-data-parallel", Error, "`train_global_batch_size` is not divisible by data-parallel size × micro batch.";
    CLUSTER_SIZE_MISMATCH = "cluster-size-mismatch", Error, "`cluster.num_nodes` or `cluster.gpus_per_node` differs from the RayCluster.";
    SAVE_PERIOD = "save-period-invalid", Error, "`checkpointing.save_period` must be at least 1 (0 divides by zero in NeMo-RL).";
    METRIC_NAME = "metric-name-invalid", Error, "`checkpointing.metric_name` must be null or start with `val:` or `train:`.";
    DATASET_UNKNOWN = "dataset-unknown", Error, "`data.dataset_name` is not a dataset NeMo-RL's GRPO launcher knows, or lacks the keys it needs.";
    OVERRIDE_NO_OP = "override-no-op", Warning, "The override sets a key NeMo-RL never reads.";
    OVERRIDE_UNKNOWN_KEY = "override-unknown-key", Error, "The override names a key the recipe does not have; Hydra rejects it unless it is added with `+`.";
    OVERRIDE_QUOTED = "override-quoted-value", Error, "A quoted number or boolean reaches NeMo-RL as a string and fails much later.";
    RECIPE_UNKNOWN = "recipe-unknown", Info, "gke-rl does not know this recipe's keys, so overrides are not checked against it.";
    SECRET_LITERAL = "secret-literal", Error, "A token is written in a file; files get copied, committed and uploaded.";
    UPLOAD_INCLUDES_SECRETS = "upload-includes-secrets", Error, "`.rayignore` lets env.sh, the runtime-env JSON or `.git/` into the Ray working_dir upload.";
    RUNTIME_ENV_TYPES = "runtime-env-env-vars-not-strings", Error, "Ray requires runtime_env `env_vars` to map strings to strings.";
    RAY_OVERRIDE_MISSING = "ray-override-runtime-env-missing", Error, "NeMo-RL passes os.environ to ray.init; without `RAY_OVERRIDE_JOB_RUNTIME_ENV=1` that conflicts with the job's runtime env.";
    ZONE_NOT_IN_REGION = "zone-not-in-region", Error, "The zone is not in the region.";
    COUNT_NOT_POSITIVE = "count-not-positive", Error, "Node and GPU counts must be positive whole numbers.";
    GPUS_PER_NODE = "gpus-per-node-mismatch", Error, "GPUS_PER_NODE differs from the GPUs of the machine type (8 on A4).";
    DEPLOYMENT_NAME_TOO_LONG = "deployment-name-too-long", Error, "Cluster Toolkit prefixes service-account ids (at most 30 characters) with the deployment name, so it must be at most 20 characters.";
    PROJECT_ID_EMPTY = "project-id-empty", Error, "The project id is empty; gcluster and gcloud cannot deploy.";
    BLUEPRINT_SPOT_RESERVATION = "blueprint-spot-with-reservation", Error, "Spot node pools must not consume a SPECIFIC_RESERVATION; the node pool's precondition fails at terraform plan.";
    BLUEPRINT_LUSTRE_COMMENTED = "blueprint-lustre-commented-out", Error, "The blueprint's Managed Lustre modules are still commented out while the RayCluster mounts Lustre.";
    BLUEPRINT_RAY_OPERATOR = "blueprint-ray-operator-missing", Error, "The GKE cluster module does not set `enable_ray_operator: true`; no RayCluster is ever reconciled.";
    BLUEPRINT_VAR_AND_SETTING = "blueprint-var-and-setting", Error, "An input is set on a module and also given as a var; the var is unused and gcluster's validator fails the deploy.";
    CRD_SCHEMA = "crd-schema", Error, "The RayCluster does not match the KubeRay CRD's schema.";
}

/// Runs every check on the views.
pub(super) fn run(views: &Views<'_>, sink: &mut Sink) {
    let facts: Facts = facts::gather(views);
    infra::check(views, &facts, sink);
    ray::check(views, &facts, sink);
    storage::check(views, &facts, sink);
    nemo::check(views, &facts, sink);
    secrets::check(views, sink);
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
