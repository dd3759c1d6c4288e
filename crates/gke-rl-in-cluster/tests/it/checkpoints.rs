//! The checkpoint lister as it ships, run with python3 on a folder standing in for the mount, as
//! any pod with the claim could have left it: links at every level, forged records and claims,
//! names no bucket can hold, an import that would land over a newer step.

use std::os::unix::fs::symlink;
use std::path::Path;

use gke_rl_in_cluster::checkpoints;
use gke_rl_in_cluster::checkpoints::*;
use gke_rl_in_cluster::records::mac;

const KEY: &str = "gke-rl-test-run-key";

fn run(request: &Request) -> String {
    let job = tempfile::tempdir().unwrap();
    std::fs::write(job.path().join(PROGRAM_FILE), program()).unwrap();
    std::fs::write(job.path().join(REQUEST_FILE), request.to_json()).unwrap();
    let out = std::process::Command::new("python3")
        .args([PROGRAM_FILE, REQUEST_FILE])
        .current_dir(job.path())
        .env("GKE_RL_RUN_KEY", KEY)
        .output()
        .expect("python3 runs");
    String::from_utf8(out.stdout).unwrap()
}

fn signed(run: &str, kind: &str, mut value: serde_json::Value) -> String {
    let text = value.to_string();
    value["mac"] = mac(KEY.as_bytes(), run, kind, &text).into();
    value.to_string()
}

fn now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64().round()
}

/// A mount with one genuine run writing `ckpt`, one forged run, and steps of every kind.
fn mount() -> tempfile::TempDir {
    let mount = tempfile::tempdir().unwrap();
    let m = mount.path();
    let ckpt = m.join("ckpt");
    for folder in [
        "step_2/policy/weights",
        "step_4/policy/weights/iter_0000004",
        "tmp_step_6",
        "old_step_2",
        "step_99999999999999999999",
        "step_007",
        "step_\u{665}",
    ] {
        std::fs::create_dir_all(ckpt.join(folder)).unwrap();
    }
    std::fs::write(ckpt.join("step_4/config.yaml"), "a: 1\n").unwrap();
    std::fs::write(ckpt.join("step_4/policy/weights/iter_0000004/__0_0.distcp"), vec![0u8; 1000]).unwrap();
    symlink("/etc", ckpt.join("step_9")).unwrap();
    let runs = m.join("gke-rl/runs");
    let dir = ckpt.display().to_string();
    for (run, key_run) in [("raysubmit_real", "raysubmit_real"), ("raysubmit_forged", "another-run")] {
        std::fs::create_dir_all(runs.join(run)).unwrap();
        let info = signed(key_run, "run.json", serde_json::json!({"run": run, "checkpoints": dir}));
        std::fs::write(runs.join(run).join("run.json"), info).unwrap();
    }
    let event = signed("raysubmit_real", "events.jsonl", serde_json::json!({"event": "started", "at": 1234.5}));
    std::fs::write(runs.join("raysubmit_real/events.jsonl"), format!("{event}\n")).unwrap();
    mount
}

fn survey_of(mount: &Path) -> Survey {
    let request = Request::Survey {
        mount: mount.display().to_string(),
        runs: mount.join("gke-rl/runs").display().to_string(),
        dirs: vec![mount.join("ckpt").display().to_string(), "/etc".to_owned()],
    };
    survey(&run(&request)).unwrap()
}

#[test]
fn a_survey_counts_genuine_runs_and_refuses_what_is_no_step_by_name() {
    let mount = mount();
    let survey = survey_of(mount.path());
    assert_eq!((survey.runs, survey.unsigned_runs), (1, 1), "{survey:?}");
    let ckpt = survey.folders.iter().find(|f| f.dir.ends_with("/ckpt")).unwrap();
    assert_eq!(ckpt.run(), Some("raysubmit_real"));
    assert_eq!((ckpt.steps.as_slice(), ckpt.partial.as_slice(), ckpt.old.as_slice()), (&[2, 4][..], &[6][..], &[2][..]));
    let refused: Vec<(&str, &str)> = ckpt.refused.iter().map(|r| (r.name.as_str(), r.why.as_str())).collect();
    assert!(refused.contains(&("step_9", "a link or a file, not a folder")), "{refused:?}");
    for odd in ["step_99999999999999999999", "step_007", "step_\u{665}"] {
        assert!(refused.iter().any(|(name, why)| *name == odd && why.starts_with("not a step NeMo-RL names")), "{odd}: {refused:?}");
    }
    let newest = ckpt.newest.as_ref().unwrap();
    assert_eq!((newest.step, newest.files, newest.bytes), (4, 2, 1005));
    // A run nobody vouches for names its folder all the same: looked at, never trusted.
    assert_eq!(ckpt.unsigned, ["raysubmit_forged"]);
    let outside = survey.folders.iter().find(|f| f.dir == "/etc").unwrap();
    assert!(outside.missing.as_deref().is_some_and(|m| m.contains("not below the mount")) && outside.unreadable.is_none(), "{outside:?}");
}

/// A folder that is there but cannot be read (a link on the way) is said so, never taken for
/// an empty one; a runs folder the same; a mount that is not there refuses the whole survey.
#[test]
fn what_cannot_be_read_is_never_taken_for_nothing() {
    let mount = mount();
    let m = mount.path();
    std::fs::create_dir_all(m.join("real/ckpt/step_3")).unwrap();
    std::fs::write(m.join("real/ckpt/step_3/shard"), "x").unwrap();
    symlink(m.join("real"), m.join("linked")).unwrap();
    let request = |runs: &Path, dirs: Vec<String>, mount: &Path| Request::Survey {
        mount: mount.display().to_string(),
        runs: runs.display().to_string(),
        dirs,
    };
    let survey = survey(&run(&request(&m.join("gke-rl/runs"), vec![m.join("linked/ckpt").display().to_string()], m))).unwrap();
    let linked = survey.folders.iter().find(|f| f.dir.ends_with("linked/ckpt")).unwrap();
    assert!(linked.unreadable.as_deref().is_some_and(|u| u.contains("linked is a link or not a folder")), "{linked:?}");
    assert!(linked.missing.is_none() && linked.newest.is_none());
    let runs_linked = checkpoints::survey(&run(&request(&m.join("linked"), vec![], m))).unwrap();
    assert!(runs_linked.runs_unread.is_some(), "a runs folder that is a link: {runs_linked:?}");
    let no_runs = checkpoints::survey(&run(&request(&m.join("nothing/here"), vec![], m))).unwrap();
    assert!(no_runs.runs_unread.is_none() && no_runs.runs == 0, "a runs folder not there holds no run");
    let gone = m.join("no-mount");
    let refused = checkpoints::survey(&run(&request(&gone.join("gke-rl/runs"), vec![], &gone))).unwrap_err();
    assert!(refused.to_string().contains("the file system is not mounted on this node"), "{refused}");
}

#[test]
fn only_a_genuine_fresh_claim_for_the_folder_holds_it() {
    let mount = mount();
    let ckpt = mount.path().join("ckpt");
    let dir = ckpt.display().to_string();
    let claim = |run: &str, key_run: &str, folder: &str, at: f64| {
        signed(
            key_run,
            ".gke-rl-writer",
            serde_json::json!({"run": run, "submission": "s1", "host": "h", "pid": 1, "cluster": "c", "folder": folder, "at": at}),
        )
    };
    let cases = [
        (claim("raysubmit_real", "raysubmit_real", &dir, now()), true),
        (claim("raysubmit_real", "raysubmit_real", &dir, now() - 600.0), false),
        (claim("raysubmit_real", "forger", &dir, now()), false),
        (claim("raysubmit_real", "raysubmit_real", "/elsewhere", now()), false),
    ];
    for (text, holds) in cases {
        std::fs::write(ckpt.join(".gke-rl-writer"), &text).unwrap();
        let survey = survey_of(mount.path());
        let folder = survey.folders.iter().find(|f| f.dir.ends_with("/ckpt")).unwrap();
        assert_eq!(folder.claim.is_some(), holds, "{text}");
    }
    std::fs::remove_file(ckpt.join(".gke-rl-writer")).unwrap();
    symlink(mount.path().join("gke-rl/runs/raysubmit_real/run.json"), ckpt.join(".gke-rl-writer")).unwrap();
    assert!(survey_of(mount.path()).folders.iter().all(|f| f.claim.is_none()), "a link is no claim");
}

#[test]
fn a_listing_follows_no_link_and_names_what_a_bucket_cannot_hold() {
    let mount = mount();
    let step = mount.path().join("ckpt/step_4");
    symlink("/etc/passwd", step.join("passwd")).unwrap();
    symlink("/etc", step.join("policy/etc")).unwrap();
    use std::os::unix::ffi::OsStrExt as _;
    std::fs::write(step.join(std::ffi::OsStr::from_bytes(b"bad\xffname")), "x").unwrap();
    assert!(std::process::Command::new("mkfifo").arg(step.join("fifo")).status().unwrap().success());
    let files = |name: &str| {
        let request = Request::Files {
            mount: mount.path().display().to_string(),
            dir: mount.path().join("ckpt").display().to_string(),
            name: name.into(),
        };
        listing(&run(&request))
    };
    let listed = files("step_4").unwrap();
    let paths: Vec<&str> = listed.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["config.yaml", "policy/weights/iter_0000004/__0_0.distcp"]);
    let refused: Vec<(&str, &str)> = listed.refused.iter().map(|r| (r.path.as_str(), r.why.as_str())).collect();
    assert!(refused.contains(&("passwd", "a link")) && refused.contains(&("policy/etc", "a link")), "{refused:?}");
    assert!(refused.contains(&("fifo", "neither a file nor a folder")), "{refused:?}");
    assert!(refused.iter().any(|(path, why)| path.contains("bad") && why.contains("not UTF-8")), "{refused:?}");
    assert_eq!(listed.weights.map(|w| w.path), Some("policy/weights/iter_0000004".to_owned()));
    let through_a_link = files("step_9").unwrap_err().to_string();
    assert!(through_a_link.contains("step_9 is a link or not a folder"), "{through_a_link}");
}

#[test]
fn an_import_never_lands_over_a_newer_step_nor_renames_over_one() {
    let mount = mount();
    let m = mount.path().display().to_string();
    let ckpt = mount.path().join("ckpt").display().to_string();
    let newer = prepared(&run(&Request::Prepare { mount: m.clone(), dir: ckpt.clone(), step: 3 })).unwrap_err();
    assert!(
        newer.to_string().contains("holds a newer step than 3 (step_007, step_4, step_99999999999999999999"),
        "names NeMo-RL would glob count: {newer}"
    );
    let fresh = mount.path().join("new/ckpt").display().to_string();
    let made = prepared(&run(&Request::Prepare { mount: m.clone(), dir: fresh.clone(), step: 3 })).unwrap();
    assert!(!made.existing && mount.path().join("new/ckpt/tmp_step_3").is_dir());
    let commit = |from: &str, to: &str, dir: &str| {
        committed(&run(&Request::Commit { mount: m.clone(), dir: dir.into(), from: from.into(), to: to.into(), step: None }))
    };
    commit("tmp_step_3", "step_3", &fresh).unwrap();
    assert!(mount.path().join("new/ckpt/step_3").is_dir());
    let over = commit("tmp_step_6", "step_4", &ckpt).unwrap_err();
    assert!(over.to_string().contains("step_4 exists: not renaming tmp_step_6 over it"), "{over}");
    symlink("/tmp", mount.path().join("linked")).unwrap();
    let linked = mount.path().join("linked/ckpt").display().to_string();
    let refused = prepared(&run(&Request::Prepare { mount: m.clone(), dir: linked, step: 1 })).unwrap_err();
    assert!(refused.to_string().contains("linked is a link or not a folder"), "{refused}");
    // A newer step that appeared while the import ran: the import is not renamed into place.
    std::fs::create_dir_all(mount.path().join("new/ckpt/tmp_step_2")).unwrap();
    std::fs::create_dir_all(mount.path().join("new/ckpt/step_9")).unwrap();
    let request = Request::Commit { mount: m.clone(), dir: fresh.clone(), from: "tmp_step_2".into(), to: "step_2".into(), step: Some(2) };
    let newer = committed(&run(&request)).unwrap_err();
    assert!(newer.to_string().contains("holds a newer step than 2 (step_3, step_9) since the import began"), "{newer}");
    // A live run's folder is never imported into.
    let claim = signed(
        "raysubmit_real",
        ".gke-rl-writer",
        serde_json::json!({"run": "raysubmit_real", "submission": "s1", "host": "h", "pid": 1, "cluster": "c", "folder": fresh, "at": now()}),
    );
    std::fs::write(mount.path().join("new/ckpt/.gke-rl-writer"), claim).unwrap();
    let live = prepared(&run(&Request::Prepare { mount: m.clone(), dir: fresh.clone(), step: 12 })).unwrap_err();
    assert!(live.to_string().contains("run raysubmit_real is writing") && live.to_string().contains("stop it first"), "{live}");
    // Nor renamed into place beside a run that started while it was copied.
    std::fs::remove_dir(mount.path().join("new/ckpt/step_9")).unwrap();
    let request = Request::Commit { mount: m, dir: fresh, from: "tmp_step_2".into(), to: "step_2".into(), step: Some(2) };
    let live = committed(&run(&request)).unwrap_err();
    assert!(
        live.to_string().contains("is writing") && live.to_string().contains("since the transfer began: not renaming tmp_step_2"),
        "{live}"
    );
    assert!(mount.path().join("new/ckpt/tmp_step_2").is_dir() && !mount.path().join("new/ckpt/step_2").exists());
}
