//! Why an operation failed, typed, with what fixes it: a front end words the fix in its own
//! commands.

use std::path::PathBuf;

use gke_rl::lifecycle::Command;
use gke_rl_validate::Finding;

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No project id anywhere: not in the options, the config, the environment or gcloud's
    /// configuration.
    #[error(
        "no project: export PROJECT_ID, set project.project_id in the config, or run `gcloud config set project PROJECT_ID` (deploy and destroy also take --project PROJECT_ID)"
    )]
    NoProject,
    /// A project id that is not one.
    #[error("{from}: {reason}; a project id has 6 to 30 lowercase letters, digits and hyphens and starts with a letter")]
    BadProject {
        /// Where it came from.
        from: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Another process holds the deployment folder (a deploy or destroy in progress).
    #[error("{} is in use by {holder}; wait for it to end, or stop that process", folder.display())]
    FolderInUse {
        /// The deployment folder.
        folder: PathBuf,
        /// Who holds it, as its lock file says: `pid 4242: gke-rl deploy`.
        holder: String,
    },
    /// A file could not be read or is not text.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
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
    /// The deployment's long-lived RayCluster is up where a RayJob's cluster is to come.
    #[error(
        "RayCluster {namespace}/{cluster} is up and holds the GPU nodes the RayJob's own cluster needs: suspend it first (`gke-rl suspend`), or submit to it (without --as rayjob)"
    )]
    ClusterHoldsNodes {
        /// The RayCluster.
        cluster: String,
        /// Its namespace.
        namespace: String,
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
    /// A file that is larger than gke-rl reads.
    #[error("{} is {:.1} MiB; gke-rl reads files of at most {} MiB", path.display(), *bytes as f64 / 1_048_576.0, gke_rl_validate::MAX_FILE_BYTES / 1_048_576)]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// A named pipe, socket or device where a file was expected.
    #[error("{} is {kind}, not a file; gke-rl reads regular files, `<(command)` and /dev/stdin", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// A file that is not UTF-8 text.
    #[error("{}:{}:{}: not UTF-8 text; save the file as UTF-8", path.display(), at.0, at.1)]
    NotText {
        /// The file.
        path: PathBuf,
        /// Line and column of the first byte that is not UTF-8.
        at: (u32, u32),
    },
    /// A file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
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
    /// The SDK refused the model (an unknown image, a value).
    #[error(transparent)]
    Model(#[from] gke_rl::Error),
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
    /// The render (with the patched blueprint, when there is one) fails validation: nothing was
    /// written or deployed.
    #[error("the render fails validation, as `render` would say; nothing was written or deployed:\n  {}", errors.join("\n  "))]
    Invalid {
        /// `file:line: message` of each error.
        errors: Vec<String>,
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
    /// Cloud Monitoring's endpoint override is neither Google's nor on loopback.
    #[error(
        "{given} is neither Cloud Monitoring's endpoint ({}) nor a loopback address (a test's); gcloud's access token goes nowhere else",
        gke_rl_in_cluster::lustre_usage::ENDPOINT
    )]
    MonitoringEndpoint {
        /// The endpoint given.
        given: String,
    },
    /// gcloud gave no access token.
    #[error("cannot get an access token from gcloud (`gcloud auth print-access-token`): {reason}")]
    AccessToken {
        /// Why.
        reason: String,
    },
    /// Cloud Monitoring did not list a metric.
    #[error("Cloud Monitoring could not list {metric}: {reason}")]
    Monitoring {
        /// The metric type.
        metric: String,
        /// Why.
        reason: String,
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
    /// No RayJob of that name.
    #[error("there is no RayJob {namespace}/{name}; `kubectl get rayjobs -n {namespace}` lists them")]
    NoRayJob {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
    },
    /// The RayJob has no RayCluster up to reach.
    #[error("RayJob {namespace}/{name} is {state}: {why}")]
    RayJobNoCluster {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its `jobDeploymentStatus`.
        state: String,
        /// Why there is nothing to reach.
        why: &'static str,
    },
    /// A RayJob of the name a submit applies has not finished.
    #[error("RayJob {namespace}/{name} is {state}, not finished; to replace it, stop it with `gke-rl stop {name}`")]
    RayJobBusy {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its `jobDeploymentStatus`.
        state: String,
    },
    /// The RayJob ended before its job ran.
    #[error("RayJob {namespace}/{name} is {state} before its job was submitted{}{}", .reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default(), .message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
    RayJobEnded {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its state.
        state: String,
        /// KubeRay's reason.
        reason: Option<String>,
        /// KubeRay's message.
        message: Option<String>,
    },
    /// The RayJob's cluster did not come up in time.
    #[error("RayJob {namespace}/{name}'s cluster is not up after {}s (it is {state})", .waited.as_secs())]
    RayJobNotUp {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its last state.
        state: String,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// The RayJob a submit applied went away, or was applied again by another submit, while
    /// its cluster came up.
    #[error("RayJob {namespace}/{name} changed while its cluster came up: {why}")]
    RayJobGone {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// What happened.
        why: String,
    },
    /// The RayJob's cluster was taken away while its run was followed (preempted, as by Kueue):
    /// the run is lost, and the RayJob deleted, or not.
    #[error("RayJob {namespace}/{name} is {state}: its cluster was taken away (preempted), and the run with it; {}", match not_deleted {
        None => "the RayJob is deleted: submit again, and NeMo-RL resumes from its newest checkpoint".to_owned(),
        Some(e) => format!("deleting it failed ({e}): delete it with `kubectl delete rayjob {name} -n {namespace}`, or KubeRay waits for the lost job until it is deleted"),
    })]
    RunPreempted {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Its state now.
        state: String,
        /// Why it was not deleted, if it was not.
        not_deleted: Option<String>,
    },
    /// KubeRay did not take up the job named in the RayJob in time.
    #[error("KubeRay did not follow job {id} in RayJob {namespace}/{name} within {}s (it is {state}): is the KubeRay operator running?", .waited.as_secs())]
    RayJobNotFollowing {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// The job.
        id: String,
        /// Its last state.
        state: String,
        /// How long it waited.
        waited: std::time::Duration,
    },
    /// A signal stopped the operation.
    #[error("interrupted (signal {signal})")]
    Interrupted {
        /// The signal's number.
        signal: i32,
    },
    /// A submit stopped before the RayJob it made had its job: the RayJob was deleted, so
    /// that its nodes go, or could not be.
    #[error("{source}; {}", match deleted {
        Ok(()) => format!("RayJob {namespace}/{name} is deleted, so that its nodes go"),
        Err((e, deadline)) => format!(
            "deleting RayJob {namespace}/{name} failed ({e}): delete it with `kubectl delete rayjob {name} -n {namespace}`, or its GPU nodes stay {}",
            deadline.map_or_else(|| "until it is deleted".to_owned(), |s| format!("until its pre-running deadline ({s} s from its start)"))
        ),
    })]
    RayJobNotStarted {
        /// Its name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// Whether it was deleted, or why not and its pre-running deadline in seconds, if any.
        deleted: Result<(), (String, Option<u32>)>,
        /// What stopped the submit.
        source: Box<Error>,
    },
    /// A RayJob is applied through Kubernetes, so no Ray address applies.
    #[error("in rayjob mode submit applies a RayJob through Kubernetes and reaches its own cluster; drop --address and unset RAY_ADDRESS")]
    RayJobByAddress,
    /// The run's window in time is unknown or unusable.
    #[error("the run's time is not known well enough to ask what its Lustre instance did meanwhile: {why}")]
    NoRunWindow {
        /// Why.
        why: &'static str,
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
    /// The Kubernetes API.
    #[error(transparent)]
    Kube(Box<gke_rl_kube::Error>),
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
    /// The Ray Jobs API or the packager.
    #[error(transparent)]
    Ray(#[from] gke_rl_ray::Error),
    /// `--env-from-local RAY_AUTH_TOKEN`.
    #[error(
        "--env-from-local RAY_AUTH_TOKEN would write the Ray token into the job's runtime env, which the Jobs API shows to everyone who lists jobs; the Ray pods have it already (KubeRay sets RAY_AUTH_TOKEN in every Ray container)"
    )]
    RayTokenToJob,
    /// A file of the package holds the Ray token.
    #[error("the package holds the Ray token (the one from {from}); a secret must never be uploaded: exclude the file in .rayignore")]
    RayTokenInPackage {
        /// Where the token came from.
        from: String,
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
    /// The RayCluster asks for a Ray token that its Secret does not hold.
    #[error(
        "RayCluster {namespace}/{cluster} admits only holders of the Ray token in Secret {namespace}/{secret} (key auth_token), which holds none or does not exist: delete that Secret if it is there and run deploy, which makes a new token, then restart the pods with `gke-rl suspend` and `gke-rl resume`; or set RAY_AUTH_TOKEN to the cluster's token"
    )]
    NoRayToken {
        /// The RayCluster.
        cluster: String,
        /// Its namespace.
        namespace: String,
        /// The Secret.
        secret: String,
    },
    /// A supervised run's submission went away without its supervisor's final record, and no
    /// resubmission followed in time.
    #[error("{why}, and no resubmission of it appeared within {}s", .after.as_secs())]
    NotResubmitted {
        /// The submission.
        id: String,
        /// What happened to it.
        why: String,
        /// How long it waited.
        after: std::time::Duration,
    },
    /// A run's submission went away, or failed without its supervisor's record, and nothing
    /// resubmits it.
    #[error(
        "{why}, and nothing resubmits it (KubeRay retries nothing in InteractiveMode): stop the RayJob and submit again; NeMo-RL resumes from its newest checkpoint"
    )]
    RunLost {
        /// The submission.
        id: String,
        /// What happened to it.
        why: String,
    },
    /// A job did not end within its time; it was asked to stop.
    #[error("job {id} did not end within {}s; it was asked to stop (see `logs {id}`)", .after.as_secs())]
    JobTimedOut {
        /// The job.
        id: String,
        /// How long it was given.
        after: std::time::Duration,
    },
    /// The runtime env has errors: nothing was submitted.
    #[error("{name} has errors; nothing was submitted")]
    RuntimeEnv {
        /// The runtime env's name.
        name: String,
        /// Every finding (errors among them).
        findings: Vec<Finding>,
    },
    /// The runtime env is not a mapping, or a field of it is not of the right type.
    #[error("{name}: {problem}")]
    RuntimeEnvShape {
        /// The runtime env's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// A file for the job folder is not usable.
    #[error("{}: {problem}", path.display())]
    Include {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A submission id that cannot name a run: not a plain name, or shaped as a restart's
    /// (`<run>-rN`), which only the keeper gives.
    #[error("submission id `{id}` {problem}")]
    RunId {
        /// The id given.
        id: String,
        /// What is wrong, and the fix.
        problem: String,
    },
    /// A variable to pass from the local environment is not set.
    #[error("{0} is not set in this environment")]
    EnvFromLocalUnset(String),
    /// No address was given, and the port-forward to the head pod failed.
    #[error("no Ray address, and the port-forward to the head failed")]
    PortForward {
        /// Why it failed.
        #[source]
        source: Box<Error>,
    },
    /// No submission to act on.
    #[error("the cluster has no submitted jobs yet")]
    NoJobs,
    /// A job did not stop in time.
    #[error("job {id} is still {status} a minute after the stop request")]
    StillRunning {
        /// Submission id.
        id: String,
        /// Its state.
        status: gke_rl_ray::JobStatus,
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
    /// Something of the process's own failed (a signal handler, a local port).
    #[error("{what}")]
    Local {
        /// What failed.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl From<gke_rl_kube::Error> for Error {
    fn from(error: gke_rl_kube::Error) -> Self {
        Error::Kube(Box::new(error))
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

/// What fixes a failure to use the cluster's Kubernetes API; a front end words it with its
/// own commands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fix {
    /// The control plane answers only its authorized networks: deploy again with this
    /// machine's address as the authorized CIDR (or the cluster is gone).
    AuthorizedNetworks,
    /// The kubeconfig's CA or entry is not the cluster's: write it again with this command.
    GetCredentials(Command),
    /// The credentials were refused: refresh them with this command (after `gcloud auth login`
    /// if gcloud's login expired).
    RefreshCredentials(Command),
    /// The account may not act in the cluster: grant it roles/container.developer.
    GrantDeveloperRole,
    /// Install gke-gcloud-auth-plugin.
    InstallAuthPlugin,
    /// gke-gcloud-auth-plugin failed: `gcloud auth login`.
    GcloudLogin,
}

impl Error {
    /// The fix when the error is about reaching the cluster's API; `get_credentials` is the
    /// command that writes the cluster's kubeconfig entry.
    pub fn fix(&self, get_credentials: &Command) -> Option<Fix> {
        use gke_rl_kube::Unreachable;
        let kube = match self {
            Error::Kube(e) => &**e,
            Error::PortForward { source } => return source.fix(get_credentials),
            _ => return None,
        };
        Some(match kube {
            gke_rl_kube::Error::Kubeconfig(_) => Fix::GetCredentials(get_credentials.clone()),
            gke_rl_kube::Error::Unreachable { cause, .. } => match cause {
                Unreachable::Connect(detail) if detail.contains("certificate") => Fix::GetCredentials(get_credentials.clone()),
                Unreachable::Connect(_) | Unreachable::NoAnswer(_) => Fix::AuthorizedNetworks,
                Unreachable::Unauthorized(_) => Fix::RefreshCredentials(get_credentials.clone()),
                Unreachable::Forbidden(_) => Fix::GrantDeveloperRole,
                Unreachable::CredentialPlugin { missing: true, .. } => Fix::InstallAuthPlugin,
                Unreachable::CredentialPlugin { missing: false, .. } => Fix::GcloudLogin,
                // Not the API server's doing: a proxy, or a server gone wrong. Nothing to run.
                Unreachable::AnswerTooLarge => return None,
            },
            _ => return None,
        })
    }
}

/// A Kueue queue or none, in words.
fn queue_words(queue: &Option<String>) -> String {
    queue.as_ref().map_or_else(|| "in no Kueue queue".to_owned(), |q| format!("in Kueue queue `{q}`"))
}

/// Why nobody can answer a question: no terminal to ask on, a question the front end does
/// not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unanswerable(pub String);
