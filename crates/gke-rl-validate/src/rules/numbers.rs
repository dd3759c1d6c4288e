//! The numeric fields the other rules read, checked for type and range first: a rule that
//! reads `replicas: -8` or `replicas: eight` as "no number" would otherwise say nothing.

use std::ops::RangeInclusive;

use super::*;
use crate::Tree;
use gke_rl::yaml::{Node, Value};

/// Kubernetes' int32 fields (replicas, ports) and GKE's counts stop here.
const INT32_MAX: u64 = i32::MAX as u64;

pub(super) fn check(views: &Views<'_>, sink: &mut Sink) {
    if views.ray_clusters.is_empty() && views.deployment_files.is_empty() && views.blueprints.is_empty() && views.env_sh.is_empty() {
        return;
    }
    sink.ran(&NUMBER_INVALID);
    for cluster in &views.ray_clusters {
        for pod in ray::pods(&cluster.root) {
            for field in ["replicas", "minReplicas", "maxReplicas", "numOfHosts"] {
                if let Some(node) = pod.group.get(&[field]) {
                    whole(cluster, node, field, 0..=INT32_MAX, false, sink);
                }
            }
            for container in pod.containers() {
                for kind in ["limits", "requests"] {
                    if let Some(node) = container.get(&["resources", kind, gke_rl::knowledge::GPU_RESOURCE]) {
                        // A quantity: `8` or `"8"`, but GPUs come whole.
                        whole(cluster, node, &format!("{kind}.nvidia.com/gpu"), 0..=INT32_MAX, true, sink);
                    }
                }
                for port in container.get(&["ports"]).map(Node::items).unwrap_or_default() {
                    if let Some(node) = port.get(&["containerPort"]) {
                        whole(cluster, node, "containerPort", 1..=65535, false, sink);
                    }
                }
            }
        }
    }
    for tree in views.deployment_files.iter().chain(&views.blueprints) {
        for var in ["static_node_count", "lustre_size_gib", "per_unit_storage_throughput"] {
            if let Some(node) = tree.root.get(&["vars", var]) {
                whole(tree, node, var, 0..=INT32_MAX, true, sink);
            }
        }
    }
    for env in &views.env_sh {
        // (variable, its range, whether empty means unset)
        let variables = [
            ("LUSTRE_CAPACITY", 0..=INT32_MAX, false),
            ("LUSTRE_THROUGHPUT", 0..=INT32_MAX, false),
            ("MAX_STEPS", 0..=INT32_MAX, false),
            ("SAVE_PERIOD", 0..=INT32_MAX, false),
            ("EXPECTED_STEP_SECONDS", 1..=u64::from(u32::MAX), true),
            ("MEAN_MINUTES_BETWEEN_PREEMPTIONS", 1..=u64::from(u32::MAX), true),
        ];
        for (name, range, optional) in variables {
            if let Some((assignment, Some(value))) = env.get(name)
                && !(optional && value.is_empty())
                && let Err((problem, fix)) = in_range(value, range)
            {
                sink.emit(&NUMBER_INVALID, env.file, assignment.value_at, format!("{name} {problem}"), format!("set {name} to {fix}"));
            }
        }
    }
}

/// Reports `node` unless it is a whole number in `range`; `text_ok` when the field also
/// takes the number as a string (a Kubernetes quantity, a gcluster var).
fn whole(tree: &Tree<'_>, node: &Node, field: &str, range: RangeInclusive<u64>, text_ok: bool, sink: &mut Sink) {
    let found = match &node.value {
        // Unset (a blueprint var the deployment file gives), or a gcluster expression.
        Value::Null => Ok(()),
        Value::String(text) if text.starts_with("$(") || text.starts_with("((") => Ok(()),
        Value::Number(text) => in_range(text, range),
        Value::String(text) if text_ok => in_range(text, range),
        Value::String(text) if in_range(text, range.clone()).is_ok() => {
            Err((format!("is the text \"{text}\": the API server wants a number"), format!("`{field}: {text}`, without quotes")))
        }
        Value::String(text) => in_range(text, range),
        _ => Err(("is not a number".to_owned(), format!("a whole number from {} to {}", range.start(), range.end()))),
    };
    if let Err((problem, fix)) = found {
        sink.emit(&NUMBER_INVALID, tree.file, node.at(), format!("`{field}` {problem}"), format!("set it to {fix}"));
    }
}

/// Whether `text` is a whole number in `range`; else what is wrong and what to write.
fn in_range(text: &str, range: RangeInclusive<u64>) -> Result<(), (String, String)> {
    let expected = || format!("a whole number from {} to {}", range.start(), range.end());
    let text = text.trim();
    let shown: String = if text.chars().count() > 24 {
        format!("{}… ({} characters)", text.chars().take(20).collect::<String>(), text.chars().count())
    } else {
        text.to_owned()
    };
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err((format!("is `{shown}`, not a whole number"), expected()));
    }
    match text.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(()),
        Ok(_) if text.len() > 10 => Err((format!("is `{shown}`, larger than {} allows", range.end()), expected())),
        _ if text.starts_with('-') => Err((format!("is `{shown}`, a negative number"), expected())),
        _ => Err((format!("is `{shown}`, outside {}..={}", range.start(), range.end()), expected())),
    }
}

#[cfg(test)]
mod tests {
    use super::in_range;

    #[test]
    fn whole_numbers_in_range() {
        assert!(in_range("8", 0..=10).is_ok());
        for (text, problem) in [
            ("-8", "is `-8`, a negative number"),
            ("eight", "is `eight`, not a whole number"),
            ("8.5", "is `8.5`, not a whole number"),
            ("11", "is `11`, outside 0..=10"),
            ("12345678901234567890123456789012345678901", "is `12345678901234567890… (41 characters)`, outside 0..=10"),
        ] {
            assert_eq!(in_range(text, 0..=10).unwrap_err().0, problem, "{text}");
        }
    }
}
