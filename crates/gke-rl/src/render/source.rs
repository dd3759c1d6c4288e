//! Which config key decides a place in a rendered file. A finding on a render is then said at
//! the config's line and names the key to change, not a line of a file that was never written.

use crate::ArtifactKind;
use crate::model::Deployment;
use crate::quote::words;
use crate::yaml::Node;

/// Places in a rendered RayCluster or RayJob, as dotted paths with `[]` for a list's items, and
/// the config key that writes each. A path matches a pattern it equals, ends with or lies under
/// (a RayJob nests the cluster's spec under `spec.rayClusterSpec`); the first match wins, so the
/// narrower patterns come first.
const MANIFEST_SOURCES: &[(&str, &str)] = &[
    ("metadata.namespace", "ray.namespace"),
    ("metadata.labels.kueue.x-k8s.io/queue-name", "job.queue"),
    ("spec.activeDeadlineSeconds", "job.rayjob_active_deadline_seconds"),
    ("spec.preRunningDeadlineSeconds", "job.rayjob_pre_running_deadline_seconds"),
    ("spec.ttlSecondsAfterFinished", "job.rayjob_ttl_seconds_after_finished"),
    ("rayVersion", "ray.ray_version"),
    ("headGroupSpec.template.spec.containers[].resources.requests.cpu", "ray.head.cpu_request"),
    ("headGroupSpec.template.spec.containers[].resources.requests.memory", "ray.head.memory_request"),
    ("headGroupSpec.template.spec.containers[].resources.limits.cpu", "ray.head.cpu_limit"),
    ("headGroupSpec.template.spec.containers[].resources.limits.memory", "ray.head.memory_limit"),
    ("headGroupSpec.template.spec.nodeSelector", "ray.head.node_pool"),
    ("headGroupSpec.template.spec.tolerations", "ray.head.node_pool"),
    ("headGroupSpec.template.spec.affinity", "ray.head.node_pool"),
    ("workerGroupSpecs[].groupName", "ray.worker.group_name"),
    ("workerGroupSpecs[].replicas", "topology.node_count"),
    ("workerGroupSpecs[].minReplicas", "topology.node_count"),
    ("workerGroupSpecs[].maxReplicas", "topology.node_count"),
    ("nvidia.com/gpu", "topology.gpus_per_node"),
    ("workerGroupSpecs[].template.spec.containers[].resources.requests.cpu", "ray.worker.cpu"),
    ("workerGroupSpecs[].template.spec.containers[].resources.limits.cpu", "ray.worker.cpu"),
    ("workerGroupSpecs[].template.spec.containers[].resources.requests.memory", "ray.worker.memory"),
    ("workerGroupSpecs[].template.spec.containers[].resources.limits.memory", "ray.worker.memory"),
    ("workerGroupSpecs[].template.spec.nodeSelector", "topology.machine_type"),
    ("workerGroupSpecs[].template.metadata.annotations", "fabric.mode"),
    ("emptyDir.sizeLimit", "fabric.shm_size"),
    ("persistentVolumeClaim.claimName", "lustre.pvc_name"),
    ("image", "ray.image"),
];

/// The config key that decides a place in a rendered file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// A dotted path: `ray.head.memory_request`, or `job.overrides.<key>` for an override of
    /// the config's own.
    pub key: String,
    /// Whether the place is the key's name rather than its value (an override's unknown key).
    pub names_the_key: bool,
}

/// The config key that decides `line:column` of the rendered file `file` (`text`), where one
/// key does.
pub fn config_key(d: &Deployment, file: &str, text: &str, line: u32, column: u32) -> Option<Source> {
    let line_text = text.lines().nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let kind = ArtifactKind::detect(file, text)?;
    let names_the_key =
        kind == ArtifactKind::JobScript && line_text.len() - line_text.trim_start().len() + 1 == usize::try_from(column).ok()?;
    Some(Source { key: key_at(d, kind, text, line_text, line, column)?, names_the_key })
}

fn key_at(d: &Deployment, kind: ArtifactKind, text: &str, line_text: &str, line: u32, column: u32) -> Option<String> {
    match kind {
        ArtifactKind::RayCluster | ArtifactKind::RayJob => {
            let path = yaml_path(text, line, column)?;
            if path == "metadata.name" {
                return Some(if kind == ArtifactKind::RayCluster { "project.cluster_name" } else { "job.name" }.to_owned());
            }
            MANIFEST_SOURCES.iter().find(|(pattern, _)| lies_under(&path, pattern)).map(|(_, key)| (*key).to_owned())
        }
        ArtifactKind::JobScript => job_script_key(d, line_text),
        ArtifactKind::DeploymentFile => {
            let name = line_text.trim_start().trim_start_matches("# ").split(':').next()?;
            super::gcluster::VARS.iter().find(|(var, ..)| *var == name).map(|(_, key, _)| (*key).to_owned())
        }
        ArtifactKind::EnvSh => {
            let name = line_text.trim_start().trim_start_matches("export ").split('=').next()?;
            crate::envsh::field_of(name).map(|pointer| pointer.trim_start_matches('/').replace('/', "."))
        }
        ArtifactKind::KueueConfiguration => Some("job.queue".to_owned()),
        _ => None,
    }
}

/// The job script's line: the recipe, the launcher (the image's release), or an override.
fn job_script_key(d: &Deployment, line: &str) -> Option<String> {
    let words = words(line.trim_end().trim_end_matches('\\'))?;
    match words.as_slice() {
        [flag, _] if flag == "--config" => Some("job.recipe".to_owned()),
        [exec, ..] if exec == "exec" => Some("ray.image".to_owned()),
        [assignment] => {
            let key = assignment.split_once('=')?.0;
            super::job::overrides(d).into_iter().find(|o| o.key == key).map(|o| o.config_key)
        }
        _ => None,
    }
}

/// The dotted path (`[]` for a list's items) of the node whose key or value starts at
/// `line:column`, the deepest one.
fn yaml_path(text: &str, line: u32, column: u32) -> Option<String> {
    let root = Node::parse(text)?;
    let mut found = None;
    root.walk("", &mut |path, node| {
        if (node.line, node.column) == (line, column) || node.key_at == Some((line, column)) {
            found = Some(path.to_owned());
        }
    });
    // The finding may point at a line rather than a node: take the last node starting on it.
    if found.is_none() {
        root.walk("", &mut |path, node| {
            if node.line == line || node.key_at.is_some_and(|(l, _)| l == line) {
                found = Some(path.to_owned());
            }
        });
    }
    found.map(|path| without_indexes(&path))
}

fn without_indexes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// Whether `path` is `pattern`, ends with it, or lies under it, segment by segment.
fn lies_under(path: &str, pattern: &str) -> bool {
    path == pattern
        || path.ends_with(&format!(".{pattern}"))
        || path.starts_with(&format!("{pattern}."))
        || path.contains(&format!(".{pattern}."))
}

/// Where the config says `key`: its node, or the nearest enclosing key the config has (then
/// `false`: the key is not set and its default was used), or `None` when the config sets none
/// of it.
pub fn config_place<'n>(root: &'n Node, key: &str) -> Option<(&'n Node, bool)> {
    let segments: Vec<&str> = match key.strip_prefix("job.overrides.") {
        // An override's key has dots of its own.
        Some(name) => vec!["job", "overrides", name],
        None => key.split('.').collect(),
    };
    (1..=segments.len()).rev().find_map(|n| root.get(&segments[..n]).map(|node| (node, n == segments.len())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{RenderOptions, render};

    fn rendered(d: &Deployment) -> crate::Artifacts {
        render(d, &RenderOptions { source: "test", regenerate: "gke-rl render" }).unwrap()
    }

    fn place_of(text: &str, needle: &str) -> (u32, u32) {
        let (before, _) = text.split_once(needle).unwrap_or_else(|| panic!("{needle} not in the render"));
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (u32::try_from(line).unwrap(), u32::try_from(column).unwrap())
    }

    #[test]
    fn places_in_the_render_name_the_config_key_that_wrote_them() {
        let d = Deployment::default();
        let artifacts = rendered(&d);
        let cluster = &artifacts.ray_cluster.as_ref().unwrap();
        let key = |artifact: &crate::Artifact, needle: &str| {
            let (line, column) = place_of(&artifact.contents, needle);
            config_key(&d, artifact.name, &artifact.contents, line, column).map(|source| source.key)
        };
        assert_eq!(key(cluster, "\"64Gi\"").as_deref(), Some("ray.head.memory_request"));
        assert_eq!(key(cluster, "\"8\"\n                memory").as_deref(), Some("ray.head.cpu_request"));
        assert_eq!(key(cluster, "gke-rl/node-role").as_deref(), Some("ray.head.node_pool"));
        assert_eq!(key(cluster, "replicas: 8").as_deref(), Some("topology.node_count"));
        assert_eq!(key(cluster, "claimName").as_deref(), Some("lustre.pvc_name"));
        assert_eq!(key(cluster, "name: ray-a4-gpu-spot").as_deref(), Some("project.cluster_name"));
        assert_eq!(key(cluster, "nvcr.io/nvidia/nemo-rl").as_deref(), Some("ray.image"));
        let script = &artifacts.job_script;
        assert_eq!(key(script, "--config").as_deref(), Some("job.recipe"));
        assert_eq!(key(script, "  grpo.max_num_steps").as_deref(), Some("job.max_num_steps"));
        assert_eq!(key(script, "  data.dataset_name").as_deref(), Some("job.dataset"));
        assert_eq!(key(artifacts.deployment_file.as_ref().unwrap(), "  lustre_size_gib").as_deref(), Some("lustre.capacity_gib"));
        assert_eq!(key(&artifacts.env_sh, "export LUSTRE_CAPACITY=").as_deref(), Some("lustre.capacity_gib"));
    }

    #[test]
    fn a_key_the_config_leaves_out_is_placed_at_its_nearest_enclosing_key() {
        let root = Node::parse("ray:\n  head:\n    node_pool: system\njob:\n  overrides:\n    grpo.val_period: 5\n").unwrap();
        let (node, set) = config_place(&root, "ray.head.node_pool").unwrap();
        assert_eq!((node.line, set), (3, true));
        let (node, set) = config_place(&root, "ray.head.memory_request").unwrap();
        assert_eq!((node.key_at, set), (Some((2, 3)), false));
        let (node, set) = config_place(&root, "job.overrides.grpo.val_period").unwrap();
        assert_eq!((node.line, set), (6, true));
        assert!(config_place(&root, "lustre.capacity_gib").is_none());
    }
}
