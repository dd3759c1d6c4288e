//! `env.sh`: the shell view of a [`Deployment`]. One table maps each variable to a model
//! field; rendering and importing both walk it, so `import(contents(d)) == d`.

mod parse;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use gke_rl_yaml::Value as YamlValue;
use serde_json::Value;

pub use parse::{Assignment, Fallback, Part, parse};
pub use parse::{crlf, crlf_at};

use crate::diagnostic::Diagnostic;
use crate::model::Deployment;
use crate::quote;

/// How a variable's text maps to its model field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Number,
    Flag,
    /// Empty text is null.
    OptionalText,
    /// Empty text is null.
    OptionalNumber,
    /// Null is `${NAME:?…}`: known only where the artifacts are used.
    FromEnvironment,
    /// Names separated by spaces. Empty text is null.
    OptionalList,
    /// A reservation's name: empty leaves the mode to `PROVISIONING`.
    Reservation,
    /// `spot`, `reservation` (named by `RESERVATION`, set before), `flex-start`, `on-demand`.
    Mode,
}

/// One line of env.sh.
struct Var {
    name: &'static str,
    /// JSON pointer into the serialized [`Deployment`].
    field: &'static str,
    kind: Kind,
    doc: &'static str,
}

const fn var(name: &'static str, field: &'static str, kind: Kind, doc: &'static str) -> Var {
    Var { name, field, kind, doc }
}

/// Sections of env.sh, in order. Names follow the codelab's `env.sh` where it has one.
const SECTIONS: &[(&str, &[Var])] = &[
    (
        "Google Cloud",
        &[
            var("PROJECT_ID", "/project/project_id", Kind::FromEnvironment, "Google Cloud project id"),
            var("REGION", "/project/region", Kind::Text, "region of the regional GKE cluster"),
            var("ZONE", "/project/zone", Kind::Text, "zone of the GPU nodes and the Lustre instance"),
            var("CLUSTER_NAME", "/project/cluster_name", Kind::Text, "GKE cluster, gcluster deployment and RayCluster name"),
            var(
                "EXISTING_CLUSTER",
                "/project/existing_cluster",
                Kind::Flag,
                "true: the cluster exists (xpk, Terraform, the console); gke-rl never creates or deletes it",
            ),
            var(
                "AUTHORIZED_CIDR",
                "/network/authorized_cidr",
                Kind::FromEnvironment,
                "CIDR allowed to reach the control plane, e.g. your IP/32",
            ),
        ],
    ),
    (
        "GPU nodes",
        &[
            var("NUM_NODES", "/topology/node_count", Kind::Number, "GPU nodes, one Ray worker each"),
            var("GPUS_PER_NODE", "/topology/gpus_per_node", Kind::Number, "GPUs per node"),
            var("MACHINE_TYPE", "/topology/machine_type", Kind::Text, "machine type of the GPU node pool"),
            var("ACCELERATOR_TYPE", "/topology/accelerator", Kind::Text, "GKE accelerator label of the GPU nodes"),
            var("RESERVATION", "/topology/provisioning", Kind::Reservation, "the reservation the nodes come from; empty: none"),
            var("GPU_POOL", "/topology/pool", Kind::OptionalText, "an existing cluster's GPU node pool; empty: deploy picks it"),
            var(
                "PROVISIONING",
                "/topology/provisioning",
                Kind::Mode,
                "spot, reservation (RESERVATION), flex-start or on-demand: how the GPU nodes are obtained",
            ),
        ],
    ),
    (
        "Managed Lustre",
        &[
            var("LUSTRE_INSTANCE_ID", "/lustre/instance_id", Kind::Text, "Managed Lustre instance id"),
            var("LUSTRE_CAPACITY", "/lustre/capacity_gib", Kind::Number, "capacity in GiB"),
            var("LUSTRE_THROUGHPUT", "/lustre/throughput_mbps_per_tib", Kind::Number, "throughput tier in MB/s per TiB"),
            var("LUSTRE_MOUNT_PATH", "/lustre/mount_path", Kind::Text, "mount path in the Ray pods"),
            var("LUSTRE_PVC_NAME", "/lustre/pvc_name", Kind::Text, "PersistentVolumeClaim mounted by the Ray pods"),
            var("LUSTRE_EXISTING", "/lustre/existing", Kind::Flag, "true: the instance exists; gke-rl attaches it and never deletes it"),
        ],
    ),
    (
        "Ray",
        &[
            var("RAY_IMAGE", "/ray/image", Kind::Text, "image of the head and the workers"),
            var("RAYCLUSTER_RAY_VERSION", "/ray/ray_version", Kind::OptionalText, "rayVersion; empty: the Ray version inside RAY_IMAGE"),
            var(
                "RAY_AUTH",
                "/ray/auth",
                Kind::OptionalText,
                concat!("token or disabled; empty: token where the image's Ray has it (", crate::token_auth_ray!(), "+)"),
            ),
            var("K8S_NAMESPACE", "/ray/namespace", Kind::Text, "namespace of the RayCluster and the Secret"),
            var("HEAD_NODE_POOL", "/ray/head/node_pool", Kind::Text, "dedicated, system or gpu: where the head pod runs"),
            var("HEAD_MACHINE_TYPE", "/ray/head/machine_type", Kind::Text, "machine type of the head's dedicated on-demand pool"),
            var("HEAD_POOL", "/ray/head/pool", Kind::OptionalText, "an existing cluster's CPU pool for the head; empty: deploy picks one"),
            var("HEAD_CPU_REQUEST", "/ray/head/cpu_request", Kind::Text, "head pod CPU request"),
            var("HEAD_CPU_LIMIT", "/ray/head/cpu_limit", Kind::Text, "head pod CPU limit"),
            var("HEAD_MEMORY_REQUEST", "/ray/head/memory_request", Kind::Text, "head pod memory request"),
            var("HEAD_MEMORY_LIMIT", "/ray/head/memory_limit", Kind::Text, "head pod memory limit"),
            var("WORKER_GROUP", "/ray/worker/group_name", Kind::Text, "worker group name"),
            var("WORKER_CPU", "/ray/worker/cpu", Kind::Text, "worker pod CPU (request and limit)"),
            var("WORKER_MEMORY", "/ray/worker/memory", Kind::Text, "worker pod memory (request and limit)"),
        ],
    ),
    (
        "GPU fabric",
        &[
            var("FABRIC_MODE", "/fabric/mode", Kind::Text, "auto, on or off: GPUDirect RDMA (gIB) in the Ray workers"),
            var("SHM_SIZE", "/fabric/shm_size", Kind::Text, "size limit of each worker's /dev/shm"),
            var(
                "RDMA_NETWORKS",
                "/fabric/rdma_networks",
                Kind::OptionalList,
                "GKE networks the workers attach for RDMA, separated by spaces; empty: the blueprint's, or the existing GPU pool's",
            ),
        ],
    ),
    (
        "NeMo-RL GRPO job",
        &[
            var("WORKLOAD", "/job/name", Kind::Text, "Ray submission id and W&B run name"),
            var("RECIPE_CONFIG", "/job/recipe", Kind::Text, "NeMo-RL recipe, relative to /opt/nemo-rl"),
            var("MODEL_NAME", "/job/model", Kind::Text, "Hugging Face model"),
            var(
                "DATASET",
                "/job/dataset",
                Kind::Text,
                "the training data set (data.dataset_name, or data.train.dataset_name from NeMo-RL v0.6.0)",
            ),
            var("MAX_STEPS", "/job/max_num_steps", Kind::Number, "grpo.max_num_steps"),
            var("NUM_GENERATIONS", "/job/num_generations_per_prompt", Kind::Number, "grpo.num_generations_per_prompt"),
            var("NUM_PROMPTS_PER_STEP", "/job/num_prompts_per_step", Kind::Number, "grpo.num_prompts_per_step"),
            var("TRAIN_GLOBAL_BATCH_SIZE", "/job/train_global_batch_size", Kind::Number, "policy.train_global_batch_size"),
            var("CHECKPOINTING", "/job/checkpointing/enabled", Kind::Flag, "checkpointing.enabled"),
            var("SAVE_PERIOD", "/job/checkpointing/save_period", Kind::Number, "checkpointing.save_period"),
            var("KEEP_TOP_K", "/job/checkpointing/keep_top_k", Kind::OptionalNumber, "checkpointing.keep_top_k; empty keeps all"),
            var("METRIC_NAME", "/job/checkpointing/metric_name", Kind::OptionalText, "checkpointing.metric_name; empty keeps the newest"),
            var("CHECKPOINT_DIR", "/job/checkpointing/dir", Kind::Text, "checkpointing.checkpoint_dir"),
            var("JOB_HF_HOME", "/job/hf_home", Kind::Text, "HF_HOME of the job, on Lustre"),
            var("JOB_LOG_DIR", "/job/log_dir", Kind::Text, "logger.log_dir, on Lustre"),
            var(
                "MAX_RESTARTS",
                "/job/max_restarts",
                Kind::OptionalNumber,
                "resubmissions after a node or the driver is lost; empty: 3 on Spot, 0 on a reservation",
            ),
            var("WHEN_DONE", "/job/when_done", Kind::Text, "keep or suspend: the RayCluster after a job"),
            var(
                "IDLE_TIMEOUT_MINUTES",
                "/job/idle_timeout_minutes",
                Kind::OptionalNumber,
                "minutes without a job before the in-cluster guard suspends the RayCluster; empty: no guard",
            ),
            var(
                "EXPECTED_STEP_SECONDS",
                "/job/expected_step_seconds",
                Kind::OptionalNumber,
                "seconds per GRPO step as measured; with flex-start, validate checks the run ends before its deadline",
            ),
            var(
                "MEAN_MINUTES_BETWEEN_PREEMPTIONS",
                "/job/mean_minutes_between_preemptions",
                Kind::OptionalNumber,
                "minutes between preemptions you expect; with the step time, validate recommends a save period",
            ),
            var("JOB_MODE", "/job/mode", Kind::Text, "cluster or rayjob (a cluster of its own)"),
            var(
                "RAYJOB_TTL_SECONDS_AFTER_FINISHED",
                "/job/rayjob_ttl_seconds_after_finished",
                Kind::Number,
                "seconds its cluster stays after the run",
            ),
            var(
                "RAYJOB_ACTIVE_DEADLINE_SECONDS",
                "/job/rayjob_active_deadline_seconds",
                Kind::OptionalNumber,
                "RayJob time bound; empty: none",
            ),
            var(
                "RAYJOB_PRE_RUNNING_DEADLINE_SECONDS",
                "/job/rayjob_pre_running_deadline_seconds",
                Kind::OptionalNumber,
                "bound until it runs; empty: none",
            ),
            var("JOB_QUEUE", "/job/queue", Kind::OptionalText, "Kueue LocalQueue the run waits in; empty: none"),
            var(
                "RESUME_FROM",
                "/job/resume_from",
                Kind::OptionalText,
                "a kept checkpoint, gs://BUCKET/PATH/RUN/step_N/, deploy imports before any run; empty: start afresh",
            ),
        ],
    ),
    (
        "Keeping what a run made",
        &[var(
            "EXPORT_TO",
            "/storage/export_to",
            Kind::OptionalText,
            "bucket folder gs://BUCKET/PATH/ export copies checkpoints to; empty: export needs --to",
        )],
    ),
    (
        "Secrets: names only; the values stay in your environment",
        &[
            var("K8S_SECRET_NAME", "/secrets/kubernetes_secret", Kind::Text, "Kubernetes Secret holding the tokens"),
            var("HF_TOKEN_ENV", "/secrets/hf_token_env", Kind::Text, "variable holding the Hugging Face token"),
            var(
                "WANDB_API_KEY_ENV",
                "/secrets/wandb_api_key_env",
                Kind::OptionalText,
                "variable holding the W&B API key; empty disables W&B",
            ),
        ],
    ),
];

/// Variables of the codelab's env.sh that gke-rl reads no value from.
const IGNORED: &[(&str, &str)] = &[
    ("NETWORK_NAME", "it is derived from CLUSTER_NAME (`<CLUSTER_NAME>-net-0`)"),
    ("DEVICE_TYPE", "it is an xpk setting; gke-rl uses MACHINE_TYPE and ACCELERATOR_TYPE"),
];

fn vars() -> impl Iterator<Item = &'static Var> {
    SECTIONS.iter().flat_map(|(_, vars)| vars.iter())
}

/// The model field (a JSON pointer) the variable `name` sets.
pub(crate) fn field_of(name: &str) -> Option<&'static str> {
    vars().find(|v| v.name == name).map(|v| v.field)
}

/// The body of env.sh for `deployment` (the caller adds the header).
pub fn contents(deployment: &Deployment) -> String {
    // The model as JSON, read back as nodes to look fields up by pointer: the JSON serializer
    // and the node reader are in every build already, and `serde_json::Value`'s serializer
    // would cost the web page 3 KB gzip. JSON is YAML once the characters YAML does not print
    // are escaped; the model's one map (`job.overrides`) holds only text, so no node bound is
    // reached.
    let json = yaml_printable(&serde_json::to_string(deployment).expect("the model serializes"));
    let model = gke_rl_yaml::Node::parse(&json).expect("printable JSON of a fixed shape is YAML");
    let mut out = String::new();
    for (title, vars) in SECTIONS {
        let _ = writeln!(out, "\n# --- {title} ---");
        for var in *vars {
            let value = model.pointer(var.field).map_or(&YamlValue::Null, |node| &node.value);
            let _ = writeln!(out, "# {}\nexport {}={}", var.doc, var.name, shell_value(var, value));
        }
    }
    out
}

/// `json` with every character that YAML refuses or reads as a line break or a byte order mark
/// (DEL, C1 controls, U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF) written as a `\u` escape, which
/// both read back as it was.
/// serde_json escapes only the C0 controls; these can only stand inside strings.
fn yaml_printable(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if matches!(c, '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}') {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

fn shell_value(var: &Var, value: &YamlValue) -> String {
    match (var.kind, value) {
        (Kind::Reservation, YamlValue::Map(reservation)) => {
            reservation.first().and_then(|(_, name)| name.text()).map_or_else(String::new, quote::sh)
        }
        (Kind::Reservation, _) => "''".to_owned(),
        (Kind::Mode, YamlValue::Map(_)) => "reservation".to_owned(),
        (Kind::OptionalList, YamlValue::Seq(items)) => quote::sh(&items.iter().filter_map(|i| i.text()).collect::<Vec<_>>().join(" ")),
        (_, YamlValue::String(s)) => quote::sh(s),
        (_, YamlValue::Number(n)) => n.clone(),
        (Kind::FromEnvironment, YamlValue::Null) => format!("\"${{{0}:?set {0} to the {1}}}\"", var.name, var.doc),
        _ => "''".to_owned(),
    }
}

/// A model imported from an env.sh, with what was ignored.
#[derive(Debug)]
pub struct Imported {
    /// The model: the embedded default with every variable of the file applied.
    pub deployment: Deployment,
    /// Variables that were read but not used, e.g. secret values.
    pub warnings: Vec<Diagnostic>,
    /// Variables left as a template's placeholder, so gke-rl's default stands in for them:
    /// fine for a look at the render, not for creating resources.
    pub defaulted: Vec<&'static str>,
}

/// A template's placeholder: `{{VAR}}` (the codelab's) or `<VALUE>`.
pub fn is_placeholder(value: &str) -> bool {
    value.contains("{{") || (value.starts_with('<') && value.ends_with('>'))
}

/// Reads an env.sh (a codelab one, or one gke-rl rendered) into a model. Variables not in
/// the file keep their default. Secret values are never read into the model.
pub fn import(text: &str) -> Result<Imported, Diagnostic> {
    let mut model = serde_json::to_value(Deployment::default()).expect("the model serializes");
    let mut shell: BTreeMap<String, Option<String>> = BTreeMap::new();
    let (mut warnings, mut defaulted) = (Vec::new(), Vec::new());
    let (mut image_at, mut auth_at) = ((1, 1), None);
    // Where each field was last set, for errors about the whole model.
    let mut set_at: BTreeMap<&'static str, (u32, u32)> = BTreeMap::new();
    let assignments = parse(text)?;
    bound_expansion(&assignments)?;
    for assignment in assignments {
        let value = evaluate(&assignment, &shell)?;
        shell.insert(assignment.name.clone(), value.clone());
        let Some(var) = vars().find(|v| v.name == assignment.name) else {
            warnings.extend(ignored(&assignment, value.as_deref()));
            continue;
        };
        set_at.insert(var.field, assignment.value_at);
        if var.field == "/ray/image" {
            image_at = assignment.value_at;
        }
        if var.field == "/ray/auth" {
            auth_at = Some(assignment.value_at);
        }
        // An empty RESERVATION leaves the mode as it is (Spot, or what PROVISIONING says).
        if var.kind == Kind::Reservation && value.as_deref() == Some("") {
            continue;
        }
        // The codelab's env.sh.tmpl holds `{{VAR}}` until its setup script fills it in: such a
        // line keeps gke-rl's value, and the warning says what to set.
        if let Some(placeholder) = value.as_deref().filter(|v| is_placeholder(v)) {
            let (kept, help) = if var.kind == Kind::FromEnvironment {
                ("it is read from the environment when the rendered env.sh is sourced".to_owned(), format!("export {}=… first", var.name))
            } else {
                if !defaulted.contains(&var.name) {
                    defaulted.push(var.name);
                }
                let default =
                    model.pointer(var.field).map_or_else(String::new, |v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
                (format!("gke-rl's default `{default}` is used"), format!("set {} ({}) to use another value", var.name, var.doc))
            };
            warnings.push(Diagnostic::warning(
                "env-sh-placeholder",
                assignment.value_at,
                format!("{} still holds the placeholder `{placeholder}`; {kept}", var.name),
                help,
            ));
            continue;
        }
        let json = to_json(var, value, &assignment, &shell)?;
        // A later line sets what a placeholder left.
        defaulted.retain(|name| *name != var.name);
        let mut candidate = model.clone();
        *candidate.pointer_mut(var.field).expect("every table field exists in the model") = json;
        if let Err(e) = serde_json::from_value::<Deployment>(candidate.clone()) {
            return Err(Diagnostic::error(
                "env-sh-invalid-value",
                assignment.value_at,
                format!("{}: {e}", var.name),
                format!("set {} to the {}", var.name, var.doc),
            ));
        }
        model = candidate;
    }
    let deployment: Deployment = serde_json::from_value(model).expect("validated field by field");
    if let Err(unknown) = deployment.ray.resolved_version() {
        return Err(Diagnostic::error(
            "env-sh-unknown-image",
            image_at,
            unknown.to_string(),
            "set RAYCLUSTER_RAY_VERSION to the Ray version inside RAY_IMAGE",
        ));
    }
    if let Err(unsupported) = deployment.ray.token_auth() {
        return Err(Diagnostic::error(
            "env-sh-auth-unsupported",
            auth_at.unwrap_or(image_at),
            unsupported.to_string(),
            format!("set RAY_AUTH empty or to disabled, or RAY_IMAGE to {}", crate::knowledge::token_auth_images()),
        ));
    }
    if let Some(conflict) = deployment.mode_conflict() {
        let code = conflict.codes().1;
        let at = conflict.fields().iter().find_map(|field| set_at.get(field).copied()).unwrap_or(image_at);
        return Err(Diagnostic::error(code, at, conflict.message(), conflict.help()));
    }
    Ok(Imported { deployment, warnings, defaulted })
}

/// Each assignment with its value given the ones before it; `None` where the value depends on
/// the environment or on a variable the file does not set.
pub fn evaluate_all(assignments: Vec<Assignment>) -> Result<Vec<(Assignment, Option<String>)>, Diagnostic> {
    bound_expansion(&assignments)?;
    let mut shell = BTreeMap::new();
    Ok(assignments
        .into_iter()
        .map(|assignment| {
            let value = evaluate(&assignment, &shell).ok().flatten();
            shell.insert(assignment.name.clone(), value.clone());
            (assignment, value)
        })
        .collect())
}

/// How many bytes variable references may add to a whole file. Real env.sh values are names,
/// numbers and paths; without a bound, 40 lines of `export B="$A$A"` double to a terabyte.
const MAX_EXPANSION_BYTES: usize = 1 << 20;

/// Refuses a file whose references would expand past [`MAX_EXPANSION_BYTES`], by adding up
/// lengths before any value is built. (Expansion is one level deep: a `${NAME:-default}`
/// default is literal text, so size is the only thing to bound.)
fn bound_expansion(assignments: &[Assignment]) -> Result<(), Diagnostic> {
    let mut lengths: BTreeMap<&str, usize> = BTreeMap::new();
    let mut expanded = 0usize;
    for assignment in assignments {
        let mut length = 0usize;
        for part in &assignment.value {
            length = length.saturating_add(match part {
                Part::Text(text) => text.len(),
                Part::Var { name, fallback } => {
                    let set = lengths.get(name.as_str()).copied().unwrap_or(0);
                    expanded = expanded.saturating_add(set);
                    match fallback {
                        Fallback::Default(default) => set.max(default.len()),
                        Fallback::Empty | Fallback::Required(_) => set,
                    }
                }
            });
        }
        if expanded > MAX_EXPANSION_BYTES {
            return Err(Diagnostic::error(
                "env-sh-expansion-too-large",
                assignment.value_at,
                format!("{} makes this file's variable references expand past 1 MiB", assignment.name),
                format!("write the value of {} literally, without repeating other variables", assignment.name),
            ));
        }
        lengths.insert(&assignment.name, length);
    }
    Ok(())
}

/// The value of an assignment given the variables set before it; `None` when it depends on
/// a variable that must come from the environment (`${NAME:?…}`).
fn evaluate(assignment: &Assignment, shell: &BTreeMap<String, Option<String>>) -> Result<Option<String>, Diagnostic> {
    let mut value = String::new();
    for part in &assignment.value {
        match part {
            Part::Text(text) => value.push_str(text),
            Part::Var { name, fallback } => match (shell.get(name), fallback) {
                (Some(Some(set)), _) if !set.is_empty() || *fallback == Fallback::Empty => value.push_str(set),
                (Some(None), _) | (_, Fallback::Required(_)) => return Ok(None),
                (_, Fallback::Default(default)) => value.push_str(default),
                (_, Fallback::Empty) => {
                    return Err(Diagnostic::error(
                        "env-sh-unset-variable",
                        assignment.value_at,
                        format!("{} refers to `${name}`, which this file does not set", assignment.name),
                        format!("write the value of {} literally, or set {name} on an earlier line", assignment.name),
                    ));
                }
            },
        }
    }
    Ok(Some(value))
}

fn to_json(
    var: &Var,
    value: Option<String>,
    assignment: &Assignment,
    shell: &BTreeMap<String, Option<String>>,
) -> Result<Value, Diagnostic> {
    let invalid = |expected: &str| {
        Diagnostic::error(
            "env-sh-invalid-value",
            assignment.value_at,
            format!("{} must be {expected}", var.name),
            format!("set {} to the {}", var.name, var.doc),
        )
    };
    let Some(value) = value else {
        return if var.kind == Kind::FromEnvironment {
            Ok(Value::Null)
        } else {
            Err(invalid("a literal value, not read from the environment"))
        };
    };
    Ok(match var.kind {
        Kind::Number => Value::from(value.parse::<u64>().map_err(|_| invalid("a whole number"))?),
        Kind::OptionalNumber if value.is_empty() => Value::Null,
        Kind::OptionalNumber => Value::from(value.parse::<u64>().map_err(|_| invalid("a whole number or empty"))?),
        Kind::Flag => Value::Bool(value.parse::<bool>().map_err(|_| invalid("`true` or `false`"))?),
        Kind::OptionalText | Kind::OptionalList if value.is_empty() => Value::Null,
        Kind::OptionalList => Value::from(value.split_whitespace().collect::<Vec<_>>()),
        Kind::Reservation => serde_json::json!({ "reservation": value }),
        Kind::Mode => {
            let reservation = shell.get("RESERVATION").cloned().flatten().filter(|r| !r.is_empty());
            match (value.as_str(), reservation) {
                ("reservation", Some(name)) => serde_json::json!({ "reservation": name }),
                ("reservation", None) => return Err(invalid("`reservation` only with RESERVATION set to its name on an earlier line")),
                (_, Some(name)) => {
                    return Err(invalid(&format!("`reservation` while RESERVATION names one ({name}); or empty RESERVATION")));
                }
                (mode, None) => Value::from(mode),
            }
        }
        Kind::Text | Kind::OptionalText | Kind::FromEnvironment => Value::from(value),
    })
}

/// A warning for a variable that is not in the table, if it deserves one.
fn ignored(assignment: &Assignment, value: Option<&str>) -> Option<Diagnostic> {
    let name = assignment.name.as_str();
    let defaults = Deployment::default().secrets;
    let secret_names = [Some(defaults.hf_token_env.as_str()), defaults.wandb_api_key_env.as_ref().map(|n| n.as_str())];
    if secret_names.contains(&Some(name)) {
        // Only the template's whole `{{NAME}}` is a placeholder here, and even that is not
        // repeated: a secret's value never reaches a message.
        if value.is_some_and(crate::secrets::is_placeholder) {
            return Some(Diagnostic::warning(
                "env-sh-placeholder",
                assignment.value_at,
                format!("{name} still holds a placeholder; gke-rl reads {name} from the environment when it runs"),
                format!("`export {name}=…` in your shell or from a secret manager"),
            ));
        }
        return value.is_some_and(|v| !v.is_empty()).then(|| {
            Diagnostic::warning(
                "env-sh-secret-ignored",
                assignment.value_at,
                format!("{name} holds a secret value; gke-rl ignores it and never writes it to a file"),
                format!("delete this line and `export {name}=…` in your shell or from a secret manager"),
            )
        });
    }
    let (message, help) = match IGNORED.iter().find(|(ignored, _)| *ignored == name) {
        Some((_, why)) => (format!("{name} is ignored: {why}"), "delete the line".to_owned()),
        None => (
            format!("{name} is not a gke-rl variable and is ignored"),
            format!("delete the line, or check its spelling against `{}`", closest(name)),
        ),
    };
    Some(Diagnostic::warning("env-sh-ignored-variable", assignment.name_at, message, help))
}

fn closest(name: &str) -> &'static str {
    let shared_prefix = |candidate: &str| candidate.chars().zip(name.chars()).take_while(|(a, b)| a == b).count();
    vars().max_by_key(|v| shared_prefix(v.name)).map_or("PROJECT_ID", |v| v.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_free_text_in_the_model_renders() {
        let mut deployment = Deployment::default();
        let hostile = "\u{7f}\u{85}\u{9f}\u{2028}\u{2029}\u{feff}\u{fffe}\u{ffff}\u{1}\"\\\n\t'`$(x)";
        deployment.cost.source = Some(hostile.to_owned());
        assert_eq!(contents(&deployment), contents(&Deployment::default()), "cost is not in env.sh, and nothing panics");
        let json = yaml_printable(&serde_json::to_string(&hostile).unwrap());
        assert_eq!(gke_rl_yaml::Node::parse(&json).and_then(|node| node.text().map(str::to_owned)).as_deref(), Some(hostile));
    }

    /// env.sh is refused what the config is refused: RayJob mode without tokens, or suspending.
    #[test]
    fn rayjob_mode_is_checked_as_the_config_is() {
        let e = import("export JOB_MODE=rayjob\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-rayjob-needs-token", 1, 17), "no RAY_IMAGE line: the mode's");
        let v6 = "export RAY_IMAGE=nvcr.io/nvidia/nemo-rl:v0.6.0\nexport JOB_MODE=rayjob\n";
        assert!(import(v6).is_ok());
        let e = import(&format!("{v6}export RAY_AUTH=disabled\n")).unwrap_err();
        assert_eq!((e.code, e.line), ("env-sh-rayjob-needs-token", 3));
        let e = import(&format!("{v6}export IDLE_TIMEOUT_MINUTES=30\n")).unwrap_err();
        assert_eq!((e.code, e.line), ("env-sh-rayjob-suspends", 3));
        let e = import(&format!("export WHEN_DONE=suspend\n{v6}")).unwrap_err();
        assert_eq!((e.code, e.line), ("env-sh-rayjob-suspends", 1));
        let e = import(&format!("{v6}export RESUME_FROM=gs://my-bucket/runs/grpo/step_4/\n")).unwrap_err();
        assert_eq!((e.code, e.line), ("env-sh-rayjob-resume-from", 3));
        // Kueue resumes a queued RayCluster that anything else suspends.
        assert!(import("export JOB_QUEUE=a4\n").unwrap().deployment.job.queue.is_some());
        let e = import("export JOB_QUEUE=a5\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-queue-unknown", 1, 18));
        let e = import("export JOB_QUEUE=a4\nexport IDLE_TIMEOUT_MINUTES=30\n").unwrap_err();
        assert_eq!((e.code, e.line), ("env-sh-queue-suspends", 2));
        assert!(import("export WHEN_DONE=suspend\nexport JOB_QUEUE=a4\n").is_ok());
    }

    #[test]
    fn every_table_field_exists_in_the_model() {
        let model = serde_json::to_value(Deployment::default()).unwrap();
        for var in vars() {
            assert!(model.pointer(var.field).is_some(), "{} -> {}", var.name, var.field);
        }
    }

    #[test]
    fn every_model_leaf_has_a_variable() {
        fn leaves(value: &Value, path: String, out: &mut Vec<String>) {
            match value {
                Value::Object(map) if !path.ends_with("/provisioning") => {
                    for (k, v) in map {
                        leaves(v, format!("{path}/{k}"), out);
                    }
                }
                _ => out.push(path),
            }
        }
        let mut fields = Vec::new();
        leaves(&serde_json::to_value(Deployment::default()).unwrap(), String::new(), &mut fields);
        // Prices only feed cost estimates, not what is deployed: they live in the config alone.
        for field in fields.into_iter().filter(|f| !f.starts_with("/cost/")) {
            assert!(vars().any(|v| v.field == field), "{field} has no env.sh variable");
        }
    }

    #[test]
    fn codelab_env_sh_imports_with_warnings_for_secrets_and_xpk_settings() {
        let codelab = "export PROJECT_ID=\"my-project\"\nexport ZONE=\"us-east1-b\"\nexport REGION=\"us-east1\"\nexport CLUSTER_NAME=\"ray-a4-gpu-spot\"\n\
                       export NETWORK_NAME=\"${CLUSTER_NAME}-net-0\"\nexport LUSTRE_INSTANCE_ID=\"rl-demo-gpu-lustre\"\nexport LUSTRE_CAPACITY=\"18000\"\n\
                       export HF_TOKEN=\"hf_abcdef\"\nexport WANDB_API_KEY=\"\"\nexport NUM_NODES=\"4\"\nexport GPUS_PER_NODE=\"8\"\nexport DEVICE_TYPE=\"b200-8\"\n";
        let imported = import(codelab).unwrap();
        assert_eq!(imported.deployment.project.project_id.as_ref().unwrap().as_str(), "my-project");
        assert_eq!(imported.deployment.lustre.capacity_gib.get(), 18000);
        assert_eq!(imported.deployment.topology.node_count.get(), 4);
        let codes: Vec<_> = imported.warnings.iter().map(|w| (w.code, w.line)).collect();
        assert_eq!(codes, [("env-sh-ignored-variable", 5), ("env-sh-secret-ignored", 8), ("env-sh-ignored-variable", 12)]);
        assert!(!format!("{imported:?}").contains("hf_abcdef"), "the token must not reach the model");
    }

    #[test]
    fn the_provisioning_mode_and_the_reservation_name_travel_together() {
        let mode = |text: &str| import(text).map(|i| i.deployment.topology.provisioning);
        assert_eq!(mode("export PROVISIONING=on-demand\n").unwrap(), crate::model::Provisioning::OnDemand);
        assert_eq!(mode("export RESERVATION=''\nexport PROVISIONING=flex-start\n").unwrap(), crate::model::Provisioning::FlexStart);
        let reserved = crate::model::Provisioning::Reservation(crate::model::Word::new("a4-res").unwrap());
        assert_eq!(mode("export RESERVATION=a4-res\n").unwrap(), reserved, "the codelab's one variable");
        assert_eq!(mode("export RESERVATION=a4-res\nexport PROVISIONING=reservation\n").unwrap(), reserved);
        let error = mode("export RESERVATION=a4-res\nexport PROVISIONING=spot\n").unwrap_err();
        assert_eq!((error.line, error.message.contains("while RESERVATION names one (a4-res)")), (2, true), "{error:?}");
        assert!(mode("export PROVISIONING=reservation\n").unwrap_err().message.contains("only with RESERVATION set"));
        assert!(mode("export PROVISIONING=preemptible\n").is_err());
    }

    #[test]
    fn placeholders_and_bad_values_point_at_the_value() {
        // Issue 32, item 3: the codelab's template imports; each placeholder is a warning that
        // names what to set, and the value stays gke-rl's.
        let template = "export PROJECT_ID=\"{{PROJECT_ID}}\"\nexport ZONE=\"{{ZONE}}\"\nexport NUM_NODES=\"{{NUM_NODES}}\"\nexport HF_TOKEN=\"{{HF_TOKEN}}\"\n";
        let imported = import(template).unwrap();
        assert_eq!(imported.deployment, Deployment::default());
        assert_eq!(imported.defaulted, ["ZONE", "NUM_NODES"], "PROJECT_ID and HF_TOKEN come from the environment");
        let set_later = import(&format!("{template}export ZONE=\"{{{{ZONE}}}}\"\nexport NUM_NODES=4\n")).unwrap();
        assert_eq!(set_later.defaulted, ["ZONE"], "named once, and not once a later line sets it");
        let found: Vec<_> = imported.warnings.iter().map(|w| (w.code, w.line, w.column, w.message.as_str(), w.help.as_str())).collect();
        assert_eq!(
            found,
            [
                (
                    "env-sh-placeholder",
                    1,
                    19,
                    "PROJECT_ID still holds the placeholder `{{PROJECT_ID}}`; it is read from the environment when the rendered env.sh is sourced",
                    "export PROJECT_ID=… first"
                ),
                (
                    "env-sh-placeholder",
                    2,
                    13,
                    "ZONE still holds the placeholder `{{ZONE}}`; gke-rl's default `us-east1-b` is used",
                    "set ZONE (zone of the GPU nodes and the Lustre instance) to use another value"
                ),
                (
                    "env-sh-placeholder",
                    3,
                    18,
                    "NUM_NODES still holds the placeholder `{{NUM_NODES}}`; gke-rl's default `8` is used",
                    "set NUM_NODES (GPU nodes, one Ray worker each) to use another value"
                ),
                (
                    "env-sh-placeholder",
                    4,
                    17,
                    "HF_TOKEN still holds a placeholder; gke-rl reads HF_TOKEN from the environment when it runs",
                    "`export HF_TOKEN=…` in your shell or from a secret manager"
                ),
            ]
        );
        let e = import("export NUM_NODES=eight\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-invalid-value", 1, 18));
        let e = import("export NUM_NODES=0\n").unwrap_err();
        assert_eq!((e.code, e.line), ("env-sh-invalid-value", 1));
        let e = import("export CLUSTER_NAME=Ray_A4\n").unwrap_err();
        assert!(e.message.contains("`Ray_A4` is not a valid"), "{}", e.message);
        let e = import("export REGION=$MY_REGION\n").unwrap_err();
        assert_eq!(e.code, "env-sh-unset-variable");
    }

    #[test]
    fn where_a_run_is_kept_and_resumed_from_travel_as_bucket_folders() {
        let imported = import("export EXPORT_TO=gs://my-bucket/runs/\nexport RESUME_FROM=gs://my-bucket/runs/grpo/step_40/\n").unwrap();
        assert_eq!(imported.deployment.storage.export_to.unwrap().to_string(), "gs://my-bucket/runs/");
        assert_eq!(imported.deployment.job.resume_from.unwrap().to_string(), "gs://my-bucket/runs/grpo/step_40/");
        let e = import("export EXPORT_TO=gs://my-bucket/runs\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-invalid-value", 1, 18));
        let e = import("export RESUME_FROM=gs://my-bucket/runs/grpo/\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-invalid-value", 1, 20));
    }

    #[test]
    fn unknown_image_points_at_its_value_unless_the_version_is_given() {
        let e = import("export ZONE=us-east1-b\nexport RAY_IMAGE=example.com/trainer:7\n").unwrap_err();
        assert_eq!((e.code, e.line, e.column), ("env-sh-unknown-image", 2, 18));
        assert!(import("export RAY_IMAGE=example.com/trainer:7\nexport RAYCLUSTER_RAY_VERSION=2.46.0\n").is_ok());
    }

    #[test]
    fn doubling_references_are_refused_at_the_line_that_crosses_the_bound() {
        let mut text = "export A0=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n".to_owned();
        for i in 1..40 {
            text.push_str(&format!("export A{i}=\"${{A{}}}${{A{}}}\"\n", i - 1, i - 1));
        }
        let e = import(&text).unwrap_err();
        // 32 bytes doubled: the references on line 16 add 32 × (2^15 − 2) bytes, past 1 MiB.
        assert_eq!((e.code, e.line, e.column), ("env-sh-expansion-too-large", 16, 12), "{e:?}");
        assert_eq!(evaluate_all(parse(&text).unwrap()).unwrap_err().line, 16);
        let fine = "export A=abc\nexport B=\"$A/$A\"\n";
        assert_eq!(evaluate_all(parse(fine).unwrap()).unwrap()[1].1.as_deref(), Some("abc/abc"));
    }

    #[test]
    fn project_id_read_from_the_environment_stays_unknown() {
        let d = import("export PROJECT_ID=\"${PROJECT_ID:?set it}\"\n").unwrap().deployment;
        assert_eq!(d.project.project_id, None);
        let e = import("export REGION=\"${REGION:?set it}\"\n").unwrap_err();
        assert_eq!(e.code, "env-sh-invalid-value");
    }
}
