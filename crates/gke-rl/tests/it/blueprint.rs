//! The blueprint patcher on the real upstream gke-a4 blueprint and on mutated copies of it.

use gke_rl::Deployment;
use gke_rl::blueprint::{gke_networks, patch, unified_diff};
use gke_rl_test_support::configs::render;
use gke_rl_test_support::upstream;
use gke_rl_yaml::Node;

fn upstream_blueprint() -> String {
    std::fs::read_to_string(upstream("cluster-toolkit/gke-a4.yaml")).unwrap()
}

fn reservation() -> Deployment {
    gke_rl::config::from_yaml("topology:\n  provisioning:\n    reservation: a4-res\n").unwrap()
}

fn mode(mode: &str) -> Deployment {
    gke_rl::config::from_yaml(&format!("topology:\n  provisioning: {mode}\n")).unwrap()
}

fn module<'n>(root: &'n Node, id: &str) -> &'n Node {
    let groups = root.get(&["deployment_groups"]).unwrap().items();
    groups
        .iter()
        .flat_map(|g| g.get(&["modules"]).unwrap().items())
        .find(|m| m.get(&["id"]).and_then(Node::text) == Some(id))
        .unwrap_or_else(|| panic!("no module {id}"))
}

#[test]
fn spot_patch_makes_the_upstream_blueprint_deployable() {
    let original = upstream_blueprint();
    let patched = patch(&original, &Deployment::default()).unwrap();
    let root = Node::parse(&patched).expect("the patched blueprint is YAML");
    for id in ["private_service_access", "lustre_firewall_rule", "managed-lustre", "lustre-pv"] {
        assert!(module(&root, id).get(&["source"]).is_some(), "{id} is live");
    }
    assert_eq!(module(&root, "lustre-pv").get(&["settings", "pvc_name"]).and_then(Node::text), Some("lustre-pvc"));
    assert_eq!(module(&root, "a4-cluster").get(&["settings", "enable_ray_operator"]).and_then(Node::text), Some("true"));
    let pool = module(&root, "a4-pool");
    assert!(pool.get(&["settings", "reservation_affinity"]).is_none());
    assert_eq!(pool.get(&["settings", "spot"]).and_then(Node::text), Some("true"));
    assert!(root.get(&["vars", "reservation"]).is_none(), "the unused reservation var is dropped");
    assert_eq!(root.get(&["vars", "lustre_size_gib"]).and_then(Node::text), Some("9000"));
    assert_eq!(root.get(&["vars", "per_unit_storage_throughput"]).and_then(Node::text), Some("1000"));
    assert_eq!(root.get(&["vars", "lustre_instance_id"]).and_then(Node::text), Some("rl-demo-gpu-lustre"));
    assert!(patched.starts_with(&original[..original.find("blueprint_name").unwrap()]), "the licence header is kept");
}

/// The inputs a Cluster Toolkit module's README documents (`<a name="input_X">`).
fn module_inputs(readme: &str) -> Vec<String> {
    let text = std::fs::read_to_string(upstream(readme)).unwrap();
    text.split("<a name=\"input_").skip(1).filter_map(|rest| rest.split('"').next()).map(str::to_owned).collect()
}

#[test]
fn the_head_gets_an_on_demand_cpu_pool_that_its_selector_matches() {
    let patched = patch(&upstream_blueprint(), &Deployment::default()).unwrap();
    let root = Node::parse(&patched).unwrap();
    let pool = module(&root, gke_rl::blueprint::HEAD_POOL_MODULE);
    assert_eq!(pool.get(&["source"]).and_then(Node::text), Some("modules/compute/gke-node-pool"));
    let inputs = module_inputs("cluster-toolkit/modules/compute/gke-node-pool/README.md");
    for (key, _) in pool.get(&["settings"]).unwrap().entries() {
        assert!(inputs.contains(key), "{key} is not an input of gke-node-pool: {inputs:?}");
    }
    let settings = |key: &str| pool.get(&["settings", key]).and_then(Node::text).map(str::to_owned);
    assert_eq!(settings("machine_type").as_deref(), Some("n2-highmem-16"));
    assert_eq!(settings("spot"), None, "on-demand: the module's default");
    assert!(pool.get(&["settings", "guest_accelerator"]).is_none() && pool.get(&["settings", "reservation_affinity"]).is_none());
    let (label, value) = gke_rl::knowledge::HEAD_POOL_LABEL;
    assert_eq!(pool.get(&["settings", "kubernetes_labels", label]).and_then(Node::text), Some(value));
    let rendered = render(&Deployment::default());
    let cluster = rendered.iter().find(|a| a.name == "ray-cluster.yaml").unwrap();
    let head = Node::parse(&cluster.contents).unwrap();
    let selector = head.get(&["spec", "headGroupSpec", "template", "spec", "nodeSelector"]).unwrap();
    assert_eq!(selector.entries().iter().map(|(k, v)| (k.as_str(), v.text())).collect::<Vec<_>>(), [(label, Some(value))]);

    // The codelab's layout: no pool; the head on a GPU node.
    let mut on_gpu = Deployment::default();
    on_gpu.ray.head.node_pool = gke_rl::model::HeadNodePool::Gpu;
    assert!(!patch(&upstream_blueprint(), &on_gpu).unwrap().contains("ray-head-pool"));
}

/// A cluster that is suspended after its jobs gives its nodes back only if its pool
/// autoscales: the patch makes the Spot pool autoscale from zero.
#[test]
fn suspending_after_jobs_makes_the_gpu_pool_autoscale_from_zero() {
    let mut suspends = Deployment::default();
    suspends.job.when_done = gke_rl::model::WhenDone::Suspend;
    let patched = patch(&upstream_blueprint(), &suspends).unwrap();
    assert_eq!(patch(&patched, &suspends).unwrap(), patched, "idempotent");
    let root = Node::parse(&patched).unwrap();
    let pool = module(&root, "a4-pool");
    let setting = |key: &str| pool.get(&["settings", key]).and_then(Node::text);
    assert_eq!((setting("static_node_count"), setting("autoscaling_total_min_nodes"), setting("spot")), (None, Some("0"), Some("true")));
    // An autoscaling pool's static_gpu_count is 0, which would leave Kueue's ClusterQueue no quota.
    let quota = module(&root, "workload-manager-install").get(&["settings", "kueue", "config_template_vars", "num_gpus"]);
    assert_eq!(quota.and_then(Node::text), Some("64"), "8 nodes of 8 GPUs");
    let fixed = patch(&upstream_blueprint(), &Deployment::default()).unwrap();
    assert!(fixed.contains("num_gpus: $(a4-pool.static_gpu_count)"), "a static pool keeps its own count");
}

#[test]
fn the_system_pool_is_the_one_gke_a4_creates() {
    let (name, machine) = gke_rl::knowledge::SYSTEM_POOL;
    let readme = std::fs::read_to_string(upstream("cluster-toolkit/modules/scheduler/gke-cluster/README.md")).unwrap();
    let row = readme.lines().find(|l| l.contains("<a name=\"input_system_node_pool_name\">")).unwrap();
    assert!(row.contains(&format!("`\"{name}\"`")), "{row}");
    let root = Node::parse(&upstream_blueprint()).unwrap();
    let cluster = module(&root, "a4-cluster");
    assert_eq!(cluster.get(&["settings", "system_node_pool_machine_type"]).and_then(Node::text), Some(machine));
    assert!(cluster.get(&["settings", "system_node_pool_name"]).is_none(), "the default name");
}

#[test]
fn every_unrelated_comment_is_kept() {
    let original = upstream_blueprint();
    let patched = patch(&original, &Deployment::default()).unwrap();
    let kept: std::collections::BTreeSet<&str> = patched.lines().collect();
    let patched_away = |line: &str| {
        let t = line.trim_start();
        t.starts_with("# -")
            || t.starts_with("#   ")
            || t.starts_with("# lustre_")
            || t.starts_with("# per_unit")
            || t.starts_with("# size")
            || line.contains("reservation")
    };
    for line in original.lines().filter(|l| l.trim_start().starts_with('#') && !patched_away(l)) {
        assert!(kept.contains(line), "comment lost: {line:?}");
    }
}

#[test]
fn patching_is_idempotent() {
    let original = upstream_blueprint();
    for deployment in [Deployment::default(), reservation()] {
        let once = patch(&original, &deployment).unwrap();
        assert_eq!(patch(&once, &deployment).unwrap(), once);
    }
}

#[test]
fn the_patch_applies_to_the_original_and_reproduces_the_output() {
    let original = upstream_blueprint();
    for deployment in [Deployment::default(), reservation(), mode("flex-start"), mode("on-demand")] {
        let patched = patch(&original, &deployment).unwrap();
        let diff = unified_diff(&original, &patched, "gke-a4.yaml");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("gke-a4.yaml"), &original).unwrap();
        std::fs::write(dir.path().join("gke-a4.yaml.patch"), &diff).unwrap();
        let status =
            std::process::Command::new("git").args(["apply", "-p0", "gke-a4.yaml.patch"]).current_dir(dir.path()).status().unwrap();
        assert!(status.success(), "git apply -p0 failed");
        assert_eq!(std::fs::read_to_string(dir.path().join("gke-a4.yaml")).unwrap(), patched);
    }
}

#[test]
fn diffs_for_spot_and_reservation() {
    let original = upstream_blueprint();
    insta::assert_snapshot!("spot", unified_diff(&original, &patch(&original, &Deployment::default()).unwrap(), "gke-a4.yaml"));
    insta::assert_snapshot!("reservation", unified_diff(&original, &patch(&original, &reservation()).unwrap(), "gke-a4.yaml"));
    insta::assert_snapshot!("flex_start", unified_diff(&original, &patch(&original, &mode("flex-start")).unwrap(), "gke-a4.yaml"));
    insta::assert_snapshot!("on_demand", unified_diff(&original, &patch(&original, &mode("on-demand")).unwrap(), "gke-a4.yaml"));
}

/// Each mode's node pool as gke-node-pool's preconditions want it (main.tf): flex-start and
/// Spot with NO_RESERVATION (the default once the affinity is gone), flex-start without
/// auto-repair or a static node count.
#[test]
fn every_provisioning_mode_meets_the_node_pools_preconditions() {
    let original = upstream_blueprint();
    for (deployment, spot, flex) in
        [(Deployment::default(), true, false), (mode("flex-start"), false, true), (mode("on-demand"), false, false)]
    {
        let patched = patch(&original, &deployment).unwrap();
        assert_eq!(patch(&patched, &deployment).unwrap(), patched, "idempotent");
        let root = Node::parse(&patched).unwrap();
        let pool = module(&root, "a4-pool");
        let setting = |key: &str| pool.get(&["settings", key]).and_then(Node::text);
        assert!(pool.get(&["settings", "reservation_affinity"]).is_none() && root.get(&["vars", "reservation"]).is_none());
        assert_eq!((setting("spot") == Some("true"), setting("enable_flex_start") == Some("true")), (spot, flex));
        if flex {
            assert_eq!((setting("auto_repair"), setting("static_node_count")), (Some("false"), None));
            assert_eq!(setting("autoscaling_total_min_nodes"), Some("0"));
            assert_eq!(setting("autoscaling_total_max_nodes"), Some("$(vars.static_node_count)"));
        }
    }
}

#[test]
fn the_patched_blueprint_passes_the_blueprint_rules() {
    let original = upstream_blueprint();
    for deployment in [Deployment::default(), reservation(), mode("flex-start"), mode("on-demand")] {
        let patched = patch(&original, &deployment).unwrap();
        let artifacts = render(&deployment);
        let mut files: Vec<gke_rl_validate::SourceFile<'_>> =
            artifacts.iter().map(|a| gke_rl_validate::SourceFile { name: a.name, text: &a.contents }).collect();
        files.push(gke_rl_validate::SourceFile { name: "gke-a4.yaml", text: &patched });
        let loud: Vec<_> =
            gke_rl_validate::validate(&files).into_iter().filter(|f| f.diagnostic.severity != gke_rl::Severity::Info).collect();
        assert!(loud.is_empty(), "{loud:#?}");
    }
}

#[test]
fn an_already_uncommented_blueprint_gives_the_same_result() {
    let original = upstream_blueprint();
    let by_hand: String = original
        .lines()
        .map(|l| l.strip_prefix("  # - id: ").map_or_else(|| l.to_owned(), |rest| format!("  - id: {rest}")) + "\n")
        .collect();
    let by_hand = by_hand
        .lines()
        .scan(false, |in_block, l| {
            if l.starts_with("  - id: ") {
                *in_block =
                    ["private_service_access", "lustre_firewall_rule", "managed-lustre", "lustre-pv"].iter().any(|id| l.ends_with(id));
            }
            let line = match l.strip_prefix("  #   ") {
                Some(rest) if *in_block => format!("    {rest}"),
                _ => l.to_owned(),
            };
            Some(line + "\n")
        })
        .collect::<String>();
    let expected = patch(&original, &Deployment::default()).unwrap();
    assert_eq!(patch(&by_hand, &Deployment::default()).unwrap(), expected);
}

fn refused(input: &str, expected: &str) {
    let e = patch(input, &Deployment::default()).unwrap_err();
    assert_eq!(e.code, "blueprint-shape");
    assert!(e.message.contains(expected), "{expected:?} not in {:?}", e.message);
}

#[test]
fn a_renamed_module_is_refused_by_name() {
    let original = upstream_blueprint();
    refused(&original.replace("# - id: managed-lustre", "# - id: managed_lustre"), "no module `managed-lustre`");
    refused(
        &original.replace("source: modules/scheduler/gke-cluster", "source: modules/scheduler/gke-autopilot"),
        "no module with `source: modules/scheduler/gke-cluster`",
    );
}

#[test]
fn the_upstream_blueprint_stages_exactly_the_templates_gke_rl_copies() {
    let original = upstream_blueprint();
    assert_eq!(gke_rl::blueprint::staged_templates(&original), gke_rl::knowledge::STAGED_TEMPLATES);
    let patched = patch(&original, &Deployment::default()).unwrap();
    assert_eq!(gke_rl::blueprint::staged_templates(&patched), gke_rl::knowledge::STAGED_TEMPLATES);
    // A path outside the blueprint's folder, or a file gke-rl would not copy, is refused: the
    // patched blueprint would not deploy from where it is written.
    for staged in ["../../secrets.tftpl", "./extra.yaml.tftpl", "/etc/passwd"] {
        let other = original.replace("./nccl-installer.yaml.tftpl", staged);
        refused(&other, &format!("`$(ghpc_stage(\"{staged}\"))` stages a file gke-rl does not copy"));
    }
}

#[test]
fn a_deleted_lustre_block_is_refused() {
    let original = upstream_blueprint();
    let start = original.find("  # - id: lustre-pv").unwrap();
    let end = start + original[start..].find("\n\n").unwrap();
    refused(&format!("{}{}", &original[..start], &original[end..]), "no module `lustre-pv`");
    let vars = original.replace("  # lustre_size_gib: 36000\n", "");
    refused(&vars, "no var `lustre_size_gib`");
}

#[test]
fn tabs_are_refused_at_their_line() {
    let original = upstream_blueprint();
    let e = patch(&original.replace("  - id: a4-pool", "\t- id: a4-pool"), &Deployment::default()).unwrap_err();
    assert_eq!(e.line as usize, original.lines().position(|l| l == "  - id: a4-pool").unwrap() + 1);
    assert!(e.message.contains("tabs"));
}

/// Found by the blueprint_patch fuzz target: YAML counts a lone CR as a line break, the
/// edits count lines by LF, so an edit could land on the wrong line.
#[test]
fn a_lone_carriage_return_is_refused_at_its_line() {
    let original = upstream_blueprint();
    let e = patch(
        &original.replace("use: [gke-a4-net-0, private_service_access]", "use: [gke-a4-net-0, \rprivate_service_access]"),
        &Deployment::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("carriage return"), "{e:?}");
    assert_eq!(e.line as usize, original.lines().position(|l| l.contains("#   use: [gke-a4-net-0, private_service_access]")).unwrap() + 1);
}

#[test]
fn crlf_line_endings_are_kept() {
    let original = upstream_blueprint();
    let crlf = original.replace('\n', "\r\n");
    let patched = patch(&crlf, &Deployment::default()).unwrap();
    assert_eq!(patched, patch(&original, &Deployment::default()).unwrap().replace('\n', "\r\n"));
}

#[test]
fn the_rendered_rdma_networks_are_the_ones_the_blueprint_creates() {
    let root = Node::parse(&upstream_blueprint()).unwrap();
    let networks = gke_networks(&root);
    let rdma: Vec<String> = (0..8).map(|i| format!("rdma-{i}")).collect();
    assert_eq!(networks.gvnic, ["gvnic-1"]);
    assert_eq!(networks.rdma, rdma);
    let fabric = gke_rl::knowledge::gpu_fabric("a4-highgpu-8g").unwrap();
    let interfaces = gke_rl::render::interfaces(&Deployment::default(), fabric);
    for network in &networks.rdma {
        assert!(interfaces.contains(&format!("\"network\":\"{network}\"")), "{interfaces} lacks {network}");
    }
    assert!(!interfaces.contains("gvnic-1"), "the pods leave the second gVNIC network to the node");

    // k8s_network_names and the subnet count are read, not assumed.
    let renamed = upstream_blueprint().replace("        count: 8\n        ip_range", "        count: 4\n        ip_range").replace(
        "      additional_networks:\n",
        "      k8s_network_names:\n        rdma_prefix: fast-\n        rdma_start_index: 1\n      additional_networks:\n",
    );
    let networks = gke_networks(&Node::parse(&renamed).unwrap());
    assert_eq!(
        (networks.gvnic, networks.rdma),
        (vec!["gvnic-1".to_owned()], vec!["fast-1", "fast-2", "fast-3", "fast-4"].into_iter().map(str::to_owned).collect())
    );
}

/// The Lustre PV module creates the PVC (and its namespace) where the Ray pods run.
#[test]
fn the_pvc_is_created_in_the_rayclusters_namespace() {
    let in_rl = gke_rl::config::from_yaml("ray:\n  namespace: rl\n").unwrap();
    let root = Node::parse(&patch(&upstream_blueprint(), &in_rl).unwrap()).unwrap();
    let pv = module(&root, "lustre-pv");
    assert_eq!(pv.get(&["settings", "namespace"]).and_then(Node::text), Some("rl"));
    let inputs = module_inputs("cluster-toolkit/modules/file-system/gke-persistent-volume/README.md");
    assert!(inputs.iter().any(|i| i == "namespace"), "namespace is an input of gke-persistent-volume: {inputs:?}");
    let default = Node::parse(&patch(&upstream_blueprint(), &Deployment::default()).unwrap()).unwrap();
    assert!(module(&default, "lustre-pv").get(&["settings", "namespace"]).is_none(), "default is the module's default");
}

/// The patcher edits gke-a4 only, and says so for every other family.
#[test]
fn other_families_blueprints_are_named_not_patched() {
    let ultra = gke_rl::config::from_yaml("topology:\n  machine_type: a3-ultragpu-8g\n").unwrap();
    let e = patch(&upstream_blueprint(), &ultra).unwrap_err();
    assert_eq!(e.code, "blueprint-unsupported");
    assert!(
        e.message.contains("a3-ultragpu-8g (A3 Ultra) has Cluster Toolkit's examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml"),
        "{}",
        e.message
    );
    let high = gke_rl::config::from_yaml("topology:\n  machine_type: a3-highgpu-8g\n").unwrap();
    assert!(patch(&upstream_blueprint(), &high).unwrap_err().message.contains("no Cluster Toolkit GKE example blueprint"));
    let theirs = upstream_blueprint().replace("blueprint_name: gke-a4", "blueprint_name: gke-a4x");
    let e = patch(&theirs, &Deployment::default()).unwrap_err();
    assert_eq!((e.code, e.line), ("blueprint-unsupported", 15));
    assert!(e.message.contains("the `gke-a4x` blueprint, for A4X (a4x-highgpu-4g)"), "{}", e.message);
}
