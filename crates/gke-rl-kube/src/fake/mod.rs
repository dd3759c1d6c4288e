//! A fake API server for tests of the Kubernetes flows here and in `xtask deploy`/`destroy`:
//! it stores what is applied, makes the RayCluster's pods as a script says, and records every
//! request. In process it sits behind kube's mock service (tower-test); [`FakeApiServer::serve_https`]
//! serves the same API over TLS on loopback, so that a client built from a kubeconfig runs
//! kube-rs's real code: TLS, exec credentials, the port-forward upgrade.

mod https;

pub use https::Https;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use gke_rl::knowledge::GPU_HEALTH_CHECK;
use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};

/// Answers a request on `stream` with a list whose chunked body never ends (1 MiB chunks of an
/// `items` array that never closes) until the client hangs up, adding each chunk to `sent`.
pub fn endless_list(stream: &mut std::net::TcpStream, sent: &std::sync::atomic::AtomicUsize) {
    use std::io::Write as _;
    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = format!("{:x}\r\n{{\"items\": [{}\r\n", 1 << 20, " ".repeat((1 << 20) - 11));
    while stream.write_all(chunk.as_bytes()).is_ok() {
        sent.fetch_add(1 << 20, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What the RayCluster's pods do once it is applied.
#[derive(Clone, Debug)]
pub enum Pods {
    /// Running and Ready after this many pod listings.
    ReadyAfter(usize),
    /// Pending forever: no node can take them (a Spot stock-out), with the scheduler's message.
    Unschedulable(String),
    /// Scheduled, but their volume does not mount (a Lustre problem): Warning FailedMount events
    /// with this message.
    MountFails(String),
    /// The cluster was whole, then lost nodes: the last `lost` workers are recreated Pending,
    /// waiting for nodes, with the scheduler's `message`; the rest are Ready.
    Preempted {
        /// Workers lost.
        lost: usize,
        /// Why the recreated pods wait.
        message: String,
    },
    /// The first worker's GPU health check fails on `node`, printing `output`, and the kubelet
    /// restarts it with a back-off; the other pods are Ready.
    GpuHealthCheckFails {
        /// The node the worker was scheduled on.
        node: String,
        /// What the check printed, which the kubelet keeps as its termination message.
        output: String,
    },
}

/// One request as the API server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// The body, as text.
    pub body: String,
    /// The `Authorization` header (HTTPS only).
    pub authorization: Option<String>,
}

#[derive(Default)]
struct State {
    /// (plural, name) → object.
    objects: BTreeMap<(String, String), Value>,
    requests: Vec<Recorded>,
    pods: Option<Pods>,
    pod_listings: usize,
    /// Pod listings left before the pods of a deleted RayCluster are gone.
    terminating: Option<usize>,
    /// Kinds (plural) whose applies are forbidden.
    refused: Vec<String>,
    /// Kinds (plurals) whose lists are forbidden, as RBAC forbids them.
    unlisted: Vec<String>,
    uids: usize,
    /// Every request answered with this status (401, 403), as an API server that refuses us.
    denied: Option<u16>,
    /// Where a port-forward to the head pod goes (HTTPS only).
    head_forward: Option<std::net::SocketAddr>,
    /// Every pod was Ready once: KubeRay's `RayClusterProvisioned`.
    provisioned: bool,
    /// When each RayJob started (`Initializing`), for its pre-running deadline.
    ray_job_started: BTreeMap<String, std::time::Instant>,
    /// RayJobs deleted in the foreground: reads left before they are gone.
    ray_jobs_deleting: BTreeMap<String, usize>,
    /// RayClusters deleted so far: a port-forward ends when its cluster goes.
    clusters_removed: u64,
    /// Kueue, once installed: why it holds a queued job back, while it does; else it admits at
    /// once.
    kueue: Option<Option<String>>,
}

/// The fake API server; clones share it.
#[derive(Clone, Default)]
pub struct FakeApiServer {
    state: Arc<Mutex<State>>,
}

impl FakeApiServer {
    /// A server whose RayCluster pods behave as `pods` says, and a client talking to it in
    /// `namespace`. Must be called inside a tokio runtime.
    pub fn start(pods: Pods) -> (Self, Client) {
        let server = FakeApiServer::new(pods);
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let serving = server.clone();
        tokio::spawn(async move {
            while let Some((request, respond)) = handle.next_request().await {
                let (parts, body) = request.into_parts();
                let body = body.collect_bytes().await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
                let (status, answer) = serving.answer(&parts.method, &parts.uri, &body, None);
                let response = Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(answer.to_string().into_bytes()));
                respond.send_response(response.expect("a valid response"));
            }
        });
        (server, Client::new(service, "default"))
    }

    /// A server whose RayCluster pods behave as `pods` says, with no client yet: serve it with
    /// [`FakeApiServer::serve_https`].
    pub fn new(pods: Pods) -> Self {
        let server = FakeApiServer::default();
        server.lock().pods = Some(pods);
        server
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// The stored object of that kind (plural) and name.
    pub fn object(&self, plural: &str, name: &str) -> Option<Value> {
        self.lock().objects.get(&(plural.to_owned(), name.to_owned())).cloned()
    }

    /// The stored objects of that kind (plural), by name.
    pub fn objects(&self, plural: &str) -> Vec<Value> {
        self.lock().objects.iter().filter(|((p, _), _)| p == plural).map(|(_, o)| o.clone()).collect()
    }

    /// Stores `object` as one of kind `plural`, by its `metadata.name`, as the cluster's own
    /// (GKE's networks) or someone with kubectl would.
    pub fn put(&self, plural: &str, object: Value) {
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        self.lock().objects.insert((plural.to_owned(), name), object);
    }

    /// Deletes the object of that kind (plural) and name, as someone with kubectl would (or a
    /// resize, a Node).
    pub fn remove(&self, plural: &str, name: &str) {
        self.lock().objects.remove(&(plural.to_owned(), name.to_owned()));
    }

    /// Stores an Opaque Secret `name` holding `key: value`, as someone with kubectl would.
    pub fn put_secret(&self, name: &str, key: &str, value: &str) {
        let data = serde_json::to_value(k8s_openapi::ByteString(value.as_bytes().to_vec())).unwrap_or_default();
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": name}, "data": {key: data}});
        self.lock().objects.insert(("secrets".to_owned(), name.to_owned()), secret);
    }

    /// The decoded value of `key` in the stored Secret `name`, as a pod would see it.
    pub fn secret_value(&self, name: &str, key: &str) -> Option<String> {
        let secret = self.object("secrets", name)?;
        let bytes: k8s_openapi::ByteString = serde_json::from_value(secret["data"][key].clone()).ok()?;
        String::from_utf8(bytes.0).ok()
    }

    /// Forbids listing objects of this kind (plural), as a role without `list` on them does.
    pub fn forbid_listing(&self, plural: &str) {
        self.lock().unlisted.push(plural.to_owned());
    }

    /// Forbids applying objects of this kind (plural), or allows it again.
    pub fn refuse(&self, plural: &str, refused: bool) {
        let mut state = self.lock();
        state.refused.retain(|p| p != plural);
        if refused {
            state.refused.push(plural.to_owned());
        }
    }

    /// Changes what the pods do from now on.
    pub fn set_pods(&self, pods: Pods) {
        let mut state = self.lock();
        state.provisioned |= matches!(pods, Pods::Preempted { .. });
        state.pods = Some(pods);
        state.pod_listings = 0;
    }

    /// Answers every request with `status` from now on (401, 403), or normally again (`None`).
    pub fn deny(&self, status: Option<u16>) {
        self.lock().denied = status;
    }

    /// Sends port-forwards to the head pod to `address` (a real Ray head's dashboard, say).
    pub fn forward_head_to(&self, address: std::net::SocketAddr) {
        self.lock().head_forward = Some(address);
    }

    /// Ends the RayJob's run as KubeRay does when its job reaches `job_status` (`SUCCEEDED`,
    /// `FAILED`, `STOPPED`): `Complete` or `Failed`. Its RayCluster stays for
    /// `ttlSecondsAfterFinished` ([`FakeApiServer::expire_ray_job`]).
    pub fn end_ray_job(&self, name: &str, job_status: &str) {
        let mut state = self.lock();
        let Some(job) = state.objects.get_mut(&("rayjobs".to_owned(), name.to_owned())) else { return };
        let ended = if job_status == "SUCCEEDED" { "Complete" } else { "Failed" };
        merge(&mut job["status"], &json!({"jobDeploymentStatus": ended, "jobStatus": job_status}));
    }

    /// Installs Kueue, for RayJobs and RayClusters labelled `kueue.x-k8s.io/queue-name`
    /// (without it, its API answers 404): from now on it holds each new one back (suspended,
    /// its Workload's quota not reserved, with `why` as Kueue's message), or, with `None`,
    /// admits it at once.
    pub fn kueue_holds(&self, why: Option<&str>) {
        self.lock().kueue = Some(why.map(str::to_owned));
    }

    /// Kueue preempts the RayJob: suspends it, so that KubeRay takes its cluster away.
    pub fn kueue_preempts(&self, name: &str) {
        let mut state = self.lock();
        if let Some(job) = state.objects.get_mut(&("rayjobs".to_owned(), name.to_owned())) {
            job["spec"]["suspend"] = json!(true);
            // KubeRay reacts at once, whoever asks.
            state.reconcile_ray_job(name);
        }
    }

    /// Kueue admits the Workload of the RayJob, or else the RayCluster, `name`, and unsuspends it.
    pub fn kueue_admits(&self, name: &str) {
        let mut state = self.lock();
        let Some(key) = ["rayjobs", "rayclusters"]
            .map(|plural| (plural.to_owned(), name.to_owned()))
            .into_iter()
            .find(|k| state.objects.contains_key(k))
        else {
            return;
        };
        state.objects.get_mut(&key).expect("found")["spec"]["suspend"] = json!(false);
        let uid = state.objects[&key]["metadata"]["uid"].clone();
        for ((plural, _), workload) in &mut state.objects {
            if plural == "workloads" && workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == uid {
                workload["status"] = json!({"conditions": ADMITTED.clone()});
            }
        }
    }

    /// The RayJob's `ttlSecondsAfterFinished` has passed: KubeRay deletes its RayCluster when
    /// `shutdownAfterJobFinishes` says so.
    pub fn expire_ray_job(&self, name: &str) {
        let mut state = self.lock();
        let Some(job) = state.objects.get(&("rayjobs".to_owned(), name.to_owned())) else { return };
        let cluster =
            job["status"]["rayClusterName"].as_str().filter(|_| job["spec"]["shutdownAfterJobFinishes"] == true).map(str::to_owned);
        if let Some(cluster) = cluster {
            state.remove_cluster(&cluster);
        }
    }

    fn answer(&self, method: &Method, uri: &http::Uri, body: &str, authorization: Option<&str>) -> (StatusCode, Value) {
        let mut state = self.lock();
        state.requests.push(Recorded {
            method: method.to_string(),
            uri: uri.to_string(),
            body: body.to_owned(),
            authorization: authorization.map(str::to_owned),
        });
        if let Some(code) = state.denied {
            let reason = if code == 401 { "Unauthorized" } else { "Forbidden" };
            return (StatusCode::from_u16(code).unwrap_or(StatusCode::FORBIDDEN), status(code, reason));
        }
        let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
        if segments.get(1) == Some(&"kueue.x-k8s.io") && state.kueue.is_none() {
            return not_found("the kueue.x-k8s.io API");
        }
        let query = uri.query().unwrap_or_default();
        // /api/v1/namespaces/NS/PLURAL[/NAME] or /apis/GROUP/VERSION/namespaces/NS/PLURAL[/NAME]
        let rest = match segments.as_slice() {
            // A namespace itself (cluster-scoped): stored as the object ("namespaces", NAME).
            ["api", "v1", rest @ ..] if rest.len() == 2 && rest[0] == "namespaces" => rest,
            ["api", "v1", "namespaces", _, rest @ ..] | ["apis", _, _, "namespaces", _, rest @ ..] => rest,
            // Cluster-scoped: PersistentVolumes, GKE's networks.
            ["api", "v1", rest @ ..] | ["apis", _, _, rest @ ..] if !rest.is_empty() && rest.len() <= 2 => rest,
            _ => return not_found("path"),
        };
        // A foreground delete goes on by itself; the rest of a RayJob's life when it is asked about.
        for deleting in state.ray_jobs_deleting.keys().cloned().collect::<Vec<_>>() {
            state.reconcile_ray_job(&deleting);
        }
        if let ["rayjobs", name, ..] = rest
            && !state.ray_jobs_deleting.contains_key(*name)
        {
            state.reconcile_ray_job(name);
        }
        match (method.as_str(), rest) {
            // The status subresource, as KubeRay writes it: a merge patch of `status`.
            ("GET" | "PATCH", [plural, name, "status"]) => {
                let Some(object) = state.objects.get_mut(&((*plural).to_owned(), (*name).to_owned())) else { return not_found(name) };
                if method == Method::PATCH {
                    let Ok(patch) = serde_json::from_str::<Value>(body) else { return (StatusCode::BAD_REQUEST, status(400, "bad body")) };
                    merge(&mut object["status"], &patch["status"]);
                }
                (StatusCode::OK, object.clone())
            }
            ("PATCH", [plural, _]) if state.refused.iter().any(|p| p == plural) => {
                (StatusCode::FORBIDDEN, status(403, &format!("{plural} is forbidden: the fake refuses it")))
            }
            // A JSON merge patch (no forced field manager): into the stored object.
            ("PATCH", [plural, name]) if !query.contains("force=true") => {
                let Ok(patch) = serde_json::from_str::<Value>(body) else { return (StatusCode::BAD_REQUEST, status(400, "bad body")) };
                let Some(object) = state.objects.get_mut(&((*plural).to_owned(), (*name).to_owned())) else { return not_found(name) };
                // metadata.uid is immutable: a patch that names another uid is invalid.
                if let Some(uid) = patch["metadata"]["uid"].as_str().filter(|uid| object["metadata"]["uid"] != *uid) {
                    let mut invalid =
                        status(422, &format!("{plural} \"{name}\" is invalid: metadata.uid: Invalid value: \"{uid}\": field is immutable"));
                    invalid["reason"] = json!("Invalid");
                    return (StatusCode::UNPROCESSABLE_ENTITY, invalid);
                }
                merge(object, &patch);
                let object = object.clone();
                if *plural == "workloads" {
                    state.kueue_reacts(name);
                }
                (StatusCode::OK, object)
            }
            ("PATCH", [plural, name]) => {
                let Ok(mut object) = serde_json::from_str::<Value>(body) else { return (StatusCode::BAD_REQUEST, status(400, "bad body")) };
                state.uids += 1;
                let key = ((*plural).to_owned(), (*name).to_owned());
                let uid = state
                    .objects
                    .get(&key)
                    .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("uid-{}", state.uids));
                object["metadata"]["uid"] = json!(uid);
                let created = state.objects.get(&key).map(|o| o["metadata"]["creationTimestamp"].clone()).filter(|c| !c.is_null());
                // An apply leaves the status, which only its controller writes, as it is.
                if let Some(kept) = state.objects.get(&key).map(|o| o["status"].clone()).filter(|s| !s.is_null()) {
                    object["status"] = kept;
                }
                object["metadata"]["creationTimestamp"] = created.unwrap_or_else(now);
                if *plural == "rayclusters" {
                    state.pod_listings = 0;
                    state.terminating = None;
                }
                match state.objects.get(&key) {
                    // A `suspend` the apply leaves out stays as Kueue (or a merge patch) set it.
                    Some(existing) if (*plural == "rayjobs" || *plural == "rayclusters") && object["spec"]["suspend"].is_null() => {
                        object["spec"]["suspend"] = existing["spec"]["suspend"].clone();
                    }
                    None if *plural == "rayjobs" || *plural == "rayclusters" => state.kueue_takes(&mut object),
                    _ => {}
                }
                state.objects.insert(key, object.clone());
                (StatusCode::OK, object)
            }
            // A create: refused when the name is taken, as the API server does.
            ("POST", [plural]) => {
                let Ok(mut object) = serde_json::from_str::<Value>(body) else { return (StatusCode::BAD_REQUEST, status(400, "bad body")) };
                let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                let key = ((*plural).to_owned(), name.clone());
                if state.objects.contains_key(&key) {
                    let mut conflict = status(409, &format!("{plural} \"{name}\" already exists"));
                    conflict["reason"] = json!("AlreadyExists");
                    return (StatusCode::CONFLICT, conflict);
                }
                state.uids += 1;
                object["metadata"]["uid"] = json!(format!("uid-{}", state.uids));
                object["metadata"]["creationTimestamp"] = now();
                if *plural == "rayjobs" {
                    state.kueue_takes(&mut object);
                }
                state.objects.insert(key, object.clone());
                (StatusCode::CREATED, object)
            }
            ("GET", [plural, name]) => match state.objects.get(&((*plural).to_owned(), (*name).to_owned())) {
                Some(object) => {
                    let mut object = object.clone();
                    if *plural == "rayclusters" && state.provisioned {
                        object["status"] = json!({"conditions": [{"type": "RayClusterProvisioned", "status": "True", "reason": "AllPodRunningAndReadyFirstTime"}]});
                    }
                    (StatusCode::OK, object)
                }
                None => not_found(name),
            },
            ("DELETE", [plural, name]) => {
                let key = ((*plural).to_owned(), (*name).to_owned());
                let Some(object) = state.objects.get_mut(&key) else { return not_found(name) };
                let params = serde_json::from_str::<Value>(body).unwrap_or_default();
                if let Some(conflict) = precondition_failed(object, &params["preconditions"]["uid"]) {
                    return conflict;
                }
                // KubeRay's finalizer and the foreground delete keep a RayJob, marked, until its
                // cluster's pods are gone: a few reads here.
                if *plural == "rayjobs" && params["propagationPolicy"] == "Foreground" {
                    object["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
                    state.ray_jobs_deleting.entry((*name).to_owned()).or_insert(2);
                    return (StatusCode::OK, status(200, "deleting"));
                }
                let deleted = state.objects.remove(&key).unwrap_or_default();
                match *plural {
                    "rayclusters" => {
                        (state.terminating, state.provisioned) = (Some(2), false);
                        state.clusters_removed += 1;
                    }
                    // A RayJob owns the RayCluster it made: the garbage collector takes it too.
                    "rayjobs" => {
                        if let Some(cluster) = deleted["status"]["rayClusterName"].as_str() {
                            state.remove_cluster(cluster);
                        }
                    }
                    _ => {}
                }
                (StatusCode::OK, status(200, "deleted"))
            }
            ("GET", [plural]) if state.unlisted.iter().any(|p| p == plural) => {
                (StatusCode::FORBIDDEN, status(403, &format!("{plural} is forbidden: cannot list resource \"{plural}\"")))
            }
            // Paged as the API server pages: `limit` items, then a `continue` token (here the
            // last name given) to go on after.
            ("GET", [plural]) if *plural != "pods" && *plural != "events" => {
                let selector = selector(query);
                let after = param(query, "continue");
                let mut items: Vec<Value> = state
                    .objects
                    .iter()
                    .filter(|((p, name), o)| {
                        p == plural
                            && after.as_ref().is_none_or(|after| name > after)
                            && selector.iter().all(|(k, v)| o["metadata"]["labels"][k] == json!(v))
                    })
                    .map(|(_, o)| o.clone())
                    .collect();
                let limit = param(query, "limit").and_then(|l| l.parse::<usize>().ok()).filter(|l| *l > 0 && items.len() > *l);
                let next = limit.map(|l| {
                    items.truncate(l);
                    items[l - 1]["metadata"]["name"].clone()
                });
                (StatusCode::OK, json!({"apiVersion": "v1", "kind": "List", "metadata": {"continue": next}, "items": items}))
            }
            ("GET", ["pods"]) => {
                let items = state.list_pods(query);
                (StatusCode::OK, json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}))
            }
            ("GET", ["events"]) => {
                let items = state.events();
                (StatusCode::OK, json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": items}))
            }
            _ => not_found("route"),
        }
    }
}

/// The conditions of a Workload Kueue admitted.
static ADMITTED: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!([{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue a4"},
           {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted"}])
});

impl State {
    /// One step of KubeRay's RayJob controller in InteractiveMode (`rayjob_controller.go`,
    /// v1.7.0), taken whenever the RayJob is asked about: a new RayJob is `Initializing` and
    /// gets a RayCluster of its own (`<name>-<5 characters>`, from `rayClusterSpec`), whose
    /// pods then follow the script; once they are all Ready it is `Waiting`, and once
    /// `spec.jobId` names a job, `Running`. The tests end it ([`FakeApiServer::end_ray_job`]).
    fn reconcile_ray_job(&mut self, name: &str) {
        let key = ("rayjobs".to_owned(), (*name).to_owned());
        let Some(job) = self.objects.get(&key) else { return };
        let (namespace, cluster) =
            (job["metadata"]["namespace"].as_str().unwrap_or("default").to_owned(), job["status"]["rayClusterName"].clone());
        if let Some(left) = self.ray_jobs_deleting.get_mut(name) {
            *left = left.saturating_sub(1);
            if *left == 0 {
                // A RayJob owns the RayCluster it made: the garbage collector takes it too.
                self.ray_jobs_deleting.remove(name);
                self.objects.remove(&key);
                if let Some(cluster) = cluster.as_str() {
                    self.remove_cluster(cluster);
                }
            }
            return;
        }
        let deadline = job["spec"]["preRunningDeadlineSeconds"].as_u64().map(std::time::Duration::from_secs);
        let late = deadline.zip(self.ray_job_started.get(name)).is_some_and(|(deadline, started)| started.elapsed() > deadline);
        let suspended = job["spec"]["suspend"] == true;
        let made = cluster.as_str().is_some_and(|c| self.objects.contains_key(&("rayclusters".to_owned(), c.to_owned())));
        let status = match job["status"]["jobDeploymentStatus"].as_str().unwrap_or_default() {
            // `initRayJobStatusIfNeed` names the cluster; a suspended RayJob then makes none
            // (Initializing, Suspending, Suspended) until it is resumed.
            "" if suspended => {
                self.uids += 1;
                let cluster = cluster.as_str().map_or_else(|| format!("{name}-{:05x}", self.uids), str::to_owned);
                json!({"jobDeploymentStatus": "Initializing", "rayClusterName": cluster, "jobStatus": ""})
            }
            // `Suspending` deletes the cluster and forgets its name and the job's
            // (`rayjob_controller.go`, v1.7.0); let back in, the RayJob gets a new cluster.
            "Initializing" | "Running" if suspended => {
                if let Some(made) = cluster.as_str() {
                    self.remove_cluster(made);
                }
                json!({"jobDeploymentStatus": "Suspended", "rayClusterName": null, "jobId": null})
            }
            "Suspended" if !suspended => json!({"jobDeploymentStatus": ""}),
            "" => {
                self.uids += 1;
                let cluster = cluster.as_str().map_or_else(|| format!("{name}-{:05x}", self.uids), str::to_owned);
                let object = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                    "metadata": {"name": cluster, "namespace": namespace, "uid": format!("uid-{}", self.uids), "creationTimestamp": now(),
                                 "labels": {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": name}},
                    "spec": job["spec"]["rayClusterSpec"]});
                if let std::collections::btree_map::Entry::Vacant(entry) = self.objects.entry(("rayclusters".to_owned(), cluster.clone())) {
                    entry.insert(object);
                    (self.pod_listings, self.terminating) = (0, None);
                }
                self.ray_job_started.insert(name.to_owned(), std::time::Instant::now());
                json!({"jobDeploymentStatus": "Initializing", "rayClusterName": cluster, "jobStatus": ""})
            }
            // `checkPreRunningDeadlineAndUpdateStatusIfNeeded`.
            "Initializing" | "Waiting" if late => json!({"jobDeploymentStatus": "Failed", "reason": "PreRunningDeadlineExceeded",
                "message": format!("The RayJob has passed the preRunningDeadlineSeconds. StartTime: x. Deadline: {}s.", deadline.unwrap_or_default().as_secs())}),
            "Initializing" if made && self.pods_ready() => {
                let cluster = cluster.as_str().unwrap_or_default();
                json!({"jobDeploymentStatus": "Waiting", "dashboardURL": format!("{cluster}-head-svc.{namespace}.svc.cluster.local:8265")})
            }
            "Waiting" if job["spec"]["jobId"].as_str().is_some_and(|id| !id.is_empty()) => {
                json!({"jobDeploymentStatus": "Running", "jobId": job["spec"]["jobId"]})
            }
            _ => return,
        };
        if let Some(job) = self.objects.get_mut(&key) {
            merge(&mut job["status"], &status);
        }
    }

    /// Kueue's job controller on a Workload's `spec.active`: an inactive one is evicted and its
    /// job suspended (KubeRay then deletes the pods); an active one is admitted again, its job
    /// unsuspended, unless Kueue holds jobs back.
    fn kueue_reacts(&mut self, workload: &str) {
        let Some(object) = self.objects.get(&("workloads".to_owned(), workload.to_owned())) else { return };
        let uid = object["metadata"]["labels"]["kueue.x-k8s.io/job-uid"].clone();
        let active = object["spec"]["active"] != json!(false);
        let admitted = active && matches!(self.kueue, Some(None));
        let conditions = match &self.kueue {
            _ if admitted => ADMITTED.clone(),
            Some(Some(why)) if active => json!([{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": why}]),
            _ => json!([{"type": "QuotaReserved", "status": "False", "reason": "Inactive", "message": "The workload is deactivated"},
                        {"type": "Evicted", "status": "True", "reason": "Deactivated", "message": "The workload is deactivated"}]),
        };
        for ((plural, _), job) in &mut self.objects {
            if (plural == "rayjobs" || plural == "rayclusters") && job["metadata"]["uid"] == uid {
                job["spec"]["suspend"] = json!(!admitted);
            }
        }
        if let Some(object) = self.objects.get_mut(&("workloads".to_owned(), workload.to_owned())) {
            object["status"] = json!({"conditions": conditions});
        }
    }

    /// Kueue's webhook and job controller for a new RayJob or RayCluster labelled with a queue:
    /// suspended while Kueue holds it, and a Workload (`<kind>-<name>-<hash>`, labelled with
    /// the job's uid) saying why, or admitted at once.
    fn kueue_takes(&mut self, job: &mut Value) {
        let Some(queue) = job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"].as_str().map(str::to_owned) else { return };
        let Some(holds) = &self.kueue else { return };
        let name = job["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let conditions = match holds {
            Some(why) => {
                job["spec"]["suspend"] = json!(true);
                json!([{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": why}])
            }
            None => ADMITTED.clone(),
        };
        let kind = job["kind"].as_str().unwrap_or("job").to_lowercase();
        let workload = format!("{kind}-{name}-{:05x}", self.uids);
        let object = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": workload, "labels": {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]}},
            "spec": {"queueName": queue}, "status": {"conditions": conditions}});
        self.objects.insert(("workloads".to_owned(), workload), object);
    }

    /// Deletes the RayCluster; its pods linger for a few listings.
    fn remove_cluster(&mut self, name: &str) {
        if self.objects.remove(&("rayclusters".to_owned(), name.to_owned())).is_some() {
            self.terminating = Some(2);
            self.provisioned = false;
            self.clusters_removed += 1;
        }
    }

    /// Whether the script has every pod of the RayCluster Ready now.
    fn pods_ready(&self) -> bool {
        match &self.pods {
            Some(Pods::ReadyAfter(n)) => self.pod_listings > *n,
            Some(Pods::GpuHealthCheckFails { .. } | Pods::Preempted { .. }) => self.provisioned,
            _ => false,
        }
    }

    /// The name and worker count of the RayCluster that is not suspended (KubeRay deletes a
    /// suspended cluster's pods); `None` when there is none.
    fn cluster(&self) -> Option<(String, u64)> {
        let (_, cluster) = self.objects.iter().find(|((plural, _), o)| plural == "rayclusters" && o["spec"]["suspend"] != json!(true))?;
        let workers = cluster["spec"]["workerGroupSpecs"].as_array().into_iter().flatten().filter_map(|g| g["replicas"].as_u64()).sum();
        Some((cluster["metadata"]["name"].as_str().unwrap_or_default().to_owned(), workers))
    }

    fn pod_names(name: &str, workers: u64) -> impl Iterator<Item = (String, &'static str)> + '_ {
        std::iter::once((format!("{name}-head"), "head")).chain((0..workers).map(move |i| (format!("{name}-worker-{i}"), "worker")))
    }

    /// Warning events about the pods, as the script has them.
    fn events(&self) -> Vec<Value> {
        let (Some(Pods::MountFails(message)), Some((name, workers))) = (&self.pods, self.cluster()) else { return Vec::new() };
        State::pod_names(&name, workers)
            .map(|(pod, _)| {
                json!({"metadata": {"name": format!("{pod}.mount"), "namespace": "default"}, "involvedObject": {"kind": "Pod", "name": pod},
                       "reason": "FailedMount", "type": "Warning", "message": message})
            })
            .collect()
    }

    /// The RayCluster's pods as the script has them now, filtered by the label selector.
    fn list_pods(&mut self, query: &str) -> Vec<Value> {
        self.pod_listings += 1;
        let Some((name, workers)) = self.cluster().or_else(|| {
            // A deleted cluster's pods linger for a few listings.
            let left = self.terminating?;
            self.terminating = left.checked_sub(1).filter(|l| *l > 0);
            Some(("terminating".to_owned(), 1))
        }) else {
            return Vec::new();
        };
        let selector = selector(query);
        let ready = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
        let unschedulable = |message: &str| json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]});
        let status = |index: u64| match &self.pods {
            Some(Pods::ReadyAfter(n)) if self.pod_listings > *n => ready.clone(),
            Some(Pods::Unschedulable(message)) => unschedulable(message),
            // Index 0 is the head; the last `lost` workers were lost.
            Some(Pods::Preempted { lost, message }) if index + *lost as u64 > workers => unschedulable(message),
            Some(Pods::Preempted { .. }) => ready.clone(),
            Some(Pods::GpuHealthCheckFails { output, .. }) if index == 1 => json!({"phase": "Pending",
                "initContainerStatuses": [{"name": GPU_HEALTH_CHECK.container, "image": "i", "imageID": "", "ready": false, "restartCount": self.pod_listings,
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": format!("back-off restarting failed container={}", GPU_HEALTH_CHECK.container)}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": output}}}]}),
            Some(Pods::GpuHealthCheckFails { .. }) => ready.clone(),
            _ => json!({"phase": "Pending"}),
        };
        let spec = |index: u64| match &self.pods {
            Some(Pods::GpuHealthCheckFails { node, .. }) if index == 1 => json!({"nodeName": node, "containers": [{"name": "ray-worker"}]}),
            _ => Value::Null,
        };
        if matches!(self.pods, Some(Pods::ReadyAfter(n)) if self.pod_listings > n) {
            self.provisioned = true;
        }
        let pod = |pod_name: String, node_type: &str, index: u64| json!({"metadata": {"name": pod_name, "namespace": "default", "labels": {"ray.io/cluster": name, "ray.io/node-type": node_type}}, "spec": spec(index), "status": status(index)});
        State::pod_names(&name, workers)
            .zip(0..)
            .map(|((pod_name, node_type), index)| pod(pod_name, node_type, index))
            .filter(|p| selector.iter().all(|(k, v)| p["metadata"]["labels"][k] == json!(v)))
            .collect()
    }
}

/// Now, as the API server stamps a new object.
fn now() -> Value {
    json!(k8s_openapi::jiff::Timestamp::now().round(k8s_openapi::jiff::Unit::Second).map(|t| t.to_string()).unwrap_or_default())
}

/// The API server's answer when a delete's uid precondition does not match the object's.
fn precondition_failed(object: &Value, wanted: &Value) -> Option<(StatusCode, Value)> {
    let wanted = wanted.as_str()?;
    let uid = object["metadata"]["uid"].as_str().unwrap_or_default();
    (wanted != uid).then(|| {
        let mut conflict = status(409, &format!("Precondition failed: UID in precondition: {wanted}, UID in object meta: {uid}"));
        conflict["reason"] = json!("Conflict");
        (StatusCode::CONFLICT, conflict)
    })
}

/// RFC 7386: objects merge key by key, null removes, anything else replaces.
fn merge(target: &mut Value, patch: &Value) {
    let (Some(target), Some(patch)) = (target.as_object_mut(), patch.as_object()) else {
        *target = patch.clone();
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// The `labelSelector` of a query, as (key, value) pairs.
fn selector(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter_map(|kv| kv.strip_prefix("labelSelector="))
        .flat_map(|s| {
            percent_decode(s).split(',').filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned()))).collect::<Vec<_>>()
        })
        .collect()
}

/// The value of `key` in a query.
fn param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')).map(percent_decode)
}

fn percent_decode(text: &str) -> String {
    text.replace("%3D", "=").replace("%2C", ",").replace("%2F", "/").replace('+', " ")
}

fn status(code: u16, message: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": if code < 400 { "Success" } else { "Failure" }, "message": message, "code": code})
}

fn not_found(what: &str) -> (StatusCode, Value) {
    (
        StatusCode::NOT_FOUND,
        json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure", "message": format!("{what} not found"), "reason": "NotFound", "code": 404}),
    )
}
