//! `gke-rl report --log`: a saved log of a restarted run (built from NeMo-RL's own prints) as
//! text, as JSON, and as one HTML page that loads nothing; a hostile log is escaped, and what
//! is not a log file is refused. The Jobs API path runs against real heads (`ray_jobs`).

mod common;

use common::{gke_rl, stderr, stdout};
use gke_rl_test_support::nemo_rl_log::restarted_run;

#[test]
fn a_saved_log_gives_the_figures_as_text_json_and_a_page_that_loads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.log"), restarted_run()).unwrap();

    let text = gke_rl(dir.path(), &["report", "--log", "run.log"]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    // The README shows this very report.
    let readme = std::fs::read_to_string(common::project_root().join("README.md")).unwrap();
    let shown = readme
        .split_once("**The run report.**")
        .and_then(|(_, rest)| rest.split_once("```text\n"))
        .and_then(|(_, rest)| rest.split_once("```"));
    assert_eq!(shown.map(|(block, _)| block), Some(stdout(&text).as_str()), "the README's report is the output");
    assert!(
        stdout(&text).starts_with(
            "run: step 6/6, reward 0.6000 ↑, median step 1 min 25 s, last checkpoint 36.0 s, 1 restart\ngoodput: 41.1 % of 16 min 40 s"
        ),
        "{}",
        stdout(&text)
    );

    let json = gke_rl(dir.path(), &["report", "--log", "run.log", "--format", "json", "--out", "html"]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["goodput"]["goodput"], 0.411);
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 9, "1–4, the 5 cut short, then 3–6 again");
    for key in ["step", "reward", "loss", "step_time_s", "checkpoint_s", "timers"] {
        assert!(steps.iter().all(|s| s.get(key).is_some()), "every step has {key}");
    }
    assert!(stderr(&json).contains("wrote html/report.html"), "{}", stderr(&json));

    let page = std::fs::read_to_string(dir.path().join("html/report.html")).unwrap();
    assert!(page.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"));
    for section in ["goodput", "reward", "step-time", "checkpoints", "restarts", "cost"] {
        assert!(page.contains(&format!("<section id=\"{section}\">")), "{section}");
    }
    assert_eq!(page.matches("<svg").count(), 5, "the goodput bar, reward, loss, step time, checkpoints");
    for loads in ["<script", "src=", "href=", "url(", "@import"] {
        assert!(!page.contains(loads), "the page loads nothing: {loads}");
    }
    assert!(page.contains("node 10.0.0.7 died"), "the restart's cause");
}

#[test]
fn a_hostile_log_is_escaped_and_what_is_no_log_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = restarted_run()
        .replace("policy_training", "<img src=x onerror=alert(1)>")
        .replace("node 10.0.0.7 died", "<script>alert(1)</script>");
    std::fs::write(dir.path().join("run.log"), hostile).unwrap();
    let out = gke_rl(dir.path(), &["report", "--log", "run.log", "--out", "."]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(!page.contains("<script") && !page.contains("<img"), "escaped");
    assert!(page.contains("&lt;script&gt;"), "shown as text");

    for (path, error) in [("missing.log", "missing.log"), ("/dev/zero", "a character device")] {
        let out = gke_rl(dir.path(), &["report", "--log", path]);
        assert_eq!(out.status.code(), Some(2), "{path}: {}", stderr(&out));
        assert!(stderr(&out).contains(error), "{path}: {}", stderr(&out));
    }
}
