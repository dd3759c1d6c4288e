//! What gke-rl signs outside the cluster, as the cluster's own programs sign what they record.

fn kept() -> gke_rl::lifecycle::Kept {
    gke_rl::lifecycle::Kept {
        kind: gke_rl::lifecycle::KeptKind::Step,
        run: "raysubmit_abc".into(),
        checkpoints: "/lustre/ckpt".into(),
        step: 40,
        uri: "gs://my-bucket/runs/raysubmit_abc/step_40/".into(),
        files: 12,
        bytes: 1 << 40,
        at: 1_800_000_000,
        mac: String::new(),
    }
}

/// What gke-rl signs outside the cluster carries the signature records.py gives the same
/// record in it: the two are run side by side, on the same key and fields.
#[test]
fn a_kept_copy_is_signed_as_records_py_signs_a_record() {
    let key = b"gke-rl-test-run-key";
    let signed = gke_rl_in_cluster::records::sign_kept(kept(), key);
    let program = format!(
        "import json, os, sys, time\nTABLES = {{'run_key_variable': 'GKE_RL_RUN_KEY'}}\n{}\nvalue = json.loads(sys.stdin.read())\nprint(mac(value['run'], 'kept', value))",
        include_str!("../../python/records.py")
    );
    let mut python = std::process::Command::new("python3")
        .args(["-c", &program])
        .env("GKE_RL_RUN_KEY", std::str::from_utf8(key).unwrap())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    use std::io::Write as _;
    python.stdin.take().unwrap().write_all(serde_json::to_string(&signed).unwrap().as_bytes()).unwrap();
    let out = python.wait_with_output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), signed.mac);
    assert!(gke_rl_in_cluster::records::is_genuine(&signed, key));
    assert!(!gke_rl_in_cluster::records::is_genuine(&signed, b"another cluster's key"));
    for forged in [
        gke_rl::lifecycle::Kept { step: 41, ..signed.clone() },
        gke_rl::lifecycle::Kept { run: "another".into(), ..signed.clone() },
        gke_rl::lifecycle::Kept { mac: String::new(), ..signed.clone() },
        gke_rl::lifecycle::Kept { mac: "zz".repeat(32), ..signed.clone() },
    ] {
        assert!(!gke_rl_in_cluster::records::is_genuine(&forged, key), "{forged:?}");
    }
}
