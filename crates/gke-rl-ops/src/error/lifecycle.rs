//! Why deploy, destroy, suspend or resume failed.

use std::path::PathBuf;

use gke_rl::lifecycle::Command;

use super::{CommonError, JobError, KeepError, Unanswerable, holds_common};

/// Why deploy, destroy, suspend or resume failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleError {
    /// What any operation can meet.
    #[error(transparent)]
    Common(#[from] CommonError),
    /// Keeping what a run made: an export, an import, or a destroy that would lose it.
    #[error(transparent)]
    Keep(Box<KeepError>),
    /// Reaching the RayCluster's head, or a job on it (the checkpoint lister, the converter).
    #[error(transparent)]
    Head(Box<JobError>),
    /// A signal stopped the operation; what it did is recorded, and running it again goes on.
    #[error("interrupted by signal {signal}; run the same command again to go on")]
    Interrupted {
        /// The signal's number (2 for Ctrl-C, 15 for SIGTERM, 1 for SIGHUP).
        signal: i32,
    },
    /// Another process holds the deployment folder (a deploy or destroy in progress).
    #[error("{} is in use by {holder}; wait for it to end, or stop that process", folder.display())]
    FolderInUse {
        /// The deployment folder.
        folder: PathBuf,
        /// Who holds it, as its lock file says: `pid 4242: gke-rl deploy`.
        holder: String,
    },
    /// The state file is not gke-rl's.
    #[error("{}: not a gke-rl state file", path.display())]
    State {
        /// The state file.
        path: PathBuf,
        /// Why it is not.
        #[source]
        source: gke_rl::Error,
    },
    /// The state file belongs to another deployment or project.
    #[error("refusing to act: {mismatch}")]
    ForeignState {
        /// The state file.
        path: PathBuf,
        /// How it differs.
        mismatch: String,
    },
    /// A template the blueprint stages is not beside it.
    #[error("{} stages {name}, which gcluster reads beside it, and {} does not exist; copy it from a Cluster Toolkit checkout's {}, or patch the checkout's blueprint with --toolkit", blueprint.display(), path.display(), gke_rl::knowledge::toolkit_example())]
    StagedTemplateMissing {
        /// The blueprint that stages it.
        blueprint: PathBuf,
        /// The template's name.
        name: &'static str,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The blueprint's Kueue template, from which a queued run's is staged, is not as gke-rl
    /// knows it.
    #[error("{}: {source}", path.display())]
    KueueTemplate {
        /// The template.
        path: PathBuf,
        /// Why it cannot be staged.
        source: Box<gke_rl::StageError>,
    },
    /// The config puts the RayCluster in another Kueue queue (or in or out of one) than the
    /// running one is in.
    #[error("RayCluster {namespace}/{cluster} is {}, and the config says {}: Kueue moves no cluster between queues, and one taken out of its queue keeps its quota; delete it (`kubectl delete raycluster {cluster} -n {namespace}`, which ends its jobs), then deploy again", queue_words(.was), queue_words(.now))]
    QueueChanged {
        /// The RayCluster.
        cluster: String,
        /// Its namespace.
        namespace: String,
        /// The queue it is in.
        was: Option<String>,
        /// The queue the config names.
        now: Option<String>,
    },
    /// A queued RayCluster without a Kueue Workload.
    #[error(
        "RayCluster {cluster} is labelled with a Kueue queue (job.queue), but Kueue has no Workload for it: Kueue has not made it yet (try again in a moment), or is not installed (the blueprint's workload-manager-install module, `kueue: install: true`); `kubectl get workloads` shows them"
    )]
    NoWorkload {
        /// The RayCluster.
        cluster: String,
    },
    /// The upstream blueprint is not of the shape the patcher knows.
    #[error("{}:{}:{}: {}", path.display(), diagnostic.line, diagnostic.column, diagnostic.message)]
    Blueprint {
        /// The blueprint file.
        path: PathBuf,
        /// Its text, for snippets.
        text: String,
        /// Where and what.
        diagnostic: Box<gke_rl::Diagnostic>,
    },
    /// A preflight check failed: every problem, at once.
    #[error("{}", problems.iter().map(|p| format!("  - {}", p.to_string().replace('\n', "\n    "))).collect::<Vec<_>>().join("\n"))]
    Preflight {
        /// The problems.
        problems: Vec<Problem>,
    },
    /// A program the plan runs failed (its output went to the terminal).
    #[error("{what} failed; its output is above")]
    CommandFailed {
        /// The command, in words: "gcluster deploy".
        what: String,
    },
    /// The command acts on the deployment's long-lived RayCluster, which `job.mode: rayjob`
    /// does not have.
    #[error("{command} acts on the deployment's long-lived RayCluster, which job.mode: rayjob does not have; {instead}")]
    RayJobMode {
        /// The command refused.
        command: &'static str,
        /// What to do in RayJob mode instead.
        instead: &'static str,
    },
    /// A read-only command failed.
    #[error("{what}: {reason}")]
    Query {
        /// What was asked.
        what: String,
        /// Why it failed.
        reason: String,
    },
    /// A bucket could not be emptied: destroy stops before deleting anything else.
    #[error("could not empty bucket {bucket} ({objects} objects); gcluster destroy would fail on it. Nothing else was deleted")]
    BucketNotEmptied {
        /// The bucket.
        bucket: String,
        /// Objects it held.
        objects: usize,
    },
    /// A secret variable the Secret needs is not set.
    #[error("${0} is not set")]
    SecretUnset(String),
    /// The pods wait for GPU nodes that do not come.
    #[error("{source}\nthe pods wait for GPU nodes that do not come: {cause}.\n  see the node pool: {inspect}")]
    NoCapacity {
        /// The wait's timeout, with the last state seen.
        #[source]
        source: Box<gke_rl_kube::Error>,
        /// Why, as far as can be told.
        cause: String,
        /// The command that shows the node pool.
        inspect: Command,
    },
    /// Objects of the Lustre volume's names that gke-rl did not apply.
    #[error(
        "the Lustre volume's names are taken: gke-rl did not apply {objects} (no app.kubernetes.io/managed-by: gke-rl label) \
         and does not take it over; set lustre.pvc_name to another claim name (the volume is named after it), or delete it yourself"
    )]
    ForeignVolume {
        /// Each, as `Kind name`.
        objects: String,
    },
    /// A RayCluster of the deployment's name that gke-rl did not apply.
    #[error(
        "RayCluster {namespace}/{name} exists and gke-rl did not apply it (no app.kubernetes.io/managed-by: gke-rl label): \
         gke-rl does not take it over; delete it yourself (kubectl delete raycluster {name} -n {namespace}), or deploy \
         into another namespace (ray.namespace)"
    )]
    ForeignRayCluster {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The API server dropped `authOptions` from the applied RayCluster.
    #[error(
        "the API server dropped spec.authOptions from RayCluster {namespace}/{name}: the cluster's KubeRay is older than 1.5.1 and its pods would start without token authentication; upgrade KubeRay (GKE's Ray operator add-on with the cluster), or set `ray.auth: disabled` to get the NetworkPolicy instead"
    )]
    TokenAuthDropped {
        /// Namespace.
        namespace: String,
        /// The RayCluster.
        name: String,
    },
    /// This machine's public address could not be told.
    #[error("cannot detect this machine's public address from {url}: {reason}")]
    PublicAddress {
        /// The address-echo service.
        url: String,
        /// Why.
        reason: String,
    },
    /// Nobody could answer a question asked before acting.
    #[error("{question}\nrefusing to go on without an answer: {reason}")]
    Unanswered {
        /// The question.
        question: String,
        /// Why no answer could be had.
        reason: Unanswerable,
    },
}

holds_common!(LifecycleError);

impl From<KeepError> for LifecycleError {
    fn from(error: KeepError) -> Self {
        LifecycleError::Keep(Box::new(error))
    }
}

impl LifecycleError {
    /// The keeping error this is, if it is one.
    pub fn keep(&self) -> Option<&KeepError> {
        match self {
            LifecycleError::Keep(keep) => Some(keep),
            _ => None,
        }
    }
}

impl From<JobError> for LifecycleError {
    fn from(error: JobError) -> Self {
        LifecycleError::Head(Box::new(error))
    }
}

impl From<gke_rl_ray::Error> for LifecycleError {
    fn from(error: gke_rl_ray::Error) -> Self {
        JobError::from(error).into()
    }
}

impl LifecycleError {
    /// Why the cluster's Kubernetes API cannot be used, when that is what this comes down to
    /// (reaching the head through it included): an operation that goes on without the API does
    /// not wait for it a second time.
    pub(crate) fn api_unusable(&self) -> Option<String> {
        fn of_job(error: &JobError) -> Option<String> {
            match error {
                // The API answered: there is no head (a destroy run again after the RayCluster went).
                JobError::Common(CommonError::Kube(kube)) if matches!(**kube, gke_rl_kube::Error::NoHeadPod(_)) => None,
                JobError::Common(common @ CommonError::Kube(_)) => Some(crate::chain(common)),
                JobError::PortForward { source } => of_job(source),
                _ => None,
            }
        }
        match self {
            LifecycleError::Common(CommonError::Kube(kube)) if matches!(**kube, gke_rl_kube::Error::NoHeadPod(_)) => None,
            LifecycleError::Common(common @ CommonError::Kube(_)) => Some(crate::chain(common)),
            LifecycleError::Head(job) => of_job(job),
            _ => None,
        }
    }
}

/// One preflight problem, with what fixes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// No active gcloud account.
    #[error(
        "no active gcloud account: run `gcloud auth login` and `gcloud auth application-default login` (gcluster's validators and Terraform use the application-default credentials)"
    )]
    NoAccount,
    /// APIs the blueprint needs are off.
    #[error("APIs not enabled in {project}: {}\n  enable them: {enable}", missing.join(", "))]
    ApisDisabled {
        /// The project.
        project: String,
        /// The APIs.
        missing: Vec<String>,
        /// The command that enables them.
        enable: Command,
    },
    /// The enabled APIs could not be listed.
    #[error("cannot list the enabled APIs of {project}: {reason}")]
    ApisUnknown {
        /// The project.
        project: String,
        /// Why.
        reason: String,
    },
    /// No gcluster to run.
    #[error("gcluster not found in {toolkit} or on PATH ({reason}): run `make` in the Cluster Toolkit checkout, or put gcluster on PATH")]
    NoGcluster {
        /// The toolkit checkout.
        toolkit: String,
        /// Why.
        reason: String,
    },
    /// Terraform or Packer, which gcluster needs, is missing.
    #[error("{tool} is not on PATH: install it (gcluster needs Terraform and Packer), or let gcluster download them")]
    NoTool {
        /// The program.
        tool: String,
    },
    /// The credential plugin GKE kubeconfigs run is missing.
    #[error(
        "{} is not on PATH: the cluster's kubeconfig runs it to authenticate; install it with {}",
        gke_rl::lifecycle::AUTH_PLUGIN,
        gke_rl::lifecycle::INSTALL_AUTH_PLUGIN
    )]
    NoAuthPlugin,
    /// No Cluster Toolkit checkout.
    #[error(
        "no Cluster Toolkit checkout at {toolkit}: clone https://github.com/GoogleCloudPlatform/cluster-toolkit there and build gcluster with `make` in it, or name another checkout"
    )]
    NoToolkit {
        /// Where it was looked for.
        toolkit: String,
    },
    /// A secret variable is not set.
    #[error("${variable} is not set: export it; its value goes into the Kubernetes Secret and nowhere else")]
    SecretUnset {
        /// The variable.
        variable: String,
    },
    /// The region's GPU quota cannot hold the nodes' GPUs.
    #[error(
        "{metric} quota in {region} has {free} of {limit} free, but {needed} GPUs are needed: request more at \
         https://console.cloud.google.com/iam-admin/quotas?project={project} (filter by {metric}), or deploy fewer nodes"
    )]
    GpuQuota {
        /// The quota metric.
        metric: String,
        /// The region.
        region: String,
        /// The project.
        project: String,
        /// Its limit.
        limit: u64,
        /// What is free of it.
        free: u64,
        /// GPUs the nodes hold.
        needed: u64,
    },
    /// The region's quotas could not be read.
    #[error("cannot read the quotas of {region}: {reason}")]
    QuotaUnknown {
        /// The region.
        region: String,
        /// Why.
        reason: String,
    },
    /// The zone does not offer the machine type.
    #[error(
        "zone {zone} does not offer {machine}: pick a zone that does (`gcloud compute machine-types list --filter=name={machine}` lists them) and set it with its region"
    )]
    MachineTypeMissing {
        /// The machine type.
        machine: String,
        /// The zone.
        zone: String,
    },
    /// The zone lacks the RoCE network profile the RDMA network needs.
    #[error(
        "zone {zone} has no RoCE network profile ({zone}-vpc-roce), which the blueprint's RDMA network needs: pick a zone with RDMA, or set fabric.mode: off"
    )]
    NoRoceProfile {
        /// The zone.
        zone: String,
    },
    /// Managed Lustre does not serve the zone (or cannot be asked).
    #[error(
        "Managed Lustre does not answer for zone {zone} ({reason}): pick a zone it serves \
         (https://cloud.google.com/managed-lustre/docs/locations) that also offers the GPU machine type"
    )]
    LustreLocation {
        /// The zone.
        zone: String,
        /// gcloud's answer.
        reason: String,
    },
    /// The existing cluster cannot be read.
    #[error(
        "cannot read cluster {cluster} in {location} ({reason}): check project.cluster_name and project.region, \
         or set project.existing_cluster: false to have gke-rl create it"
    )]
    ClusterUnknown {
        /// The cluster.
        cluster: String,
        /// Where it was looked for.
        location: String,
        /// gcloud's answer.
        reason: String,
    },
    /// The config disagrees with the existing cluster or Lustre instance.
    #[error("{0}")]
    Misfit(gke_rl::lifecycle::existing::Misfit),
    /// gcloud described an existing cluster or instance with what gke-rl cannot read (a count
    /// past its type, a tier it cannot tell): nothing of it is guessed.
    #[error(
        "gcloud's description of {what} holds what gke-rl cannot read ({reason}): nothing was changed, and nothing of it \
         is guessed; compare it with the API's reference, and report it if gcloud's answer is sound"
    )]
    Undescribed {
        /// The cluster or instance.
        what: String,
        /// What cannot be read.
        reason: String,
    },
    /// The existing Lustre instance cannot be read.
    #[error(
        "cannot read Lustre instance {instance} in {zone} ({reason}): check lustre.instance_id and project.zone, \
         or set lustre.existing: false to have gke-rl create it"
    )]
    LustreUnknown {
        /// The instance.
        instance: String,
        /// Where it was looked for.
        zone: String,
        /// gcloud's answer.
        reason: String,
    },
    /// `lustre.existing` on a cluster gke-rl makes.
    #[error(
        "lustre.existing: true attaches instance {instance} to a cluster gke-rl did not create; the blueprint creates the instance it mounts: \
         set project.existing_cluster: true too (for your own cluster), or lustre.existing: false"
    )]
    ExistingLustreNeedsExistingCluster {
        /// The instance.
        instance: String,
    },
    /// A queue on a cluster gke-rl did not create.
    #[error(
        "job.queue names a Kueue queue of gke-rl's blueprint, which a cluster gke-rl did not create lacks: remove job.queue (or use your \
         cluster's own queues by hand)"
    )]
    QueueOnExistingCluster,
    /// The existing cluster's Kubernetes API cannot be read: its Nodes or GKE networks.
    #[error(
        "cannot read the {what} of cluster {cluster} ({reason}): deploy reads them through `gcloud container clusters \
         get-credentials`; {fix}"
    )]
    ClusterObjectsUnknown {
        /// The cluster.
        cluster: String,
        /// What: "nodes", "GKE networks".
        what: &'static str,
        /// Why.
        reason: String,
        /// What to do.
        fix: &'static str,
    },
    /// This machine cannot reach the control plane from where it is.
    #[error(
        "this machine's public address {address} is outside the authorized CIDR {cidr} of cluster {cluster}: its Kubernetes API will not answer"
    )]
    OutsideAuthorizedCidr {
        /// This machine's public address.
        address: String,
        /// The CIDR the control plane accepts.
        cidr: String,
        /// The cluster.
        cluster: String,
    },
}

/// A Kueue queue or none, in words.
fn queue_words(queue: &Option<String>) -> String {
    queue.as_ref().map_or_else(|| "in no Kueue queue".to_owned(), |q| format!("in Kueue queue `{q}`"))
}
