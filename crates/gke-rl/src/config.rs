//! Loading a [`Deployment`] from a `gke-rl.yaml` config file.

use crate::diagnostic::Diagnostic;
use crate::model::Deployment;
use crate::yaml::{self, Node};

/// Where to look up every key and its type.
const SCHEMA_HINT: &str = "`gke-rl schema` prints every key with its type and default";

/// Parses a config file. Keys left out take the embedded default; unknown keys, wrong
/// types and invalid values are errors pointing at the offending key or value.
pub fn from_yaml(text: &str) -> Result<Deployment, Diagnostic> {
    let is_empty = text.lines().all(|line| line.trim().is_empty() || line.trim_start().starts_with('#'));
    if is_empty {
        return Ok(Deployment::default());
    }
    let root = Node::try_parse(text)
        .map_err(|e| Diagnostic::error("config-invalid-value", e.at(), e.message(), format!("fix the YAML; {SCHEMA_HINT}")))?;
    let mut deployment: Deployment = yaml::from_node(&root).map_err(|e| match e {
        yaml::Error::Type(e) => to_diagnostic(&e),
        other => Diagnostic::error("config-invalid-value", other.at(), other.message(), format!("fix the YAML; {SCHEMA_HINT}")),
    })?;
    follow_the_family(&mut deployment, &root)?;
    overrides_set_elsewhere(&deployment, &root)?;
    if let Err(unknown) = deployment.ray.resolved_version() {
        let at = root.get(&["ray", "image"]).map_or((1, 1), Node::at);
        return Err(Diagnostic::error(
            "config-unknown-image",
            at,
            unknown.to_string(),
            "add `ray_version: <version>` under `ray:` (run `ray --version` inside the image to find it)",
        ));
    }
    if let Err(unsupported) = deployment.ray.token_auth() {
        let at = root.get(&["ray", "auth"]).map_or((1, 1), Node::at);
        return Err(Diagnostic::error(
            "config-auth-unsupported",
            at,
            unsupported.to_string(),
            format!("use {}, or leave `auth` out: older Rays get a NetworkPolicy", crate::knowledge::token_auth_images()),
        ));
    }
    if let Some(conflict) = deployment.mode_conflict() {
        let at = conflict
            .fields()
            .iter()
            .find_map(|field| root.get(&field.trim_start_matches('/').split('/').collect::<Vec<_>>()))
            .map_or((1, 1), Node::at);
        let code = conflict.codes().0;
        return Err(Diagnostic::error(code, at, conflict.message(), conflict.help()));
    }
    Ok(deployment)
}

/// A `job.overrides` key that gke-rl sets from another field (or one above or under it) is an
/// error at the key: one value, said in one place. A value with a control character (a line
/// break, a tab) is an error at the value: an override is one word of the launch line.
fn overrides_set_elsewhere(deployment: &Deployment, root: &Node) -> Result<(), Diagnostic> {
    for (key, value) in &deployment.job.overrides {
        if value.0.as_deref().is_some_and(|v| v.chars().any(char::is_control)) {
            let at = root.get(&["job", "overrides", key.as_str()]).map_or((1, 1), Node::at);
            return Err(Diagnostic::error(
                "config-invalid-value",
                at,
                format!("`job.overrides.{key}` holds a control character (a line break, a tab)"),
                "give the value on one line, without control characters",
            ));
        }
        if let Some(field) = crate::render::set_from(deployment, key.as_str()) {
            let at = root.get(&["job", "overrides", key.as_str()]).map_or((1, 1), |node| node.key_at.unwrap_or(node.at()));
            return Err(Diagnostic::error(
                "config-override-set-elsewhere",
                at,
                format!("`job.overrides` sets `{key}`, which gke-rl sets from `{field}`"),
                format!("set `{field}` instead, and remove this override"),
            ));
        }
    }
    Ok(())
}

/// A known GPU machine type decides its nodes' accelerator label and GPU count: left out,
/// they follow it; stated otherwise, they are an error at the value.
fn follow_the_family(deployment: &mut Deployment, root: &Node) -> Result<(), Diagnostic> {
    let topology = &mut deployment.topology;
    let Some(family) = crate::knowledge::gpu_family(topology.machine_type.as_str()) else { return Ok(()) };
    let mismatch = |key: &str, stated: &Node, theirs: String| {
        Diagnostic::error(
            "config-family-mismatch",
            stated.at(),
            format!("`topology.{key}` is {}, but {} nodes ({}) have {theirs}", stated.text().unwrap_or("?"), family.machine, family.name),
            format!("set `{key}: {theirs}`, or leave it out: it follows topology.machine_type"),
        )
    };
    match root.get(&["topology", "accelerator"]) {
        Some(stated) if topology.accelerator.as_str() != family.accelerator => {
            return Err(mismatch("accelerator", stated, family.accelerator.to_owned()));
        }
        Some(_) => {}
        None => topology.accelerator = crate::model::Word::new(family.accelerator).expect("the family table holds valid words"),
    }
    match root.get(&["topology", "gpus_per_node"]) {
        Some(stated) if topology.gpus_per_node.get() != family.gpus_per_node => {
            Err(mismatch("gpus_per_node", stated, family.gpus_per_node.to_string()))
        }
        Some(_) => Ok(()),
        None => {
            topology.gpus_per_node = std::num::NonZeroU32::new(family.gpus_per_node).expect("families have GPUs");
            Ok(())
        }
    }
}

fn to_diagnostic(error: &yaml::TypeError) -> Diagnostic {
    let (message, at, path) = (error.message(), error.at(), error.path());
    if let Some(rest) = message.strip_prefix("unknown field ").or_else(|| message.strip_prefix("unknown variant ")) {
        return Diagnostic::error("config-unknown-key", at, message, unknown_key_help(rest));
    }
    if path.is_empty() {
        return Diagnostic::error("config-invalid-value", at, message, format!("fix the value; {SCHEMA_HINT}"));
    }
    if message.contains("u32") {
        return Diagnostic::error(
            "config-invalid-value",
            at,
            format!("`{path}` must be a whole number of at least 1, found {}", error.found()),
            format!("set `{path}` to a positive whole number, e.g. `{path}: 8`"),
        );
    }
    Diagnostic::error("config-invalid-value", at, format!("`{path}`: {message}"), format!("fix the value of `{path}`; {SCHEMA_HINT}"))
}

/// `rest` is serde's "`key`, expected one of `a`, `b`" (or "expected `a`", or "there are no fields").
fn unknown_key_help(rest: &str) -> String {
    let unknown = rest.split('`').nth(1).unwrap_or_default();
    let expected =
        rest.split_once("expected ").map(|(_, list)| list.trim_start_matches("one of ").split(", ").map(|k| k.trim_matches('`')));
    match expected.and_then(|keys| crate::suggest::closest(unknown, keys)) {
        Some(best) => format!("did you mean `{best}`? {SCHEMA_HINT}"),
        None => format!("remove the key; {SCHEMA_HINT}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Provisioning;

    #[test]
    fn empty_config_is_the_default() {
        assert_eq!(from_yaml("# nothing here\n\n").unwrap(), Deployment::default());
    }

    #[test]
    fn partial_config_overrides_only_what_it_names() {
        let d = from_yaml("topology:\n  node_count: 2\n  provisioning:\n    reservation: my-res\n").unwrap();
        assert_eq!(d.topology.node_count.get(), 2);
        assert_eq!(d.topology.provisioning, Provisioning::Reservation(crate::model::Word::new("my-res").unwrap()));
        assert_eq!(d.lustre, Deployment::default().lustre);
    }

    #[test]
    fn unknown_key_names_key_position_and_closest_match() {
        let e = from_yaml("lustre:\n  capacity_gb: 9000\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-unknown-key", 2, 3));
        assert!(e.message.contains("capacity_gb"), "{}", e.message);
        assert!(e.help.starts_with("did you mean `capacity_gib`?"), "{}", e.help);
    }

    #[test]
    fn wrong_type_and_negative_count_point_at_the_value() {
        let e = from_yaml("topology:\n  node_count: eight\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-invalid-value", 2, 15));
        assert_eq!(e.message, "`topology.node_count` must be a whole number of at least 1, found `eight`");
        let e = from_yaml("topology:\n  node_count: -8\n").unwrap_err();
        assert_eq!((e.code, e.line), ("config-invalid-value", 2));
        let e = from_yaml("topology:\n  node_count: 0\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-invalid-value", 2, 15));
        let e = from_yaml("topology:\n  provisioning: {reservation: [a]}\n").unwrap_err();
        assert!(e.message.starts_with("`topology.provisioning.reservation`: "), "{}", e.message);
    }

    #[test]
    fn invalid_names_say_what_is_expected() {
        let e = from_yaml("project:\n  cluster_name: Ray_Cluster\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 17));
        assert!(e.message.starts_with("`project.cluster_name`: `Ray_Cluster` is not a valid Kubernetes/GCP name"), "{}", e.message);
    }

    #[test]
    fn the_accelerator_and_gpu_count_follow_the_machine_family() {
        let a4x = from_yaml("topology:\n  machine_type: a4x-highgpu-4g\n").unwrap();
        assert_eq!((a4x.topology.accelerator.as_str(), a4x.topology.gpus_per_node.get()), ("nvidia-gb200", 4));
        let ultra = from_yaml("topology:\n  machine_type: a3-ultragpu-8g\n").unwrap();
        assert_eq!(ultra.topology.accelerator.as_str(), "nvidia-h200-141gb");
        let e = from_yaml("topology:\n  machine_type: a3-ultragpu-8g\n  accelerator: nvidia-b200\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-family-mismatch", 3, 16));
        assert!(e.message.contains("a3-ultragpu-8g nodes (A3 Ultra) have nvidia-h200-141gb"), "{}", e.message);
        let e = from_yaml("topology:\n  machine_type: a4x-highgpu-4g\n  gpus_per_node: 8\n").unwrap_err();
        assert_eq!((e.code, e.line), ("config-family-mismatch", 3));
        let unknown = from_yaml("topology:\n  machine_type: g2-standard-96\n  accelerator: nvidia-l4\n").unwrap();
        assert_eq!(unknown.topology.accelerator.as_str(), "nvidia-l4", "an unknown machine keeps what the config says");
    }

    #[test]
    fn token_auth_follows_the_images_ray_and_is_refused_on_an_older_one() {
        assert!(!Deployment::default().ray.token_auth().unwrap(), "v0.4.0 ships Ray 2.46");
        assert!(from_yaml("ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\n").unwrap().ray.token_auth().unwrap());
        let off = from_yaml("ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\n  auth: disabled\n").unwrap();
        assert!(!off.ray.token_auth().unwrap());
        let e = from_yaml("ray:\n  namespace: ml\n  auth: token\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-auth-unsupported", 3, 9));
        assert!(e.message.contains("needs Ray 2.52.0 or newer; the image's Ray is 2.46.0"), "{}", e.message);
    }

    #[test]
    fn rayjob_mode_needs_tokens_and_no_suspending() {
        const V6: &str = "ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.6.0\n";
        let e = from_yaml("job:\n  mode: rayjob\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-rayjob-needs-token", 2, 9), "the default image's Ray 2.46 has no tokens");
        let e = from_yaml(&format!("{V6}  auth: disabled\njob:\n  mode: rayjob\n")).unwrap_err();
        assert_eq!((e.code, e.line), ("config-rayjob-needs-token", 3));
        assert!(from_yaml(&format!("{V6}job:\n  mode: rayjob\n")).unwrap().gpu_pool_scales_to_zero());
        let e = from_yaml(&format!("{V6}job:\n  mode: rayjob\n  idle_timeout_minutes: 30\n")).unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-rayjob-suspends", 5, 25));
        let e = from_yaml(&format!("{V6}job:\n  when_done: suspend\n  mode: rayjob\n")).unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-rayjob-suspends", 4, 14));
        assert!(from_yaml(&format!("{V6}job:\n  when_done: keep\n  mode: rayjob\n")).is_ok());
        let e = from_yaml(&format!("{V6}job:\n  when_done: keep\n  mode: rayjob\n  idle_timeout_minutes: 5\n")).unwrap_err();
        assert_eq!((e.code, e.line), ("config-rayjob-suspends", 6));
        // The RayJob's seconds are the CRD's int32.
        for key in ["rayjob_ttl_seconds_after_finished", "rayjob_active_deadline_seconds", "rayjob_pre_running_deadline_seconds"] {
            let e = from_yaml(&format!("{V6}job:\n  mode: rayjob\n  {key}: 2147483648\n")).unwrap_err();
            assert_eq!((e.code, e.line, e.column), ("config-rayjob-seconds-too-large", 5, 4 + key.len() as u32 + 1), "{key}");
            assert!(e.message.contains("2147483647") && e.help.starts_with(&format!("set job.{key} to 2147483647 or less")), "{e:?}");
            assert!(from_yaml(&format!("{V6}job:\n  mode: rayjob\n  {key}: 2147483647\n")).is_ok(), "{key}");
        }
        // Kueue resumes a queued RayCluster that anything else suspends; a RayJob it is fine.
        let e = from_yaml("job:\n  queue: a4\n  idle_timeout_minutes: 30\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-queue-suspends", 3, 25));
        assert!(e.help.contains("job.mode rayjob"), "{e:?}");
        assert!(from_yaml("job:\n  queue: a4\n  when_done: suspend\n").is_ok(), "gke-rl suspends through the Workload");
        assert!(from_yaml("job:\n  queue: a4\n").is_ok());
        assert!(from_yaml(&format!("{V6}job:\n  mode: rayjob\n  queue: a4\n")).is_ok());
        let e = from_yaml("job:\n  queue: a5\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-queue-unknown", 2, 10));
        assert!(e.message.contains("(it creates `a4`)") && e.help == "set job.queue to `a4`", "{e:?}");
        let e = from_yaml("ray:\n  namespace: ml\njob:\n  queue: a4\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-queue-namespace", 2, 14));
        assert!(e.message.contains("`a4` is in namespace `default`"), "{e:?}");
        let e = from_yaml("job:\n  queue: A4\n").unwrap_err();
        assert_eq!((e.code, e.line), ("config-invalid-value", 2), "{e:?}");
    }

    #[test]
    fn unknown_image_without_ray_version_points_at_the_image() {
        let e = from_yaml("ray:\n  namespace: ml\n  image: example.com/trainer:7\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("config-unknown-image", 3, 10));
        assert!(from_yaml("ray:\n  image: example.com/trainer:7\n  ray_version: 2.46.0\n").is_ok());
    }
}
