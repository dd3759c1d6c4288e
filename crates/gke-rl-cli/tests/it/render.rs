//! End to end: `gke-rl render` as a user runs it, in a scratch working directory.

use std::path::Path;

use crate::common::{gke_rl, project_root, stderr};

/// The default render's files: the default image's Ray 2.46 has no token authentication, so
/// the NetworkPolicy is among them.
const ARTIFACTS: [&str; 8] = [
    "env.sh",
    "gke-a4-deployment.yaml",
    "ray-cluster.yaml",
    "hf-token-secret.yaml",
    ".rayignore",
    "ray_runtime_env.json",
    "run_nemo_rl.sh",
    "ray-network-policy.yaml",
];

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_or_else(|_| Vec::new(), |entries| entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect());
    names.sort();
    names
}

#[test]
fn default_render_writes_every_artifact_identical_to_manifests() {
    let cwd = tempfile::tempdir().unwrap();
    let out = gke_rl(cwd.path(), &["render"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for name in ARTIFACTS {
        let written = std::fs::read_to_string(cwd.path().join("out").join(name)).unwrap();
        let committed = std::fs::read_to_string(project_root().join("manifests").join(name)).unwrap();
        assert_eq!(written, committed, "{name}");
        assert!(stderr(&out).contains(&format!("created  out/{name}")), "{}", stderr(&out));
    }
    // Issue 32, items 5 and 8: the real next steps, the blueprint patch among them, with the
    // example values shown as written.
    for step in [
        "next steps:\n  gke-rl deploy\n",
        "export PROJECT_ID=… AUTHORIZED_CIDR=… HF_TOKEN=…; source out/env.sh\n",
        "gke-rl blueprint --toolkit cluster-toolkit --out out\n",
        "gcluster deploy out/gke-a4.yaml -d out/gke-a4-deployment.yaml",
        "kubectl apply -f out/ray-cluster.yaml\nthen: gke-rl submit",
    ] {
        assert!(stderr(&out).contains(step), "{step} missing from\n{}", stderr(&out));
    }
    let spaced = gke_rl(cwd.path(), &["render", "--out", "my out"]);
    for quoted in ["source 'my out/env.sh'", "--out 'my out'\n", "gcluster deploy 'my out/gke-a4.yaml' -d 'my out/gke-a4-deployment.yaml'"]
    {
        assert!(stderr(&spaced).contains(quoted), "{quoted} missing from\n{}", stderr(&spaced));
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(cwd.path().join("out/run_nemo_rl.sh")).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o755, "the job script is executable");
    assert_eq!(listing(&cwd.path().join("out")).len(), ARTIFACTS.len(), "no temporary files are left behind");

    let again = gke_rl(cwd.path(), &["render"]);
    assert!(again.status.success());
    assert_eq!(stderr(&again).matches("unchanged").count(), ARTIFACTS.len(), "{}", stderr(&again));
}

/// In `rayjob` mode the RayJob replaces the RayCluster: a RayCluster file an earlier render wrote
/// is removed (so that `kubectl apply -f out/` applies only the current render), one gke-rl did
/// not write stays, and the next steps end in the commands that run the RayJob.
#[test]
fn a_rayjob_render_replaces_the_raycluster_and_says_how_to_run_it() {
    let config = project_root().join("tests/fixtures/configs/rayjob.yaml");
    let render = |cwd: &Path| gke_rl(cwd, &["render", "--config", config.to_str().unwrap()]);
    let cwd = tempfile::tempdir().unwrap();
    assert!(gke_rl(cwd.path(), &["render"]).status.success());
    let out = render(cwd.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let files = listing(&cwd.path().join("out"));
    assert!(files.contains(&"ray-job.yaml".to_owned()) && !files.contains(&"ray-cluster.yaml".to_owned()), "{files:?}");
    assert!(!files.contains(&"ray-network-policy.yaml".to_owned()), "RayJob mode has tokens: {files:?}");
    assert!(
        stderr(&out).contains("  removed  out/ray-cluster.yaml  (this render has none; what was applied from it stays in the cluster)\n"),
        "{}",
        stderr(&out)
    );
    for step in [
        "next steps:\n  gke-rl deploy --config ",
        "then: gke-rl submit --config ",
        "    applies out/ray-job.yaml, waits for its cluster, submits the job to it and follows the run",
    ] {
        assert!(stderr(&out).contains(step), "{step} missing from {}", stderr(&out));
    }
    // A RayCluster file of the user's own, or a link, is left alone.
    for own in [false, true] {
        let cwd = tempfile::tempdir().unwrap();
        std::fs::create_dir(cwd.path().join("out")).unwrap();
        let mine = cwd.path().join("mine.yaml");
        std::fs::write(&mine, "kind: RayCluster\n").unwrap();
        if own {
            std::fs::copy(&mine, cwd.path().join("out/ray-cluster.yaml")).unwrap();
        } else {
            std::os::unix::fs::symlink(&mine, cwd.path().join("out/ray-cluster.yaml")).unwrap();
        }
        let out = render(cwd.path());
        assert!(out.status.success() && !stderr(&out).contains("removed"), "{}", stderr(&out));
        assert!(std::fs::symlink_metadata(cwd.path().join("out/ray-cluster.yaml")).is_ok() && mine.is_file());
    }
}

/// On a cluster gke-rl did not create, the next steps are deploy's, which fits the render to
/// the cluster, or the objects by hand; in RayJob mode no RayCluster is named.
#[test]
fn an_existing_clusters_next_steps_name_what_each_mode_applies() {
    let existing = "project:\n  existing_cluster: true\nlustre:\n  existing: true\n";
    for (mode, wanted, unwanted) in [
        ("", "then kubectl apply -f out/ray-network-policy.yaml; kubectl apply -f out/ray-cluster.yaml", "ray-job.yaml"),
        (
            "job:\n  mode: rayjob\nray:\n  image: nvcr.io/nvidia/nemo-rl:v0.7.0\n",
            "then: gke-rl submit\n    applies out/ray-job.yaml, waits for its cluster",
            "ray-cluster.yaml",
        ),
    ] {
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("gke-rl.yaml"), format!("{existing}{mode}")).unwrap();
        let out = gke_rl(cwd.path(), &["render"]);
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        let steps = &err[err.find("next steps:").expect("next steps")..];
        assert!(steps.contains("reads cluster ray-a4-gpu-spot, fits the ") && steps.contains(wanted), "{steps}");
        assert!(!steps.contains(unwanted) && !steps.contains("gcluster"), "{steps}");
    }
}

#[test]
fn gke_rl_yaml_in_the_working_directory_is_picked_up() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("gke-rl.yaml"), "topology:\n  node_count: 2\n").unwrap();
    let out = gke_rl(cwd.path(), &["render", "--out", "artifacts"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cluster = std::fs::read_to_string(cwd.path().join("artifacts/ray-cluster.yaml")).unwrap();
    assert!(cluster.contains("replicas: 2\n") && cluster.contains("from gke-rl.yaml."), "{cluster}");
}

#[test]
fn env_file_import_renders_the_codelab_values_and_warns_about_the_token() {
    let cwd = tempfile::tempdir().unwrap();
    let codelab = "export PROJECT_ID=\"acme-123\"\nexport NUM_NODES=\"2\"\nexport HF_TOKEN=\"hf_do_not_copy\"\n";
    std::fs::write(cwd.path().join("env.sh"), codelab).unwrap();
    let out = gke_rl(cwd.path(), &["render", "--env-file", "env.sh", "--out", "o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning[env-sh-secret-ignored]") && stderr(&out).contains("env.sh:3:17"), "{}", stderr(&out));
    for name in ARTIFACTS {
        let text = std::fs::read_to_string(cwd.path().join("o").join(name)).unwrap();
        assert!(!text.contains("hf_do_not_copy"), "{name} holds the token");
    }
    let env_sh = std::fs::read_to_string(cwd.path().join("o/env.sh")).unwrap();
    assert!(env_sh.contains("export PROJECT_ID=acme-123\n") && env_sh.contains("export NUM_NODES=2\n"));
}

/// Bad input: one clear error with file:line:column, exit code 2, nothing written.
fn assert_refused(file: &str, contents: &str, flag: &str, expected: &[&str]) {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join(file), contents).unwrap();
    let out = gke_rl(cwd.path(), &["render", flag, file]);
    assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
    for needle in expected {
        assert!(stderr(&out).contains(needle), "{file}: expected {needle:?} in\n{}", stderr(&out));
    }
    assert!(stderr(&out).contains("help:"), "{}", stderr(&out));
    assert!(!cwd.path().join("out").exists(), "nothing is written on bad input");
}

#[test]
fn bad_configs_are_refused_with_position_and_fix() {
    assert_refused(
        "c.yaml",
        "lustre:\n  capacity_gb: 9000\n",
        "--config",
        &["config-unknown-key", "c.yaml:2:3", "did you mean `capacity_gib`?"],
    );
    assert_refused("c.yaml", "topology:\n  node_count: \"eight\"\n", "--config", &["config-invalid-value", "c.yaml:2:"]);
    assert_refused("c.yaml", "topology:\n  node_count: -8\n", "--config", &["config-invalid-value", "c.yaml:2:"]);
    assert_refused("c.yaml", "topology: [1\n", "--config", &["c.yaml:1:"]);
}

/// Renders `config` (as `c.yaml`) in `cwd`: refused (exit 1) with each of `expected` said; its
/// stderr.
fn render_refused(cwd: &Path, config: &str, expected: &[&str]) -> String {
    std::fs::write(cwd.join("c.yaml"), config).unwrap();
    let out = gke_rl(cwd, &["render", "--config", "c.yaml", "--out", "o"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for expected in expected {
        assert!(err.contains(expected), "expected {expected:?} in\n{err}");
    }
    err
}

/// A render that validation refuses is said at the config's line of the key that decides each
/// error, naming it, and nothing is written: an option set that the defaults do not fit, a
/// recipe the release does not ship, an override key its recipe lacks, and an override of a
/// key gke-rl sets from a field of its own.
#[test]
fn render_errors_are_said_at_the_config_key_that_decides_them() {
    let cwd = tempfile::tempdir().unwrap();
    let config = "ray:\n  head:\n    node_pool: system\njob:\n  recipe: examples/configs/grpo_math_70B_megatrn.yaml\n  overrides:\n    grpo.val_period: 10\n    policy.max_total_sequenc_length: 4096\n";
    let err = render_refused(
        cwd.path(),
        config,
        &[
            "error[resources-exceed-node]",
            " --> c.yaml:2:3\n",
            "`ray.head.memory_request` decides it, and is not set here (its default is used); rendered at ray-cluster.yaml:",
            "error[recipe-missing]: NeMo-RL v0.4.0 does not ship `examples/configs/grpo_math_70B_megatrn.yaml`",
            " --> c.yaml:5:11\n",
            "did you mean `examples/configs/grpo_math_70B_megatron.yaml`?",
        ],
    );
    assert!(!err.contains("--> ray-cluster.yaml") && !err.contains("--> run_nemo_rl.sh"), "{err}");
    assert!(!cwd.path().join("o").exists(), "nothing is written");

    let fixed = config.replace("node_pool: system", "memory_request: 32Gi").replace("megatrn", "megatron");
    let err = render_refused(
        cwd.path(),
        &fixed,
        &[
            "error[override-unknown-key]: NeMo-RL v0.4.0's recipe has no key `policy.max_total_sequenc_length`",
            " --> c.yaml:8:5\n",
            "did you mean `policy.max_total_sequence_length`?",
            "`job.overrides.policy.max_total_sequenc_length` decides it",
        ],
    );
    assert_eq!(err.matches("error[").count(), 1, "{err}");

    let good = config.replace("node_pool: system", "memory_request: 32Gi").replace("megatrn", "megatron").replace("sequenc_", "sequence_");
    std::fs::write(cwd.path().join("c.yaml"), &good).unwrap();
    let out = gke_rl(cwd.path(), &["render", "--config", "c.yaml", "--out", "o"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let script = std::fs::read_to_string(cwd.path().join("o/run_nemo_rl.sh")).unwrap();
    assert!(
        script.ends_with("  data.dataset_name=DeepScaler \\\n  grpo.val_period=10 \\\n  policy.max_total_sequence_length=4096\n"),
        "{script}"
    );

    assert_refused(
        "c.yaml",
        "job:\n  overrides:\n    grpo.max_num_steps: 3\n",
        "--config",
        &["config-override-set-elsewhere", "c.yaml:3:5", "set `job.max_num_steps` instead"],
    );
    assert_refused("c.yaml", "job:\n  overrides:\n    grpo max steps: 3\n", "--config", &["config-invalid-value", "c.yaml:3:"]);
    assert_refused("c.yaml", "job:\n  overrides:\n    grpo.val_period: [1, 2]\n", "--config", &["config-invalid-value", "c.yaml:3:"]);
    assert_refused(
        "c.yaml",
        "job:\n  overrides:\n    a.b: \"x\\ny\"\n",
        "--config",
        &["config-invalid-value", "c.yaml:3:10", "control character"],
    );
    assert_refused("c.yaml", "job:\n  overrides:\n    cluster: \"{num_nodes: 1}\"\n", "--config", &["set `topology.node_count` instead"]);
}

#[test]
fn malformed_env_sh_is_refused_with_position_and_fix() {
    assert_refused("env.sh", "export ZONE=us-east1-b\nexport REGION=\"us-east1\n", "--env-file", &["env-sh-unterminated", "env.sh:2:15"]);
    assert_refused(
        "env.sh",
        "export AUTHORIZED_CIDR=$(curl -s ifconfig.me)/32\n",
        "--env-file",
        &["env-sh-command-substitution", "env.sh:1:24"],
    );
}

#[test]
fn files_gke_rl_did_not_generate_are_only_overwritten_with_force() {
    let cwd = tempfile::tempdir().unwrap();
    let out_dir = cwd.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::write(out_dir.join("env.sh"), "export HF_TOKEN=mine\n").unwrap();
    let refused = gke_rl(cwd.path(), &["render"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("refusing to overwrite") && stderr(&refused).contains("--force"), "{}", stderr(&refused));
    assert_eq!(listing(&out_dir), ["env.sh"], "nothing else is written");
    assert_eq!(std::fs::read_to_string(out_dir.join("env.sh")).unwrap(), "export HF_TOKEN=mine\n");

    let forced = gke_rl(cwd.path(), &["render", "--force"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert!(stderr(&forced).contains("updated  out/env.sh"));
}

#[test]
fn config_and_env_file_together_is_a_usage_error() {
    let cwd = tempfile::tempdir().unwrap();
    let out = gke_rl(cwd.path(), &["render", "--config", "a.yaml", "--env-file", "env.sh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot be used with"), "{}", stderr(&out));
}

#[test]
fn missing_and_oversized_inputs_are_clear_errors() {
    let cwd = tempfile::tempdir().unwrap();
    let out = gke_rl(cwd.path(), &["render", "--config", "nope.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read nope.yaml"), "{}", stderr(&out));

    std::fs::write(cwd.path().join("big.yaml"), vec![b'#'; 11 * 1024 * 1024]).unwrap();
    let out = gke_rl(cwd.path(), &["render", "--config", "big.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("at most 10 MiB"), "{}", stderr(&out));
}

/// Issue 32, item 9: an installed binary has no clone beside it, so it prints the generated
/// catalogue and schema itself, as the clone holds them; the catalogue without its
/// maintainers' note (issue 52: a binary's user edits nothing).
#[test]
fn the_binary_prints_its_catalogue_and_config_schema() {
    let cwd = tempfile::tempdir().unwrap();
    for (command, file) in [("models", "docs/models.md"), ("schema", "schemas/gke-rl.schema.json")] {
        let out = gke_rl(cwd.path(), &[command]);
        assert!(out.status.success(), "{command}: {}", stderr(&out));
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(!printed.contains("do not edit"), "{command}: {printed}");
        let text = std::fs::read_to_string(project_root().join(file)).unwrap();
        assert!(text.ends_with(&*printed) && printed.len() + 100 > text.len(), "{command}");
    }
    let version = gke_rl(cwd.path(), &["--version"]);
    assert!(String::from_utf8_lossy(&version.stdout).contains("models (`gke-rl models`)"));
}

/// Issue 52: each shell's own completion function, run on the script `gke-rl completions`
/// prints, completes a subcommand's options (bash's did not: clap-rs/clap#6421).
#[test]
fn completions_complete_a_subcommands_options_in_bash_zsh_and_fish() {
    let dir = tempfile::tempdir().unwrap();
    let script = |shell: &str, file: &str| {
        let out = gke_rl(dir.path(), &["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        std::fs::write(dir.path().join(file), &out.stdout).unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let bash = script("bash", "gke-rl.bash");
    let function = bash.lines().find_map(|l| l.trim().strip_prefix("complete -F ")?.split_whitespace().next()).unwrap().to_owned();
    script("zsh", "_gke-rl");
    script("fish", "gke-rl.fish");
    let folder = dir.path().display().to_string();
    let bash_run = format!(
        "source {folder}/gke-rl.bash; COMP_WORDS=(gke-rl submit --); COMP_CWORD=2; {function} gke-rl -- submit; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    // zsh completes only in its line editor: a pseudo-terminal (zpty) types the line and two
    // tabs, and its output is read until the listing's last option.
    let zsh_run = format!(
        "zmodload zsh/zpty; zpty z zsh -f -i; \
         zpty -w z \"PS1='> '; fpath=({folder} \\$fpath); autoload -U compinit; compinit -u -D; LISTMAX=10000; gke-rl() {{}}\"; \
         zpty -n -w z $'gke-rl submit --\\t\\t'; zpty -r z out '*--working-dir*'; print -r -- \"$out\"; zpty -d z"
    );
    let fish_run = format!("source {folder}/gke-rl.fish; complete -C 'gke-rl submit --'");
    for (shell, args) in
        [("bash", ["--norc", "-c", &bash_run]), ("zsh", ["-f", "-c", &zsh_run]), ("fish", ["--no-config", "-c", &fish_run])]
    {
        let out = std::process::Command::new("timeout").arg("30").arg(shell).args(args).output().unwrap_or_else(|e| panic!("{shell}: {e}"));
        let listed = String::from_utf8_lossy(&out.stdout);
        for option in ["--address", "--no-supervisor", "--runs-dir"] {
            assert!(
                listed.contains(option),
                "{shell} does not complete `gke-rl submit {option}`: {listed}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Run by `cargo xtask` (which says so in `GKE_RL_CALLED_AS`), the binary's usage and hints name
/// `cargo xtask`, the command a clone has; any other value is ignored.
#[test]
fn run_by_cargo_xtask_the_binary_is_called_by_that_name() {
    let usage = |called_as: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gke-rl"))
            .args(["render", "--help"])
            .env(gke_rl_cli::CALLED_AS, called_as)
            .output()
            .unwrap();
        crate::common::stdout(&out).lines().find(|l| l.starts_with("Usage:")).unwrap_or_default().to_owned()
    };
    assert_eq!(usage(gke_rl_cli::XTASK), "Usage: cargo xtask render [OPTIONS]");
    assert_eq!(usage("rm -rf /"), "Usage: gke-rl render [OPTIONS]");
}
