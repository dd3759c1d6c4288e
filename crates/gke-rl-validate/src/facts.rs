//! Facts several files state (node count, zone, Lustre size…), each with where it was
//! stated, so cross-file rules can say which file and line disagree.

use super::{EnvShView, Tree, Views};
use gke_rl::blueprint::{CLUSTER_SOURCE, HEAD_POOL_MODULE, NODE_POOL_SOURCE, module_by_id, module_by_source, modules};
use gke_rl::knowledge::{self, Machine};
use gke_rl::yaml::Node;

/// A value and the place that states it.
#[derive(Clone, Debug)]
pub struct Fact<T> {
    pub value: T,
    pub file: String,
    pub at: (u32, u32),
}

impl<T> Fact<T> {
    /// `file:line`, for messages.
    pub fn cite(&self) -> String {
        format!("{}:{}", self.file, self.at.0)
    }
}

#[derive(Default)]
pub struct Facts {
    pub node_count: Option<Fact<u64>>,
    pub gpus_per_node: Option<Fact<u64>>,
    pub machine_type: Option<Fact<String>>,
    pub region: Option<Fact<String>>,
    pub zone: Option<Fact<String>>,
    pub cluster_name: Option<Fact<String>>,
    pub lustre_capacity_gib: Option<Fact<u64>>,
    pub lustre_throughput: Option<Fact<u64>>,
    /// A blueprint's `managed-lustre` module with `enable_dynamic_tier: true`, where it says so:
    /// Cluster Toolkit's setting for the Dynamic tier (GoogleCloudPlatform/cluster-toolkit PR
    /// #5791). v1.95.0's module, which gke-rl's blueprint patch targets, lacks it, so gke-rl's
    /// own config cannot choose the Dynamic tier yet.
    pub lustre_dynamic_tier: Option<Fact<()>>,
    /// env.sh's `LUSTRE_EXISTING=true`: the instance exists, and its tier is what it has (the
    /// Dynamic tier among them), not one gke-rl creates.
    pub lustre_existing: bool,
    /// Seconds per GRPO step as the user measured them (env.sh's `EXPECTED_STEP_SECONDS`).
    pub expected_step_seconds: Option<Fact<u64>>,
    /// Minutes between preemptions the user expects (env.sh's `MEAN_MINUTES_BETWEEN_PREEMPTIONS`).
    pub mean_minutes_between_preemptions: Option<Fact<u64>>,
    pub pvc_name: Option<Fact<String>>,
    pub authorized_cidr: Option<Fact<String>>,
    pub fabric_mode: Option<Fact<String>>,
    /// The machine type of the head's own node pool.
    pub head_machine_type: Option<Fact<String>>,
    /// The machine type of the cluster's system node pool.
    pub system_machine_type: Option<Fact<String>>,
    /// How the GPU nodes are obtained, in env.sh's words (`spot`, `reservation`, `flex-start`,
    /// `on-demand`): the blueprint's GPU node pool (`spot: true`, `enable_flex_start: true`, a
    /// reservation's affinity, else on-demand), else env.sh's `RESERVATION` (when it names one)
    /// or `PROVISIONING`.
    pub provisioning: Option<Fact<String>>,
    /// The Ray pods' image: the RayCluster head's, else env.sh's `RAY_IMAGE`.
    pub image: Option<Fact<String>>,
    /// The namespace the blueprint's Lustre PV module creates its PVC in (`default` unless set).
    pub pvc_namespace: Option<Fact<String>>,
}

impl Facts {
    /// The machine of the GPU nodes: as stated, else the only one the gke-a4 blueprint uses.
    pub fn machine(&self) -> Option<&'static Machine> {
        knowledge::machine(self.machine_type_name())
    }

    /// The machine type as stated, else the only one the gke-a4 blueprint uses.
    pub fn machine_type_name(&self) -> &str {
        self.machine_type.as_ref().map_or("a4-highgpu-8g", |f| f.value.as_str())
    }
}

fn env_fact(env: &EnvShView<'_>, name: &str) -> Option<Fact<String>> {
    let (assignment, value) = env.get(name)?;
    Some(Fact { value: value.clone()?, file: env.file.to_owned(), at: assignment.value_at })
}

fn tree_fact(tree: &Tree<'_>, path: &[&str]) -> Option<Fact<String>> {
    node_fact(tree, tree.root.get(path)?)
}

fn node_fact(tree: &Tree<'_>, node: &Node) -> Option<Fact<String>> {
    Some(Fact { value: node.text()?.to_owned(), file: tree.file.to_owned(), at: node.at() })
}

fn number(fact: Option<Fact<String>>) -> Option<Fact<u64>> {
    let fact = fact?;
    Some(Fact { value: fact.value.trim().parse().ok()?, file: fact.file, at: fact.at })
}

/// Cluster Toolkit's Managed Lustre module.
const LUSTRE_SOURCE: &str = "modules/file-system/managed-lustre";

/// The `gke-persistent-volume` module that uses `managed-lustre`.
fn lustre_pv_module(blueprint: &Node) -> Option<&Node> {
    modules(blueprint).find(|m| {
        m.get(&["source"]).and_then(Node::text) == Some("modules/file-system/gke-persistent-volume")
            && m.get(&["use"]).is_some_and(|uses| uses.items().iter().any(|u| u.text() == Some("managed-lustre")))
    })
}

/// The modes that are not Spot, in env.sh's words.
const NOT_SPOT: [&str; 3] = ["reservation", "on-demand", "flex-start"];

/// env.sh's mode: a named `RESERVATION` is a reservation whatever `PROVISIONING` says (envsh
/// refuses the two together), else `PROVISIONING`. A placeholder or an unknown word says
/// nothing, as import keeps gke-rl's Spot for it.
fn env_provisioning(env: &EnvShView<'_>) -> Option<Fact<String>> {
    let stated = |name| env_fact(env, name).filter(|f| !f.value.is_empty() && !gke_rl::envsh::is_placeholder(&f.value));
    let reserved = stated("RESERVATION").map(|r| Fact { value: "reservation".to_owned(), ..r });
    reserved.or_else(|| stated("PROVISIONING").filter(|p| p.value == "spot" || NOT_SPOT.contains(&p.value.as_str())))
}

/// The GPU node pool's mode: the first `gke-node-pool` with GPUs (`guest_accelerator`, or a
/// GPU machine type), as its settings say; none of them, on-demand. A `spot: $(vars.NAME)`
/// reads the var from the deployment file, else the blueprint.
fn blueprint_provisioning(tree: &Tree<'_>, deployment: Option<&Tree<'_>>) -> Option<Fact<String>> {
    let pool = modules(&tree.root).find(|m| {
        let machine = m.get(&["settings", "machine_type"]).and_then(Node::text).and_then(knowledge::machine);
        m.get(&["source"]).and_then(Node::text) == Some(NODE_POOL_SOURCE)
            && (m.get(&["settings", "guest_accelerator"]).is_some() || machine.is_some_and(|m| m.gpus > 0))
    })?;
    let setting = |key: &str| pool.get(&["settings", key]);
    let var = |name: &str| deployment.and_then(|d| d.root.get(&["vars", name])).or_else(|| tree.root.get(&["vars", name]));
    let resolved = |node: &'_ Node| -> Option<String> {
        let text = node.text()?;
        match text.strip_prefix("$(vars.").and_then(|t| t.strip_suffix(')')) {
            Some(name) => var(name)?.text().map(str::to_owned),
            None => Some(text.to_owned()),
        }
    };
    let is_true = |key: &str| setting(key).filter(|n| resolved(n).is_some_and(|t| t.eq_ignore_ascii_case("true")));
    let reservation = setting("reservation_affinity")
        .and_then(|a| a.get(&["consume_reservation_type"]))
        .filter(|t| t.text().is_some_and(|t| t.ends_with("_RESERVATION") && t != "NO_RESERVATION"));
    let (mode, node) = [("spot", is_true("spot")), ("flex-start", is_true("enable_flex_start")), ("reservation", reservation)]
        .into_iter()
        .find_map(|(mode, node)| Some((mode, node?)))
        .unwrap_or(("on-demand", pool));
    Some(Fact { value: mode.to_owned(), file: tree.file.to_owned(), at: node.at() })
}

pub fn gather(views: &Views<'_>) -> Facts {
    let env = views.env_sh.first();
    let deployment = views.deployment_files.first();
    let blueprint = views.blueprints.first();
    let from = |name: &str, var: &str| -> Option<Fact<String>> {
        env.and_then(|e| env_fact(e, name))
            .or_else(|| deployment.and_then(|d| tree_fact(d, &["vars", var])))
            .or_else(|| blueprint.and_then(|b| tree_fact(b, &["vars", var])))
    };
    // The Lustre PV module names its claim `pvc_name`, else `<instance id>-pvc`.
    let pvc_name = blueprint
        .and_then(|b| {
            let pv = lustre_pv_module(&b.root)?;
            match pv.get(&["settings", "pvc_name"]) {
                Some(name) => node_fact(b, name),
                None => {
                    let instance = from("LUSTRE_INSTANCE_ID", "lustre_instance_id")?;
                    Some(Fact { value: format!("{}-pvc", instance.value), file: b.file.to_owned(), at: pv.at() })
                }
            }
        })
        .or_else(|| env.and_then(|e| env_fact(e, "LUSTRE_PVC_NAME")));
    Facts {
        node_count: number(from("NUM_NODES", "static_node_count")),
        gpus_per_node: number(env.and_then(|e| env_fact(e, "GPUS_PER_NODE"))),
        machine_type: env.and_then(|e| env_fact(e, "MACHINE_TYPE")),
        region: from("REGION", "region"),
        zone: from("ZONE", "zone"),
        cluster_name: from("CLUSTER_NAME", "deployment_name"),
        lustre_capacity_gib: number(from("LUSTRE_CAPACITY", "lustre_size_gib")),
        lustre_throughput: number(from("LUSTRE_THROUGHPUT", "per_unit_storage_throughput")),
        lustre_dynamic_tier: blueprint.and_then(|b| {
            let enabled = module_by_source(&b.root, LUSTRE_SOURCE)?.get(&["settings", "enable_dynamic_tier"])?;
            (enabled.text() == Some("true")).then(|| Fact { value: (), file: b.file.to_owned(), at: enabled.at() })
        }),
        lustre_existing: env.and_then(|e| env_fact(e, "LUSTRE_EXISTING")).is_some_and(|f| f.value == "true"),
        expected_step_seconds: number(env.and_then(|e| env_fact(e, "EXPECTED_STEP_SECONDS"))),
        mean_minutes_between_preemptions: number(env.and_then(|e| env_fact(e, "MEAN_MINUTES_BETWEEN_PREEMPTIONS"))),
        pvc_name,
        authorized_cidr: from("AUTHORIZED_CIDR", "authorized_cidr"),
        fabric_mode: env.and_then(|e| env_fact(e, "FABRIC_MODE")),
        head_machine_type: env.and_then(|e| env_fact(e, "HEAD_MACHINE_TYPE")).or_else(|| {
            let b = blueprint?;
            node_fact(b, module_by_id(&b.root, HEAD_POOL_MODULE)?.get(&["settings", "machine_type"])?)
        }),
        system_machine_type: blueprint
            .and_then(|b| node_fact(b, module_by_source(&b.root, CLUSTER_SOURCE)?.get(&["settings", "system_node_pool_machine_type"])?)),
        pvc_namespace: blueprint.and_then(|b| {
            let pv = lustre_pv_module(&b.root)?;
            match pv.get(&["settings", "namespace"]) {
                Some(namespace) => node_fact(b, namespace),
                None => Some(Fact { value: "default".to_owned(), file: b.file.to_owned(), at: pv.at() }),
            }
        }),
        // The blueprint is what gcluster provisions.
        provisioning: blueprint.and_then(|b| blueprint_provisioning(b, deployment)).or_else(|| env.and_then(env_provisioning)),
        image: views
            .ray_clusters
            .first()
            .and_then(|c| {
                let containers = c.root.get(&["spec", "headGroupSpec", "template", "spec", "containers"])?;
                node_fact(c, containers.items().first()?.get(&["image"])?)
            })
            .or_else(|| env.and_then(|e| env_fact(e, "RAY_IMAGE"))),
    }
}
