//! The job side: `run_nemo_rl.sh` (the Ray entrypoint) and `ray_runtime_env.json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{HF_TOKEN_KEY, WANDB_API_KEY_KEY, upload_excludes};
use crate::knowledge::{self, NemoRlRelease};
use crate::model::{Deployment, Provisioning};
use crate::quote::{hydra_string, sh};

/// Where NeMo-RL lives in its image.
const NEMO_RL_DIR: &str = "/opt/nemo-rl";

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

/// The Hydra overrides, in the codelab's order, minus `policy.megatron_cfg.converter_type`
/// (nothing in NeMo-RL v0.4.0 reads it), the dataset under the release's key, and on
/// flex-start the checkpoint deadline.
/// `logger.wandb_enabled` is decided at run time.
fn overrides(d: &Deployment) -> Vec<(&'static str, String)> {
    let job = &d.job;
    let ckpt = &job.checkpointing;
    let string = |s: &str| hydra_string(s);
    let mut overrides = vec![
        ("policy.model_name", string(job.model.as_str())),
        ("cluster.num_nodes", d.topology.node_count.to_string()),
        ("cluster.gpus_per_node", d.topology.gpus_per_node.to_string()),
        ("logger.wandb.name", string(job.name.as_str())),
        ("grpo.max_num_steps", job.max_num_steps.to_string()),
        ("grpo.num_generations_per_prompt", job.num_generations_per_prompt.to_string()),
        ("grpo.num_prompts_per_step", job.num_prompts_per_step.to_string()),
        ("policy.train_global_batch_size", job.train_global_batch_size.to_string()),
        ("checkpointing.enabled", if ckpt.enabled { "True" } else { "False" }.to_owned()),
        ("checkpointing.save_period", ckpt.save_period.to_string()),
        ("checkpointing.keep_top_k", ckpt.keep_top_k.map_or_else(|| "null".to_owned(), |k| k.to_string())),
        ("checkpointing.metric_name", ckpt.metric_name.as_ref().map_or_else(|| "null".to_owned(), |m| string(m.as_str()))),
        ("checkpointing.checkpoint_dir", string(ckpt.dir.as_str())),
        ("logger.log_dir", string(job.log_dir.as_str())),
        (release(d).dataset_key, string(job.dataset.as_str())),
    ];
    // Flex-start nodes go after seven days: NeMo-RL saves (and stops) before then.
    if d.topology.provisioning == Provisioning::FlexStart && release(d).recipe_key(knowledge::CHECKPOINT_DEADLINE_KEY).is_some() {
        overrides.push((knowledge::CHECKPOINT_DEADLINE_KEY, knowledge::nemo_rl_duration(knowledge::flex_start_deadline_seconds())));
    }
    overrides
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
cd {NEMO_RL_DIR}
exec uv run python {launcher} \\
  --config {recipe} \\
  logger.wandb_enabled=\"$wandb_enabled\"",
        launcher = release(d).launcher,
        hf_home = sh(d.job.hf_home.as_str()),
        checkpoint_dir = sh(d.job.checkpointing.dir.as_str()),
        log_dir = sh(d.job.log_dir.as_str()),
        recipe = sh(d.job.recipe.as_str()),
    );
    for (key, value) in overrides(d) {
        let _ = write!(out, " \\\n  {}", sh(&format!("{key}={value}")));
    }
    out.push('\n');
    out
}
