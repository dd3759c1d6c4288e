//! Issue 64 through the binary, where no Ray head is needed: what export and deploy refuse
//! before they reach the cluster, and what `cost` says of the copies a deployment recorded.

use crate::common::{stderr, stdout};

fn gke_rl(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .current_dir(dir)
        .args(args)
        .env_remove(gke_rl_cli::CALLED_AS)
        .env("KUBECONFIG", dir.join("no-kubeconfig"))
        .env("PROJECT_ID", "my-project")
        .env("PATH", "/nonexistent")
        .output()
        .expect("gke-rl runs");
    crate::common::exited_cleanly(out)
}

/// Bucket folders and checkpoints that Cloud Storage or Managed Lustre would refuse, or that
/// would name another folder than meant, are refused as arguments, with the fix.
#[test]
fn bad_bucket_folders_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (args, said) in [
        (vec!["export", "--to", "gs://my-bucket/runs"], "does not end with `/`: a folder of a bucket does (write gs://my-bucket/runs/)"),
        (vec!["export", "--to", "gs://my-bucket/a/../b/"], "has the folder `..`"),
        (vec!["export", "--to", "gs://My_Bucket/"], "is not a bucket name"),
        (vec!["export", "--to", "gs://my-bucket/a*/"], "not letters, digits"),
        (vec!["destroy", "--export-to", "s3://my-bucket/"], "write it as gs://BUCKET/PATH/"),
        (vec!["deploy", "--resume-from", "gs://my-bucket/runs/r/"], "names no checkpoint: its last folder must be `step_N`"),
        (vec!["deploy", "--resume-from", "gs://my-bucket/r/step_99999999999999999999/"], "names no checkpoint"),
    ] {
        let out = gke_rl(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
    let both = gke_rl(dir.path(), &["destroy", "--export-to", "gs://b-1/x/", "--discard-checkpoints"]);
    assert!(both.status.code() == Some(2) && stderr(&both).contains("cannot be used with"), "{}", stderr(&both));
}

#[test]
fn export_says_what_it_lacks_before_it_reaches_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let out = gke_rl(dir.path(), &["export"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no bucket folder to export to: pass --to gs://BUCKET/PATH/, or set storage.export_to"),
        "{}",
        stderr(&out)
    );
    let out = gke_rl(dir.path(), &["export", "--to", "gs://my-bucket/runs/"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no deployment state in") && stderr(&out).contains(".gke-rl/ray-a4-gpu-spot"), "{}", stderr(&out));
}

/// A checkpoint to resume from in the config: a positioned error when it is none, and refused
/// in rayjob mode, whose RayJobs have no head before a run to import it through.
#[test]
fn resume_from_in_the_config_is_checked_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gke-rl.yaml"), "job:\n  resume_from: gs://my-bucket/runs/r\n").unwrap();
    let out = gke_rl(dir.path(), &["render"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("gke-rl.yaml:2:16") && stderr(&out).contains("does not end with `/`"), "{}", stderr(&out));
    let rayjob = "ray:\n  image: nvcr.io/nvidia/nemo-rl:v0.7.0\njob:\n  mode: rayjob\n  resume_from: gs://my-bucket/runs/r/step_4/\n";
    std::fs::write(dir.path().join("gke-rl.yaml"), rayjob).unwrap();
    let out = gke_rl(dir.path(), &["render"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("config-rayjob-resume-from") && stderr(&out).contains("gke-rl.yaml:5:16"), "{}", stderr(&out));
    assert!(stderr(&out).contains("deploy with job.mode: cluster to import the checkpoint"), "{}", stderr(&out));
}

/// `cost` sets the instance's cost beside what the copies the deployment recorded cost a month
/// in their bucket, priced where a list price is cited.
#[test]
fn cost_shows_the_exported_bytes_beside_the_instance() {
    let dir = tempfile::tempdir().unwrap();
    let d = gke_rl::Deployment::default();
    let mut state = gke_rl::lifecycle::State::new(&d, "my-project", "");
    state.kept.push(gke_rl::lifecycle::Kept {
        kind: gke_rl::lifecycle::KeptKind::Step,
        run: "raysubmit_1".into(),
        checkpoints: d.job.checkpointing.dir.to_string(),
        step: 40,
        uri: "gs://my-bucket/runs/raysubmit_1/step_40/".into(),
        files: 640,
        bytes: 1 << 40,
        at: 1_800_000_000,
        mac: "00".repeat(32),
    });
    let folder = dir.path().join(".gke-rl/ray-a4-gpu-spot");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("state.json"), state.to_json()).unwrap();
    let out = gke_rl(dir.path(), &["cost"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("exported: 1.0 TiB in a Standard bucket in us-east1: $20.48/month"), "{}", stdout(&out));
    assert!(stdout(&out).contains("the Lustre instance: unpriced (set cost.lustre_per_gib_month)"), "{}", stdout(&out));
    std::fs::write(dir.path().join("gke-rl.yaml"), "cost:\n  lustre_per_gib_month: 0.73\n").unwrap();
    let out = gke_rl(dir.path(), &["cost"]);
    assert!(stdout(&out).contains("the Lustre instance costs $216.00/day while it exists"), "{}", stdout(&out));
}
