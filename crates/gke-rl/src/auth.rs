//! Ray's token authentication (Ray 2.52 and newer): only holders of the cluster's token reach
//! its Jobs API, its dashboard and its GCS. KubeRay's `spec.authOptions` turns it on: with
//! `mode: token` and `secretName`, KubeRay (v1.7.0, `ray-operator/controllers/ray/common/pod.go`)
//! gives every Ray container `RAY_AUTH_MODE=token` and `RAY_AUTH_TOKEN` from the Secret's
//! `auth_token` key, and refuses a `rayVersion` older than 2.52.0
//! (`ray-operator/controllers/ray/utils/validation.go`). Clusters whose Ray is older get a
//! NetworkPolicy instead ([`network_policy`]).

use crate::knowledge::{self, TOKEN_AUTH_SINCE};
use crate::model::Deployment;
use crate::quote::yaml;

/// The key of the token in its Secret, the one KubeRay reads (`RAY_AUTH_TOKEN_SECRET_KEY` in
/// KubeRay v1.7.0's `ray-operator/controllers/ray/utils/constant.go`).
pub const TOKEN_KEY: &str = "auth_token";

/// The variable that holds the token, in the pods (KubeRay sets it) and for Ray's CLI.
pub const TOKEN_VARIABLE: &str = "RAY_AUTH_TOKEN";

/// The variable naming a file that holds the token, Ray's second place to look.
pub const TOKEN_PATH_VARIABLE: &str = "RAY_AUTH_TOKEN_PATH";

/// The token file under the home directory, Ray's third place to look.
pub const TOKEN_HOME_FILE: &str = ".ray/auth_token";

/// The variable that holds the cluster's run key, on the head and in the keeper: the value of
/// the cluster's token Secret, which deploy makes whether or not Ray uses it for tokens.
pub const RUN_KEY_VARIABLE: &str = "GKE_RL_RUN_KEY";

/// The Secret that holds the cluster's token (deploy creates it with a random token).
pub fn secret_name(d: &Deployment) -> String {
    format!("{}-ray-token", d.project.cluster_name)
}

/// The NetworkPolicy's name.
pub fn network_policy_name(d: &Deployment) -> String {
    format!("{}-ray-pods", d.project.cluster_name)
}

/// The pod label that marks gke-rl's own helpers of a cluster (the idle guard, the run
/// keeper), which the NetworkPolicy of a cluster without tokens lets reach the dashboard.
pub const HELPER_LABEL: &str = "gke-rl/helper-of";

/// The NetworkPolicy of a RayCluster whose Ray has no token authentication: its pods take
/// connections only from the cluster's own Ray pods (every port: Ray's nodes talk on many) and
/// from gke-rl's helpers of this cluster (the dashboard's port only). A `kubectl port-forward`
/// still works: the container runtime dials the port from inside the pod's own network
/// namespace, where no policy applies (containerd, `internal/cri/server/sandbox_portforward_linux.go`).
pub fn network_policy(d: &Deployment) -> String {
    let (cluster, namespace) = (d.project.cluster_name.as_str(), d.ray.namespace.as_str());
    format!(
        "apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {name}
  namespace: {namespace}
  labels:
    app.kubernetes.io/managed-by: gke-rl
spec:
  # Every pod of RayCluster {cluster}: its Ray (older than {TOKEN_AUTH_SINCE}) has no token
  # authentication, so whoever reaches the Jobs API or the GCS runs code with the pods' Secrets.
  podSelector:
    matchLabels:
      ray.io/cluster: {cluster_value}
  policyTypes: [Ingress]
  ingress:
    # The cluster's own Ray pods, on every port.
    - from:
        - podSelector:
            matchLabels:
              ray.io/cluster: {cluster_value}
    # gke-rl's idle guard and run keeper of this cluster, to the dashboard only.
    - from:
        - podSelector:
            matchLabels:
              {HELPER_LABEL}: {cluster_value}
      ports:
        - protocol: TCP
          port: {port}
",
        name = yaml(&network_policy_name(d)),
        cluster_value = yaml(cluster),
        port = knowledge::DASHBOARD_PORT,
    )
}

/// The run key on the head, where the supervisor runs (`GKE_RL_RUN_KEY`, as the keeper has it):
/// what proves the run records on the shared file system are gke-rl's own
/// (gke-rl-in-cluster's supervisor). Optional, so that a RayCluster applied without gke-rl's deploy starts.
pub fn run_key_env(d: &Deployment, indent: usize) -> String {
    let pad = " ".repeat(indent);
    format!(
        "{pad}- name: {variable}\n{pad}  valueFrom:\n{pad}    secretKeyRef:\n{pad}      name: {secret}\n{pad}      key: {key}\n{pad}      optional: true\n",
        variable = RUN_KEY_VARIABLE,
        secret = secret_name(d),
        key = TOKEN_KEY,
    )
}
