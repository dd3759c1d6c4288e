//! Following a job's log to the end, across dropped connections.

use std::time::Duration;

use crate::Error;
use crate::client::{Client, JobDetails, TailEnd};

/// How long to keep reconnecting before giving up, the pause between attempts, and how long a
/// silent stream is trusted.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// Give up after failing to reconnect for this long.
    pub retry_for: Duration,
    /// The pause between reconnection attempts.
    pub retry_every: Duration,
    /// After this long without log text, the job's state is asked: a terminal job ends the
    /// follow, whatever its stream does.
    pub idle: Duration,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions { retry_for: Duration::from_secs(60), retry_every: Duration::from_secs(1), idle: Duration::from_secs(15) }
    }
}

/// What the follower reports besides log text.
pub enum Event<'a> {
    /// Log text, in order, each byte once.
    Log(&'a str),
    /// The stream dropped; a reconnect follows.
    Reconnecting(&'a str),
    /// The job ended but the end of its log could not be read, and why.
    Unread(&'a str),
}

/// Streams the log of job `id` into `on_event` until the job is terminal and returns its
/// final details. The server replays a log from its start on every connection, so after a
/// reconnect the bytes already delivered are skipped: nothing repeats and nothing is lost.
/// A dashboard out of reach, or a job it does not know, is an error at once: only a stream
/// that worked is reconnected. A stream that goes silent never holds the follow past the job:
/// after `idle` the job's state is asked, and a terminal job's log is read whole for the rest
/// (best effort: a rest that cannot be read is said, and the job's end still returned).
pub async fn follow(client: &Client, id: &str, options: &FollowOptions, mut on_event: impl FnMut(Event<'_>)) -> Result<JobDetails, Error> {
    client.job(id).await?;
    let mut delivered = 0usize;
    let mut failing_since: Option<tokio::time::Instant> = None;
    loop {
        let reason = match client.tail(id).await {
            Ok(mut tail) => {
                let mut offset = 0usize;
                loop {
                    match tail.next(options.idle).await {
                        Ok(chunk) => {
                            failing_since = None;
                            let end = offset + chunk.len();
                            if end > delivered {
                                let fresh = chunk.get(delivered.saturating_sub(offset)..).unwrap_or(&chunk);
                                on_event(Event::Log(fresh));
                                delivered = end;
                            }
                            offset = end;
                        }
                        Err(TailEnd::Finished) => {
                            let job = client.job(id).await?;
                            if job.status.is_terminal() {
                                if delivered == 0 {
                                    // The job ended before its supervisor started: the stream was empty.
                                    deliver_rest(client, id, delivered, &mut on_event).await;
                                }
                                return Ok(job);
                            }
                            break "the log stream ended before the job did".to_owned();
                        }
                        // A quiet job, or a stream that stopped delivering: the job's state decides.
                        // Anything but a known answer (a busy head's 503, a timeout) waits on.
                        Err(TailEnd::Silent) => match client.job(id).await {
                            Ok(job) if job.status.is_terminal() => {
                                deliver_rest(client, id, delivered, &mut on_event).await;
                                return Ok(job);
                            }
                            Err(e @ (Error::JobNotFound { .. } | Error::Unauthorized { .. })) => return Err(e),
                            Ok(_) | Err(_) => {}
                        },
                        Err(TailEnd::Dropped(reason)) => break reason,
                    }
                }
            }
            Err(e @ (Error::Unreachable { .. } | Error::Timeout { .. })) => {
                let since = *failing_since.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() >= options.retry_for {
                    return Err(e);
                }
                e.to_string()
            }
            Err(e) => return Err(e),
        };
        on_event(Event::Reconnecting(&reason));
        tokio::time::sleep(options.retry_every).await;
    }
}

/// The part of the job's whole log past the `delivered` bytes the stream gave: the end of a
/// log whose stream stopped delivering. Best effort: when the log cannot be read (too large,
/// too slow), that is said, and the follow still ends with the job.
async fn deliver_rest(client: &Client, id: &str, delivered: usize, on_event: &mut impl FnMut(Event<'_>)) {
    match client.logs(id).await {
        Ok(logs) => {
            let rest = rest_of(&logs, delivered);
            if !rest.is_empty() {
                on_event(Event::Log(rest));
            }
        }
        Err(e) => on_event(Event::Unread(&e.to_string())),
    }
}

/// From this many bytes on, a terminal job's quiet stream is confirmed by a replay; a shorter
/// log is read whole instead.
const CONFIRM_BY_REPLAY_FROM: usize = 1 << 20;

/// The part of a whole log past the `delivered` bytes a stream gave. Lossy UTF-8 on the
/// stream can shift byte counts; a cut inside a character skips it.
fn rest_of(logs: &str, delivered: usize) -> &str {
    (delivered..=delivered + 3).find_map(|at| logs.get(at..)).unwrap_or_default()
}

/// How much of a log [`read_log`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogRead {
    /// All of it: the job is terminal and its stream ended.
    Whole,
    /// All the job had written when its stream went quiet: a running job's log so far.
    SoFar,
    /// Nothing: neither the stream nor `GET /logs` gave a byte. Never taken for a whole log,
    /// which a job gke-rl runs always has.
    Empty,
}

/// Reads job `id`'s log from its start, a chunk at a time, into `on_chunk`, holding no more than
/// a chunk: a log of any size is read in bounded memory (`GET /logs` answers it whole, and caps
/// it). It ends when the stream does, or, for a running job, when the stream goes quiet for
/// `quiet` or has run for `within` (the log so far); a terminal job's quiet stream ends it once
/// a replay confirms nothing was missed (a log under a MiB, or one no replay confirms, has its
/// rest read from the whole log). A stream that gives nothing is no answer: the whole log is
/// read then, and an empty one is [`LogRead::Empty`]. A dropped stream is opened again (the server replays
/// from the start; what was read is skipped), a few times; where none opens, the whole log is
/// read instead, within its cap. A terminal job's log still streaming at `within` is an error,
/// never a cut report.
pub async fn read_log(
    client: &Client,
    id: &str,
    quiet: Duration,
    within: Duration,
    mut on_chunk: impl FnMut(&str),
) -> Result<LogRead, Error> {
    const ATTEMPTS: usize = 3;
    let deadline = tokio::time::Instant::now() + within;
    // A terminal job's stream may stay open once it has sent everything (Ray 2.54 keeps it),
    // or stop delivering mid-log (a half-open port-forward): the two look alike. So a quiet
    // stream of a terminal job is opened again, and the log is whole only when the replay
    // reaches what was read and adds nothing; one still streaming at `within` is an error.
    let terminal = client.job(id).await?.status.is_terminal();
    let mut delivered = 0usize;
    let mut last_reason = String::new();
    'attempts: for attempt in 0..ATTEMPTS {
        let Ok(mut tail) = client.tail(id).await else { break };
        let (mut offset, before) = (0usize, delivered);
        loop {
            if tokio::time::Instant::now() >= deadline {
                if terminal {
                    let reason = format!("it was still streaming after {} s: the log was read only in part", within.as_secs());
                    return Err(Error::Protocol { what: format!("the log stream of {id}"), reason });
                }
                return Ok(LogRead::SoFar);
            }
            match tail.next(quiet).await {
                Ok(chunk) => {
                    let end = offset + chunk.len();
                    if end > delivered {
                        // A replay may cut its chunks elsewhere: resume at the first whole
                        // character past what was delivered.
                        let mut from = delivered.saturating_sub(offset);
                        while !chunk.is_char_boundary(from) {
                            from += 1;
                        }
                        on_chunk(&chunk[from..]);
                        delivered = end;
                    }
                    offset = end;
                }
                // A stream that gave nothing proves nothing (Ray 2.54 sends a log of a few lines
                // only after about 2 s): `GET /logs` answers below.
                Err(TailEnd::Finished | TailEnd::Silent) if delivered == 0 => break 'attempts,
                Err(TailEnd::Finished) => return Ok(LogRead::Whole),
                Err(TailEnd::Silent) if !terminal => return Ok(LogRead::SoFar),
                // A short log's end is read whole, not trusted to a replay: Ray 2.54 sends its
                // last lines late, so a replay may stall where the first stream did.
                Err(TailEnd::Silent) if delivered < CONFIRM_BY_REPLAY_FROM => {
                    last_reason = format!("it went quiet for {} s", quiet.as_secs());
                    break 'attempts;
                }
                Err(TailEnd::Silent) if attempt > 0 && offset >= before && delivered == before => return Ok(LogRead::Whole),
                Err(TailEnd::Silent) => {
                    last_reason = format!("it went quiet for {} s, and a replay did not confirm its end", quiet.as_secs());
                    break;
                }
                Err(TailEnd::Dropped(reason)) => {
                    last_reason = reason;
                    break;
                }
            }
        }
    }
    // The whole log, within its cap: what the stream did not confirm (Ray 2.54 replays a short
    // log only after about 2 s) is read there, past what was delivered.
    let whole = match client.logs(id).await {
        Ok(whole) => whole,
        Err(e) if delivered > 0 => {
            return Err(Error::Protocol {
                what: format!("the log stream of {id}"),
                reason: format!("{last_reason}, and the whole log: {e}"),
            });
        }
        Err(e) => return Err(e),
    };
    if whole.is_empty() && delivered == 0 {
        return Ok(LogRead::Empty);
    }
    if whole.len() < delivered {
        let reason = format!("{last_reason}, and the whole log is shorter than what the stream gave");
        return Err(Error::Protocol { what: format!("the log stream of {id}"), reason });
    }
    let rest = rest_of(&whole, delivered);
    if !rest.is_empty() {
        on_chunk(rest);
    }
    Ok(if terminal { LogRead::Whole } else { LogRead::SoFar })
}
