//! The records a run keeps, as the supervisor and the keeper write them (`records.py`, in the
//! run's folder on the shared file system and as [`RECORD_PREFIX`] lines in the job's log), and
//! their reader: the restarts, how the run ended, its span. What the run report and `status`
//! read of a run besides NeMo-RL's own log.

use std::fmt::Write as _;

use serde::Deserialize;

use crate::log_lines::LineBuffer;
use gke_rl::quote::bytes;

/// What starts a record line in the job's log.
pub const RECORD_PREFIX: &str = "gke-rl-record: ";

/// The largest figure a log may give: a reward, a loss, a length or a time past it is no
/// measurement, and is left out (a plot's axis cannot span ±1e308).
pub const MOST: f64 = 1e12;

/// One record of a run, as the supervisor and the keeper write them.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Record {
    /// A supervisor started.
    Started {
        /// Its submission.
        submission: String,
        /// Its host and process.
        host: String,
        /// Its process id.
        pid: u32,
        /// When, in seconds since the epoch (absent from older records).
        #[serde(default)]
        at: Option<f64>,
        /// When Ray started its job (before the runtime env was set up and the supervisor ran),
        /// in seconds since the epoch: the run's wall time starts there, read from a saved log
        /// as through the Jobs API (absent from older records).
        #[serde(default)]
        job_started_at: Option<f64>,
    },
    /// The training runs again after a failure.
    Restart(Restart),
    /// The run ended.
    Ended {
        /// SUCCEEDED, FAILED or STOPPED.
        status: String,
        /// Why, in words.
        reason: String,
        /// When, in seconds since the epoch (absent from older records).
        #[serde(default)]
        at: Option<f64>,
    },
    /// A checkpoint save began: the supervisor's time for it, as it echoed NeMo-RL's line. In
    /// the log only, for the run report's time axis ([`crate::run_log::Save::at`]).
    Checkpoint {
        /// The step saved.
        step: u64,
        /// When, in seconds since the epoch.
        at: f64,
    },
    /// A save became durable: its `step_N` appeared, which an async save renames once its
    /// writes are done. In the log only ([`crate::run_log::Save::durable_s`]).
    Durable {
        /// The step saved.
        step: u64,
        /// Seconds from the save's line to its `step_N`.
        after_s: f64,
    },
    /// Anything else (the keeper's resubmissions, records of a newer gke-rl).
    #[serde(other)]
    Other,
}

impl Record {
    /// Whether its figures are ones a supervisor writes: times finite and within
    /// [`MOST`], waits not negative.
    fn is_sane(&self) -> bool {
        let most = MOST;
        let time = |at: f64| at.abs() <= most;
        let wait = |s: f64| (0.0..=most).contains(&s);
        match self {
            Record::Started { at, job_started_at, .. } => at.is_none_or(time) && job_started_at.is_none_or(time),
            Record::Ended { at, .. } => at.is_none_or(time),
            Record::Restart(r) => {
                [r.waited_s, r.back_to_running_s, r.lost_s].into_iter().all(wait)
                    && [r.noticed_at, r.node_back_at, r.running_at].into_iter().all(time)
            }
            Record::Checkpoint { at, .. } => time(*at),
            Record::Durable { after_s, .. } => wait(*after_s),
            Record::Other => true,
        }
    }

    /// The record a log line holds, if it is one.
    pub fn of_line(line: &str) -> Option<Record> {
        serde_json::from_str(line.trim_end().strip_prefix(RECORD_PREFIX)?).ok()
    }
}

/// A restart, with what it cost.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Restart {
    /// 1 for the first.
    pub number: u32,
    /// `node-lost` or `driver-lost`.
    pub kind: String,
    /// The cause, in Ray's words.
    pub cause: String,
    /// The submission that failed.
    pub failed: String,
    /// The step it resumed from (the newest complete checkpoint), if any.
    pub resumed_from: Option<u64>,
    /// Steps finished after that checkpoint before the failure, done again; unknown when the
    /// head went away with the count.
    pub steps_redone: Option<u64>,
    /// Half-written checkpoints (and orphaned `old_step_N`) removed before it.
    #[serde(default)]
    pub removed: Vec<String>,
    /// Their bytes, and those of orphaned `old_step_N` folders removed.
    #[serde(default)]
    pub freed_bytes: u64,
    /// Checkpoints a save's swap left as `old_step_N`, put back as these `step_N`.
    #[serde(default)]
    pub restored: Vec<String>,
    /// From the failure to the nodes being back.
    pub waited_s: f64,
    /// From the nodes being back to the training running again.
    pub back_to_running_s: f64,
    /// From the failure to the training running again.
    pub lost_s: f64,
    /// When the failure was noticed, in seconds since the epoch.
    pub noticed_at: f64,
    /// When Ray counted the nodes again.
    pub node_back_at: f64,
    /// When the training ran again.
    pub running_at: f64,
}

impl Restart {
    /// The cause, worded as [`crate::recovery::Failure`] words it.
    pub fn cause(&self) -> String {
        let words = match self.kind.as_str() {
            "node-lost" => "a Ray node was lost",
            "driver-lost" => "the job's driver was lost",
            _ => "the run failed",
        };
        format!("{words} ({})", self.cause)
    }
}

/// The most records read from one log: a run restarts far fewer times.
const MAX_RECORDS: usize = 4096;

/// The records in a job's log, read as it arrives.
#[derive(Debug, Default)]
pub struct Records {
    records: Vec<Record>,
    lines: LineBuffer,
    /// Records whose figures are out of range (not finite, negative waits, past
    /// [`MOST`]): no supervisor writes them, and they are left out.
    left_out: usize,
    /// Record lines that cannot be read (a number past its type, a field missing): counted
    /// and said, never dropped in silence.
    unreadable: usize,
}

impl Records {
    /// Reads the records of a whole log.
    pub fn of(log: &str) -> Records {
        let mut records = Records::default();
        records.feed(log);
        records.finish();
        records
    }

    /// Ends the log: its unfinished last line is read too.
    pub fn finish(&mut self) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|line| self.line(line));
    }

    /// Drops the unfinished last line: the log was cut there (another submission's follows).
    pub fn drop_partial_line(&mut self) {
        self.lines.drop_partial();
    }

    /// Feeds a chunk of log text; keeps a partial last line until its end comes.
    pub fn feed(&mut self, chunk: &str) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(chunk, |line| self.line(line));
        self.lines = lines;
    }

    fn line(&mut self, line: &str) {
        // A save's time is the run log's ([`crate::run_log::RunLog`]); there are many of them.
        let Some(text) = line.trim_end().strip_prefix(RECORD_PREFIX) else { return };
        let Ok(record) = serde_json::from_str::<Record>(text) else {
            self.unreadable = self.unreadable.saturating_add(1);
            return;
        };
        if matches!(record, Record::Checkpoint { .. } | Record::Durable { .. }) {
            return;
        }
        if !record.is_sane() {
            self.left_out = self.left_out.saturating_add(1);
            return;
        }
        // A log can print lines that look like records: past the bound, only the newest end
        // is kept, so checking each against the ones before stays bounded.
        if self.records.len() >= MAX_RECORDS {
            if matches!(record, Record::Ended { .. }) {
                match self.records.last_mut() {
                    Some(last @ Record::Ended { .. }) => *last = record,
                    _ => self.records.push(record),
                }
            }
        // A supervisor started by the keeper prints the records before it again.
        } else if !self.records.contains(&record) {
            self.records.push(record);
        }
    }

    /// The restarts so far.
    pub fn restarts(&self) -> impl Iterator<Item = &Restart> {
        self.records.iter().filter_map(|r| match r {
            Record::Restart(restart) => Some(restart),
            _ => None,
        })
    }

    /// How the run ended, if it has: its status and why.
    pub fn ended(&self) -> Option<(&str, &str)> {
        self.records.iter().rev().find_map(|r| match r {
            Record::Ended { status, reason, .. } => Some((status.as_str(), reason.as_str())),
            _ => None,
        })
    }

    /// From Ray's start of the first submission (else its supervisor's) to the run's end, in
    /// seconds since the epoch, where the records say (the end is `None` while the run goes on).
    pub fn span(&self) -> Option<(f64, Option<f64>)> {
        let start = self.records.iter().find_map(|r| match r {
            Record::Started { at, job_started_at, .. } => job_started_at.or(*at),
            _ => None,
        })?;
        // An end counts only after the newest start: a keeper's resubmission runs on after one.
        let newest_start = self.records.iter().rposition(|r| matches!(r, Record::Started { .. }));
        let end = self.records.iter().enumerate().rev().find_map(|(i, r)| match r {
            Record::Ended { at, .. } if newest_start.is_none_or(|s| i > s) => *at,
            _ => None,
        });
        Some((start, end))
    }

    /// Records left out for figures no supervisor writes.
    pub fn left_out(&self) -> usize {
        self.left_out
    }

    /// Record lines that could not be read.
    pub fn unreadable(&self) -> usize {
        self.unreadable
    }

    /// Whether a supervisor ran (the job was supervised).
    pub fn supervised(&self) -> bool {
        !self.records.is_empty() || self.unreadable > 0
    }

    /// The report for people: every restart, its cause, what it redid and what it cost.
    pub fn restarts_summary(&self) -> String {
        let restarts: Vec<&Restart> = self.restarts().collect();
        let unread = match self.unreadable {
            0 => String::new(),
            n => format!(
                "warning: {n} of the run's records cannot be read (a field past its type, or missing): the restarts below may be fewer than the run's\n"
            ),
        };
        if restarts.is_empty() {
            return unread;
        }
        let steps: u64 = restarts.iter().filter_map(|r| r.steps_redone).sum();
        let lost = total_s(restarts.iter().map(|r| r.lost_s));
        let mut out = format!("{unread}restarts: {} ({steps} steps redone, {} of wall time lost)\n", restarts.len(), seconds(lost));
        for r in restarts {
            let resumed = r.resumed_from.map_or_else(|| "from the start".to_owned(), |s| format!("from step {s}"));
            let redone = r.steps_redone.map_or_else(|| "an unknown number of".to_owned(), |n| n.to_string());
            let _ = writeln!(
                out,
                "  {} {}: {}\n    resumed {resumed}: {redone} steps redone; {} waiting for the nodes, running again {} after they were back",
                r.number,
                r.failed,
                r.cause(),
                seconds(r.waited_s),
                seconds(r.back_to_running_s),
            );
            if !r.restored.is_empty() {
                let _ = writeln!(out, "    put back {} from old_step_N: a save was stopped between its renames", r.restored.join(", "));
            }
            if !r.removed.is_empty() {
                let _ = writeln!(
                    out,
                    "    removed the half-written checkpoints {} ({} freed)",
                    r.removed.join(", "),
                    bytes(r.freed_bytes as f64)
                );
            }
        }
        out
    }
}

fn seconds(s: f64) -> String {
    let s = s.max(0.0);
    if s < 60.0 { format!("{s:.1}s") } else { format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64) }
}

/// The sum of `values`, 0 when there are none: std's empty `f64` sum is -0.0, which a report
/// would print as such.
pub fn total_s(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |sum, value| sum + value)
}

/// The signature `records.py` gives a record of kind `kind` (its file's name, or what else it
/// is) of the run `run` whose fields but `mac` are `text` (compact JSON with sorted keys): an
/// HMAC-SHA256 with the cluster's run key, in hex.
pub fn mac(key: &[u8], run: &str, kind: &str, text: &str) -> String {
    use hmac::{KeyInit as _, Mac as _};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(format!("{run}\n{kind}\n{text}").as_bytes());
    mac.finalize().into_bytes().iter().fold(String::with_capacity(64), |mut hex, byte| {
        let _ = write!(hex, "{byte:02x}");
        hex
    })
}

/// `kept` signed with the cluster's run key.
pub fn sign_kept(mut kept: gke_rl::lifecycle::Kept, key: &[u8]) -> gke_rl::lifecycle::Kept {
    kept.mac = mac(key, &kept.run, gke_rl::lifecycle::Kept::SIGNED_AS, &kept.signed_text());
    kept
}

/// Whether `kept` carries the signature of the cluster's run key (compared in constant time).
pub fn is_genuine(kept: &gke_rl::lifecycle::Kept, key: &[u8]) -> bool {
    use hmac::{KeyInit as _, Mac as _};
    let Some(expected) = decode_hex(&kept.mac) else { return false };
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(format!("{}\n{}\n{}", kept.run, gke_rl::lifecycle::Kept::SIGNED_AS, kept.signed_text()).as_bytes());
    mac.verify_slice(&expected).is_ok()
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_seconds_sum_to_zero_not_minus_zero() {
        assert_eq!(total_s(std::iter::empty()).to_string(), "0");
        assert_eq!(total_s([1.5, 2.0].into_iter()), 3.5);
    }

    #[test]
    fn records_are_read_from_a_log_once_each() {
        let restart = r#"{"event": "restart", "number": 1, "kind": "node-lost", "cause": "The actor died because its node has died.", "failed": "s", "failed_at": 1.0, "noticed_at": 1.5, "node_back_at": 9.0, "resumed_from": 4, "steps_redone": 1, "removed": ["tmp_step_6"], "freed_bytes": 1048576, "running_at": 10.0, "waited_s": 8.0, "back_to_running_s": 1.0, "lost_s": 9.0, "at": 10.0}"#;
        let log = format!(
            "hello\n{RECORD_PREFIX}{restart}\n{RECORD_PREFIX}{restart}\n{RECORD_PREFIX}{{\"event\": \"pending\"}}\n{RECORD_PREFIX}{{\"event\": \"ended\", \"status\": \"SUCCEEDED\", \"reason\": \"the training succeeded\", \"at\": 3}}\n"
        );
        let records = Records::of(&log);
        assert_eq!(records.restarts().count(), 1);
        assert_eq!(records.ended(), Some(("SUCCEEDED", "the training succeeded")));
        let report = records.restarts_summary();
        assert!(report.starts_with("restarts: 1 (1 steps redone, 9.0s of wall time lost)"), "{report}");
        assert!(
            report.contains("resumed from step 4: 1 steps redone; 8.0s waiting for the nodes, running again 1.0s after they were back")
        );
        assert!(report.contains("removed the half-written checkpoints tmp_step_6 (1.0 MiB freed)"), "{report}");
    }
}
