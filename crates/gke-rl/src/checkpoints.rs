//! Checkpoint saves read from a NeMo-RL GRPO log, for the report printed after following a
//! job: each save's step and duration, and the total time training was paused for them.
//!
//! NeMo-RL v0.4.0 prints `Saving checkpoint for step N...`, then `Saved checkpoint to PATH`,
//! and in the step's timing table `• checkpointing: X.XXs (Y%)`. Saves are synchronous, so
//! that figure is the pause. Without the timing line, the time between the two messages as
//! the log arrived is used (about a second of resolution).
//!

//!
//! ```
//! let mut log = gke_rl::checkpoints::CheckpointLog::default();
//! log.feed("Saving checkpoint for step 2...\nSaved checkpoint to /lustre/c/step_2\n", 10.0);
//! log.feed("  • checkpointing: 41.20s (12.5%)\n", 52.0);
//! assert_eq!(log.saves()[0].step, 2);
//! assert_eq!(log.saves()[0].seconds, Some(41.2));
//! ```

use std::fmt::Write as _;

use crate::log_lines::LineBuffer;

/// What NeMo-RL prints when a step has finished: the end of its timing table.
pub const STEP_DONE: &str = "• Total step time: ";

/// The most saves read from one log: a run of thousands of steps saves far fewer times.
pub const MAX_SAVES: usize = 10_000;
/// The longest checkpoint path kept (Linux's PATH_MAX).
const MAX_PATH: usize = 4096;

/// One checkpoint save.
#[derive(Debug, Clone, PartialEq)]
pub struct Save {
    /// The GRPO step it saved.
    pub step: u64,
    /// How long it took; `None` while it is still being written.
    pub seconds: Option<f64>,
    /// Whether `seconds` is NeMo-RL's own timing (else the log's arrival times).
    pub timed_by_nemo_rl: bool,
    /// Where it was written, from the `Saved checkpoint to` line.
    pub path: Option<String>,
    started_at: f64,
}

/// Reads log text as it arrives; keeps a partial last line until its end comes.
#[derive(Debug, Default)]
pub struct CheckpointLog {
    saves: Vec<Save>,
    lines: LineBuffer,
    /// Steps finished (timing tables seen).
    steps: u64,
    /// [`MAX_SAVES`] saves were read, and another began.
    full: bool,
}

impl CheckpointLog {
    /// Feeds a chunk of log text that arrived at `now` (seconds on any monotonic clock).
    pub fn feed(&mut self, chunk: &str, now: f64) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(chunk, |line| self.line(line.trim_end(), now));
        self.lines = lines;
    }

    fn line(&mut self, line: &str, now: f64) {
        if self.full && after(line, STEP_DONE).is_none() {
            // Past the bound, a checkpoint line may belong to a save not kept: none is read.
        } else if let Some(rest) = after(line, "Saving checkpoint for step ") {
            self.full = self.saves.len() == MAX_SAVES;
            if let Ok(step) = rest.trim_end_matches('.').trim().parse()
                && !self.full
            {
                self.saves.push(Save { step, seconds: None, timed_by_nemo_rl: false, path: None, started_at: now });
            }
        } else if let Some(path) = after(line, "Saved checkpoint to ") {
            if let Some(save) = self.saves.last_mut().filter(|s| s.path.is_none()) {
                let path = path.trim();
                save.path = Some(path[..path.floor_char_boundary(MAX_PATH)].to_owned());
                if save.seconds.is_none() {
                    save.seconds = Some(now - save.started_at);
                }
            }
        } else if after(line, STEP_DONE).is_some() {
            self.steps += 1;
        } else if let Some(rest) = after(line, "• checkpointing: ") {
            let seconds = rest.split_once('s').and_then(|(n, _)| n.trim().parse::<f64>().ok());
            if let (Some(save), Some(seconds)) = (self.saves.last_mut().filter(|s| !s.timed_by_nemo_rl), seconds) {
                save.seconds = Some(seconds);
                save.timed_by_nemo_rl = true;
            }
        }
    }

    /// The saves seen so far, in order.
    pub fn saves(&self) -> &[Save] {
        &self.saves
    }

    /// Steps finished so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Seconds spent saving, over the saves that finished.
    pub fn total_seconds(&self) -> f64 {
        self.saves.iter().filter_map(|s| s.seconds).sum()
    }

    /// The report for people; empty when the log had no checkpoint saves.
    pub fn report(&self) -> String {
        if self.saves.is_empty() {
            return String::new();
        }
        let mut out = format!("checkpoints: {} saves, {:.1} s in total\n", self.saves.len(), self.total_seconds());
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

/// The text after `marker`, wherever it is in the line (Ray prefixes worker output).
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

#[cfg(test)]
mod tests {
    use super::CheckpointLog;

    #[test]
    fn finished_steps_are_counted() {
        let mut log = CheckpointLog::default();
        let step = |log: &mut CheckpointLog, n: u64, at: f64| {
            log.feed(&format!("========================= Step {n}/10 =========================\n"), at - 1.0);
            if n.is_multiple_of(2) {
                log.feed(&format!("Saving checkpoint for step {n}...\nSaved checkpoint to /lustre/c/step_{n}\n"), at - 0.5);
                log.feed("  • checkpointing: 0.25s (25.0%)\n", at);
            }
            log.feed("\n⏱️  Timing:\n  • Total step time: 1.00s\n", at);
        };
        for n in 1..=5 {
            step(&mut log, n, n as f64 * 10.0);
        }
        assert_eq!(log.steps(), 5);
        assert_eq!(log.saves().len(), 2);
    }

    #[test]
    fn lines_split_across_chunks_and_observed_durations() {
        let mut log = CheckpointLog::default();
        log.feed("(pid=1) Saving checkpoint for st", 1.0);
        log.feed("ep 4...\n", 1.0);
        log.feed("Saved checkpoint to /lustre/x/step_4\n", 4.5);
        log.feed("Saving checkpoint for step 6...\n", 10.0);
        assert_eq!(log.saves()[0].seconds, Some(3.5));
        assert!(!log.saves()[0].timed_by_nemo_rl);
        assert_eq!(log.saves()[1].seconds, None);
        let report = log.report();
        assert!(report.starts_with("checkpoints: 2 saves, 3.5 s in total\n"), "{report}");
        assert!(report.contains("step     4       3.5 s (observed)  /lustre/x/step_4"), "{report}");
        assert!(report.contains("step     6      unfinished"), "{report}");
    }

    #[test]
    fn no_saves_no_report() {
        let mut log = CheckpointLog::default();
        log.feed("step 1 done\n  • generation: 3.0s (50%)\n", 0.0);
        assert_eq!(log.report(), "");
    }
}
