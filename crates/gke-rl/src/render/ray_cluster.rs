//! `ray-cluster.yaml`: the KubeRay RayCluster (`ray.io/v1`).

use std::fmt::Write as _;

use super::{HF_TOKEN_KEY, WANDB_API_KEY_KEY};
use crate::knowledge::GpuHealthCheck;
use crate::knowledge::{
    self, ACCELERATOR_LABEL, GIB_HOST_PATH, GIB_MOUNT_PATH, GIB_NCCL_NET, GPU_HEALTH_CHECK, GpuFabric, HEAD_POOL_LABEL, NODE_POOL_LABEL,
    NVIDIA_HOST_PATH, NVIDIA_LIBRARY_PATH, NVIDIA_MOUNT_PATH, QUEUE_LABEL, SPOT_LABEL, SYSTEM_POOL,
};
use crate::model::{Deployment, HeadNodePool};
use crate::quote::yaml;

const LUSTRE_VOLUME: &str = "lustre";

/// The annotation that makes KubeRay run the containers' own command, with its generated
/// `ray start` in `$KUBERAY_GEN_RAY_START_CMD`; KubeRay 1.7 reads it on the RayCluster.
pub const OVERWRITE_COMMAND_ANNOTATION: &str = "ray.io/overwrite-container-cmd";
/// The pod annotation that attaches GKE networks as interfaces.
pub const INTERFACES_ANNOTATION: &str = "networking.gke.io/interfaces";
/// What the head runs when KubeRay leaves the command to the containers.
const HEAD_COMMAND: &str = r#"ulimit -n 65536; exec /bin/bash -c "$KUBERAY_GEN_RAY_START_CMD""#;

pub(super) fn manifest(d: &Deployment, ray_version: &str, token_auth: bool, fabric: Option<&GpuFabric>) -> String {
    format!(
        "apiVersion: ray.io/v1\nkind: RayCluster\n{}spec:\n{}",
        metadata(d, d.project.cluster_name.as_str(), fabric),
        spec(d, ray_version, token_auth, fabric)
    )
}

/// A RayCluster's metadata, or a RayJob's (KubeRay copies a RayJob's labels and annotations to
/// the cluster it makes: rayjob_controller.go `constructRayClusterForRayJob`, KubeRay v1.7.0).
pub(super) fn metadata(d: &Deployment, name: &str, fabric: Option<&GpuFabric>) -> String {
    let mut out =
        format!("metadata:\n  name: {name}\n  namespace: {}\n  labels:\n    app.kubernetes.io/managed-by: gke-rl\n", d.ray.namespace);
    if let Some(queue) = &d.job.queue {
        let _ =
            writeln!(out, "    # Kueue admits it from this LocalQueue once its ClusterQueue has the quota.\n    {QUEUE_LABEL}: {queue}");
    }
    if fabric.is_some() {
        let _ = write!(
            out,
            "  annotations:\n    # The containers run their own command (below), which ends in KubeRay's `ray start`.\n    {OVERWRITE_COMMAND_ANNOTATION}: \"true\"\n"
        );
    }
    out
}

/// A RayCluster's spec, at the indent of `spec:`'s fields: the RayCluster's own, and a RayJob's
/// `rayClusterSpec`.
pub(super) fn spec(d: &Deployment, ray_version: &str, token_auth: bool, fabric: Option<&GpuFabric>) -> String {
    let ray = &d.ray;
    let workers = d.topology.node_count;
    let image_text = yaml(ray.image.as_str());
    format!(
        "  # The Ray inside the image, not the newest release: KubeRay >= 1.6 picks the pods' health
  # probes by this version, and a newer one leaves the pods of an older Ray un-Ready.
  rayVersion: {ray_version}
{auth}  headGroupSpec:
    rayStartParams:
      dashboard-host: {dashboard_host}
    template:
      spec:
{placement}        containers:
          - name: ray-head
            image: {image}
{head_command}            ports:
              - name: gcs-server
                containerPort: 6379
              - name: dashboard
                containerPort: 8265
              - name: client
                containerPort: 10001
{head_env}{head_resources}            volumeMounts:
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
{worker_metadata}        spec:
{worker_placement}{health_check}          containers:
            - name: ray-worker
              image: {image}
{worker_command}{worker_env}{worker_resources}              volumeMounts:
                - name: {LUSTRE_VOLUME}
                  mountPath: {mount_path}
                - name: dshm
                  mountPath: /dev/shm
{fabric_mounts}          volumes:
{worker_lustre_volume}            - name: dshm
              emptyDir:
                medium: Memory
                sizeLimit: {shm_size}
{fabric_volumes}",
        ray_version = yaml(ray_version),
        auth = if token_auth { auth_options(d) } else { String::new() },
        dashboard_host = yaml("0.0.0.0"),
        placement = head_placement(d),
        worker_placement = placement(d, 10),
        health_check = health_check_container(d, &image_text, fabric.is_some()),
        image = image_text,
        head_env = secret_env(d, None, 12) + &crate::auth::run_key_env(d, 14),
        worker_env = secret_env(d, fabric.map(|_| (GIB_NCCL_NET_VAR, GIB_NCCL_NET)), 14),
        head_command = if fabric.is_some() { command(HEAD_COMMAND, 12) } else { String::new() },
        worker_metadata = fabric.map_or_else(String::new, |f| worker_annotations(d, f)),
        worker_command = if fabric.is_some() { command(&worker_start(), 14) } else { String::new() },
        fabric_mounts = if fabric.is_some() {
            format!(
                "                - name: gib\n                  mountPath: {GIB_MOUNT_PATH}\n                - name: nvidia\n                  mountPath: {NVIDIA_MOUNT_PATH}\n"
            )
        } else {
            String::new()
        },
        fabric_volumes = if fabric.is_some() {
            format!(
                "            - name: gib\n              hostPath:\n                path: {GIB_HOST_PATH}\n            - name: nvidia\n              hostPath:\n                path: {NVIDIA_HOST_PATH}\n"
            )
        } else {
            String::new()
        },
        shm_size = yaml(d.fabric.shm_size.as_str()),
        head_resources = head_resources(d),
        worker_resources = worker_resources(d),
        mount_path = yaml(d.lustre.mount_path.as_str()),
        lustre_volume = lustre_volume(d, 10),
        worker_lustre_volume = lustre_volume(d, 12),
        group = ray.worker.group_name,
    )
}

fn head_resources(d: &Deployment) -> String {
    let head = &d.ray.head;
    format!(
        "            resources:\n              requests:\n                cpu: {}\n                memory: {}\n              limits:\n                cpu: {}\n                memory: {}\n",
        yaml(head.cpu_request.as_str()),
        yaml(head.memory_request.as_str()),
        yaml(head.cpu_limit.as_str()),
        yaml(head.memory_limit.as_str()),
    )
}

fn worker_resources(d: &Deployment) -> String {
    let gpus = yaml(&d.topology.gpus_per_node.get().to_string());
    let (cpu, memory) = (yaml(d.ray.worker.cpu.as_str()), yaml(d.ray.worker.memory.as_str()));
    let lines = format!("                  cpu: {cpu}\n                  memory: {memory}\n                  nvidia.com/gpu: {gpus}\n");
    format!("              resources:\n                requests:\n{lines}                limits:\n{lines}")
}

/// Token authentication: KubeRay gives every Ray container the token of this Secret.
fn auth_options(d: &Deployment) -> String {
    format!(
        "  # Only holders of the token in Secret {secret} (which deploy creates) reach the Jobs API\n  \
         # and the GCS: KubeRay gives it to every Ray container as RAY_AUTH_TOKEN.\n  \
         authOptions:\n    mode: token\n    secretName: {secret}\n",
        secret = crate::auth::secret_name(d),
    )
}

/// The head's node selector: its own pool, the system pool, or a GPU node (with the toleration).
fn head_placement(d: &Deployment) -> String {
    // Kueue admits a pod set in any flavor whose node labels its selector does not contradict;
    // with no GPU node it may take, the head is never admitted onto the GPU flavor, whose
    // labels Kueue would add to its own (kubernetes-sigs/kueue v0.17.8
    // `pkg/scheduler/flavorassigner/flavorassigner.go`).
    let off_gpus = match d.job.queue {
        Some(_) => format!(
            "        # Never a GPU node, should Kueue find room for the head only in the GPU flavor.\n        affinity:\n          nodeAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n              nodeSelectorTerms:\n                - matchExpressions:\n                    - key: {ACCELERATOR_LABEL}\n                      operator: DoesNotExist\n"
        ),
        None => String::new(),
    };
    let select = |why: &str, label: &str, value: &str| {
        format!("        # {why}\n        nodeSelector:\n          {label}: {}\n{off_gpus}", yaml(value))
    };
    match d.ray.head.node_pool {
        // An existing cluster's own CPU pool: the one deploy chose, by GKE's pool label.
        HeadNodePool::Dedicated | HeadNodePool::System if d.project.existing_cluster => match &d.ray.head.pool {
            Some(pool) => {
                select("The head runs on the cluster's on-demand CPU pool, off the Spot GPU nodes.", NODE_POOL_LABEL, pool.as_str())
            }
            None => format!(
                "        # The head runs on any on-demand node without GPUs (deploy pins the pool it picks).\n        affinity:\n          nodeAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n              nodeSelectorTerms:\n                - matchExpressions:\n                    - key: {ACCELERATOR_LABEL}\n                      operator: DoesNotExist\n                    - key: {SPOT_LABEL}\n                      operator: DoesNotExist\n"
            ),
        },
        HeadNodePool::Dedicated => select(
            "The head has an on-demand CPU node of its own: a Spot preemption does not take the Ray cluster.",
            HEAD_POOL_LABEL.0,
            HEAD_POOL_LABEL.1,
        ),
        HeadNodePool::System => {
            select("The head runs on the cluster's system node pool, off the Spot GPU nodes.", NODE_POOL_LABEL, SYSTEM_POOL.0)
        }
        HeadNodePool::Gpu => format!(
            "        # The head shares a GPU node with a worker; it requests no GPU, so it needs the toleration.\n{}",
            placement(d, 8)
        ),
    }
}

/// The GPU node selector (on an existing cluster, its GPU pool too) and the toleration for
/// GKE's `nvidia.com/gpu` taint.
fn placement(d: &Deployment, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let pool = match (&d.topology.pool, d.project.existing_cluster) {
        (Some(pool), true) => format!("{pad}  {NODE_POOL_LABEL}: {}\n", yaml(pool.as_str())),
        _ => String::new(),
    };
    format!(
        "{pad}nodeSelector:\n{pad}  {ACCELERATOR_LABEL}: {accelerator}\n{pool}\
         {pad}tolerations:\n{pad}  - key: nvidia.com/gpu\n{pad}    operator: Exists\n{pad}    effect: NoSchedule\n",
        accelerator = yaml(d.topology.accelerator.as_str()),
    )
}

/// The variable that picks NCCL's network plugin.
const GIB_NCCL_NET_VAR: &str = "NCCL_NET";

/// The network interfaces of a worker: `eth0` on the pod network, then one per RDMA network
/// (`eth2`…: the node's `eth1` is the blueprint's second gVNIC network, which the pods leave out).
pub fn interfaces(d: &Deployment, fabric: &GpuFabric) -> String {
    let rdma = rdma_networks(d, fabric).into_iter().enumerate().map(|(i, network)| (format!("eth{}", i + 2), network));
    let entries: Vec<String> = std::iter::once(("eth0".to_owned(), "default".to_owned()))
        .chain(rdma)
        .map(|(interface, network)| format!(r#"{{"interfaceName":"{interface}","network":"{network}"}}"#))
        .collect();
    format!("[{}]", entries.join(","))
}

/// The RDMA networks the workers attach: the config's (on an existing cluster, those deploy
/// read), else the blueprint's.
pub fn rdma_networks(d: &Deployment, fabric: &GpuFabric) -> Vec<String> {
    match &d.fabric.rdma_networks {
        Some(networks) => networks.iter().map(ToString::to_string).collect(),
        None => knowledge::rdma_networks(fabric.nics),
    }
}

fn worker_annotations(d: &Deployment, fabric: &GpuFabric) -> String {
    format!(
        "        metadata:\n          annotations:\n            # GPUDirect RDMA: the pod network on eth0, the cluster's {n} RDMA networks on eth2 and up.\n            \
         networking.gke.io/default-interface: eth0\n            {INTERFACES_ANNOTATION}: '{interfaces}'\n",
        n = rdma_networks(d, fabric).len(),
        interfaces = interfaces(d, fabric),
    )
}

/// gIB's libraries and NCCL settings in the environment `ray start` (and so every Ray worker
/// process) inherits. gIB's own script sets the NCCL variables, which change between its releases;
/// the library path is the NVIDIA driver's alone, as upstream's ([`NVIDIA_LIBRARY_PATH`]).
fn worker_start() -> String {
    format!(
        "ulimit -n 65536\n\
         export LD_LIBRARY_PATH={NVIDIA_LIBRARY_PATH}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\n\
         source {GIB_MOUNT_PATH}/scripts/set_nccl_env.sh\n\
         exec /bin/bash -c \"$KUBERAY_GEN_RAY_START_CMD\"\n"
    )
}

/// `command` and `args` that run `script` in bash.
fn command(script: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let body: String = script.lines().map(|line| format!("{pad}    {line}\n")).collect();
    format!("{pad}command: [\"/bin/bash\", \"-c\"]\n{pad}args:\n{pad}  - |\n{body}")
}

/// Tokens reach the containers from the Kubernetes Secret, never from a file; `plain` is a
/// variable with a literal value.
fn secret_env(d: &Deployment, plain: Option<(&str, &str)>, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let secret = &d.secrets.kubernetes_secret;
    let mut out = format!("{pad}env:\n");
    if let Some((name, value)) = plain {
        let _ = writeln!(out, "{pad}  - name: {name}\n{pad}    value: {}", yaml(value));
    }
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

/// The GPU workers' health gate ([`GPU_HEALTH_CHECK`]): an init container that takes all the
/// node's GPUs before the worker does, so the device plugin mounts `nvidia-smi`, the driver and
/// every GPU without a privileged container (upstream's runs privileged in Alpine), and fails,
/// with its output as the termination message that readiness reports with the node's name,
/// unless the machine's GPUs are all there without uncorrected ECC errors. Where the pod mounts
/// the node's NVIDIA folder itself (the fabric's), the check mounts it too, as upstream's does.
fn health_check_container(d: &Deployment, image: &str, nvidia_volume: bool) -> String {
    let pad = " ".repeat(12);
    let node_gpus = expected_gpus(d);
    let script = command(&gpu_health_script(node_gpus), 14);
    let gpus = yaml(&node_gpus.to_string());
    format!(
        "          # A node with a missing GPU or uncorrected ECC errors is named, not used (Cluster Toolkit's\n          \
         # gpu-healthcheck in examples/gke-a4/nccl-jobset-example.yaml, v1.95.0).\n          \
         initContainers:\n{pad}- name: {name}\n{pad}  image: {image}\n{script}\
         {pad}  env:\n{pad}    - name: LD_LIBRARY_PATH\n{pad}      value: {NVIDIA_LIBRARY_PATH}\n\
         {mounts}\
         {pad}  terminationMessagePolicy: FallbackToLogsOnError\n\
         {pad}  resources:\n{pad}    requests:\n{pad}      nvidia.com/gpu: {gpus}\n{pad}    limits:\n{pad}      nvidia.com/gpu: {gpus}\n",
        name = GPU_HEALTH_CHECK.container,
        mounts = if nvidia_volume {
            format!("{pad}  volumeMounts:\n{pad}    - name: nvidia\n{pad}      mountPath: {NVIDIA_MOUNT_PATH}\n")
        } else {
            String::new()
        },
    )
}

/// The GPUs a node of the deployment's machine type has ([`knowledge::MACHINES`]), else the
/// GPUs a worker requests.
fn expected_gpus(d: &Deployment) -> u32 {
    knowledge::machine(d.topology.machine_type.as_str()).map_or(d.topology.gpus_per_node.get(), |m| m.gpus)
}

/// The health gate's bash script for a node of `gpus` GPUs: upstream's checks, in order, with
/// upstream's outcomes (fewer GPUs than expected, an unreadable or non-zero uncorrected ECC
/// count fail), and stricter where upstream's `set -e` does not reach: an ECC query that fails
/// or answers for fewer GPUs than there are, and any count that is not a number, fail too.
fn gpu_health_script(gpus: u32) -> String {
    let GpuHealthCheck { nvidia_smi, count_query, zero_query, .. } = GPU_HEALTH_CHECK;
    format!(
        "gpus=$({nvidia_smi} --query-gpu={count_query} --format=csv,noheader,nounits | wc -l)\n\
         if [ \"$gpus\" -lt {gpus} ]; then\n  \
           echo \"only $gpus GPUs, expected {gpus}\"\n  exit 1\nfi\n\
         if ! counts=$({nvidia_smi} --query-gpu={zero_query} --format=csv,noheader,nounits); then\n  \
           echo \"nvidia-smi cannot read {zero_query}\"\n  exit 1\nfi\n\
         mapfile -t errors <<< \"$counts\"\n\
         if [ \"${{#errors[@]}}\" -lt \"$gpus\" ]; then\n  \
           echo \"{zero_query} for ${{#errors[@]}} of $gpus GPUs\"\n  exit 1\nfi\n\
         for gpu in \"${{!errors[@]}}\"; do\n  \
           case \"${{errors[$gpu]}}\" in\n    \
             ''|*[!0-9]*) echo \"GPU $gpu: {zero_query} is ${{errors[$gpu]}}\"; exit 1 ;;\n  \
           esac\n  \
           if [ \"${{errors[$gpu]}}\" -gt 0 ]; then\n    \
             echo \"GPU $gpu: ${{errors[$gpu]}} uncorrected ECC errors\"\n    exit 1\n  \
           fi\ndone\n\
         echo \"$gpus GPUs, no uncorrected ECC errors\"\n"
    )
}
