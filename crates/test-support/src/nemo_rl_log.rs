//! NeMo-RL GRPO logs for tests, built from each release's own print statements: its
//! `grpo.py`, copied verbatim into `tests/fixtures/upstream/nemo-rl/<tag>/`, gives the string
//! literals of its GRPO loops' prints, rendered here with chosen figures as Python would. A
//! release that changes a print changes the logs the tests read.

use crate::upstream;

/// The NeMo-RL releases whose `grpo.py` the fixtures hold.
pub const RELEASES: [&str; 4] = ["v0.4.0", "v0.5.0", "v0.6.0", "v0.7.0"];

/// Which of the two GRPO loops' prints to use.
#[derive(Clone, Copy)]
pub enum Loop {
    /// `grpo_train`, first in the file.
    Sync,
    /// `async_grpo_train`, after it.
    Async,
}

/// The string literals of a loop's prints, as written in one release's grpo.py.
pub struct Prints {
    /// `===== Step N/M =====`.
    pub header: String,
    /// `Saving checkpoint for step N...`.
    pub saving: String,
    /// `📊 Training Results:`.
    pub results: String,
    /// `• Loss: X`.
    pub loss: String,
    /// `• Avg Reward: X`.
    pub reward: String,
    /// Lines the parser must not mistake for its own: `• Draft Loss: X` (v0.6.0 on, when
    /// drafting) and `• Generation KL Error: X` (v0.5.0 on), where the release prints them.
    pub others: Vec<String>,
    /// Printed by the synchronous loop only.
    pub generation_length: Option<String>,
    /// `⏱️  Timing:`.
    pub timing: String,
    /// `• Total step time: Xs`.
    pub total: String,
    /// `• NAME: Xs (P%)`.
    pub timer: String,
}

impl Prints {
    /// The prints of `which` loop in `release`'s grpo.py.
    pub fn of(release: &str, which: Loop) -> Prints {
        let source = std::fs::read_to_string(upstream(&format!("nemo-rl/{release}/nemo_rl/algorithms/grpo.py"))).unwrap();
        let find = |marker: &str| -> Option<String> {
            let mut found = source.lines().filter(|l| l.contains(marker)).map(literal);
            match which {
                Loop::Sync => found.next(),
                Loop::Async => found.next_back(),
            }
        };
        let get = |marker: &str| find(marker).unwrap_or_else(|| panic!("{release}: no print with {marker:?}"));
        let generation_length = find("• Mean Generation Length: ");
        Prints {
            header: get(" Step {"),
            saving: get("Saving checkpoint for step {"),
            results: get("📊 Training Results:"),
            loss: get("• Loss: {"),
            reward: get("• Avg Reward: {"),
            others: ["• Draft Loss: {", "• Generation KL Error: {"].into_iter().filter_map(&find).collect(),
            generation_length: generation_length.filter(|_| matches!(which, Loop::Sync)),
            timing: get("⏱️  Timing:"),
            total: get("• Total step time: {"),
            timer: get("• {k}: {v:.2f}s ({percent:.1f}%)"),
        }
    }
}

/// The string literal of a source line: `f"…"` or `"…"`, without its quotes (none of these
/// prints has a `"` inside).
fn literal(line: &str) -> String {
    let start = line.find('"').expect("a string literal") + 1;
    let end = start + line[start..].find('"').expect("its end");
    let prefix = line[..start - 1].trim_end();
    let text = &line[start..end];
    if prefix.ends_with('f') { format!("f{text}") } else { text.to_owned() }
}

/// A literal rendered as Python prints it: an f-string's `{expr:spec}` replaced by the figure
/// `value` gives for `expr` (formatted with `.Nf` when the spec says so), `{'=' * 25}`
/// repeated, and `\n` a newline.
fn render(literal: &str, value: &dyn Fn(&str) -> String) -> String {
    let text = literal.replace("\\n", "\n");
    let Some(text) = text.strip_prefix('f') else { return text + "\n" };
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('}').expect("a closing brace");
        let field = &rest[open + 1..close];
        let (expr, spec) = match field.rsplit_once(':') {
            Some((expr, spec)) if spec.starts_with('.') && spec.ends_with('f') => (expr, Some(spec)),
            _ => (field, None),
        };
        let figure = if expr == "'=' * 25" { "=".repeat(25) } else { value(expr) };
        match spec {
            Some(spec) => {
                let places: usize = spec[1..spec.len() - 1].parse().unwrap();
                out.push_str(&format!("{:.*}", places, figure.parse::<f64>().expect("a number for a number's spec")));
            }
            None => out.push_str(&figure),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out + "\n"
}

/// One step's figures, for building a log.
pub struct Figures {
    /// The step.
    pub step: u64,
    /// Its loss.
    pub loss: f64,
    /// Its average reward.
    pub reward: f64,
    /// Its mean generation length.
    pub generation_length: f64,
    /// Its total time.
    pub total: f64,
    /// Longest first, as NeMo-RL sorts them.
    pub timers: Vec<(&'static str, f64)>,
    /// Whether it saves a checkpoint.
    pub save: bool,
}

/// Step `step`'s figures: the reward rises 0.1 a step, and even steps save a checkpoint that
/// takes 30 + `step` seconds.
pub fn figures(step: u64) -> Figures {
    let save = step.is_multiple_of(2);
    let checkpointing = if save { 30.0 + step as f64 } else { 0.0 };
    let mut timers = vec![("generation", 40.0 + step as f64), ("policy_training", 20.0), ("checkpointing", checkpointing)];
    timers.retain(|t| t.1 > 0.0);
    let total = timers.iter().map(|t| t.1).sum::<f64>() + 5.0;
    Figures { step, loss: 0.5 / step as f64, reward: 0.1 * step as f64, generation_length: 400.0 + step as f64, total, timers, save }
}

/// A step's block as the loop prints it; `cut` stops it after `cut` lines (a preemption).
pub fn block(prints: &Prints, f: &Figures, of: u64, cut: Option<usize>) -> String {
    let number = |expr: &str| -> String {
        match expr {
            e if e.contains("draft_loss") || e.contains("gen_kl_error") => "9.9".to_owned(),
            e if e.contains("loss") => f.loss.to_string(),
            e if e.contains("rewards") => f.reward.to_string(),
            e if e.contains("mean_gen_tokens") => f.generation_length.to_string(),
            e if e.contains("total_time") => f.total.to_string(),
            e if e.ends_with("+ 1") => f.step.to_string(),
            e if e.contains("max_num_steps") => of.to_string(),
            e => panic!("no figure for {e}"),
        }
    };
    let mut lines = vec![render(&prints.header, &number)];
    if f.save {
        lines.push(render(&prints.saving, &number));
    }
    lines.push(render(&prints.results, &number));
    lines.push(render(&prints.loss, &number));
    lines.extend(prints.others.iter().map(|p| render(p, &number)));
    lines.push(render(&prints.reward, &number));
    lines.extend(prints.generation_length.as_ref().map(|p| render(p, &number)));
    lines.push(render(&prints.timing, &number));
    lines.push(render(&prints.total, &number));
    for (name, seconds) in &f.timers {
        let percent = seconds / f.total * 100.0;
        lines.push(render(&prints.timer, &|expr: &str| match expr {
            "k" => (*name).to_owned(),
            "v" => seconds.to_string(),
            "percent" => percent.to_string(),
            e => panic!("no figure for {e}"),
        }));
    }
    let text: String = lines.concat();
    match cut {
        Some(n) => text.split_inclusive('\n').take(n).collect(),
        None => text,
    }
}

/// A supervisor's record line, as `supervise.py` prints it.
pub fn record(json: &str) -> String {
    format!("{}{json}\n", gke_rl_in_cluster::records::RECORD_PREFIX)
}

/// Steps 1–4, a lost node, a restart from the checkpoint of step 2, then steps 3–6 again: 1000 s
/// of wall time by the supervisor's records, which also time each save. Each attempt's first
/// step starts 30 s after the supervisor or the restart, and a step saves after generation and
/// training, as NeMo-RL's loop does.
pub fn restarted_run() -> String {
    let prints = Prints::of("v0.7.0", Loop::Sync);
    let steps = |range: std::ops::RangeInclusive<u64>, mut at: f64| -> String {
        range
            .map(|n| {
                let f = figures(n);
                let saved_at = at + f.timers.iter().filter(|t| t.0 != "checkpointing").map(|t| t.1).sum::<f64>();
                at += f.total;
                save_time(block(&prints, &f, 6, None), n, saved_at)
            })
            .collect()
    };
    let mut log = record(r#"{"event": "started", "submission": "grpo-1", "host": "head", "pid": 7, "at": 1000.0}"#);
    log += &steps(1..=4, 1030.0);
    log += &block(&prints, &figures(5), 6, Some(3));
    log += &record(concat!(
        r#"{"event": "restart", "number": 1, "kind": "node-lost", "cause": "node 10.0.0.7 died", "failed": "grpo-1", "#,
        r#""resumed_from": 2, "steps_redone": 2, "waited_s": 100.0, "back_to_running_s": 50.0, "lost_s": 150.0, "#,
        r#""noticed_at": 1400.0, "node_back_at": 1500.0, "running_at": 1550.0}"#
    ));
    log += &steps(3..=6, 1580.0);
    log + &record(r#"{"event": "ended", "status": "SUCCEEDED", "reason": "the training succeeded", "at": 2000.0}"#)
}

/// `block`, with the supervisor's record of its save's time after the save's line, as
/// `supervise.py` prints it; a block that saves nothing is unchanged.
pub fn save_time(block: String, step: u64, at: f64) -> String {
    let Some(start) = block.find(gke_rl::knowledge::SAVING) else { return block };
    let end = start + block[start..].find('\n').expect("a whole line") + 1;
    let stamp = record(&format!(r#"{{"event": "checkpoint", "step": {step}, "at": {at:.1}}}"#));
    format!("{}{stamp}{}", &block[..end], &block[end..])
}

/// From and to, in seconds since the epoch.
pub type Span = (f64, f64);

/// What [`restarted_run`] does on its file system, by its log: it reads the model in the 30 s
/// before its first step and the checkpoint in the 30 s after the restart, and writes each
/// checkpoint while the save runs. The (reading, writing) spans.
pub fn restarted_run_io() -> (Vec<Span>, Vec<Span>) {
    let text = restarted_run();
    let (log, records) = (gke_rl_in_cluster::run_log::RunLog::of(&text), gke_rl_in_cluster::records::Records::of(&text));
    let starts = records.span().map(|(start, _)| start).into_iter().chain(records.restarts().map(|r| r.running_at));
    let reading = starts.map(|start| (start, start + 30.0)).collect();
    let writing = log.saves().iter().filter_map(|s| Some((s.at?, s.at? + s.seconds?))).collect();
    (reading, writing)
}
