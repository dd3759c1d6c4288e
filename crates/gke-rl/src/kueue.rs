//! Kueue on the cluster: the queues a Kueue configuration creates, and the configuration gke-rl
//! stages for a queued run in place of the gke-a4 blueprint's.
//!
//! The blueprint's (cluster-toolkit `examples/gke-a4/kueue-configuration.yaml.tftpl`, which its
//! `workload-manager-install` module templates with `num_gpus` and `accelerator_type`) has one ClusterQueue
//! covering `nvidia.com/gpu` alone, in a topology-aware flavor. Kueue admits no Ray cluster
//! there: the head asks for CPU and memory, which no flavor covers ("resource cpu unavailable in
//! ClusterQueue", kubernetes-sigs/kueue v0.17.8 `pkg/scheduler/flavorassigner/flavorassigner.go`),
//! and topology-aware admission places pods only on nodes that exist, which a GPU pool scaling
//! from zero has not. gke-rl's keeps every document of it and changes two: the GPU flavor loses
//! its `topologyName`, and the ClusterQueue covers CPU and memory too, with a flavor for the
//! head's node pool before the GPU flavor. Kueue tries a ClusterQueue's flavors in order: the
//! head fits the first; the workers, finding no GPU quota there, take the second.

use crate::error::StageError;
use crate::knowledge::kueue::{blueprint_queues, kind, name, parsed, queues};
use crate::knowledge::{self, ACCELERATOR_LABEL, GPU_RESOURCE, HEAD_POOL_LABEL, NODE_POOL_LABEL, SYSTEM_POOL};
use crate::model::{Deployment, HeadNodePool};
use crate::quote::yaml;
use crate::yaml::Node;

/// The flavor gke-rl's configuration adds for the Ray head's node pool.
pub const HEAD_FLAVOR: &str = "ray-head";

/// The Kueue configuration gke-rl stages for `d`'s queued run in place of `upstream`, the
/// blueprint's (see the module's documentation). It stays a template: the blueprint's
/// `workload-manager-install` module fills in `num_gpus` and `accelerator_type`.
pub fn staged(upstream: &str, d: &Deployment) -> Result<String, StageError> {
    let documents = parsed(upstream).map_err(StageError::Syntax)?;
    let cluster_queues: Vec<&Node> = documents.iter().map(|(_, _, r)| r).filter(|r| kind(r) == Some("ClusterQueue")).collect();
    let [cluster_queue] = cluster_queues[..] else {
        return Err(StageError::Shape(format!("has {} ClusterQueues", cluster_queues.len())));
    };
    let groups = cluster_queue.get(&["spec", "resourceGroups"]).map(Node::items).unwrap_or_default();
    let gpu_flavors: Vec<(&str, &str)> = match groups {
        [group]
            if group.get(&["coveredResources"]).map(Node::items).is_some_and(|c| matches!(c, [r] if r.text() == Some(GPU_RESOURCE))) =>
        {
            group
                .get(&["flavors"])
                .map(Node::items)
                .unwrap_or_default()
                .iter()
                .filter_map(|f| {
                    let gpus =
                        f.get(&["resources"])?.items().iter().find(|r| r.get(&["name"]).and_then(Node::text) == Some(GPU_RESOURCE))?;
                    Some((f.get(&["name"])?.text()?, gpus.get(&["nominalQuota"])?.text()?))
                })
                .collect()
        }
        _ => return Err(StageError::Shape(format!("has a ClusterQueue `{}` of another shape", name(cluster_queue).unwrap_or("?")))),
    };
    if gpu_flavors.is_empty() {
        return Err(StageError::Shape("has a ClusterQueue without a GPU quota".to_owned()));
    }
    // The head keeps off the GPU flavors only by their accelerator label.
    let labelled = |flavor: &str| {
        documents.iter().any(|(_, _, r)| {
            kind(r) == Some("ResourceFlavor") && name(r) == Some(flavor) && r.get(&["spec", "nodeLabels", ACCELERATOR_LABEL]).is_some()
        })
    };
    if let Some((flavor, _)) = gpu_flavors.iter().find(|(f, _)| !labelled(f)) {
        return Err(StageError::Shape(format!("has a GPU flavor `{flavor}` without the node label {ACCELERATOR_LABEL}")));
    }
    let quota = |machine: &str, nodes: u64| {
        let m = knowledge::machine(machine).ok_or_else(|| StageError::UnknownMachine(machine.to_owned()))?;
        Ok::<_, StageError>((format!("{}m", m.allocatable_millicpu * nodes), format!("{}Mi", (m.allocatable_memory_bytes >> 20) * nodes)))
    };
    let nodes = u64::from(d.topology.node_count.get());
    let (gpu_cpu, gpu_memory) = quota(d.topology.machine_type.as_str(), nodes)?;
    // The head's pool and the labels its nodes carry, unless the head shares a GPU node.
    let head = match d.ray.head.node_pool {
        HeadNodePool::Dedicated => Some((HEAD_POOL_LABEL, quota(d.ray.head.machine_type.as_str(), 1)?)),
        HeadNodePool::System => Some(((NODE_POOL_LABEL, SYSTEM_POOL.0), quota(SYSTEM_POOL.1, 1)?)),
        HeadNodePool::Gpu => None,
    };

    let resource = |name: &str, quota: &str| format!("      - name: {}\n        nominalQuota: {quota}\n", yaml(name));
    let mut groups = format!("- coveredResources: [cpu, memory, {}]\n  flavors:\n", yaml(GPU_RESOURCE));
    if let Some((_, (cpu, memory))) = &head {
        groups += &format!("  - name: {}\n    resources:\n", yaml(HEAD_FLAVOR));
        groups += &(resource("cpu", cpu) + &resource("memory", memory) + &resource(GPU_RESOURCE, "0"));
    }
    for (flavor, gpus) in &gpu_flavors {
        groups += &format!("  - name: {}\n    resources:\n", yaml(flavor));
        groups += &(resource("cpu", &gpu_cpu) + &resource("memory", &gpu_memory) + &resource(GPU_RESOURCE, gpus));
    }

    let header = String::from(
        "# The gke-a4 blueprint's Kueue configuration, staged by gke-rl for a queued Ray cluster: the\n\
         # ClusterQueue covers the head's CPU and memory too (in the flavor of the head's node pool),\n\
         # and the GPU flavor has no topology: topology-aware admission places pods only on nodes\n\
         # that exist, and the GPU pool may scale from zero.\n",
    );
    let mut texts = Vec::new();
    for (_, doc, root) in &documents {
        let lines: Vec<&str> = doc.split_inclusive('\n').collect();
        let mut text = match kind(root) {
            Some("ResourceFlavor") if gpu_flavors.iter().any(|(f, _)| name(root) == Some(f)) => {
                let topology = root.get(&["spec", "topologyName"]).and_then(|n| n.key_at).map(|(line, column)| {
                    let start = line as usize - 1;
                    start..block_end(&lines, start, column as usize - 1, false)
                });
                lines.iter().enumerate().filter(|(i, _)| !topology.as_ref().is_some_and(|t| t.contains(i))).map(|(_, l)| *l).collect()
            }
            Some("ClusterQueue") => {
                let Some((key_line, key_column)) = cluster_queue.get(&["spec", "resourceGroups"]).and_then(|n| n.key_at) else {
                    return Err(StageError::Shape("has a ClusterQueue without resourceGroups".to_owned()));
                };
                let (start, indent) = (key_line as usize - 1, key_column as usize - 1);
                let end = block_end(&lines, start, indent, true);
                let pad = " ".repeat(indent);
                let replaced: String = groups.lines().map(|l| format!("{pad}{l}\n")).collect();
                let mut head_flavor = String::new();
                if let Some(((label, value), _)) = head {
                    head_flavor = format!(
                        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: {}\nspec:\n  nodeLabels:\n    {label}: {}\n---\n",
                        yaml(HEAD_FLAVOR),
                        yaml(value)
                    );
                }
                format!("{head_flavor}{}{pad}resourceGroups:\n{replaced}{}", lines[..start].concat(), lines[end..].concat())
            }
            _ => (*doc).to_owned(),
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        texts.push(text);
    }
    let staged = header + &texts.join("---\n");
    // What the edits made, read back: a shape they do not handle (flow style, say) is refused,
    // never staged half-edited.
    let covered = ["cpu", "memory", GPU_RESOURCE].map(str::to_owned);
    let found = queues(&staged).unwrap_or_default();
    if found.is_empty() || !found.iter().all(|q| q.covered == covered && !q.topology_aware) {
        return Err(StageError::Shape("is written in a way gke-rl's edit does not handle".to_owned()));
    }
    // The run's queue is there, in its namespace.
    if let Some(queue) = &d.job.queue
        && !found.iter().any(|q| q.name == queue.as_str() && q.namespace == d.ray.namespace.as_str())
    {
        return Err(StageError::Shape(format!("has no LocalQueue `{queue}` in namespace `{}`", d.ray.namespace)));
    }
    Ok(staged)
}

/// The index of the first line after the block whose key is on line `start` at `indent`: the
/// next line that is less indented, or as indented and (when `items` allows a list at the
/// key's indentation) no list item. Comments and blank lines inside the block are its own;
/// those right before the next key are left to it.
fn block_end(lines: &[&str], start: usize, indent: usize, items: bool) -> usize {
    let indent_of = |line: &str| line.len() - line.trim_start().len();
    let is_trivia = |line: &str| line.trim().is_empty() || line.trim_start().starts_with('#');
    let next = (start + 1..lines.len())
        .find(|&i| {
            let (line, at) = (lines[i], indent_of(lines[i]));
            !is_trivia(line) && (at < indent || (at == indent && !(items && line.trim_start().starts_with("- "))))
        })
        .unwrap_or(lines.len());
    (start + 1..next).rev().find(|&i| !is_trivia(lines[i])).map_or(start + 1, |i| i + 1)
}

/// The LocalQueue a queued run waits in and its ClusterQueue's GPU quota, for people; `None`
/// without a queue. The quota is the blueprint's `num_gpus`, which gke-rl's patch keeps at the
/// GPU pool's GPUs.
pub fn describe(d: &Deployment) -> Option<String> {
    let queue = d.job.queue.as_ref()?;
    let namespace = d.ray.namespace.as_str();
    // A loaded config names one of them (`config-queue-unknown`, `config-queue-namespace`).
    let found = blueprint_queues().iter().find(|q| q.name == queue.as_str() && q.namespace == namespace)?;
    let topology = &d.topology;
    Some(format!(
        "Kueue: each run waits in LocalQueue {namespace}/{queue} until ClusterQueue {} can give it its GPUs (nominal quota {} = {} nodes × {} GPUs) and its CPU and memory",
        found.cluster_queue,
        u64::from(topology.node_count.get()) * u64::from(topology.gpus_per_node.get()),
        topology.node_count,
        topology.gpus_per_node
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::kueue::{GKE_A4_TEMPLATE, Queue};
    use crate::yaml::Error;

    fn queue(covered: &[&str], topology_aware: bool, namespace: &str) -> Queue {
        Queue {
            name: "a4".to_owned(),
            namespace: namespace.to_owned(),
            cluster_queue: "a4".to_owned(),
            covered: covered.iter().map(|c| (*c).to_owned()).collect(),
            topology_aware,
        }
    }

    #[test]
    fn the_blueprints_queue_covers_gpus_alone_and_gke_rls_the_head_too() {
        assert_eq!(queues(GKE_A4_TEMPLATE).unwrap(), [queue(&[GPU_RESOURCE], true, "default")]);
        let mut d = Deployment::default();
        let text = staged(GKE_A4_TEMPLATE, &d).unwrap();
        assert_eq!(queues(&text).unwrap(), [queue(&["cpu", "memory", GPU_RESOURCE], false, "default")], "{text}");
        assert!(text.contains("  nodeLabels:\n    gke-rl/node-role: ray-head\n"), "{text}");
        for kept in
            ["kind: Topology", "name: very-high", "nominalQuota: ${num_gpus}", "gke-accelerator: ${accelerator_type}", "Apache License"]
        {
            assert!(text.contains(kept), "{kept}: {text}");
        }
        // A head on a GPU node needs no flavor of its own.
        d.ray.head.node_pool = HeadNodePool::Gpu;
        let text = staged(GKE_A4_TEMPLATE, &d).unwrap();
        assert_eq!(queues(&text).unwrap(), [queue(&["cpu", "memory", GPU_RESOURCE], false, "default")]);
        assert!(!text.contains(HEAD_FLAVOR), "{text}");
        // Comments inside the edited blocks, and after them, stay where they belong.
        let commented = GKE_A4_TEMPLATE
            .replace("  resourceGroups:\n", "  resourceGroups:\n  # GPUs only\n")
            .replace("  topologyName: \"gke-default\"\n", "  topologyName: \"gke-default\"\n  # placed by topology\n")
            .replace(
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue",
                "# the queue\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue",
            );
        let text = staged(&commented, &d).unwrap();
        assert_eq!(queues(&text).unwrap(), [queue(&["cpu", "memory", GPU_RESOURCE], false, "default")], "{text}");
        assert!(text.contains("# placed by topology") && text.contains("# the queue\n"), "{text}");
        // A topologyName whose value is on the next line goes whole; CRLF lines are read alike.
        let folded = GKE_A4_TEMPLATE.replace("  topologyName: \"gke-default\"\n", "  topologyName:\n    gke-default\n");
        let crlf = GKE_A4_TEMPLATE.replace('\n', "\r\n");
        for template in [folded, crlf] {
            let text = staged(&template, &d).unwrap();
            assert_eq!(queues(&text).unwrap(), [queue(&["cpu", "memory", GPU_RESOURCE], false, "default")], "{text}");
            assert!(!text.contains("gke-default\r\n  tolerations") && !text.contains("    gke-default\n"), "{text}");
        }
    }

    #[test]
    fn a_template_of_another_shape_is_refused_and_a_syntax_error_placed() {
        let other = GKE_A4_TEMPLATE.replace(r#"coveredResources: ["nvidia.com/gpu"]"#, r#"coveredResources: ["cpu"]"#);
        assert!(matches!(staged(&other, &Deployment::default()), Err(StageError::Shape(_))));
        // A shape the edit does not handle is refused, never staged half-edited.
        let flow = GKE_A4_TEMPLATE.replace("  topologyName: \"gke-default\"\n", "").replace(
            "spec:\n  namespaceSelector: {} # match all.\n  resourceGroups:",
            "spec: {namespaceSelector: {}, resourceGroups: [{coveredResources: [nvidia.com/gpu], flavors: [{name: a4, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]}]}\nx:",
        );
        let refused = staged(&flow, &Deployment::default());
        assert!(matches!(&refused, Err(StageError::Shape(why)) if why.contains("does not handle")), "{refused:?}");
        // A queue or a GPU label gone from the checkout's file is refused, not staged.
        let mut d = Deployment::default();
        d.job.queue = Some(crate::model::Name::new("a4").unwrap());
        let renamed = GKE_A4_TEMPLATE.replace("  name: \"a4\"\nspec:\n  clusterQueue", "  name: \"b4\"\nspec:\n  clusterQueue");
        assert!(matches!(staged(&renamed, &d), Err(StageError::Shape(why)) if why == "has no LocalQueue `a4` in namespace `default`"));
        let unlabelled = GKE_A4_TEMPLATE.replace("    cloud.google.com/gke-accelerator: ${accelerator_type}\n", "    pool: a4\n");
        assert!(matches!(staged(&unlabelled, &d), Err(StageError::Shape(why)) if why.contains("without the node label")));
        let broken = format!("{GKE_A4_TEMPLATE}---\nkind: [\n");
        let Err(StageError::Syntax(Error::Syntax { line, .. })) = staged(&broken, &Deployment::default()) else { panic!() };
        assert_eq!(line as usize, GKE_A4_TEMPLATE.lines().count() + 2);
    }
}
