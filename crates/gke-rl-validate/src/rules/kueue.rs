//! Kueue admission: a queued RayJob or RayCluster against the queues of the Kueue configuration
//! given (gke-rl's, which deploy stages for `job.queue`), else of the gke-a4 blueprint's
//! ([`kueue::GKE_A4_TEMPLATE`]). Kueue does not refuse such a workload at the API: it leaves it
//! suspended, its Workload pending or `Inadmissible`, and no pod starts. How Kueue counts is
//! kubernetes-sigs/kueue v0.17.8: a pod's requests are the larger of its containers' sum and
//! each init container's, zero quantities are skipped, a worker group counts `replicas` times
//! `numOfHosts` (`pkg/controller/jobs/raycluster/common.go`; an unset `replicas` is the KubeRay
//! CRD's default, 0), and in a ClusterQueue whose flavors are all topology-aware, every pod set
//! needs a TAS flavor (`pkg/scheduler/flavorassigner/tas_flavorassigner.go`, "no TAS flavor
//! assigned").

use super::ray::{Pod, pods};
use super::*;
use crate::Tree;
use gke_rl::blueprint::{NODE_POOL_SOURCE, module_by_source, modules};
use gke_rl::knowledge::kueue::{self, Queue};
use gke_rl::knowledge::{GPU_RESOURCE, QUEUE_LABEL};
use gke_rl::model::quantity;
use gke_rl::yaml::Node;

/// Where the queues come from when no Kueue configuration is given.
const BLUEPRINTS: &str = "the gke-a4 blueprint's kueue-configuration.yaml.tftpl";
/// How a queue comes to cover the Ray head.
const STAGE_HELP: &str =
    "set job.queue in gke-rl's config: deploy then stages a Kueue configuration whose ClusterQueue covers the Ray head";

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    // A RayJob's cluster view carries the RayJob's own metadata, so each workload is seen once.
    let queued = views.ray_clusters.iter().filter_map(|w| Some((w, w.root.get(&["metadata", "labels", QUEUE_LABEL])?))).collect::<Vec<_>>();
    if queued.is_empty() {
        sink.skip(&KUEUE_INADMISSIBLE, "no queued RayJob or RayCluster", format!("label it `{QUEUE_LABEL}: <LocalQueue>`"));
        return;
    }
    let (queues, source): (Vec<&Queue>, String) = if views.kueue_configurations.is_empty() {
        (kueue::blueprint_queues().iter().collect(), BLUEPRINTS.to_owned())
    } else {
        let files: Vec<&str> = views.kueue_configurations.iter().map(|v| v.file).collect();
        (views.kueue_configurations.iter().flat_map(|v| &v.queues).collect(), files.join(", "))
    };
    for (workload, label) in queued {
        sink.ran(&KUEUE_INADMISSIBLE);
        let name = label.text().unwrap_or_default();
        let namespace = workload.root.get(&["metadata", "namespace"]).and_then(Node::text).unwrap_or("default");
        let named = |q: &&&Queue| q.name == name;
        let Some(queue) = queues.iter().filter(named).find(|q| q.namespace == namespace).or_else(|| queues.iter().find(named)) else {
            let known: Vec<String> = queues.iter().map(|q| format!("`{}` in namespace `{}`", q.name, q.namespace)).collect();
            sink.emit(
                &KUEUE_INADMISSIBLE,
                workload.file,
                label.at(),
                format!("Kueue LocalQueue `{name}` is not one {source} creates ({}): no workload in it is admitted", known.join(", ")),
                queues.first().map_or_else(
                    || "give a Kueue configuration with a LocalQueue".to_owned(),
                    |q| format!("set `{QUEUE_LABEL}: {}`", q.name),
                ),
            );
            continue;
        };
        if let Some(blueprint) = views.blueprints.iter().find(|b| !installs_kueue(b)) {
            sink.emit(
                &KUEUE_INADMISSIBLE,
                workload.file,
                label.at(),
                format!("{} installs no Kueue (the workload-manager-install module's `kueue: install: true`): nothing admits a queued workload, which stays suspended", blueprint.file),
                "restore the workload-manager-install module's kueue settings from upstream, or leave the queue out",
            );
        }
        admissible(workload, queue, views, facts, sink);
        if let (true, Some((blueprint, min))) = (queue.topology_aware, pool_from_zero(views)) {
            sink.emit(
                &KUEUE_INADMISSIBLE,
                blueprint.file,
                min.at(),
                format!(
                    "ClusterQueue `{}` is topology-aware, which places pods only on nodes that exist, and the GPU pool autoscales from zero: no node comes before admission, and no admission before a node ({} queues in it)",
                    queue.cluster_queue, workload.file
                ),
                format!("keep the GPU pool static (static_node_count) for a queued run, or {STAGE_HELP}, whose flavors are not topology-aware"),
            );
        }
    }
}

/// Whether a module of the blueprint installs Kueue.
fn installs_kueue(blueprint: &Tree<'_>) -> bool {
    modules(&blueprint.root).any(|m| m.get(&["settings", "kueue", "install"]).and_then(Node::text) == Some("true"))
}

/// The GPU pool's autoscaling from zero, where the blueprint says so: its line.
fn pool_from_zero<'v>(views: &'v Views<'_>) -> Option<(&'v Tree<'v>, &'v Node)> {
    views.blueprints.iter().find_map(|b| {
        let min = module_by_source(&b.root, NODE_POOL_SOURCE)?.get(&["settings", "autoscaling_total_min_nodes"])?;
        (min.as_u64() == Some(0)).then_some((b, min))
    })
}

/// The ClusterQueue's nominal GPU quota and where it is stated: the blueprint's `num_gpus` when
/// it is a number (gke-rl's patch writes one for a pool that scales from zero); 0 when it is the
/// `static_gpu_count` of a pool that autoscales (cluster-toolkit `gke-node-pool/main.tf`);
/// else the node pool's GPUs.
fn quota(views: &Views<'_>, facts: &Facts) -> Option<(u64, String)> {
    let stated = views.blueprints.iter().find_map(|b| {
        let gpus = modules(&b.root).find_map(|m| m.get(&["settings", "kueue", "config_template_vars", "num_gpus"]))?;
        let at = format!("{}:{}", b.file, gpus.line);
        match gpus.as_u64() {
            Some(n) => Some((n, at)),
            None if pool_from_zero(views).is_some() => Some((0, format!("an autoscaling pool's static_gpu_count, {at}"))),
            None => None,
        }
    });
    stated.or_else(|| {
        let nodes = facts.node_count.as_ref()?;
        let per_node = facts.gpus_per_node.as_ref().map(|f| f.value).or_else(|| facts.machine().map(|m| u64::from(m.gpus)))?;
        Some((nodes.value.saturating_mul(per_node), format!("{} nodes × {per_node} GPUs, {}", nodes.value, nodes.cite())))
    })
}

/// A pod's request for `resource` as Kueue counts it, in whole units: the larger of its
/// containers' sum and each init container's (requests, else limits).
fn pod_request(pod: &Pod<'_>, resource: &str) -> u64 {
    let of = |c: &Node| {
        let q = c.get(&["resources", "requests", resource]).or_else(|| c.get(&["resources", "limits", resource]))?;
        quantity::parse(q.text()?).filter(|q| q.is_finite() && *q > 0.0).map(|q| q.ceil() as u64)
    };
    let containers = pod.containers().iter().filter_map(of).fold(0, u64::saturating_add);
    let init = pod.spec.get(&["initContainers"]).map(Node::items).unwrap_or_default().iter().filter_map(of).max().unwrap_or(0);
    containers.max(init)
}

/// How many pods of a pod set Kueue counts.
fn count(pod: &Pod<'_>) -> u64 {
    if pod.is_head {
        return 1;
    }
    let number = |key: &str, default: u64| pod.group.get(&[key]).map_or(Some(default), Node::as_u64).unwrap_or(0);
    number("replicas", 0).saturating_mul(number("numOfHosts", 1))
}

fn admissible(workload: &Tree<'_>, queue: &Queue, views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    let mut emit = |at: (u32, u32), message: String, help: String| {
        sink.emit(&KUEUE_INADMISSIBLE, workload.file, at, message, help);
    };
    let namespace = workload.root.get(&["metadata", "namespace"]);
    if namespace.and_then(Node::text).unwrap_or("default") != queue.namespace {
        emit(
            namespace.map_or((1, 1), Node::at),
            format!("Kueue LocalQueue `{}` is in namespace `{}`, not the workload's", queue.name, queue.namespace),
            format!("run in namespace `{}` (ray.namespace), or create a LocalQueue in yours", queue.namespace),
        );
    }
    let pods = pods(&workload.root);
    for pod in &pods {
        uncovered(pod, queue, &mut emit);
        if queue.topology_aware && queue.covered.iter().all(|r| pod_request(pod, r) == 0) {
            emit(
                pod.group.at(),
                format!(
                    "{} asks for none of what ClusterQueue `{}` covers ({}), and its flavors are all topology-aware: Kueue finds no TAS flavor for it and never admits the workload",
                    pod.name(),
                    queue.cluster_queue,
                    queue.covered.join(", ")
                ),
                format!("{STAGE_HELP} in a flavor of its own"),
            );
        }
    }
    let asked = pods.iter().map(|p| pod_request(p, GPU_RESOURCE).saturating_mul(count(p))).fold(0, u64::saturating_add);
    if let Some((quota, stated)) = quota(views, facts)
        && asked > quota
    {
        let at = pods.iter().find(|p| pod_request(p, GPU_RESOURCE) > 0).map_or((1, 1), |p| p.group.at());
        emit(
            at,
            format!(
                "the run asks for {asked} GPUs, over ClusterQueue `{}`'s nominal quota of {quota} ({stated}): Kueue never admits it",
                queue.cluster_queue
            ),
            "run on fewer nodes, or give the node pool more".to_owned(),
        );
    }
}

/// Each resource a container asks for (more than zero of) that the ClusterQueue does not cover,
/// once per container.
fn uncovered(pod: &Pod<'_>, queue: &Queue, emit: &mut impl FnMut((u32, u32), String, String)) {
    let init = pod.spec.get(&["initContainers"]).map(Node::items).unwrap_or_default();
    for container in pod.containers().iter().chain(init) {
        let mut seen: Vec<&str> = Vec::new();
        for kind in ["requests", "limits"] {
            for (resource, node) in container.get(&["resources", kind]).map(Node::entries).unwrap_or_default() {
                let zero = node.text().and_then(quantity::parse) == Some(0.0);
                if zero || queue.covered.contains(resource) || seen.contains(&resource.as_str()) {
                    continue;
                }
                seen.push(resource);
                emit(
                    node.key_at.unwrap_or(node.at()),
                    format!(
                        "{} asks for `{resource}`, which ClusterQueue `{}` does not cover ({}): Kueue admits no pod that does",
                        pod.name(),
                        queue.cluster_queue,
                        queue.covered.join(", ")
                    ),
                    if ["cpu", "memory"].contains(&resource.as_str()) {
                        STAGE_HELP.to_owned()
                    } else {
                        format!("add `{resource}` to the ClusterQueue's coveredResources, with a quota (kueue-configuration.yaml.tftpl)")
                    },
                );
            }
        }
    }
}
