//! Patching Cluster Toolkit's `gke-a4` blueprint into a deployable Lustre + Ray + Spot
//! blueprint by editing its text, so every comment and every line that needs no change stays
//! and the diff is the review surface (`cluster-toolkit.md` §1.5–1.6).
//!
//! Things are found by meaning — modules by `source:` and `# - id:`, vars by key — never by
//! line number. An input of an unexpected shape stops the patch with what was expected and
//! where; patching a patched blueprint changes nothing.

use std::collections::BTreeSet;

use crate::diagnostic::Diagnostic;
use crate::knowledge::STAGED_TEMPLATES;
use crate::knowledge::{self, HEAD_POOL_LABEL, HEAD_POOL_NAME};
use crate::model::{Deployment, HeadNodePool, Provisioning};
use crate::yaml::Node;

/// Cluster Toolkit's GKE cluster module, the `source` of a blueprint's cluster.
pub const CLUSTER_SOURCE: &str = "modules/scheduler/gke-cluster";
/// Cluster Toolkit's GKE node pool module, the `source` of each of a blueprint's pools.
pub const NODE_POOL_SOURCE: &str = "modules/compute/gke-node-pool";
/// The commented modules Managed Lustre needs, in file order; all four together.
const LUSTRE_MODULES: [&str; 4] = ["private_service_access", "lustre_firewall_rule", "managed-lustre", "lustre-pv"];
/// The commented Lustre vars.
const LUSTRE_VARS: [&str; 3] = ["lustre_instance_id", "lustre_size_gib", "per_unit_storage_throughput"];

fn shape_error(line: usize, message: impl Into<String>, help: impl Into<String>) -> Diagnostic {
    Diagnostic::error("blueprint-shape", (u32::try_from(line + 1).unwrap_or(u32::MAX), 1), message, help)
}

/// The help of a blueprint of the wrong shape: where the one gke-rl patches is.
fn upstream_help() -> String {
    format!("start from Cluster Toolkit's {}, or make the edit by hand", crate::knowledge::toolkit_blueprint())
}

/// The patch edits Cluster Toolkit's gke-a4 blueprint for an A4 deployment: another family's
/// blueprint, or another family's deployment, is named with what gke-rl supports.
fn supported(lines: &[String], deployment: &Deployment) -> Result<(), Diagnostic> {
    let unsupported = |line: usize, message: String, help: String| {
        Diagnostic::error("blueprint-unsupported", (u32::try_from(line + 1).unwrap_or(u32::MAX), 1), message, help)
    };
    let machine = deployment.topology.machine_type.as_str();
    if let Some(family) = knowledge::gpu_family(machine)
        && family.blueprint.map(|(name, _)| name) != Some(knowledge::PATCHED_BLUEPRINT)
    {
        let theirs =
            family.blueprint.map_or("no Cluster Toolkit GKE example blueprint".to_owned(), |(_, path)| format!("Cluster Toolkit's {path}"));
        return Err(unsupported(
            0,
            format!("gke-rl patches only the gke-a4 blueprint (A4); {machine} ({}) has {theirs}", family.name),
            format!(
                "render and validate support {}; edit its blueprint by hand, or deploy A4 (topology.machine_type: a4-highgpu-8g)",
                family.name
            ),
        ));
    }
    let named = lines.iter().enumerate().find_map(|(i, l)| Some((i, l.strip_prefix("blueprint_name:")?.trim())));
    if let Some((index, name)) = named
        && name != knowledge::PATCHED_BLUEPRINT
    {
        let family = knowledge::GPU_FAMILIES.iter().find(|f| f.blueprint.is_some_and(|(b, _)| b == name));
        let what = family.map_or(String::new(), |f| format!(", for {} ({})", f.name, f.machine));
        return Err(unsupported(index, format!("this is the `{name}` blueprint{what}; gke-rl patches only gke-a4"), upstream_help()));
    }
    Ok(())
}

/// Returns the patched blueprint for `deployment`, or where the input differs from the shape
/// the patch expects.
pub fn patch(text: &str, deployment: &Deployment) -> Result<String, Diagnostic> {
    let crlf = text.contains("\r\n");
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end_matches('\r').to_owned()).collect();
    if let Some(index) = lines.iter().position(|l| l.trim_start_matches(' ').starts_with('\t')) {
        return Err(shape_error(index, "the blueprint is indented with tabs", "indent with spaces (YAML does not allow tabs)"));
    }
    // YAML reads a lone carriage return as a line break; the edits count lines by `\n`.
    if let Some(index) = lines.iter().position(|l| l.contains('\r')) {
        return Err(shape_error(index, "the blueprint has a carriage return inside a line", "remove it (line endings may be LF or CRLF)"));
    }
    supported(&lines, deployment)?;
    for id in LUSTRE_MODULES {
        uncomment_module(&mut lines, id)?;
    }
    for key in LUSTRE_VARS {
        uncomment_var(&mut lines, key)?;
    }
    let lustre = &deployment.lustre;
    set_var(&mut lines, "lustre_instance_id", lustre.instance_id.as_str())?;
    set_var(&mut lines, "lustre_size_gib", &lustre.capacity_gib.to_string())?;
    set_var(&mut lines, "per_unit_storage_throughput", &lustre.throughput_mbps_per_tib.to_string())?;

    // Settings edits need positions: parse once, then edit bottom-up so earlier lines keep theirs.
    let root = parse(&lines)?;
    let mut edits = vec![
        set_setting(module_by_id(&root, "lustre-pv"), "lustre-pv", "pvc_name", lustre.pvc_name.as_str())?,
        set_setting(module_by_source(&root, CLUSTER_SOURCE), CLUSTER_SOURCE, "enable_ray_operator", "true")?,
    ];
    // The PVC is claimed from the pods' namespace: the module creates it (and the namespace) there.
    let namespace = deployment.ray.namespace.as_str();
    if namespace != "default" {
        edits.push(set_setting(module_by_id(&root, "lustre-pv"), "lustre-pv", "namespace", namespace)?);
    }
    let pool = module_by_source(&root, NODE_POOL_SOURCE).ok_or_else(|| missing_source(NODE_POOL_SOURCE))?;
    match deployment.topology.provisioning {
        Provisioning::Spot => {
            edits.push(spot(&lines, pool)?);
            edits.push(drop_var_with_comments(&root, &lines, "reservation"));
        }
        Provisioning::OnDemand | Provisioning::FlexStart => {
            edits.push(drop_block(&lines, pool, "reservation_affinity"));
            edits.push(drop_var_with_comments(&root, &lines, "reservation"));
        }
        Provisioning::Reservation(_) if pool.get(&["settings", "reservation_affinity"]).is_none() => {
            return Err(shape_error(
                pool.line as usize - 1,
                "the node pool has no `reservation_affinity`, but the config names a reservation",
                "restore the node pool's reservation_affinity block from upstream",
            ));
        }
        Provisioning::Reservation(_) => {}
    }
    if deployment.topology.provisioning == Provisioning::FlexStart {
        // The module's preconditions: flex-start takes NO_RESERVATION (the default once the
        // affinity is gone), `auto_repair: false`, and autoscaling instead of static_node_count.
        edits.push(set_setting(Some(pool), NODE_POOL_SOURCE, "enable_flex_start", "true")?);
        edits.push(set_setting(Some(pool), NODE_POOL_SOURCE, "auto_repair", "false")?);
    }
    // A flex-start pool, or a cluster suspended when idle, gives its nodes back only from an
    // autoscaling pool.
    if deployment.gpu_pool_scales_to_zero() {
        edits.push(autoscale_from_zero(&lines, pool)?);
        let topology = &deployment.topology;
        edits.push(kueue_quota(&root, &lines, topology.node_count.get() * topology.gpus_per_node.get()));
    }
    if deployment.ray.head.node_pool == HeadNodePool::Dedicated {
        edits.push(head_pool(&root, &lines, pool, deployment.ray.head.machine_type.as_str())?);
    }
    let mut edits: Vec<Edit> = edits.into_iter().flatten().collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.start));
    for edit in edits {
        lines.splice(edit.start..edit.end, edit.replacement);
    }

    let patched = parse(&lines)?;
    check_references(&patched, &lines)?;
    let newline = if crlf { "\r\n" } else { "\n" };
    let mut out = lines.join(newline);
    if text.ends_with('\n') {
        out.push_str(newline);
    }
    Ok(out)
}

/// A unified diff from `original` to `patched`, with `name` on both sides (`patch -p0`).
pub fn unified_diff(original: &str, patched: &str, name: &str) -> String {
    similar::TextDiff::from_lines(original, patched).unified_diff().context_radius(3).header(name, name).to_string()
}

/// The GKE `Network` objects the blueprint's gke-cluster module creates from its
/// `additional_networks`, as Cluster Toolkit names them: gVNIC networks (`modules/network/vpc`
/// and `multivpc`) `gvnic-1`…, RDMA networks (`modules/network/gpu-rdma-vpc`, one per subnet)
/// `rdma-0`…, with `k8s_network_names` applied. The pod annotation
/// `networking.gke.io/interfaces` must name these (or `default`, the pod network).
pub fn gke_networks(blueprint: &Node) -> GkeNetworks {
    let none = GkeNetworks::default();
    let Some(cluster) = module_by_source(blueprint, CLUSTER_SOURCE) else { return none };
    let Some(additional) = cluster.get(&["settings", "additional_networks"]).and_then(Node::text) else { return none };
    let names = cluster.get(&["settings", "k8s_network_names"]);
    let setting = |key: &str, default: &str| names.and_then(|n| n.get(&[key])).and_then(Node::text).unwrap_or(default).to_owned();
    let start = |key: &str, default: u64| names.and_then(|n| n.get(&[key])).and_then(Node::as_u64).unwrap_or(default);
    let (mut gvnic, mut rdma) = (0u64, 0u64);
    // `$(concat(net-1.instance_additional_networks, rdma-net.subnetwork_interfaces_gke))`: the
    // modules, in the order the expression names them.
    let mut referenced: Vec<(usize, &Node)> =
        modules(blueprint).filter_map(|m| Some((additional.find(&format!("{}.", m.get(&["id"])?.text()?))?, m))).collect();
    referenced.sort_by_key(|(at, _)| *at);
    for (_, module) in referenced {
        let count = |path: &[&str]| module.get(path).map(|n| n.as_u64().unwrap_or(n.items().len() as u64));
        match module.get(&["source"]).and_then(Node::text) {
            Some("modules/network/gpu-rdma-vpc") => rdma += count(&["settings", "subnetworks_template", "count"]).unwrap_or(0),
            Some("modules/network/multivpc") => gvnic += count(&["settings", "network_count"]).unwrap_or(0),
            Some("modules/network/vpc") => gvnic += count(&["settings", "subnetworks"]).unwrap_or(1),
            _ => {}
        }
    }
    let named =
        |prefix: String, first: u64, postfix: String, count: u64| (0..count).map(|i| format!("{prefix}{}{postfix}", first + i)).collect();
    GkeNetworks {
        gvnic: named(setting("gvnic_prefix", "gvnic-"), start("gvnic_start_index", 1), setting("gvnic_postfix", ""), gvnic),
        rdma: named(
            setting("rdma_prefix", crate::knowledge::RDMA_NETWORK_PREFIX),
            start("rdma_start_index", 0),
            setting("rdma_postfix", ""),
            rdma,
        ),
    }
}

/// The GKE networks of a blueprint's cluster, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GkeNetworks {
    /// gVNIC networks (`NetDevice`), in order.
    pub gvnic: Vec<String>,
    /// RDMA networks, in order.
    pub rdma: Vec<String>,
}

impl GkeNetworks {
    /// Whether a pod may attach `network`: one of these, or the pod network `default`.
    pub fn has(&self, network: &str) -> bool {
        network == "default" || self.gvnic.iter().chain(&self.rdma).any(|n| n == network)
    }
}

/// Replace lines `start..end` with `replacement`.
struct Edit {
    start: usize,
    end: usize,
    replacement: Vec<String>,
}

fn parse(lines: &[String]) -> Result<Node, Diagnostic> {
    Node::try_parse(&lines.join("\n"))
        .map_err(|e| shape_error(e.at().0 as usize - 1, format!("the blueprint is not valid YAML here: {}", e.message()), upstream_help()))
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_live_module(line: &str, id: &str) -> bool {
    line.trim_start().strip_prefix("- id:").is_some_and(|rest| rest.trim() == id)
}

/// `# - id: <id>` and the commented lines that follow it lose their `# `.
fn uncomment_module(lines: &mut [String], id: &str) -> Result<(), Diagnostic> {
    if lines.iter().any(|l| is_live_module(l, id)) {
        return Ok(());
    }
    let commented = |l: &String| l.trim_start().strip_prefix("# - id:").is_some_and(|rest| rest.trim() == id);
    let Some(start) = lines.iter().position(commented) else {
        return Err(shape_error(
            0,
            format!("the blueprint has no module `{id}`, live or commented out (`# - id: {id}`)"),
            format!("Managed Lustre needs the modules {}; {}", LUSTRE_MODULES.join(", "), upstream_help()),
        ));
    };
    let indent = indent_of(&lines[start]);
    let prefix = format!("{}# ", " ".repeat(indent));
    for line in lines[start..].iter_mut() {
        if let Some(rest) = line.strip_prefix(&prefix) {
            *line = format!("{}{rest}", " ".repeat(indent));
        } else {
            break;
        }
    }
    Ok(())
}

/// `  # key: value` in the vars block becomes `  key: value`.
fn uncomment_var(lines: &mut [String], key: &str) -> Result<(), Diagnostic> {
    let live = |l: &String| l.strip_prefix("  ").and_then(|r| r.strip_prefix(key)).is_some_and(|r| r.starts_with(':'));
    if lines.iter().any(live) {
        return Ok(());
    }
    let commented = format!("  # {key}:");
    let Some(index) = lines.iter().position(|l| l.starts_with(&commented)) else {
        return Err(shape_error(
            0,
            format!("the blueprint has no var `{key}`, live or commented out (`  # {key}: …`)"),
            format!("add `{key}:` under vars; {}", upstream_help()),
        ));
    };
    lines[index] = format!("  {}", &lines[index][4..]);
    Ok(())
}

fn set_var(lines: &mut [String], key: &str, value: &str) -> Result<(), Diagnostic> {
    let vars_start = lines
        .iter()
        .position(|l| l.trim_end() == "vars:")
        .ok_or_else(|| shape_error(0, "the blueprint has no top-level `vars:`", upstream_help()))?;
    let vars_end =
        lines[vars_start + 1..].iter().position(|l| !l.is_empty() && !l.starts_with(' ')).map_or(lines.len(), |i| vars_start + 1 + i);
    let prefix = format!("  {key}:");
    let line = lines[vars_start..vars_end]
        .iter_mut()
        .find(|l| l.starts_with(&prefix))
        .ok_or_else(|| shape_error(vars_start, format!("`{key}` is not under vars"), upstream_help()))?;
    *line = format!("  {key}: {value}");
    Ok(())
}

/// Every module of a blueprint, in file order.
pub fn modules(blueprint: &Node) -> impl Iterator<Item = &Node> + Clone {
    let groups = blueprint.get(&["deployment_groups"]).map(Node::items).unwrap_or_default();
    groups.iter().flat_map(|group| group.get(&["modules"]).map(Node::items).unwrap_or_default())
}

/// The module with this `id`.
pub fn module_by_id<'n>(blueprint: &'n Node, id: &str) -> Option<&'n Node> {
    modules(blueprint).find(|m| m.get(&["id"]).and_then(Node::text) == Some(id))
}

/// The first module whose `source` is `source`.
pub fn module_by_source<'n>(blueprint: &'n Node, source: &str) -> Option<&'n Node> {
    modules(blueprint).find(|m| m.get(&["source"]).and_then(Node::text) == Some(source))
}

fn missing_source(source: &str) -> Diagnostic {
    shape_error(0, format!("the blueprint has no module with `source: {source}`"), upstream_help())
}

/// `key: value` in a module's settings: changed in place, or added as the first setting.
/// `what` names the module (an id, or a source path) for errors.
fn set_setting(module: Option<&Node>, what: &str, key: &str, value: &str) -> Result<Option<Edit>, Diagnostic> {
    let missing = || {
        if what.contains('/') {
            missing_source(what)
        } else {
            shape_error(0, format!("the blueprint has no module `{what}`"), upstream_help())
        }
    };
    let module = module.ok_or_else(missing)?;
    let settings = module
        .get(&["settings"])
        .ok_or_else(|| shape_error(module.line as usize - 1, format!("module `{what}` has no settings"), upstream_help()))?;
    let line_of = |node: &Node| node.key_at.map_or(node.line, |(line, _)| line) as usize - 1;
    let indent_of_key = |node: &Node| node.key_at.map_or(0, |(_, column)| column as usize - 1);
    let (start, end, indent) = match settings.get(&[key]) {
        Some(existing) if existing.text() == Some(value) => return Ok(None),
        Some(existing) => (line_of(existing), line_of(existing) + 1, indent_of_key(existing)),
        None => {
            let (_, first) = settings
                .entries()
                .first()
                .ok_or_else(|| shape_error(settings.line as usize - 1, format!("module `{what}` has empty settings"), upstream_help()))?;
            (line_of(first), line_of(first), indent_of_key(first))
        }
    };
    Ok(Some(Edit { start, end, replacement: vec![format!("{}{key}: {value}", " ".repeat(indent))] }))
}

/// The lines of the setting `key` of a module (its key line and everything indented under it,
/// trailing blank lines excluded) and its indentation; `None` when the module has no such setting.
fn block(lines: &[String], module: &Node, key: &str) -> Option<(usize, usize, usize)> {
    let node = module.get(&["settings", key])?;
    let (key_line, key_column) = node.key_at.map_or((node.line, 1), |at| at);
    let start = key_line as usize - 1;
    let indent = key_column as usize - 1;
    let end = start + 1 + lines[start + 1..].iter().take_while(|l| l.trim().is_empty() || indent_of(l) > indent).count();
    let end = (start + 1..end).rev().find(|&i| !lines[i].trim().is_empty()).map_or(start + 1, |i| i + 1);
    Some((start, end, indent))
}

/// Removes the setting `key` of a module, with what is under it.
fn drop_block(lines: &[String], module: &Node, key: &str) -> Option<Edit> {
    block(lines, module, key).map(|(start, end, _)| Edit { start, end, replacement: Vec::new() })
}

/// `static_node_count: X` becomes `autoscaling_total_min_nodes: 0` and
/// `autoscaling_total_max_nodes: X`: the module allows one or the other.
fn autoscale_from_zero(lines: &[String], pool: &Node) -> Result<Option<Edit>, Diagnostic> {
    let Some((start, end, indent)) = block(lines, pool, "static_node_count") else {
        return if pool.get(&["settings", "autoscaling_total_max_nodes"]).is_some() {
            Ok(None)
        } else {
            Err(shape_error(
                pool.line as usize - 1,
                "the node pool has neither `static_node_count` nor `autoscaling_total_max_nodes`",
                upstream_help(),
            ))
        };
    };
    let count = pool.get(&["settings", "static_node_count"]).and_then(Node::text).unwrap_or("$(vars.static_node_count)");
    let pad = " ".repeat(indent);
    let replacement = vec![format!("{pad}autoscaling_total_min_nodes: 0"), format!("{pad}autoscaling_total_max_nodes: {count}")];
    Ok(Some(Edit { start, end, replacement }))
}

/// Kueue's GPU quota, `num_gpus: $(<pool>.static_gpu_count)`, as a number: an autoscaling
/// pool's `static_gpu_count` is 0 (cluster-toolkit `modules/compute/gke-node-pool/main.tf`), and a
/// ClusterQueue with no quota admits nothing. A blueprint without Kueue is left alone.
fn kueue_quota(root: &Node, lines: &[String], gpus: u32) -> Option<Edit> {
    let quota = modules(root).find_map(|m| m.get(&["settings", "kueue", "config_template_vars", "num_gpus"]))?;
    let reference = quota.text().filter(|text| text.ends_with(".static_gpu_count)"))?;
    let start = quota.line as usize - 1;
    // In place, so that a comment after it stays.
    let replacement = vec![lines.get(start)?.replacen(reference, &gpus.to_string(), 1)];
    Some(Edit { start, end: start + 1, replacement })
}

/// Spot VMs cannot consume a reservation: replace the node pool's `reservation_affinity`
/// with compact placement and `spot: true`, as upstream's own Spot test does.
fn spot(lines: &[String], pool: &Node) -> Result<Option<Edit>, Diagnostic> {
    let settings =
        pool.get(&["settings"]).ok_or_else(|| shape_error(pool.line as usize - 1, "the node pool has no settings", upstream_help()))?;
    let spot_set = settings.get(&["spot"]).and_then(Node::text) == Some("true");
    let Some((start, end, indent)) = block(lines, pool, "reservation_affinity") else {
        return if spot_set {
            Ok(None)
        } else {
            Err(shape_error(
                settings.line as usize - 1,
                "the node pool has neither `reservation_affinity` nor `spot: true`",
                upstream_help(),
            ))
        };
    };
    let pad = " ".repeat(indent);
    let mut replacement = Vec::new();
    if settings.get(&["placement_policy"]).is_none() {
        replacement.push(format!("{pad}placement_policy:"));
        replacement.push(format!("{pad}  type: COMPACT"));
    }
    if !spot_set {
        replacement.push(format!("{pad}spot: true"));
    }
    Ok(Some(Edit { start, end, replacement }))
}

/// The id of the module the patch adds for the Ray head's node pool.
pub const HEAD_POOL_MODULE: &str = "ray-head-pool";

/// The Ray head's own on-demand CPU node pool, added after the GPU node pool and using what it
/// uses; an existing one gets the machine type.
fn head_pool(root: &Node, lines: &[String], gpu_pool: &Node, machine_type: &str) -> Result<Option<Edit>, Diagnostic> {
    if let Some(existing) = module_by_id(root, HEAD_POOL_MODULE) {
        return set_setting(Some(existing), HEAD_POOL_MODULE, "machine_type", machine_type);
    }
    let first = gpu_pool.line as usize - 1;
    let indent = indent_of(&lines[first]);
    // The pool's block ends before the next line at its own indentation (the next module or
    // the comment above it); blank lines at its end stay after the new module.
    let next =
        lines[first + 1..].iter().position(|l| !l.trim().is_empty() && indent_of(l) <= indent).map_or(lines.len(), |i| first + 1 + i);
    let end = (first + 1..next).rev().find(|&i| !lines[i].trim().is_empty()).map_or(first + 1, |i| i + 1);
    let uses: Vec<&str> = gpu_pool.get(&["use"]).map(Node::items).unwrap_or_default().iter().filter_map(Node::text).collect();
    let pad = " ".repeat(indent);
    let (label, value) = HEAD_POOL_LABEL;
    let replacement = [
        String::new(),
        format!("{pad}# The Ray head's own on-demand CPU node (added by gke-rl): a preempted Spot GPU node"),
        format!("{pad}# does not take the Ray cluster with it. The head selects it by its label."),
        format!("{pad}- id: {HEAD_POOL_MODULE}"),
        format!("{pad}  source: {NODE_POOL_SOURCE}"),
        format!("{pad}  use: [{}]", uses.join(", ")),
        format!("{pad}  settings:"),
        format!("{pad}    name: {HEAD_POOL_NAME}"),
        format!("{pad}    machine_type: {machine_type}"),
        format!("{pad}    zones: [$(vars.zone)]"),
        format!("{pad}    static_node_count: 1"),
        format!("{pad}    kubernetes_labels:"),
        format!("{pad}      {label}: {value}"),
    ];
    Ok(Some(Edit { start: end, end, replacement: replacement.into() }))
}

/// Removes a top-level var and the comment lines directly above it.
fn drop_var_with_comments(root: &Node, lines: &[String], key: &str) -> Option<Edit> {
    let var = root.get(&["vars"])?.entries().iter().find(|(k, _)| k == key)?.1.key_at?;
    let line = var.0 as usize - 1;
    let first = (0..line)
        .rev()
        .take_while(|&i| lines[i].trim_start().starts_with('#') && indent_of(&lines[i]) == indent_of(&lines[line]))
        .last()
        .unwrap_or(line);
    // Take the blank line above too when one follows, so no double blank line is left.
    let (start, end) = if first > 0 && lines[first - 1].trim().is_empty() && lines.get(line + 1).is_some_and(|l| l.trim().is_empty()) {
        (first - 1, line + 1)
    } else {
        (first, line + 1)
    };
    Some(Edit { start, end, replacement: Vec::new() })
}

/// Every `$(vars.X)`, `$(module.output)` and `use:` must name something the blueprint has.
fn check_references(root: &Node, lines: &[String]) -> Result<(), Diagnostic> {
    let vars: BTreeSet<&str> = root.get(&["vars"]).map(Node::entries).unwrap_or_default().iter().map(|(k, _)| k.as_str()).collect();
    let ids: BTreeSet<&str> = modules(root).filter_map(|m| m.get(&["id"]).and_then(Node::text)).collect();
    for module in modules(root) {
        for used in module.get(&["use"]).map(Node::items).unwrap_or_default() {
            let name = used.text().unwrap_or_default();
            if !ids.contains(name) {
                return Err(shape_error(
                    used.line as usize - 1,
                    format!("`use: {name}` names no module of the blueprint"),
                    "uncomment that module too, or remove it from `use`",
                ));
            }
        }
    }
    for (index, code) in code_lines(lines) {
        for reference in references(code) {
            if let Some(staged) = stage_argument(reference) {
                if !STAGED_TEMPLATES.iter().any(|t| staged.strip_prefix("./") == Some(t)) {
                    return Err(shape_error(
                        index,
                        format!("`$({reference}))` stages a file gke-rl does not copy beside the patched blueprint"),
                        format!("gke-rl copies {} from the blueprint's folder; stage only those", STAGED_TEMPLATES.join(" and ")),
                    ));
                }
                continue;
            }
            let Some((scope, name)) = reference.split_once('.') else { continue };
            let known = match scope {
                "vars" => vars.contains(name),
                _ if scope.starts_with("ghpc_") => true,
                _ => ids.contains(scope),
            };
            if !known {
                return Err(shape_error(
                    index,
                    format!("`$({reference})` refers to something the blueprint does not define"),
                    "define the var or module it names, or remove the reference",
                ));
            }
        }
    }
    Ok(())
}

/// The patch file's header line for a template copied beside the patched blueprint, with the
/// copy's SHA-1: a later run replaces a copy that still matches its line (the toolkit's template
/// changed since) and keeps one that does not (someone edited it).
pub fn copied_template_line(name: &str, contents: &str) -> String {
    use sha1::{Digest, Sha1};
    let hex: String = Sha1::digest(contents.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("# copied {name} sha1:{hex}")
}

/// Whether `patch`'s header records `contents` as the copy of `name` it made.
pub fn is_recorded_copy(patch: &str, name: &str, contents: &str) -> bool {
    let line = copied_template_line(name, contents);
    patch.lines().take_while(|l| l.starts_with('#')).any(|l| l == line)
}

/// The templates a blueprint stages with `$(ghpc_stage("./NAME"))`. gcluster resolves each
/// beside the blueprint it deploys, so they are copied next to the patched one; [`patch`]
/// refuses a blueprint that stages anything else.
pub fn staged_templates(blueprint: &str) -> Vec<&'static str> {
    let lines: Vec<String> = blueprint.lines().map(str::to_owned).collect();
    let staged: BTreeSet<&str> = code_lines(&lines).flat_map(|(_, code)| references(code)).filter_map(stage_argument).collect();
    STAGED_TEMPLATES.iter().copied().filter(|t| staged.iter().any(|s| s.strip_prefix("./") == Some(t))).collect()
}

/// Each line's code, without comments, with its index.
fn code_lines(lines: &[String]) -> impl Iterator<Item = (usize, &str)> {
    lines
        .iter()
        .enumerate()
        .map(|(index, line)| (index, line.split(" #").next().unwrap_or(line)))
        .filter(|(_, code)| !code.trim_start().starts_with('#'))
}

/// What each `$(…)` of a line holds, up to its first `)`.
fn references(code: &str) -> impl Iterator<Item = &str> {
    code.split("$(").skip(1).filter_map(|r| r.split_once(')').map(|(inside, _)| inside))
}

/// The path of `ghpc_stage("PATH")`, from a reference cut at its first `)`.
fn stage_argument(reference: &str) -> Option<&str> {
    reference.strip_prefix("ghpc_stage(\"")?.strip_suffix('"')
}
