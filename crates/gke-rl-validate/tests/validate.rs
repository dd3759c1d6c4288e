//! The validation engine: silent on every render, loud on the codelab's own files, and each
//! rule proven to fire on a fixture made bad in exactly one way.

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests read fixtures; the library does no I/O

use std::collections::BTreeMap;

use gke_rl::Severity;
use gke_rl_test_support::configs::configs;
use gke_rl_test_support::configs::render;
use gke_rl_test_support::project_root;
use gke_rl_test_support::upstream;
use gke_rl_validate::{Finding, RULES, SourceFile, validate};

type Files = BTreeMap<String, String>;

fn rendered(deployment: &gke_rl::Deployment) -> Files {
    render(deployment).into_iter().map(|a| (a.name.to_owned(), a.contents)).collect()
}

fn check(files: &Files) -> Vec<Finding> {
    let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
    validate(&sources)
}

fn codes(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.diagnostic.code).collect()
}

#[test]
fn every_render_is_free_of_errors_and_warnings() {
    for (config, deployment) in configs() {
        let findings = check(&rendered(&deployment));
        let loud: Vec<_> = findings.iter().filter(|f| f.diagnostic.severity != Severity::Info).collect();
        assert!(loud.is_empty(), "{config}: {loud:#?}");
    }
}

#[test]
fn the_codelab_files_show_their_defects_at_the_right_lines() {
    let dir = project_root().join("tests/fixtures/codelab");
    let files: Files = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "README.md")
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    let findings = check(&files);
    let at = |code: &str, file: &str| {
        findings
            .iter()
            .filter(|f| f.diagnostic.code == code && f.file == file)
            .map(|f| (f.diagnostic.line, f.diagnostic.column))
            .collect::<Vec<_>>()
    };
    assert_eq!(at("ray-version-mismatch", "ray-cluster.yaml"), [(7, 15)], "the Ray version skew");
    assert_eq!(at("secret-literal", "ray_runtime_env_nemo.json"), [(3, 17)], "the token in the runtime env");
    assert_eq!(at("secret-literal", "env.sh"), [(9, 17)], "the token in env.sh");
    assert_eq!(at("override-no-op", "run_nemo_rl.sh"), [(8, 5)], "converter_type");
    assert_eq!(at("placeholder", "env.sh"), [(2, 19)], "placeholder debris");
    let uploads: Vec<&str> =
        findings.iter().filter(|f| f.diagnostic.code == "upload-includes-secrets").map(|f| f.diagnostic.message.as_str()).collect();
    assert!(
        uploads.iter().any(|m| m.contains("includes env.sh (it holds HF_TOKEN on line 9)")),
        "the secrets uploaded with the working dir: {uploads:?}"
    );
    assert!(uploads.iter().any(|m| m.contains("ray_runtime_env_nemo.json")), "{uploads:?}");
    assert_eq!(at("fabric-interfaces-missing", "ray-cluster.yaml"), [(53, 7)], "the workers attach no RDMA network");
    assert_eq!(at("fabric-gib-missing", "ray-cluster.yaml"), [(63, 17)], "the workers do not load gIB");
    assert_eq!(at("head-on-spot", "ray-cluster.yaml"), [(15, 45)], "the head on the Spot GPU nodes");
    // Issue 32, item 8: the network names are not checked because that worker attaches none,
    // which agrees with the finding above; it is not for want of a GPU worker.
    let skipped = validation(&files).skipped;
    let unknown_network = skipped.iter().find(|s| s.code == "fabric-unknown-network").expect("not checked");
    assert!(unknown_network.missing.ends_with("attaches no networks"), "{:?}", unknown_network.missing);
}

#[test]
fn rdma_networks_must_be_the_blueprints() {
    let deployment = gke_rl::Deployment::default();
    let mut files = rendered(&deployment);
    let blueprint = std::fs::read_to_string(upstream("cluster-toolkit/gke-a4.yaml")).unwrap();
    files.insert("gke-a4.yaml".into(), gke_rl::blueprint::patch(&blueprint, &deployment).unwrap());
    assert!(!codes(&check(&files)).contains(&"fabric-unknown-network"), "the render names the blueprint's networks");
    let cluster = files.get_mut("ray-cluster.yaml").unwrap();
    *cluster = cluster.replace("\"network\":\"rdma-7\"", "\"network\":\"roce-7\"");
    let findings = check(&files);
    let unknown: Vec<&Finding> = findings.iter().filter(|f| f.diagnostic.code == "fabric-unknown-network").collect();
    assert_eq!(unknown.len(), 1, "{findings:#?}");
    assert!(unknown[0].diagnostic.message.contains("`roce-7`, which gke-a4.yaml does not create"), "{}", unknown[0].diagnostic.message);
    assert!(codes(&findings).contains(&"fabric-interfaces-missing"), "rdma-7 is no longer attached");
}

#[test]
fn fabric_rules_follow_the_machine_type_and_the_mode() {
    // An off fabric is not checked; a machine without RDMA gets no fabric finding.
    let off: gke_rl::Deployment = gke_rl::config::from_yaml("fabric:\n  mode: \"off\"\n").unwrap();
    let files = rendered(&off);
    assert!(!files["ray-cluster.yaml"].contains("networking.gke.io"), "off renders no fabric");
    assert!(files["ray_runtime_env.json"].contains("NCCL_SOCKET_IFNAME"), "off keeps NCCL's bootstrap on eth0");
    let validation = gke_rl_validate::check(&files.iter().map(|(name, text)| SourceFile { name, text }).collect::<Vec<_>>()).finish();
    assert!(validation.findings.iter().all(|f| !f.diagnostic.code.starts_with("fabric-")), "{:#?}", validation.findings);
    assert!(validation.skipped.iter().any(|s| s.code == "fabric-interfaces-missing" && s.missing.contains("the fabric is off")));
    let mut on_unknown = gke_rl::Deployment::default();
    on_unknown.topology.machine_type = gke_rl::model::Word::new("g2-standard-96").unwrap();
    on_unknown.fabric.mode = gke_rl::model::FabricMode::On;
    let error = gke_rl::render::render(&on_unknown, &gke_rl::RenderOptions { source: "t", regenerate: "t" }).unwrap_err();
    assert!(error.to_string().contains("machine type `g2-standard-96` has no fabric gke-rl wires"), "{error}");
    on_unknown.fabric.mode = gke_rl::model::FabricMode::Auto;
    let auto = gke_rl::render::render(&on_unknown, &gke_rl::RenderOptions { source: "t", regenerate: "t" }).unwrap();
    assert!(
        !auto.ray_cluster.as_ref().expect("cluster mode").contents.contains("networking.gke.io"),
        "auto leaves a machine without RDMA alone"
    );
}

#[test]
fn the_upstream_blueprint_needs_the_codelab_edits() {
    let path = upstream("cluster-toolkit/gke-a4.yaml");
    let mut files = rendered(&gke_rl::Deployment::default());
    files.insert("gke-a4.yaml".into(), std::fs::read_to_string(path).unwrap());
    files.insert("gke-a4-deployment.yaml".into(), files["gke-a4-deployment.yaml"].replace("vars:\n", "vars:\n  spot: true\n"));
    let found = codes(&check(&files));
    for code in ["blueprint-lustre-commented-out", "blueprint-ray-operator-missing", "blueprint-spot-with-reservation"] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
}

/// One defect, made by replacing `from` with `to` in `file` of the default render (or by
/// adding `file` when `from` is empty), reported in `reported_in`: the file whose value to
/// change, which for a cross-file rule may be another one.
struct Case {
    code: &'static str,
    file: &'static str,
    from: &'static str,
    to: &'static str,
    reported_in: &'static str,
}

const fn case(code: &'static str, file: &'static str, from: &'static str, to: &'static str) -> Case {
    Case { code, file, from, to, reported_in: file }
}

const fn case_in(code: &'static str, file: &'static str, from: &'static str, to: &'static str, reported_in: &'static str) -> Case {
    Case { code, file, from, to, reported_in }
}

const MINIMAL_BLUEPRINT: &str = "tests/fixtures/blueprints/minimal.yaml";

const CASES: &[Case] = &[
    case("syntax", "ray-cluster.yaml", "spec:\n", "spec: [\n"),
    case("placeholder", "env.sh", "export REGION=us-east1", "export REGION='<REGION>'"),
    case("number-invalid", "ray-cluster.yaml", "      replicas: 8\n", "      replicas: -8\n"),
    case("ray-version-mismatch", "ray-cluster.yaml", "rayVersion: \"2.46.0\"", "rayVersion: \"2.54.0\""),
    case("crd-schema", "ray-cluster.yaml", "    rayStartParams:", "    rayStartParam:"),
    case("ray-auth-off", "ray-cluster.yaml", "image: nvcr.io/nvidia/nemo-rl:v0.4.0", "image: nvcr.io/nvidia/nemo-rl:v0.6.0"),
    case(
        "ray-auth-unsupported",
        "ray-cluster.yaml",
        "rayVersion: \"2.46.0\"\n",
        "rayVersion: \"2.46.0\"\n  authOptions:\n    mode: token\n",
    ),
    case("ray-unknown-image", "ray-cluster.yaml", "image: nvcr.io/nvidia/nemo-rl:v0.4.0", "image: example.com/trainer:1"),
    case("raycluster-name", "ray-cluster.yaml", "  name: ray-a4-gpu-spot\n", "  name: Ray_A4\n"),
    case("rayjob-invalid", "ray-job.yaml", "  backoffLimit: 0\n", "  backoffLimit: 3\n"),
    case(
        "kueue-inadmissible",
        "ray-job.yaml",
        "  labels:\n    app.kubernetes.io/managed-by: gke-rl\n",
        "  labels:\n    app.kubernetes.io/managed-by: gke-rl\n    kueue.x-k8s.io/queue-name: a5\n",
    ),
    case("ray-start-param-not-string", "ray-cluster.yaml", "rayStartParams: {}", "rayStartParams: {num-cpus: 100}"),
    case("head-dashboard-port-missing", "ray-cluster.yaml", "containerPort: 8265", "containerPort: 8266"),
    case("worker-replicas-out-of-range", "ray-cluster.yaml", "minReplicas: 8", "minReplicas: 9"),
    case(
        "worker-replicas-node-count",
        "ray-cluster.yaml",
        "      replicas: 8\n      minReplicas: 8\n      maxReplicas: 8",
        "      replicas: 4\n      minReplicas: 4\n      maxReplicas: 4",
    ),
    case("gpu-limit-mismatch", "ray-cluster.yaml", "nvidia.com/gpu: \"8\"", "nvidia.com/gpu: \"4\""),
    case(
        "resources-exceed-node",
        "ray-cluster.yaml",
        "memory: \"1000Gi\"\n                  nvidia",
        "memory: \"4000Gi\"\n                  nvidia",
    ),
    case(
        "gpu-toleration-missing",
        "ray-cluster.yaml",
        "          gke-rl/node-role: ray-head\n",
        "          cloud.google.com/gke-accelerator: nvidia-b200\n",
    ),
    case("head-on-spot", "ray-cluster.yaml", "          gke-rl/node-role: ray-head\n", "          cloud.google.com/gke-spot: \"true\"\n"),
    case(
        "volume-duplicate-name",
        "ray-cluster.yaml",
        "            - name: dshm\n              emptyDir:",
        "            - name: lustre\n              emptyDir: {}\n            - name: dshm\n              emptyDir:",
    ),
    case("mount-duplicate-path", "ray-cluster.yaml", "mountPath: /dev/shm", "mountPath: /lustre"),
    case("mount-unknown-volume", "ray-cluster.yaml", "                - name: dshm\n", "                - name: shm\n"),
    case(
        "dev-shm-mounted-twice",
        "ray-cluster.yaml",
        "                - name: lustre\n                  mountPath: /lustre",
        "                - name: lustre\n                  mountPath: /dev/shm",
    ),
    case(
        "fabric-interfaces-missing",
        "ray-cluster.yaml",
        "            networking.gke.io/interfaces: '",
        "            networking.gke.io/other: '",
    ),
    case("fabric-gib-missing", "ray-cluster.yaml", "source /usr/local/gib/scripts/set_nccl_env.sh\n", ""),
    case("fabric-nccl-net", "ray-cluster.yaml", "value: gIB", "value: Socket"),
    case(
        "fabric-ib-disabled",
        "ray_runtime_env.json",
        "\"GLOO_SOCKET_IFNAME\": \"eth0\"",
        "\"GLOO_SOCKET_IFNAME\": \"eth0\",\n    \"NCCL_IB_DISABLE\": \"1\"",
    ),
    case(
        "fabric-not-wired",
        "ray-cluster.yaml",
        "            cloud.google.com/gke-accelerator: nvidia-b200\n",
        "            cloud.google.com/gke-accelerator: nvidia-gb200\n",
    ),
    case("pvc-name-mismatch", "ray-cluster.yaml", "claimName: lustre-pvc", "claimName: rl-demo-gpu-lustre-pvc"),
    case("lustre-tier-unknown", "env.sh", "LUSTRE_THROUGHPUT=1000", "LUSTRE_THROUGHPUT=300"),
    case("lustre-capacity-step", "env.sh", "LUSTRE_CAPACITY=9000", "LUSTRE_CAPACITY=10000"),
    case("lustre-capacity-range", "env.sh", "LUSTRE_CAPACITY=9000", "LUSTRE_CAPACITY=4500"),
    case_in("lustre-too-small", "run_nemo_rl.sh", "checkpointing.keep_top_k=2", "checkpointing.keep_top_k=null", "env.sh"),
    case("checkpoint-save-time", "run_nemo_rl.sh", "", ""),
    case("checkpoint-save-timeout", "env.sh", "LUSTRE_THROUGHPUT=1000", "LUSTRE_THROUGHPUT=125"),
    case_in(
        "checkpoint-save-period",
        "env.sh",
        "EXPECTED_STEP_SECONDS=''\n# minutes between preemptions you expect; with the step time, validate recommends a save period\nexport MEAN_MINUTES_BETWEEN_PREEMPTIONS=''",
        "EXPECTED_STEP_SECONDS=60\n# minutes between preemptions you expect; with the step time, validate recommends a save period\nexport MEAN_MINUTES_BETWEEN_PREEMPTIONS=600",
        "run_nemo_rl.sh",
    ),
    case("path-outside-lustre", "run_nemo_rl.sh", "checkpointing.checkpoint_dir=/lustre/", "checkpointing.checkpoint_dir=/tmp/"),
    case("world-size-parallelism", "run_nemo_rl.sh", "cluster.num_nodes=8", "cluster.num_nodes=3"),
    case("rollout-batch-multiple", "run_nemo_rl.sh", "policy.train_global_batch_size=256", "policy.train_global_batch_size=96"),
    case("global-batch-data-parallel", "run_nemo_rl.sh", "policy.train_global_batch_size=256", "policy.train_global_batch_size=2"),
    case("cluster-size-mismatch", "run_nemo_rl.sh", "cluster.gpus_per_node=8", "cluster.gpus_per_node=4"),
    case("save-period-invalid", "run_nemo_rl.sh", "checkpointing.save_period=2", "checkpointing.save_period=0"),
    case("metric-name-invalid", "run_nemo_rl.sh", "checkpointing.metric_name=null", "checkpointing.metric_name=accuracy"),
    case("dataset-unknown", "run_nemo_rl.sh", "data.dataset_name=DeepScaler", "data.dataset_name=DeepScalar"),
    case(
        "override-no-op",
        "run_nemo_rl.sh",
        "  data.dataset_name",
        "  policy.megatron_cfg.converter_type=Qwen2ForCausalLM \\\n  data.dataset_name",
    ),
    case("override-unknown-key", "run_nemo_rl.sh", "grpo.max_num_steps=20", "grpo.max_steps=20"),
    case("override-quoted-value", "run_nemo_rl.sh", "grpo.max_num_steps=20", "\"grpo.max_num_steps='20'\""),
    case("recipe-unknown", "run_nemo_rl.sh", "--config examples/configs/grpo_math_70B_megatron.yaml", "--config my/recipe.yaml"),
    case_in(
        "nemo-rl-unknown-image",
        "ray-cluster.yaml",
        "image: nvcr.io/nvidia/nemo-rl:v0.4.0",
        "image: example.com/trainer:1",
        "run_nemo_rl.sh",
    ),
    case("recipe-missing", "run_nemo_rl.sh", "configs/grpo_math_70B_megatron.yaml", "configs/grpo_math_70B_megatrn.yaml"),
    case_in("launcher-missing", "ray-cluster.yaml", "nemo-rl:v0.4.0", "nemo-rl:v0.6.0", "run_nemo_rl.sh"),
    case_in("nemo-rl-assumed-layout", "ray-cluster.yaml", "nemo-rl:v0.4.0", "nemo-rl:v0.9.0", "run_nemo_rl.sh"),
    case("model-unknown", "run_nemo_rl.sh", "policy.model_name=Qwen/Qwen2.5-72B-Instruct", "policy.model_name=acme/house-model-7B"),
    case("tp-heads", "run_nemo_rl.sh", "policy.model_name=Qwen/Qwen2.5-72B-Instruct", "policy.model_name=Qwen/Qwen2.5-1.5B-Instruct"),
    case("vllm-tp-heads", "run_nemo_rl.sh", "policy.model_name=Qwen/Qwen2.5-72B-Instruct", "policy.model_name=Qwen/Qwen2.5-7B-Instruct"),
    case(
        "pp-layers",
        "run_nemo_rl.sh",
        "cluster.num_nodes=8 \\\n",
        "cluster.num_nodes=8 \\\n  policy.megatron_cfg.pipeline_model_parallel_size=3 \\\n",
    ),
    case(
        "expert-parallel",
        "run_nemo_rl.sh",
        "cluster.num_nodes=8 \\\n",
        "cluster.num_nodes=8 \\\n  policy.megatron_cfg.expert_model_parallel_size=2 \\\n",
    ),
    case(
        "gpu-memory",
        "run_nemo_rl.sh",
        "cluster.num_nodes=8 \\\n",
        "cluster.num_nodes=8 \\\n  policy.megatron_cfg.tensor_model_parallel_size=1 \\\n  policy.megatron_cfg.pipeline_model_parallel_size=1 \\\n",
    ),
    case("secret-literal", "env.sh", "export REGION=us-east1", "export REGION=us-east1\nexport HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123"),
    case("upload-includes-secrets", ".rayignore", "\nenv.sh\n", "\n"),
    case("runtime-env-env-vars-not-strings", "ray_runtime_env.json", "\"GLOO_SOCKET_IFNAME\": \"eth0\"", "\"GLOO_SOCKET_IFNAME\": 0"),
    case("ray-override-runtime-env-missing", "run_nemo_rl.sh", "export RAY_OVERRIDE_JOB_RUNTIME_ENV=1\n", ""),
    case("zone-not-in-region", "env.sh", "export ZONE=us-east1-b", "export ZONE=us-west1-a"),
    case("count-not-positive", "env.sh", "export NUM_NODES=8", "export NUM_NODES=0"),
    case("gpus-per-node-mismatch", "env.sh", "export GPUS_PER_NODE=8", "export GPUS_PER_NODE=4"),
    case("deployment-name-too-long", "env.sh", "export CLUSTER_NAME=ray-a4-gpu-spot", "export CLUSTER_NAME=ray-a4-gpu-spot-cluster-1"),
    case("authorized-cidr-wide", "gke-a4-deployment.yaml", "  region: us-east1\n", "  region: us-east1\n  authorized_cidr: 0.0.0.0/0\n"),
    case("project-id-empty", "gke-a4-deployment.yaml", "vars:\n", "vars:\n  project_id: \"\"\n"),
    case("blueprint-spot-with-reservation", MINIMAL_BLUEPRINT, "", ""),
    case("blueprint-flex-start-conflict", MINIMAL_BLUEPRINT, "", ""),
    case("blueprint-lustre-commented-out", MINIMAL_BLUEPRINT, "", ""),
    case("blueprint-ray-operator-missing", MINIMAL_BLUEPRINT, "", ""),
    case("blueprint-var-and-setting", MINIMAL_BLUEPRINT, "", ""),
];

fn apply(case: &Case) -> Files {
    let mut files = rendered(&gke_rl::Deployment::default());
    // The default in RayJob mode gives the RayJob.
    if case.file == "ray-job.yaml" {
        let mut rayjob = gke_rl::Deployment::default();
        rayjob.job.mode = gke_rl::model::JobMode::Rayjob;
        files.insert(case.file.to_owned(), rendered(&rayjob).remove(case.file).expect("a RayJob"));
    }
    if case.from.is_empty() {
        if case.file.starts_with("tests/") {
            files.insert(case.file.to_owned(), std::fs::read_to_string(project_root().join(case.file)).unwrap());
        }
        return files;
    }
    let text = files.get_mut(case.file).unwrap_or_else(|| panic!("no {}", case.file));
    assert!(text.contains(case.from), "{}: `{}` is not in {}", case.code, case.from, case.file);
    *text = text.replace(case.from, case.to);
    files
}

#[test]
fn each_rule_fires_on_its_defect_and_only_there() {
    let clean = codes(&check(&rendered(&gke_rl::Deployment::default())));
    for case in CASES {
        let findings = check(&apply(case));
        let hits: Vec<&Finding> = findings.iter().filter(|f| f.diagnostic.code == case.code).collect();
        assert!(!hits.is_empty(), "{} did not fire: {:#?}", case.code, codes(&findings));
        let file = case.reported_in.rsplit('/').next().unwrap();
        assert!(
            hits.iter().any(|f| f.file.ends_with(file)),
            "{} fired on {:?}, not {file}",
            case.code,
            hits.iter().map(|f| &f.file).collect::<Vec<_>>()
        );
        let rule = RULES.iter().find(|r| r.code == case.code).expect("registered");
        let silent_on_default = rule.severity == Severity::Info || !clean.contains(&case.code);
        assert!(silent_on_default, "{} fires on the default render", case.code);
    }
}

/// The head on the system pool must fit its e2-standard-16; on its own pool, its machine.
#[test]
fn the_head_must_fit_the_pool_it_runs_on() {
    let mut on_system = gke_rl::Deployment::default();
    on_system.ray.head.node_pool = gke_rl::model::HeadNodePool::System;
    let findings = check(&rendered(&on_system));
    let exceeds: Vec<_> = findings.iter().filter(|f| f.diagnostic.code == "resources-exceed-node").collect();
    assert_eq!(exceeds.len(), 1, "{findings:#?}");
    assert_eq!(exceeds[0].diagnostic.message, "the head requests 64Gi memory; an e2-standard-16 node can allocate about 58Gi");
    // Issue 52: the help names the config's key.
    assert!(exceeds[0].diagnostic.help.starts_with("lower ray.head.memory_request in the config"), "{}", exceeds[0].diagnostic.help);
    on_system.ray.head.memory_request = gke_rl::model::Quantity::new("32Gi").unwrap();
    assert!(!codes(&check(&rendered(&on_system))).contains(&"resources-exceed-node"));

    let mut small = gke_rl::Deployment::default();
    small.ray.head.machine_type = gke_rl::model::Word::new("n2-highmem-8").unwrap();
    let findings = check(&rendered(&small));
    let exceeds: Vec<_> = findings.iter().filter(|f| f.diagnostic.code == "resources-exceed-node").map(|f| &f.diagnostic.message).collect();
    assert_eq!(
        exceeds,
        [
            "the head requests 8 cpu; an n2-highmem-8 node can allocate about 7.91",
            "the head requests 64Gi memory; an n2-highmem-8 node can allocate about 58Gi"
        ]
    );
}

/// The codelab's head on the GPU nodes is a warning when they are Spot: as the blueprint's GPU
/// pool says (what gcluster provisions), else as env.sh says, else Spot (the default); never on
/// reserved, on-demand or flex-start nodes. A head selecting GKE's Spot labels is one too.
#[test]
fn a_head_on_the_gpu_nodes_is_a_warning_when_they_are_spot() {
    let head_on_spot = |files: &Files| -> Vec<String> {
        check(files).into_iter().filter(|f| f.diagnostic.code == "head-on-spot").map(|f| f.diagnostic.message).collect()
    };
    let on_gpu = |provisioning: &str| -> (gke_rl::Deployment, Files) {
        let mut d: gke_rl::Deployment = gke_rl::config::from_yaml(&format!("topology:\n  provisioning: {provisioning}\n")).unwrap();
        d.ray.head.node_pool = gke_rl::model::HeadNodePool::Gpu;
        let files = rendered(&d);
        (d, files)
    };
    let upstream_blueprint = std::fs::read_to_string(upstream("cluster-toolkit/gke-a4.yaml")).unwrap();
    let line_of = |text: &str, line: &str| text.lines().position(|l| l.trim() == line).unwrap() + 1;

    let (spot, mut files) = on_gpu("spot");
    let env = files.remove("env.sh").unwrap();
    let with_env = |files: &Files, env: &str| -> Files {
        let mut files = files.clone();
        files.insert("env.sh".into(), env.to_owned());
        files
    };
    let at = line_of(&env, "export PROVISIONING=spot");
    let expected = format!(
        "the head runs on the GPU nodes, which are Spot (env.sh:{at}): a preempted node takes the whole Ray cluster and the run with it"
    );
    assert_eq!(head_on_spot(&with_env(&files, &env)), [expected]);
    assert!(head_on_spot(&files)[0].contains("Spot unless said otherwise"), "nothing says: the default");
    let placeholder = env.replace("export RESERVATION=''", "export RESERVATION='{{RESERVATION}}'");
    assert!(
        head_on_spot(&with_env(&files, &placeholder))[0].contains(&format!("Spot (env.sh:{at})")),
        "a placeholder names no reservation"
    );
    for reserved in
        ["export PROVISIONING=on-demand", "export PROVISIONING=flex-start", "export RESERVATION=a4-res\nexport PROVISIONING=reservation"]
    {
        let env = env.replace("export RESERVATION=''\n", "").replace("export PROVISIONING=spot", reserved);
        assert_eq!(head_on_spot(&with_env(&files, &env)), Vec::<String>::new(), "{reserved}");
    }

    // The blueprint says what is provisioned, over env.sh.
    let patched = gke_rl::blueprint::patch(&upstream_blueprint, &spot).unwrap();
    files.insert("gke-a4.yaml".into(), patched.clone());
    let on_demand_env = env.replace("export PROVISIONING=spot", "export PROVISIONING=on-demand");
    let found = head_on_spot(&with_env(&files, &on_demand_env));
    assert!(found[0].contains(&format!("Spot (gke-a4.yaml:{})", line_of(&patched, "spot: true"))), "{found:?}");
    let (on_demand, _) = on_gpu("on-demand");
    files.insert("gke-a4.yaml".into(), gke_rl::blueprint::patch(&upstream_blueprint, &on_demand).unwrap());
    assert_eq!(head_on_spot(&with_env(&files, &env)), Vec::<String>::new(), "an on-demand pool has no marker");
    files.insert("gke-a4.yaml".into(), upstream_blueprint.clone());
    assert_eq!(head_on_spot(&files), Vec::<String>::new(), "upstream's pool consumes a specific reservation");
    let by_var = patched.replace("spot: true", "spot: $(vars.spot)");
    files.insert("gke-a4.yaml".into(), by_var);
    let deployment_file = files["gke-a4-deployment.yaml"].clone();
    assert_eq!(head_on_spot(&files), Vec::<String>::new(), "`spot: $(vars.spot)` with no such var");
    files.insert("gke-a4-deployment.yaml".into(), deployment_file.replace("vars:\n", "vars:\n  spot: true\n"));
    assert_eq!(head_on_spot(&files).len(), 1, "`spot: $(vars.spot)` reads the deployment file's var");
    files.remove("gke-a4.yaml");

    // GKE's Spot labels, whatever the pool; an explicit non-Spot GPU node is not one.
    let (_, labelled) = on_gpu("on-demand");
    let selector = "          cloud.google.com/gke-accelerator: nvidia-b200\n";
    assert!(labelled["ray-cluster.yaml"].contains(selector));
    for (label, fires) in [
        ("cloud.google.com/gke-spot: \"true\"", true),
        ("cloud.google.com/gke-provisioning: spot", true),
        ("cloud.google.com/gke-spot: \"false\"", false),
    ] {
        let mut files = labelled.clone();
        let cluster = files["ray-cluster.yaml"].replacen(selector, &format!("{selector}          {label}\n"), 1);
        files.insert("ray-cluster.yaml".into(), cluster);
        files.insert("env.sh".into(), env.clone());
        assert_eq!(!head_on_spot(&files).is_empty(), fires, "{label}: {:?}", head_on_spot(&files));
    }
}

/// The flex-start rule says what gke-node-pool's own preconditions say, word for word, so the
/// finding matches the terraform plan failure it saves the user from.
#[test]
fn flex_start_conflicts_quote_the_node_pools_preconditions() {
    let main_tf = std::fs::read_to_string(upstream("cluster-toolkit/modules/compute/gke-node-pool/main.tf")).unwrap();
    let blueprint = std::fs::read_to_string(project_root().join(MINIMAL_BLUEPRINT)).unwrap();
    let findings = check(&Files::from([("gke-a4.yaml".to_owned(), blueprint)]));
    let quoted: Vec<&str> = findings
        .iter()
        .filter(|f| f.diagnostic.code == "blueprint-flex-start-conflict")
        .map(|f| f.diagnostic.message.strip_prefix("flex-start node pool: ").unwrap())
        .collect();
    assert_eq!(quoted.len(), 2, "static_node_count and auto_repair: {findings:#?}");
    for precondition in quoted {
        assert!(main_tf.contains(precondition), "not in gke-node-pool's main.tf: {precondition}");
    }
}

#[test]
fn every_rule_has_a_case() {
    // Tested on their own: the network names with the upstream blueprint.
    // The PVC's namespace with a patched blueprint.
    // The checkpoint deadline with flex-start and a measured step time (two settings apart).
    let special = ["file-too-large", "fabric-unknown-network", "pvc-namespace-mismatch", "checkpoint-deadline"];
    for rule in RULES {
        assert!(CASES.iter().any(|c| c.code == rule.code) || special.contains(&rule.code), "rule {} has no test case", rule.code);
    }
}

#[test]
fn template_debris_in_yaml_is_reported_not_a_syntax_error() {
    let mut files = rendered(&gke_rl::Deployment::default());
    let cluster = files.get_mut("ray-cluster.yaml").unwrap();
    *cluster = cluster.replace("claimName: lustre-pvc", "claimName: {{'<pvc-name>'}}");
    let findings = check(&files);
    let placeholder: Vec<_> = findings
        .iter()
        .filter(|f| f.diagnostic.code == "placeholder")
        .map(|f| (f.file.as_str(), f.diagnostic.line, f.diagnostic.column))
        .collect();
    assert_eq!(placeholder, [("ray-cluster.yaml", 69, 26), ("ray-cluster.yaml", 178, 28)]);
    assert!(!codes(&findings).contains(&"syntax"), "{findings:#?}");
}

#[test]
fn many_files_are_checked_in_parallel_with_the_same_findings() {
    let bad = apply(CASES.iter().find(|c| c.code == "ray-version-mismatch").unwrap());
    let mut files = rendered(&gke_rl::Deployment::default());
    for i in 0..24 {
        files.insert(format!("cluster-{i:02}.yaml"), bad["ray-cluster.yaml"].clone());
    }
    let findings = check(&files);
    let skew: Vec<&str> = findings.iter().filter(|f| f.diagnostic.code == "ray-version-mismatch").map(|f| f.file.as_str()).collect();
    let expected: Vec<String> = (0..24).map(|i| format!("cluster-{i:02}.yaml")).collect();
    assert_eq!(skew, expected, "one finding per copy, in file order");
    assert_eq!(findings, check(&files), "deterministic");
}

#[test]
fn huge_files_are_refused_not_parsed() {
    let huge = "#".repeat(gke_rl_validate::MAX_FILE_BYTES + 1);
    let findings = validate(&[SourceFile { name: "env.sh", text: &huge }]);
    assert_eq!(codes(&findings), ["file-too-large"]);
}

#[test]
fn findings_serialize_with_exactly_the_documented_fields() {
    let findings = check(&apply(&CASES[2]));
    let json = serde_json::to_value(&findings).unwrap();
    for finding in json.as_array().unwrap() {
        let mut keys: Vec<&str> = finding.as_object().unwrap().keys().map(String::as_str).filter(|&key| key != "fix").collect();
        keys.sort();
        assert_eq!(keys, ["code", "column", "file", "help", "line", "message", "severity"]);
    }
    // A fix, where there is one, is an edit.
    let fixable = check(&apply(CASES.iter().find(|case| case.code == "ray-version-mismatch").unwrap()));
    let fix = serde_json::to_value(fixable.iter().find(|f| f.diagnostic.fix.is_some()).unwrap()).unwrap()["fix"].clone();
    let mut keys: Vec<&str> = fix.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["column", "end_column", "end_line", "line", "text", "title"]);
    let sarif = gke_rl_validate::sarif(&validation(&apply(CASES.iter().find(|case| case.code == "ray-version-mismatch").unwrap())));
    let result = sarif["runs"][0]["results"].as_array().unwrap().iter().find(|r| r["ruleId"] == "ray-version-mismatch").unwrap();
    let replacement = &result["fixes"][0]["artifactChanges"][0]["replacements"][0];
    assert_eq!((&replacement["deletedRegion"]["startLine"], &replacement["insertedContent"]["text"]), (&fix["line"], &fix["text"]));
    let validation = validation(&codelab_style(&apply(&CASES[2])));
    let json = serde_json::to_value(&validation).unwrap();
    let mut keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["findings", "rules", "rules_checked", "skipped"]);
    for skipped in json["skipped"].as_array().unwrap() {
        let mut keys: Vec<&str> = skipped.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["code", "enable", "missing"]);
    }
    let sarif = gke_rl_validate::sarif(&validation);
    let findings = &validation.findings;
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), findings.len());
    assert_eq!(sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"], findings[0].diagnostic.line);
    let notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"].as_array().unwrap();
    assert_eq!(notes.len(), validation.skipped.len(), "every rule not checked is a notification");
    assert!(notes.iter().any(|n| n["descriptor"]["id"] == "rayjob-invalid" && n["level"] == "note"), "{notes:#?}");
}

#[test]
fn crd_schema_errors_point_at_the_field() {
    let path = upstream("kuberay/ray.io_rayclusters.yaml");
    let crd = gke_rl_validate::CrdSchema::from_crd(&std::fs::read_to_string(path).unwrap(), true).unwrap();
    let mut files = rendered(&gke_rl::Deployment::default());
    let sources = |files: &Files| files.iter().map(|(name, text)| (name.clone(), text.clone())).collect::<Vec<_>>();
    let run = |files: &Files| {
        let owned = sources(files);
        let sources: Vec<SourceFile<'_>> = owned.iter().map(|(name, text)| SourceFile { name, text }).collect();
        gke_rl_validate::validate_with_crd(&sources, &crd)
    };
    assert!(!codes(&run(&files)).contains(&"crd-schema"));
    let cluster = files.get_mut("ray-cluster.yaml").unwrap();
    *cluster = cluster.replace("        tolerations:\n", "        toleration:\n");
    let findings = run(&files);
    let schema: Vec<_> = findings.iter().filter(|f| f.diagnostic.code == "crd-schema").collect();
    assert!(!schema.is_empty(), "{findings:#?}");
    assert_eq!((schema[0].diagnostic.line, schema[0].diagnostic.column), (85, 11), "{:?}", schema[0]);

    // The same schema given as JSON, or as a bare JSON Schema, checks the same.
    let crd_yaml = std::fs::read_to_string(upstream("kuberay/ray.io_rayclusters.yaml")).unwrap();
    let crd_json: serde_json::Value = serde_saphyr::from_str(&crd_yaml).unwrap();
    let bare = gke_rl_validate::json_schema(&crd_yaml, false).unwrap();
    for text in [crd_json.to_string(), bare.to_string()] {
        assert_eq!(gke_rl_validate::json_schema(&text, true).unwrap(), gke_rl_validate::json_schema(&crd_yaml, true).unwrap());
    }
    assert!(gke_rl_validate::json_schema("{\"kind\": \"Pod\"}", true).is_err());
}

/// The files a codelab user has: the render without gcluster's deployment file.
fn codelab_style(files: &Files) -> Files {
    files.iter().filter(|(name, _)| name.as_str() != "gke-a4-deployment.yaml").map(|(n, t)| (n.clone(), t.clone())).collect()
}

fn validation(files: &Files) -> gke_rl_validate::Validation {
    let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
    gke_rl_validate::check(&sources).finish()
}

fn codelab_fixtures() -> Files {
    let dir = project_root().join("tests/fixtures/codelab");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "README.md")
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect()
}

/// Every rule ran or says what it lacked, on every set users have: the full render, the
/// codelab-style set, the codelab's own files, each file alone, and nothing.
#[test]
fn every_rule_runs_or_says_why_not_on_each_file_set() {
    let full = rendered(&gke_rl::Deployment::default());
    let mut sets: Vec<(String, Files)> = vec![
        ("the full render".into(), full.clone()),
        ("the codelab-style set".into(), codelab_style(&full)),
        ("the codelab's files".into(), codelab_fixtures()),
    ];
    for (name, text) in &full {
        sets.push((format!("{name} alone"), Files::from([(name.clone(), text.clone())])));
    }
    sets.push(("no file".into(), Files::new()));
    for (set, files) in sets {
        let v = validation(&files);
        assert!(v.unaccounted.is_empty(), "{set}: rules neither ran nor said why: {:?}", v.unaccounted);
        assert_eq!(v.rules_checked + v.skipped.len(), RULES.len(), "{set}: every rule is counted once");
        for skipped in &v.skipped {
            assert!(!skipped.missing.is_empty() && !skipped.enable.is_empty(), "{set}: {skipped:?}");
        }
    }
    let full = validation(&rendered(&gke_rl::Deployment::default()));
    let skipped: Vec<&str> = full.skipped.iter().map(|s| s.code).collect();
    // The default config names no project or authorized CIDR (env.sh reads them at run time),
    // its Spot nodes have no checkpoint deadline, it states no step time or preemption rate (no
    // save period to plan), it runs in cluster mode (no RayJob, no queue), and no blueprint or
    // CRD was given: everything else is checked.
    let expected = |code: &&str| {
        code.starts_with("blueprint-")
            || code.starts_with("rayjob-")
            || [
                "crd-schema",
                "kueue-inadmissible",
                "project-id-empty",
                "authorized-cidr-wide",
                "fabric-unknown-network",
                "pvc-namespace-mismatch",
                "checkpoint-deadline",
                "checkpoint-save-period",
            ]
            .contains(code)
    };
    assert!(skipped.iter().all(expected), "the full render checks all else: {skipped:?}");
}

/// Each rule on the files a codelab user has: it fires on its defect there too, unless what it
/// checks lives only in gcluster's deployment file or the blueprint, and then it says so.
#[test]
fn each_rule_fires_on_the_codelab_style_set_or_names_the_file_it_needs() {
    for case in CASES {
        let needs_other_files = case.file == "gke-a4-deployment.yaml" || case.file == MINIMAL_BLUEPRINT;
        let v = validation(&codelab_style(&apply(case)));
        let fired = v.findings.iter().any(|f| f.diagnostic.code == case.code);
        if needs_other_files {
            let skipped = v.skipped.iter().find(|s| s.code == case.code);
            assert!(fired || skipped.is_some(), "{}: neither fired nor said what it needs", case.code);
        } else {
            assert!(
                fired,
                "{} did not fire on the codelab-style set; skipped: {:?}",
                case.code,
                v.skipped.iter().find(|s| s.code == case.code)
            );
        }
    }
}

/// The two examples of the issue: a checkpoint_dir or an HF_HOME outside the Lustre mount, in
/// the codelab's own files (no deployment file, no Lustre tier).
#[test]
fn paths_outside_lustre_are_found_in_the_codelab_files() {
    let mut files = codelab_fixtures();
    let script = files.get_mut("run_nemo_rl.sh").unwrap();
    *script = script.replace("checkpointing.checkpoint_dir=/lustre/", "checkpointing.checkpoint_dir=/scratch/");
    let env = files.get_mut("ray_runtime_env_nemo.json").unwrap();
    *env = env.replace("\"HF_HOME\": \"/lustre/", "\"HF_HOME\": \"/scratch/");
    let outside: Vec<(String, u32)> =
        check(&files).into_iter().filter(|f| f.diagnostic.code == "path-outside-lustre").map(|f| (f.file, f.diagnostic.line)).collect();
    // Line 6: the codelab leaves logger.log_dir at the recipe's `logs`, on the pod's own disk.
    assert_eq!(outside, [("ray_runtime_env_nemo.json".to_owned(), 5), ("run_nemo_rl.sh".to_owned(), 6), ("run_nemo_rl.sh".to_owned(), 21)]);
    let v = validation(&codelab_fixtures());
    let sizing = v.skipped.iter().find(|s| s.code == "lustre-capacity-step").expect("sizing is not checked");
    assert_eq!(sizing.missing, "no Lustre throughput tier", "{sizing:?}");
}

/// A literal token is found in every kind of artifact, by the name of its variable or by its
/// shape, at the value (issue 13, item 7).
#[test]
fn literal_tokens_are_found_in_every_artifact_by_name_and_shape() {
    const HF: &str = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345";
    let head_env = "            env:\n              - name: HF_TOKEN\n";
    let worker_env = "                  value: gIB\n                - name: HF_TOKEN\n";
    let cases: [(&str, &str, String, u32); 8] = [
        ("ray-cluster.yaml", head_env, format!("{head_env}                value: {HF}\n              - name: X\n"), 40),
        ("ray-cluster.yaml", worker_env, format!("{worker_env}                  value: secret-by-name\n                - name: X\n"), 147),
        (
            "ray-cluster.yaml",
            head_env,
            format!(
                "{head_env}                value: x\n              - name: MY_WANDB\n                value: 0123456789abcdef0123456789abcdef01234567\n              - name: X\n"
            ),
            42,
        ),
        (
            "gke-a4-deployment.yaml",
            "  region: us-east1\n",
            "  region: us-east1\n  github: ghp_0123456789abcdefghij0123456789abcdef\n".into(),
            9,
        ),
        (
            "ray_runtime_env.json",
            "\"env_vars\": {",
            "\"pip\": [\"--index-url https://me:s3cret@pypi.example.com/simple\"],\n  \"env_vars\": {".into(),
            2,
        ),
        (
            "env.sh",
            "export REGION=us-east1",
            "export REGION=us-east1\nexport MY_KEY_FOR_WANDB=0123456789abcdef0123456789abcdef01234567".into(),
            10,
        ),
        ("env.sh", "export REGION=us-east1", format!("export REGION=us-east1\nexport MIRROR=https://bot:{HF}@example.com"), 10),
        ("run_nemo_rl.sh", "set -euo pipefail\n", format!("set -euo pipefail\ngit clone https://x:{HF}@github.com/me/repo\n"), 5),
    ];
    for (file, from, to, line) in cases {
        let mut files = rendered(&gke_rl::Deployment::default());
        let text = files.get_mut(file).unwrap();
        assert!(text.contains(from), "{file}: {from:?}");
        *text = text.replacen(from, &to, 1);
        let findings = check(&files);
        let found: Vec<_> =
            findings.iter().filter(|f| f.diagnostic.code == "secret-literal" && f.file == file).map(|f| f.diagnostic.line).collect();
        assert!(found.contains(&line), "{file} line {line} ({to:?}): {findings:#?}");
        for finding in &findings {
            assert!(!finding.diagnostic.message.contains(HF) && !finding.diagnostic.message.contains("s3cret"), "{finding:?}");
        }
    }
}

/// Each fix a finding carries, made to its file, takes that finding away and adds none: on the
/// codelab's files, each rule's defect, and tokens written in YAML and in the job script. The
/// rules whose help is a concrete edit carry one.
#[test]
fn fixes_take_their_findings_away() {
    const HF: &str = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345";
    let mut sets: Vec<(String, Files)> = vec![("the codelab".into(), codelab_fixtures())];
    sets.extend(CASES.iter().map(|case| (case.code.to_owned(), apply(case))));
    let mut tokens = rendered(&gke_rl::Deployment::default());
    let cluster = tokens.get_mut("ray-cluster.yaml").unwrap();
    *cluster = cluster.replacen(
        "              - name: HF_TOKEN\n",
        &format!("              - name: HF_TOKEN\n                value: '{HF}' # no\n"),
        1,
    );
    let script = tokens.get_mut("run_nemo_rl.sh").unwrap();
    *script = script.replacen("set -euo pipefail\n", &format!("set -euo pipefail\ngit clone https://x:{HF}@github.com/é/repo\n"), 1);
    tokens.insert(".rayignore".into(), "# nothing excluded".into());
    sets.push(("tokens".into(), tokens.clone()));
    // Where deleting the value would delete more than the token, or the text at the finding is
    // not the scalar (an alias, a flow list), no fix is offered; and a file name that is no
    // pattern of itself gets no `.rayignore` line.
    let cluster = tokens.get_mut("ray-cluster.yaml").unwrap();
    *cluster = cluster.replacen(&format!("'{HF}' # no"), &format!("&t \"x {HF}\"\n              - name: Y\n                value: *t"), 1);
    assert!(cluster.contains("command: ["), "{cluster}");
    *cluster = cluster.replacen("command: [", &format!("command: [\"{HF}\", "), 1);
    let script = tokens.get_mut("run_nemo_rl.sh").unwrap();
    // A reference in a URL is where a token goes, not one.
    *script = script.replacen("set -euo pipefail\n", "set -euo pipefail\ngit clone https://x:${HF_TOKEN}@github.com/me/repo\n", 1);
    let env = tokens.remove("env.sh").unwrap();
    tokens.insert("[e]nv.sh".into(), format!("{env}export HF_TOKEN={HF}\n"));
    let unfixable = check(&tokens);
    let about =
        |f: &&Finding| (f.file == "ray-cluster.yaml" && f.diagnostic.code == "secret-literal") || f.diagnostic.message.contains("[e]nv.sh");
    assert!(unfixable.iter().filter(about).count() >= 3, "{unfixable:#?}");
    let offered: Vec<_> = unfixable.iter().filter(about).filter(|f| f.diagnostic.fix.is_some()).collect();
    assert!(!unfixable.iter().any(|f| f.file == "run_nemo_rl.sh" && f.diagnostic.line == 5), "{unfixable:#?}");
    assert!(offered.is_empty(), "{offered:#?}");
    assert!(
        unfixable.iter().filter(|f| f.diagnostic.code == "secret-literal" && f.file == "ray-cluster.yaml").count() >= 2,
        "{unfixable:#?}"
    );
    let mut fixed_codes = std::collections::BTreeSet::new();
    for (name, files) in sets {
        let findings = check(&files);
        for finding in findings.iter().filter(|f| f.diagnostic.fix.is_some()) {
            let fix = finding.diagnostic.fix.as_ref().unwrap();
            let fixed = fix.apply(&files[&finding.file]).unwrap_or_else(|| panic!("{name}: {fix:?} is not in {}", finding.file));
            let mut after = files.clone();
            after.insert(finding.file.clone(), fixed);
            let left = check(&after);
            let same = |f: &&Finding| {
                f.file == finding.file && f.diagnostic.code == finding.diagnostic.code && f.diagnostic.message == finding.diagnostic.message
            };
            assert!(!left.iter().any(|f| same(&f)), "{name}: `{}` leaves {finding:#?}", fix.title);
            let new: Vec<&Finding> =
                left.iter().filter(|f| !findings.iter().any(|g| g.file == f.file && g.diagnostic.code == f.diagnostic.code)).collect();
            assert!(new.is_empty(), "{name}: `{}` adds {new:#?}", fix.title);
            fixed_codes.insert(finding.diagnostic.code);
        }
    }
    assert_eq!(fixed_codes.into_iter().collect::<Vec<_>>(), ["ray-version-mismatch", "secret-literal", "upload-includes-secrets"]);
}

/// Suspending, by `gke-rl suspend`, `submit --then suspend` or the idle guard, is the merge
/// patch `{"spec": {"suspend": true}}`: the RayCluster it leaves must still match the CRD.
#[test]
fn a_suspended_raycluster_matches_the_crd() {
    assert!(
        gke_rl_in_cluster::guard::program().contains(r#"{"spec": {"suspend": True}}"#),
        "the guard's patch body is the one checked here"
    );
    let crd =
        gke_rl_validate::CrdSchema::from_crd(&std::fs::read_to_string(upstream("kuberay/ray.io_rayclusters.yaml")).unwrap(), true).unwrap();
    let check = |suspend: &str| {
        let mut files = rendered(&gke_rl::Deployment::default());
        let cluster = files.get_mut("ray-cluster.yaml").unwrap();
        assert!(cluster.contains("\nspec:\n"), "{cluster}");
        *cluster = cluster.replacen("\nspec:\n", &format!("\nspec:\n  suspend: {suspend}\n"), 1);
        let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
        codes(&gke_rl_validate::validate_with_crd(&sources, &crd)).contains(&"crd-schema")
    };
    assert!(!check("true"), "spec.suspend: true is in the CRD");
    assert!(check("\"soon\""), "the CRD types spec.suspend, so a wrong value is caught");
}

/// A schema given for a kind takes the place of the built-in one; a second of that kind is
/// refused, and both kinds may be given.
#[test]
fn one_crd_schema_per_kind() {
    use gke_rl_validate::{CrdSchema, crd::Kind};
    let files = rendered(&gke_rl::Deployment::default());
    let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
    let (cluster, job) = (CrdSchema::kuberay(Kind::RayCluster), CrdSchema::kuberay(Kind::RayJob));
    let both = gke_rl_validate::check(&sources).crd(&cluster).and_then(|checked| checked.crd(&job));
    assert!(both.is_ok_and(|checked| !codes(&checked.findings()).contains(&"crd-schema")));
    let twice = gke_rl_validate::check(&sources).crd(&cluster).and_then(|checked| checked.crd(&cluster));
    assert!(matches!(twice, Err(gke_rl_validate::CrdError::KindGiven { kind: "RayCluster" })));
}

/// A RayCluster outside `default` needs its Lustre PVC in its own namespace: the blueprint
/// patch puts it there, and validate catches a blueprint that does not.
#[test]
fn the_pvc_follows_the_raycluster_into_its_namespace() {
    let mut in_rl = gke_rl::Deployment::default();
    in_rl.ray.namespace = gke_rl::model::Name::new("rl").unwrap();
    let upstream_blueprint = std::fs::read_to_string(upstream("cluster-toolkit/gke-a4.yaml")).unwrap();
    let run = |blueprint_for: &gke_rl::Deployment| {
        let mut files = rendered(&in_rl);
        files.insert("gke-a4.yaml".into(), gke_rl::blueprint::patch(&upstream_blueprint, blueprint_for).unwrap());
        check(&files)
    };
    let patched = run(&in_rl);
    assert!(!codes(&patched).contains(&"pvc-namespace-mismatch"), "{patched:#?}");
    let stale = run(&gke_rl::Deployment::default());
    let mismatch: Vec<_> = stale.iter().filter(|f| f.diagnostic.code == "pvc-namespace-mismatch").collect();
    assert_eq!(mismatch.len(), 1, "{stale:#?}");
    assert_eq!((mismatch[0].file.as_str(), mismatch[0].diagnostic.line), ("ray-cluster.yaml", 6));
    assert!(mismatch[0].diagnostic.message.contains("namespace `rl`, but the blueprint creates the Lustre PVC in `default`"));
}

/// Logs and download caches belong on Lustre too, wherever they are set.
#[test]
fn logs_and_caches_off_lustre_are_named_with_what_is_lost() {
    let mut files = rendered(&gke_rl::Deployment::default());
    let script = files.get_mut("run_nemo_rl.sh").unwrap();
    *script = script.replace("logger.log_dir=/lustre/logs", "logger.log_dir=logs");
    let cluster = files.get_mut("ray-cluster.yaml").unwrap();
    *cluster = cluster.replacen(
        "            env:\n",
        "            env:\n              - name: HF_HOME\n                value: /root/.cache/huggingface\n",
        1,
    );
    let findings = check(&files);
    let paths: Vec<(&str, &str)> = findings
        .iter()
        .filter(|f| f.diagnostic.code == "path-outside-lustre")
        .map(|f| (f.file.as_str(), f.diagnostic.message.as_str()))
        .collect();
    assert_eq!(paths.len(), 2, "{findings:#?}");
    assert!(
        paths.iter().any(|(file, m)| *file == "run_nemo_rl.sh" && m.contains("logger.log_dir `logs`") && m.contains("go with the pod"))
    );
    assert!(paths.iter().any(|(file, m)| *file == "ray-cluster.yaml"
        && m.contains("HF_HOME `/root/.cache/huggingface`")
        && m.contains("every node downloads Qwen/Qwen2.5-72B-Instruct (145 GB in bf16) again")));
}

/// Token authentication as KubeRay and Ray decide it: by `rayVersion` (which KubeRay needs)
/// and the image's Ray; set by `authOptions`, or by Ray's own variables in the container.
#[test]
fn token_authentication_is_checked_as_kuberay_and_ray_decide_it() {
    let mut d = gke_rl::Deployment::default();
    d.ray.image = gke_rl::model::Word::new("nvcr.io/nvidia/nemo-rl:v0.6.0").unwrap();
    let files = rendered(&d);
    let auth = |edit: &dyn Fn(&str) -> String| -> Vec<(&'static str, String)> {
        let mut files = files.clone();
        let cluster = files.get_mut("ray-cluster.yaml").unwrap();
        *cluster = edit(cluster);
        check(&files)
            .into_iter()
            .filter(|f| f.diagnostic.code.starts_with("ray-auth"))
            .map(|f| (f.diagnostic.code, f.diagnostic.message))
            .collect()
    };
    assert_eq!(auth(&|c| c.to_owned()), [], "the render has tokens");
    let without = |c: &str| c.replace("  authOptions:\n    mode: token\n    secretName: ray-a4-gpu-spot-ray-token\n", "");
    assert_eq!(auth(&without).iter().map(|f| f.0).collect::<Vec<_>>(), ["ray-auth-off"]);
    let by_hand = |c: &str| {
        without(c).replacen(
            "            env:\n",
            "            env:\n              - name: RAY_AUTH_MODE\n                value: token\n",
            1,
        )
    };
    assert_eq!(auth(&by_hand), [], "Ray's own variables turn it on");
    let unversioned = |c: &str| c.replace("  rayVersion: \"2.54.0\"\n", "");
    assert_eq!(
        auth(&unversioned),
        [(
            "ray-auth-unsupported",
            "authOptions.mode is token, but the RayCluster names no rayVersion, which KubeRay needs for it".to_owned()
        )]
    );
    let old_version = |c: &str| c.replace("rayVersion: \"2.54.0\"", "rayVersion: \"2.50.0\"");
    assert_eq!(auth(&old_version)[0].1, "authOptions.mode is token, but the cluster runs Ray 2.50.0; token authentication needs 2.52.0");
    let short = |c: &str| {
        c.replace("rayVersion: \"2.54.0\"", "rayVersion: \"2.52\"")
            .replace("nemo-rl:v0.6.0", "rayproject/ray:2.52.0")
            .replace("nvcr.io/nvidia/", "")
    };
    assert_eq!(auth(&short), [], "2.52 is 2.52.0");
}

/// Flex-start sets NeMo-RL's checkpoint deadline; a run whose steps at the measured step time
/// end after it is warned at `grpo.max_num_steps`, and without a step time the rule says why.
#[test]
fn a_flex_start_run_longer_than_its_checkpoint_deadline_is_warned_at_its_steps() {
    use std::num::NonZeroU32;
    let mut d = gke_rl::Deployment::default();
    d.topology.provisioning = gke_rl::model::Provisioning::FlexStart;
    d.job.expected_step_seconds = NonZeroU32::new(3600);
    d.job.max_num_steps = NonZeroU32::new(200).unwrap();
    let files = rendered(&d);
    let script = &files["run_nemo_rl.sh"];
    assert!(script.contains("checkpointing.checkpoint_must_save_by=06:12:00:00"), "{script}");
    let hits: Vec<Finding> = check(&files).into_iter().filter(|f| f.diagnostic.code == "checkpoint-deadline").collect();
    assert_eq!(hits.len(), 1, "{hits:#?}");
    let steps_line = script.lines().position(|l| l.contains("grpo.max_num_steps=200")).unwrap() + 1;
    assert!(hits[0].file.ends_with("run_nemo_rl.sh") && hits[0].diagnostic.line as usize == steps_line, "{hits:#?}");
    let message = &hits[0].diagnostic.message;
    assert!(message.starts_with("200 steps at 3600 s each (env.sh:") && message.contains("200.0 h"), "{message}");
    assert!(message.contains("(156.0 h)") && message.contains("after about 156 steps"), "{message}");

    d.job.max_num_steps = NonZeroU32::new(156).unwrap();
    assert!(!codes(&check(&rendered(&d))).contains(&"checkpoint-deadline"), "156 steps of an hour end at the deadline");
    d.job.expected_step_seconds = None;
    let v = validation(&rendered(&d));
    let skipped = v.skipped.iter().find(|s| s.code == "checkpoint-deadline").expect("said why not");
    assert!(skipped.missing.contains("no expected step time"), "{skipped:?}");
    let v = validation(&rendered(&gke_rl::Deployment::default()));
    let skipped = v.skipped.iter().find(|s| s.code == "checkpoint-deadline").expect("said why not");
    assert_eq!(skipped.missing, "no checkpointing.checkpoint_must_save_by", "Spot has no deadline");

    // Hostile numbers are findings at their line, never an overflow.
    d.job.expected_step_seconds = NonZeroU32::new(3600);
    let mut files = rendered(&d);
    let (env, script) = (files["env.sh"].clone(), files["run_nemo_rl.sh"].clone());
    for (step_time, problem) in
        [("18446744073709551615", "larger than 4294967295 allows"), ("nan", "not a whole number"), ("0", "outside 1..=4294967295")]
    {
        let hostile = env.replace("export EXPECTED_STEP_SECONDS=3600", &format!("export EXPECTED_STEP_SECONDS={step_time}"));
        let findings = check(&Files::from([("env.sh".to_owned(), hostile), ("run_nemo_rl.sh".to_owned(), script.clone())]));
        let invalid: Vec<&Finding> = findings.iter().filter(|f| f.diagnostic.code == "number-invalid").collect();
        assert_eq!(invalid.len(), 1, "{step_time}: {findings:#?}");
        assert!(
            invalid[0].diagnostic.message.starts_with("EXPECTED_STEP_SECONDS") && invalid[0].diagnostic.message.contains(problem),
            "{invalid:#?}"
        );
    }
    files.insert("env.sh".to_owned(), env.replace("export EXPECTED_STEP_SECONDS=3600", "export EXPECTED_STEP_SECONDS=4294967295"));
    let far = script.replace("checkpoint_must_save_by=06:12:00:00", "checkpoint_must_save_by=999999999999999999:00:00:00");
    files.insert("run_nemo_rl.sh".to_owned(), far);
    assert!(!codes(&check(&files)).contains(&"checkpoint-deadline"), "a deadline past u64 is unreadable, not a panic");
}

/// A blueprint whose managed-lustre module enables the Dynamic tier is sized against it, not
/// against the per-TiB throughput its vars still name.
#[test]
fn the_dynamic_lustre_tier_is_sized_by_its_own_range_and_step() {
    let deployment = gke_rl::Deployment::default();
    let upstream_blueprint = std::fs::read_to_string(upstream("cluster-toolkit/gke-a4.yaml")).unwrap();
    let patched = gke_rl::blueprint::patch(&upstream_blueprint, &deployment).unwrap();
    let throughput = "      per_unit_storage_throughput: $(vars.per_unit_storage_throughput)\n";
    assert!(patched.contains(throughput), "{patched}");
    let blueprint = |size: &str| {
        let dynamic = patched.replacen(throughput, &format!("{throughput}      enable_dynamic_tier: true\n"), 1);
        Files::from([("gke-a4.yaml".to_owned(), dynamic.replacen("lustre_size_gib: 9000", &format!("lustre_size_gib: {size}"), 1))])
    };
    let lustre = |files: &Files| -> Vec<(&'static str, String)> {
        check(files)
            .into_iter()
            .filter(|f| f.diagnostic.code.starts_with("lustre-"))
            .map(|f| (f.diagnostic.code, f.diagnostic.message))
            .collect()
    };
    assert_eq!(
        lustre(&blueprint("9000")),
        [(
            "lustre-capacity-range",
            "9000 GiB is outside the Dynamic tier (25 MB/s/TiB aggregate)'s range of 472000 to 84016000 GiB".to_owned()
        )],
        "9,000 GiB suits the 1000 MB/s/TiB tier, not the Dynamic one"
    );
    assert_eq!(
        lustre(&blueprint("500000")),
        [("lustre-capacity-step", "500000 GiB is not a multiple of the Dynamic tier (25 MB/s/TiB aggregate)'s 472000 GiB step".to_owned())]
    );
    assert_eq!(lustre(&blueprint("944000")), [], "two steps of 472,000 GiB");
    let files = Files::from([("gke-a4.yaml".to_owned(), patched.clone())]);
    assert_eq!(lustre(&files), [], "without the setting, the numbered tier of the vars");
}

/// A RayJob's cluster is checked as a RayCluster, each finding at its line in the RayJob's file,
/// and its name against KubeRay's bound for RayJobs (47: its cluster adds `-` and 5 characters).
#[test]
fn a_rayjobs_cluster_is_checked_where_it_is_written() {
    let mut d = gke_rl::Deployment::default();
    d.job.mode = gke_rl::model::JobMode::Rayjob;
    let job = rendered(&d).remove("ray-job.yaml").unwrap();
    let clean = check(&Files::from([("ray-job.yaml".to_owned(), job.clone())]));
    assert!(clean.iter().all(|f| f.diagnostic.severity != Severity::Error), "{clean:#?}");
    let bad = job
        .replace("rayVersion: \"2.46.0\"", "rayVersion: \"2.54.0\"")
        .replace("  name: nemo-rl-grpo-test1\n", &format!("  name: {}\n", "a".repeat(48)));
    let findings = check(&Files::from([("ray-job.yaml".to_owned(), bad.clone())]));
    let line_of = |needle: &str| u32::try_from(bad.lines().position(|l| l.contains(needle)).unwrap() + 1).unwrap();
    let version = findings.iter().find(|f| f.diagnostic.code == "ray-version-mismatch").expect("the cluster's Ray is checked");
    assert_eq!((version.file.as_str(), version.diagnostic.line), ("ray-job.yaml", line_of("rayVersion:")));
    let name = findings.iter().find(|f| f.diagnostic.code == "raycluster-name").expect("the name is checked");
    assert!(name.diagnostic.message.starts_with("RayJob name `aaaa") && name.diagnostic.message.ends_with("at most 47 characters"));
}

/// A queued RayJob against the gke-a4 blueprint's Kueue, counted as Kueue v0.17.8 counts: its
/// LocalQueue and namespace, the resources its ClusterQueue covers (GPUs only), the queue's
/// topology-aware flavors (a pod set asking for no GPU gets none; a pool from zero has no node to
/// place on), and the nominal GPU quota (a number in the patched blueprint).
#[test]
fn kueue_admission_is_checked_against_the_blueprints_queues() {
    let mut d = configs().into_iter().find(|(name, _)| name == "rayjob").expect("tests/fixtures/configs/rayjob.yaml").1;
    d.job.queue = None;
    let mut files = rendered(&d);
    let blueprint = gke_rl::blueprint::patch(&std::fs::read_to_string(upstream("cluster-toolkit/gke-a4.yaml")).unwrap(), &d).unwrap();
    files.insert("gke-a4.yaml".to_owned(), blueprint.clone());
    let kueue = |files: &Files| -> Vec<(String, u32, String)> {
        check(files)
            .into_iter()
            .filter(|f| f.diagnostic.code == "kueue-inadmissible")
            .map(|f| (f.file, f.diagnostic.line, f.diagnostic.message))
            .collect()
    };
    assert_eq!(kueue(&files), [], "not queued: not checked");
    let labels = "  labels:\n    app.kubernetes.io/managed-by: gke-rl\n";
    let queued = |queue: &str| files["ray-job.yaml"].replacen(labels, &format!("{labels}    kueue.x-k8s.io/queue-name: {queue}\n"), 1);
    let job = queued("a4");
    let line_of = |text: &str, needle: &str, nth: usize| {
        u32::try_from(text.lines().enumerate().filter(|(_, l)| l.contains(needle)).nth(nth).unwrap().0 + 1).unwrap()
    };
    let mut files = files.clone();
    files.insert("ray-job.yaml".to_owned(), job.clone());
    let found = kueue(&files);
    let at = |file: &str, line: u32| {
        found.iter().find(|f| f.0 == file && f.1 == line).map(|f| f.2.as_str()).unwrap_or_else(|| panic!("{file}:{line} in {found:#?}"))
    };
    // The head asks for CPU and memory, uncovered, and for no GPU: no TAS flavor.
    assert!(
        at("ray-job.yaml", line_of(&job, "cpu:", 0))
            .starts_with("the head asks for `cpu`, which ClusterQueue `a4` does not cover (nvidia.com/gpu)")
    );
    assert!(at("ray-job.yaml", line_of(&job, "memory:", 0)).starts_with("the head asks for `memory`"));
    assert!(
        at("ray-job.yaml", line_of(&job, "headGroupSpec:", 0) + 1)
            .contains("asks for none of what ClusterQueue `a4` covers (nvidia.com/gpu)")
    );
    // The worker's CPU, once for its requests and limits.
    let worker_cpu = line_of(&job, "cpu:", 2);
    assert!(at("ray-job.yaml", worker_cpu).starts_with("worker group `gpu-worker-group` asks for `cpu`"));
    assert!(!found.iter().any(|f| f.1 == line_of(&job, "cpu:", 3)), "limits repeat the request: {found:#?}");
    // The pool autoscales from zero, at its line in the blueprint.
    assert!(at("gke-a4.yaml", line_of(&blueprint, "autoscaling_total_min_nodes: 0", 0)).contains("no node comes before admission"));
    assert_eq!(found.len(), 6, "head cpu, memory and no GPU; worker cpu and memory; the pool: {found:#?}");
    // A zero request is no request to Kueue.
    let zero: String = job
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let worker_cpu = [worker_cpu, line_of(&job, "cpu:", 3)].contains(&(u32::try_from(i).unwrap() + 1));
            if worker_cpu { format!("{}cpu: \"0\"\n", &l[..l.find("cpu:").unwrap()]) } else { format!("{l}\n") }
        })
        .collect();
    files.insert("ray-job.yaml".to_owned(), zero);
    assert_eq!(kueue(&files).len(), 5, "the worker's cpu: 0 asks for nothing: {:#?}", kueue(&files));

    // A queue the blueprint does not create, at its label, and nothing else.
    let other = queued("a5");
    files.insert("ray-job.yaml".to_owned(), other.clone());
    let found = kueue(&files);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].1, line_of(&other, "queue-name: a5", 0));
    assert!(
        found[0].2.contains("`a5` is not one the gke-a4 blueprint's kueue-configuration.yaml.tftpl creates (`a4` in namespace `default`)"),
        "{}",
        found[0].2
    );

    // Another namespace than the LocalQueue's.
    let elsewhere = job.replacen("  namespace: default\n", "  namespace: ml\n", 1);
    files.insert("ray-job.yaml".to_owned(), elsewhere.clone());
    assert!(kueue(&files).iter().any(|f| f.1 == line_of(&elsewhere, "namespace: ml", 0) && f.2.contains("is in namespace `default`")));

    // More GPUs than the quota, with both numbers: the patched blueprint's, else the nodes'.
    assert!(blueprint.contains("num_gpus: 64"), "the pool scales from zero, so the patch states the quota");
    let more = job.replace("replicas: 8\n", "replicas: 9\n");
    files.insert("ray-job.yaml".to_owned(), more);
    let over = |files: &Files| {
        kueue(files)
            .into_iter()
            .map(|f| f.2)
            .find(|m| m.starts_with("the run asks for 72 GPUs, over ClusterQueue `a4`'s nominal quota of 64 ("))
    };
    assert!(over(&files).is_some_and(|m| m.contains("(gke-a4.yaml:")), "{:#?}", kueue(&files));
    let patched = files.remove("gke-a4.yaml").unwrap();
    assert!(over(&files).is_some_and(|m| m.contains("(8 nodes × 8 GPUs, env.sh:")), "{:#?}", kueue(&files));
    // The upstream reference of an autoscaling pool is a quota of 0.
    files.insert("gke-a4.yaml".to_owned(), patched.replace("num_gpus: 64", "num_gpus: $(a4-pool.static_gpu_count)"));
    files.insert("ray-job.yaml".to_owned(), job);
    assert!(
        kueue(&files)
            .iter()
            .any(|f| f.2.starts_with("the run asks for 64 GPUs, over ClusterQueue `a4`'s nominal quota of 0 (an autoscaling pool's"))
    );
}

/// A queued render (`job.queue`) brings gke-rl's Kueue configuration, whose ClusterQueue covers
/// the head and is not topology-aware: Kueue admits it, in any namespace, onto a pool that
/// scales from zero. Its queues are what the rule reads; a blueprint without Kueue admits nothing.
#[test]
fn a_queued_render_is_admitted_by_the_kueue_configuration_it_brings() {
    let d = configs().into_iter().find(|(name, _)| name == "rayjob").expect("tests/fixtures/configs/rayjob.yaml").1;
    assert_eq!(d.job.queue.as_ref().map(|q| q.as_str()), Some("a4"));
    let mut files = rendered(&d);
    let blueprint = gke_rl::blueprint::patch(&std::fs::read_to_string(upstream("cluster-toolkit/gke-a4.yaml")).unwrap(), &d).unwrap();
    assert!(blueprint.contains("autoscaling_total_min_nodes: 0"), "a RayJob's pool scales from zero");
    files.insert("gke-a4.yaml".to_owned(), blueprint.clone());
    let kueue = |files: &Files| -> Vec<(String, u32, String)> {
        let findings = check(files);
        assert!(!findings.iter().any(|f| f.diagnostic.code == "syntax"), "{findings:#?}");
        findings
            .into_iter()
            .filter(|f| f.diagnostic.code == "kueue-inadmissible")
            .map(|f| (f.file, f.diagnostic.line, f.diagnostic.message))
            .collect()
    };
    assert!(files["ray-job.yaml"].contains("    kueue.x-k8s.io/queue-name: a4\n"));
    assert_eq!(kueue(&files), []);
    // Another queue is told against the configuration given.
    let other = files["ray-job.yaml"].replace("queue-name: a4", "queue-name: a5");
    let mut changed = files.clone();
    changed.insert("ray-job.yaml".to_owned(), other);
    let found = kueue(&changed);
    assert!(
        found.len() == 1 && found[0].2.contains("`a5` is not one kueue-configuration.yaml.tftpl creates (`a4` in namespace `default`)"),
        "{found:#?}"
    );
    // Without Kueue in the blueprint, nothing admits it.
    let mut changed = files.clone();
    changed.insert(
        "gke-a4.yaml".to_owned(),
        blueprint.replacen("        install: true\n        config_path", "        install: false\n        config_path", 1),
    );
    let found = kueue(&changed);
    assert!(found.len() == 1 && found[0].2.starts_with("gke-a4.yaml installs no Kueue"), "{found:#?}");
    // The head keeps off GPU nodes only when queued, and only when it has a pool of its own.
    let job = &files["ray-job.yaml"];
    assert!(job.matches("operator: DoesNotExist").count() == 1 && job.contains("- key: cloud.google.com/gke-accelerator"), "{job}");
    let mut on_gpu = d.clone();
    on_gpu.ray.head.node_pool = gke_rl::model::HeadNodePool::Gpu;
    assert!(!rendered(&on_gpu)["ray-job.yaml"].contains("DoesNotExist"));
    let mut unqueued = d.clone();
    unqueued.job.queue = None;
    assert!(!rendered(&unqueued)["ray-job.yaml"].contains("DoesNotExist"));
    // Cluster mode, queued, suspended after each job through Kueue: clean too.
    let cluster_mode = gke_rl::config::from_yaml("job:\n  queue: a4\n  when_done: suspend\n").unwrap();
    let mut files_cluster = rendered(&cluster_mode);
    let patched =
        gke_rl::blueprint::patch(&std::fs::read_to_string(upstream("cluster-toolkit/gke-a4.yaml")).unwrap(), &cluster_mode).unwrap();
    files_cluster.insert("gke-a4.yaml".to_owned(), patched);
    let errors: Vec<_> = check(&files_cluster).into_iter().filter(|f| f.diagnostic.severity == Severity::Error).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The same configuration without gke-rl's changes is the blueprint's: the head is uncovered.
    let mut changed = files.clone();
    changed.insert("kueue-configuration.yaml.tftpl".to_owned(), gke_rl::knowledge::kueue::GKE_A4_TEMPLATE.to_owned());
    assert!(kueue(&changed).iter().any(|f| f.2.starts_with("the head asks for `cpu`")), "{:#?}", kueue(&changed));
}

/// gke-rl reads the queues of the blueprint's template as another YAML reader does.
#[test]
fn kueue_queues_are_the_templates() {
    let template = std::fs::read_to_string(upstream("cluster-toolkit/kueue-configuration.yaml.tftpl")).unwrap();
    let documents: Vec<serde_json::Value> =
        template.split("\n---\n").map(|doc| serde_saphyr::from_str(&doc.replace("${", "x{")).expect("YAML once templated")).collect();
    let of_kind = |kind: &'static str| documents.iter().filter(move |d| d["kind"] == kind);
    let mut found = Vec::new();
    let topology_aware =
        |flavor: &str| of_kind("ResourceFlavor").any(|f| f["metadata"]["name"] == flavor && f["spec"]["topologyName"].is_string());
    for local in of_kind("LocalQueue") {
        let cluster_queue = local["spec"]["clusterQueue"].as_str().unwrap();
        let cq = of_kind("ClusterQueue").find(|c| c["metadata"]["name"] == cluster_queue).expect("its ClusterQueue");
        let groups = cq["spec"]["resourceGroups"].as_array().unwrap();
        let covered: Vec<&str> =
            groups.iter().flat_map(|g| g["coveredResources"].as_array().unwrap()).map(|r| r.as_str().unwrap()).collect();
        let quota = &groups[0]["flavors"][0]["resources"][0];
        assert_eq!(
            (quota["name"].as_str(), quota["nominalQuota"].as_str()),
            (Some("nvidia.com/gpu"), Some("x{num_gpus}")),
            "the pool's GPUs"
        );
        let flavors: Vec<&str> =
            groups.iter().flat_map(|g| g["flavors"].as_array().unwrap()).map(|f| f["name"].as_str().unwrap()).collect();
        found.push((
            flavors.iter().all(|f| topology_aware(f)),
            local["metadata"]["name"].as_str().unwrap().to_owned(),
            local["metadata"]["namespace"].as_str().unwrap().to_owned(),
            cluster_queue.to_owned(),
            covered.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>(),
        ));
    }
    let ours: Vec<_> = gke_rl::knowledge::kueue::queues(&template)
        .unwrap()
        .into_iter()
        .map(|q| (q.topology_aware, q.name, q.namespace, q.cluster_queue, q.covered))
        .collect();
    assert_eq!(ours, found);
}

/// The compiled KubeRay schemas and the `jsonschema` crate find the same errors at the same
/// paths, on every RayCluster and RayJob the tests have: each config's render in both modes,
/// the codelab's, each case above, every fixture; each of the default's nodes replaced by
/// values of every type and near-misses of its patterns, each key renamed and removed; and
/// chains of random mutations (a fuzzer with a fixed seed; `cargo xtask fuzz crd_schema` runs
/// libFuzzer on the same comparison).
#[test]
fn compiled_crd_schemas_agree_with_jsonschema() {
    use gke_rl::yaml::{Node, Value};
    use gke_rl_test_support::crd_reference::Reference;
    use gke_rl_validate::crd::Kind;

    let references = [
        (
            Kind::RayCluster,
            Reference::new(Kind::RayCluster, &std::fs::read_to_string(upstream("kuberay/ray.io_rayclusters.yaml")).unwrap()),
        ),
        (Kind::RayJob, Reference::new(Kind::RayJob, &std::fs::read_to_string(upstream("kuberay/ray.io_rayjobs.yaml")).unwrap())),
    ];
    let kind_of = |root: &Node| match root.get(&["kind"]).and_then(Node::text) {
        Some("RayJob") => Kind::RayJob,
        _ => Kind::RayCluster,
    };
    let mut checked = 0usize;
    let mut agree = |what: &str, document: &Node| {
        let kind = kind_of(document);
        let (ours, theirs) = references.iter().find(|(k, _)| *k == kind).unwrap().1.errors(document);
        assert_eq!(ours, theirs, "{what}: the compiled {kind:?} schema (left) and jsonschema (right) disagree");
        checked += 1;
    };

    // Every RayCluster and RayJob the tests have.
    let mut bases: Vec<(String, String)> = Vec::new();
    for (name, deployment) in gke_rl_test_support::configs::configs() {
        let mut rayjob = deployment.clone();
        rayjob.job.mode = gke_rl::model::JobMode::Rayjob;
        for (mode, d) in [("cluster", deployment), ("rayjob", rayjob)] {
            for (file, text) in rendered(&d) {
                if file == "ray-cluster.yaml" || file == "ray-job.yaml" {
                    bases.push((format!("{name} ({mode} mode): {file}"), text));
                }
            }
        }
    }
    for case in CASES.iter().filter(|c| c.file == "ray-cluster.yaml" || c.file == "ray-job.yaml") {
        bases.push((format!("the {} case", case.code), apply(case).remove(case.file).unwrap()));
    }
    for path in gke_rl_test_support::files_under(&project_root().join("tests/fixtures")) {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let name = path.display().to_string();
        if matches!(gke_rl::ArtifactKind::detect(&name, &text), Some(gke_rl::ArtifactKind::RayCluster | gke_rl::ArtifactKind::RayJob)) {
            bases.push((name, text));
        }
    }
    let documents: Vec<(String, Node)> =
        bases.into_iter().filter_map(|(name, text)| Node::parse(&text).filter(|n| !n.entries().is_empty()).map(|n| (name, n))).collect();
    assert!(documents.len() >= 20, "{} documents", documents.len());
    for (name, document) in &documents {
        agree(name, document);
    }

    // Values of every type and near-misses of the patterns, bounds and formats.
    let replacements: Vec<Node> = [
        "x",
        "7",
        "-1",
        "1.5",
        "true",
        "null",
        "[]",
        "{}",
        "{unknownField: 1}",
        "[1, x]",
        "3000000000",
        "-3000000000",
        "9223372036854775808",
        "1e300",
        "500m",
        "8gb",
        "1.2.3",
        ".5",
        "+1e3",
        "1Ei",
        "2026-12-04T16:00:00Z",
        "2026-13-04T16:00:00Z",
        "Ready",
        "example.com/Ready",
        "-bad",
        "A,b",
        "\"\"",
    ]
    .iter()
    .map(|text| Node::parse(text).unwrap())
    .collect();
    let mut pointers: Vec<String> = Vec::new();
    let default_documents: Vec<&Node> = documents.iter().filter(|(name, _)| name.starts_with("default ")).map(|(_, n)| n).collect();
    assert_eq!(default_documents.len(), 2, "the default's RayCluster and RayJob");
    for document in default_documents {
        each_mutant(document, &replacements, |what, mutant| agree(&what, mutant));
    }
    // Chains of random mutations of random documents, with random strings from the patterns'
    // alphabet.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % bound as u64).unwrap()
    };
    const ALPHABET: &[u8] = b"0123456789.+-eEKMGTPimnuk/aZ_,:T ";
    for round in 0..600 {
        let (name, base) = &documents[next(documents.len())];
        let mut mutant = base.clone();
        for _ in 0..1 + next(4) {
            pointers.clear();
            collect_pointers(&mutant, String::new(), &mut pointers);
            let pointer = pointers[next(pointers.len())].clone();
            let value = match next(3) {
                0 => replacements[next(replacements.len())].value.clone(),
                1 => Value::String((0..next(8)).map(|_| char::from(ALPHABET[next(ALPHABET.len())])).collect()),
                _ => Value::Number(format!("{}", next(1 << 20) as i64 - (1 << 19))),
            };
            node_at(&mut mutant, &pointer).value = value;
        }
        agree(&format!("random mutant {round} of {name}"), &mutant);
    }
    assert!(checked > 10_000, "{checked} documents compared");
}

/// `--crd` compiles at run time into the same tables: on a schema with every keyword the
/// tables hold (the junctors, `multipleOf`, exclusive bounds, counts of fields, enums of every
/// scalar type, maps, preserved fields, nullable, defaults, int-or-string, formats, and the nulls
/// the API server drops),
/// each node of a document replaced by values of every type, and each key renamed and removed,
/// it finds what `jsonschema` finds.
#[test]
fn crds_compiled_at_run_time_agree_with_jsonschema() {
    use gke_rl::yaml::Node;
    let quantity = gke_rl_validate::json_schema(&std::fs::read_to_string(upstream("kuberay/ray.io_rayclusters.yaml")).unwrap(), true)
        .unwrap()
        .pointer("/properties/spec/properties/headGroupSpec/properties/template/properties/spec/properties/containers/items/properties/resources/properties/limits/additionalProperties/pattern")
        .cloned()
        .expect("the CRD's quantity pattern");
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "apiVersion": { "type": "string" },
            "kind": { "type": "string" },
            "spec": {
                "type": "object", "required": ["a", "s"], "minProperties": 1, "maxProperties": 21,
                "properties": {
                    "a": { "type": "integer", "multipleOf": 3, "minimum": 0, "exclusiveMinimum": true, "maximum": 99 },
                    "b": { "type": "number", "minimum": -1.5, "maximum": 2.5, "exclusiveMaximum": true },
                    "c": { "type": "array", "minItems": 1, "maxItems": 3, "items": { "type": "string", "minLength": 1, "maxLength": 3 } },
                    "d": { "enum": [1, 2.5, true, null, "x"] },
                    "e": { "oneOf": [{ "type": "integer" }, { "type": "string", "pattern": quantity }] },
                    "f": { "allOf": [{ "type": "string" }, { "maxLength": 4 }] },
                    "g": { "not": { "type": "string" } },
                    "h": { "type": "object", "additionalProperties": { "type": "integer", "format": "int32" } },
                    "i": { "type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": { "j": { "type": "boolean" } } },
                    "k": { "type": "string", "nullable": true, "enum": ["on", "off"] },
                    "l": { "x-kubernetes-int-or-string": true },
                    "m": { "type": "string", "format": "date-time" },
                    "n": { "type": "integer", "format": "int64" },
                    "o": { "type": "object", "anyOf": [{ "properties": { "p": { "minimum": 1 } } }, { "required": ["q"] }], "properties": { "p": { "type": "integer" }, "q": { "type": "integer" } } },
                    "r": { "x-kubernetes-int-or-string": true, "nullable": true },
                    "s": { "type": "integer", "default": 1 },
                    "t": { "type": "object", "maxProperties": 1, "minProperties": 1, "oneOf": [{ "required": ["a"] }, { "required": ["b"] }], "properties": { "a": { "type": "string" }, "b": { "type": "string", "nullable": true } } },
                    "u": { "type": "array", "items": { "type": "object", "required": ["v"], "properties": { "v": { "type": "string" } } } }
                }
            }
        }
    })
    .to_string();
    let reference = gke_rl_test_support::crd_reference::Reference::compiled(&schema);
    let document = Node::parse(
        "kind: RayCluster\nspec:\n  a: 3\n  b: 1\n  c: [x, yy]\n  d: 2.5\n  e: 500m\n  f: ab\n  g: 1\n  h: {x: 1, y: 2}\n  i: {j: true, extra: 1}\n  k: \"on\"\n  l: 5\n  m: 2026-12-04T16:00:00Z\n  n: 5\n  o: {p: 2, q: 1}\n  r: 1\n  t: {a: x}\n  u: [{v: x}]\n",
    )
    .unwrap();
    let replacements: Vec<Node> = [
        "x",
        "7",
        "0",
        "-1",
        "1.5",
        "2.5",
        "-1.5",
        "99",
        "102",
        "true",
        "null",
        "[]",
        "{}",
        "{unknownField: 1}",
        "[x, x]",
        "[a, bb, ccc, dddd]",
        "[1, 1.0]",
        "abcde",
        "3000000000",
        "18446744073709551615",
        "9223372036854775807",
        "-9223372036854775809",
        "0.3",
        "1e300",
        "500m",
        "8gb",
        "\"on\"",
        "\"\"",
        "2026-02-30T00:00:00Z",
        "{p: 0}",
        "{q: 1}",
        "{p: null}",
        "{p: 0, q: null}",
        "{q: null}",
        "{a: x, b: null}",
        "{b: null}",
        "{a: null, b: y}",
        "[{v: null}]",
        "[null]",
        "{v: x, w: null}",
    ]
    .iter()
    .map(|text| Node::parse(text).unwrap())
    .collect();
    let mut compared = 0;
    let (ours, theirs) = reference.errors(&document);
    assert!(ours.is_empty() && theirs.is_empty(), "the base document is valid: {ours:?} {theirs:?}");
    each_mutant(&document, &replacements, |what, mutant| {
        let (ours, theirs) = reference.errors(mutant);
        assert_eq!(ours, theirs, "{what}: gke-rl's compiled schema (left) and jsonschema (right) disagree");
        compared += 1;
    });
    assert!(compared > 500, "{compared} documents compared");

    // What gke-rl cannot check as the API server does is refused, never half checked.
    for (keyword, refused) in [
        ("uniqueItems", r#"{"type": "array", "uniqueItems": true}"#),
        ("multipleOf", r#"{"type": "integer", "multipleOf": -1}"#),
        ("format", r#"{"type": "string", "format": "uuid"}"#),
        ("pattern", r#"{"type": "string", "pattern": "^a+$"}"#),
        ("keyword", r#"{"type": "object", "patternProperties": {}}"#),
    ] {
        let crd = format!(r#"{{"properties": {{"spec": {refused}}}}}"#);
        let error = gke_rl_validate::CrdSchema::from_crd(&crd, true).expect_err(keyword).to_string();
        assert!(error.contains("at spec, which gke-rl cannot check"), "{keyword}: {error}");
    }
}

/// Calls `visit` with each mutant of `document`: each node replaced by each of `replacements`,
/// and each key renamed and removed.
fn each_mutant(document: &gke_rl::yaml::Node, replacements: &[gke_rl::yaml::Node], mut visit: impl FnMut(String, &gke_rl::yaml::Node)) {
    use gke_rl::yaml::{Node, Value};
    let mut pointers = Vec::new();
    collect_pointers(document, String::new(), &mut pointers);
    for pointer in &pointers {
        for replacement in replacements {
            let mut mutant = document.clone();
            let node = node_at(&mut mutant, pointer);
            *node = Node { value: replacement.value.clone(), ..node.clone() };
            visit(format!("{pointer} = {:?}", replacement.to_json()), &mutant);
        }
        let (parent, key) = pointer.rsplit_once('/').unwrap_or_default();
        if matches!(node_at(&mut document.clone(), parent).value, Value::Map(_)) {
            for rename in [true, false] {
                let mut mutant = document.clone();
                let Value::Map(entries) = &mut node_at(&mut mutant, parent).value else { unreachable!() };
                if rename {
                    entries.iter_mut().filter(|(k, _)| *k == key.replace("~1", "/").replace("~0", "~")).for_each(|(k, _)| k.push('x'));
                } else {
                    entries.retain(|(k, _)| *k != key.replace("~1", "/").replace("~0", "~"));
                }
                visit(format!("{pointer} {}", if rename { "renamed" } else { "removed" }), &mutant);
            }
        }
    }
}

/// The JSON pointer of every node below `node`.
fn collect_pointers(node: &gke_rl::yaml::Node, at: String, out: &mut Vec<String>) {
    use gke_rl::yaml::Value;
    match &node.value {
        Value::Map(entries) => {
            for (key, child) in entries {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                out.push(here.clone());
                collect_pointers(child, here, out);
            }
        }
        Value::Seq(items) => {
            for (index, child) in items.iter().enumerate() {
                let here = format!("{at}/{index}");
                out.push(here.clone());
                collect_pointers(child, here, out);
            }
        }
        _ => {}
    }
}

/// The node at a JSON pointer that [`collect_pointers`] gave.
fn node_at<'n>(node: &'n mut gke_rl::yaml::Node, pointer: &str) -> &'n mut gke_rl::yaml::Node {
    use gke_rl::yaml::Value;
    pointer.split('/').skip(1).fold(node, |node, token| {
        let token = token.replace("~1", "/").replace("~0", "~");
        match &mut node.value {
            Value::Map(entries) => entries.iter_mut().find(|(k, _)| *k == token).map(|(_, v)| v).expect("the pointer's key"),
            Value::Seq(items) => &mut items[token.parse::<usize>().expect("an index")],
            _ => panic!("{pointer} goes through a scalar"),
        }
    })
}
