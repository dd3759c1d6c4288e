//! The typed model: one [`Deployment`] value describes the cluster, the storage, the Ray
//! cluster and the training job. Its [`Default`] is the codelab's reference setup with the
//! codelab's defects fixed.
//!
//! Secrets appear only as the *names* of environment variables; the model has no field
//! that could hold a token.

mod names;
mod prices;
pub mod quantity;

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};

pub use names::{AbsPath, CheckpointUri, Cidr, EnvName, GcsPath, Name, OverrideKey, ProjectId, Quantity, Region, Word, Zone, step_number};
pub use prices::{Prices, Usd};

use crate::knowledge;

/// Everything gke-rl renders, validates and deploys.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Deployment {
    /// Google Cloud project, location and cluster name.
    pub project: Project,
    /// GPU nodes and how they are provisioned.
    pub topology: Topology,
    /// Who may reach the cluster's control plane.
    pub network: Network,
    /// The Managed Lustre file system mounted into every Ray pod.
    pub lustre: Lustre,
    /// The KubeRay RayCluster.
    pub ray: Ray,
    /// The GPU-to-GPU network of the Ray workers.
    pub fabric: Fabric,
    /// The NeMo-RL GRPO training job.
    pub job: Job,
    /// Where the job's secrets come from (names only, never values).
    pub secrets: Secrets,
    /// Where a run's checkpoints and trained model are kept beyond the Lustre instance.
    pub storage: Storage,
    /// Prices that replace the embedded price table's in cost estimates.
    pub cost: Prices,
}

/// Google Cloud project, location and cluster name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Project {
    /// Project id. Null: read from `PROJECT_ID` when the artifacts are used.
    pub project_id: Option<ProjectId>,
    /// Region of the (regional) GKE cluster.
    pub region: Region,
    /// Zone of the GPU nodes and the Lustre instance.
    pub zone: Zone,
    /// GKE cluster, gcluster deployment and RayCluster name.
    pub cluster_name: Name,
    /// The cluster exists already (made with xpk, Terraform or the console): deploy reads it
    /// and fits the Ray cluster to it, and neither deploy nor destroy ever creates or deletes
    /// it or its node pools.
    pub existing_cluster: bool,
}

impl Default for Project {
    fn default() -> Self {
        Self {
            project_id: None,
            region: Region::new("us-east1").expect("valid"),
            zone: Zone::new("us-east1-b").expect("valid"),
            cluster_name: Name::new("ray-a4-gpu-spot").expect("valid"),
            existing_cluster: false,
        }
    }
}

/// GPU nodes and how they are provisioned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Topology {
    /// Number of GPU nodes; one Ray worker runs on each.
    pub node_count: NonZeroU32,
    /// GPUs per node (8 on `a4-highgpu-8g`).
    pub gpus_per_node: NonZeroU32,
    /// Compute Engine machine type of the GPU node pool.
    pub machine_type: Word,
    /// GKE accelerator label value of the GPU nodes.
    pub accelerator: Word,
    /// Spot VMs, or on-demand VMs from a named reservation.
    pub provisioning: Provisioning,
    /// On an existing cluster, the node pool of the GPU workers. Null: deploy picks the
    /// cluster's pool of `machine_type` (one provisioned as `provisioning` says first).
    pub pool: Option<Name>,
}

impl Default for Topology {
    fn default() -> Self {
        Self {
            node_count: NonZeroU32::new(8).expect("non-zero"),
            gpus_per_node: NonZeroU32::new(8).expect("non-zero"),
            machine_type: Word::new("a4-highgpu-8g").expect("valid"),
            accelerator: Word::new("nvidia-b200").expect("valid"),
            provisioning: Provisioning::Spot,
            pool: None,
        }
    }
}

/// How the GPU nodes are obtained.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Provisioning {
    /// Spot VMs: cheap, preemptible, no reservation.
    #[default]
    Spot,
    /// On-demand VMs from this reservation (`name` or `name/reservationBlocks/block`).
    Reservation(Word),
    /// Flex-start VMs (Dynamic Workload Scheduler): GKE obtains the nodes when the Ray pods
    /// ask for them, all at once, and keeps them for a bounded time; the node pool autoscales
    /// from zero.
    #[serde(rename = "flex-start")]
    FlexStart,
    /// On-demand VMs without a reservation, while the zone has them.
    #[serde(rename = "on-demand")]
    OnDemand,
}

impl Provisioning {
    /// The mode's word in the config and env.sh: `spot`, `reservation`, `flex-start`, `on-demand`.
    pub fn mode(&self) -> &'static str {
        match self {
            Provisioning::Spot => "spot",
            Provisioning::Reservation(_) => "reservation",
            Provisioning::FlexStart => "flex-start",
            Provisioning::OnDemand => "on-demand",
        }
    }

    /// For people: "Spot", "from reservation R", "flex-start", "on-demand".
    pub fn describe(&self) -> String {
        match self {
            Provisioning::Spot => "Spot".to_owned(),
            Provisioning::Reservation(name) => format!("from reservation {name}"),
            Provisioning::FlexStart => "flex-start".to_owned(),
            Provisioning::OnDemand => "on-demand".to_owned(),
        }
    }

    /// Whether nodes may be taken away under a running job: Spot preemption, and flex-start's
    /// bounded run time.
    pub fn loses_nodes(&self) -> bool {
        matches!(self, Provisioning::Spot | Provisioning::FlexStart)
    }
}

/// Who may reach the cluster's control plane.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Network {
    /// CIDR allowed to reach the GKE control plane (the deploying machine must be inside).
    /// Null: read from `AUTHORIZED_CIDR` when the artifacts are used.
    pub authorized_cidr: Option<Cidr>,
}

/// The Managed Lustre file system.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Lustre {
    /// Managed Lustre instance id.
    pub instance_id: Name,
    /// Capacity in GiB; a multiple of the throughput tier's step.
    pub capacity_gib: NonZeroU32,
    /// Throughput tier in MB/s per TiB: 125, 250, 500 or 1000.
    pub throughput_mbps_per_tib: NonZeroU32,
    /// Where the file system is mounted in the Ray pods.
    pub mount_path: AbsPath,
    /// Name of the PersistentVolumeClaim the blueprint (or, on an existing cluster, deploy)
    /// creates and the pods mount.
    pub pvc_name: Name,
    /// The instance `instance_id` exists already (on an existing cluster): deploy attaches it,
    /// and destroy never deletes it. Its capacity and tier are read from the instance.
    pub existing: bool,
}

impl Default for Lustre {
    fn default() -> Self {
        Self {
            instance_id: Name::new("rl-demo-gpu-lustre").expect("valid"),
            capacity_gib: NonZeroU32::new(9000).expect("non-zero"),
            throughput_mbps_per_tib: NonZeroU32::new(1000).expect("non-zero"),
            mount_path: AbsPath::new("/lustre").expect("valid"),
            pvc_name: Name::new("lustre-pvc").expect("valid"),
            existing: false,
        }
    }
}

/// The KubeRay RayCluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Ray {
    /// Container image of the head and the workers.
    pub image: Word,
    /// `rayVersion` of the RayCluster. Null: the Ray version inside `image`, from gke-rl's
    /// table of known images (required for images not in the table).
    pub ray_version: Option<Word>,
    #[doc = concat!(
        "Who may use the cluster's Jobs API and GCS: `token` (Ray's token authentication, Ray\n",
        crate::token_auth_ray!(),
        " and newer; deploy creates the token) or `disabled`. Null: `token` when the image's\n",
        "Ray has it; older Rays get a NetworkPolicy that admits only the cluster's own pods."
    )]
    pub auth: Option<RayAuth>,
    /// Kubernetes namespace of the RayCluster and the Secret.
    pub namespace: Name,
    /// Where the head pod runs and its resources (it requests no GPU).
    pub head: HeadResources,
    /// Resources of each worker pod, besides all the node's GPUs (limits equal requests).
    pub worker: WorkerResources,
}

impl Default for Ray {
    fn default() -> Self {
        Self {
            image: Word::new("nvcr.io/nvidia/nemo-rl:v0.4.0").expect("valid"),
            ray_version: None,
            auth: None,
            namespace: Name::new("default").expect("valid"),
            head: HeadResources::default(),
            worker: WorkerResources::default(),
        }
    }
}

impl Ray {
    /// `ray_version` if set, else the version shipped in a known image
    /// ([`crate::Error::UnknownRayVersion`] otherwise).
    pub fn resolved_version(&self) -> Result<&str, crate::Error> {
        match &self.ray_version {
            Some(version) => Ok(version.as_str()),
            None => knowledge::ray_version_of_image(self.image.as_str())
                .ok_or_else(|| crate::Error::UnknownRayVersion { image: self.image.to_string() }),
        }
    }

    /// Whether the cluster uses Ray's token authentication: as configured, else whenever its
    /// Ray has it ([`crate::Error::TokenAuthUnsupported`] for `token` on an older Ray).
    pub fn token_auth(&self) -> Result<bool, crate::Error> {
        let version = self.resolved_version()?;
        let supported = crate::knowledge::supports_token(version);
        match self.auth {
            None => Ok(supported),
            Some(RayAuth::Disabled) => Ok(false),
            Some(RayAuth::Token) if supported => Ok(true),
            Some(RayAuth::Token) => Err(crate::Error::TokenAuthUnsupported { version: version.to_owned() }),
        }
    }
}

/// Ray's authentication mode, as KubeRay's `authOptions.mode` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RayAuth {
    /// Only holders of the cluster's token reach the Jobs API and the GCS.
    Token,
    /// Anyone who reaches the head's ports.
    Disabled,
}

/// Where the head pod runs and its resources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct HeadResources {
    /// The node pool of the head: its own on-demand CPU pool (which the blueprint patch
    /// adds), the cluster's system pool, or a GPU node beside a worker (the codelab's layout,
    /// where a preempted Spot node takes the Ray cluster with it).
    pub node_pool: HeadNodePool,
    /// Machine type of the `dedicated` pool.
    pub machine_type: Word,
    /// On an existing cluster, the node pool of the head (`dedicated` and `system` both mean
    /// one of the cluster's own on-demand CPU pools there). Null: deploy picks one that holds
    /// the head.
    pub pool: Option<Name>,
    /// CPU request.
    pub cpu_request: Quantity,
    /// CPU limit.
    pub cpu_limit: Quantity,
    /// Memory request.
    pub memory_request: Quantity,
    /// Memory limit.
    pub memory_limit: Quantity,
}

impl Default for HeadResources {
    fn default() -> Self {
        Self {
            node_pool: HeadNodePool::Dedicated,
            machine_type: Word::new(knowledge::HEAD_POOL_MACHINE_TYPE).expect("valid"),
            pool: None,
            cpu_request: Quantity::new("8").expect("valid"),
            cpu_limit: Quantity::new("32").expect("valid"),
            memory_request: Quantity::new("64Gi").expect("valid"),
            memory_limit: Quantity::new("1000Gi").expect("valid"),
        }
    }
}

/// The node pool the Ray head runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HeadNodePool {
    /// One on-demand CPU node of its own, labelled for the head: it outlives Spot preemptions.
    #[default]
    Dedicated,
    /// The cluster's system node pool, when it fits the head's requests (validate checks).
    System,
    /// A GPU node, beside a worker: lost with that node.
    Gpu,
}

impl HeadNodePool {
    /// The word the config and env.sh use.
    pub fn as_str(self) -> &'static str {
        match self {
            HeadNodePool::Dedicated => "dedicated",
            HeadNodePool::System => "system",
            HeadNodePool::Gpu => "gpu",
        }
    }
}

/// Resources of each worker pod.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct WorkerResources {
    /// Name of the worker group.
    pub group_name: Name,
    /// CPU (request and limit).
    pub cpu: Quantity,
    /// Memory (request and limit).
    pub memory: Quantity,
}

impl Default for WorkerResources {
    fn default() -> Self {
        Self {
            group_name: Name::new("gpu-worker-group").expect("valid"),
            cpu: Quantity::new("100").expect("valid"),
            memory: Quantity::new("1000Gi").expect("valid"),
        }
    }
}

/// The GPU-to-GPU network of the Ray workers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Fabric {
    /// `auto`: wire GPUDirect RDMA into the workers on machine types that have it (A4, A3
    /// Ultra); `on`: the same, and refuse a machine type without it; `off`: TCP only.
    pub mode: FabricMode,
    /// Size limit of each worker's `/dev/shm` (NCCL and vLLM share memory within a node; it
    /// counts against the pod's memory).
    pub shm_size: Quantity,
    /// The GKE networks (Network objects) the workers attach for RDMA, in order. Null: the
    /// blueprint's (`rdma-0`…); on an existing cluster, deploy reads those of the GPU pool.
    pub rdma_networks: Option<Vec<Name>>,
}

impl Default for Fabric {
    fn default() -> Self {
        Self { mode: FabricMode::Auto, shm_size: Quantity::new("250Gi").expect("valid"), rdma_networks: None }
    }
}

/// Whether the workers use the machine's RDMA fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FabricMode {
    /// On where the machine type has an RDMA fabric gke-rl wires, off elsewhere.
    #[default]
    Auto,
    /// On; a machine type without such a fabric is an error.
    On,
    /// Off: collectives across nodes go over TCP.
    Off,
}

/// Resubmissions of a job on nodes that may be taken away (Spot, flex-start) when the config
/// sets none: losing a node is the normal case there.
pub const SPOT_MAX_RESTARTS: u32 = 3;

impl Deployment {
    /// Whether the RayCluster may be suspended when idle (after a job, or by the idle guard),
    /// so that its GPU node pool should autoscale from zero to give the nodes back.
    pub fn suspends_when_idle(&self) -> bool {
        self.job.when_done == WhenDone::Suspend || self.job.idle_timeout_minutes.is_some()
    }

    /// Whether the GPU node pool autoscales from zero, so that GKE removes its nodes once no
    /// Ray pod wants them (a suspended cluster, a RayJob's cluster once deleted): flex-start
    /// pools and RayJob runs always do, others when the cluster
    /// [`suspends_when_idle`](Self::suspends_when_idle).
    pub fn gpu_pool_scales_to_zero(&self) -> bool {
        self.topology.provisioning == Provisioning::FlexStart || self.job.mode == JobMode::Rayjob || self.suspends_when_idle()
    }

    /// Why `job.mode` cannot run this deployment, if it cannot.
    pub fn mode_conflict(&self) -> Option<ModeConflict> {
        // The queues gke-rl's Kueue configuration creates are the blueprint's. A LocalQueue
        // serves its own namespace only; gke-rl makes none in another, whose namespace the
        // blueprint creates in no order with Kueue's configuration.
        if let Some(queue) = &self.job.queue {
            let named: Vec<_> = crate::knowledge::kueue::blueprint_queues().iter().filter(|q| q.name == queue.as_str()).collect();
            if named.is_empty() {
                return Some(ModeConflict::UnknownQueue);
            }
            if !named.iter().any(|q| q.namespace == self.ray.namespace.as_str()) {
                return Some(ModeConflict::QueueElsewhere);
            }
        }
        if self.job.mode != JobMode::Rayjob {
            // Kueue owns a queued RayCluster's `spec.suspend`: it resumes an admitted one that
            // anything else suspends (kubernetes-sigs/kueue v0.17.8
            // `pkg/controller/jobframework/reconciler.go`, "Job admitted, unsuspending"). gke-rl
            // suspends one through its Workload; the in-cluster idle guard cannot.
            let guarded = self.job.queue.is_some() && self.job.idle_timeout_minutes.is_some();
            return guarded.then_some(ModeConflict::QueueSuspends);
        }
        // KubeRay's operator reads the job's state from the head's dashboard, which only a token
        // opens to it: the NetworkPolicy that guards a Ray without tokens would shut it out, and
        // the RayJob would never end (KubeRay v1.7.0 `dashboardclient`, `x-ray-authorization`).
        if !self.ray.token_auth().unwrap_or(false) {
            return Some(ModeConflict::NeedsToken);
        }
        // Both act on the long-lived RayCluster, which RayJob mode does not have.
        if self.job.when_done != WhenDone::Keep {
            return Some(ModeConflict::Suspends { field: "/job/when_done" });
        }
        if self.job.idle_timeout_minutes.is_some() {
            return Some(ModeConflict::Suspends { field: "/job/idle_timeout_minutes" });
        }
        if self.job.resume_from.is_some() {
            return Some(ModeConflict::ResumesOnTheHead);
        }
        let job = &self.job;
        let seconds = [
            ("/job/rayjob_ttl_seconds_after_finished", Some(job.rayjob_ttl_seconds_after_finished)),
            ("/job/rayjob_active_deadline_seconds", job.rayjob_active_deadline_seconds.map(NonZeroU32::get)),
            ("/job/rayjob_pre_running_deadline_seconds", job.rayjob_pre_running_deadline_seconds.map(NonZeroU32::get)),
        ];
        let too_large = seconds.into_iter().find(|(_, value)| value.is_some_and(|v| i32::try_from(v).is_err()));
        too_large.map(|(field, _)| ModeConflict::TooManySeconds { field })
    }

    /// This deployment with its runs in `mode` (`submit --as`), unless the mode cannot run it.
    pub fn in_mode(&self, mode: JobMode) -> Result<Deployment, ModeConflict> {
        let mut deployment = self.clone();
        deployment.job.mode = mode;
        deployment.mode_conflict().map_or(Ok(deployment), Err)
    }

    /// How many times a job failed by the infrastructure is resubmitted: `job.max_restarts`,
    /// else [`SPOT_MAX_RESTARTS`] where nodes may be taken away and none elsewhere.
    pub fn max_restarts(&self) -> u32 {
        self.job.max_restarts.unwrap_or(if self.topology.provisioning.loses_nodes() { SPOT_MAX_RESTARTS } else { 0 })
    }

    /// The RDMA fabric the workers are wired to, if any: decided by `fabric.mode` and the
    /// machine type ([`crate::Error::NoFabric`] for `on` where there is none to wire).
    pub fn wired_fabric(&self) -> Result<Option<&'static knowledge::GpuFabric>, crate::Error> {
        let machine = self.topology.machine_type.as_str();
        let fabric = knowledge::gpu_fabric(machine);
        match self.fabric.mode {
            FabricMode::Off => Ok(None),
            FabricMode::Auto => Ok(fabric.filter(|f| f.is_wired())),
            FabricMode::On => match fabric {
                Some(f) if f.is_wired() => Ok(Some(f)),
                Some(f) => Err(crate::Error::NoFabric { machine: machine.to_owned(), why: f.unsupported().unwrap_or_default().to_owned() }),
                None => Err(crate::Error::NoFabric {
                    machine: machine.to_owned(),
                    why: "gke-rl knows no RDMA fabric for it (it wires a4-highgpu-8g and a3-ultragpu-8g)".to_owned(),
                }),
            },
        }
    }
}

/// The NeMo-RL GRPO training job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Job {
    /// Ray submission id, also the W&B run name.
    pub name: Name,
    /// NeMo-RL recipe, relative to `/opt/nemo-rl` in the image.
    pub recipe: Word,
    /// Hugging Face model to train (`policy.model_name`).
    pub model: Word,
    /// Training data set (`data.dataset_name`; `data.train.dataset_name` from NeMo-RL v0.6.0).
    pub dataset: Word,
    /// GRPO steps (`grpo.max_num_steps`).
    pub max_num_steps: NonZeroU32,
    /// Generations per prompt (`grpo.num_generations_per_prompt`).
    pub num_generations_per_prompt: NonZeroU32,
    /// Prompts per step (`grpo.num_prompts_per_step`).
    pub num_prompts_per_step: NonZeroU32,
    /// Global training batch (`policy.train_global_batch_size`).
    pub train_global_batch_size: NonZeroU32,
    /// Checkpointing settings (`checkpointing.*`).
    pub checkpointing: Checkpointing,
    /// More NeMo-RL settings, as Hydra overrides (`grpo.val_period: 10`), passed after gke-rl's
    /// own and checked as the job script's are: a key the release's recipe lacks is an error
    /// (`+key` adds one). A key gke-rl sets from a field above is set there instead. Not in
    /// env.sh, as the codelab's has none.
    pub overrides: std::collections::BTreeMap<OverrideKey, OverrideValue>,
    /// `HF_HOME` of the job: model downloads and NeMo-RL's converted copy.
    pub hf_home: AbsPath,
    /// NeMo-RL's log directory (`logger.log_dir`), on the shared file system.
    pub log_dir: AbsPath,
    /// Resubmissions after the infrastructure failed the job (a node lost, the driver lost);
    /// NeMo-RL resumes from its newest checkpoint. Null: 3 on Spot, 0 on a reservation.
    pub max_restarts: Option<u32>,
    /// What `submit` does with the RayCluster when the job (with its restarts) has ended.
    pub when_done: WhenDone,
    /// Minutes without a running job after which an in-cluster guard suspends the RayCluster.
    /// Null: no guard.
    pub idle_timeout_minutes: Option<NonZeroU32>,
    /// Seconds one GRPO step takes on this setup, as NeMo-RL's `Total step time` line reports
    /// it; gke-rl has no estimate of its own. With flex-start, validate warns when
    /// `max_num_steps` steps do not end before the checkpoint deadline. Null: not checked.
    pub expected_step_seconds: Option<NonZeroU32>,
    /// Minutes between preemptions (or other failures that restart the run) you expect, as your
    /// Spot history shows them. With `expected_step_seconds`, gke-rl recommends how often to save
    /// (Young's √(2·save·this)) until the run's own restarts give the figure. Null: no plan.
    pub mean_minutes_between_preemptions: Option<NonZeroU32>,
    /// How the run reaches the cluster: on the deployment's long-lived RayCluster, or as a
    /// RayJob that brings its own RayCluster and deletes it when the run ends.
    pub mode: JobMode,
    /// In `rayjob` mode, seconds the RayJob's cluster stays after the run ends
    /// (`ttlSecondsAfterFinished`), to read its logs and dashboard; its GPUs are paid meanwhile.
    /// At most 2147483647, as the deadlines (the CRD's int32).
    pub rayjob_ttl_seconds_after_finished: u32,
    /// In `rayjob` mode, seconds the RayJob may take from its start, the GPU pool's scaling from
    /// zero and the wait for the submission included (`activeDeadlineSeconds`). Null: no bound.
    pub rayjob_active_deadline_seconds: Option<NonZeroU32>,
    /// In `rayjob` mode, seconds the RayJob may take until its job runs: the cluster's start and
    /// the wait for the submission (`preRunningDeadlineSeconds`). Without it, a RayJob whose
    /// submission never came would hold the GPU nodes for good. Null: no bound.
    pub rayjob_pre_running_deadline_seconds: Option<NonZeroU32>,
    /// The Kueue LocalQueue the run waits in (`kueue.x-k8s.io/queue-name` on the RayJob, or on
    /// the RayCluster in cluster mode): Kueue keeps it suspended until its ClusterQueue has the
    /// quota. With a queue, gke-rl renders the blueprint's Kueue configuration so that its
    /// ClusterQueue admits a Ray cluster (the upstream one covers GPUs only). Null: no queue.
    pub queue: Option<Name>,
    /// A checkpoint `gke-rl export` kept in a bucket (`gs://BUCKET/PATH/RUN/step_N/`): deploy
    /// imports it into `checkpointing.dir` once the RayCluster is Ready and before any job, so
    /// that the run resumes from it, on a new cluster in any zone. Null: start afresh.
    pub resume_from: Option<CheckpointUri>,
}

/// A Hydra override's value as the config writes it: numbers and booleans as written, text
/// quoted for Hydra where it needs it, nothing for null.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OverrideValue(pub Option<String>);

#[cfg(feature = "schema")]
impl schemars::JsonSchema for OverrideValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OverrideValue".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": ["string", "number", "boolean", "null"] })
    }
}

/// Why `job.mode` cannot run a deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeConflict {
    /// `job.queue` is no LocalQueue of the blueprint's Kueue configuration.
    UnknownQueue,
    /// `job.queue` is a LocalQueue of another namespace than `ray.namespace`.
    QueueElsewhere,
    /// A queued RayCluster (cluster mode) would be suspended by the idle guard, which Kueue undoes.
    QueueSuspends,
    /// Ray's token authentication is off.
    NeedsToken,
    /// A field that suspends the long-lived RayCluster is set.
    Suspends {
        /// The field, as a JSON pointer into the model.
        field: &'static str,
    },
    /// A RayJob's seconds field is past the CRD's int32.
    TooManySeconds {
        /// The field, as a JSON pointer into the model.
        field: &'static str,
    },
    /// `job.resume_from` is imported through the long-lived RayCluster's head, before any run.
    ResumesOnTheHead,
}

impl ModeConflict {
    /// The fields at fault, as JSON pointers into the model (as env.sh's table names them):
    /// the first that is set is where it is told.
    pub fn fields(&self) -> &[&'static str] {
        match self {
            ModeConflict::NeedsToken => &["/ray/auth", "/ray/image", "/job/mode"],
            ModeConflict::Suspends { field } | ModeConflict::TooManySeconds { field } => std::slice::from_ref(field),
            ModeConflict::UnknownQueue => &["/job/queue"],
            ModeConflict::QueueElsewhere => &["/ray/namespace", "/job/queue"],
            ModeConflict::QueueSuspends => &["/job/idle_timeout_minutes", "/job/queue"],
            ModeConflict::ResumesOnTheHead => &["/job/resume_from", "/job/mode"],
        }
    }

    /// The diagnostic's code in the config and in env.sh.
    pub fn codes(self) -> (&'static str, &'static str) {
        match self {
            ModeConflict::NeedsToken => ("config-rayjob-needs-token", "env-sh-rayjob-needs-token"),
            ModeConflict::Suspends { .. } => ("config-rayjob-suspends", "env-sh-rayjob-suspends"),
            ModeConflict::TooManySeconds { .. } => ("config-rayjob-seconds-too-large", "env-sh-rayjob-seconds-too-large"),
            ModeConflict::QueueSuspends => ("config-queue-suspends", "env-sh-queue-suspends"),
            ModeConflict::UnknownQueue => ("config-queue-unknown", "env-sh-queue-unknown"),
            ModeConflict::QueueElsewhere => ("config-queue-namespace", "env-sh-queue-namespace"),
            ModeConflict::ResumesOnTheHead => ("config-rayjob-resume-from", "env-sh-rayjob-resume-from"),
        }
    }

    /// What is wrong.
    pub fn message(self) -> String {
        match self {
            ModeConflict::NeedsToken => "job.mode rayjob needs Ray's token authentication: KubeRay's operator must reach the head's dashboard to follow the job, and a Ray without tokens is shut behind a NetworkPolicy".to_owned(),
            ModeConflict::Suspends { field } => format!(
                "job.{} suspends the long-lived RayCluster, which job.mode rayjob does not have: each RayJob's cluster goes after its run",
                key(field)
            ),
            ModeConflict::TooManySeconds { field } => format!("job.{} is more than the RayJob's int32 field holds (2147483647)", key(field)),
            ModeConflict::UnknownQueue => format!(
                "job.queue names no LocalQueue of the gke-a4 blueprint's Kueue configuration (it creates {}): Kueue would never admit the run",
                blueprint_queues(|q| format!("`{}`", q.name)).join(", ")
            ),
            ModeConflict::QueueElsewhere => format!(
                "job.queue is a LocalQueue of another namespace than ray.namespace ({}), and Kueue takes a workload only from a LocalQueue of its own",
                blueprint_queues(|q| format!("`{}` is in namespace `{}`", q.name, q.namespace)).join(", ")
            ),
            ModeConflict::QueueSuspends => "job.idle_timeout_minutes has an in-cluster guard suspend the RayCluster, and job.queue puts it in Kueue's hands: Kueue resumes an admitted RayCluster that anything else suspends".to_owned(),
            ModeConflict::ResumesOnTheHead => "job.resume_from is imported by deploy through the long-lived RayCluster's head, before any run, and job.mode rayjob has no such head".to_owned(),
        }
    }

    /// How to fix it.
    pub fn help(self) -> String {
        match self {
            ModeConflict::NeedsToken => format!("use {}, with auth left on", crate::knowledge::token_auth_images()),
            ModeConflict::Suspends { field } => {
                format!("leave job.{} out; job.rayjob_ttl_seconds_after_finished says how long a RayJob's cluster stays", key(field))
            }
            ModeConflict::TooManySeconds { field } => format!("set job.{} to 2147483647 or less (about 68 years)", key(field)),
            ModeConflict::UnknownQueue => format!("set job.queue to {}", blueprint_queues(|q| format!("`{}`", q.name)).join(" or ")),
            ModeConflict::QueueElsewhere => {
                "run in the LocalQueue's namespace (ray.namespace), or leave job.queue out".to_owned()
            }
            ModeConflict::QueueSuspends => "leave job.idle_timeout_minutes out (`gke-rl suspend` and job.when_done: suspend give a queued cluster's quota back through Kueue), or use job.mode rayjob, whose cluster goes after each run".to_owned(),
            ModeConflict::ResumesOnTheHead => "deploy with job.mode: cluster to import the checkpoint (it stays on Lustre, where later RayJobs resume from it), or leave job.resume_from out".to_owned(),
        }
    }
}

/// The LocalQueues of the blueprint's Kueue configuration, each in words.
fn blueprint_queues(words: impl Fn(&crate::knowledge::kueue::Queue) -> String) -> Vec<String> {
    crate::knowledge::kueue::blueprint_queues().iter().map(words).collect()
}

/// The key of a `/job/KEY` pointer.
fn key(field: &str) -> &str {
    field.trim_start_matches("/job/")
}

/// How a run reaches the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum JobMode {
    /// Submitted through the Jobs API to the deployment's RayCluster, which outlives it.
    #[default]
    Cluster,
    /// A KubeRay RayJob (`ray-job.yaml`): its RayCluster is made for the run and deleted after
    /// it, so the GPU pool, which scales from zero, is paid only while a run is there.
    Rayjob,
}

impl JobMode {
    /// Every mode.
    pub const ALL: [JobMode; 2] = [JobMode::Cluster, JobMode::Rayjob];

    /// The word the config and env.sh use.
    pub fn as_str(self) -> &'static str {
        match self {
            JobMode::Cluster => "cluster",
            JobMode::Rayjob => "rayjob",
        }
    }
}

/// What happens to the RayCluster after a job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WhenDone {
    /// It keeps running, ready for the next job.
    #[default]
    Keep,
    /// It is suspended: KubeRay deletes its pods, and the GPU node pool, which the blueprint
    /// patch then makes autoscale from zero, gives its nodes back. `resume` or the next
    /// `submit` brings it back.
    Suspend,
}

impl Default for Job {
    fn default() -> Self {
        Self {
            name: Name::new("nemo-rl-grpo-test1").expect("valid"),
            recipe: Word::new("examples/configs/grpo_math_70B_megatron.yaml").expect("valid"),
            model: Word::new("Qwen/Qwen2.5-72B-Instruct").expect("valid"),
            dataset: Word::new("DeepScaler").expect("valid"),
            max_num_steps: NonZeroU32::new(20).expect("non-zero"),
            num_generations_per_prompt: NonZeroU32::new(8).expect("non-zero"),
            num_prompts_per_step: NonZeroU32::new(32).expect("non-zero"),
            train_global_batch_size: NonZeroU32::new(256).expect("non-zero"),
            checkpointing: Checkpointing::default(),
            overrides: std::collections::BTreeMap::new(),
            hf_home: AbsPath::new("/lustre/huggingface_cache").expect("valid"),
            log_dir: AbsPath::new("/lustre/logs").expect("valid"),
            max_restarts: None,
            when_done: WhenDone::Keep,
            idle_timeout_minutes: None,
            expected_step_seconds: None,
            mean_minutes_between_preemptions: None,
            mode: JobMode::Cluster,
            rayjob_ttl_seconds_after_finished: 300,
            rayjob_active_deadline_seconds: None,
            rayjob_pre_running_deadline_seconds: NonZeroU32::new(7200),
            queue: None,
            resume_from: None,
        }
    }
}

/// Where a run's checkpoints and trained model are kept beyond the Lustre instance, which
/// `destroy` deletes with every file on it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Storage {
    /// The bucket folder `gke-rl export` (and `destroy --export-to`) copies checkpoints to,
    /// `gs://BUCKET/PATH/`: each run in a folder of its own. Created in the cluster's region when
    /// missing. Null: `export` needs `--to`.
    pub export_to: Option<GcsPath>,
}

/// Checkpointing settings of the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Checkpointing {
    /// Whether to save checkpoints.
    pub enabled: bool,
    /// Save every this many steps.
    pub save_period: NonZeroU32,
    /// Checkpoints to keep; null keeps all.
    pub keep_top_k: Option<NonZeroU32>,
    /// Metric that ranks checkpoints (`val:…` or `train:…`); null keeps the newest.
    pub metric_name: Option<Word>,
    /// Directory of the checkpoints, on the shared file system.
    pub dir: AbsPath,
}

impl Default for Checkpointing {
    fn default() -> Self {
        Self {
            enabled: true,
            save_period: NonZeroU32::new(2).expect("non-zero"),
            keep_top_k: NonZeroU32::new(2),
            metric_name: None,
            dir: AbsPath::new("/lustre/nemo_rl_qwen_72b_ds_cp/nemo-rl-grpo-test1").expect("valid"),
        }
    }
}

/// Where the job's secrets come from: names of environment variables, never values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Secrets {
    /// Kubernetes Secret that carries the tokens into the Ray pods.
    pub kubernetes_secret: Name,
    /// Local environment variable holding the Hugging Face token (required).
    pub hf_token_env: EnvName,
    /// Local environment variable holding the W&B API key; null disables W&B logging.
    pub wandb_api_key_env: Option<EnvName>,
}

impl Default for Secrets {
    fn default() -> Self {
        Self {
            kubernetes_secret: Name::new("gke-rl-secrets").expect("valid"),
            hf_token_env: EnvName::new("HF_TOKEN").expect("valid"),
            wandb_api_key_env: Some(EnvName::new("WANDB_API_KEY").expect("valid")),
        }
    }
}
