//! The NeMo-RL launch: override keys and value types against the recipe, parallelism and
//! batch arithmetic, the cluster size, checkpointing settings and the dataset.

use std::collections::BTreeMap;

use super::*;
use crate::JobView;
use crate::job_script::{HydraValue, Launch, Override};
use gke_rl::knowledge::{self, NemoRlImage, NemoRlRelease, ValueType};
use gke_rl::yaml::Node;

/// A job script with a launch line, and the effective value of each key: the override if
/// any, else the recipe's.
pub(super) struct Job<'a> {
    pub view: &'a JobView<'a>,
    launch: &'a Launch,
    /// The NeMo-RL release the job runs: its image's (or, for a newer NeMo-RL image, the
    /// newest known), else the codelab's; `None` for an image gke-rl does not know.
    release: Option<&'static NemoRlRelease>,
    /// The release whose recipe keys the launch's `--config` has, when gke-rl knows them.
    recipe: Option<&'static NemoRlRelease>,
    /// A NeMo-RL image of a version gke-rl does not know: its tag. Its values are read from the
    /// assumed release's recipe, but nothing that would fail the job is said of it.
    assumed: Option<String>,
    overrides: BTreeMap<&'a str, &'a Override>,
}

/// What the Ray pods' image is; no image means the codelab's.
fn image(facts: &Facts) -> NemoRlImage<'_> {
    facts.image.as_ref().map_or(NemoRlImage::Known(knowledge::CODELAB_NEMO_RL), |image| NemoRlImage::of(&image.value))
}

impl<'a> Job<'a> {
    pub fn new(view: &'a JobView<'a>, facts: &Facts) -> Option<Self> {
        let launch = view.script.launch.as_ref()?;
        let image = image(facts);
        let release = image.layout();
        let recipe = release.filter(|_| launch.config.as_ref().is_some_and(|c| c.text == knowledge::GRPO_RECIPE));
        let assumed = match image {
            NemoRlImage::Assumed { tag, .. } => Some(tag.to_owned()),
            _ => None,
        };
        let overrides = launch.overrides.iter().filter(|o| o.prefix != "~").map(|o| (o.key.as_str(), o)).collect();
        Some(Self { view, launch, release, recipe, assumed, overrides })
    }

    pub fn launch_at(&self) -> (u32, u32) {
        self.launch.at
    }

    /// Where a value no override sets comes from: the `--config` recipe's word, else the launch.
    pub fn recipe_at(&self) -> (u32, u32) {
        self.launch.config.as_ref().map_or(self.launch.at, |config| config.at)
    }

    /// The tag of the NeMo-RL release the job runs, when gke-rl knows it.
    pub fn release_tag(&self) -> Option<&'static str> {
        self.release.map(|r| r.tag)
    }

    fn recipe(&self, key: &str) -> Option<(ValueType, &'static str)> {
        self.recipe?.recipe_key(key)
    }

    /// A whole-number setting and, when overridden, where.
    pub fn int(&self, key: &str) -> Option<(i64, Option<(u32, u32)>)> {
        match self.overrides.get(key) {
            Some(o) => match o.value {
                HydraValue::Int(n) => Some((n, Some(o.value_at))),
                _ => None,
            },
            None => self.recipe(key).filter(|(t, _)| *t == ValueType::Int).and_then(|(_, v)| Some((v.parse().ok()?, None))),
        }
    }

    /// A boolean setting.
    pub fn boolean(&self, key: &str) -> Option<bool> {
        match self.overrides.get(key) {
            Some(o) => match o.value {
                HydraValue::Bool(b) => Some(b),
                _ => None,
            },
            None => self.recipe(key).filter(|(t, _)| *t == ValueType::Bool).map(|(_, v)| v == "true"),
        }
    }

    /// A string setting (`None` for null) and, when overridden, where.
    pub fn string(&self, key: &str) -> Option<(&str, Option<(u32, u32)>)> {
        match self.overrides.get(key) {
            Some(o) => match &o.value {
                HydraValue::Str { text, .. } => Some((text.as_str(), Some(o.value_at))),
                _ => None,
            },
            None => self.recipe(key).filter(|(t, _)| *t == ValueType::Str).map(|(_, v)| (v, None)),
        }
    }

    /// Whether the key's value is known: overridden, or in a recipe gke-rl knows.
    fn known(&self, key: &str) -> bool {
        self.overrides.contains_key(key) || self.recipe(key).is_some()
    }

    fn at(&self, key: &str) -> (u32, u32) {
        self.overrides.get(key).map_or(self.launch.at, |o| o.value_at)
    }
}

/// Every rule this module runs.
const LAUNCH_RULES: [&Rule; 19] = [
    &NEMO_RL_UNKNOWN_IMAGE,
    &NEMO_RL_ASSUMED_LAYOUT,
    &LAUNCHER_MISSING,
    &WORLD_SIZE_PARALLELISM,
    &ROLLOUT_BATCH,
    &GLOBAL_BATCH_DATA_PARALLEL,
    &CLUSTER_SIZE_MISMATCH,
    &SAVE_PERIOD,
    &METRIC_NAME,
    &DATASET_UNKNOWN,
    &OVERRIDE_NO_OP,
    &OVERRIDE_UNKNOWN_KEY,
    &OVERRIDE_QUOTED,
    &RECIPE_UNKNOWN,
    &RECIPE_MISSING,
    &LUSTRE_TOO_SMALL,
    &CHECKPOINT_SAVE_TIME,
    &CHECKPOINT_SAVE_TIMEOUT,
    &CHECKPOINT_SAVE_PERIOD,
];

/// Where a value the rules need comes from when the recipe is not one gke-rl knows.
const SET_IT: &str = "override it in the job script, or use a recipe gke-rl knows (examples/configs/grpo_math_70B_megatron.yaml)";

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    for view in &views.jobs {
        let Some(job) = Job::new(view, facts) else {
            for rule in LAUNCH_RULES {
                sink.skip(rule, "the job script has no NeMo-RL launch line", "launch NeMo-RL's GRPO launcher in run_nemo_rl.sh");
            }
            continue;
        };
        release_and_launcher(&job, facts, sink);
        overrides(&job, sink);
        parallelism(&job, sink);
        cluster_size(&job, views, facts, sink);
        checkpointing(&job, sink);
        dataset(&job, sink);
    }
}

/// Rules whose findings would fail the job, and so are not raised on an assumed layout.
const LAYOUT_RULES: [&Rule; 6] =
    [&LAUNCHER_MISSING, &RECIPE_MISSING, &OVERRIDE_UNKNOWN_KEY, &OVERRIDE_QUOTED, &OVERRIDE_NO_OP, &DATASET_UNKNOWN];

/// The image's release is one gke-rl knows (else an info saying what was not checked, or for
/// a NeMo-RL version it does not know a warning naming the layout assumed), and its launcher is
/// one the release ships.
fn release_and_launcher(job: &Job<'_>, facts: &Facts, sink: &mut Sink) {
    sink.ran(&NEMO_RL_UNKNOWN_IMAGE);
    sink.ran(&NEMO_RL_ASSUMED_LAYOUT);
    if let (Some(tag), Some(assumed)) = (&job.assumed, job.release) {
        sink.emit(
            &NEMO_RL_ASSUMED_LAYOUT,
            job.view.file,
            job.launch.at,
            format!(
                "NeMo-RL {tag} is not a release gke-rl knows: its layout is assumed to be {}'s, the newest known at or before it \
                 (launcher `{}`, dataset key `{}`, the recipe's keys and defaults); the launcher, the override keys and the dataset are not checked",
                assumed.tag, assumed.launcher, assumed.dataset_key
            ),
            format!("check these against NeMo-RL {tag}'s docs/guides/grpo.md, or use a gke-rl that knows {tag}"),
        );
        for rule in LAYOUT_RULES {
            sink.skip(rule, format!("NeMo-RL {tag} is not a release gke-rl knows"), "use a gke-rl that knows it");
        }
        return;
    }
    let Some(release) = job.release else {
        let image = facts.image.as_ref().map_or("?", |f| f.value.as_str());
        let known: Vec<&str> = knowledge::NEMO_RL_RELEASES.iter().map(|r| r.tag).collect();
        sink.emit(
            &NEMO_RL_UNKNOWN_IMAGE,
            job.view.file,
            job.launch.at,
            format!(
                "`{image}` is not a NeMo-RL release gke-rl knows ({}): the launcher, the override keys and the dataset are not checked",
                known.join(", ")
            ),
            "use an nvcr.io/nvidia/nemo-rl image of a known release for these checks",
        );
        for rule in [&LAUNCHER_MISSING, &RECIPE_MISSING] {
            sink.skip(rule, format!("`{image}` is not a NeMo-RL release gke-rl knows"), "use a known NeMo-RL image");
        }
        return;
    };
    sink.ran(&RECIPE_MISSING);
    // A relative recipe is NeMo-RL's only where the script runs in its folder, as gke-rl's and
    // the codelab's do; a path known only at run time is not checked.
    let in_nemo_rl = |path: &str| {
        path.starts_with(knowledge::NEMO_RL_DIR) || job.view.text.lines().any(|l| l.trim() == format!("cd {}", knowledge::NEMO_RL_DIR))
    };
    if let Some(config) = &job.launch.config
        && !config.dynamic
        && in_nemo_rl(&config.text)
        && release.has_recipe(&config.text) == Some(false)
    {
        let help = match gke_rl::suggest::closest(
            config.text.split_once(knowledge::RECIPES_DIR).map_or("", |(_, name)| name),
            release.recipes(),
        ) {
            Some(close) => format!("did you mean `{}{close}`?", knowledge::RECIPES_DIR),
            None => format!("name one of its `{}` recipes (`grpo_math_70B_megatron.yaml` is the codelab's)", knowledge::RECIPES_DIR),
        };
        sink.emit(
            &RECIPE_MISSING,
            job.view.file,
            config.at,
            format!("NeMo-RL {} does not ship `{}`; the job fails at its start", release.tag, config.text),
            help,
        );
    }
    sink.ran(&LAUNCHER_MISSING);
    let script = job.launch.script.as_str();
    if !release.launchers.contains(&script) {
        sink.emit(
            &LAUNCHER_MISSING,
            job.view.file,
            job.launch.script_at,
            format!("NeMo-RL {} does not ship `{script}`; python fails with \"No such file or directory\"", release.tag),
            format!("launch `{}`, the GRPO launcher of {}", release.launcher, release.tag),
        );
    }
}

fn overrides(job: &Job<'_>, sink: &mut Sink) {
    let file = job.view.file;
    sink.ran(&RECIPE_UNKNOWN);
    if job.assumed.is_some() {
        return;
    }
    sink.ran(&OVERRIDE_NO_OP);
    match (&job.launch.config, job.recipe) {
        (_, Some(_)) => {
            sink.ran(&OVERRIDE_UNKNOWN_KEY);
            sink.ran(&OVERRIDE_QUOTED);
        }
        (config, None) => {
            let missing = match config {
                Some(config) => format!("the keys of `{}` are unknown", config.text),
                None => "the launch line names no --config recipe".to_owned(),
            };
            for rule in [&OVERRIDE_UNKNOWN_KEY, &OVERRIDE_QUOTED] {
                sink.skip(rule, missing.clone(), "use examples/configs/grpo_math_70B_megatron.yaml, whose keys gke-rl knows");
            }
        }
    }
    if job.recipe.is_none()
        && let Some(config) = &job.launch.config
    {
        sink.emit(
            &RECIPE_UNKNOWN,
            file,
            config.at,
            format!("gke-rl does not know the keys of `{}`; overrides are not checked", config.text),
            "use examples/configs/grpo_math_70B_megatron.yaml for full checks",
        );
    }
    for o in &job.launch.overrides {
        if let Some(release) = job.release.filter(|r| r.never_reads(&o.key)) {
            sink.emit(
                &OVERRIDE_NO_OP,
                file,
                o.at,
                format!("`{}` is never read by NeMo-RL {}; the model's config.json decides the architecture", o.key, release.tag),
                "remove this override",
            );
            continue;
        }
        let Some(release) = job.recipe else { continue };
        match release.recipe_key(&o.key) {
            None if o.prefix.is_empty() => {
                let why = release.missing_key(&o.key).map(|why| format!(" ({why})")).unwrap_or_default();
                let moved = knowledge::MOVED_KEYS.iter().find(|(_, old, new)| o.key == *old || o.key == *new);
                let suggestion = moved
                    .map(|(_, old, new)| if o.key == *old { *new } else { *old })
                    .filter(|other| release.recipe_key(other).is_some())
                    .or_else(|| gke_rl::suggest::closest(&o.key, release.recipe_keys()));
                let help = match suggestion {
                    Some(key) => format!("did you mean `{key}`? If NeMo-RL reads a new key, put `+` before it (`+{}`)", o.key),
                    None => format!("put `+` before it (`+{}`) if NeMo-RL reads it, or fix the key", o.key),
                };
                sink.emit(
                    &OVERRIDE_UNKNOWN_KEY,
                    file,
                    o.at,
                    format!(
                        "NeMo-RL {}'s recipe has no key `{}`{why}: Hydra fails with \"Could not override '{}'\"",
                        release.tag, o.key, o.key
                    ),
                    help,
                );
            }
            Some((expected, _)) => {
                let HydraValue::Str { text, quoted: true } = &o.value else { continue };
                let would_be = match expected {
                    ValueType::Int if text.parse::<i64>().is_ok() => "a number",
                    ValueType::Float if text.parse::<f64>().is_ok() => "a number",
                    ValueType::Bool if text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false") => "a boolean",
                    _ => continue,
                };
                sink.emit(
                    &OVERRIDE_QUOTED,
                    file,
                    o.value_at,
                    format!("`{}` arrives as the string \"{text}\", not {would_be}: Hydra keeps the quotes' meaning", o.key),
                    format!("write `{}={text}` without the inner quotes", o.key),
                );
            }
            None => {}
        }
    }
}

fn parallelism(job: &Job<'_>, sink: &mut Sink) {
    let file = job.view.file;
    let Some(((nodes, _), (gpus, _))) = job.int("cluster.num_nodes").zip(job.int("cluster.gpus_per_node")) else {
        for rule in [&WORLD_SIZE_PARALLELISM, &ROLLOUT_BATCH, &GLOBAL_BATCH_DATA_PARALLEL] {
            sink.skip(rule, "no cluster.num_nodes or cluster.gpus_per_node", SET_IT);
        }
        return;
    };
    sink.ran(&WORLD_SIZE_PARALLELISM);
    let world = nodes * gpus;
    let megatron = job.boolean("policy.megatron_cfg.enabled") == Some(true);
    let size = |key: &str| job.int(&format!("policy.megatron_cfg.{key}")).map_or(1, |(n, _)| n.max(1));
    let (tp, pp, cp) = if megatron {
        (size("tensor_model_parallel_size"), size("pipeline_model_parallel_size"), size("context_parallel_size"))
    } else {
        (1, 1, 1)
    };
    let model_parallel = tp * pp * cp;
    if world % model_parallel != 0 || world < model_parallel {
        sink.emit(
            &WORLD_SIZE_PARALLELISM,
            file,
            job.at("cluster.num_nodes"),
            format!("world size {nodes} nodes × {gpus} GPUs = {world} is not a multiple of TP {tp} × PP {pp} × CP {cp} = {model_parallel}"),
            format!("use a node count that makes nodes × GPUs a multiple of {model_parallel}"),
        );
        for rule in [&ROLLOUT_BATCH, &GLOBAL_BATCH_DATA_PARALLEL] {
            sink.skip(rule, "no data-parallel size: the world size does not fit the parallelism", "fix world-size-parallelism first");
        }
        return;
    }
    let dp = world / model_parallel;
    let (Some((prompts, _)), Some((generations, _)), Some((gbs, _))) =
        (job.int("grpo.num_prompts_per_step"), job.int("grpo.num_generations_per_prompt"), job.int("policy.train_global_batch_size"))
    else {
        for rule in [&ROLLOUT_BATCH, &GLOBAL_BATCH_DATA_PARALLEL] {
            sink.skip(rule, "no prompts per step, generations per prompt or train_global_batch_size", SET_IT);
        }
        return;
    };
    sink.ran(&ROLLOUT_BATCH);
    sink.ran(&GLOBAL_BATCH_DATA_PARALLEL);
    let rollout = prompts * generations;
    if gbs <= 0 || rollout % gbs != 0 {
        sink.emit(
            &ROLLOUT_BATCH,
            file,
            job.at("policy.train_global_batch_size"),
            format!("{prompts} prompts × {generations} generations = {rollout} samples per step, not a multiple of train_global_batch_size {gbs}"),
            format!("make train_global_batch_size a divisor of {rollout}"),
        );
    }
    let packing = job.boolean("policy.sequence_packing.enabled") == Some(true);
    let micro = if packing || megatron { 1 } else { job.int("policy.train_micro_batch_size").map_or(1, |(n, _)| n.max(1)) };
    if gbs > 0 && gbs % (dp * micro) != 0 {
        sink.emit(
            &GLOBAL_BATCH_DATA_PARALLEL,
            file,
            job.at("policy.train_global_batch_size"),
            format!("train_global_batch_size {gbs} is not divisible by data-parallel size {dp} × micro batch {micro}"),
            format!("use a multiple of {}", dp * micro),
        );
    }
}

fn cluster_size(job: &Job<'_>, views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    let file = job.view.file;
    let cluster = views.ray_clusters.first();
    let worker = cluster.and_then(|c| {
        let pods = super::ray::pods(&c.root);
        pods.iter().find(|p| !p.is_head).map(|p| {
            let replicas = p.group.get(&["replicas"]).and_then(Node::as_u64);
            let gpus = p
                .containers()
                .first()
                .and_then(|c| c.get(&["resources", "limits", gke_rl::knowledge::GPU_RESOURCE]))
                .and_then(Node::as_u64);
            (replicas, gpus, p.group.at())
        })
    });
    let compared = (job.int("cluster.num_nodes").is_some() && (worker.is_some() || facts.node_count.is_some()))
        || (job.int("cluster.gpus_per_node").is_some() && worker.is_some());
    if compared {
        sink.ran(&CLUSTER_SIZE_MISMATCH);
    } else if job.int("cluster.num_nodes").is_none() && job.int("cluster.gpus_per_node").is_none() {
        sink.skip(&CLUSTER_SIZE_MISMATCH, "no cluster.num_nodes or cluster.gpus_per_node", SET_IT);
    } else {
        sink.skip(&CLUSTER_SIZE_MISMATCH, "no GPU workers or node count to compare with", "add ray-cluster.yaml, or NUM_NODES to env.sh");
    }
    if let Some((nodes, _)) = job.int("cluster.num_nodes") {
        let expected = worker
            .and_then(|(r, _, at)| Some((r?, format!("{}:{}", cluster?.file, at.0))))
            .or_else(|| facts.node_count.as_ref().map(|f| (f.value, f.cite())));
        if let Some((expected, source)) = expected.filter(|(n, _)| i64::try_from(*n).ok() != Some(nodes)) {
            sink.emit(
                &CLUSTER_SIZE_MISMATCH,
                file,
                job.at("cluster.num_nodes"),
                format!("cluster.num_nodes is {nodes}, but the RayCluster has {expected} GPU workers ({source})"),
                format!("set cluster.num_nodes={expected}"),
            );
        }
    }
    if let Some((gpus, _)) = job.int("cluster.gpus_per_node") {
        let expected = worker.and_then(|(_, g, at)| Some((g?, format!("{}:{}", cluster?.file, at.0))));
        if let Some((expected, source)) = expected.filter(|(g, _)| i64::try_from(*g).ok() != Some(gpus)) {
            sink.emit(
                &CLUSTER_SIZE_MISMATCH,
                file,
                job.at("cluster.gpus_per_node"),
                format!("cluster.gpus_per_node is {gpus}, but each worker has {expected} GPUs ({source})"),
                format!("set cluster.gpus_per_node={expected}"),
            );
        }
    }
}

fn checkpointing(job: &Job<'_>, sink: &mut Sink) {
    let file = job.view.file;
    for (rule, key) in [(&SAVE_PERIOD, "checkpointing.save_period"), (&METRIC_NAME, "checkpointing.metric_name")] {
        if job.known(key) {
            sink.ran(rule);
        } else {
            sink.skip(rule, format!("no {key}"), SET_IT);
        }
    }
    if let Some((period, at)) = job.int("checkpointing.save_period")
        && period <= 0
    {
        sink.emit(
            &SAVE_PERIOD,
            file,
            at.unwrap_or(job.launch.at),
            format!("checkpointing.save_period is {period}; NeMo-RL divides by it on every step"),
            "set it to at least 1",
        );
    }
    if let Some((metric, at)) = job.string("checkpointing.metric_name")
        && !(metric.starts_with("val:") || metric.starts_with("train:"))
    {
        sink.emit(
            &METRIC_NAME,
            file,
            at.unwrap_or(job.launch.at),
            format!("checkpointing.metric_name `{metric}` must start with `val:` or `train:`"),
            "write e.g. `val:accuracy`, or `null` to keep the newest checkpoints",
        );
    }
}

fn dataset(job: &Job<'_>, sink: &mut Sink) {
    if job.assumed.is_some() {
        return;
    }
    let Some(release) = job.release else {
        sink.skip(&DATASET_UNKNOWN, "the image is not a NeMo-RL release gke-rl knows", "use a known NeMo-RL image");
        return;
    };
    if release.tag != knowledge::GRPO_DATASETS_OF {
        let why = format!("the data sets NeMo-RL {} accepts are not recorded (only {}'s)", release.tag, knowledge::GRPO_DATASETS_OF);
        sink.skip(&DATASET_UNKNOWN, why, format!("check the data set against NeMo-RL {}'s response_datasets registry", release.tag));
        return;
    }
    let Some((name, at)) = job.string(release.dataset_key) else {
        sink.skip(&DATASET_UNKNOWN, format!("no {}", release.dataset_key), SET_IT);
        return;
    };
    sink.ran(&DATASET_UNKNOWN);
    let at = at.unwrap_or(job.launch.at);
    match knowledge::GRPO_DATASETS.iter().find(|(known, _)| *known == name) {
        None => {
            let names: Vec<&str> = knowledge::GRPO_DATASETS.iter().map(|(n, _)| *n).collect();
            sink.emit(
                &DATASET_UNKNOWN,
                job.view.file,
                at,
                format!("`{name}` is not a dataset NeMo-RL's GRPO math launcher knows"),
                format!("use one of {}", names.join(", ")),
            );
        }
        Some((_, needs)) => {
            for key in needs.iter().filter(|key| !job.overrides.contains_key(**key)) {
                sink.emit(&DATASET_UNKNOWN, job.view.file, at, format!("`{name}` needs `{key}`"), format!("add `+{key}=…`"));
            }
        }
    }
}
