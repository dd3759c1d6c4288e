//! Kueue admission: a queued RayJob or RayCluster against the queues the gke-a4 blueprint
//! creates ([`knowledge::GKE_A4_QUEUES`]). Kueue does not refuse such a workload at the API: it
//! leaves it suspended, its Workload `Inadmissible` or pending for good, and no pod starts.

use super::ray::{Pod, pods};
use super::*;
use crate::blueprint::modules;
use crate::knowledge::{self, GPU_RESOURCE, KueueQueue};
use crate::render::QUEUE_LABEL;
use crate::validate::Tree;
use crate::yaml::Node;

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    // A RayJob's cluster view carries the RayJob's own metadata, so each workload is seen once.
    let queued = views.ray_clusters.iter().filter_map(|w| Some((w, w.root.get(&["metadata", "labels", QUEUE_LABEL])?))).collect::<Vec<_>>();
    if queued.is_empty() {
        sink.skip(
            &KUEUE_INADMISSIBLE,
            "no queued RayJob",
            format!("queue the run: job.mode: rayjob and job.queue: {}", knowledge::GKE_A4_QUEUES[0].name),
        );
    }
    for (workload, label) in queued {
        sink.ran(&KUEUE_INADMISSIBLE);
        let name = label.text().unwrap_or_default();
        let Some(queue) = knowledge::GKE_A4_QUEUES.iter().find(|q| q.name == name) else {
            let known: Vec<String> =
                knowledge::GKE_A4_QUEUES.iter().map(|q| format!("`{}` in namespace `{}`", q.name, q.namespace)).collect();
            sink.emit(
                &KUEUE_INADMISSIBLE,
                workload.file,
                label.at(),
                format!(
                    "Kueue LocalQueue `{name}` is not one the gke-a4 blueprint creates ({}): no workload in it is admitted",
                    known.join(", ")
                ),
                format!("set job.queue: {}", knowledge::GKE_A4_QUEUES[0].name),
            );
            continue;
        };
        admissible(workload, queue, &quota(views, facts), sink);
    }
}

/// The ClusterQueue's nominal GPU quota and where it is stated: the blueprint's `num_gpus` when
/// it is a number (gke-rl's patch writes one for a pool that scales from zero), else the node
/// pool's GPUs (`static_gpu_count`).
fn quota(views: &Views<'_>, facts: &Facts) -> Option<(u64, String)> {
    let stated = views.blueprints.iter().find_map(|b| {
        let gpus = modules(&b.root).find_map(|m| m.get(&["settings", "kueue", "config_template_vars", "num_gpus"]))?;
        Some((gpus.as_u64()?, format!("{}:{}", b.file, gpus.line)))
    });
    stated.or_else(|| {
        let nodes = facts.node_count.as_ref()?;
        let per_node = facts.gpus_per_node.as_ref().map(|f| f.value).or_else(|| facts.machine().map(|m| u64::from(m.gpus)))?;
        Some((nodes.value * per_node, format!("{} nodes × {per_node} GPUs, {}", nodes.value, nodes.cite())))
    })
}

fn admissible(workload: &Tree<'_>, queue: &KueueQueue, quota: &Option<(u64, String)>, sink: &mut Sink) {
    let mut emit = |at: (u32, u32), message: String, help: String| sink.emit(&KUEUE_INADMISSIBLE, workload.file, at, message, help);
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
    }
    // Whole GPUs: a fraction is no GPU request the API server takes (and formatting a float
    // would cost the page its budget).
    let asked: u64 = pods.iter().map(|p| p.request(GPU_RESOURCE) as u64 * if p.is_head { 1 } else { p.replicas().unwrap_or(0) }).sum();
    if let Some((quota, stated)) = quota
        && asked > *quota
    {
        let at = pods.iter().find(|p| p.request(GPU_RESOURCE) > 0.0).map_or((1, 1), |p| p.group.at());
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

/// Each resource a container asks for that the ClusterQueue does not cover, once per container.
fn uncovered(pod: &Pod<'_>, queue: &KueueQueue, emit: &mut impl FnMut((u32, u32), String, String)) {
    let init = pod.spec.get(&["initContainers"]).map(Node::items).unwrap_or_default();
    for container in pod.containers().iter().chain(init) {
        let mut seen: Vec<&str> = Vec::new();
        for kind in ["requests", "limits"] {
            for (resource, node) in container.get(&["resources", kind]).map(Node::entries).unwrap_or_default() {
                if queue.covered.contains(&resource.as_str()) || seen.contains(&resource.as_str()) {
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
                    format!("leave `{resource}` out of the requests and limits of a queued pod, as `gke-rl render` does"),
                );
            }
        }
    }
}
