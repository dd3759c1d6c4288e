//! The job side: `run_nemo_rl.sh` (the Ray entrypoint) and `ray_runtime_env.json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{HF_TOKEN_KEY, WANDB_API_KEY_KEY, upload_excludes};
use crate::knowledge::{self, NemoRlRelease};
use crate::model::{Deployment, Provisioning};
use crate::quote::{hydra_string, sh};

/// The NeMo-RL release the image runs. A NeMo-RL version gke-rl does not know gets the layout
/// of the newest known release at or before it, never an older one; any other image gets the
/// codelab's launcher and keys. Validate says which were assumed and not checked.
fn release(d: &Deployment) -> &'static NemoRlRelease {
    knowledge::NemoRlImage::of(d.ray.image.as_str()).layout().unwrap_or(knowledge::CODELAB_NEMO_RL)
}

/// `ray_runtime_env.json`: non-secret settings only. JSON has no comments, so the header is
/// the first environment variable.
///
/// Gloo's bootstrap stays on the pod network. NCCL's is pinned there only without the fabric:
/// with it, gIB's `set_nccl_env.sh` picks NCCL's interfaces, and a runtime env value would
/// override what the workers inherit from it.
pub(super) fn runtime_env(d: &Deployment, header: &str, fabric: bool) -> String {
    let mut env_vars =
        BTreeMap::from([("GKE_RL_GENERATED_BY", header), ("HF_HOME", d.job.hf_home.as_str()), ("GLOO_SOCKET_IFNAME", "eth0")]);
    if !fabric {
        env_vars.insert("NCCL_SOCKET_IFNAME", "eth0");
    }
    let excludes: Vec<&str> = upload_excludes().collect();
    #[derive(serde::Serialize)]
    struct RuntimeEnv<'a> {
        env_vars: BTreeMap<&'a str, &'a str>,
        excludes: Vec<&'a str>,
    }
    let mut text = serde_json::to_string_pretty(&RuntimeEnv { env_vars, excludes }).expect("strings serialize");
    text.push('\n');
    text
}

/// One Hydra override of the job script: the recipe key, the config key it comes from, and the
/// value as Hydra reads it.
pub(super) struct Override {
    pub key: String,
    pub config_key: String,
    pub value: String,
    /// Whether the shell expands the value at run time (gke-rl's own `$wandb_enabled`): else it
    /// is quoted for the shell.
    pub expanded: bool,
}

/// The Hydra overrides gke-rl sets, in the codelab's order, minus
/// `policy.megatron_cfg.converter_type` (nothing in NeMo-RL v0.4.0 reads it), the dataset under
/// the release's key, and on flex-start the checkpoint deadline: (recipe key, config key,
/// value). `logger.wandb_enabled` is decided at run time.
fn own_overrides(d: &Deployment) -> Vec<(&'static str, &'static str, String)> {
    let job = &d.job;
    let ckpt = &job.checkpointing;
    let string = |s: &str| hydra_string(s);
    let mut overrides = vec![
        (WANDB_ENABLED_KEY, "secrets.wandb_api_key_env", "\"$wandb_enabled\"".to_owned()),
        ("policy.model_name", "job.model", string(job.model.as_str())),
        ("cluster.num_nodes", "topology.node_count", d.topology.node_count.to_string()),
        ("cluster.gpus_per_node", "topology.gpus_per_node", d.topology.gpus_per_node.to_string()),
        ("logger.wandb.name", "job.name", string(job.name.as_str())),
        ("grpo.max_num_steps", "job.max_num_steps", job.max_num_steps.to_string()),
        ("grpo.num_generations_per_prompt", "job.num_generations_per_prompt", job.num_generations_per_prompt.to_string()),
        ("grpo.num_prompts_per_step", "job.num_prompts_per_step", job.num_prompts_per_step.to_string()),
        ("policy.train_global_batch_size", "job.train_global_batch_size", job.train_global_batch_size.to_string()),
        ("checkpointing.enabled", "job.checkpointing.enabled", if ckpt.enabled { "True" } else { "False" }.to_owned()),
        ("checkpointing.save_period", "job.checkpointing.save_period", ckpt.save_period.to_string()),
        ("checkpointing.keep_top_k", "job.checkpointing.keep_top_k", ckpt.keep_top_k.map_or_else(|| "null".to_owned(), |k| k.to_string())),
        (
            "checkpointing.metric_name",
            "job.checkpointing.metric_name",
            ckpt.metric_name.as_ref().map_or_else(|| "null".to_owned(), |m| string(m.as_str())),
        ),
        ("checkpointing.checkpoint_dir", "job.checkpointing.dir", string(ckpt.dir.as_str())),
        ("logger.log_dir", "job.log_dir", string(job.log_dir.as_str())),
        (release(d).dataset_key, "job.dataset", string(job.dataset.as_str())),
    ];
    // Flex-start nodes go after seven days: NeMo-RL saves (and stops) before then.
    if d.topology.provisioning == Provisioning::FlexStart && release(d).recipe_key(knowledge::CHECKPOINT_DEADLINE_KEY).is_some() {
        overrides.push((
            knowledge::CHECKPOINT_DEADLINE_KEY,
            "topology.provisioning",
            knowledge::nemo_rl_duration(knowledge::flex_start_deadline_seconds()),
        ));
    }
    overrides
}

/// Decided at run time, by whether the W&B key is in the pods' environment.
const WANDB_ENABLED_KEY: &str = "logger.wandb_enabled";

/// The config key from which gke-rl sets the recipe key `key` (`+` or `++` before it or not),
/// or a key under it or above it, where it does: `job.overrides` cannot set it too (an override
/// of `cluster` would replace `cluster.num_nodes` whole).
pub(super) fn set_from(d: &Deployment, key: &str) -> Option<&'static str> {
    let key = key.trim_start_matches('+');
    let related = |own: &str| own == key || own.starts_with(&format!("{key}.")) || key.starts_with(&format!("{own}."));
    own_overrides(d).into_iter().find(|(own, ..)| related(own)).map(|(_, config_key, _)| config_key)
}

/// Every override of the job script: gke-rl's, then the config's `job.overrides`.
pub(super) fn overrides(d: &Deployment) -> Vec<Override> {
    let own = own_overrides(d).into_iter().map(|(key, config_key, value)| Override {
        key: key.to_owned(),
        config_key: config_key.to_owned(),
        value,
        expanded: key == WANDB_ENABLED_KEY,
    });
    let configured = d.job.overrides.iter().map(|(key, value)| Override {
        key: key.to_string(),
        config_key: format!("job.overrides.{key}"),
        value: value.0.as_deref().map_or_else(|| "null".to_owned(), hydra_value),
        expanded: false,
    });
    own.chain(configured).collect()
}

/// A value from the config as Hydra should read it: a number, a boolean or null as written;
/// any other text as a quoted string, never as Hydra's grammar (a list, a dictionary).
fn hydra_value(text: &str) -> String {
    let literal = text.parse::<f64>().is_ok() || matches!(text.to_ascii_lowercase().as_str(), "true" | "false" | "null");
    if literal { text.to_owned() } else { hydra_string(text) }
}

pub(super) fn script(d: &Deployment) -> String {
    let secret = &d.secrets.kubernetes_secret;
    let wandb = if d.secrets.wandb_api_key_env.is_some() {
        format!("wandb_enabled=False\nif [ -n \"${{{WANDB_API_KEY_KEY}:-}}\" ]; then wandb_enabled=True; fi\n")
    } else {
        "wandb_enabled=False\n".to_owned()
    };
    let mut out = format!(
        "# The Ray job's entrypoint: `bash run_nemo_rl.sh`, run on the head pod.
set -euo pipefail

# NeMo-RL passes os.environ to ray.init; without this the job's runtime env conflicts with it.
export RAY_OVERRIDE_JOB_RUNTIME_ENV=1

# Tokens come from the Kubernetes Secret `{secret}` (secretKeyRef in ray-cluster.yaml),
# never from a file or the runtime env.
: \"${{{HF_TOKEN_KEY}:?is not set in the Ray pods: create the Secret {secret} (see hf-token-secret.yaml) before the RayCluster}}\"
{wandb}
mkdir -p {hf_home} {checkpoint_dir} {log_dir}
cd {nemo_rl_dir}
exec uv run python {launcher} \\
  --config {recipe}",
        nemo_rl_dir = knowledge::NEMO_RL_DIR,
        launcher = release(d).launcher,
        hf_home = sh(d.job.hf_home.as_str()),
        checkpoint_dir = sh(d.job.checkpointing.dir.as_str()),
        log_dir = sh(d.job.log_dir.as_str()),
        recipe = sh(d.job.recipe.as_str()),
    );
    for Override { key, value, expanded, .. } in overrides(d) {
        // The run-time value is the shell's to expand; every other is quoted for it.
        let word = if expanded { format!("{key}={value}") } else { sh(&format!("{key}={value}")) };
        let _ = write!(out, " \\\n  {word}");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quote::words;

    /// The words the launch line's overrides reach Hydra as, after the shell.
    fn launched(config: &str) -> Vec<String> {
        let d = crate::config::from_yaml(config).expect("a valid config");
        let script = script(&d);
        let launch = script.split("--config ").nth(1).expect("a launch line");
        words(&launch.replace("\\\n", " ")).expect("shell words").into_iter().skip(1).collect()
    }

    #[test]
    fn configured_overrides_reach_hydra_as_values_never_as_its_grammar() {
        let config = "job:\n  overrides:\n    grpo.val_period: 10\n    a.flag: true\n    a.none: null\n    a.text: it's $HOME\n    a.list: '[1, 2]'\n    a.ref: '${oc.env:HF_TOKEN}'\n";
        let words = launched(config);
        for expected in
            ["a.flag=true", "a.list='[1, 2]'", "a.none=null", r"a.ref='${oc.env:HF_TOKEN}'", r"a.text='it\'s $HOME'", "grpo.val_period=10"]
        {
            assert!(words.iter().any(|w| w == expected), "{expected} not in {words:?}");
        }
        // gke-rl's own run-time value is the shell's to expand; nothing configured is.
        assert!(script(&crate::config::from_yaml(config).unwrap()).contains("logger.wandb_enabled=\"$wandb_enabled\""));
    }

    #[test]
    fn a_key_gke_rl_sets_or_one_above_or_under_it_is_its_fields() {
        let d = Deployment::default();
        assert_eq!(set_from(&d, "grpo.max_num_steps"), Some("job.max_num_steps"));
        assert_eq!(set_from(&d, "+cluster"), Some("topology.node_count"));
        assert_eq!(set_from(&d, "checkpointing.enabled.x"), Some("job.checkpointing.enabled"));
        assert_eq!(set_from(&d, "grpo.val_period"), None);
        assert_eq!(set_from(&d, "grpo.max_num_steps_x"), None);
    }
}
