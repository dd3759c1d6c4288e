//! Every artifact, for every test config: snapshotted, and proven to work with the tools
//! that read it (bash, JSON readers, the KubeRay CRD schema, Ray's gitwildmatch matching).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use crate::make_executable;
use crate::temp_file;
use gke_rl::model::Provisioning;
use gke_rl_test_support::configs::artifact;
use gke_rl_test_support::configs::configs;
use gke_rl_test_support::configs::render;
use gke_rl_test_support::upstream;
use serde_json::Value;

#[test]
fn snapshots_of_every_artifact() {
    for (config, deployment) in configs() {
        for a in render(&deployment) {
            insta::assert_snapshot!(format!("{config}__{}", a.name), a.contents);
        }
    }
}

/// insta does not notice a snapshot nobody asserts any more; this does.
#[test]
fn no_orphaned_snapshots() {
    let expected: Vec<String> = configs()
        .iter()
        .flat_map(|(config, d)| render(d).into_iter().map(move |a| format!("it__artifacts__{config}__{}.snap", a.name)))
        .collect();
    let dir = gke_rl_test_support::project_root().join("crates/gke-rl/tests/it/snapshots");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with("it__artifacts__") && name.ends_with(".snap") {
            assert!(expected.contains(&name), "{name} belongs to no config and artifact: delete it");
        }
    }
}

#[test]
fn rendering_is_deterministic() {
    for (_, deployment) in configs() {
        assert_eq!(render(&deployment), render(&deployment.clone()));
    }
}

#[test]
fn every_file_starts_with_a_generated_header() {
    for a in render(&gke_rl::Deployment::default()) {
        assert!(gke_rl::render::is_generated(&a.contents), "{} lacks the header", a.name);
        assert!(a.contents.lines().take(3).any(|l| l.contains("from a test config")), "{} does not say its source", a.name);
    }
}

fn bash(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new("bash")
        .args(["--noprofile", "--norc"])
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("bash runs")
}

#[test]
fn env_sh_passes_bash_n_and_sources_to_exactly_the_configured_values() {
    for (config, d) in configs() {
        let text = artifact(&render(&d), "env.sh").to_owned();
        let (_dir, path) = temp_file("env.sh", &text);
        let path = path.to_str().unwrap();
        assert!(bash(&["-n", path], &[]).status.success(), "{config}: bash -n");

        let from_env = [("PROJECT_ID", "env-project-1"), ("AUTHORIZED_CIDR", "198.51.100.9/32")];
        let out = bash(&["-c", "source \"$1\" && env -0", "_", path], &from_env);
        assert!(out.status.success(), "{config}: {}", String::from_utf8_lossy(&out.stderr));
        let shell: BTreeMap<String, String> = out
            .stdout
            .split(|b| *b == 0)
            .filter_map(|kv| std::str::from_utf8(kv).ok()?.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();

        let assigned: Vec<String> = gke_rl::envsh::parse(&text).unwrap().into_iter().map(|a| a.name).collect();
        let bash_own = ["PATH", "PWD", "SHLVL", "_"];
        let exported: Vec<&String> = shell.keys().filter(|k| !bash_own.contains(&k.as_str())).collect();
        assert_eq!(exported.len(), assigned.len(), "{config}: env.sh exports exactly its assignments: {exported:?}");

        let expect = |name: &str, value: String| assert_eq!(shell[name], value, "{config}: {name}");
        expect("PROJECT_ID", d.project.project_id.as_ref().map_or("env-project-1".into(), |p| p.to_string()));
        expect("AUTHORIZED_CIDR", d.network.authorized_cidr.as_ref().map_or("198.51.100.9/32".into(), |c| c.to_string()));
        expect("REGION", d.project.region.to_string());
        expect("ZONE", d.project.zone.to_string());
        expect("CLUSTER_NAME", d.project.cluster_name.to_string());
        expect("NUM_NODES", d.topology.node_count.to_string());
        expect("GPUS_PER_NODE", d.topology.gpus_per_node.to_string());
        let reservation = match &d.topology.provisioning {
            Provisioning::Reservation(name) => name.to_string(),
            _ => String::new(),
        };
        expect("RESERVATION", reservation);
        expect("PROVISIONING", d.topology.provisioning.mode().to_owned());
        expect("LUSTRE_CAPACITY", d.lustre.capacity_gib.to_string());
        expect("LUSTRE_THROUGHPUT", d.lustre.throughput_mbps_per_tib.to_string());
        expect("RAY_IMAGE", d.ray.image.to_string());
        expect("MODEL_NAME", d.job.model.to_string());
        expect("KEEP_TOP_K", d.job.checkpointing.keep_top_k.map_or(String::new(), |k| k.to_string()));
        expect("CHECKPOINT_DIR", d.job.checkpointing.dir.to_string());
        assert!(!shell.contains_key("HF_TOKEN") && !shell.contains_key("WANDB_API_KEY"), "{config}: env.sh sets no secret");
    }
}

#[test]
fn env_sh_stops_with_a_clear_message_when_the_project_is_unknown() {
    let text = artifact(&render(&gke_rl::Deployment::default()), "env.sh").to_owned();
    let (_dir, path) = temp_file("env.sh", &text);
    let out = bash(&["-c", "source \"$1\"", "_", path.to_str().unwrap()], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("PROJECT_ID: set PROJECT_ID to the Google Cloud project id"));
}

#[test]
fn importing_the_generated_env_sh_gives_the_same_model() {
    for (config, d) in configs() {
        let imported = gke_rl::envsh::import(artifact(&render(&d), "env.sh")).unwrap();
        assert_eq!(imported.deployment, d, "{config}");
        assert!(imported.warnings.is_empty(), "{config}: {:?}", imported.warnings);
    }
}

#[test]
fn runtime_env_is_json_with_string_env_vars_and_no_secret() {
    for (config, d) in configs() {
        let json: Value = serde_json::from_str(artifact(&render(&d), "ray_runtime_env.json")).expect("valid JSON");
        let object = json.as_object().unwrap();
        assert!(object.keys().all(|k| k == "env_vars" || k == "excludes"), "{config}: only known runtime_env fields");
        let env_vars = json["env_vars"].as_object().expect("env_vars is an object");
        assert!(env_vars.values().all(Value::is_string), "{config}: env_vars are string to string");
        for secret in ["HF_TOKEN", "WANDB_API_KEY"] {
            assert!(!env_vars.contains_key(secret), "{config}: {secret} must come from the Kubernetes Secret");
        }
        assert_eq!(env_vars["HF_HOME"], d.job.hf_home.as_str());
        assert!(json["excludes"].as_array().unwrap().iter().all(Value::is_string));
    }
}

/// The RayCluster schema of the real KubeRay CRD, made strict: an object schema that lists
/// its properties rejects others, where the API server would silently drop a misspelt field.
fn raycluster_schema() -> jsonschema::Validator {
    let path = upstream("kuberay/ray.io_rayclusters.yaml");
    let schema = gke_rl_validate::json_schema(&std::fs::read_to_string(path).unwrap(), true).expect("the CRD has a v1 schema");
    jsonschema::validator_for(&schema).expect("the CRD schema compiles")
}

#[test]
fn ray_cluster_validates_against_the_real_kuberay_crd() {
    let validator = raycluster_schema();
    // A RayJob's cluster is checked with the RayJob, below.
    for (config, d) in configs().into_iter().filter(|(_, d)| d.job.mode == gke_rl::model::JobMode::Cluster) {
        let manifest: Value = serde_saphyr::from_str(artifact(&render(&d), "ray-cluster.yaml")).expect("valid YAML");
        let errors: Vec<String> = validator.iter_errors(&manifest).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{config}: {errors:#?}");
        assert_eq!(manifest["spec"]["rayVersion"], d.ray.resolved_version().unwrap());
        // Token authentication wherever the image's Ray has it: from NeMo-RL v0.6.0's Ray 2.54 on.
        let token = manifest["spec"]["authOptions"]["mode"] == "token";
        assert_eq!(token, gke_rl::knowledge::supports_token(d.ray.resolved_version().unwrap()), "{config}");
        assert_eq!(token, d.ray.token_auth().unwrap(), "{config}");
    }
    // The check has teeth: a misspelt field and a numeric rayStartParams value are rejected.
    let good: Value = serde_saphyr::from_str(artifact(&render(&gke_rl::Deployment::default()), "ray-cluster.yaml")).unwrap();
    let mut misspelt = good.clone();
    misspelt["spec"]["headGroupSpec"]["template"]["spec"]["toleration"] = Value::Array(vec![]);
    assert!(!validator.is_valid(&misspelt));
    let mut numeric = good;
    numeric["spec"]["headGroupSpec"]["rayStartParams"]["num-gpus"] = Value::from(8);
    assert!(!validator.is_valid(&numeric));
}

/// Every RayJob against the real KubeRay v1.7.0 RayJob CRD, strict as above: its
/// `rayClusterSpec` is the RayCluster's own spec, in the mode gke-rl submits with.
#[test]
fn ray_job_validates_against_the_real_kuberay_crd_and_carries_the_clusters_spec() {
    let path = upstream("kuberay/ray.io_rayjobs.yaml");
    let schema = gke_rl_validate::json_schema(&std::fs::read_to_string(path).unwrap(), true).expect("the CRD has a v1 schema");
    let validator = jsonschema::validator_for(&schema).expect("the CRD schema compiles");
    let mut seen = 0;
    for (config, d) in configs() {
        let artifacts = render(&d);
        let Some(job) = artifacts.get("ray-job.yaml") else {
            assert_eq!(d.job.mode, gke_rl::model::JobMode::Cluster, "{config}");
            continue;
        };
        seen += 1;
        let manifest: Value = serde_saphyr::from_str(&job.contents).expect("valid YAML");
        let errors: Vec<String> = validator.iter_errors(&manifest).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{config}: {errors:#?}");
        assert!(artifacts.get("ray-cluster.yaml").is_none(), "{config}: the RayJob brings its own cluster");
        // The same spec as the RayCluster's, from one function.
        let mut as_cluster = d.clone();
        as_cluster.job.mode = gke_rl::model::JobMode::Cluster;
        let cluster: Value = serde_saphyr::from_str(artifact(&render(&as_cluster), "ray-cluster.yaml")).unwrap();
        assert_eq!(manifest["spec"]["rayClusterSpec"], cluster["spec"], "{config}: the RayCluster's own spec");
        assert_eq!(manifest["spec"]["rayClusterSpec"]["authOptions"]["mode"], "token", "{config}: the operator's way in");
        assert_eq!(manifest["metadata"]["name"], d.job.name.as_str());
        assert_eq!(manifest["spec"]["submissionMode"], "InteractiveMode");
        assert_eq!(manifest["spec"]["backoffLimit"], 0, "KubeRay refuses a backoffLimit in InteractiveMode");
        assert_eq!(manifest["spec"]["shutdownAfterJobFinishes"], true, "the cluster goes after the run");
        assert_eq!(manifest["spec"]["ttlSecondsAfterFinished"], d.job.rayjob_ttl_seconds_after_finished);
        assert_eq!(manifest["spec"]["activeDeadlineSeconds"].as_u64(), d.job.rayjob_active_deadline_seconds.map(|s| u64::from(s.get())));
        assert!(artifacts.get("ray-network-policy.yaml").is_none(), "{config}: tokens, not a policy that would shut out the operator");
    }
    assert!(seen >= 1, "a test config in rayjob mode");
    // The check has teeth: a misspelt field is rejected.
    let d = configs().into_iter().find(|(_, d)| d.job.mode == gke_rl::model::JobMode::Rayjob).unwrap().1;
    let mut misspelt: Value = serde_saphyr::from_str(artifact(&render(&d), "ray-job.yaml")).unwrap();
    misspelt["spec"]["shutdownAfterJobFinish"] = Value::Bool(true);
    assert!(!validator.is_valid(&misspelt));
}

/// Runs run_nemo_rl.sh with `uv` replaced by a program that records its arguments, and
/// `mkdir`/`cd` by shell functions, so nothing touches `/lustre` or `/opt`.
fn run_job_script(script: &str, env: &[(&str, &str)]) -> (std::process::Output, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("run_nemo_rl.sh");
    std::fs::write(&script_path, script).unwrap();
    let args_path = dir.path().join("uv.args");
    let uv = dir.path().join("uv");
    std::fs::write(&uv, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\n", args_path.display())).unwrap();
    make_executable(&uv);
    let stubs = dir.path().join("stubs.sh");
    std::fs::write(&stubs, "mkdir() { printf 'mkdir %s\\n' \"$*\" >&2; }\ncd() { printf 'cd %s\\n' \"$*\" >&2; }\n").unwrap();
    let path = format!("{}:/usr/bin:/bin", dir.path().display());
    let mut full_env = vec![("PATH", path.as_str()), ("BASH_ENV", stubs.to_str().unwrap())];
    full_env.extend_from_slice(env);
    let out = Command::new("bash").arg(&script_path).env_clear().envs(full_env).output().unwrap();
    let args = std::fs::read_to_string(&args_path).map(|s| s.lines().map(str::to_owned).collect()).unwrap_or_default();
    (out, args)
}

#[test]
fn job_script_passes_bash_n_and_launches_nemo_rl_with_the_overrides() {
    for (config, d) in configs() {
        let script = artifact(&render(&d), "run_nemo_rl.sh").to_owned();
        let (_dir, path) = temp_file("run_nemo_rl.sh", &script);
        assert!(bash(&["-n", path.to_str().unwrap()], &[]).status.success(), "{config}: bash -n");

        let (out, args) = run_job_script(&script, &[("HF_TOKEN", "hf_test_value"), ("WANDB_API_KEY", "wandb-test-value")]);
        assert!(out.status.success(), "{config}: {}", String::from_utf8_lossy(&out.stderr));
        let release = gke_rl::knowledge::nemo_rl_release(d.ray.image.as_str()).expect("every test config uses a known release");
        assert_eq!(args[..4], ["run", "python", release.launcher, "--config"]);
        assert_eq!(args[4], d.job.recipe.as_str());
        let overrides: BTreeMap<&str, &str> = args[5..].iter().map(|a| a.split_once('=').expect("key=value")).collect();
        assert_eq!(overrides["cluster.num_nodes"], d.topology.node_count.to_string());
        assert_eq!(overrides["policy.model_name"], d.job.model.as_str());
        assert_eq!(overrides["checkpointing.checkpoint_dir"], d.job.checkpointing.dir.as_str());
        assert_eq!(overrides["checkpointing.metric_name"], d.job.checkpointing.metric_name.as_ref().map_or("null", |m| m.as_str()));
        let wandb_expected = if d.secrets.wandb_api_key_env.is_some() { "True" } else { "False" };
        assert_eq!(overrides["logger.wandb_enabled"], wandb_expected, "{config}");
        assert!(!overrides.contains_key("policy.megatron_cfg.converter_type"), "converter_type is a no-op in NeMo-RL v0.4.0");
        assert!(!args.iter().any(|a| a.contains("hf_test_value") || a.contains("wandb-test-value")), "no secret in argv");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("mkdir -p {} {} {}", d.job.hf_home, d.job.checkpointing.dir, d.job.log_dir)), "{stderr}");
        assert_eq!(overrides[release.dataset_key], d.job.dataset.as_str(), "{config}");
    }
}

#[test]
fn job_script_requires_the_token_and_enables_wandb_only_with_a_key() {
    let script = artifact(&render(&gke_rl::Deployment::default()), "run_nemo_rl.sh").to_owned();
    let (out, args) = run_job_script(&script, &[]);
    assert!(!out.status.success() && args.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("HF_TOKEN: is not set in the Ray pods"));
    let (out, args) = run_job_script(&script, &[("HF_TOKEN", "x")]);
    assert!(out.status.success());
    assert!(args.contains(&"logger.wandb_enabled=False".to_owned()));
}

#[test]
fn secret_command_reads_tokens_from_the_environment_never_from_argv() {
    for (config, d) in configs() {
        let instructions = artifact(&render(&d), "hf-token-secret.yaml").to_owned();
        let block = |first: &str| -> String {
            let lines = instructions.lines().skip_while(|l| !l.starts_with(first)).take_while(|l| l.len() > 2);
            lines.map(|l| format!("{}\n", &l[2..])).collect()
        };
        let command = block("# { printf");
        let dir = tempfile::tempdir().unwrap();
        let kubectl = dir.path().join("kubectl");
        let log = dir.path().join("kubectl.log");
        std::fs::write(&kubectl, format!("#!/bin/sh\n{{ echo \"argv: $*\"; cat; }} >> {}\n", log.display())).unwrap();
        make_executable(&kubectl);
        let path = format!("{}:/usr/bin:/bin", dir.path().display());
        let hf = d.secrets.hf_token_env.as_str();
        let out = Command::new("bash")
            .args(["-c", &command])
            .env_clear()
            .envs([("PATH", path.as_str()), (hf, "hf_secret_value"), ("WANDB_API_KEY", "wandb_secret_value")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{config}: {}", String::from_utf8_lossy(&out.stderr));
        let log = std::fs::read_to_string(log).unwrap();
        let argv: Vec<&str> = log.lines().filter(|l| l.starts_with("argv:")).collect();
        assert!(argv.iter().all(|l| !l.contains("secret_value")), "{config}: a token reached argv: {argv:?}");
        let create = format!("create secret generic {} --namespace {}", d.secrets.kubernetes_secret, d.ray.namespace);
        assert!(argv.iter().any(|l| l.contains(&create)), "{config}: {argv:?}");
        assert!(log.contains("HF_TOKEN=hf_secret_value"), "{config}: the token goes through stdin");
        assert_eq!(log.contains("WANDB_API_KEY=wandb_secret_value"), d.secrets.wandb_api_key_env.is_some(), "{config}");

        // The Ray token's Secret, where the cluster has one: random, through stdin only.
        let token_command = block("# head -c 32");
        assert_eq!(!token_command.is_empty(), d.ray.token_auth().unwrap(), "{config}");
        if token_command.is_empty() {
            continue;
        }
        std::fs::remove_file(dir.path().join("kubectl.log")).unwrap();
        let out = Command::new("bash").args(["-c", &token_command]).env_clear().env("PATH", &path).output().unwrap();
        assert!(out.status.success(), "{config}: {}", String::from_utf8_lossy(&out.stderr));
        let log = std::fs::read_to_string(dir.path().join("kubectl.log")).unwrap();
        let (argv, token) = log.split_once('\n').unwrap();
        let create = format!(
            "argv: create secret generic {} --namespace {} --from-file=auth_token=/dev/stdin",
            gke_rl::auth::secret_name(&d),
            d.ray.namespace
        );
        assert_eq!(argv, create, "{config}");
        assert!(token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()), "{config}: 32 random bytes in hex: {token:?}");
    }
}

#[test]
fn rayignore_keeps_secrets_and_local_state_out_of_the_upload() {
    let text = artifact(&render(&gke_rl::Deployment::default()), ".rayignore").to_owned();
    // Ray's own matching (pathspec's gitwildmatch), differential-tested against Python.
    let rules = gke_rl_gitwildmatch::PatternSet::parse(&text).unwrap();
    let ignored = |path: &str| rules.excludes(path);
    for secret in [
        "env.sh",
        "nested/env.sh",
        "ray_runtime_env.json",
        "ray_runtime_env_nemo.json",
        "hf-token-secret.yaml",
        ".env",
        "prod.env",
        "key.pem",
    ] {
        assert!(ignored(secret), "{secret} must be excluded");
    }
    for dir in [".git", "cluster-toolkit", ".kube", "logs", "out"] {
        assert!(ignored(&format!("{dir}/inner/file")), "{dir}/… must be excluded");
    }
    assert!(ignored("train.sh.log"));
    for kept in ["run_nemo_rl.sh", "data/train.jsonl", "configs/grpo.yaml"] {
        assert!(!ignored(kept), "{kept} must be uploaded");
    }
}

/// The `args` script of the init container `name` in a pod template.
fn init_script(template: &Value, name: &str) -> String {
    let containers = template["spec"]["initContainers"].as_array().unwrap_or_else(|| panic!("no initContainers in {template}"));
    let container = containers.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no init container {name}"));
    container["args"][0].as_str().unwrap().to_owned()
}

#[test]
fn the_gpu_health_gate_judges_nodes_as_cluster_toolkits_does() {
    let check = gke_rl::knowledge::GPU_HEALTH_CHECK;
    let jobset: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(upstream("cluster-toolkit/nccl-jobset-example.yaml")).unwrap()).unwrap();
    let theirs = init_script(&jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"], check.container);
    let d = gke_rl::Deployment::default();
    let cluster: Value = serde_saphyr::from_str(artifact(&render(&d), "ray-cluster.yaml")).unwrap();
    let worker = &cluster["spec"]["workerGroupSpecs"][0]["template"];
    let ours = init_script(worker, check.container);
    let gate = &worker["spec"]["initContainers"][0];
    let gpus = gke_rl::knowledge::machine(d.topology.machine_type.as_str()).unwrap().gpus;
    assert_eq!(gate["resources"]["limits"]["nvidia.com/gpu"], Value::from(gpus.to_string()), "it takes the whole node's GPUs");
    assert_eq!(gate["terminationMessagePolicy"], "FallbackToLogsOnError", "its output is what readiness reports");
    assert!(ours.contains(&format!("-lt {gpus} ]")), "the machine table's count:\n{ours}");

    // Both scripts against a pretend nvidia-smi: `FAKE_GPUS` lines of driver version, and one
    // uncorrected-ECC value per `,`-separated item of `FAKE_ECC`; `FAKE_FAILS` makes it fail
    // silently, `FAKE_ECC_FAILS` only its ECC query.
    let dir = tempfile::tempdir().unwrap();
    let smi = dir.path().join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh\n[ -n \"$FAKE_FAILS\" ] && exit 9\ncase \"$1\" in\n\
         --query-gpu=driver_version) i=0; while [ $i -lt \"$FAKE_GPUS\" ]; do echo 570.124.06; i=$((i+1)); done ;;\n\
         --query-gpu=ecc.errors.uncorrected.volatile.total) [ -n \"$FAKE_ECC_FAILS\" ] && exit 9; printf '%s' \"$FAKE_ECC\" | tr , '\\n'; echo ;;\n\
         *) exit 2 ;;\nesac\n",
    )
    .unwrap();
    let apk = dir.path().join("apk");
    std::fs::write(&apk, "#!/bin/sh\nexit 0\n").unwrap();
    for program in [&smi, &apk] {
        make_executable(program);
    }
    let path = format!("{}:/usr/bin:/bin", dir.path().display());
    let passes = |script: &str, shell: &str, env: &[(&str, &str)]| {
        let script = script.replace(check.nvidia_smi, smi.to_str().unwrap());
        let out = Command::new(shell).args(["-c", &script]).env_clear().env("PATH", &path).envs(env.iter().copied()).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let zeros = "0,0,0,0,0,0,0,0";
    type Env<'a> = &'a [(&'a str, &'a str)];
    // (case, nvidia-smi's answers, healthy by upstream's check, healthy by the render's)
    let cases: [(&str, Env<'_>, bool, bool); 10] = [
        ("a healthy node", &[("FAKE_GPUS", "8"), ("FAKE_ECC", zeros)], true, true),
        ("more GPUs than asked", &[("FAKE_GPUS", "9"), ("FAKE_ECC", "0,0,0,0,0,0,0,0,0")], true, true),
        ("a GPU missing", &[("FAKE_GPUS", "7"), ("FAKE_ECC", "0,0,0,0,0,0,0")], false, false),
        ("an uncorrected ECC error", &[("FAKE_GPUS", "8"), ("FAKE_ECC", "0,0,0,2,0,0,0,0")], false, false),
        ("an unreadable count", &[("FAKE_GPUS", "8"), ("FAKE_ECC", "0,0,0,0,0,[N/A],0,0")], false, false),
        ("nvidia-smi failing", &[("FAKE_GPUS", "8"), ("FAKE_ECC", zeros), ("FAKE_FAILS", "1")], false, false),
        ("no GPU at all", &[("FAKE_GPUS", "0"), ("FAKE_ECC", "")], false, false),
        // Where upstream's `set -e` does not reach, the render's check is stricter.
        ("the ECC query failing", &[("FAKE_GPUS", "8"), ("FAKE_ECC", zeros), ("FAKE_ECC_FAILS", "1")], false, false),
        ("ECC counts for half the GPUs", &[("FAKE_GPUS", "8"), ("FAKE_ECC", "0,0,0,0")], true, false),
        ("a count nvidia-smi could not read", &[("FAKE_GPUS", "8"), ("FAKE_ECC", "0,0,[Unknown Error],0,0,0,0,0")], true, false),
    ];
    for (case, env, upstream_healthy, healthy) in cases {
        let (upstream_passes, _) = passes(&theirs, "/bin/sh", env);
        let (render_passes, said) = passes(&ours, "bash", env);
        assert_eq!(upstream_passes, upstream_healthy, "{case}: upstream's check");
        assert_eq!(render_passes, healthy, "{case}: the render's check said {said}");
    }
    let (_, said) = passes(&ours, "bash", &[("FAKE_GPUS", "8"), ("FAKE_ECC", "0,0,[Unknown Error],0,0,0,0,0")]);
    assert_eq!(said, "GPU 2: ecc.errors.uncorrected.volatile.total is [Unknown Error]\n");
    let (_, said) = passes(&ours, "bash", &[("FAKE_GPUS", "7"), ("FAKE_ECC", "0,0,0,0,0,0,0")]);
    assert_eq!(said, "only 7 GPUs, expected 8\n", "what deploy and status show");
}

/// The workers' library path is upstream's, `/usr/local/nvidia/lib64` alone: the blueprint's gIB
/// installer copies gIB's libraries into the node folder that path mounts.
#[test]
fn gibs_libraries_are_on_upstreams_library_path() {
    use gke_rl::knowledge::{NVIDIA_HOST_PATH, NVIDIA_LIBRARY_PATH, NVIDIA_MOUNT_PATH};
    let installer = std::fs::read_to_string(upstream("cluster-toolkit/nccl-installer.yaml.tftpl")).unwrap();
    let host_lib64 = format!("{NVIDIA_HOST_PATH}/lib64");
    assert!(installer.contains(&format!("path: {host_lib64}\n")), "the installer's host folder");
    assert!(installer.contains(&format!("cp -r /var/lib/gib/lib64/. /usr/local{host_lib64}\n")), "gIB's lib64 goes there");
    assert_eq!(NVIDIA_LIBRARY_PATH, format!("{NVIDIA_MOUNT_PATH}/lib64"), "which the pods mount as the library path");
    let jobset: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(upstream("cluster-toolkit/nccl-jobset-example.yaml")).unwrap()).unwrap();
    let gate = &jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(gate["env"][0], serde_json::json!({"name": "LD_LIBRARY_PATH", "value": NVIDIA_LIBRARY_PATH}));
    let cluster: Value = serde_saphyr::from_str(artifact(&render(&gke_rl::Deployment::default()), "ray-cluster.yaml")).unwrap();
    let start = cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["args"][0].as_str().unwrap();
    let exported: Vec<&str> = start.lines().filter(|l| l.contains("LD_LIBRARY_PATH=")).collect();
    assert_eq!(exported, [format!("export LD_LIBRARY_PATH={NVIDIA_LIBRARY_PATH}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}")]);
}
