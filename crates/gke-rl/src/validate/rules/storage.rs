//! Managed Lustre: tier and capacity rules, whether the run fits, how long a save takes, and
//! whether the job's directories are on it.

use super::nemo::Job;
use super::*;
use crate::knowledge::{self, BF16_BYTES_PER_PARAMETER, CHECKPOINT_BYTES_PER_PARAMETER, GIB};
use crate::validate::facts::Fact;
use crate::yaml::Node;

pub(super) fn check(views: &Views<'_>, facts: &Facts, sink: &mut Sink) {
    let (Some(capacity), Some(throughput)) = (&facts.lustre_capacity_gib, &facts.lustre_throughput) else { return };
    let Some(tier) = knowledge::lustre_tier(throughput.value) else {
        let tiers: Vec<String> = knowledge::LUSTRE_TIERS.iter().map(|t| t.throughput.to_string()).collect();
        sink.emit(
            &LUSTRE_TIER_UNKNOWN,
            &throughput.file,
            throughput.at,
            format!("{} MB/s per TiB is not a Managed Lustre tier", throughput.value),
            format!("use one of {}", tiers.join(", ")),
        );
        return;
    };
    let gib = capacity.value;
    if gib < tier.min_gib || gib > tier.max_gib {
        sink.emit(
            &LUSTRE_CAPACITY_RANGE,
            &capacity.file,
            capacity.at,
            format!("{gib} GiB is outside the {} MB/s/TiB tier's range of {} to {} GiB", tier.throughput, tier.min_gib, tier.max_gib),
            format!("use at least {} GiB, or another tier", tier.min_gib),
        );
    } else if gib % tier.step_for(gib) != 0 {
        let step = tier.step_for(gib);
        sink.emit(
            &LUSTRE_CAPACITY_STEP,
            &capacity.file,
            capacity.at,
            format!("{gib} GiB is not a multiple of the {} MB/s/TiB tier's {step} GiB step", tier.throughput),
            format!("use {} or {} GiB", gib / step * step.max(1), (gib / step + 1) * step),
        );
    }
    for job in views.jobs.iter().filter_map(Job::new) {
        fits(&job, capacity, throughput, sink);
        on_lustre(&job, views, sink);
    }
}

/// Peak footprint against capacity, and the time one save takes.
fn fits(job: &Job<'_>, capacity: &Fact<u64>, throughput: &Fact<u64>, sink: &mut Sink) {
    let Some(model) = job.string("policy.model_name") else { return };
    let Some(&(_, parameters)) = knowledge::MODEL_PARAMETERS.iter().find(|(name, _)| *name == model.0) else { return };
    if job.boolean("checkpointing.enabled") != Some(true) {
        return;
    }
    let checkpoint = CHECKPOINT_BYTES_PER_PARAMETER * parameters;
    let steps = job.int("checkpointing.save_period").zip(job.int("grpo.max_num_steps"));
    let saves = steps.map(|((period, _), (max_steps, _))| if period > 0 { (max_steps.max(0) as u64).div_ceil(period as u64) } else { 0 });
    let kept = match job.int("checkpointing.keep_top_k") {
        Some((k, _)) if k >= 1 => Some(k as u64 + 1),
        _ => saves,
    };
    let Some(kept) = kept else { return };
    let peak = kept.min(saves.unwrap_or(kept)).max(1) * checkpoint + 2 * BF16_BYTES_PER_PARAMETER * parameters;
    let available = capacity.value * GIB;
    let tb = |bytes: u64| bytes as f64 / 1e12;
    if peak > available {
        sink.emit(
            &LUSTRE_TOO_SMALL,
            &capacity.file,
            capacity.at,
            format!(
                "the run needs about {:.2} TB at its peak ({kept} checkpoints of {:.2} TB for {model} plus two {:.2} TB model copies) but Lustre holds {:.2} TB ({} GiB)",
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
    let bytes_per_second = capacity.value as f64 / 1024.0 * throughput.value as f64 * 1e6;
    let seconds = checkpoint as f64 / bytes_per_second;
    let at = job.int("checkpointing.save_period").and_then(|(_, at)| at).unwrap_or(job.launch_at());
    sink.emit(
        &CHECKPOINT_SAVE_TIME,
        job.view.file,
        at,
        format!(
            "each checkpoint save writes {:.2} TB at up to {:.1} GB/s ({} GiB × {} MB/s/TiB): at least {seconds:.0} s of paused training per save",
            tb(checkpoint),
            bytes_per_second / 1e9,
            capacity.value,
            throughput.value
        ),
        "a larger instance or a higher tier saves faster; saves are synchronous in NeMo-RL v0.4.0",
    );
}

/// `checkpoint_dir` and `HF_HOME` must be on the Lustre mount the RayCluster shares.
fn on_lustre(job: &Job<'_>, views: &Views<'_>, sink: &mut Sink) {
    let Some(mount) = lustre_mount(views) else { return };
    let under = |path: &str| path == mount || path.starts_with(&format!("{}/", mount.trim_end_matches('/')));
    if let Some((dir, Some(at))) = job.string("checkpointing.checkpoint_dir")
        && !under(dir)
    {
        sink.emit(
            &PATH_OUTSIDE_LUSTRE,
            job.view.file,
            at,
            format!("checkpoint_dir `{dir}` is outside the Lustre mount `{mount}`; head and workers would write to different disks"),
            format!("put it under {mount}/"),
        );
    }
    let hf_homes = views.runtime_envs.iter().filter_map(|env| Some((env.file, env.root.get(&["env_vars", "HF_HOME"])?)));
    for (file, node) in hf_homes {
        let Some(path) = node.text() else { continue };
        if !under(path) {
            sink.emit(
                &PATH_OUTSIDE_LUSTRE,
                file,
                node.at(),
                format!("HF_HOME `{path}` is outside the Lustre mount `{mount}`"),
                format!("put it under {mount}/ so every node shares the model download"),
            );
        }
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
