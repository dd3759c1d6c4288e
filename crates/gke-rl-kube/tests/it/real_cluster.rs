//! The Kubernetes steps against a real cluster: the one `KUBECONFIG` (or ~/.kube/config) points
//! at, with the KubeRay operator installed. Ignored by default; see the README:
//!
//! ```sh
//! kind create cluster && helm install kuberay-operator kuberay/kuberay-operator --version 1.7.0
//! cargo test -p gke-rl-kube --test real_cluster -- --ignored --test-threads 1
//! ```

use std::sync::Arc;
use std::time::Duration;

use gke_rl_kube::{Namespaced, Wait};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NAMESPACE: &str = "default";
const CLUSTER: &str = "gke-rl-real-test";

/// A CPU-only RayCluster with a head and one small worker, for any cluster.
fn manifest() -> String {
    format!(
        "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: {CLUSTER}\n  namespace: {NAMESPACE}\nspec:\n  rayVersion: \"2.46.0\"\n  \
         headGroupSpec:\n    rayStartParams:\n      dashboard-host: \"0.0.0.0\"\n    template:\n      spec:\n        containers:\n          \
         - name: ray-head\n            image: rayproject/ray:2.46.0\n            resources:\n              requests: {{cpu: \"500m\", memory: 2Gi}}\n  \
         workerGroupSpecs:\n    - groupName: small\n      replicas: 1\n      minReplicas: 1\n      maxReplicas: 1\n      rayStartParams: {{}}\n      \
         template:\n        spec:\n          containers:\n            - name: ray-worker\n              image: rayproject/ray:2.46.0\n              \
         resources:\n                requests: {{cpu: \"500m\", memory: 1Gi}}\n"
    )
}

/// Through the same connection the CLI makes: the kubeconfig's current context, bounded calls.
async fn clusters() -> Namespaced {
    let connected = gke_rl_kube::connect(None, None, &gke_rl_kube::Options::default()).await.expect("a cluster from KUBECONFIG");
    Namespaced::new(connected.client, NAMESPACE)
}

#[tokio::test]
#[ignore = "needs a real cluster with KubeRay (KUBECONFIG)"]
async fn secret_apply_update_and_delete() {
    let clusters = clusters().await;
    clusters.apply_secret("gke-rl-real-test", &[("HF_TOKEN", "a"), ("WANDB_API_KEY", "b")]).await.unwrap();
    clusters.apply_secret("gke-rl-real-test", &[("HF_TOKEN", "c")]).await.unwrap();
    assert!(clusters.delete_secret("gke-rl-real-test").await.unwrap());
    assert!(!clusters.delete_secret("gke-rl-real-test").await.unwrap());
}

#[tokio::test]
#[ignore = "needs a real cluster with KubeRay (KUBECONFIG)"]
async fn ray_cluster_ready_port_forward_and_delete() {
    let clusters = clusters().await;
    let (name, uid) = clusters.apply(&manifest()).await.unwrap();
    assert!(!uid.is_empty());
    let wait = Wait { timeout: Duration::from_secs(600), poll: Duration::from_secs(2) };
    clusters.wait_ready(&name, 1, wait, |r| eprintln!("{:?} {:?}", r.progress(), r.problems)).await.unwrap();

    let local = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let forwarding =
        gke_rl_kube::portforward::forward(local, clusters.head_port(&name, 8265), Duration::from_secs(30), Arc::new(|e| eprintln!("{e}")))
            .await
            .unwrap();
    for _ in 0..3 {
        let mut stream = tokio::net::TcpStream::connect(forwarding.local).await.unwrap();
        stream
            .write_all(b"GET /api/version HTTP/1.1\r\nHost: localhost\r\nUser-Agent: gke-rl-test\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert!(answer.contains("\"ray_version\""), "{answer}");
    }

    assert!(clusters.delete(&name).await.unwrap());
    clusters.wait_pods_gone(&name, wait).await.unwrap();
}
