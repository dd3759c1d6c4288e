//! The A4 fabric: GPU workers on an RDMA machine type attach the RDMA networks, load gIB and
//! let NCCL use it.

use std::collections::BTreeMap;

use super::ray::{ACCELERATOR_LABEL, Pod, pods};
use super::*;
use crate::Tree;
use gke_rl::blueprint::{GkeNetworks, gke_networks};
use gke_rl::knowledge::{self, GIB_HOST_PATH, GIB_MOUNT_PATH, GIB_NCCL_NET, GpuFabric, NVIDIA_LIBRARY_PATH};
use gke_rl::render::INTERFACES_ANNOTATION;
use gke_rl::yaml::Node;

const RULES_ON_RDMA: [&Rule; 5] = [&FABRIC_INTERFACES, &FABRIC_GIB, &FABRIC_NCCL_NET, &FABRIC_IB_DISABLED, &FABRIC_UNKNOWN_NETWORK];

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    if let Some(mode) = &facts.fabric_mode
        && mode.value == "off"
    {
        for rule in RULES_ON_RDMA.iter().chain([&&FABRIC_NOT_WIRED]) {
            sink.skip(rule, format!("the fabric is off ({})", mode.cite()), "set FABRIC_MODE=auto in env.sh to check it");
        }
        return;
    }
    let networks = views.blueprints.first().map(|b| (b.file, gke_networks(&b.root)));
    // Each distinct interfaces annotation is read once: groups and clusters rendered alike
    // carry the same text.
    let mut annotations: BTreeMap<&str, Option<Vec<String>>> = BTreeMap::new();
    for cluster in &views.ray_clusters {
        for pod in pods(&cluster.root).iter().filter(|p| !p.is_head && p.containers().first().is_some_and(requests_gpus)) {
            let fabric = pod_fabric(pod, facts);
            match fabric {
                Some(f) if f.is_wired() => worker(cluster, pod, f, networks.as_ref(), &mut annotations, sink),
                Some(f) => {
                    sink.ran(&FABRIC_NOT_WIRED);
                    let at = pod.spec.get(&["nodeSelector", ACCELERATOR_LABEL]).map_or(pod.group.at(), Node::at);
                    sink.emit(
                        &FABRIC_NOT_WIRED,
                        cluster.file,
                        at,
                        format!("{} runs on {}: {}", pod_name(pod), f.machine, f.unsupported().unwrap_or_default()),
                        "wire the fabric as Cluster Toolkit's example for this machine family does; `fabric-check` measures the result",
                    );
                }
                None => {}
            }
        }
    }
    let fabric = knowledge::gpu_fabric(facts.machine_type_name());
    if fabric.is_some_and(GpuFabric::is_wired) {
        for env in &views.runtime_envs {
            if let Some(vars) = env.root.get(&["env_vars"]) {
                nccl_variables(env, vars, "the runtime env", sink);
            }
        }
    }
    for rule in RULES_ON_RDMA {
        sink.skip(rule, "no GPU worker on a machine type with an RDMA fabric", "add ray-cluster.yaml with its GPU workers' nodeSelector");
    }
    sink.skip(&FABRIC_NOT_WIRED, "no GPU worker", "add ray-cluster.yaml");
}

fn requests_gpus(container: &Node) -> bool {
    container.get(&["resources", "limits", gke_rl::knowledge::GPU_RESOURCE]).is_some()
}

fn pod_name(pod: &Pod<'_>) -> String {
    format!("worker group `{}`", pod.group.get(&["groupName"]).and_then(Node::text).unwrap_or("?"))
}

/// The pod's machine: by the accelerator its nodeSelector names, else the one the files state
/// (the gke-a4 blueprint's A4 when none does).
fn pod_fabric(pod: &Pod<'_>, facts: &Facts) -> Option<&'static GpuFabric> {
    match pod.spec.get(&["nodeSelector", ACCELERATOR_LABEL]).and_then(Node::text) {
        Some(accelerator) => knowledge::gpu_fabric_of_accelerator(accelerator),
        None => knowledge::gpu_fabric(facts.machine_type_name()),
    }
}

fn worker<'t>(
    cluster: &'t Tree<'_>,
    pod: &Pod<'t>,
    fabric: &GpuFabric,
    networks: Option<&(&str, GkeNetworks)>,
    annotations: &mut BTreeMap<&'t str, Option<Vec<String>>>,
    sink: &mut Sink,
) {
    for rule in [&FABRIC_INTERFACES, &FABRIC_GIB, &FABRIC_NCCL_NET, &FABRIC_IB_DISABLED, &FABRIC_NOT_WIRED] {
        sink.ran(rule);
    }
    let name = pod_name(pod);
    let template = pod.group.get(&["template"]).unwrap_or(pod.group);
    let expected = networks.map_or_else(|| knowledge::rdma_networks(fabric.nics), |(_, n)| n.rdma.clone());
    match template.get(&["metadata", "annotations", INTERFACES_ANNOTATION]) {
        None => {
            sink.emit(
                &FABRIC_INTERFACES,
                cluster.file,
                template.at(),
                format!(
                    "{name} runs on {} but attaches none of its {} RDMA networks: collectives across nodes go over TCP",
                    fabric.machine, fabric.nics
                ),
                format!(
                    "annotate the pod template with `{INTERFACES_ANNOTATION}` listing eth0 → default and eth2… → {} (gke-rl render does)",
                    expected.join(", ")
                ),
            );
            // Said here, so the reason agrees with the finding above (not "no GPU worker").
            sink.skip(&FABRIC_UNKNOWN_NETWORK, format!("{name} attaches no networks"), "attach them first (fabric-interfaces-missing)");
        }
        Some(annotation) => {
            let text = annotation.text().unwrap_or_default();
            let listed = annotations.entry(text).or_insert_with(|| attached_networks(text));
            let Some(listed) = listed.as_ref() else {
                sink.emit(
                    &FABRIC_INTERFACES,
                    cluster.file,
                    annotation.at(),
                    format!("`{INTERFACES_ANNOTATION}` of {name} is not a JSON list of {{\"interfaceName\", \"network\"}} objects"),
                    "write it as gke-rl render does: '[{\"interfaceName\":\"eth0\",\"network\":\"default\"},…]'",
                );
                return;
            };
            let missing: Vec<&str> = expected.iter().map(String::as_str).filter(|n| !listed.iter().any(|l| l == n)).collect();
            if !missing.is_empty() {
                sink.emit(
                    &FABRIC_INTERFACES,
                    cluster.file,
                    annotation.at(),
                    format!("{name} does not attach the RDMA networks {}: NCCL uses only the NICs it is given", missing.join(", ")),
                    format!("list all {} RDMA networks in `{INTERFACES_ANNOTATION}`", expected.len()),
                );
            }
            match networks {
                Some((blueprint, networks)) => {
                    sink.ran(&FABRIC_UNKNOWN_NETWORK);
                    for unknown in listed.iter().filter(|n| !networks.has(n)) {
                        sink.emit(
                            &FABRIC_UNKNOWN_NETWORK,
                            cluster.file,
                            annotation.at(),
                            format!("{name} attaches network `{unknown}`, which {blueprint} does not create"),
                            format!(
                                "use the blueprint's networks: default, {}",
                                networks.gvnic.iter().chain(&networks.rdma).cloned().collect::<Vec<_>>().join(", ")
                            ),
                        );
                    }
                }
                None => sink.skip(&FABRIC_UNKNOWN_NETWORK, "no blueprint", "add the patched gke-a4.yaml to check the network names"),
            }
        }
    }
    let Some(container) = pod.containers().first() else { return };
    gib(cluster, pod, container, &name, sink);
    if let Some(env) = container.get(&["env"]) {
        let vars: Vec<(&str, &Node)> = env.items().iter().filter_map(|e| Some((e.get(&["name"])?.text()?, e.get(&["value"])?))).collect();
        check_nccl(cluster.file, &vars, &name, sink);
    }
}

/// The networks an interfaces annotation attaches; `None` when it is not the JSON list GKE
/// reads. JSON is YAML: the SDK's own parser reads it.
fn attached_networks(json: &str) -> Option<Vec<String>> {
    let list = Node::try_parse(json).ok()?;
    if !matches!(list.value, gke_rl::yaml::Value::Seq(_)) {
        return None;
    }
    list.items().iter().map(|i| Some(i.get(&["network"])?.text()?.to_owned())).collect()
}

/// gIB mounted from the node, on `LD_LIBRARY_PATH`, and its NCCL settings sourced.
fn gib(cluster: &Tree<'_>, pod: &Pod<'_>, container: &Node, name: &str, sink: &mut Sink) {
    let volumes = pod.spec.get(&["volumes"]).map(Node::items).unwrap_or_default();
    let mounted = container.get(&["volumeMounts"]).map(Node::items).unwrap_or_default().iter().any(|m| {
        m.get(&["mountPath"]).and_then(Node::text) == Some(GIB_MOUNT_PATH)
            && volumes.iter().any(|v| {
                v.get(&["name"]).and_then(Node::text) == m.get(&["name"]).and_then(Node::text)
                    && v.get(&["hostPath", "path"]).and_then(Node::text) == Some(GIB_HOST_PATH)
            })
    });
    // The start command, where gke-rl and Cluster Toolkit's example set up gIB.
    let script: String = ["command", "args"]
        .iter()
        .filter_map(|k| container.get(&[k]))
        .flat_map(|n| n.items().iter().filter_map(Node::text).chain(n.text()))
        .collect::<Vec<_>>()
        .join("\n");
    // gIB's libraries are in both: its installer copies them into the driver's lib64, which
    // Cluster Toolkit's A4 examples put on the path.
    let lib64 = [NVIDIA_LIBRARY_PATH.to_owned(), format!("{GIB_MOUNT_PATH}/lib64")];
    let env_path = container
        .get(&["env"])
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .find(|e| e.get(&["name"]).and_then(Node::text) == Some("LD_LIBRARY_PATH"))
        .and_then(|e| e.get(&["value"])?.text());
    let on_path = env_path.is_some_and(|p| p.split(':').any(|d| lib64.iter().any(|l| d == l)))
        || script.lines().any(|l| l.contains("LD_LIBRARY_PATH=") && lib64.iter().any(|d| l.contains(d.as_str())));
    let sourced = script.contains(&format!("{GIB_MOUNT_PATH}/scripts/set_nccl_env.sh"));
    let missing: Vec<String> = [
        (!mounted).then(|| format!("no hostPath {GIB_HOST_PATH} mounted at {GIB_MOUNT_PATH}")),
        (!on_path).then(|| format!("{NVIDIA_LIBRARY_PATH} (where gIB's installer puts its libraries) is not on LD_LIBRARY_PATH")),
        (!sourced).then(|| format!("{GIB_MOUNT_PATH}/scripts/set_nccl_env.sh is not sourced before `ray start`")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !missing.is_empty() {
        let at = container.get(&["name"]).map_or(container.at(), Node::at);
        sink.emit(
            &FABRIC_GIB,
            cluster.file,
            at,
            format!("{name} cannot load gIB: {}", missing.join("; ")),
            "mount the gib hostPath, export LD_LIBRARY_PATH and source set_nccl_env.sh in the container's command, as gke-rl render does",
        );
    }
}

/// `NCCL_NET` and `NCCL_IB_DISABLE` in a runtime env's `env_vars`.
fn nccl_variables(env: &Tree<'_>, vars: &Node, what: &str, sink: &mut Sink) {
    sink.ran(&FABRIC_NCCL_NET);
    sink.ran(&FABRIC_IB_DISABLED);
    let vars: Vec<(&str, &Node)> = vars.entries().iter().map(|(k, v)| (k.as_str(), v)).collect();
    check_nccl(env.file, &vars, what, sink);
}

fn check_nccl(file: &str, vars: &[(&str, &Node)], who: &str, sink: &mut Sink) {
    for (name, value) in vars {
        let text = value.text().unwrap_or_default();
        match *name {
            "NCCL_NET" if text != GIB_NCCL_NET => {
                sink.emit(
                    &FABRIC_NCCL_NET,
                    file,
                    value.at(),
                    format!("{who} sets NCCL_NET={text}, so NCCL does not use the RDMA fabric"),
                    format!("set NCCL_NET={GIB_NCCL_NET}, or remove it"),
                );
            }
            "NCCL_IB_DISABLE" if text.trim() == "1" => {
                sink.emit(
                    &FABRIC_IB_DISABLED,
                    file,
                    value.at(),
                    format!("{who} sets NCCL_IB_DISABLE=1, which turns the RDMA NICs off for NCCL"),
                    "remove NCCL_IB_DISABLE",
                );
            }
            _ => {}
        }
    }
}
