//! Managed Lustre: tier and capacity rules, whether the run fits, how long a save takes, and
//! whether the job's directories are on it.

use super::nemo::Job;
use super::*;
use crate::facts::Fact;
use gke_rl::checkpoint_plan;
use gke_rl::knowledge::{self, BF16_BYTES_PER_PARAMETER, GIB};
use gke_rl::yaml::Node;
use gke_rl::yaml::decimal::fixed;

/// Where the Lustre capacity comes from.
const CAPACITY_FROM: &str = "add gke-a4-deployment.yaml, or LUSTRE_CAPACITY to env.sh";
/// Where the Lustre throughput tier comes from.
const TIER_FROM: &str = "add gke-a4-deployment.yaml, or LUSTRE_THROUGHPUT to env.sh";

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    let tier = tier(facts, sink);
    capacity(facts, tier, sink);
    let capacity = facts.lustre_capacity_gib.as_ref();
    for job in views.jobs.iter().filter_map(|view| Job::new(view, facts)) {
        fits(&job, facts, capacity, tier, sink);
        deadline(&job, facts, sink);
    }
    on_lustre(views, facts, sink);
}

/// The performance tier, when it is stated and one Managed Lustre offers: the Dynamic tier where
/// the blueprint enables it, else the numbered tier of the throughput.
fn tier(facts: &Facts, sink: &mut Sink) -> Option<&'static knowledge::LustreTier> {
    if facts.lustre_dynamic_tier.is_some() {
        sink.ran(&LUSTRE_TIER_UNKNOWN);
        return Some(knowledge::lustre_dynamic_tier());
    }
    let Some(throughput) = &facts.lustre_throughput else {
        sink.skip(&LUSTRE_TIER_UNKNOWN, "no Lustre throughput tier", TIER_FROM);
        return None;
    };
    let tier = knowledge::lustre_tier(throughput.value);
    let tiers: Vec<String> = knowledge::LUSTRE_TIERS.iter().filter(|t| !t.dynamic).map(|t| t.throughput.to_string()).collect();
    if tier.is_some_and(|t| t.dynamic) && !facts.lustre_existing {
        // Only an existing instance is on the Dynamic tier by its figure: one gke-rl creates
        // is given a numbered tier's throughput, which 25 is not.
        sink.emit(
            &LUSTRE_TIER_UNKNOWN,
            &throughput.file,
            throughput.at,
            format!("{} MB/s per TiB is the Dynamic tier's aggregate figure, which no throughput setting creates", throughput.value),
            format!("use a numbered tier ({}), or attach an existing Dynamic-tier instance (lustre.existing: true)", tiers.join(", ")),
        );
        sink.ran(&LUSTRE_TIER_UNKNOWN);
        return None;
    }
    if tier.is_none() {
        sink.emit(
            &LUSTRE_TIER_UNKNOWN,
            &throughput.file,
            throughput.at,
            format!("{} MB/s per TiB is not a Managed Lustre tier", throughput.value),
            format!("use one of {}, or the Dynamic tier (enable_dynamic_tier on the managed-lustre module)", tiers.join(", ")),
        );
    }
    sink.ran(&LUSTRE_TIER_UNKNOWN);
    tier
}

/// The capacity against the tier's range and step.
fn capacity(facts: &Facts, tier: Option<&knowledge::LustreTier>, sink: &mut Sink) {
    let rules = [&LUSTRE_CAPACITY_RANGE, &LUSTRE_CAPACITY_STEP];
    let (Some(capacity), Some(tier)) = (&facts.lustre_capacity_gib, tier) else {
        let (missing, enable) = match &facts.lustre_capacity_gib {
            None => ("no Lustre capacity", CAPACITY_FROM),
            Some(_) => ("no Lustre throughput tier", TIER_FROM),
        };
        rules.iter().for_each(|rule| sink.skip(rule, missing, enable));
        return;
    };
    rules.iter().for_each(|rule| sink.ran(rule));
    let gib = capacity.value;
    if gib < tier.min_gib || gib > tier.max_gib {
        sink.emit(
            &LUSTRE_CAPACITY_RANGE,
            &capacity.file,
            capacity.at,
            format!("{gib} GiB is outside {}'s range of {} to {} GiB", tier.describe(), tier.min_gib, tier.max_gib),
            format!("use at least {} GiB, or another tier", tier.min_gib),
        );
    } else if gib % tier.step_for(gib) != 0 {
        let step = tier.step_for(gib);
        sink.emit(
            &LUSTRE_CAPACITY_STEP,
            &capacity.file,
            capacity.at,
            format!("{gib} GiB is not a multiple of {}'s {step} GiB step", tier.describe()),
            format!("use {} or {} GiB", gib / step * step.max(1), (gib / step + 1) * step),
        );
    }
}

/// Peak footprint against capacity, and the time one save takes; `tier` is given when it is a
/// real tier.
fn fits(job: &Job<'_>, facts: &Facts, capacity: Option<&Fact<u64>>, tier: Option<&knowledge::LustreTier>, sink: &mut Sink) {
    let skip = |sink: &mut Sink, missing: &str, enable: &str| {
        for rule in [&LUSTRE_TOO_SMALL].into_iter().chain(SAVE_RULES) {
            sink.skip(rule, missing, enable);
        }
    };
    let Some(capacity) = capacity else {
        skip(sink, "no Lustre capacity", CAPACITY_FROM);
        return;
    };
    let Some(model) = job.string("policy.model_name") else {
        skip(sink, "no policy.model_name", "set policy.model_name in the job script, or use a recipe gke-rl knows");
        return;
    };
    let Some(parameters) = knowledge::model(model.0).map(|m| m.parameters) else {
        skip(sink, &format!("the parameter count of {} is unknown", model.0), "use a model in gke-rl's catalogue (`gke-rl models`)");
        return;
    };
    sink.ran(&LUSTRE_TOO_SMALL);
    if job.boolean("checkpointing.enabled") != Some(true) {
        // Nothing is saved: nothing to fit, nothing to time.
        SAVE_RULES.into_iter().for_each(|rule| sink.ran(rule));
        return;
    }
    let checkpoint = checkpoint_plan::checkpoint_bytes(parameters);
    let tb = |bytes: u64| fixed(bytes as f64 / 1e12, 2);
    let steps = job.int("checkpointing.save_period").zip(job.int("grpo.max_num_steps"));
    let saves = steps.map(|((period, _), (max_steps, _))| if period > 0 { (max_steps.max(0) as u64).div_ceil(period as u64) } else { 0 });
    let kept = match job.int("checkpointing.keep_top_k") {
        Some((k, _)) if k >= 1 => Some(k as u64 + 1),
        _ => saves,
    };
    match kept {
        None => sink.skip(
            &LUSTRE_TOO_SMALL,
            "how many checkpoints are kept is unknown",
            "set checkpointing.keep_top_k, or save_period and grpo.max_num_steps",
        ),
        Some(kept) => {
            let peak = kept.min(saves.unwrap_or(kept)).max(1) * checkpoint + 2 * BF16_BYTES_PER_PARAMETER * parameters;
            let available = capacity.value * GIB;
            if peak > available {
                sink.emit(
                    &LUSTRE_TOO_SMALL,
                    &capacity.file,
                    capacity.at,
                    format!(
                        "the run needs about {} TB at its peak ({kept} checkpoints of {} TB for {model} plus two {} TB model copies) but Lustre holds {} TB ({} GiB)",
                        tb(peak),
                        tb(checkpoint),
                        tb(BF16_BYTES_PER_PARAMETER * parameters),
                        tb(available),
                        capacity.value,
                        model = model.0
                    ),
                    format!("raise the capacity to at least {} GiB, or lower checkpointing.keep_top_k", peak.div_ceil(GIB)),
                );
            }
        }
    }
    let Some(tier) = tier else {
        SAVE_RULES.into_iter().for_each(|rule| sink.skip(rule, "no Lustre throughput tier", TIER_FROM));
        return;
    };
    let list = checkpoint_plan::tier_ceiling(capacity.value, tier);
    // Said with `fixed`: `Basis::describe` formats floats with core's machinery, which the
    // page's wasm leaves out.
    let bytes_per_second = checkpoint_plan::Basis::ListThroughput { raw: list }.rate();
    let seconds = checkpoint as f64 / bytes_per_second;
    let at = job.int("checkpointing.save_period").and_then(|(_, at)| at).unwrap_or(job.launch_at());
    sink.emit(
        &CHECKPOINT_SAVE_TIME,
        job.view.file,
        at,
        format!(
            "each checkpoint save writes {} TB at about {} GB/s ({} GiB at {}; from the instance's list throughput {} GB/s × {}, \
             what a real save reached of the raw rate on an H100): about {} s of paused training per save",
            tb(checkpoint),
            fixed(bytes_per_second / 1e9, 1),
            capacity.value,
            tier.describe(),
            fixed(list / 1e9, 2),
            fixed(checkpoint_plan::RAW_RATE_EFFICIENCY, 1),
            fixed(seconds, 0)
        ),
        "a larger instance or a higher tier saves faster; `gke-rl storage-check` saves a real checkpoint on the nodes and measures it",
    );
    sink.ran(&CHECKPOINT_SAVE_TIMEOUT);
    let timeout = knowledge::NEMO_RL_COLLECTIVE_TIMEOUT_S;
    if seconds > timeout as f64 {
        let fix = match checkpoint_plan::capacity_to_save_within(checkpoint, timeout as f64 / 2.0, tier) {
            Some(gib) => format!(
                "raise the Lustre capacity to at least {gib} GiB (a save then takes at most {} s), or use a faster tier",
                timeout / 2
            ),
            None => "use a faster tier, or a smaller model".to_owned(),
        };
        sink.emit(
            &CHECKPOINT_SAVE_TIMEOUT,
            &capacity.file,
            capacity.at,
            format!(
                "one save of {} TB at about {} GB/s takes about {} s, past the {} s a rank of NeMo-RL waits at a collective: \
                 the save ends at a barrier, where every rank waits for the slowest share (rank 0 also writes the common state and \
                 the metadata), and a save this long leaves little room before that wait ends the run",
                tb(checkpoint),
                fixed(bytes_per_second / 1e9, 1),
                fixed(seconds, 0),
                timeout
            ),
            fix,
        );
    }
    save_period(job, facts, seconds, sink);
}

/// The save period against Young's optimum for the tier's save time, the failures the user
/// expects and the step time they measured.
fn save_period(job: &Job<'_>, facts: &Facts, save_s: f64, sink: &mut Sink) {
    let (Some(step), Some(mtbf)) = (&facts.expected_step_seconds, &facts.mean_minutes_between_preemptions) else {
        sink.skip(
            &CHECKPOINT_SAVE_PERIOD,
            "no expected step time or time between preemptions (gke-rl assumes neither)",
            "set job.expected_step_seconds and job.mean_minutes_between_preemptions (EXPECTED_STEP_SECONDS, MEAN_MINUTES_BETWEEN_PREEMPTIONS)",
        );
        return;
    };
    let Some((period, period_at)) = job.int("checkpointing.save_period") else {
        sink.skip(&CHECKPOINT_SAVE_PERIOD, "no checkpointing.save_period", SET_PERIOD);
        return;
    };
    sink.ran(&CHECKPOINT_SAVE_PERIOD);
    let minutes = u32::try_from(mtbf.value).unwrap_or(u32::MAX);
    let interval = checkpoint_plan::Interval::plan(save_s, checkpoint_plan::Mtbf::Configured { minutes }, step.value as f64);
    let period = period.max(1) as u64;
    if interval.is_far_from(period) {
        let key = checkpoint_plan::period_key(job.release_tag());
        sink.emit(
            &CHECKPOINT_SAVE_PERIOD,
            job.view.file,
            period_at.unwrap_or(job.launch_at()),
            format!(
                "saving every {period} steps of {} s; with saves of {} s and a preemption every {} min, every {} steps ({} min) loses the least \
                 time to saves and to steps redone (Young's √(2 · save · time between preemptions))",
                step.value,
                fixed(save_s, 0),
                mtbf.value,
                interval.steps,
                fixed(interval.seconds / 60.0, 0)
            ),
            format!("set {key}={} (job.checkpointing.save_period)", interval.steps),
        );
    }
}

/// The rules that time a save.
const SAVE_RULES: [&Rule; 3] = [&CHECKPOINT_SAVE_TIME, &CHECKPOINT_SAVE_TIMEOUT, &CHECKPOINT_SAVE_PERIOD];

/// Where the save period comes from.
const SET_PERIOD: &str = "set checkpointing.save_period in the job script, or use a recipe gke-rl knows";

/// Whether the run's steps end before NeMo-RL's checkpoint deadline, at the step time the user
/// measured.
fn deadline(job: &Job<'_>, facts: &Facts, sink: &mut Sink) {
    let Some((deadline, deadline_at)) = job.string(knowledge::CHECKPOINT_DEADLINE_KEY) else {
        let enable = "set provisioning: flex-start (gke-rl then sets it), or the override in the job script";
        sink.skip(&CHECKPOINT_DEADLINE, "no checkpointing.checkpoint_must_save_by", enable);
        return;
    };
    let Some(step) = &facts.expected_step_seconds else {
        let enable = "set job.expected_step_seconds (EXPECTED_STEP_SECONDS in env.sh) to NeMo-RL's measured `Total step time`";
        sink.skip(&CHECKPOINT_DEADLINE, "no expected step time (gke-rl has no estimate of its own)", enable);
        return;
    };
    let (Some(limit), Some((steps, steps_at))) = (knowledge::nemo_rl_duration_seconds(deadline), job.int("grpo.max_num_steps")) else {
        sink.skip(&CHECKPOINT_DEADLINE, "no readable deadline or grpo.max_num_steps", "write the deadline as DD:HH:MM:SS");
        return;
    };
    sink.ran(&CHECKPOINT_DEADLINE);
    // A product past u64 is past any deadline.
    let needed = (steps.max(0) as u64).saturating_mul(step.value);
    if needed > limit {
        let hours = |s: u64| fixed(s as f64 / 3600.0, 1);
        let fit = limit.checked_div(step.value).unwrap_or(0);
        sink.emit(
            &CHECKPOINT_DEADLINE,
            job.view.file,
            steps_at.or(deadline_at).unwrap_or(job.launch_at()),
            format!(
                "{steps} steps at {} s each ({}) take {} h, past checkpointing.checkpoint_must_save_by={deadline} ({} h): \
                 NeMo-RL saves there and stops after about {fit} steps",
                step.value,
                step.cite(),
                hours(needed),
                hours(limit),
            ),
            format!("lower grpo.max_num_steps to {fit} and resubmit to resume for the rest, or run on nodes without a time limit"),
        );
    }
}

/// Environment variables that place a download cache: the model, the datasets.
const CACHE_VARIABLES: &[&str] = &["HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "TRANSFORMERS_CACHE"];

/// Every path the job writes or reads at scale must be on the Lustre mount the RayCluster
/// shares: the checkpoints, the logs, and the download caches (in the runtime env or the
/// containers' env). Needs only the RayCluster's mount and the files that set the paths.
fn on_lustre(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    let Some(mount) = lustre_mount(views) else {
        let missing = if views.ray_clusters.is_empty() { "no Lustre mount" } else { "the RayCluster mounts no PVC" };
        sink.skip(&PATH_OUTSIDE_LUSTRE, missing, "add ray-cluster.yaml with its Lustre PVC mount");
        return;
    };
    let under = |path: &str| path == mount || path.starts_with(&format!("{}/", mount.trim_end_matches('/')));
    let mut looked = false;
    let mut model = None;
    for job in views.jobs.iter().filter_map(|view| Job::new(view, facts)) {
        model = model.or_else(|| job.string("policy.model_name").map(|(name, _)| name.to_owned()));
        let paths = [
            (
                "checkpointing.checkpoint_dir",
                "checkpoints would land on each node's own disk: a preempted node takes them with it, and a restart cannot resume",
            ),
            ("logger.log_dir", "the logs would stay on the pod's disk and go with the pod"),
        ];
        for (key, lost) in paths {
            let Some((dir, at)) = job.string(key) else { continue };
            looked = true;
            if !under(dir) {
                // Not overridden: the recipe's value, at the recipe.
                let from = if at.is_some() { "" } else { " (the recipe's)" };
                sink.emit(
                    &PATH_OUTSIDE_LUSTRE,
                    job.view.file,
                    at.unwrap_or(job.recipe_at()),
                    format!("{key} `{dir}`{from} is outside the Lustre mount `{mount}`: {lost}"),
                    format!("set {key} under {mount}/"),
                );
            }
        }
    }
    let download = match model.as_deref().and_then(knowledge::model) {
        Some(m) => format!("{} ({} GB in bf16)", m.name, fixed((BF16_BYTES_PER_PARAMETER * m.parameters) as f64 / 1e9, 0)),
        None => "the model".to_owned(),
    };
    let runtime_env = views
        .runtime_envs
        .iter()
        .flat_map(|env| CACHE_VARIABLES.iter().filter_map(|name| Some((env.file, *name, env.root.get(&["env_vars", name])?))));
    let containers = views.ray_clusters.iter().flat_map(|cluster| {
        super::ray::pods(&cluster.root)
            .into_iter()
            .flat_map(|pod| pod.containers().iter().flat_map(|c| c.get(&["env"]).map(Node::items).unwrap_or_default()))
            .filter_map(|var| {
                let name = var.get(&["name"])?.text()?;
                let name = CACHE_VARIABLES.iter().find(|known| **known == name)?;
                Some((cluster.file, *name, var.get(&["value"])?))
            })
            .collect::<Vec<_>>()
    });
    for (file, name, node) in runtime_env.chain(containers) {
        let Some(path) = node.text() else { continue };
        looked = true;
        if !under(path) {
            sink.emit(
                &PATH_OUTSIDE_LUSTRE,
                file,
                node.at(),
                format!("{name} `{path}` is outside the Lustre mount `{mount}`: every node downloads {download} again, to its own disk"),
                format!("put it under {mount}/ so every node shares one download"),
            );
        }
    }
    if looked {
        sink.ran(&PATH_OUTSIDE_LUSTRE);
    } else {
        sink.skip(&PATH_OUTSIDE_LUSTRE, "no checkpoint_dir, log_dir or HF_HOME", "add run_nemo_rl.sh, or the runtime env with HF_HOME");
    }
}

/// Where the RayCluster mounts its PVC.
fn lustre_mount(views: &Views<'_>) -> Option<String> {
    let cluster = views.ray_clusters.first()?;
    let pods = super::ray::pods(&cluster.root);
    let pod = pods.first()?;
    let volumes = pod.spec.get(&["volumes"]).map(Node::items).unwrap_or_default();
    let pvc_volume = volumes.iter().find(|v| v.get(&["persistentVolumeClaim"]).is_some())?.get(&["name"])?.text()?;
    let mounts = pod.containers().first()?.get(&["volumeMounts"]).map(Node::items).unwrap_or_default();
    Some(mounts.iter().find(|m| m.get(&["name"]).and_then(Node::text) == Some(pvc_volume))?.get(&["mountPath"])?.text()?.to_owned())
}
