//! `gke-rl report --log`: a saved log of a restarted run (built from NeMo-RL's own prints) as
//! text, as JSON, and as one HTML page that loads nothing; a hostile log is escaped, and what
//! is not a log file is refused. The Jobs API path runs against real heads (`ray_jobs`).

use crate::common::{Cloud, gke_rl, stderr, stdout};
use gke_rl_kube::fake::Pods;
use gke_rl_ops::monitoring::fake::{FakeMonitoring, busy_instance};
use gke_rl_test_support::nemo_rl_log::{restarted_run, restarted_run_io};

#[test]
fn a_saved_log_gives_the_figures_as_text_json_and_a_page_that_loads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.log"), restarted_run()).unwrap();

    let text = gke_rl(dir.path(), &["report", "--log", "run.log"]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    // The guide shows this very report.
    let guide = std::fs::read_to_string(crate::common::project_root().join("docs/jobs.md")).unwrap();
    let shown = guide
        .split_once("**The run report.**")
        .and_then(|(_, rest)| rest.split_once("```text\n"))
        .and_then(|(_, rest)| rest.split_once("```"));
    assert_eq!(shown.map(|(block, _)| block), Some(stdout(&text).as_str()), "the guide's report is the output");
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

/// A storage check of the deployment's mount keeps what a save measured; the report predicts
/// from it while the deployment is what was measured, and from the tier once it is not.
#[test]
fn the_report_predicts_from_the_kept_storage_check_while_it_measured_this_deployment() {
    use gke_rl_in_cluster::storage::{KeptBasis, MEASURED_SAVE_FILE, Measured, MeasuredSave};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.log"), restarted_run()).unwrap();
    let deployment = gke_rl::Deployment::default();
    let folder = dir.path().join(gke_rl_ops::default_folder(&deployment));
    std::fs::create_dir_all(&folder).unwrap();
    let keep = |of: Measured| {
        let measured = MeasuredSave { basis: KeptBasis::Saved { rate: 2e10, pause_rate: None, gpu: true, staging_s: Some(9.0) }, of };
        std::fs::write(folder.join(MEASURED_SAVE_FILE), serde_json::to_string(&measured).unwrap()).unwrap();
    };
    keep(Measured::of(&deployment));
    let text = gke_rl(dir.path(), &["report", "--log", "run.log"]);
    // 1,017,886,851,072 bytes at 20 GB/s: 50.9 s.
    assert!(
        stdout(&text)
            .contains("predicted 50.9 s from a distributed checkpoint the check saved from the GPUs, 9.0 s of it staging off the GPU"),
        "{}",
        stdout(&text)
    );
    // Another instance since: the measurement does not hold.
    keep(Measured { capacity_gib: 18_000, ..Measured::of(&deployment) });
    let text = gke_rl(dir.path(), &["report", "--log", "run.log"]);
    assert!(stdout(&text).contains("from the instance's list throughput"), "{}", stdout(&text));
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

/// Where the Lustre test leaves its page for the browser test (`xtask/src/web.rs`).
const REPORT_PAGE: &str = "target/report-test/report.html";

/// `--lustre`: what the run's Lustre instance did, from the fake Cloud Monitoring API with the
/// fake gcloud's token, in the text, the JSON and the page, with the saves on its time axis.
/// Without a gcloud account `--lustre` fails, and `--out` says on the page why it has none.
#[test]
fn lustre_figures_come_from_cloud_monitoring_with_gclouds_token() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    std::fs::write(cloud.root.join("run.log"), restarted_run()).unwrap();
    let (reading, writing) = restarted_run_io();
    let token = "ya29.fake-monitoring-token";
    let capacity = u64::from(gke_rl::Deployment::default().lustre.capacity_gib.get()) << 30;
    let monitoring = FakeMonitoring::serve(token, busy_instance((1000.0, 2000.0), capacity, &reading, &writing));
    let endpoint = ("GKE_RL_MONITORING_ENDPOINT", monitoring.address.as_str());

    // By hand, from `busy_instance`'s rates (a point is the mean over the minute it ends):
    // - read: the minute to 1020 s reads 20 s of the model at 6 GB/s (2.0 GB/s, the peak); the
    //   four minutes that read anything read 60 s in all: 6e9 × 60 / 60 / 17 + 20 MB/s = 373 MB/s;
    // - write: the minute to 1380 s holds 34 s of a save at 9 GB/s (5.1 GB/s); the saves write
    //   136 s in all, 20.4e9 / 17 + 20 MB/s = 1.2 GB/s;
    // - while saving: each save's bytes over its seconds, the bytes those of the minutes it
    //   overlaps (4.82e9 × 60 / 32 s = 9.04, 9.04, 9.07, 9.07 GB/s), averaged: 9.1 GB/s;
    // - space: 1 TiB, plus the saves' 136 s at 9 GB/s and 20 MB/s for 19 minutes: 2.1 TiB.
    let text = cloud.gke_rl(&["report", "--log", "run.log", "--lustre"], &[endpoint]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert_eq!(
        stdout(&text).lines().last(),
        Some(
            "lustre rl-demo-gpu-lustre: read peak 2.0 GB/s, mean 373 MB/s; write peak 5.1 GB/s, mean 1.2 GB/s; \
             9.1 GB/s while saving checkpoints; 6.0 GiB of 256.0 GiB used (mdt); 2.1 TiB of 8.8 TiB used (ost)"
        ),
        "{}",
        stdout(&text)
    );

    let json = cloud.gke_rl(&["report", "--log", "run.log", "--format", "json", "--out", "html", "--lustre"], &[endpoint]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let saved: Vec<(u64, f64)> =
        report["steps"].as_array().unwrap().iter().filter_map(|s| Some((s["step"].as_u64()?, s["saved_at"].as_f64()?))).collect();
    assert_eq!(saved, [(2, 1158.0), (4, 1327.0), (4, 1712.0), (6, 1887.0)], "each save at the supervisor's time");
    let lustre = &report["lustre"];
    assert_eq!((lustre["from"].as_f64(), lustre["to"].as_f64(), lustre["period_s"].as_u64()), (Some(1000.0), Some(2000.0), Some(60)));
    assert_eq!(lustre["write_bytes_per_s"].as_array().map(Vec::len), Some(17), "a point a minute over the run");
    let page = std::fs::read_to_string(cloud.root.join("html/report.html")).unwrap();
    assert!(page.contains("<section id=\"lustre\">") && page.contains("checkpoint save"), "the Lustre plots");
    assert_eq!(page.matches("<svg").count(), 7, "the five plots, throughput and space used");
    // The page `cargo xtask browser-test` opens in Chromium.
    let shown = gke_rl_test_support::project_root().join(REPORT_PAGE);
    let folder = shown.parent().unwrap();
    std::fs::create_dir_all(folder).unwrap();
    let mut temp = tempfile::NamedTempFile::new_in(folder).unwrap();
    std::io::Write::write_all(&mut temp, page.as_bytes()).unwrap();
    temp.persist(&shown).unwrap();

    // One question to gcloud a report, for the token, which is in no call, output or request URL.
    assert_eq!(cloud.calls().matches("gcloud auth print-access-token").count(), 2, "{}", cloud.calls());
    assert!(!cloud.calls().contains(token));
    for out in [&text, &json] {
        assert!(!stdout(out).contains(token) && !stderr(out).contains(token));
    }
    assert!(monitoring.requests().iter().all(|r| !r.query.iter().any(|(_, v)| v.contains(token))));

    // Issue 52: no project anywhere; the fix names only what report can take.
    let no_project = cloud.gke_rl(&["report", "--log", "run.log", "--lustre"], &[endpoint, ("FAKE_PROJECT", "(unset)")]);
    assert!(stderr(&no_project).contains("no project: export PROJECT_ID"), "{}", stderr(&no_project));
    assert!(!stderr(&no_project).contains("pass --project"), "report has no --project: {}", stderr(&no_project));

    // Without an account, `--lustre` is an error after the rest of the report, and the page
    // says why it has no Lustre figures.
    let no_account = [endpoint, ("FAKE_NO_ACCOUNT", "1")];
    let refused = cloud.gke_rl(&["report", "--log", "run.log", "--lustre", "--out", "bare"], &no_account);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stdout(&refused).starts_with("run: step 6/6"), "{}", stdout(&refused));
    assert!(stderr(&refused).contains("You do not currently have an active account selected"), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("gcloud auth login"), "{}", stderr(&refused));
    let page = std::fs::read_to_string(cloud.root.join("bare/report.html")).unwrap();
    assert!(page.contains("<section id=\"lustre\"><h2>Lustre</h2><p class=\"note\">Not shown: cannot get an access token"), "{page}");
    // A saved log's page stays offline unless asked.
    let asked = cloud.calls().lines().count();
    let offline = cloud.gke_rl(&["report", "--log", "run.log", "--out", "offline"], &[endpoint]);
    assert_eq!(offline.status.code(), Some(0), "{}", stderr(&offline));
    assert_eq!(cloud.calls().lines().count(), asked, "gcloud was asked");
    assert!(!std::fs::read_to_string(cloud.root.join("offline/report.html")).unwrap().contains("id=\"lustre\""));
}

/// Issue 52: a run that was stopped short of its last step has no time left and nothing left
/// to pay; empty parts of the wall time read `0.0 %`, never `-0.0 %`.
#[test]
fn a_stopped_run_has_no_time_left_and_no_negative_zero() {
    let dir = tempfile::tempdir().unwrap();
    let step = |n: u64| {
        format!(
            "========================= Step {n}/10 =========================\n📊 Training Results:\n  • Loss: 0.1\n  • Avg Reward: 0.5\n\
             ⏱️  Timing:\n  • Total step time: 10.00s\n"
        )
    };
    let prefix = gke_rl_in_cluster::records::RECORD_PREFIX;
    let log = format!(
        "{prefix}{{\"event\": \"started\", \"submission\": \"s\", \"host\": \"h\", \"pid\": 1, \"at\": 1000.0}}\n{}{}\
         {prefix}{{\"event\": \"ended\", \"status\": \"STOPPED\", \"reason\": \"stopped by the user\", \"at\": 1100.0}}\n",
        step(1),
        step(2)
    );
    std::fs::write(dir.path().join("run.log"), log).unwrap();
    let out = gke_rl(dir.path(), &["report", "--log", "run.log"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(text.starts_with("run: step 2/10") && !text.contains(" left") && !text.contains("to finish"), "{text}");
    assert!(text.contains(" 0.0 %") && !text.contains("-0.0"), "{text}");
}
