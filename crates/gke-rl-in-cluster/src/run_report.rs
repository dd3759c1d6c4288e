//! A run's figures, for people and programs: where it is, each step, checkpoints, restarts,
//! goodput and cost. Computed from what the run's log said ([`RunLog`]), its supervisor's
//! records ([`Records`]), its wall time and the cluster's price, all given by the caller.
//!
//! Goodput follows Google's `ml-goodput-measurement` (AI-Hypercomputer/ml-goodput-measurement,
//! `ml_goodput_measurement/src/goodput.py` and `goodput_utils.py` at v0.2.3): the share of the
//! job's wall time spent in productive training steps. Badput is broken down into its
//! `BadputType` buckets as a NeMo-RL log can tell them apart:
//! - `UNPRODUCTIVE_CHECKPOINT_SAVE_TIME`: the `checkpointing` timer of each step kept (saves
//!   are synchronous in NeMo-RL, so the whole save is lost time);
//! - `WASTED_PROGRESS_FROM_DISRUPTION`: steps done again after a restart; as there, a step
//!   number logged again marks the earlier run of it as lost;
//! - `INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION`: the supervisor's restarts, split into waiting
//!   for capacity (until Ray counts the nodes again) and restarting (until the training runs);
//! - `PROGRAM_STARTUP`, `TRAINING_PREP` and `OTHER` together: the rest of the wall time, as a
//!   log without timestamps cannot tell start-up and model load from anything else.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::records::{Records, total_s};
use crate::run_log::RunLog;
use gke_rl::checkpoint_plan::{Basis, Interval, Mtbf, Prediction, Saving};

/// The rewards the trend is fitted on: the newest steps.
const TREND_STEPS: usize = 5;

/// What the report is computed from.
pub struct Inputs<'a> {
    /// The run's log, read.
    pub log: &'a RunLog,
    /// Its supervisor's records (empty for an unsupervised job).
    pub records: &'a Records,
    /// Its wall time so far, or in all, if known.
    pub wall_s: Option<f64>,
    /// What the cluster costs per hour while the run uses it, if known.
    pub per_hour: Option<f64>,
    /// When it started, in seconds since the epoch, if known.
    pub started_at: Option<f64>,
    /// What the deployment saves and one save predicted (from the storage check's saved
    /// checkpoint, else a raw rate), for the prediction beside the measured saves and the
    /// recommended period.
    pub saving: Option<(Saving, Option<Prediction>)>,
    /// Whether the run has ended (its newest job is terminal, or its records say so): no time
    /// is left, and nothing more to pay.
    pub ended: bool,
    /// Why the run is not priced at `per_hour`, when it ran on something else than the
    /// config's cluster (a CPU-only head of one's own, say).
    pub unpriced: Option<String>,
}

/// A run's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Where the run is.
    pub progress: Progress,
    /// Every step the log reported, in order; a step done again appears again.
    pub steps: Vec<StepRow>,
    /// Goodput and its badput.
    pub goodput: Goodput,
    /// Each restart the supervisor made.
    pub restarts: Vec<RestartRow>,
    /// What it cost, if the price is known.
    pub cost: Option<Cost>,
    /// Why it is not priced, where it ran on something the config's price is not for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unpriced: Option<String>,
    /// When it started, in seconds since the epoch, if known: with the wall time, the window
    /// [`Report::lustre`] covers.
    pub started_at: Option<f64>,
    /// What its Lustre instance did meanwhile, where the caller read it.
    pub lustre: Option<crate::lustre_usage::Usage>,
    /// Its saves, measured and predicted, and how often to save.
    pub checkpoints: Checkpoints,
    /// What the log held that the figures leave out.
    pub left_out: LeftOut,
}

/// What a log held that a report's figures leave out, so the report can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// Figures out of range (not finite, or past ±1e12): no measurement.
    pub figures: usize,
    /// Supervisor records with figures out of range.
    pub records: usize,
    /// Supervisor records that could not be read at all (a number past its type, a field
    /// missing): the restarts may be fewer than the run's.
    pub unreadable_records: usize,
    /// Steps past the first [`crate::run_log::MAX_STEPS`], in the progress but not in the rows.
    pub steps: u64,
}

impl LeftOut {
    /// The note for people; empty when nothing was left out.
    pub fn note(&self) -> String {
        let mut parts = Vec::new();
        if self.figures > 0 {
            parts.push(format!("{} figures out of range (not finite, or past ±1e12) were left out", self.figures));
        }
        if self.records > 0 {
            parts.push(format!("{} supervisor records with figures out of range were left out", self.records));
        }
        if self.unreadable_records > 0 {
            parts.push(format!(
                "{} supervisor records could not be read (a number past its type, or a field missing): the restarts may be fewer than the run's",
                self.unreadable_records
            ));
        }
        if self.steps > 0 {
            parts.push(format!(
                "the {} steps after the first {} are in the progress but not in the figures",
                self.steps,
                crate::run_log::MAX_STEPS
            ));
        }
        if parts.is_empty() { String::new() } else { format!("note: {}\n", parts.join("; ")) }
    }
}

/// Measured saves further than this share from the prediction make a finding: the planner's
/// save period and timeout guard rest on it.
pub const PREDICTION_TOLERANCE: f64 = 0.2;

/// A run's checkpoint saves, measured beside predicted, and the period that loses the least.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoints {
    /// Saves the log began.
    pub saves: usize,
    /// The mean pause of the saves NeMo-RL timed (the `checkpointing` timer).
    pub blocking_s: Option<f64>,
    /// The mean time until a save was durable (its `step_N` appeared), where the supervisor
    /// timed it: later than the pause for an async save.
    pub durable_s: Option<f64>,
    /// One save, predicted.
    pub predicted_s: Option<f64>,
    /// Where the prediction comes from.
    pub basis: Option<Basis>,
    /// How far the measured saves are from the prediction: measured over predicted, less 1
    /// (`0.3`: 30% slower than predicted). Past [`PREDICTION_TOLERANCE`] either way it is a
    /// finding.
    pub off_by: Option<f64>,
    /// The save period that loses the least time, from the measured save (else the predicted
    /// one), the run's own failure rate (else the config's) and its median step.
    pub interval: Option<Interval>,
    /// The period the run saves at.
    pub save_period: Option<u64>,
}

/// One step, as the log reported it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRow {
    /// Counted from 1.
    pub step: u64,
    /// `Avg Reward`.
    pub reward: Option<f64>,
    /// `Loss`.
    pub loss: Option<f64>,
    /// `Total step time`, once the step finished.
    pub step_time_s: Option<f64>,
    /// Its checkpoint save; null when it saved none.
    pub checkpoint_s: Option<f64>,
    /// When that save began, in seconds since the epoch, where the supervisor recorded it.
    pub saved_at: Option<f64>,
    /// Seconds until that save was durable, where the supervisor timed it.
    pub durable_s: Option<f64>,
    /// `Mean Generation Length`, in tokens.
    pub generation_length: Option<f64>,
    /// Each timer's seconds.
    pub timers: BTreeMap<String, f64>,
    /// Done again after a restart: this run of it was lost.
    pub redone: bool,
}

/// Where the run is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// The newest finished step.
    pub step: Option<u64>,
    /// The steps the run will take.
    pub of: Option<u64>,
    /// The newest reward.
    pub reward: Option<f64>,
    /// Its trend: the least-squares slope of the newest rewards, per step.
    pub reward_trend: Option<f64>,
    /// The median time of the finished steps.
    pub median_step_s: Option<f64>,
    /// The time left at that median.
    pub eta_s: Option<f64>,
    /// The newest checkpoint save's duration.
    pub last_checkpoint_s: Option<f64>,
    /// The time until that save was durable, where the supervisor timed it.
    pub last_durable_s: Option<f64>,
    /// Restarts so far.
    pub restarts: usize,
}

/// Goodput: the productive share of the wall time, and where the rest went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Goodput {
    /// The run's wall time, if known.
    pub wall_s: Option<f64>,
    /// Productive training: the steps kept, less their checkpoint saves.
    pub productive_s: f64,
    /// `productive_s / wall_s`, from 0 to 1, when the wall time is known.
    pub goodput: Option<f64>,
    /// The rest, by cause.
    pub badput: Badput,
}

impl Goodput {
    /// The wall time's parts, productive first, each with its words: the rest is unknown
    /// without the wall time.
    pub fn parts(&self) -> [(&'static str, Option<f64>); 6] {
        let b = &self.badput;
        [
            ("productive training", Some(self.productive_s)),
            ("checkpoint saves", Some(b.checkpoint_save_s)),
            ("steps redone after a restart", Some(b.redone_s)),
            ("waiting for capacity", Some(b.capacity_wait_s)),
            ("restarting", Some(b.restart_s)),
            ("start-up, model load and other", b.startup_and_other_s),
        ]
    }
}

/// Badput by cause, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Badput {
    /// Checkpoint saves of the steps kept.
    pub checkpoint_save_s: f64,
    /// Steps done again after a restart.
    pub redone_s: f64,
    /// Waiting for the lost nodes to come back.
    pub capacity_wait_s: f64,
    /// From the nodes being back to the training running again.
    pub restart_s: f64,
    /// The rest of the wall time: start-up, model load, validation outside steps, and steps cut
    /// short by a failure. Known when the wall time is.
    pub startup_and_other_s: Option<f64>,
}

/// A restart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestartRow {
    /// 1 for the first.
    pub number: u32,
    /// Why, in words.
    pub cause: String,
    /// The checkpoint step it resumed from.
    pub resumed_from: Option<u64>,
    /// Steps it did again, as the supervisor counted them.
    pub steps_redone: Option<u64>,
    /// From the failure to the training running again.
    pub lost_s: f64,
    /// When the failure was noticed, in seconds since the epoch.
    pub noticed_at: f64,
}

/// What the run cost at the cluster's price.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cost {
    /// The price, in dollars per hour.
    pub per_hour: f64,
    /// Over the wall time so far, when known.
    pub so_far: Option<f64>,
    /// For the steps left at the median step time, when known and some are left.
    pub to_finish: Option<f64>,
}

/// Whether each step was done again: a step at the same place in the run (or an earlier one, as
/// a restart resumes from an earlier checkpoint) in a later attempt marks the earlier run of it
/// as lost. Within one attempt, nothing is lost.
fn redone(steps: &[crate::run_log::Step]) -> Vec<bool> {
    // Attempts only grow along the log: walking back, the steps of later attempts are all seen
    // before those of the current one.
    let (mut lowest_later, mut lowest_here, mut attempt) = (None::<u64>, None::<u64>, None);
    let mut flags = vec![false; steps.len()];
    for (i, step) in steps.iter().enumerate().rev() {
        if attempt != Some(step.attempt) {
            lowest_later = lower(lowest_later, lowest_here);
            (lowest_here, attempt) = (None, Some(step.attempt));
        }
        flags[i] = lowest_later.is_some_and(|lowest| lowest <= step.position);
        lowest_here = lower(lowest_here, Some(step.position));
    }
    flags
}

/// The lower of two places in the run, either of which may be unknown.
fn lower(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Where the run is: its newest finished step, reward and trend, median step time, time left,
/// newest checkpoint and restarts. Cheap enough to compute for each step as the log arrives.
pub fn progress(log: &RunLog, records: &Records) -> Progress {
    progress_given(log, records, &redone(log.steps()))
}

/// [`progress`], with each step's [`redone`] flag worked out already.
fn progress_given(log: &RunLog, records: &Records, redone: &[bool]) -> Progress {
    let steps = log.steps();
    let kept: Vec<&crate::run_log::Step> =
        steps.iter().zip(redone).filter(|(s, r)| !**r && s.step_time_s.is_some()).map(|(s, _)| s).collect();
    let newest = steps.iter().rev().find(|s| s.step_time_s.is_some());
    // Past the steps kept, the newest that finished is where the run is.
    let (_, _, newest_unkept) = log.left_out();
    let of = newest_unkept.map(|(_, of)| of).or(steps.last().map(|s| s.of));
    let median_step_s = median(kept.iter().filter_map(|s| s.step_time_s).collect());
    let rewards: Vec<(f64, f64)> = kept.iter().rev().filter_map(|s| Some((s.step as f64, s.reward?))).take(TREND_STEPS).collect();
    let newest_step = newest_unkept.map(|(step, _)| step).or(newest.map(|s| s.step));
    let left = newest_step.zip(of).map(|(newest, of)| of.saturating_sub(newest));
    // The pause and the time until durable of one save: the newest that was timed.
    let newest_timed = log.saves().iter().rev().find(|s| s.seconds.is_some());
    Progress {
        step: newest_step,
        of,
        reward: newest.and_then(|s| s.reward),
        reward_trend: slope(&rewards),
        median_step_s,
        eta_s: median_step_s.zip(left).map(|(m, left)| m * left as f64),
        last_checkpoint_s: newest_timed.and_then(|s| s.seconds),
        last_durable_s: newest_timed.and_then(|s| s.durable_s),
        restarts: records.restarts().count(),
    }
}

/// The report of a run.
pub fn report(inputs: &Inputs<'_>) -> Report {
    let log = inputs.log;
    let redone = redone(log.steps());
    let steps: Vec<StepRow> = log
        .steps()
        .iter()
        .zip(redone.iter().copied())
        .map(|(s, redone)| StepRow {
            step: s.step,
            reward: s.reward,
            loss: s.loss,
            step_time_s: s.step_time_s,
            checkpoint_s: s.checkpoint_s(log),
            saved_at: s.save(log).and_then(|save| save.at),
            durable_s: s.save(log).and_then(|save| save.durable_s),
            generation_length: s.generation_length,
            timers: s.timers(log).map(|(name, seconds)| (name.to_owned(), seconds)).collect(),
            redone,
        })
        .collect();
    let kept = || steps.iter().filter(|s| !s.redone && s.step_time_s.is_some());
    let checkpoint_save_s = total_s(kept().filter_map(|s| s.checkpoint_s));
    let productive_s = total_s(kept().filter_map(|s| s.step_time_s)) - checkpoint_save_s;
    let redone_s = total_s(steps.iter().filter(|s| s.redone).filter_map(|s| s.step_time_s));
    let restarts: Vec<&crate::records::Restart> = inputs.records.restarts().collect();
    let capacity_wait_s = total_s(restarts.iter().map(|r| r.waited_s));
    let restart_s = total_s(restarts.iter().map(|r| r.back_to_running_s));
    let accounted = productive_s + checkpoint_save_s + redone_s + capacity_wait_s + restart_s;
    let wall_s = inputs.wall_s.filter(|w| w.is_finite() && *w > 0.0);
    let goodput = Goodput {
        wall_s,
        productive_s,
        goodput: wall_s.map(|w| (productive_s / w).clamp(0.0, 1.0)),
        badput: Badput {
            checkpoint_save_s,
            redone_s,
            capacity_wait_s,
            restart_s,
            startup_and_other_s: wall_s.map(|w| (w - accounted).max(0.0)),
        },
    };
    let progress = progress_given(log, inputs.records, &redone);
    // A run stopped or failed short of its last step has none left to take.
    let progress = if inputs.ended { Progress { eta_s: None, ..progress } } else { progress };
    let cost = inputs.per_hour.filter(|p| p.is_finite() && *p >= 0.0 && inputs.unpriced.is_none()).map(|per_hour| Cost {
        per_hour,
        so_far: wall_s.map(|w| w / 3600.0 * per_hour),
        to_finish: progress.eta_s.filter(|eta| *eta > 0.0).map(|eta| eta / 3600.0 * per_hour),
    });
    let restarts = restarts
        .iter()
        .map(|r| RestartRow {
            number: r.number,
            cause: r.cause(),
            resumed_from: r.resumed_from,
            steps_redone: r.steps_redone,
            lost_s: r.lost_s,
            noticed_at: r.noticed_at,
        })
        .collect();
    let started_at = inputs.started_at.filter(|at| at.is_finite());
    let checkpoints = checkpoints(inputs, &progress, wall_s);
    let (figures, steps_unread, _) = log.left_out();
    let left_out =
        LeftOut { figures, records: inputs.records.left_out(), unreadable_records: inputs.records.unreadable(), steps: steps_unread };
    let unpriced = inputs.unpriced.clone();
    Report { progress, steps, goodput, restarts, cost, unpriced, started_at, lustre: None, checkpoints, left_out }
}

/// The saves' figures: measured, predicted from the tier, and the period to save at.
fn checkpoints(inputs: &Inputs<'_>, progress: &Progress, wall_s: Option<f64>) -> Checkpoints {
    let saves = inputs.log.saves();
    let mean = |values: Vec<f64>| (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
    let blocking_s = mean(saves.iter().filter(|s| s.timed_by_nemo_rl).filter_map(|s| s.seconds).collect());
    let durable_s = mean(saves.iter().filter_map(|s| s.durable_s).collect());
    let saving = inputs.saving.as_ref().map(|(saving, _)| saving);
    let prediction = inputs.saving.as_ref().and_then(|(_, prediction)| prediction.as_ref());
    let predicted_s = prediction.map(|p| p.save_s);
    // A save is over once it is durable; NeMo-RL's own timer where the supervisor timed none,
    // unless the release saves asynchronously (its timer then covers the staging only).
    let synchronous = saving.is_some_and(|s| !s.asynchronous);
    let measured_s = durable_s.or(blocking_s.filter(|_| synchronous));
    let off_by = measured_s.zip(predicted_s).filter(|(_, p)| *p > 0.0).map(|(m, p)| m / p - 1.0);
    let restarts = u32::try_from(progress.restarts).unwrap_or(u32::MAX);
    let mtbf = Mtbf::of(restarts, wall_s.unwrap_or(0.0), saving.and_then(|s| s.mtbf_minutes));
    let step_s = progress.median_step_s.or(saving.and_then(|s| s.step_s));
    // The save that matters for the period is the pause, else the prediction.
    let interval = blocking_s.or(predicted_s).zip(mtbf).zip(step_s).map(|((save_s, mtbf), step)| Interval::plan(save_s, mtbf, step));
    Checkpoints {
        saves: saves.len(),
        blocking_s,
        durable_s,
        predicted_s,
        basis: prediction.map(|p| p.basis),
        off_by,
        interval,
        save_period: saving.map(|s| s.save_period),
    }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[middle] } else { (values[middle - 1] + values[middle]) / 2.0 })
}

/// The least-squares slope of `points`; none for fewer than two distinct x.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let (mean_x, mean_y) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let spread: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    (points.len() >= 2 && spread > 0.0).then(|| points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum::<f64>() / spread)
}

impl Progress {
    /// One line: step, reward and trend, median step time, time left, the newest checkpoint's
    /// duration and restarts.
    pub fn line(&self) -> String {
        let mut out = match (self.step, self.of) {
            (Some(step), Some(of)) => format!("step {step}/{of}"),
            (None, Some(of)) => format!("step 0/{of}"),
            _ => "no finished step".to_owned(),
        };
        if let Some(reward) = self.reward {
            out.push_str(&format!(", reward {reward:.4}{}", trend_arrow(self.reward_trend)));
        }
        if let Some(median) = self.median_step_s {
            out.push_str(&format!(", median step {}", duration(median)));
        }
        if let Some(eta) = self.eta_s.filter(|eta| *eta > 0.0) {
            out.push_str(&format!(", {} left", duration(eta)));
        }
        if let Some(save) = self.last_checkpoint_s {
            out.push_str(&format!(", last checkpoint {}", duration(save)));
            if let Some(durable) = self.last_durable_s.filter(|d| *d > save + 1.0) {
                out.push_str(&format!(" (durable after {})", duration(durable)));
            }
        }
        out + &format!(", {} restart{}", self.restarts, if self.restarts == 1 { "" } else { "s" })
    }
}

impl Report {
    /// The window the run covers, in seconds since the epoch: from its start, for its wall time.
    pub fn window(&self) -> Option<(f64, f64)> {
        let start = self.started_at?;
        Some((start, start + self.goodput.wall_s?))
    }

    /// The figures for people: progress, goodput and its badput, cost.
    pub fn summary(&self) -> String {
        let mut out = format!("run: {}\n", self.progress.line());
        let g = &self.goodput;
        match (g.goodput, g.wall_s) {
            (Some(share), Some(wall)) => {
                out.push_str(&format!("goodput: {} of {} ({} productive)\n", percent(share, 1.0), duration(wall), duration(g.productive_s)))
            }
            _ => out.push_str(&format!("goodput: unknown without the wall time ({} productive)\n", duration(g.productive_s))),
        }
        for (what, seconds) in g.parts().into_iter().skip(1).filter_map(|(what, s)| Some((what, s?))) {
            let share = g.wall_s.map_or_else(String::new, |w| format!("{:>8}  ", percent(seconds, w)));
            out.push_str(&format!("  {what:<32}{share}{}\n", duration(seconds)));
        }
        if let Some(why) = &self.unpriced {
            out.push_str(&format!("cost: not priced: {why}\n"));
        }
        if let Some(cost) = &self.cost {
            let so_far = cost.so_far.map_or_else(|| "unknown so far".to_owned(), |c| format!("{} so far", gke_rl::cost::dollars(c)));
            let to_finish = cost.to_finish.map_or_else(String::new, |c| format!(", {} to finish", gke_rl::cost::dollars(c)));
            out.push_str(&format!("cost at the config's {}/hour: {so_far}{to_finish}\n", gke_rl::cost::dollars(cost.per_hour)));
        }
        out.push_str(&self.checkpoints.summary());
        out.push_str(&self.left_out.note());
        if let Some(lustre) = &self.lustre {
            out.push_str(&lustre.summary(&save_windows(&self.steps)));
            out.push('\n');
        }
        out
    }
}

impl Checkpoints {
    /// The saves for people: measured beside predicted, and the period; empty when there is
    /// nothing to say.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let predicted = self
            .predicted_s
            .zip(self.basis)
            .map_or_else(String::new, |(p, basis)| format!("; predicted {} from {}", duration(p), basis.describe()));
        match (self.blocking_s, self.durable_s) {
            (Some(blocking), durable) => {
                let durable = durable.map_or_else(String::new, |d| format!(", durable after {}", duration(d)));
                out.push_str(&format!("checkpoints: {} saves, {} each on average{durable}{predicted}\n", self.saves, duration(blocking)));
            }
            (None, _) if self.predicted_s.is_some() => out.push_str(&format!("checkpoints: none timed yet{predicted}\n")),
            (None, _) => {}
        }
        let measured = self.predicted_s.zip(self.off_by).map(|(predicted, off_by)| predicted * (1.0 + off_by));
        if let (Some(off_by), Some(measured), Some(predicted)) =
            (self.off_by.filter(|o| o.abs() > PREDICTION_TOLERANCE), measured, self.predicted_s)
        {
            out.push_str(&format!(
                "finding: the saves took {} on average, {} {} than the {} predicted, and the save period and the timeout guard rest on \
                 the prediction: run `gke-rl storage-check` again on this cluster\n",
                duration(measured),
                percent(off_by.abs(), 1.0),
                if off_by > 0.0 { "longer" } else { "shorter" },
                duration(predicted)
            ));
        }
        if let Some(interval) = &self.interval {
            let now = self.save_period.map_or_else(String::new, |p| format!("; the run saves every {p}"));
            out.push_str(&format!(
                "save period: every {} steps ({}) loses the least time, with {}{now}\n",
                interval.steps,
                duration(interval.seconds),
                interval.mtbf.describe()
            ));
        }
        out
    }
}

/// `↑`, `↓` or `→` for a reward trend.
pub fn trend_arrow(trend: Option<f64>) -> &'static str {
    match trend {
        Some(t) if t > 1e-9 => " ↑",
        Some(t) if t < -1e-9 => " ↓",
        Some(_) => " →",
        None => "",
    }
}

/// The steps whose save's start and duration are known, as windows of Lustre writes.
pub fn save_windows(steps: &[StepRow]) -> Vec<crate::lustre_usage::SaveWindow> {
    steps.iter().filter_map(|s| Some(crate::lustre_usage::SaveWindow { step: s.step, at: s.saved_at?, seconds: s.checkpoint_s? })).collect()
}

/// `part` of `whole` as a percentage with one decimal, `12.5 %`: never `-0.0 %` (an empty
/// part, or one a rounding left a hair below zero).
///
/// ```
/// assert_eq!(gke_rl_in_cluster::run_report::percent(-1e-9, 10.0), "0.0 %");
/// assert_eq!(gke_rl_in_cluster::run_report::percent(1.25, 10.0), "12.5 %");
/// ```
pub fn percent(part: f64, whole: f64) -> String {
    // Rounded first, then +0.0, which turns -0.0 into 0.0.
    format!("{:.1} %", (part / whole * 1000.0).round() / 10.0 + 0.0)
}

/// `42 s`, `3 min 5 s`, `2 h 3 min`.
pub fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{:.1} s", seconds.max(0.0)),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}
