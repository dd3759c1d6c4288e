//! `ray-cluster.yaml`: the KubeRay RayCluster (`ray.io/v1`).

use std::fmt::Write as _;

use super::{HF_TOKEN_KEY, WANDB_API_KEY_KEY};
use crate::model::Deployment;
use crate::quote::yaml;

const LUSTRE_VOLUME: &str = "lustre";

pub(super) fn manifest(d: &Deployment, ray_version: &str) -> String {
    let ray = &d.ray;
    let gpus = d.topology.gpus_per_node.get().to_string();
    let workers = d.topology.node_count;
    format!(
        "apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {name}
  namespace: {namespace}
  labels:
    app.kubernetes.io/managed-by: gke-rl
spec:
  # The Ray inside the image, not the newest release: KubeRay >= 1.6 picks the pods' health
  # probes by this version, and a newer one leaves the pods of an older Ray un-Ready.
  rayVersion: {ray_version}
  headGroupSpec:
    rayStartParams:
      dashboard-host: {dashboard_host}
    template:
      spec:
        # The head shares a GPU node with a worker; it requests no GPU, so it needs the toleration.
{placement}        containers:
          - name: ray-head
            image: {image}
            ports:
              - name: gcs-server
                containerPort: 6379
              - name: dashboard
                containerPort: 8265
              - name: client
                containerPort: 10001
{head_env}            resources:
              requests:
                cpu: {head_cpu_request}
                memory: {head_memory_request}
              limits:
                cpu: {head_cpu_limit}
                memory: {head_memory_limit}
            volumeMounts:
              - name: {LUSTRE_VOLUME}
                mountPath: {mount_path}
        volumes:
{lustre_volume}  workerGroupSpecs:
    - groupName: {group}
      replicas: {workers}
      minReplicas: {workers}
      maxReplicas: {workers}
      rayStartParams: {{}}
      template:
        spec:
{worker_placement}          containers:
            - name: ray-worker
              image: {image}
{worker_env}              resources:
                requests:
                  cpu: {worker_cpu}
                  memory: {worker_memory}
                  nvidia.com/gpu: {gpus}
                limits:
                  cpu: {worker_cpu}
                  memory: {worker_memory}
                  nvidia.com/gpu: {gpus}
              volumeMounts:
                - name: {LUSTRE_VOLUME}
                  mountPath: {mount_path}
                - name: dshm
                  mountPath: /dev/shm
          volumes:
{worker_lustre_volume}            - name: dshm
              emptyDir:
                medium: Memory
",
        name = d.project.cluster_name,
        namespace = ray.namespace,
        ray_version = yaml(ray_version),
        dashboard_host = yaml("0.0.0.0"),
        placement = placement(d, 8),
        worker_placement = placement(d, 10),
        image = yaml(ray.image.as_str()),
        head_env = secret_env(d, 12),
        worker_env = secret_env(d, 14),
        head_cpu_request = yaml(ray.head.cpu_request.as_str()),
        head_memory_request = yaml(ray.head.memory_request.as_str()),
        head_cpu_limit = yaml(ray.head.cpu_limit.as_str()),
        head_memory_limit = yaml(ray.head.memory_limit.as_str()),
        mount_path = yaml(d.lustre.mount_path.as_str()),
        lustre_volume = lustre_volume(d, 10),
        worker_lustre_volume = lustre_volume(d, 12),
        group = ray.worker.group_name,
        worker_cpu = yaml(ray.worker.cpu.as_str()),
        worker_memory = yaml(ray.worker.memory.as_str()),
        gpus = yaml(&gpus),
    )
}

/// The GPU node selector and the toleration for GKE's `nvidia.com/gpu` taint.
fn placement(d: &Deployment, indent: usize) -> String {
    let pad = " ".repeat(indent);
    format!(
        "{pad}nodeSelector:\n{pad}  cloud.google.com/gke-accelerator: {accelerator}\n\
         {pad}tolerations:\n{pad}  - key: nvidia.com/gpu\n{pad}    operator: Exists\n{pad}    effect: NoSchedule\n",
        accelerator = yaml(d.topology.accelerator.as_str()),
    )
}

/// Tokens reach the containers from the Kubernetes Secret, never from a file.
fn secret_env(d: &Deployment, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let secret = &d.secrets.kubernetes_secret;
    let mut out = format!("{pad}env:\n");
    let mut entry = |key: &str, optional: bool| {
        let _ = write!(
            out,
            "{pad}  - name: {key}\n{pad}    valueFrom:\n{pad}      secretKeyRef:\n{pad}        name: {secret}\n{pad}        key: {key}\n"
        );
        if optional {
            let _ = writeln!(out, "{pad}        optional: true");
        }
    };
    entry(HF_TOKEN_KEY, false);
    if d.secrets.wandb_api_key_env.is_some() {
        entry(WANDB_API_KEY_KEY, true);
    }
    out
}

fn lustre_volume(d: &Deployment, indent: usize) -> String {
    let pad = " ".repeat(indent);
    format!("{pad}- name: {LUSTRE_VOLUME}\n{pad}  persistentVolumeClaim:\n{pad}    claimName: {}\n", d.lustre.pvc_name)
}
