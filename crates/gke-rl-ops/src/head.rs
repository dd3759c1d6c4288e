//! The connection to a RayCluster's head: an address given, or a port-forward to the head pod
//! of the deployment's RayCluster through the cluster's kubeconfig context.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gke_rl::Deployment;
use gke_rl::lifecycle;
use gke_rl_kube::portforward::{Forwarding, OnError};

use crate::events::{JobEvent, Progress};
use crate::{CommonError, Env, JobError};

pub use gke_rl::knowledge::DASHBOARD_PORT;

/// How to reach the Ray dashboard.
#[derive(Clone, Debug)]
pub struct HeadOptions {
    /// The dashboard's address [default: `RAY_ADDRESS`, when `ray_address` allows]; without
    /// one, a port-forward to the head pod. An empty one forwards too.
    pub address: Option<String>,
    /// Whether `RAY_ADDRESS` stands in for a missing `address`, as in Ray's CLI. Off where the
    /// head must be the deployment's own (the fabric check after a deploy).
    pub ray_address: bool,
    /// Extra HTTP headers for every request.
    pub headers: BTreeMap<String, String>,
    /// The longest one request may take.
    pub request_timeout: Duration,
}

impl Default for HeadOptions {
    fn default() -> Self {
        HeadOptions { address: None, ray_address: true, headers: BTreeMap::new(), request_timeout: Duration::from_secs(30) }
    }
}

impl HeadOptions {
    /// The address to use: the one given (none when it is empty), else `RAY_ADDRESS` when
    /// `ray_address` allows.
    pub fn address(&self, env: &Env) -> Option<String> {
        match &self.address {
            Some(given) => Some(given.clone()).filter(|a| !a.is_empty()),
            None => env.var("RAY_ADDRESS").filter(|_| self.ray_address),
        }
    }

    /// Whether no address is given anywhere, so that the head is reached through Kubernetes.
    pub fn forwards(&self, env: &Env) -> bool {
        self.address(env).is_none()
    }
}

/// A port-forward this process runs to a RayCluster's head.
struct Forwarded {
    /// Held, not read: dropping it stops the forward.
    _forwarding: Forwarding,
    clusters: gke_rl_kube::Namespaced,
    cluster: String,
}

/// A client for the dashboard, and the port-forward it goes through.
pub struct Head {
    /// The Jobs API client.
    pub client: gke_rl_ray::Client,
    /// Alive as long as the head is used.
    forwarded: Option<Forwarded>,
}

impl Head {
    /// Whether requests go through a port-forward this process runs.
    pub fn is_forwarded(&self) -> bool {
        self.forwarded.is_some()
    }

    /// The RayClusters of the deployment's namespace and the name of the one whose head this
    /// is, when the head is reached through Kubernetes.
    pub fn clusters(&self) -> Option<(&gke_rl_kube::Namespaced, &str)> {
        self.forwarded.as_ref().map(|f| (&f.clusters, f.cluster.as_str()))
    }
}

/// Connects to the dashboard of `deployment`'s RayCluster in cluster mode:
/// [`HeadOptions::address`], or a free local port forwarded to the head pod's dashboard port.
/// `progress` is kept to report the forward's failed connections for as long as it runs.
///
/// The Ray token is the one Ray's CLI would use (`RAY_AUTH_TOKEN`, `RAY_AUTH_TOKEN_PATH`,
/// `~/.ray/auth_token`); through the port-forward, a token set in either variable, else the
/// RayCluster's own, read from its Secret into memory when its `authOptions` ask for one.
pub(crate) async fn connect_cluster(
    deployment: &Deployment,
    options: &HeadOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Head, JobError> {
    if let Some(address) = options.address(env) {
        let variable = |name: &str| env.var(name).map(std::ffi::OsString::from);
        let token = gke_rl_ray::Token::discover(variable, env.var("HOME").map(std::path::PathBuf::from).as_deref())?;
        return head(address, None, token, options);
    }
    let clusters = namespaced(deployment, env).await.map_err(|source| JobError::PortForward { source: Box::new(source.into()) })?;
    connect_to(deployment, clusters, deployment.project.cluster_name.to_string(), options, env, progress).await
}

/// Connects through a port-forward to the head of the RayCluster `cluster`.
pub(crate) async fn connect_to(
    deployment: &Deployment,
    clusters: gke_rl_kube::Namespaced,
    cluster: String,
    options: &HeadOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Head, JobError> {
    let variable = |name: &str| env.var(name).map(std::ffi::OsString::from);
    let forwarded = async {
        let forwarding = forward(deployment, &clusters, &cluster, env.reconnect, progress).await?;
        let token = match gke_rl_ray::Token::discover(variable, None)? {
            Some(token) => Some(token),
            None => cluster_token(deployment, &cluster, &clusters).await?,
        };
        Ok::<_, JobError>((forwarding, token))
    };
    let (forwarding, token) = forwarded.await.map_err(|source| JobError::PortForward { source: Box::new(source) })?;
    let address = format!("http://{}", forwarding.local);
    head(address, Some(Forwarded { _forwarding: forwarding, clusters, cluster }), token, options)
}

fn head(address: String, forwarded: Option<Forwarded>, token: Option<gke_rl_ray::Token>, options: &HeadOptions) -> Result<Head, JobError> {
    let client_options = gke_rl_ray::ClientOptions {
        token,
        headers: options.headers.clone(),
        request_timeout: options.request_timeout,
        ..gke_rl_ray::ClientOptions::default()
    };
    Ok(Head { client: gke_rl_ray::Client::new(&address, client_options)?, forwarded })
}

/// The RayCluster's Ray token, from the Secret its `authOptions` name; `None` when it uses none.
async fn cluster_token(
    deployment: &Deployment,
    cluster: &str,
    clusters: &gke_rl_kube::Namespaced,
) -> Result<Option<gke_rl_ray::Token>, JobError> {
    let namespace = deployment.ray.namespace.as_str();
    let Some(secret) = clusters.token_secret(cluster).await? else { return Ok(None) };
    let value = clusters.secret_value(&secret, gke_rl::auth::TOKEN_KEY).await?;
    let source = gke_rl_ray::TokenSource::Secret { namespace: namespace.to_owned(), name: secret.clone() };
    match value.map(|v| gke_rl_ray::Token::new(&v, source)).transpose()?.flatten() {
        Some(token) => Ok(Some(token)),
        None => Err(CommonError::NoRayToken { cluster: cluster.to_owned(), namespace: namespace.to_owned(), secret }.into()),
    }
}

/// The kubeconfig context of the deployment's cluster: the one get-credentials names
/// `gke_<project>_<region>_<cluster>`, found by its region and cluster when the config gives no
/// project; else the current context.
pub fn kube_context(deployment: &Deployment) -> Option<String> {
    let p = &deployment.project;
    let suffix = format!("_{}_{}", p.region, p.cluster_name);
    let contexts = gke_rl_kube::contexts(None);
    let mut matching = contexts.iter().filter(|c| c.starts_with("gke_") && c.ends_with(&suffix));
    match &p.project_id {
        Some(project) => {
            let exact = format!("gke_{project}{suffix}");
            contexts.contains(&exact).then_some(exact)
        }
        None => match (matching.next(), matching.next()) {
            (Some(only), None) => Some(only.clone()),
            _ => None,
        },
    }
}

/// gke-rl's objects in the deployment's namespace, through its cluster's kubeconfig context.
pub(crate) async fn namespaced(deployment: &Deployment, env: &Env) -> Result<gke_rl_kube::Namespaced, CommonError> {
    let context = match env.kube {
        crate::Kube::FromKubeconfig => kube_context(deployment),
        crate::Kube::Given(_) => None,
    };
    let client = env.kube.client(context.as_deref(), &lifecycle::secret_variables(deployment)).await?;
    Ok(gke_rl_kube::Namespaced::new(client, deployment.ray.namespace.as_str()))
}

async fn forward(
    deployment: &Deployment,
    clusters: &gke_rl_kube::Namespaced,
    cluster: &str,
    reconnect: Duration,
    progress: Arc<dyn Progress>,
) -> Result<Forwarding, JobError> {
    let namespace = deployment.ray.namespace.as_str();
    // Fail now, with the reason, rather than on the first request.
    let pod = clusters.head_pod(cluster).await?;
    let reporter = progress.clone();
    let on_error: OnError = Arc::new(move |e| reporter.job(JobEvent::PortForwardFailed(e)));
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let forwarding = gke_rl_kube::portforward::forward(local, clusters.head_port(cluster, DASHBOARD_PORT), reconnect, on_error)
        .await
        .map_err(|source| CommonError::Local { what: "cannot listen on a local port for the port-forward".into(), source })?;
    progress.job(JobEvent::PortForward { local: forwarding.local, namespace, pod: &pod, port: DASHBOARD_PORT });
    Ok(forwarding)
}
