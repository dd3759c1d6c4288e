//! env.sh, the gcluster deployment file and the blueprint: placeholders, location, counts,
//! names, and the blueprint edits the codelab needs.

use super::*;
use gke_rl::blueprint::{module_by_source as module, modules};
use gke_rl::knowledge;
use gke_rl::yaml::{Node, Value};

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    placeholders(views, sink);
    counts_and_project(views, facts, sink);
    match (&facts.zone, &facts.region) {
        (Some(_), Some(_)) => sink.ran(&ZONE_NOT_IN_REGION),
        (zone, _) => sink.skip(
            &ZONE_NOT_IN_REGION,
            if zone.is_none() { "no zone" } else { "no region" },
            "set ZONE and REGION in env.sh, or zone and region in gke-a4-deployment.yaml",
        ),
    }
    if let (Some(zone), Some(region)) = (&facts.zone, &facts.region)
        && !zone.value.starts_with(&format!("{}-", region.value))
    {
        sink.emit(
            &ZONE_NOT_IN_REGION,
            &zone.file,
            zone.at,
            format!("zone `{}` is not in region `{}` ({})", zone.value, region.value, region.cite()),
            format!("use a zone of {} such as `{}-b`, or change the region", region.value, region.value),
        );
    }
    match &facts.cluster_name {
        None => sink.skip(
            &DEPLOYMENT_NAME_TOO_LONG,
            "no deployment name",
            "set CLUSTER_NAME in env.sh, or deployment_name in gke-a4-deployment.yaml",
        ),
        Some(name) => {
            sink.ran(&DEPLOYMENT_NAME_TOO_LONG);
            if name.value.chars().count() > 20 {
                sink.emit(
                    &DEPLOYMENT_NAME_TOO_LONG,
                    &name.file,
                    name.at,
                    format!("deployment name `{}` has {} characters; Cluster Toolkit allows 20", name.value, name.value.chars().count()),
                    "shorten it to at most 20 characters",
                );
            }
        }
    }
    match &facts.authorized_cidr {
        None => sink.skip(
            &AUTHORIZED_CIDR_WIDE,
            "no authorized CIDR",
            "set network.authorized_cidr in the config; a rendered env.sh reads AUTHORIZED_CIDR from the environment",
        ),
        Some(cidr) => {
            sink.ran(&AUTHORIZED_CIDR_WIDE);
            if gke_rl::model::Cidr::new(cidr.value.as_str()).is_ok_and(|c| c.is_wide()) {
                sink.emit(
                    &AUTHORIZED_CIDR_WIDE,
                    &cidr.file,
                    cidr.at,
                    format!("authorized CIDR `{}`: {}", cidr.value, gke_rl::model::Cidr::WIDE_RISK),
                    "authorize only your own address (`<your IP>/32`) or your network's range",
                );
            }
        }
    }
    for blueprint in &views.blueprints {
        self::blueprint(blueprint, views, sink);
    }
}

/// Node and GPU counts, GPUs per node and the project id, in env.sh and the deployment file.
fn counts_and_project(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    let (mut counted, mut projected, mut gpus_stated) = (false, false, false);
    for env in &views.env_sh {
        for name in ["NUM_NODES", "GPUS_PER_NODE"] {
            let Some((assignment, Some(value))) = env.get(name) else { continue };
            counted = true;
            if !value.parse::<u64>().is_ok_and(|n| n > 0) {
                sink.emit(
                    &COUNT_NOT_POSITIVE,
                    env.file,
                    assignment.value_at,
                    format!("{name} is `{value}`, not a positive whole number"),
                    format!("set {name} to a whole number of at least 1"),
                );
            }
        }
        gpus_stated |= env.get("GPUS_PER_NODE").is_some_and(|(_, value)| value.is_some());
        if let (Some((assignment, Some(value))), Some(family)) =
            (env.get("GPUS_PER_NODE"), knowledge::gpu_family(facts.machine_type_name()))
            && value.parse::<u32>().is_ok_and(|n| n > 0 && n != family.gpus_per_node)
        {
            sink.emit(
                &GPUS_PER_NODE,
                env.file,
                assignment.value_at,
                format!("GPUS_PER_NODE is {value}, but {} has {} GPUs per node", family.machine, family.gpus_per_node),
                format!("set GPUS_PER_NODE={}", family.gpus_per_node),
            );
        }
        projected |= env.get("PROJECT_ID").is_some_and(|(_, value)| value.is_some());
        if let Some((assignment, Some(value))) = env.get("PROJECT_ID")
            && value.is_empty()
        {
            sink.emit(
                &PROJECT_ID_EMPTY,
                env.file,
                assignment.value_at,
                "PROJECT_ID is empty",
                "set it to your project id (`gcloud config get-value project`)",
            );
        }
    }
    for file in &views.deployment_files {
        projected |= file.root.get(&["vars", "project_id"]).is_some();
        counted |= file.root.get(&["vars", "static_node_count"]).is_some();
        if let Some(project) = file.root.get(&["vars", "project_id"])
            && project.text().is_none_or(str::is_empty)
        {
            sink.emit(
                &PROJECT_ID_EMPTY,
                file.file,
                project.at(),
                "`project_id` is empty",
                "set it, or remove the line and pass `--vars project_id=$PROJECT_ID`",
            );
        }
        if let Some(count) = file.root.get(&["vars", "static_node_count"])
            && count.as_u64().is_none_or(|n| n == 0)
        {
            sink.emit(
                &COUNT_NOT_POSITIVE,
                file.file,
                count.at(),
                "`static_node_count` is not a positive whole number",
                "set it to the number of GPU nodes",
            );
        }
    }
    let either = "env.sh or gke-a4-deployment.yaml";
    if counted {
        sink.ran(&COUNT_NOT_POSITIVE);
    } else {
        sink.skip(&COUNT_NOT_POSITIVE, "no node or GPU count", format!("set NUM_NODES and GPUS_PER_NODE in {either}"));
    }
    match (gpus_stated, knowledge::gpu_family(facts.machine_type_name())) {
        (true, Some(_)) => sink.ran(&GPUS_PER_NODE),
        (false, _) => sink.skip(&GPUS_PER_NODE, "no GPUS_PER_NODE", "set GPUS_PER_NODE in env.sh"),
        (true, None) => {
            sink.skip(&GPUS_PER_NODE, "the machine type is unknown", "use a machine type of a GPU family gke-rl knows (`gke-rl models`)")
        }
    }
    if projected {
        sink.ran(&PROJECT_ID_EMPTY);
    } else {
        sink.skip(
            &PROJECT_ID_EMPTY,
            "no project id",
            "set project.project_id in the config; a rendered env.sh reads PROJECT_ID from the environment",
        );
    }
}

/// String values with `{{…}}` or `<YOUR-…>` debris, in every file.
fn placeholders(views: &Views<'_>, sink: &mut Sink) {
    sink.ran(&PLACEHOLDER);
    let help = "replace the placeholder with the real value";
    for env in &views.env_sh {
        for (assignment, value) in &env.assignments {
            let literal: String = assignment
                .value
                .iter()
                .filter_map(|p| if let gke_rl::envsh::Part::Text(t) = p { Some(t.as_str()) } else { None })
                .collect();
            if has_placeholder(value.as_deref().unwrap_or(&literal)) {
                sink.emit(&PLACEHOLDER, env.file, assignment.value_at, format!("{} still holds a placeholder", assignment.name), help);
            }
        }
    }
    let trees = views.ray_clusters.iter().chain(&views.runtime_envs).chain(&views.deployment_files).chain(&views.blueprints);
    for tree in trees {
        tree.root.walk("", &mut |path, node| {
            if let Value::String(text) = &node.value
                && has_placeholder(text)
            {
                sink.emit(&PLACEHOLDER, tree.file, node.at(), format!("`{path}` still holds a placeholder: `{text}`"), help);
            }
        });
    }
    for job in &views.jobs {
        for (index, line) in job.text.lines().enumerate() {
            if !line.trim_start().starts_with('#') && line.contains("{{") {
                let column = line.find("{{").map_or(1, |i| line[..i].chars().count() + 1);
                let at = (u32::try_from(index + 1).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(1));
                sink.emit(&PLACEHOLDER, job.file, at, "the job script still holds a placeholder", help);
            }
        }
    }
}

fn is_true(node: Option<&Node>) -> bool {
    node.and_then(Node::text).is_some_and(|t| t.eq_ignore_ascii_case("true"))
}

/// gke-node-pool's preconditions for `enable_flex_start: true` (its main.tf), each with the
/// setting that breaks it.
fn flex_start(tree: &crate::Tree<'_>, pool: &Node, sink: &mut Sink) {
    let Some(flex) = pool.get(&["settings", "enable_flex_start"]).filter(|f| is_true(Some(*f))) else { return };
    let setting = |key: &str| pool.get(&["settings", key]);
    let affinity = setting("reservation_affinity").map(|a| a.get(&["consume_reservation_type"]).unwrap_or(a));
    let broken = [
        (
            setting("spot").filter(|s| is_true(Some(*s))),
            "Both enable_flex_start and spot consumption option cannot be set to true at the same time",
            "remove `spot: true`",
        ),
        (
            affinity.filter(|a| a.text() != Some("NO_RESERVATION")),
            "enable_flex_start requires reservation_affinity.consume_reservation_type to be 'NO_RESERVATION'",
            "remove `reservation_affinity`",
        ),
        (
            setting("static_node_count"),
            "enable_flex_start does not work with static_node_count",
            "replace static_node_count with autoscaling_total_min_nodes: 0 and autoscaling_total_max_nodes",
        ),
    ];
    for (at, precondition, fix) in broken.into_iter().filter_map(|(node, p, f)| Some((node?.at(), p, f))) {
        sink.emit(&BLUEPRINT_FLEX_START, tree.file, at, format!("flex-start node pool: {precondition}"), fix);
    }
    if setting("auto_repair").and_then(Node::text) != Some("false") {
        let at = setting("auto_repair").map_or(flex.at(), Node::at);
        sink.emit(
            &BLUEPRINT_FLEX_START,
            tree.file,
            at,
            "flex-start node pool: enable_flex_start needs node auto_repair set to false",
            "set `auto_repair: false`",
        );
    }
}

fn blueprint(tree: &crate::Tree<'_>, views: &Views<'_>, sink: &mut Sink) {
    let root = &tree.root;
    let deployment_var = |name: &str| views.deployment_files.iter().find_map(|d| d.root.get(&["vars", name]));
    let var = |name: &str| root.get(&["vars", name]).or_else(|| deployment_var(name));

    sink.ran(&BLUEPRINT_VAR_AND_SETTING);
    for rule in [&BLUEPRINT_SPOT_RESERVATION, &BLUEPRINT_FLEX_START] {
        match module(root, "modules/compute/gke-node-pool") {
            Some(_) => sink.ran(rule),
            None => sink.skip(rule, "the blueprint has no gke-node-pool module", "give the gke-a4 blueprint"),
        }
    }
    for pool in
        gke_rl::blueprint::modules(root).filter(|m| m.get(&["source"]).and_then(Node::text) == Some("modules/compute/gke-node-pool"))
    {
        flex_start(tree, pool, sink);
    }
    match module(root, "modules/scheduler/gke-cluster") {
        Some(_) => sink.ran(&BLUEPRINT_RAY_OPERATOR),
        None => sink.skip(&BLUEPRINT_RAY_OPERATOR, "the blueprint has no gke-cluster module", "give the gke-a4 blueprint"),
    }
    if views.ray_clusters.is_empty() {
        sink.skip(&BLUEPRINT_LUSTRE_COMMENTED, "no RayCluster to tell whether Lustre is mounted", "add ray-cluster.yaml");
    } else {
        sink.ran(&BLUEPRINT_LUSTRE_COMMENTED);
    }
    if let Some(pool) = module(root, "modules/compute/gke-node-pool") {
        let spot = is_true(pool.get(&["settings", "spot"])) || is_true(var("spot"));
        let affinity = pool.get(&["settings", "reservation_affinity", "consume_reservation_type"]);
        if let Some(affinity) = affinity.filter(|a| spot && a.text() == Some("SPECIFIC_RESERVATION")) {
            sink.emit(
                &BLUEPRINT_SPOT_RESERVATION,
                tree.file,
                affinity.at(),
                "the node pool is Spot but consumes a SPECIFIC_RESERVATION; its precondition fails at terraform plan",
                "replace `reservation_affinity` with `spot: true` and drop the `reservation` var (`gke-rl blueprint` does it)",
            );
        }
    }

    if let Some(cluster) = module(root, "modules/scheduler/gke-cluster")
        && !is_true(cluster.get(&["settings", "enable_ray_operator"]))
        && !is_true(var("enable_ray_operator"))
    {
        let at = cluster.get(&["source"]).map_or(cluster.at(), Node::at);
        sink.emit(
            &BLUEPRINT_RAY_OPERATOR,
            tree.file,
            at,
            "the GKE cluster module does not enable the Ray operator",
            "add `enable_ray_operator: true` under this module's settings",
        );
    }

    let mounts_lustre = views.ray_clusters.iter().any(|c| c.text.contains("persistentVolumeClaim"));
    if mounts_lustre && module(root, "modules/file-system/managed-lustre").is_none() {
        let commented = tree.text.lines().position(|l| {
            let t = l.trim_start();
            t.starts_with('#') && t.trim_start_matches('#').trim_start() == "- id: managed-lustre"
        });
        if let Some(index) = commented {
            let column = tree.text.lines().nth(index).map_or(1, |l| l.len() - l.trim_start().len() + 1);
            sink.emit(
                &BLUEPRINT_LUSTRE_COMMENTED,
                tree.file,
                (u32::try_from(index + 1).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(1)),
                "the Managed Lustre modules are commented out, but the RayCluster mounts a Lustre PVC",
                "uncomment the Lustre vars and the private_service_access, lustre_firewall_rule, managed-lustre and lustre-pv modules",
            );
        }
    }

    let modules = modules(root);
    let vars = root
        .get(&["vars"])
        .map(Node::entries)
        .unwrap_or_default()
        .iter()
        .chain(views.deployment_files.iter().flat_map(|d| d.root.get(&["vars"]).map(Node::entries).unwrap_or_default()));
    let referenced = |name: &str| tree.text.contains(&format!("$(vars.{name})"));
    for (name, var_node) in vars {
        if referenced(name) {
            continue;
        }
        for module in modules.clone() {
            let Some(setting) = module.get(&["settings", name]) else { continue };
            let id = module.get(&["id"]).and_then(Node::text).unwrap_or("a module");
            sink.emit(
                &BLUEPRINT_VAR_AND_SETTING,
                tree.file,
                setting.at(),
                format!("`{name}` is set on module `{id}` and also given as a var (line {}), which is then unused", var_node.line),
                format!("keep only one: remove the `{name}` var, or this setting"),
            );
        }
    }
}
