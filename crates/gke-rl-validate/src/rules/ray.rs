//! The RayCluster: version, names, parameters, ports, replicas, resources, scheduling, volumes.

use std::collections::BTreeMap;

use super::*;
use crate::Tree;
use gke_rl::knowledge;
use gke_rl::model::quantity;
use gke_rl::yaml::decimal::{fixed, short};
use gke_rl::yaml::{Node, Value};

/// The node label GKE gives GPU nodes; pods select them by it.
pub(super) use gke_rl::knowledge::ACCELERATOR_LABEL;
use gke_rl::knowledge::GPU_RESOURCE as GPU;
/// The node labels GKE gives Spot nodes, with their value there.
const SPOT_LABELS: [(&str, &str); 2] = [("cloud.google.com/gke-spot", "true"), ("cloud.google.com/gke-provisioning", "spot")];

/// A pod template of the RayCluster: the head or a worker group.
pub(crate) struct Pod<'n> {
    pub group: &'n Node,
    pub spec: &'n Node,
    pub is_head: bool,
}

impl<'n> Pod<'n> {
    pub fn containers(&self) -> &'n [Node] {
        self.spec.get(&["containers"]).map(Node::items).unwrap_or_default()
    }

    pub(super) fn name(&self) -> String {
        if self.is_head {
            "the head".to_owned()
        } else {
            format!("worker group `{}`", self.group.get(&["groupName"]).and_then(Node::text).unwrap_or("?"))
        }
    }

    /// Sum of a resource over the containers: requests, or limits where no request is set. A
    /// negative or endless quantity, which the API server refuses, adds nothing.
    pub(super) fn request(&self, resource: &str) -> f64 {
        self.containers()
            .iter()
            .filter_map(|c| c.get(&["resources", "requests", resource]).or_else(|| c.get(&["resources", "limits", resource])))
            .filter_map(|q| quantity::parse(q.text()?))
            .filter(|q| q.is_finite() && *q >= 0.0)
            .sum()
    }

    fn gpu_limit(&self) -> Option<&'n Node> {
        self.containers().first()?.get(&["resources", "limits", GPU])
    }

    pub(super) fn replicas(&self) -> Option<u64> {
        self.group.get(&["replicas"]).or_else(|| self.group.get(&["minReplicas"])).and_then(Node::as_u64)
    }
}

pub(crate) fn pods(cluster: &Node) -> Vec<Pod<'_>> {
    let head =
        cluster.get(&["spec", "headGroupSpec"]).and_then(|g| Some(Pod { group: g, spec: g.get(&["template", "spec"])?, is_head: true }));
    let workers = cluster
        .get(&["spec", "workerGroupSpecs"])
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .filter_map(|g| Some(Pod { group: g, spec: g.get(&["template", "spec"])?, is_head: false }));
    head.into_iter().chain(workers).collect()
}

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    for cluster in &views.ray_clusters {
        let pods = pods(&cluster.root);
        // Every pod's own checks run on whatever the pods hold.
        for rule in [&RAY_START_PARAM_NOT_STRING, &VOLUME_DUPLICATE_NAME, &MOUNT_DUPLICATE_PATH, &MOUNT_UNKNOWN_VOLUME, &DEV_SHM_TWICE] {
            sink.ran(rule);
        }
        for rule in [&GPU_TOLERATION, &HEAD_DASHBOARD_PORT, &WORKER_REPLICAS_RANGE] {
            sink.ran(rule);
        }
        version(cluster, &pods, sink);
        auth(cluster, &pods, sink);
        name(cluster, sink);
        for pod in &pods {
            start_params(cluster, pod, sink);
            volumes(cluster, pod, sink);
            toleration(cluster, pod, sink);
        }
        if let Some(head) = pods.iter().find(|p| p.is_head) {
            dashboard_port(cluster, head, sink);
        }
        replicas(cluster, &pods, facts, sink);
        gpus_and_resources(cluster, &pods, facts, sink);
        head_fits_its_pool(cluster, &pods, facts, sink);
        head_on_spot(cluster, &pods, facts, sink);
        pvc(cluster, &pods, facts, sink);
    }
}

fn version(cluster: &Tree<'_>, pods: &[Pod<'_>], sink: &mut Sink) {
    let image = pods.first().and_then(|p| p.containers().first()).and_then(|c| c.get(&["image"]));
    let Some((image, image_text)) = image.and_then(|n| Some((n, n.text()?))) else {
        for rule in [&RAY_VERSION_MISMATCH, &RAY_UNKNOWN_IMAGE] {
            sink.skip(rule, "the RayCluster names no image", "set the containers' image in ray-cluster.yaml");
        }
        return;
    };
    sink.ran(&RAY_UNKNOWN_IMAGE);
    match knowledge::ray_version_of_image(image_text) {
        Some(shipped) => {
            let Some(declared) = cluster.root.get(&["spec", "rayVersion"]) else {
                sink.skip(&RAY_VERSION_MISMATCH, "no rayVersion", "set spec.rayVersion in ray-cluster.yaml");
                return;
            };
            sink.ran(&RAY_VERSION_MISMATCH);
            if declared.text() != Some(shipped) {
                let finding = sink.emit(
                    &RAY_VERSION_MISMATCH,
                    cluster.file,
                    declared.at(),
                    format!("rayVersion is {}, but {image_text} ships Ray {shipped}", declared.text().unwrap_or("not a string")),
                    format!("set `rayVersion: \"{shipped}\"`"),
                );
                finding.fix = declared
                    .text()
                    .and_then(|value| {
                        Fix::replace_scalar(
                            cluster.text,
                            declared.at(),
                            value,
                            format!("\"{shipped}\""),
                            format!("set rayVersion to \"{shipped}\""),
                        )
                    })
                    .map(Box::new);
            }
        }
        None => {
            sink.skip(
                &RAY_VERSION_MISMATCH,
                format!("the Ray version inside `{image_text}` is unknown"),
                "use an image gke-rl knows (gke-rl --version lists them)",
            );
            sink.emit(
                &RAY_UNKNOWN_IMAGE,
                cluster.file,
                image.at(),
                format!("the Ray version inside `{image_text}` is unknown"),
                "make sure rayVersion equals `ray --version` inside the image",
            );
        }
    }
}

/// Token authentication against the Ray inside the image (else `rayVersion`): off where that
/// Ray has it, or on where it does not, or without the `rayVersion` KubeRay checks it by.
fn auth(cluster: &Tree<'_>, pods: &[Pod<'_>], sink: &mut Sink) {
    let container = pods.first().and_then(|p| p.containers().first());
    let image = container.and_then(|c| c.get(&["image"])).and_then(Node::text);
    let declared = cluster.root.get(&["spec", "rayVersion"]);
    let ray = image.and_then(knowledge::ray_version_of_image).or_else(|| declared.and_then(Node::text));
    let mode = cluster.root.get(&["spec", "authOptions", "mode"]).filter(|m| m.text() == Some("token"));
    sink.ran(&RAY_AUTH_UNSUPPORTED);
    if let Some(mode) = mode {
        // KubeRay refuses the RayCluster by its rayVersion (validation.go, v1.7.0); the image's
        // Ray decides whether the pods could authenticate at all.
        let too_old = [declared.and_then(Node::text), ray].into_iter().flatten().find(|v| !gke_rl::knowledge::supports_token(v));
        let problem = match (declared.and_then(Node::text), too_old) {
            (None, _) => Some("the RayCluster names no rayVersion, which KubeRay needs for it".to_owned()),
            (_, Some(old)) => {
                Some(format!("the cluster runs Ray {old}; token authentication needs {}", gke_rl::knowledge::TOKEN_AUTH_SINCE))
            }
            _ => None,
        };
        if let Some(problem) = problem {
            sink.emit(
                &RAY_AUTH_UNSUPPORTED,
                cluster.file,
                mode.at(),
                format!("authOptions.mode is token, but {problem}"),
                format!("set `rayVersion` to the Ray inside the image ({} or newer), or remove authOptions: gke-rl render then restricts the pods with a NetworkPolicy", gke_rl::knowledge::token_auth_ray()),
            );
        }
        sink.ran(&RAY_AUTH_OFF);
        return;
    }
    let Some(ray) = ray else {
        sink.skip(&RAY_AUTH_OFF, "neither the image's Ray nor rayVersion is known", "set spec.rayVersion in ray-cluster.yaml");
        return;
    };
    sink.ran(&RAY_AUTH_OFF);
    // Ray's own way without KubeRay's help: the variables in the Ray container.
    let by_hand =
        container.and_then(|c| c.get(&["env"])).map(Node::items).unwrap_or_default().iter().any(|e| {
            e.get(&["name"]).and_then(Node::text) == Some("RAY_AUTH_MODE") && e.get(&["value"]).and_then(Node::text) == Some("token")
        });
    if gke_rl::knowledge::supports_token(ray) && !by_hand {
        sink.emit(
            &RAY_AUTH_OFF,
            cluster.file,
            cluster.root.get(&["spec", "authOptions"]).or(declared).map_or((1, 1), Node::at),
            format!("Ray {ray} has token authentication, but this RayCluster leaves it off: any pod that reaches the head runs jobs"),
            format!(
                "add `authOptions: {{mode: token, secretName: <a Secret with key {}>}}` under spec (gke-rl render and deploy do)",
                gke_rl::auth::TOKEN_KEY
            ),
        );
    }
}

fn name(cluster: &Tree<'_>, sink: &mut Sink) {
    let Some(node) = cluster.root.get(&["metadata", "name"]) else {
        sink.skip(&RAYCLUSTER_NAME, "the RayCluster has no metadata.name", "name it in ray-cluster.yaml");
        return;
    };
    sink.ran(&RAYCLUSTER_NAME);
    let name = node.text().unwrap_or_default();
    let dns_1035 = name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    // A RayJob names its cluster `<name>-<5 characters>` (KubeRay v1.7.0
    // `ValidateRayJobMetadata`: "RayJob name should be no more than 47 characters").
    let (kind, most) = if cluster.root.get(&["kind"]).and_then(Node::text) == Some("RayJob") { ("RayJob", 47) } else { ("RayCluster", 53) };
    if name.chars().count() > most || !dns_1035 {
        sink.emit(
            &RAYCLUSTER_NAME,
            cluster.file,
            node.at(),
            format!("{kind} name `{name}` is not a DNS-1035 label of at most {most} characters"),
            format!("use lowercase letters, digits and `-`, start with a letter, at most {most} characters"),
        );
    }
}

fn start_params(cluster: &Tree<'_>, pod: &Pod<'_>, sink: &mut Sink) {
    for (key, value) in pod.group.get(&["rayStartParams"]).map(Node::entries).unwrap_or_default() {
        if !matches!(value.value, Value::String(_)) {
            let shown = value.text().unwrap_or("a non-scalar");
            sink.emit(
                &RAY_START_PARAM_NOT_STRING,
                cluster.file,
                value.at(),
                format!("rayStartParams `{key}` of {} is {shown}, not a string", pod.name()),
                format!("quote it: `{key}: \"{shown}\"`"),
            );
        }
    }
}

fn dashboard_port(cluster: &Tree<'_>, head: &Pod<'_>, sink: &mut Sink) {
    let Some(ports) = head.containers().first().and_then(|c| c.get(&["ports"])) else { return };
    if !ports.items().iter().any(|p| p.get(&["containerPort"]).and_then(Node::as_u64) == Some(8265)) {
        sink.emit(
            &HEAD_DASHBOARD_PORT,
            cluster.file,
            ports.at(),
            "the head container lists ports without 8265, so the head service has no dashboard or Jobs API",
            "add `- name: dashboard` with `containerPort: 8265`, or list no ports to get KubeRay's defaults",
        );
    }
}

fn replicas(cluster: &Tree<'_>, pods: &[Pod<'_>], facts: &Facts, sink: &mut Sink) {
    match facts.node_count {
        Some(_) => sink.ran(&WORKER_REPLICAS_NODES),
        None => sink.skip(
            &WORKER_REPLICAS_NODES,
            "no GPU node count",
            "set NUM_NODES in env.sh, or static_node_count in gke-a4-deployment.yaml",
        ),
    }
    for pod in pods.iter().filter(|p| !p.is_head) {
        let number = |key: &str| pod.group.get(&[key]).and_then(|n| Some((n.as_u64()?, n.at())));
        let (min, max, replicas) = (number("minReplicas"), number("maxReplicas"), number("replicas"));
        if let (Some((min, at)), Some((max, _))) = (min, max)
            && min > max
        {
            sink.emit(
                &WORKER_REPLICAS_RANGE,
                cluster.file,
                at,
                format!("{}: minReplicas {min} exceeds maxReplicas {max}", pod.name()),
                "make minReplicas ≤ maxReplicas",
            );
        }
        if let Some((replicas, at)) = replicas {
            let outside = min.is_some_and(|(min, _)| replicas < min) || max.is_some_and(|(max, _)| replicas > max);
            if outside {
                sink.emit(
                    &WORKER_REPLICAS_RANGE,
                    cluster.file,
                    at,
                    format!("{}: replicas {replicas} is outside [minReplicas, maxReplicas]", pod.name()),
                    "set replicas = minReplicas = maxReplicas for a fixed-size cluster",
                );
            }
        }
        let Some(nodes) = &facts.node_count else { continue };
        if pod.gpu_limit().is_some()
            && let (Some(replicas), Some(at)) = (pod.replicas(), pod.group.get(&["replicas"]).map(Node::at))
            && replicas != nodes.value
        {
            sink.emit(
                &WORKER_REPLICAS_NODES,
                cluster.file,
                at,
                format!("{} has {replicas} replicas, but there are {} GPU nodes ({})", pod.name(), nodes.value, nodes.cite()),
                format!("set replicas, minReplicas and maxReplicas to {}", nodes.value),
            );
        }
    }
}

fn gpus_and_resources(cluster: &Tree<'_>, pods: &[Pod<'_>], facts: &Facts, sink: &mut Sink) {
    let machine_type = facts.machine_type_name();
    match knowledge::gpu_family(machine_type) {
        None => sink.skip(&GPU_LIMIT, "the machine type is unknown", "use a machine type of a GPU family gke-rl knows (`gke-rl models`)"),
        Some(family) => {
            sink.ran(&GPU_LIMIT);
            let expected_gpus = facts.gpus_per_node.as_ref().map_or(u64::from(family.gpus_per_node), |f| f.value);
            for pod in pods {
                if let Some(limit) = pod.gpu_limit()
                    && limit.as_u64() != Some(expected_gpus)
                {
                    sink.emit(
                        &GPU_LIMIT,
                        cluster.file,
                        limit.at(),
                        format!(
                            "{} limits {GPU} to {}, but {machine_type} nodes have {expected_gpus}",
                            pod.name(),
                            limit.text().unwrap_or("?")
                        ),
                        format!("set `{GPU}: \"{expected_gpus}\"` in limits and requests: one worker per node"),
                    );
                }
            }
        }
    }
    let Some(machine) = facts.machine() else {
        sink.skip(&RESOURCES_EXCEED_NODE, "the allocatable CPU and memory of the machine type are unknown", "use a4-highgpu-8g");
        return;
    };
    sink.ran(&RESOURCES_EXCEED_NODE);
    for pod in pods {
        exceeds(cluster, pod, None, machine, sink);
    }
    // With a worker on every node, the head (on a GPU node) shares one with a worker.
    let (Some(head), Some(nodes)) = (pods.iter().find(|p| p.is_head), &facts.node_count) else { return };
    let head_on_gpu_nodes = head.spec.get(&["nodeSelector", ACCELERATOR_LABEL]).is_some();
    if let Some(worker) = pods.iter().find(|p| !p.is_head && p.gpu_limit().is_some() && p.replicas() >= Some(nodes.value))
        && head_on_gpu_nodes
    {
        exceeds(cluster, head, Some(worker), machine, sink);
    }
}

/// The head on Spot nodes: selected by GKE's Spot labels, or the codelab's layout, the GPU
/// nodes, which are Spot unless something says otherwise (gke-rl's default, and the codelab's
/// cluster `ray-a4-gpu-spot`).
fn head_on_spot(cluster: &Tree<'_>, pods: &[Pod<'_>], facts: &Facts, sink: &mut Sink) {
    let Some(head) = pods.iter().find(|p| p.is_head) else { return };
    sink.ran(&HEAD_ON_SPOT);
    let selects = |label: &str| head.spec.get(&["nodeSelector", label]);
    let pool = format!(
        "gke-rl's `ray.head.node_pool: dedicated` (the blueprint patch's `{}` pool) or `system`",
        gke_rl::blueprint::HEAD_POOL_MODULE
    );
    let spot_selector = SPOT_LABELS.iter().find_map(|(label, spot)| selects(label).filter(|n| n.text() == Some(spot)).map(|n| (n, *label)));
    let (selector, nodes, help) = if let Some((selector, label)) = spot_selector {
        (selector, format!("Spot nodes (`{label}`)"), format!("select an on-demand node pool for the head: {pool}"))
    } else if let Some(gpu) = selects(ACCELERATOR_LABEL).filter(|_| selects(SPOT_LABELS[0].0).and_then(Node::text) != Some("false")) {
        let nodes = match &facts.provisioning {
            Some(fact) if fact.value != "spot" => return,
            Some(fact) => format!("the GPU nodes, which are Spot ({})", fact.cite()),
            None => "the GPU nodes, which are Spot unless said otherwise (gke-rl's default and the codelab's)".to_owned(),
        };
        let help = format!(
            "give the head an on-demand CPU node: {pool}; if the GPU nodes are not Spot, say how they are obtained: `topology.provisioning` in gke-rl.yaml, or `RESERVATION=<name>` or `PROVISIONING=on-demand` in env.sh"
        );
        (gpu, nodes, help)
    } else {
        return;
    };
    sink.emit(
        &HEAD_ON_SPOT,
        cluster.file,
        selector.at(),
        format!("the head runs on {nodes}: a preempted node takes the whole Ray cluster and the run with it"),
        help,
    );
}

/// A head on a CPU pool (its own, or the system pool) must fit that pool's machine.
fn head_fits_its_pool(cluster: &Tree<'_>, pods: &[Pod<'_>], facts: &Facts, sink: &mut Sink) {
    let Some(head) = pods.iter().find(|p| p.is_head) else { return };
    let selects = |label: &str, value: &str| head.spec.get(&["nodeSelector", label]).and_then(Node::text) == Some(value);
    let machine = if selects(knowledge::HEAD_POOL_LABEL.0, knowledge::HEAD_POOL_LABEL.1) {
        facts.head_machine_type.as_ref().map_or(knowledge::HEAD_POOL_MACHINE_TYPE, |f| f.value.as_str())
    } else if selects(knowledge::NODE_POOL_LABEL, knowledge::SYSTEM_POOL.0) {
        facts.system_machine_type.as_ref().map_or(knowledge::SYSTEM_POOL.1, |f| f.value.as_str())
    } else {
        return;
    };
    if let Some(machine) = knowledge::machine(machine) {
        sink.ran(&RESOURCES_EXCEED_NODE);
        exceeds(cluster, head, None, machine, sink);
    }
}

fn exceeds(cluster: &Tree<'_>, pod: &Pod<'_>, sharing: Option<&Pod<'_>>, machine: &knowledge::Machine, sink: &mut Sink) {
    let allocatable =
        [("cpu", machine.allocatable_millicpu as f64 / 1000.0, "CPUs"), ("memory", machine.allocatable_memory_bytes as f64, "bytes")];
    for (resource, available, unit) in allocatable {
        let asked = pod.request(resource) + sharing.map_or(0.0, |w| w.request(resource));
        if asked <= available {
            continue;
        }
        let at = pod
            .containers()
            .first()
            .and_then(|c| c.get(&["resources", "requests", resource]).or_else(|| c.get(&["resources", "limits", resource])));
        let Some(at) = at.map(Node::at) else { continue };
        let (asked, available) = if unit == "bytes" {
            let gib = |bytes: f64| format!("{}Gi", fixed(bytes / knowledge::GIB as f64, 0));
            (gib(asked), gib(available))
        } else {
            (short(asked, 3).to_string(), short(available, 3).to_string())
        };
        let message = match sharing {
            None => format!("{} requests {asked} {resource}; an {} node can allocate about {available}", pod.name(), machine.name),
            Some(worker) => format!(
                "{} and {} share a node and request {asked} {resource} together; it can allocate about {available}",
                pod.name(),
                worker.name()
            ),
        };
        // The head's requests are the config's: name the key that sets them.
        let help = if pod.is_head {
            format!("lower ray.head.{resource}_request in the config (here, the head's {resource} request) so it fits the node")
        } else {
            format!("lower the {resource} requests so they fit the node")
        };
        sink.emit(&RESOURCES_EXCEED_NODE, cluster.file, at, message, help);
    }
}

fn toleration(cluster: &Tree<'_>, pod: &Pod<'_>, sink: &mut Sink) {
    let Some(selector) = pod.spec.get(&["nodeSelector", ACCELERATOR_LABEL]) else { return };
    let tolerates = pod.spec.get(&["tolerations"]).map(Node::items).unwrap_or_default().iter().any(|t| {
        let key = t.get(&["key"]).and_then(Node::text);
        key == Some(GPU) || (key.is_none() && t.get(&["operator"]).and_then(Node::text) == Some("Exists"))
    });
    if !tolerates && pod.gpu_limit().is_none() {
        sink.emit(
            &GPU_TOLERATION,
            cluster.file,
            selector.at(),
            format!("{} selects GPU nodes but neither requests a GPU nor tolerates the `{GPU}` taint", pod.name()),
            format!("add a toleration: `- key: {GPU}`, `operator: Exists`, `effect: NoSchedule`"),
        );
    }
}

fn volumes(cluster: &Tree<'_>, pod: &Pod<'_>, sink: &mut Sink) {
    let volumes = pod.spec.get(&["volumes"]).map(Node::items).unwrap_or_default();
    let mut names: BTreeMap<&str, &Node> = BTreeMap::new();
    for volume in volumes {
        let Some(name) = volume.get(&["name"]) else { continue };
        let text = name.text().unwrap_or_default();
        if let Some(first) = names.insert(text, name) {
            sink.emit(
                &VOLUME_DUPLICATE_NAME,
                cluster.file,
                name.at(),
                format!("{} defines volume `{text}` twice (first on line {})", pod.name(), first.line),
                "rename or remove one of them",
            );
        }
    }
    for container in pod.containers() {
        let mut paths: BTreeMap<&str, &Node> = BTreeMap::new();
        for mount in container.get(&["volumeMounts"]).map(Node::items).unwrap_or_default() {
            if let Some(name) = mount.get(&["name"]) {
                let text = name.text().unwrap_or_default();
                if !names.contains_key(text) {
                    sink.emit(
                        &MOUNT_UNKNOWN_VOLUME,
                        cluster.file,
                        name.at(),
                        format!("{} mounts volume `{text}`, which it does not define", pod.name()),
                        format!("add `{text}` under volumes, or fix the name"),
                    );
                }
            }
            let Some(path) = mount.get(&["mountPath"]) else { continue };
            let text = path.text().unwrap_or_default();
            if let Some(first) = paths.insert(text, path) {
                let rule = if text == "/dev/shm" { &DEV_SHM_TWICE } else { &MOUNT_DUPLICATE_PATH };
                sink.emit(
                    rule,
                    cluster.file,
                    path.at(),
                    format!("{} mounts `{text}` twice (first on line {})", pod.name(), first.line),
                    "remove one of the mounts",
                );
            }
        }
    }
}

/// The RayCluster's PVC claims against the PVC the blueprint creates.
fn pvc(cluster: &Tree<'_>, pods: &[Pod<'_>], facts: &Facts, sink: &mut Sink) {
    match &facts.pvc_namespace {
        None => sink.skip(&PVC_NAMESPACE_MISMATCH, "no blueprint with the Lustre PV module", "add the patched gke-a4.yaml"),
        Some(pvc_namespace) => {
            sink.ran(&PVC_NAMESPACE_MISMATCH);
            let stated = cluster.root.get(&["metadata", "namespace"]);
            let namespace = stated.and_then(Node::text).unwrap_or("default");
            if namespace != pvc_namespace.value {
                sink.emit(
                    &PVC_NAMESPACE_MISMATCH,
                    cluster.file,
                    stated.map_or_else(|| cluster.root.at(), Node::at),
                    format!(
                        "the RayCluster is in namespace `{namespace}`, but the blueprint creates the Lustre PVC in `{}` ({}): a pod can only claim a PVC of its own namespace, so the Ray pods stay Pending",
                        pvc_namespace.value,
                        pvc_namespace.cite()
                    ),
                    format!("set the lustre-pv module's `namespace: {namespace}` (gke-rl's blueprint patch does), or put the RayCluster in `{}`", pvc_namespace.value),
                );
            }
        }
    }
    let Some(expected) = &facts.pvc_name else {
        sink.skip(&PVC_NAME_MISMATCH, "no Lustre PVC name", "add the patched gke-a4.yaml, or LUSTRE_PVC_NAME to env.sh");
        return;
    };
    sink.ran(&PVC_NAME_MISMATCH);
    for pod in pods {
        for volume in pod.spec.get(&["volumes"]).map(Node::items).unwrap_or_default() {
            let Some(claim) = volume.get(&["persistentVolumeClaim", "claimName"]) else { continue };
            if claim.text() != Some(expected.value.as_str()) {
                sink.emit(
                    &PVC_NAME_MISMATCH,
                    cluster.file,
                    claim.at(),
                    format!(
                        "{} claims PVC `{}`, but the Lustre PVC is `{}` ({})",
                        pod.name(),
                        claim.text().unwrap_or("?"),
                        expected.value,
                        expected.cite()
                    ),
                    format!("set `claimName: {}`", expected.value),
                );
            }
        }
    }
}
