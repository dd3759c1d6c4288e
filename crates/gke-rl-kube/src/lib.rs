//! Kubernetes operations for gke-rl, on kube-rs: the token Secret, the RayCluster (server-side
//! apply), waiting for its pods with the reasons they are not Ready, deleting it, and a
//! port-forward to the head's dashboard.
//!
//! Every call goes through a [`kube::Client`], so tests hand in kube's mock service, and
//! every call is bounded in time: an API server out of reach is an [`Error::Unreachable`]
//! naming the cause, never a hang.

#[cfg(feature = "fake")]
pub mod fake;
pub mod portforward;
mod reach;
mod readiness;

use gke_rl::knowledge::{NODE_POOL_LABEL, QUEUE_LABEL};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};

pub use reach::{Connected, Options, Unreachable, connect, contexts};
pub use readiness::{ClusterState, Readiness, assess};

/// The field manager of every object gke-rl applies.
pub const FIELD_MANAGER: &str = "gke-rl";

/// Why a Kubernetes operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or could not be reached.
    #[error("{action}")]
    Api {
        /// What was being done, e.g. "apply RayCluster ray-a4-gpu-spot".
        action: String,
        /// kube's error.
        source: kube::Error,
    },
    /// The rendered RayCluster is not a manifest this crate can apply.
    #[error("the RayCluster manifest {0}")]
    Manifest(String),
    /// The pods did not become Ready in time.
    #[error("not Ready after {}s: {}/{} pods Ready, {}{}", .waited.as_secs(), .readiness.progress().0, .readiness.progress().1, .readiness.state.describe(), problems(.readiness))]
    NotReady {
        /// How long it waited.
        waited: Duration,
        /// The last state seen.
        readiness: Readiness,
    },
    /// Pods were still there when the wait for them to go ran out.
    #[error("{remaining} pods of RayCluster {cluster} are still there after {}s", .waited.as_secs())]
    PodsRemain {
        /// The RayCluster.
        cluster: String,
        /// Pods left.
        remaining: usize,
        /// How long it waited.
        waited: Duration,
    },
    /// A RayJob was still there when the wait for it to go ran out.
    #[error("RayJob {name} is still there after {}s: its pods have not gone (`kubectl describe rayjob {name}` and its pods say why)", .waited.as_secs())]
    RayJobRemains {
        /// The RayJob.
        name: String,
        /// How long it waited.
        waited: Duration,
    },
    /// A list ran past the most items gke-rl reads.
    #[error("{action}: more than {limit} pages of them")]
    TooMany {
        /// What was being listed.
        action: String,
        /// The most pages read.
        limit: u32,
    },
    /// A RayJob of that name exists already.
    #[error("RayJob {0} exists already")]
    RayJobExists(String),
    /// No running head pod to forward to.
    #[error("RayCluster {0} has no running head pod (is it deployed?)")]
    NoHeadPod(String),
    /// The kubeconfig could not be read, or has no usable context.
    #[error("cannot load the kubeconfig: {0}")]
    Kubeconfig(String),
    /// The API server could not be used at all: not reached, not in time, or it refused the
    /// credentials.
    #[error("{action}: {cause}")]
    Unreachable {
        /// What was being done.
        action: String,
        /// Why the API server could not be used.
        cause: Unreachable,
    },
}

impl Error {
    /// kube's error for `action`, classified: out of reach, or refused by the API.
    fn from_kube(action: String, mut source: kube::Error) -> Self {
        // The server's message is printed: a server gone wrong may send megabytes of it.
        if let kube::Error::Api(status) = &mut source {
            status.message = reach::cut(&status.message);
            status.reason = reach::cut(&status.reason);
        }
        match reach::classify(&source) {
            Some(cause) => Error::Unreachable { action, cause },
            None => Error::Api { action, source },
        }
    }

    /// Whether the API answered 404.
    fn is_not_found(&self) -> bool {
        self.status_code() == Some(404)
    }

    /// Whether the API server denied it (403): the credentials hold no such right.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Error::Unreachable { cause: Unreachable::Forbidden(_), .. })
    }

    /// The HTTP status the API answered with, when it answered with an error.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Error::Api { source: kube::Error::Api(status), .. } => Some(status.code),
            _ => None,
        }
    }
}

/// A delete's outcome: whether there was something to delete.
fn deleted<T>(result: Result<T, Error>) -> Result<bool, Error> {
    match result {
        Ok(_) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

/// The one object of a manifest.
fn parse_object(manifest: &str) -> Result<DynamicObject, Error> {
    let root = gke_rl_yaml::Node::try_parse(manifest).map_err(|e| Error::Manifest(format!("is not YAML: {e}")))?;
    serde_json::from_value(root.to_json()).map_err(|e| Error::Manifest(format!("is not an object: {e}")))
}

/// The annotation that names the submission a RayJob was applied for.
pub const SUBMISSION_ANNOTATION: &str = "gke-rl/submission";

/// A RayJob as KubeRay reports it in its status (`apis/ray/v1/rayjob_types.go`, KubeRay v1.7.0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RayJobState {
    /// `jobDeploymentStatus`: empty while new, then `Initializing` (its cluster starting),
    /// `Waiting` (for `spec.jobId` in InteractiveMode), `Running`, `Complete`, `Failed`,
    /// `ValidationFailed`, or `Suspending`/`Suspended`/`Retrying`.
    pub deployment: String,
    /// Ray's state of the job (`PENDING`, `RUNNING`, `SUCCEEDED`, `FAILED`, `STOPPED`), once known.
    pub job: String,
    /// The job it names (`spec.jobId`).
    pub job_id: Option<String>,
    /// The job KubeRay follows (`status.jobId`, set from `spec.jobId` on `Running`).
    pub following: Option<String>,
    /// The RayCluster it made (`status.rayClusterName`).
    pub cluster: Option<String>,
    /// Why it failed, in KubeRay's words (`status.reason`).
    pub reason: Option<String>,
    /// KubeRay's message (`status.message`).
    pub message: Option<String>,
    /// Its uid.
    pub uid: String,
    /// The submission it was applied for ([`SUBMISSION_ANNOTATION`]).
    pub submission: Option<String>,
    /// Whether it is being deleted (a foreground delete waits for its cluster's pods).
    pub deleting: bool,
}

impl RayJobState {
    fn of(job: &DynamicObject) -> Self {
        let text = |value: &serde_json::Value| value.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        let status = &job.data["status"];
        let annotations = job.metadata.annotations.as_ref();
        RayJobState {
            deployment: text(&status["jobDeploymentStatus"]).unwrap_or_default(),
            job: text(&status["jobStatus"]).unwrap_or_default(),
            job_id: text(&job.data["spec"]["jobId"]),
            following: text(&status["jobId"]),
            cluster: text(&status["rayClusterName"]),
            reason: text(&status["reason"]),
            message: text(&status["message"]),
            uid: job.metadata.uid.clone().unwrap_or_default(),
            submission: annotations.and_then(|a| a.get(SUBMISSION_ANNOTATION)).cloned(),
            deleting: job.metadata.deletion_timestamp.is_some(),
        }
    }

    /// Whether KubeRay is done with it: it reconciles a `Complete`, `Failed` or
    /// `ValidationFailed` RayJob no further.
    pub fn is_finished(&self) -> bool {
        matches!(self.deployment.as_str(), "Complete" | "Failed" | "ValidationFailed")
    }

    /// Whether its cluster is up and KubeRay waits for its job or follows it; never while it
    /// is being deleted (KubeRay writes no status then).
    pub fn has_cluster_up(&self) -> bool {
        !self.deleting && matches!(self.deployment.as_str(), "Waiting" | "Running")
    }

    /// Its deployment state as a word, `New` before KubeRay has seen it, `Deleting` while it goes.
    pub fn state(&self) -> &str {
        match self.deployment.as_str() {
            _ if self.deleting => "Deleting",
            "" => "New",
            state => state,
        }
    }
}

/// What Kueue says of a job's Workload (`kueue.x-k8s.io/v1beta2`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Queued {
    /// The Workload's name.
    pub name: String,
    /// The LocalQueue it waits in (`spec.queueName`).
    pub queue: String,
    /// Whether it may be admitted (`spec.active`, true unless set): an inactive Workload is
    /// evicted, its job suspended and its quota given back (Kueue's way to stop a job).
    pub active: bool,
    /// Whether Kueue admitted it (its `Admitted` condition is True).
    pub admitted: bool,
    /// While it has no quota reserved, why: its `QuotaReserved` condition's reason (`Pending`,
    /// or `Inadmissible` for a queue that does not exist or is stopped) and message (Kueue
    /// v0.17.8 `pkg/scheduler/scheduler.go`, `pkg/controller/core/workload_controller.go`).
    pub waiting: Option<(String, String)>,
}

impl Queued {
    /// Whether Kueue holds it back: active, not admitted.
    pub fn is_held(&self) -> bool {
        self.active && !self.admitted
    }

    fn of(workload: &DynamicObject) -> Self {
        let conditions = workload.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
        let condition = |kind: &str| conditions.iter().find(|c| c["type"] == kind);
        let text = |c: &serde_json::Value, key: &str| c[key].as_str().unwrap_or_default().to_owned();
        Queued {
            name: workload.metadata.name.clone().unwrap_or_default(),
            queue: workload.data["spec"]["queueName"].as_str().unwrap_or_default().to_owned(),
            active: workload.data["spec"]["active"] != serde_json::json!(false),
            admitted: condition("Admitted").is_some_and(|c| c["status"] == "True"),
            waiting: condition("QuotaReserved").filter(|c| c["status"] == "False").map(|c| (text(c, "reason"), text(c, "message"))),
        }
    }
}

/// An object of a manifest, its kind, its name, and its API in the namespace.
type Manifested = (DynamicObject, String, String, Api<DynamicObject>);

/// The label every object gke-rl applies carries.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "gke-rl");

/// Kinds a manifest may hold that live outside namespaces.
const CLUSTER_SCOPED: &[&str] = &["PersistentVolume"];

/// The most objects one list asks for: a cluster has a few GKE networks, not thousands.
const LIST_LIMIT: u32 = 500;

/// The most Nodes read: GKE's limit on a cluster's nodes
/// (<https://cloud.google.com/kubernetes-engine/quotas>).
const MOST_NODES: u32 = 65_000;

/// A cluster's GKE networks, as [`Namespaced::gke_networks`] reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GkeNetworks {
    /// GKENetworkParamSets.
    pub param_sets: Vec<gke_rl::lifecycle::existing::ParamSet>,
    /// Networks.
    pub networks: Vec<gke_rl::lifecycle::existing::NetworkRef>,
}

/// KubeRay's `CheckName`: the last 50 characters, a leading digit or punctuation made `r`.
fn kuberay_name(name: &str) -> String {
    let kept = &name[name.len().saturating_sub(50)..];
    match kept.chars().next() {
        Some(first) if first.is_ascii_digit() || first.is_ascii_punctuation() => format!("r{}", &kept[first.len_utf8()..]),
        _ => kept.to_owned(),
    }
}

/// Whether KubeRay saw every pod of the RayCluster Ready once: its `RayClusterProvisioned`
/// condition (KubeRay 1.2 and later), which stays True when pods are lost later.
fn was_provisioned(cluster: &DynamicObject) -> bool {
    let conditions = cluster.data["status"]["conditions"].as_array().into_iter().flatten();
    conditions.into_iter().any(|c| c["type"] == "RayClusterProvisioned" && c["status"] == "True")
}

fn problems(readiness: &Readiness) -> String {
    readiness.problems.iter().map(|p| format!("\n  {p}")).collect()
}

/// How long to wait and how often to look.
#[derive(Clone, Copy, Debug)]
pub struct Wait {
    /// Give up after this long.
    pub timeout: Duration,
    /// Look this often.
    pub poll: Duration,
}

/// gke-rl's objects in one namespace, through the cluster's API: its RayClusters and RayJobs,
/// their Secrets, the helpers' objects and Kueue's Workloads; and the Nodes of a node pool.
#[derive(Clone)]
pub struct Namespaced {
    client: Client,
    namespace: String,
    /// The longest one call may take.
    call_timeout: Duration,
}

impl Namespaced {
    /// Operations in `namespace` through `client`, each bounded by [`Options::default`]'s call timeout.
    pub fn new(client: Client, namespace: &str) -> Self {
        Namespaced { client, namespace: namespace.to_owned(), call_timeout: Options::default().call_timeout }
    }

    /// The same, with every call bounded by `call_timeout`.
    pub fn with_call_timeout(self, call_timeout: Duration) -> Self {
        Namespaced { call_timeout, ..self }
    }

    /// Runs one API call within the call timeout.
    async fn call<T>(&self, action: impl FnOnce() -> String, call: impl Future<Output = Result<T, kube::Error>>) -> Result<T, Error> {
        match tokio::time::timeout(self.call_timeout, call).await {
            Ok(result) => result.map_err(|source| Error::from_kube(action(), source)),
            Err(_) => Err(Error::Unreachable { action: action(), cause: Unreachable::NoAnswer(self.call_timeout) }),
        }
    }

    fn api(&self) -> Api<DynamicObject> {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"));
        Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
    }

    fn ray_jobs(&self) -> Api<DynamicObject> {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayJob"));
        Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
    }

    /// gke-rl's RayJobs here (labelled `app.kubernetes.io/managed-by: gke-rl`), each with the
    /// RayCluster it made (`status.rayClusterName`), if any yet.
    pub async fn managed_ray_jobs(&self) -> Result<Vec<(String, Option<String>)>, Error> {
        let params = ListParams::default().labels("app.kubernetes.io/managed-by=gke-rl");
        let jobs = self.call(|| "list gke-rl's RayJobs".to_owned(), self.ray_jobs().list(&params)).await?;
        Ok(jobs
            .items
            .into_iter()
            .map(|job| {
                let cluster = job.data["status"]["rayClusterName"].as_str().filter(|c| !c.is_empty()).map(str::to_owned);
                (job.metadata.name.unwrap_or_default(), cluster)
            })
            .collect())
    }

    /// The RayJob `name` as KubeRay reports it; `None` when there is none.
    pub async fn ray_job(&self, name: &str) -> Result<Option<RayJobState>, Error> {
        let found = self.call(|| format!("read RayJob {name}"), self.ray_jobs().get_opt(name)).await?;
        Ok(found.map(|job| RayJobState::of(&job)))
    }

    /// Creates the RayJob of the rendered `ray-job.yaml`, annotated with the submission it is
    /// for ([`SUBMISSION_ANNOTATION`]); its name and uid. A create, not an apply: a RayJob of that
    /// name made meanwhile (another submit's) is [`Error::RayJobExists`], never taken over.
    /// `spec.jobId` is left to [`Namespaced::set_ray_job_id`], once the job is in.
    pub async fn create_ray_job(&self, manifest: &str, submission: &str) -> Result<(String, String), Error> {
        let mut object = parse_object(manifest)?;
        if object.types.as_ref().is_none_or(|t| t.kind != "RayJob") {
            return Err(Error::Manifest("is not a RayJob".to_owned()));
        }
        let name = object.metadata.name.clone().ok_or_else(|| Error::Manifest("has no metadata.name".to_owned()))?;
        object.metadata.annotations.get_or_insert_default().insert(SUBMISSION_ANNOTATION.to_owned(), submission.to_owned());
        let params = PostParams { field_manager: Some(FIELD_MANAGER.to_owned()), ..PostParams::default() };
        match self.call(|| format!("create RayJob {name}"), self.ray_jobs().create(&params, &object)).await {
            Ok(created) => Ok((name, created.metadata.uid.unwrap_or_default())),
            Err(Error::Api { source: kube::Error::Api(status), .. }) if status.code == 409 => Err(Error::RayJobExists(name)),
            Err(e) => Err(e),
        }
    }

    /// Names the job KubeRay follows on the RayJob's cluster (`spec.jobId`), on the RayJob of
    /// that uid only.
    pub async fn set_ray_job_id(&self, name: &str, uid: &str, job_id: &str) -> Result<(), Error> {
        // The uid in a patch is a precondition: another RayJob of the name is left alone.
        let patch = serde_json::json!({"metadata": {"uid": uid}, "spec": {"jobId": job_id}});
        let api = self.ray_jobs();
        self.call(|| format!("set RayJob {name}'s job id"), api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))).await?;
        Ok(())
    }

    /// What Kueue says of the Workload it made for the job of `job_uid` (found by its
    /// `kueue.x-k8s.io/job-uid` label, Kueue v0.17.8 `pkg/controller/jobframework`); `None`
    /// when Kueue manages no such job, or is not installed.
    pub async fn workload_of(&self, job_uid: &str) -> Result<Option<Queued>, Error> {
        let api = self.workloads();
        let params = ListParams::default().labels(&format!("kueue.x-k8s.io/job-uid={job_uid}"));
        let listed = match self.call(|| "list Kueue's Workloads".to_owned(), api.list(&params)).await {
            Ok(listed) => listed,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        // While one is being finalized, a job may have two: the other is Kueue's word.
        let live = listed.items.iter().find(|w| w.metadata.deletion_timestamp.is_none());
        Ok(live.or(listed.items.first()).map(Queued::of))
    }

    fn workloads(&self) -> Api<DynamicObject> {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"));
        Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
    }

    /// What Kueue says of the RayCluster `name`, when it is labelled with a queue; `None` when
    /// there is no such cluster, it is not queued, or Kueue made no Workload for it.
    pub async fn queued(&self, name: &str) -> Result<Option<Queued>, Error> {
        let api = self.api();
        let Some(cluster) = self.call(|| format!("read RayCluster {name}"), api.get_opt(name)).await? else { return Ok(None) };
        self.queued_of(&cluster).await
    }

    async fn queued_of(&self, cluster: &DynamicObject) -> Result<Option<Queued>, Error> {
        let queued = cluster.metadata.labels.as_ref().is_some_and(|labels| labels.contains_key(QUEUE_LABEL));
        match (&cluster.metadata.uid, queued) {
            (Some(uid), true) => self.workload_of(uid).await,
            _ => Ok(None),
        }
    }

    /// The Kueue queue the RayCluster `name` is labelled with (`None` inside when it is not
    /// queued); `None` when there is no such cluster.
    pub async fn queue_label(&self, name: &str) -> Result<Option<Option<String>>, Error> {
        let api = self.api();
        let found = self.call(|| format!("read RayCluster {name}"), api.get_opt(name)).await?;
        Ok(found.map(|cluster| cluster.metadata.labels.and_then(|mut labels| labels.remove(QUEUE_LABEL))))
    }

    /// Whether the RayCluster `name` is gke-rl's (labelled `app.kubernetes.io/managed-by:
    /// gke-rl`); `None` when there is none.
    pub async fn managed_by_gke_rl(&self, name: &str) -> Result<Option<bool>, Error> {
        let api = self.api();
        let found = self.call(|| format!("read RayCluster {name}"), api.get_opt(name)).await?;
        Ok(found.map(|cluster| cluster.labels().get(MANAGED_BY.0).is_some_and(|v| v == MANAGED_BY.1)))
    }

    /// Activates or deactivates the Workload `name` (`spec.active`): Kueue evicts an inactive
    /// one, suspends its job and gives its quota back; an active one waits for admission again.
    pub async fn set_workload_active(&self, name: &str, active: bool) -> Result<(), Error> {
        let patch = serde_json::json!({"spec": {"active": active}});
        let what = if active { "activate" } else { "deactivate" };
        let api = self.workloads();
        self.call(|| format!("{what} Kueue Workload {name}"), api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))).await?;
        Ok(())
    }

    /// Waits until the RayJob `name` is gone (KubeRay's finalizer stops its job first).
    pub async fn wait_ray_job_gone(&self, name: &str, wait: Wait) -> Result<(), Error> {
        let start = tokio::time::Instant::now();
        while self.ray_job(name).await?.is_some() {
            if start.elapsed() >= wait.timeout {
                return Err(Error::RayJobRemains { name: name.to_owned(), waited: start.elapsed() });
            }
            tokio::time::sleep(wait.poll).await;
        }
        Ok(())
    }

    /// Deletes the RayJob (KubeRay's finalizer stops its job; its RayCluster goes with it),
    /// only the one of `uid` when given; `false` when there was none.
    pub async fn delete_ray_job(&self, name: &str, uid: Option<&str>) -> Result<bool, Error> {
        let mut params = DeleteParams::foreground();
        params.preconditions = uid.map(|uid| kube::api::Preconditions { uid: Some(uid.to_owned()), resource_version: None });
        match self.call(|| format!("delete RayJob {name}"), self.ray_jobs().delete(name, &params)).await {
            // Another RayJob of the name now: not the one asked for.
            Err(e) if uid.is_some() && e.status_code() == Some(409) => Ok(false),
            result => deleted(result),
        }
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The Opaque Secret `name` of this namespace, labelled as gke-rl's, holding `entries`.
    fn opaque_secret(&self, name: &str, entries: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(self.namespace.clone()),
                labels: Some(BTreeMap::from([("app.kubernetes.io/managed-by".to_owned(), FIELD_MANAGER.to_owned())])),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".to_owned()),
            data: Some(entries.iter().map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec()))).collect()),
            ..Secret::default()
        }
    }

    /// Creates or updates an Opaque Secret holding exactly `entries` (server-side apply, so
    /// keys this manager set before and that are gone now are removed). Values go to the API
    /// server in the request body only.
    pub async fn apply_secret(&self, name: &str, entries: &[(&str, &str)]) -> Result<(), Error> {
        let secret = self.opaque_secret(name, entries);
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = PatchParams::apply(FIELD_MANAGER).force();
        self.call(|| format!("apply Secret {name}"), api.patch(name, &params, &Patch::Apply(&secret))).await?;
        Ok(())
    }

    /// Creates the Opaque Secret `name` holding `key: value`, unless a Secret of that name
    /// exists: that one is kept as it is (the running pods hold its value). Whether it was
    /// created. The value goes to the API server in the request body only.
    pub async fn create_secret_unless_present(&self, name: &str, key: &str, value: &str) -> Result<bool, Error> {
        let secret = self.opaque_secret(name, &[(key, value)]);
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        match self.call(|| format!("create Secret {name}"), api.create(&PostParams::default(), &secret)).await {
            Ok(_) => Ok(true),
            Err(Error::Api { source: kube::Error::Api(status), .. }) if status.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The value of `key` in the Secret `name`, held in memory only; `None` when the Secret or
    /// the key is missing.
    pub async fn secret_value(&self, name: &str, key: &str) -> Result<Option<String>, Error> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let secret = self.call(|| format!("read Secret {name}"), api.get_opt(name)).await?;
        let value = secret.and_then(|s| s.data?.remove(key)).map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned());
        Ok(value)
    }

    /// The Secret that holds the RayCluster's Ray token when its `authOptions` turn tokens on:
    /// `secretName`, else the one KubeRay creates, named after the cluster by KubeRay's
    /// `CheckName` (v1.7.0, `ray-operator/controllers/ray/utils/util.go`). `None` without tokens
    /// or without the RayCluster.
    pub async fn token_secret(&self, cluster: &str) -> Result<Option<String>, Error> {
        let api = self.api();
        let Some(object) = self.call(|| format!("read RayCluster {cluster}"), api.get_opt(cluster)).await? else { return Ok(None) };
        let auth = &object.data["spec"]["authOptions"];
        if auth["mode"] != "token" {
            return Ok(None);
        }
        Ok(Some(auth["secretName"].as_str().map_or_else(|| kuberay_name(cluster), str::to_owned)))
    }

    /// Creates this namespace, or leaves it as it is (server-side apply), unless it is
    /// `default`, which every cluster has.
    pub async fn apply_namespace(&self) -> Result<(), Error> {
        if self.namespace == "default" {
            return Ok(());
        }
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(self.namespace.clone()),
                labels: Some(BTreeMap::from([("app.kubernetes.io/managed-by".to_owned(), FIELD_MANAGER.to_owned())])),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let api: Api<Namespace> = Api::all(self.client.clone());
        let params = PatchParams::apply(FIELD_MANAGER).force();
        self.call(|| format!("apply Namespace {}", self.namespace), api.patch(&self.namespace, &params, &Patch::Apply(&namespace))).await?;
        Ok(())
    }

    /// Server-side applies the rendered `ray-cluster.yaml`; returns the RayCluster's name and uid.
    pub async fn apply(&self, manifest: &str) -> Result<(String, String), Error> {
        let object = parse_object(manifest)?;
        let name = object.metadata.name.clone().ok_or_else(|| Error::Manifest("has no metadata.name".to_owned()))?;
        let (api, params) = (self.api(), PatchParams::apply(FIELD_MANAGER).force());
        let applied = self.call(|| format!("apply RayCluster {name}"), api.patch(&name, &params, &Patch::Apply(&object))).await?;
        Ok((name, applied.metadata.uid.unwrap_or_default()))
    }

    /// Server-side applies every object of a multi-document manifest into this namespace (a
    /// guard's service account, role, config map, CronJob…); their kinds and names.
    pub async fn apply_all(&self, manifests: &str) -> Result<Vec<(String, String)>, Error> {
        let mut applied = Vec::new();
        for (object, kind, name, api) in self.objects(manifests)? {
            let params = PatchParams::apply(FIELD_MANAGER).force();
            self.call(|| format!("apply {kind} {name}"), api.patch(&name, &params, &Patch::Apply(&object))).await?;
            applied.push((kind, name));
        }
        Ok(applied)
    }

    /// The objects of a multi-document manifest that exist without gke-rl's label (someone
    /// else's, which an apply would take over), as (kind, name).
    pub async fn unmanaged(&self, manifests: &str) -> Result<Vec<(String, String)>, Error> {
        let mut found = Vec::new();
        for (_, kind, name, api) in self.objects(manifests)? {
            let object = self.call(|| format!("read {kind} {name}"), api.get_opt(&name)).await?;
            if object.is_some_and(|o| o.labels().get(MANAGED_BY.0).is_none_or(|v| v != MANAGED_BY.1)) {
                found.push((kind, name));
            }
        }
        Ok(found)
    }

    /// Deletes every object of a multi-document manifest from this namespace; the kinds and
    /// names of those that were there.
    pub async fn delete_all(&self, manifests: &str) -> Result<Vec<(String, String)>, Error> {
        let mut gone = Vec::new();
        for (_, kind, name, api) in self.objects(manifests)? {
            if deleted(self.call(|| format!("delete {kind} {name}"), api.delete(&name, &DeleteParams::background())).await)? {
                gone.push((kind, name));
            }
        }
        Ok(gone)
    }

    /// Each object of a multi-document manifest, with its kind, its name and its API here.
    fn objects(&self, manifests: &str) -> Result<Vec<Manifested>, Error> {
        let mut objects = Vec::new();
        for document in gke_rl_yaml::documents(manifests) {
            let object = parse_object(document)?;
            let types = object.types.clone().ok_or_else(|| Error::Manifest("has an object without apiVersion and kind".to_owned()))?;
            let (group, version) = types.api_version.split_once('/').unwrap_or(("", &types.api_version));
            let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, &types.kind));
            let name = object.metadata.name.clone().ok_or_else(|| Error::Manifest("has an object without metadata.name".to_owned()))?;
            let api: Api<DynamicObject> = if CLUSTER_SCOPED.contains(&types.kind.as_str()) {
                Api::all_with(self.client.clone(), &resource)
            } else {
                Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
            };
            objects.push((object, types.kind, name, api));
        }
        Ok(objects)
    }

    /// The cluster's GKE networks (`networking.gke.io/v1`): each GKENetworkParamSet as
    /// (name, `spec.vpcSubnet`, `spec.deviceMode`), and each Network as (name,
    /// `spec.parametersRef.name`).
    pub async fn gke_networks(&self) -> Result<GkeNetworks, Error> {
        let list = |kind: &str| {
            let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("networking.gke.io", "v1", kind));
            Api::<DynamicObject>::all_with(self.client.clone(), &resource)
        };
        let params = ListParams::default().limit(LIST_LIMIT);
        // A cluster without multi-networking has no such kinds: no networks.
        let listed = |kind: &'static str| {
            let api = list(kind);
            let params = params.clone();
            async move {
                match self.call(|| format!("list {kind}s"), api.list(&params)).await {
                    Err(e) if e.is_not_found() => Ok(Vec::new()),
                    other => other.map(|l| l.items),
                }
            }
        };
        let sets = listed("GKENetworkParamSet").await?;
        let networks = listed("Network").await?;
        let text = |o: &DynamicObject, path: &[&str]| {
            path.iter().try_fold(&o.data, |v, k| v.get(k)).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned()
        };
        Ok(GkeNetworks {
            param_sets: sets.iter().map(|o| (o.name_any(), text(o, &["spec", "vpcSubnet"]), text(o, &["spec", "deviceMode"]))).collect(),
            networks: networks.iter().map(|o| (o.name_any(), text(o, &["spec", "parametersRef", "name"]))).collect(),
        })
    }

    /// How many Nodes each node pool has now, by their `cloud.google.com/gke-nodepool` label:
    /// their metadata only, a page of [`LIST_LIMIT`] at a time.
    pub async fn pool_nodes(&self) -> Result<BTreeMap<String, u32>, Error> {
        let api: Api<Node> = Api::all(self.client.clone());
        let mut params = ListParams::default().labels(NODE_POOL_LABEL).limit(LIST_LIMIT);
        let mut counts = BTreeMap::new();
        // Pages, not items, are counted: a server may answer empty pages that go on.
        for _ in 0..MOST_NODES.div_ceil(LIST_LIMIT) {
            let page = self.call(|| "list the nodes".to_owned(), api.list_metadata(&params)).await?;
            for node in page.items {
                if let Some(pool) = node.metadata.labels.and_then(|mut labels| labels.remove(NODE_POOL_LABEL)) {
                    *counts.entry(pool).or_insert(0) += 1;
                }
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => return Ok(counts),
            }
        }
        Err(Error::TooMany { action: "list the nodes".to_owned(), limit: MOST_NODES.div_ceil(LIST_LIMIT) })
    }

    /// The uid of the RayCluster `name`, if it exists.
    pub async fn uid(&self, name: &str) -> Result<Option<String>, Error> {
        let api = self.api();
        let found = self.call(|| format!("read RayCluster {name}"), api.get_opt(name)).await?;
        Ok(found.map(|o| o.metadata.uid.unwrap_or_default()))
    }

    /// The pods matching `selector`.
    async fn list_pods(&self, selector: &str) -> Result<Vec<Pod>, Error> {
        let (pods, params) = (self.pods(), ListParams::default().labels(selector));
        Ok(self.call(|| format!("list the pods with {selector}"), pods.list(&params)).await?.items)
    }

    /// The state of the RayCluster's pods now.
    pub async fn readiness(&self, name: &str, workers_expected: u32) -> Result<Readiness, Error> {
        let api = self.api();
        let cluster = self.call(|| format!("read RayCluster {name}"), api.get_opt(name)).await?;
        let pods = self.list_pods(&format!("ray.io/cluster={name}")).await?;
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = ListParams::default().fields("involvedObject.kind=Pod");
        let events = self.call(|| "list pod events".to_owned(), events.list(&params)).await?;
        let mut readiness = assess(&pods, &events.items, workers_expected, cluster.as_ref().is_some_and(was_provisioned));
        if let Some(cluster) = &cluster {
            readiness.created = cluster.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second());
            if cluster.data["spec"]["suspend"] == serde_json::json!(true) && readiness.pods == 0 {
                readiness.state = ClusterState::Suspended;
                // Kueue suspends a queued cluster until it admits it; one gke-rl suspended is
                // deactivated instead. What Kueue says is told, not required.
                match self.queued_of(cluster).await {
                    Ok(Some(queued)) if queued.is_held() => {
                        readiness.state = ClusterState::Queued;
                        let (reason, message) = queued.waiting.unwrap_or_else(|| ("Pending".to_owned(), "not admitted yet".to_owned()));
                        readiness.problems.push(format!("Kueue, LocalQueue {}: {reason}: {message}", queued.queue));
                    }
                    Ok(_) => {}
                    Err(e) => readiness.problems.push(format!("what Kueue says of it cannot be read: {e}")),
                }
            }
        }
        Ok(readiness)
    }

    /// Waits until the head and `workers_expected` workers are Running and Ready, calling
    /// `seen` with every state looked at.
    pub async fn wait_ready(
        &self,
        name: &str,
        workers_expected: u32,
        wait: Wait,
        mut seen: impl FnMut(&Readiness),
    ) -> Result<Readiness, Error> {
        let start = tokio::time::Instant::now();
        loop {
            let readiness = self.readiness(name, workers_expected).await?;
            seen(&readiness);
            if readiness.is_ready() {
                return Ok(readiness);
            }
            if start.elapsed() >= wait.timeout {
                return Err(Error::NotReady { waited: start.elapsed(), readiness });
            }
            tokio::time::sleep(wait.poll).await;
        }
    }

    /// Suspends the RayCluster (KubeRay's `spec.suspend`: its pods are deleted, its spec kept)
    /// or resumes it; `false` when there is none.
    pub async fn set_suspended(&self, name: &str, suspended: bool) -> Result<bool, Error> {
        let api = self.api();
        let patch = serde_json::json!({"spec": {"suspend": suspended}});
        let what = if suspended { "suspend" } else { "resume" };
        match self.call(|| format!("{what} RayCluster {name}"), api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether the RayCluster is suspended; `None` when there is none.
    pub async fn is_suspended(&self, name: &str) -> Result<Option<bool>, Error> {
        let api = self.api();
        let found = self.call(|| format!("read RayCluster {name}"), api.get_opt(name)).await?;
        Ok(found.map(|o| o.data["spec"]["suspend"] == serde_json::json!(true)))
    }

    /// Deletes the RayCluster (its pods go with it); `false` when there was none.
    pub async fn delete(&self, name: &str) -> Result<bool, Error> {
        let api = self.api();
        deleted(self.call(|| format!("delete RayCluster {name}"), api.delete(name, &DeleteParams::foreground())).await)
    }

    /// Deletes the NetworkPolicy; `false` when there was none.
    pub async fn delete_network_policy(&self, name: &str) -> Result<bool, Error> {
        let api: Api<NetworkPolicy> = Api::namespaced(self.client.clone(), &self.namespace);
        deleted(self.call(|| format!("delete NetworkPolicy {name}"), api.delete(name, &DeleteParams::default())).await)
    }

    /// Deletes the Secret; `false` when there was none.
    pub async fn delete_secret(&self, name: &str) -> Result<bool, Error> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        deleted(self.call(|| format!("delete Secret {name}"), api.delete(name, &DeleteParams::default())).await)
    }

    /// Waits until no pod of the RayCluster is left.
    pub async fn wait_pods_gone(&self, name: &str, wait: Wait) -> Result<(), Error> {
        let start = tokio::time::Instant::now();
        let selector = format!("ray.io/cluster={name}");
        loop {
            let pods = self.list_pods(&selector).await?;
            if pods.is_empty() {
                return Ok(());
            }
            if start.elapsed() >= wait.timeout {
                return Err(Error::PodsRemain { cluster: name.to_owned(), remaining: pods.len(), waited: start.elapsed() });
            }
            tokio::time::sleep(wait.poll).await;
        }
    }

    /// The name of the RayCluster's running head pod.
    pub async fn head_pod(&self, name: &str) -> Result<String, Error> {
        let pods = self.list_pods(&format!("ray.io/cluster={name},ray.io/node-type=head")).await?;
        pods.into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .and_then(|p| p.metadata.name)
            .ok_or_else(|| Error::NoHeadPod(name.to_owned()))
    }

    /// A port-forward target: `port` on the RayCluster's head pod, found again on every
    /// connection (so a restarted head is picked up).
    pub fn head_port(&self, cluster: &str, port: u16) -> portforward::HeadPort {
        portforward::HeadPort { clusters: self.clone(), cluster: cluster.to_owned(), port }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeApiServer, Pods};

    const QUICK: Wait = Wait { timeout: Duration::from_secs(5), poll: Duration::from_millis(1) };

    fn manifest() -> String {
        let options = gke_rl::RenderOptions { source: "a test", regenerate: "a test" };
        gke_rl::render(&gke_rl::Deployment::default(), &options).unwrap().ray_cluster.expect("cluster mode").contents
    }

    #[tokio::test]
    async fn applies_the_secret_and_the_cluster_then_waits_for_every_pod() {
        let (server, client) = FakeApiServer::start(Pods::ReadyAfter(2));
        let clusters = Namespaced::new(client, "default");
        clusters.apply_secret("gke-rl-secrets", &[("HF_TOKEN", "hf_value")]).await.unwrap();
        let secret = server.object("secrets", "gke-rl-secrets").unwrap();
        assert_eq!(secret["data"]["HF_TOKEN"], "aGZfdmFsdWU=", "base64 of the value, in the body only");
        let apply = server.requests().into_iter().find(|r| r.uri.contains("/secrets/")).unwrap();
        assert!(apply.uri.contains("fieldManager=gke-rl") && !apply.uri.contains("hf_value"), "{}", apply.uri);

        let (name, uid) = clusters.apply(&manifest()).await.unwrap();
        assert_eq!((name.as_str(), uid.is_empty()), ("ray-a4-gpu-spot", false));
        assert_eq!(clusters.uid(&name).await.unwrap(), Some(uid));
        let mut seen = Vec::new();
        let readiness = clusters.wait_ready(&name, 8, QUICK, |r| seen.push(r.progress())).await.unwrap();
        assert_eq!(readiness.progress(), (9, 9));
        assert_eq!(seen, [(0, 9), (0, 9), (9, 9)]);
        assert_eq!(clusters.head_pod(&name).await.unwrap(), "ray-a4-gpu-spot-head");
    }

    #[tokio::test]
    async fn a_rayjob_is_made_for_a_submission_named_by_uid_and_written_by_kuberay_through_its_status() {
        let (_server, client) = FakeApiServer::start(Pods::ReadyAfter(0));
        let clusters = Namespaced::new(client.clone(), "default");
        let config = "ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\njob:\n  mode: rayjob\n";
        let deployment = gke_rl::config::from_yaml(config).unwrap();
        let options = gke_rl::RenderOptions { source: "a test", regenerate: "a test" };
        let manifest = gke_rl::render(&deployment, &options).unwrap().ray_job.expect("rayjob mode").contents;
        let (name, uid) = clusters.create_ray_job(&manifest, "s1").await.unwrap();
        assert!(matches!(clusters.create_ray_job(&manifest, "s2").await, Err(Error::RayJobExists(_))), "never taken over");
        let state = clusters.ray_job(&name).await.unwrap().unwrap();
        assert_eq!((state.submission.as_deref(), state.uid.as_str(), state.job_id.as_deref()), (Some("s1"), uid.as_str(), None));

        // KubeRay writes the status through the status subresource.
        let api: Api<DynamicObject> =
            Api::namespaced_with(client, "default", &ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayJob")));
        let failed =
            serde_json::json!({"status": {"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed", "message": "bad spec"}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&failed)).await.unwrap();
        let state = clusters.ray_job(&name).await.unwrap().unwrap();
        assert!(state.is_finished() && !state.has_cluster_up(), "{state:?}");
        assert_eq!((state.reason.as_deref(), state.message.as_deref()), (Some("ValidationFailed"), Some("bad spec")));

        // The job id, and the delete, go only to the RayJob of that uid.
        assert!(clusters.set_ray_job_id(&name, "uid-of-another", "j1").await.is_err());
        clusters.set_ray_job_id(&name, &uid, "j1").await.unwrap();
        assert_eq!(clusters.ray_job(&name).await.unwrap().unwrap().job_id.as_deref(), Some("j1"));
        assert!(!clusters.delete_ray_job(&name, Some("uid-of-another")).await.unwrap(), "not the one asked for");
        assert!(clusters.ray_job(&name).await.unwrap().is_some_and(|s| !s.deleting));
        assert!(clusters.delete_ray_job(&name, Some(&uid)).await.unwrap());
        assert_eq!(
            clusters.ray_job(&name).await.unwrap().map(|s| s.state().to_owned()).as_deref(),
            Some("Deleting"),
            "a foreground delete"
        );
        clusters.wait_ray_job_gone(&name, QUICK).await.unwrap();
        assert!(!clusters.delete_ray_job(&name, None).await.unwrap());
    }

    #[tokio::test]
    async fn the_nodes_are_counted_by_pool_a_page_at_a_time() {
        let (server, client) = FakeApiServer::start(Pods::ReadyAfter(0));
        for i in 0..1234 {
            let pool = if i % 2 == 0 { "gpu" } else { "cpu" };
            let node = serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("n-{i:05}"), "labels": {NODE_POOL_LABEL: pool}}});
            server.put("nodes", node);
        }
        server.put("nodes", serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "no-pool"}}));
        let counts = Namespaced::new(client, "default").pool_nodes().await.unwrap();
        assert_eq!(counts, BTreeMap::from([("cpu".to_owned(), 617), ("gpu".to_owned(), 617)]));
        let pages = server.requests().iter().filter(|r| r.uri.starts_with("/api/v1/nodes?")).count();
        assert_eq!(pages, 3, "{LIST_LIMIT} a page");
    }

    #[tokio::test]
    async fn the_token_secret_is_created_once_and_found_from_the_rayclusters_auth_options() {
        let (server, client) = FakeApiServer::start(Pods::ReadyAfter(0));
        let clusters = Namespaced::new(client, "rl");
        assert!(clusters.create_secret_unless_present("c-ray-token", "auth_token", "first").await.unwrap());
        assert!(!clusters.create_secret_unless_present("c-ray-token", "auth_token", "second").await.unwrap(), "kept as it is");
        assert_eq!(clusters.secret_value("c-ray-token", "auth_token").await.unwrap().as_deref(), Some("first"));
        assert_eq!(clusters.secret_value("c-ray-token", "other").await.unwrap(), None);
        assert_eq!(clusters.secret_value("missing", "auth_token").await.unwrap(), None);
        assert!(server.requests().iter().all(|r| !r.uri.contains("first")), "the value is in the body only");

        let cluster =
            |auth: &str| format!("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: c\nspec:\n{auth}  headGroupSpec: {{}}\n");
        clusters.apply(&cluster("")).await.unwrap();
        assert_eq!(clusters.token_secret("c").await.unwrap(), None, "no authOptions, no token");
        clusters.apply(&cluster("  authOptions:\n    mode: token\n    secretName: c-ray-token\n")).await.unwrap();
        assert_eq!(clusters.token_secret("c").await.unwrap().as_deref(), Some("c-ray-token"));
        clusters.apply(&cluster("  authOptions:\n    mode: token\n")).await.unwrap();
        assert_eq!(clusters.token_secret("c").await.unwrap().as_deref(), Some("c"), "KubeRay's own Secret");
        assert_eq!(clusters.token_secret("none").await.unwrap(), None);
        assert_eq!(kuberay_name(&format!("1{}", "a".repeat(49))), format!("r{}", "a".repeat(49)));
        assert_eq!(kuberay_name(&format!("xy{}", "b".repeat(50))), "b".repeat(50));
    }

    #[tokio::test]
    async fn a_stock_out_times_out_naming_the_scheduler_message() {
        let (_server, client) = FakeApiServer::start(Pods::Unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.".into()));
        let clusters = Namespaced::new(client, "default");
        let (name, _) = clusters.apply(&manifest()).await.unwrap();
        let wait = Wait { timeout: Duration::from_millis(20), poll: Duration::from_millis(5) };
        let error = clusters.wait_ready(&name, 8, wait, |_| {}).await.unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("not Ready after 0s: 0/9 pods Ready"), "{text}");
        assert!(
            text.contains("ray-a4-gpu-spot-worker-7: Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."),
            "{text}"
        );
        assert!(matches!(error, Error::NotReady { readiness, .. } if readiness.waits_for_capacity()));
    }

    #[tokio::test]
    async fn a_preempted_cluster_is_recovering_until_its_pods_are_back() {
        let (server, client) = FakeApiServer::start(Pods::ReadyAfter(0));
        let clusters = Namespaced::new(client, "default");
        let (name, _) = clusters.apply(&manifest()).await.unwrap();
        assert_eq!(clusters.readiness(&name, 8).await.unwrap().state, ClusterState::Ready);
        let message = "0/9 nodes are available: 2 node(s) had untolerated taint {node.kubernetes.io/not-ready: }".to_owned();
        server.set_pods(Pods::Preempted { lost: 2, message });
        let readiness = clusters.readiness(&name, 8).await.unwrap();
        assert_eq!((readiness.state, readiness.progress()), (ClusterState::Recovering, (7, 9)));
        assert!(readiness.problems[0].starts_with("ray-a4-gpu-spot-worker-6: Unschedulable: 0/9 nodes"), "{:?}", readiness.problems);
        server.set_pods(Pods::ReadyAfter(1));
        let mut states = Vec::new();
        clusters.wait_ready(&name, 8, QUICK, |r| states.push(r.state)).await.unwrap();
        assert_eq!(states, [ClusterState::Recovering, ClusterState::Ready], "whole before: its pods are recreated, not started");
    }

    #[tokio::test]
    async fn a_suspended_cluster_loses_its_pods_and_comes_back_on_resume() {
        let (server, client) = FakeApiServer::start(Pods::ReadyAfter(0));
        let clusters = Namespaced::new(client, "default");
        let (name, uid) = clusters.apply(&manifest()).await.unwrap();
        assert_eq!(clusters.is_suspended(&name).await.unwrap(), Some(false));
        assert!(clusters.set_suspended(&name, true).await.unwrap());
        assert_eq!(clusters.is_suspended(&name).await.unwrap(), Some(true));
        clusters.wait_pods_gone(&name, QUICK).await.unwrap();
        let stored = server.object("rayclusters", &name).unwrap();
        assert_eq!(
            (stored["metadata"]["uid"].as_str(), stored["spec"]["workerGroupSpecs"][0]["replicas"].as_u64()),
            (Some(uid.as_str()), Some(8)),
            "the spec is kept"
        );
        let patch = server.requests().into_iter().rfind(|r| r.method == "PATCH").unwrap();
        assert_eq!(patch.body, r#"{"spec":{"suspend":true}}"#, "a merge patch of the one field, not an apply");
        assert!(clusters.set_suspended(&name, false).await.unwrap());
        assert_eq!(clusters.wait_ready(&name, 8, QUICK, |_| {}).await.unwrap().progress(), (9, 9));
        assert!(!clusters.set_suspended("no-such-cluster", true).await.unwrap());
    }

    #[tokio::test]
    async fn delete_removes_the_cluster_and_waits_for_its_pods() {
        let (server, client) = FakeApiServer::start(Pods::ReadyAfter(0));
        let clusters = Namespaced::new(client, "default");
        let (name, _) = clusters.apply(&manifest()).await.unwrap();
        clusters.apply_secret("gke-rl-secrets", &[("HF_TOKEN", "x")]).await.unwrap();
        assert!(clusters.delete(&name).await.unwrap());
        assert!(!clusters.delete(&name).await.unwrap(), "a second delete finds nothing");
        assert!(clusters.delete_secret("gke-rl-secrets").await.unwrap());
        clusters.wait_pods_gone(&name, QUICK).await.unwrap();
        assert!(server.object("rayclusters", &name).is_none());
        assert!(matches!(clusters.head_pod(&name).await, Err(Error::NoHeadPod(_))));
    }
}
