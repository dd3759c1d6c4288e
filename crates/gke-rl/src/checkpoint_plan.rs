//! How long a checkpoint save takes and how often to save: one set of figures for `validate`
//! and `deploy --dry-run`'s plan (from the tier's list throughput), `storage-check` (from the
//! distributed checkpoint it saved on the nodes, else its raw write rate) and `report` (beside
//! the run's own saves and restarts). A raw rate, listed or measured, is never taken at its
//! word: a real save reaches [`RAW_RATE_EFFICIENCY`] of it.
//!
//! The save period follows Young's first-order optimum: with C the time one save takes and M
//! the mean time between failures, saving every T = √(2·C·M) loses the least time to saves and
//! to work redone after a failure (J. W. Young, "A first order approximation to the optimum
//! checkpoint interval", Communications of the ACM 17(9), 1974; J. T. Daly, "A higher order
//! estimate of the optimum checkpoint interval for restart dumps", Future Generation Computer
//! Systems 22(3), 2006, shows it holds to first order while C ≪ M).
//!
//! ```
//! use gke_rl::checkpoint_plan::{Interval, Mtbf};
//! // A 120 s save, a preemption every 6 hours, 600 s steps:
//! let interval = Interval::plan(120.0, Mtbf::Configured { minutes: 360 }, 600.0);
//! assert_eq!(interval.seconds.round(), 2277.0); // √(2 · 120 · 21600)
//! assert_eq!(interval.steps, 4);
//! ```

use serde::Serialize;

use crate::Deployment;
use crate::knowledge::{self, CHECKPOINT_BYTES_PER_PARAMETER, LustreTier};

/// What a real distributed checkpoint reached of the raw write rate on the same disk: a
/// `torch.distributed.checkpoint` save of 20.9 GB from an H100 (bf16 weights, fp32 master
/// weights, Adam's two moments) was durable after 33.2 s, where the storage check's raw write
/// rate predicted 16.8 s (tests/fixtures/storage-check/dcp-save-h100.json; five more runs in
/// tests/fixtures/storage-check/README.md, 0.45 to 0.58). Staging the tensors off the GPU and
/// the library's own work are the rest.
pub const RAW_RATE_EFFICIENCY: f64 = 0.5;

/// Where a saved checkpoint's tensors came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// The ranks' GPUs, as the run saves.
    Gpu,
    /// Host memory: the nodes had no GPU.
    Cpu,
}

/// Where a prediction's rate comes from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "from", rename_all = "kebab-case")]
pub enum Basis {
    /// A distributed checkpoint the storage check saved on the nodes, as the run saves.
    Saved {
        /// Bytes per second to durable, all nodes together.
        rate: f64,
        /// Bytes per second of what an asynchronous save blocked for, where the release saves
        /// so: the pause training takes.
        #[serde(skip_serializing_if = "Option::is_none")]
        pause_rate: Option<f64>,
        /// Where its tensors came from.
        device: Device,
        /// Seconds the slowest rank took to stage its tensors off the GPU, where it did.
        staging_s: Option<f64>,
    },
    /// The storage check's raw write rate, times [`RAW_RATE_EFFICIENCY`].
    MeasuredRate {
        /// The raw rate, bytes per second.
        raw: f64,
    },
    /// The instance's list throughput (capacity × tier), times [`RAW_RATE_EFFICIENCY`].
    ListThroughput {
        /// The list rate, bytes per second.
        raw: f64,
    },
}

impl Basis {
    /// Bytes per second a save reaches on this basis: a saved checkpoint's own rate, a raw one
    /// at [`RAW_RATE_EFFICIENCY`].
    pub fn rate(&self) -> f64 {
        match self {
            Basis::Saved { rate, .. } => *rate,
            Basis::MeasuredRate { raw } | Basis::ListThroughput { raw } => raw * RAW_RATE_EFFICIENCY,
        }
    }

    /// For people: which prediction this is.
    pub fn describe(&self) -> String {
        let efficiency = format!("× {RAW_RATE_EFFICIENCY}, what a real save reached of the raw rate on an H100");
        match self {
            Basis::Saved { device: Device::Gpu, staging_s, .. } => format!(
                "a distributed checkpoint the check saved from the GPUs{}",
                staging_s.map_or_else(String::new, |s| format!(", {s:.1} s of it staging off the GPU"))
            ),
            Basis::Saved { device: Device::Cpu, .. } => {
                "a distributed checkpoint the check saved from host memory: no GPU on the nodes".to_owned()
            }
            Basis::MeasuredRate { raw } => format!("the measured write rate {} {efficiency}", rate(*raw)),
            Basis::ListThroughput { raw } => format!("the instance's list throughput {} {efficiency}", rate(*raw)),
        }
    }
}

/// A save period is "far" from the optimum beyond this factor either way: within it, the time
/// lost differs from the optimum's by under 25% (the loss C/T + T/2M grows as (r + 1/r)/2).
pub const FAR_FACTOR: f64 = 2.0;

/// The aggregate throughput Managed Lustre lists for an instance: its capacity in TiB times its
/// tier's MB/s per TiB, in bytes per second.
pub fn tier_ceiling(capacity_gib: u64, tier: &LustreTier) -> f64 {
    capacity_gib as f64 / 1024.0 * f64::from(tier.throughput) * 1e6
}

/// Bytes of one checkpoint of a model of `parameters`: weights, master weights and Adam's two
/// moments ([`CHECKPOINT_BYTES_PER_PARAMETER`]).
pub fn checkpoint_bytes(parameters: u64) -> u64 {
    parameters.saturating_mul(CHECKPOINT_BYTES_PER_PARAMETER)
}

/// The smallest capacity of `tier` (a multiple of its step) on which a save of `bytes` takes at
/// most `seconds`, at [`RAW_RATE_EFFICIENCY`] of its list throughput, if the tier has one.
pub fn capacity_to_save_within(bytes: u64, seconds: f64, tier: &LustreTier) -> Option<u64> {
    let needed_gib = bytes as f64 / seconds / (f64::from(tier.throughput) * 1e6 * RAW_RATE_EFFICIENCY) * 1024.0;
    let mut gib = tier.min_gib.max(needed_gib.ceil() as u64);
    let step = tier.step_for(gib);
    gib = gib.div_ceil(step).saturating_mul(step);
    (gib <= tier.max_gib).then_some(gib)
}

/// Where the mean time between failures comes from. Never a default of gke-rl's own.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "from", rename_all = "kebab-case")]
pub enum Mtbf {
    /// The run's own records: its restarts over its wall time.
    Records {
        /// Restarts after lost nodes.
        restarts: u32,
        /// Wall hours.
        hours: f64,
    },
    /// The config's `job.mean_minutes_between_preemptions`.
    Configured {
        /// Minutes.
        minutes: u32,
    },
}

impl Mtbf {
    /// The run's records when they have a restart, else the config's figure, else nothing.
    pub fn of(restarts: u32, wall_s: f64, configured: Option<u32>) -> Option<Mtbf> {
        if restarts > 0 && wall_s.is_finite() && wall_s > 0.0 {
            return Some(Mtbf::Records { restarts, hours: wall_s / 3600.0 });
        }
        configured.map(|minutes| Mtbf::Configured { minutes })
    }

    /// Seconds.
    pub fn seconds(&self) -> f64 {
        match *self {
            Mtbf::Records { restarts, hours } => hours * 3600.0 / f64::from(restarts.max(1)),
            Mtbf::Configured { minutes } => f64::from(minutes) * 60.0,
        }
    }

    /// For people: "one preemption every 6.0 h (job.mean_minutes_between_preemptions)".
    pub fn describe(&self) -> String {
        let every = span(self.seconds());
        match self {
            Mtbf::Records { restarts, hours } => {
                let plural = if *restarts == 1 { "" } else { "s" };
                format!("one preemption every {every} ({restarts} restart{plural} in {} of this run)", span(hours * 3600.0))
            }
            Mtbf::Configured { .. } => format!("one preemption every {every} (job.mean_minutes_between_preemptions)"),
        }
    }
}

/// `6.0 h`, `17 min`.
fn span(seconds: f64) -> String {
    if seconds >= 3600.0 { format!("{:.1} h", seconds / 3600.0) } else { format!("{:.0} min", seconds / 60.0) }
}

/// The save interval that loses the least time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// One save, seconds.
    pub save_s: f64,
    /// The mean time between failures it was planned for.
    pub mtbf: Mtbf,
    /// Young's optimum, √(2·C·M), in seconds.
    pub seconds: f64,
    /// The same in steps of the expected step time, at least 1.
    pub steps: u64,
}

impl Interval {
    /// The optimum for saves of `save_s` seconds, failures every `mtbf`, steps of `step_s`.
    pub fn plan(save_s: f64, mtbf: Mtbf, step_s: f64) -> Interval {
        let seconds = (2.0 * save_s.max(0.0) * mtbf.seconds()).sqrt();
        let steps = if step_s > 0.0 { (seconds / step_s).round().max(1.0) as u64 } else { 1 };
        Interval { save_s, mtbf, seconds, steps }
    }

    /// Whether `period` steps is more than [`FAR_FACTOR`] from the optimum.
    pub fn is_far_from(&self, period: u64) -> bool {
        let ratio = period.max(1) as f64 / self.steps as f64;
        !(1.0 / FAR_FACTOR..=FAR_FACTOR).contains(&ratio)
    }
}

/// The share of wall time saves take when every `period` steps of `step_s` seconds one save of
/// `save_s` seconds pauses training.
pub fn wall_share(save_s: f64, period: u64, step_s: f64) -> f64 {
    let training = period.max(1) as f64 * step_s.max(0.0);
    if training + save_s <= 0.0 { 0.0 } else { save_s / (training + save_s) }
}

/// The NeMo-RL key a save period is set with: the crash-recovery saves' own where the image's
/// release has them, else the one save period.
pub fn period_key(release: Option<&str>) -> &'static str {
    if release.is_some_and(|tag| knowledge::nemo_rl_has_key(tag, knowledge::FT_SAVE_PERIOD_KEY)) {
        knowledge::FT_SAVE_PERIOD_KEY
    } else {
        "checkpointing.save_period"
    }
}

/// What a deployment saves and how it runs, from its config.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Saving {
    /// The model, when gke-rl knows its size.
    pub model: Option<&'static str>,
    /// Bytes of one checkpoint, when the model is known.
    pub bytes: Option<u64>,
    /// Checkpoints on Lustre at the peak: `keep_top_k`, and the one being written (NeMo-RL
    /// removes the oldest after the new one is complete); `None` keeps all.
    pub peak_kept: Option<u64>,
    /// Steps between saves.
    pub save_period: u64,
    /// Seconds per step, as the config states them.
    pub step_s: Option<f64>,
    /// The configured mean minutes between preemptions.
    pub mtbf_minutes: Option<u32>,
    /// Whether the run saves at all.
    pub enabled: bool,
    /// Whether its release saves asynchronously ([`writer`]): training then pauses only while
    /// the tensors are staged, and a save is over only once it has landed.
    pub asynchronous: bool,
}

impl Saving {
    /// The deployment's saves.
    pub fn of(d: &Deployment) -> Saving {
        let checkpointing = &d.job.checkpointing;
        let model = knowledge::model(d.job.model.as_str());
        Saving {
            model: model.map(|m| m.name),
            bytes: model.map(|m| checkpoint_bytes(m.parameters)),
            peak_kept: checkpointing.keep_top_k.map(|k| u64::from(k.get()) + 1),
            save_period: u64::from(checkpointing.save_period.get()),
            step_s: d.job.expected_step_seconds.map(|s| f64::from(s.get())),
            mtbf_minutes: d.job.mean_minutes_between_preemptions.map(|m| m.get()),
            enabled: checkpointing.enabled,
            asynchronous: writer(d).asynchronous,
        }
    }

    /// The deployment's Lustre tier ceiling, when its throughput is a tier.
    pub fn tier_ceiling(d: &Deployment) -> Option<f64> {
        let tier = knowledge::lustre_tier(u64::from(d.lustre.throughput_mbps_per_tib.get()))?;
        Some(tier_ceiling(u64::from(d.lustre.capacity_gib.get()), tier))
    }
}

/// One save's figures at a write rate, and how often to save.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// Bytes saved.
    pub bytes: u64,
    /// At this rate, bytes per second: what a save reaches.
    pub rate: f64,
    /// Where the rate comes from.
    pub basis: Basis,
    /// Seconds one save takes, until it is durable.
    pub save_s: f64,
    /// Seconds training pauses for it: the save's for a synchronous release; for an
    /// asynchronous one, what the check's asynchronous save blocked for, where it measured one.
    pub pause_s: f64,
    /// Whether it runs past NeMo-RL's collective timeout.
    pub past_timeout: bool,
    /// The share of wall time saves take at the configured period and step time.
    pub wall_share: Option<f64>,
    /// The save interval that loses the least time, given a failure rate and a step time.
    pub interval: Option<Interval>,
}

impl Prediction {
    /// `saving`'s saves at the rate `basis` gives, failures at `mtbf` if known.
    pub fn new(saving: &Saving, basis: Basis, mtbf: Option<Mtbf>) -> Option<Prediction> {
        let bytes = saving.bytes?;
        let rate = basis.rate();
        if !(rate.is_finite() && rate > 0.0) {
            return None;
        }
        let save_s = bytes as f64 / rate;
        let pause_s = match basis {
            Basis::Saved { pause_rate: Some(pause), .. } if saving.asynchronous && pause.is_finite() && pause > 0.0 => bytes as f64 / pause,
            _ => save_s,
        };
        Some(Prediction {
            bytes,
            rate,
            basis,
            save_s,
            pause_s,
            past_timeout: save_s > knowledge::NEMO_RL_COLLECTIVE_TIMEOUT_S as f64,
            wall_share: saving.step_s.map(|step| wall_share(pause_s, saving.save_period, step)),
            interval: mtbf.zip(saving.step_s).map(|(mtbf, step)| Interval::plan(pause_s, mtbf, step)),
        })
    }
}

/// `8.79 GB/s`.
pub fn rate(bytes_per_second: f64) -> String {
    format!("{:.2} GB/s", bytes_per_second / 1e9)
}

/// `1.02 TB`, `34.4 GB`, `134 MB`.
pub fn size(bytes: u64) -> String {
    let bytes = bytes as f64;
    match bytes {
        1e12.. => format!("{:.2} TB", bytes / 1e12),
        1e9.. => format!("{:.1} GB", bytes / 1e9),
        _ => format!("{:.0} MB", bytes / 1e6),
    }
}

impl Prediction {
    /// What the prediction says, a line each: one save's time at the rate and where it comes
    /// from, its share of the run, and the period to save at.
    pub fn advice(&self, saving: &Saving, release: Option<&str>) -> Vec<String> {
        let mut lines = vec![format!(
            "each save of {} takes about {:.0} s at {} (from {})",
            size(self.bytes),
            self.save_s,
            rate(self.rate),
            self.basis.describe()
        )];
        if self.pause_s < self.save_s {
            lines.push(format!("training pauses about {:.0} s of it: the release saves asynchronously", self.pause_s));
        }
        match (self.wall_share, saving.step_s) {
            (Some(share), Some(step)) => lines.push(format!(
                "saving every {} steps of {step:.0} s, saves take {:.1}% of the run's wall time",
                saving.save_period,
                share * 100.0
            )),
            _ => lines.push("set job.expected_step_seconds for the share of the run saves take".to_owned()),
        }
        match self.interval {
            Some(Interval { steps, seconds, mtbf, .. }) => lines.push(format!(
                "with {}, {}={steps} ({:.0} min) loses the least time (Young's √(2 · save · time between failures))",
                mtbf.describe(),
                period_key(release),
                seconds / 60.0
            )),
            None => lines.push("set job.mean_minutes_between_preemptions (and the step time) for a recommended save period".to_owned()),
        }
        lines
    }
}

/// The deployment's saves at its Lustre tier's list throughput, for a plan: nothing when the
/// model, the tier or saving itself is off.
pub fn at_the_tier(d: &Deployment) -> Option<Prediction> {
    let saving = Saving::of(d);
    let mtbf = saving.mtbf_minutes.map(|minutes| Mtbf::Configured { minutes });
    let basis = Basis::ListThroughput { raw: Saving::tier_ceiling(d)? };
    Prediction::new(&saving, basis, mtbf).filter(|_| saving.enabled)
}

/// The policy backend the deployment trains with: `megatron` when its recipe is a Megatron one
/// (or an override turns `policy.megatron_cfg.enabled` on), else `dtensor`.
pub fn backend(d: &Deployment) -> &'static str {
    let overridden = d.job.overrides.iter().find(|(key, _)| key.as_str().trim_start_matches('+') == "policy.megatron_cfg.enabled");
    let megatron = match overridden.and_then(|(_, value)| value.0.as_deref()) {
        Some(value) => value.eq_ignore_ascii_case("true"),
        None => d.job.recipe.as_str().contains("megatron"),
    };
    if megatron { "megatron" } else { "dtensor" }
}

/// How the deployment's release and backend write a checkpoint.
pub fn writer(d: &Deployment) -> &'static knowledge::SaveWriter {
    let release = knowledge::nemo_rl_release(d.ray.image.as_str()).map(|r| r.tag);
    knowledge::save_writer(release, backend(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes a parameter takes are the rules' 14, held to a real checkpoint: bf16 weights, fp32
    /// master weights and Adam's two moments saved with `torch.distributed.checkpoint` from an H100
    /// (tests/fixtures/storage-check/README.md says which run).
    #[test]
    fn a_real_checkpoint_takes_the_bytes_a_parameter_the_rules_assume() {
        let run: serde_json::Value =
            serde_json::from_str(include_str!("../../../tests/fixtures/storage-check/dcp-save-h100.json")).expect("the device run's JSON");
        let number = |value: &serde_json::Value| value.as_f64().unwrap_or_else(|| panic!("not a number: {value}"));
        let (bytes, parameters) = (number(&run["sync"]["bytes"]), number(&run["parameters"]));
        let per_parameter = bytes / parameters;
        assert!((per_parameter / CHECKPOINT_BYTES_PER_PARAMETER as f64 - 1.0).abs() < 0.001, "{per_parameter} bytes a parameter");
        // The same checkpoint both ways; its metadata file may differ by a byte.
        assert!((bytes - number(&run["async"]["bytes"])).abs() < 1024.0, "the sync and the async save wrote other checkpoints");
        assert!(number(&run["async"]["blocking_s"]) < number(&run["async"]["landed_s"]), "an async save blocks for part of it");
    }

    /// The efficiency a raw rate is taken at is the one the device run measured.
    #[test]
    fn the_raw_rate_is_taken_at_the_efficiency_a_real_save_reached() {
        let run: serde_json::Value =
            serde_json::from_str(include_str!("../../../tests/fixtures/storage-check/dcp-save-h100.json")).expect("the device run's JSON");
        let measured = run["predicted_over_measured"].as_f64().expect("a ratio");
        assert!((measured - RAW_RATE_EFFICIENCY).abs() < 0.01, "the fixture says {measured}");
        // And it lies among the later runs' from the GPU.
        let runs = [
            include_str!("../../../tests/fixtures/storage-check/h100-2026-12-07/gpu-threads1.json"),
            include_str!("../../../tests/fixtures/storage-check/h100-2026-12-07/gpu-threads1-rerun.json"),
            include_str!("../../../tests/fixtures/storage-check/h100-2026-12-07/gpu-threads4.json"),
            include_str!("../../../tests/fixtures/storage-check/h100-2026-12-07/gpu-0.4b-threads1.json"),
        ];
        let ratios: Vec<f64> = runs
            .iter()
            .map(|run| serde_json::from_str::<serde_json::Value>(run).expect("JSON")["predicted_over_measured"].as_f64().expect("a ratio"))
            .collect();
        let (low, high) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        assert!((low..=high).contains(&RAW_RATE_EFFICIENCY), "{ratios:?}");
        assert_eq!(Basis::MeasuredRate { raw: 2e9 }.rate(), 1e9);
        assert_eq!(Basis::Saved { rate: 1.5e9, pause_rate: None, device: Device::Gpu, staging_s: None }.rate(), 1.5e9);
    }

    /// Worked by hand: Qwen2.5-72B (72,706,203,648 parameters) on the codelab's 9,000 GiB at
    /// 1000 MB/s/TiB. One checkpoint is 14 × 72,706,203,648 = 1,017,886,851,072 bytes. The
    /// tier's ceiling is 9000 / 1024 × 1000 MB/s = 8,789,062,500 B/s, and a save reaches half of
    /// it, 4,394,531,250 B/s, so a save takes 1,017,886,851,072 / 4,394,531,250 = 231.626 s. With
    /// a preemption every 6 h (21,600 s), Young's optimum is √(2 × 231.626 × 21,600) = 3,163.3 s,
    /// or 5.27 steps of 600 s: 5. Saving every 2 steps, saves take 231.626 / (1,200 + 231.626) =
    /// 16.18% of the wall time.
    #[test]
    fn the_planner_agrees_with_the_hand_worked_figures() {
        let tier = knowledge::lustre_tier(1000).expect("a tier");
        let ceiling = tier_ceiling(9000, tier);
        assert_eq!(ceiling, 8_789_062_500.0);
        let saving = Saving {
            model: Some("Qwen/Qwen2.5-72B-Instruct"),
            bytes: Some(checkpoint_bytes(72_706_203_648)),
            peak_kept: Some(3),
            save_period: 2,
            step_s: Some(600.0),
            mtbf_minutes: Some(360),
            enabled: true,
            asynchronous: false,
        };
        assert_eq!(saving.bytes, Some(1_017_886_851_072));
        let mtbf = Mtbf::of(0, 3600.0, saving.mtbf_minutes).expect("configured");
        let prediction = Prediction::new(&saving, Basis::ListThroughput { raw: ceiling }, Some(mtbf)).expect("a model");
        assert_eq!(prediction.rate, 4_394_531_250.0);
        assert!((prediction.save_s - 231.626).abs() < 0.001, "{}", prediction.save_s);
        assert!(!prediction.past_timeout);
        assert!((prediction.wall_share.unwrap() - 0.1618).abs() < 0.0001, "{:?}", prediction.wall_share);
        let interval = prediction.interval.expect("planned");
        assert!((interval.seconds - 3163.3).abs() < 0.1, "{}", interval.seconds);
        assert_eq!(interval.steps, 5);
        assert!(!interval.is_far_from(5) && interval.is_far_from(2) && interval.is_far_from(11));
    }

    #[test]
    fn the_runs_own_restarts_come_before_the_config() {
        assert_eq!(Mtbf::of(3, 36_000.0, Some(60)), Some(Mtbf::Records { restarts: 3, hours: 10.0 }));
        assert_eq!(Mtbf::of(3, 36_000.0, Some(60)).unwrap().seconds(), 12_000.0);
        assert_eq!(Mtbf::of(0, 36_000.0, Some(60)), Some(Mtbf::Configured { minutes: 60 }));
        assert_eq!(Mtbf::of(0, 36_000.0, None), None, "never a default of gke-rl's own");
        assert_eq!(Mtbf::of(2, f64::INFINITY, None), None);
    }

    #[test]
    fn the_capacity_that_saves_in_time_is_a_multiple_of_the_step() {
        let tier = knowledge::lustre_tier(125).expect("a tier");
        // 10 TB within 600 s at half of 125 MB/s/TiB: 266.7 TiB, 273,067 GiB, so 288,000 in
        // 72,000 steps.
        assert_eq!(capacity_to_save_within(10_000_000_000_000, 600.0, tier), Some(288_000));
        assert_eq!(capacity_to_save_within(u64::MAX, 1.0, tier), None, "past the tier's largest");
    }
}
