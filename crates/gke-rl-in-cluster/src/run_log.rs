//! A NeMo-RL GRPO run read from its log as the log arrives: each step's figures and each
//! checkpoint save. Pure, streaming, and bounded in memory whatever the log holds.
//!
//! The format is the GRPO loop's own prints, the same lines in every release gke-rl knows
//! (NVIDIA-NeMo/RL `nemo_rl/algorithms/grpo.py` at v0.4.0, v0.5.0, v0.6.0 and v0.7.0, in
//! `grpo_train` and `async_grpo_train`; copied verbatim under `tests/fixtures/upstream`):
//! - `========================= Step N/M =========================` opens step N of M;
//! - `📊 Training Results:`, then `  • Loss: X`, `  • Avg Reward: X` (`Avg Filtered Reward`
//!   with dynamic sampling) and `  • Mean Generation Length: X` (the synchronous loop only);
//! - `⏱️  Timing:`, then `  • Total step time: X.XXs`, then each timer, longest first:
//!   `  • NAME: X.XXs (P.P%)`;
//! - `Saving checkpoint for step N...` in a step that saves (N counts across epochs), timed by
//!   that step's `checkpointing` timer, the pause. A synchronous save is durable when it ends;
//!   an async one (NeMo-RL main, #2828) later, when the supervisor's `durable` record says its
//!   `step_N` appeared. A `Saved checkpoint to PATH` line,
//!   where one is printed, gives the path, and the save's duration as the log arrived when the
//!   timer never comes.
//!
//! A marker is found anywhere in its line (Ray prefixes worker output), and a bullet's key must
//! match whole (`Draft Loss` is not `Loss`); other lines are ignored. A figure that is cut off,
//! unparsable, not finite or past ±[`MOST`] is absent, never a wrong number: a step cut short by a preemption
//! has no step time, and a figure is read once a step, so a lost header never lets the next
//! step's figures overwrite it. The supervisor's restart records number the attempts.
//!
//! ```
//! let mut log = gke_rl_in_cluster::run_log::RunLog::default();
//! log.feed("========================= Step 2/20 =========================\n", Some(0.0));
//! log.feed("Saving checkpoint for step 2...\n", Some(50.0));
//! log.feed("📊 Training Results:\n  • Loss: 0.0123\n  • Draft Loss: 0.5\n  • Avg Reward: 0.4375\n", Some(92.0));
//! log.feed("⏱️  Timing:\n  • Total step time: 92.10s\n  • checkpointing: 41.20s (44.7%)\n", Some(92.0));
//! let step = &log.steps()[0];
//! assert_eq!((step.step, step.of, step.loss, step.reward, step.step_time_s), (2, 20, Some(0.0123), Some(0.4375), Some(92.1)));
//! assert_eq!(step.checkpoint_s(&log), Some(41.2));
//! assert_eq!(log.saves()[0].seconds, Some(41.2));
//! ```

use std::fmt::Write as _;

use crate::log_lines::LineBuffer;
use crate::records::MOST;
use gke_rl::knowledge::SAVING;

/// How NeMo-RL's header of a step begins (`========================= Step 2/20 ===…`), after a
/// blank line: where one step's output ends and the next one's begins.
pub const STEP_HEADER: &str = "========================= Step ";

/// The timer NeMo-RL puts a checkpoint save under.
pub const CHECKPOINT_TIMER: &str = "checkpointing";

/// The most steps read from one log (restarts repeat steps); a log with more keeps the first.
pub const MAX_STEPS: usize = 50_000;
/// The most saves read from one log: a run of thousands of steps saves far fewer times.
pub const MAX_SAVES: usize = 10_000;
/// The most distinct timer names: NeMo-RL has about twenty.
const MAX_TIMERS: usize = 40;
/// The longest timer name kept.
const MAX_TIMER_NAME: usize = 80;
/// The longest checkpoint path kept (Linux's PATH_MAX).
const MAX_PATH: usize = 4096;

/// One step as its block reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The step, counted from 1 as NeMo-RL prints it (from 1 again in each epoch).
    pub step: u64,
    /// The steps the run (or, with several epochs, the epoch) will take.
    pub of: u64,
    /// How many restarts the supervisor had recorded when the step began: a step run again in
    /// a later attempt was lost.
    pub attempt: u32,
    /// Its place in the whole run, counted from 1 across epochs (NeMo-RL's checkpoint step);
    /// after a restart, from the checkpoint it resumed from.
    pub position: u64,
    /// `Loss`.
    pub loss: Option<f64>,
    /// `Avg Reward` (`Avg Filtered Reward` with dynamic sampling).
    pub reward: Option<f64>,
    /// `Mean Generation Length`, in tokens.
    pub generation_length: Option<f64>,
    /// `Total step time`: present once the step finished.
    pub step_time_s: Option<f64>,
    /// Each timer's seconds, as indexes into [`RunLog::timer_names`].
    timers: Vec<(u8, f64)>,
    /// The save begun inside its block, as an index into [`RunLog::saves`].
    save: Option<usize>,
}

impl Step {
    /// Its timers: name and seconds, longest first as NeMo-RL prints them.
    pub fn timers<'a>(&'a self, log: &'a RunLog) -> impl Iterator<Item = (&'a str, f64)> + 'a {
        self.timers.iter().map(|&(name, seconds)| (log.timer_names[usize::from(name)].as_str(), seconds))
    }

    /// Whether nothing of it has been read yet.
    fn is_empty(&self) -> bool {
        self.loss.is_none()
            && self.reward.is_none()
            && self.generation_length.is_none()
            && self.step_time_s.is_none()
            && self.timers.is_empty()
    }

    /// The checkpoint save begun inside its block, if any.
    pub fn save<'a>(&self, log: &'a RunLog) -> Option<&'a Save> {
        log.saves.get(self.save?)
    }

    /// The seconds it spent saving a checkpoint, if it saved one.
    pub fn checkpoint_s(&self, log: &RunLog) -> Option<f64> {
        self.timers(log).find_map(|(name, seconds)| (name == CHECKPOINT_TIMER).then_some(seconds))
    }
}

/// One checkpoint save.
#[derive(Debug, Clone, PartialEq)]
pub struct Save {
    /// The GRPO step it saved (counted across epochs).
    pub step: u64,
    /// How long it took; `None` while it is still being written, or when nothing timed it.
    pub seconds: Option<f64>,
    /// Whether `seconds` is NeMo-RL's own timing (else the log's arrival times).
    pub timed_by_nemo_rl: bool,
    /// Where it was written, from a `Saved checkpoint to` line.
    pub path: Option<String>,
    /// When it began, in seconds since the epoch, from the supervisor's record of it.
    pub at: Option<f64>,
    /// Seconds from its line until its `step_N` appeared, as the supervisor timed it: the time
    /// until it is durable, later than `seconds` for an async save.
    pub durable_s: Option<f64>,
    /// When its line arrived, when the log was fed with a clock.
    started_at: Option<f64>,
}

/// Where in a step's block the log is.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Section {
    #[default]
    Other,
    /// Inside `⏱️  Timing:`, where bullets are timers.
    Timing,
}

/// A run's log, read as it arrives; keeps a partial last line until its end comes.
#[derive(Debug, Default)]
pub struct RunLog {
    steps: Vec<Step>,
    saves: Vec<Save>,
    timer_names: Vec<String>,
    lines: LineBuffer,
    section: Section,
    /// The newest step's timing table was read: another one is another step's.
    timed: bool,
    /// Restarts recorded so far.
    attempt: u32,
    /// The position the next step will have.
    next_position: u64,
    /// [`MAX_STEPS`] steps were read, and another began: its lines are not read.
    steps_full: bool,
    /// [`MAX_SAVES`] saves were read, and another began.
    saves_full: bool,
    /// Steps whose total time was read.
    finished: usize,
    /// Saves NeMo-RL's timer timed.
    timed_saves: usize,
    /// Figures past ±[`MOST`] (or not finite) that were left out.
    left_out: usize,
    /// Steps begun past [`MAX_STEPS`], whose figures were not read.
    unkept_steps: u64,
    /// The newest of them: its number and the steps it counts to.
    unkept_header: Option<(u64, u64)>,
    /// The newest of them that finished.
    newest_unkept: Option<(u64, u64)>,
}

impl RunLog {
    /// Reads a whole log, with no arrival times. An unfinished last line is not read: a log
    /// cut mid-line (a preemption) would give a number cut short.
    pub fn of(log: &str) -> RunLog {
        let mut run = RunLog::default();
        run.feed(log, None);
        run
    }

    /// Drops the unfinished last line: the log was cut there (another submission's follows).
    pub fn drop_partial_line(&mut self) {
        self.lines.drop_partial();
    }

    /// Feeds a chunk of log text that arrived at `now` (seconds on any monotonic clock), if
    /// known: without it, a save nothing timed has no duration.
    pub fn feed(&mut self, chunk: &str, now: Option<f64>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(chunk, |line| self.line(line.trim_end(), now));
        self.lines = lines;
    }

    fn line(&mut self, line: &str, now: Option<f64>) {
        if let Some((step, of)) = header(line) {
            self.section = Section::Other;
            self.timed = false;
            // Dynamic sampling prints a step's header again for each batch it adds: the same
            // step while nothing of it has been read.
            let attempt = self.attempt;
            if self.steps.last().is_some_and(|last| (last.step, last.of, last.attempt) == (step, of, attempt) && last.is_empty()) {
                return;
            }
            self.steps_full = self.steps.len() == MAX_STEPS;
            if self.steps_full {
                self.unkept_steps = self.unkept_steps.saturating_add(1);
                self.unkept_header = Some((step, of));
            } else {
                let position = self.next_position.max(1);
                self.next_position = position.saturating_add(1);
                let step = Step {
                    step,
                    of,
                    attempt,
                    position,
                    loss: None,
                    reward: None,
                    generation_length: None,
                    step_time_s: None,
                    timers: Vec::new(),
                    save: None,
                };
                self.steps.push(step);
            }
            return;
        }
        if line.ends_with("⏱️  Timing:") {
            self.section = if self.timed { Section::Other } else { Section::Timing };
            self.timed = true;
            return;
        }
        let Some(bullet) = after(line, "• ") else {
            self.section = Section::Other;
            self.other_line(line, now);
            return;
        };
        if self.steps_full {
            // Past the bound, a step still moves the progress: its end is counted.
            if self.section == Section::Timing && bullet.starts_with("Total step time: ") {
                self.newest_unkept = self.unkept_header;
                self.finished += 1;
            }
            return;
        }
        if let Some((_, value)) = bullet.split_once(": ") {
            let figure = value.split_once(" (").map_or(value, |(v, _)| v).trim().trim_end_matches('s');
            if figure.parse::<f64>().is_ok_and(|n| n.is_nan() || n.abs() > MOST) {
                self.left_out = self.left_out.saturating_add(1);
            }
        }
        let Some(step) = self.steps.last_mut() else { return };
        // A figure is set once: a second one in a block (a header lost to an interleaved line
        // or a line too long) belongs to another step, and is not read.
        if let Some(seconds) = bullet.strip_prefix("Total step time: ").filter(|_| self.section == Section::Timing) {
            self.finished += usize::from(set_once(&mut step.step_time_s, seconds_of(seconds)));
        } else if self.section == Section::Timing {
            let Some((name, rest)) = bullet.split_once(": ") else { return };
            let (Some(seconds), Some(index)) = (seconds_of(rest), intern(&mut self.timer_names, name)) else { return };
            if step.timers.iter().any(|&(n, _)| n == index) {
                return;
            }
            step.timers.push((index, seconds));
            if name == CHECKPOINT_TIMER
                && let Some(save) = step.save.and_then(|i| self.saves.get_mut(i))
            {
                save.seconds = Some(seconds);
                save.timed_by_nemo_rl = true;
                self.timed_saves += 1;
            }
        } else if let Some(value) = bullet.strip_prefix("Loss: ") {
            set_once(&mut step.loss, number(value));
        } else if let Some(value) = bullet.strip_prefix("Avg Reward: ").or_else(|| bullet.strip_prefix("Avg Filtered Reward: ")) {
            set_once(&mut step.reward, number(value));
        } else if let Some(value) = bullet.strip_prefix("Mean Generation Length: ") {
            set_once(&mut step.generation_length, number(value));
        }
    }

    /// Saves, and the supervisor's restart records.
    fn other_line(&mut self, line: &str, now: Option<f64>) {
        if let Some(rest) = after(line, SAVING) {
            let Some(step) = rest.strip_suffix("...").and_then(|n| n.trim().parse().ok()) else { return };
            self.saves_full = self.saves.len() == MAX_SAVES;
            if !self.saves_full {
                self.saves.push(Save {
                    step,
                    seconds: None,
                    timed_by_nemo_rl: false,
                    path: None,
                    at: None,
                    durable_s: None,
                    started_at: now,
                });
                // Its step's `checkpointing` timer times it: the newest step, if still running
                // (a step that has finished is not this save's, whose header was lost).
                if let Some(newest) = self.steps.last_mut().filter(|s| s.save.is_none() && s.step_time_s.is_none() && !self.steps_full) {
                    newest.save = Some(self.saves.len() - 1);
                }
            }
        } else if let Some(path) = after(line, "Saved checkpoint to ").filter(|_| !self.saves_full)
            && let Some(save) = self.saves.last_mut().filter(|s| s.path.is_none())
        {
            let path = path.trim();
            save.path = Some(path[..path.floor_char_boundary(MAX_PATH)].to_owned());
            if save.seconds.is_none() {
                save.seconds = now.zip(save.started_at).map(|(now, started)| now - started);
            }
        } else if let Some(record) = crate::records::Record::of_line(line) {
            match record {
                crate::records::Record::Restart(restart) => {
                    self.attempt = self.attempt.saturating_add(1);
                    self.next_position = restart.resumed_from.unwrap_or(0).saturating_add(1);
                }
                // The supervisor stamps a save as it echoes its line: the newest save, once.
                crate::records::Record::Checkpoint { step, at } if at.abs() <= MOST => {
                    if let Some(save) = self.saves.last_mut().filter(|s| s.step == step && s.at.is_none() && !self.saves_full) {
                        save.at = Some(at);
                    }
                }
                // An async save is durable later, maybe after the next save began: the newest of
                // its step, once.
                crate::records::Record::Durable { step, after_s } if (0.0..=MOST).contains(&after_s) => {
                    if let Some(save) = self.saves.iter_mut().rev().take(2).find(|s| s.step == step && s.durable_s.is_none()) {
                        save.durable_s = Some(after_s);
                    }
                }
                _ => {}
            }
        }
    }

    /// The steps seen so far, in the order the log reported them: after a restart, steps
    /// redone appear again.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The saves seen so far, in order.
    pub fn saves(&self) -> &[Save] {
        &self.saves
    }

    /// What the log held that these figures do not: figures out of range left out, steps
    /// past [`MAX_STEPS`] not read, and the newest of those that finished (step, of).
    pub fn left_out(&self) -> (usize, u64, Option<(u64, u64)>) {
        (self.left_out, self.unkept_steps, self.newest_unkept)
    }

    /// The timer names seen, which [`Step::timers`] indexes.
    pub fn timer_names(&self) -> &[String] {
        &self.timer_names
    }

    /// What moves a run's progress: the steps finished and the saves timed so far. Equal
    /// marks mean the progress is the same.
    pub fn progress_mark(&self) -> (usize, usize) {
        (self.finished, self.timed_saves)
    }

    /// Seconds spent saving, over the saves that finished.
    fn checkpoint_seconds(&self) -> f64 {
        self.saves.iter().filter_map(|s| s.seconds).sum()
    }

    /// The checkpoint report for people; empty when the log had no checkpoint saves.
    pub fn checkpoint_report(&self) -> String {
        if self.saves.is_empty() {
            return String::new();
        }
        let mut out = format!("checkpoints: {} saves, {:.1} s in total\n", self.saves.len(), self.checkpoint_seconds());
        for save in &self.saves {
            let duration = match save.seconds {
                Some(s) if save.timed_by_nemo_rl => format!("{s:>8.1} s"),
                Some(s) => format!("{s:>8.1} s (observed)"),
                None => "    unfinished".to_owned(),
            };
            let _ = writeln!(out, "  step {:>5}  {duration}  {}", save.step, save.path.as_deref().unwrap_or(""));
        }
        out
    }
}

/// `N/M` of a step header: `=` * 25, ` Step N/M `, `=` * 25.
fn header(line: &str) -> Option<(u64, u64)> {
    let rest = after(line, STEP_HEADER)?;
    let (numbers, tail) = rest.split_once(' ')?;
    if tail.trim_end() != "=========================" {
        return None;
    }
    let (step, of) = numbers.split_once('/')?;
    Some((step.parse().ok()?, of.parse().ok()?))
}

/// A number printed with `:.Nf`, within ±[`MOST`].
fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|n| n.abs() <= MOST)
}

/// `X.XXs`, with or without the ` (P.P%)` after it: seconds, never negative.
fn seconds_of(text: &str) -> Option<f64> {
    let seconds = text.split_once(" (").map_or(text, |(s, _)| s).trim();
    number(seconds.strip_suffix('s')?).filter(|s| *s >= 0.0)
}

/// Sets an empty `slot` to `value` when it is a number: whether it did.
fn set_once(slot: &mut Option<f64>, value: Option<f64>) -> bool {
    if slot.is_some() || value.is_none() {
        return false;
    }
    *slot = value;
    true
}

/// The index of `name` among `names`, added when new and there is room.
fn intern(names: &mut Vec<String>, name: &str) -> Option<u8> {
    let name = &name[..name.floor_char_boundary(MAX_TIMER_NAME)];
    let index = match names.iter().position(|n| n == name) {
        Some(index) => index,
        None if names.len() < MAX_TIMERS => {
            names.push(name.to_owned());
            names.len() - 1
        }
        None => return None,
    };
    u8::try_from(index).ok()
}

/// The text after `marker`, wherever it is in the line (Ray prefixes worker output).
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

#[cfg(test)]
mod tests {
    use super::RunLog;

    #[test]
    fn lines_split_across_chunks_and_observed_durations() {
        let mut log = RunLog::default();
        log.feed("(pid=1) Saving checkpoint for st", Some(1.0));
        log.feed("ep 4...\n", Some(1.0));
        log.feed("Saved checkpoint to /lustre/x/step_4\n", Some(4.5));
        log.feed("Saving checkpoint for step 6...\n", Some(10.0));
        log.feed("Saved checkpoint to /lustre/x/step_6\n", None);
        assert_eq!(log.saves()[0].seconds, Some(3.5));
        assert!(!log.saves()[0].timed_by_nemo_rl);
        assert_eq!(log.saves()[1].seconds, None, "no clock, no duration");
        let report = log.checkpoint_report();
        assert!(report.starts_with("checkpoints: 2 saves, 3.5 s in total\n"), "{report}");
        assert!(report.contains("step     4       3.5 s (observed)  /lustre/x/step_4"), "{report}");
        assert!(report.contains("step     6      unfinished"), "{report}");
    }

    #[test]
    fn no_saves_no_report() {
        let mut log = RunLog::default();
        log.feed("step 1 done\n  • generation: 3.0s (50%)\n", None);
        assert_eq!(log.checkpoint_report(), "");
        assert!(log.steps().is_empty(), "a bullet outside a step is no step");
    }

    #[test]
    fn a_cut_block_and_bad_numbers_are_absent_not_wrong() {
        let log = RunLog::of(concat!(
            "========================= Step 1/3 =========================\n",
            "  • Loss: nan\n  • Avg Reward: 0.5\n",
            "⏱️  Timing:\n  • Total step time: 10.00s\n  • generation: 6.00s (60.0%)\n  • policy_training: -1.00s (0.0%)\n",
            "▶ Starting validation at step 1...\n  • Total validation time: 3.00s\n  • generation: 99.00s (1.0%)\n",
            "========================= Step 2/3 =========================\n",
            "  • Avg Reward: 0.6\n⏱️  Timing:\n  • Total step ti",
        ));
        let [one, two] = log.steps() else { panic!("{:?}", log.steps()) };
        assert_eq!((one.loss, one.reward, one.step_time_s), (None, Some(0.5), Some(10.0)));
        assert_eq!(one.timers(&log).collect::<Vec<_>>(), [("generation", 6.0)], "validation's bullets are not the step's timers");
        assert_eq!((two.reward, two.step_time_s), (Some(0.6), None), "cut short: no step time");
        assert_eq!(log.progress_mark(), (1, 0), "one step finished, no save");
    }

    #[test]
    fn timer_names_and_steps_are_bounded() {
        let mut log = RunLog::default();
        log.feed("========================= Step 1/1 =========================\n⏱️  Timing:\n", None);
        for n in 0..1000 {
            log.feed(&format!("  • timer_{n}: 1.00s (1.0%)\n"), None);
        }
        assert_eq!(log.timer_names().len(), super::MAX_TIMERS);
        assert_eq!(log.steps()[0].timers(&log).count(), super::MAX_TIMERS);
    }
}
