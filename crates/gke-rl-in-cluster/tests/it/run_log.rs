//! The run log parser and the run report on logs built from NeMo-RL's own print statements
//! (`gke_rl_test_support::nemo_rl_log`).

use gke_rl::Deployment;
use gke_rl::checkpoint_plan::Saving;
use gke_rl_in_cluster::run_log::RunLog;
use gke_rl_test_support::nemo_rl_log::{Loop, Prints, RELEASES, block, figures, restarted_run};

#[test]
fn every_release_and_loop_is_read_step_by_step() {
    for release in RELEASES {
        for which in [Loop::Sync, Loop::Async] {
            let prints = Prints::of(release, which);
            let log: String = (1..=4).map(|n| block(&prints, &figures(n), 20, None)).collect();
            // Ray's prefix on each line, and the text in chunks of 7 bytes (on char boundaries).
            let prefixed: String = log.lines().map(|l| format!("(MegatronPolicyWorker pid=7) {l}\n")).collect();
            for text in [&log, &prefixed] {
                let mut run = RunLog::default();
                let mut rest = text.as_str();
                while !rest.is_empty() {
                    let cut = rest.floor_char_boundary(7.min(rest.len())).max(rest.ceil_char_boundary(1));
                    run.feed(&rest[..cut], None);
                    rest = &rest[cut..];
                }
                let context = format!("{release} {}", if matches!(which, Loop::Sync) { "grpo_train" } else { "async_grpo_train" });
                assert_eq!(run.steps().len(), 4, "{context}\n{text}");
                for (step, expected) in run.steps().iter().zip((1..=4).map(figures)) {
                    assert_eq!((step.step, step.of), (expected.step, 20), "{context}");
                    let rounded = |x: f64, places: i32| (x * 10f64.powi(places)).round() / 10f64.powi(places);
                    assert_eq!(step.loss, Some(rounded(expected.loss, 4)), "{context}");
                    assert_eq!(step.reward, Some(rounded(expected.reward, 4)), "{context}");
                    let length = prints.generation_length.as_ref().map(|_| rounded(expected.generation_length, 4));
                    assert_eq!(step.generation_length, length, "{context}");
                    assert_eq!(step.step_time_s, Some(rounded(expected.total, 2)), "{context}");
                    let timers: Vec<(&str, f64)> = step.timers(&run).collect();
                    let wanted: Vec<(&str, f64)> = expected.timers.iter().map(|&(n, s)| (n, rounded(s, 2))).collect();
                    assert_eq!(timers, wanted, "{context}");
                    assert_eq!(step.checkpoint_s(&run), expected.save.then(|| rounded(30.0 + expected.step as f64, 2)), "{context}");
                }
                let saves: Vec<(u64, Option<f64>)> = run.saves().iter().map(|s| (s.step, s.seconds)).collect();
                assert_eq!(saves, [(2, Some(32.0)), (4, Some(34.0))], "{context}");
            }
        }
    }
}

#[test]
fn a_block_cut_anywhere_never_gives_a_wrong_figure() {
    let prints = Prints::of("v0.7.0", Loop::Sync);
    let (before, whole) = (block(&prints, &figures(1), 20, None), block(&prints, &figures(2), 20, None));
    let all = RunLog::of(&format!("{before}{whole}"));
    let expected = &all.steps()[1];
    // Cut after every byte of the block: at line ends, and inside lines (numbers cut short).
    for end in (0..=whole.len()).filter(|&end| whole.is_char_boundary(end)) {
        let run = RunLog::of(&format!("{before}{}", &whole[..end]));
        assert_eq!(run.steps()[0], all.steps()[0], "cut at {end}: the step before is whole");
        let Some(cut) = run.steps().get(1) else { continue };
        for (figure, whole_figure) in [
            (cut.loss, expected.loss),
            (cut.reward, expected.reward),
            (cut.generation_length, expected.generation_length),
            (cut.step_time_s, expected.step_time_s),
            (cut.checkpoint_s(&run), expected.checkpoint_s(&all)),
        ] {
            assert!(figure.is_none() || figure == whole_figure, "cut at {end}: {figure:?}, not {whole_figure:?}\n{}", &whole[..end]);
        }
        for (name, seconds) in cut.timers(&run) {
            assert_eq!(expected.timers(&all).find(|t| t.0 == name), Some((name, seconds)), "cut at {end}");
        }
    }
}

/// Goodput by hand for [`restarted_run`]: the steps kept (1, 2, 3, 4, 5, 6 of the second
/// attempt) take 66 + 99 + 68 + 103 + 70 + 107 = 513 s, of which 32 + 34 + 36 = 102 s are
/// checkpoint saves: 411 s productive of 1000 s. Steps 3 and 4 of the first attempt (68 + 103 =
/// 171 s) were redone; the restart waited 100 s for the node and 50 s to run again; the rest,
/// 1000 − 411 − 102 − 171 − 100 − 50 = 166 s, is start-up and the step cut short.
#[test]
fn goodput_of_a_restarted_run_is_each_causes_share_of_the_wall_time() {
    let text = restarted_run();
    let (log, records) = (RunLog::of(&text), gke_rl_in_cluster::records::Records::of(&text));
    let wall_s = records.span().and_then(|(start, end)| Some(end? - start));
    let report = gke_rl_in_cluster::run_report::report(&gke_rl_in_cluster::run_report::Inputs {
        log: &log,
        records: &records,
        wall_s,
        per_hour: Some(360.0),
        started_at: records.span().map(|s| s.0),
        saving: Some((Saving::of(&Deployment::default()), gke_rl::checkpoint_plan::at_the_tier(&Deployment::default()))),
        ended: true,
        unpriced: None,
    });
    let g = &report.goodput;
    assert_eq!((g.wall_s, g.productive_s, g.goodput), (Some(1000.0), 411.0, Some(0.411)));
    let b = &g.badput;
    assert_eq!(
        (b.checkpoint_save_s, b.redone_s, b.capacity_wait_s, b.restart_s, b.startup_and_other_s),
        (102.0, 171.0, 100.0, 50.0, Some(166.0))
    );
    let redone: Vec<u64> = report.steps.iter().filter(|s| s.redone).map(|s| s.step).collect();
    assert_eq!(redone, [3, 4, 5], "the first attempt's 3 and 4, and the 5 it was cut in");
    // Each save at the time the supervisor recorded for it: after its step's generation and
    // training (42 + 20 s into step 2, which starts at 1030 + 66 s).
    let saved: Vec<(u64, Option<f64>)> = report.steps.iter().filter(|s| s.checkpoint_s.is_some()).map(|s| (s.step, s.saved_at)).collect();
    assert_eq!(saved, [(2, Some(1158.0)), (4, Some(1327.0)), (4, Some(1712.0)), (6, Some(1887.0))]);
    assert_eq!(report.window(), Some((1000.0, 2000.0)));
    let p = &report.progress;
    assert_eq!((p.step, p.of, p.median_step_s, p.eta_s, p.restarts), (Some(6), Some(6), Some(84.5), None, 1), "ended: no time left");
    assert!((p.reward_trend.unwrap() - 0.1).abs() < 1e-9, "{:?}", p.reward_trend);
    let cost = report.cost.as_ref().unwrap();
    assert_eq!((cost.so_far, cost.to_finish), (Some(100.0), None), "1000 s at $360/hour, and nothing left");
    insta::assert_snapshot!("restarted_run_summary", report.summary());
    insta::assert_snapshot!("restarted_run_json", serde_json::to_string_pretty(&report).unwrap());
}

/// Two epochs of two steps (NeMo-RL numbers steps from 1 again in each, and saves by the
/// step count across them), with no restart: nothing is redone, and each save gets its step's
/// checkpointing time. A third attempt after a restart record redoes what it runs again.
#[test]
fn epochs_are_not_restarts_and_saves_are_timed_by_their_own_step() {
    let prints = Prints::of("v0.7.0", Loop::Sync);
    let epoch = |from: u64| -> String {
        (1..=2).map(|n| block(&prints, &figures(n), 2, None).replace(&format!("step {n}..."), &format!("step {}...", from + n))).collect()
    };
    let text = epoch(0) + &epoch(2);
    let report = |text: &str| {
        let (log, records) = (RunLog::of(text), gke_rl_in_cluster::records::Records::of(text));
        gke_rl_in_cluster::run_report::report(&gke_rl_in_cluster::run_report::Inputs {
            log: &log,
            records: &records,
            wall_s: None,
            per_hour: None,
            started_at: None,
            saving: None,
            ended: false,
            unpriced: None,
        })
    };
    let two_epochs = report(&text);
    assert!(two_epochs.steps.iter().all(|s| !s.redone), "{:?}", two_epochs.steps);
    let saves: Vec<(u64, Option<f64>)> = RunLog::of(&text).saves().iter().map(|s| (s.step, s.seconds)).collect();
    assert_eq!(saves, [(2, Some(32.0)), (4, Some(32.0))]);

    let restart = gke_rl_test_support::nemo_rl_log::record(concat!(
        r#"{"event": "restart", "number": 1, "kind": "node-lost", "cause": "c", "failed": "f", "resumed_from": 3, "steps_redone": 1, "#,
        r#""waited_s": 1.0, "back_to_running_s": 1.0, "lost_s": 2.0, "noticed_at": 1.0, "node_back_at": 2.0, "running_at": 3.0}"#
    ));
    let again = report(&format!("{text}{restart}{}", block(&prints, &figures(2), 2, None)));
    let redone: Vec<bool> = again.steps.iter().map(|s| s.redone).collect();
    assert_eq!(redone, [false, false, false, true, false], "the second epoch's step 2, run again after the restart");
}

/// A step header lost (another worker's output on the same line) never moves the next step's
/// figures onto the step before: a figure is read once a step.
#[test]
fn a_lost_header_never_overwrites_the_step_before() {
    let prints = Prints::of("v0.7.0", Loop::Sync);
    let second = block(&prints, &figures(2), 20, None);
    let (header, rest) = second.trim_start_matches('\n').split_once('\n').unwrap();
    let garbled = format!("{}(pid=9) loading weights\n{rest}", header.trim_end_matches('='));
    let log = RunLog::of(&(block(&prints, &figures(1), 20, None) + &garbled));
    let alone = RunLog::of(&block(&prints, &figures(1), 20, None));
    assert_eq!(log.steps(), alone.steps(), "step 1 as it was");
}
