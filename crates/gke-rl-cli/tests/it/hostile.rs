//! End to end: the `gke-rl` binary against hostile or careless input (issue 13). Every input
//! is bounded, every write confined to `--out`, every secret kept off the terminal, and the
//! CLI behaves like a Unix tool: a closed pipe ends it quietly, control characters are escaped.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{Cloud, gke_rl, project_root, stderr, stdout};
use gke_rl_kube::fake::Pods;

const HF: &str = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345";

/// `script` in bash, in `cwd`, with the binary as `$GKE_RL`.
fn bash(cwd: &Path, script: &str) -> Output {
    let out = Command::new("bash")
        .current_dir(cwd)
        .args(["-c", script])
        .env("GKE_RL", env!("CARGO_BIN_EXE_gke-rl"))
        .env("HF_TOKEN", HF)
        .output()
        .expect("bash runs");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    out
}

fn both(out: &Output) -> String {
    format!("{}{}", stdout(out), stderr(out))
}

/// Item 1: a 1 KiB env.sh whose variables double 40 times, under a 1 GiB memory limit.
#[test]
fn exponential_env_sh_expansion_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let doubling = project_root().join("tests/fixtures/hostile/doubling-env.sh");
    let doubling = doubling.display();
    let out = bash(dir.path(), &format!("ulimit -v 1048576; \"$GKE_RL\" validate {doubling}"));
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(stdout(&out).contains("error[env-sh-expansion-too-large]") && stdout(&out).contains("doubling-env.sh:16:"), "{}", both(&out));
    let out = bash(dir.path(), &format!("ulimit -v 1048576; \"$GKE_RL\" render --env-file {doubling}"));
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("expand past 1 MiB") && !dir.path().join("out").exists(), "{}", both(&out));
}

/// Item 2: devices, endless pipes and named pipes.
#[test]
fn inputs_that_never_end_are_bounded_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["validate", "/dev/zero"][..], &["render", "--config", "/dev/zero"]] {
        let out = gke_rl(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{}", both(&out));
        assert!(stderr(&out).contains("/dev/zero is a character device, not a file"), "{}", both(&out));
    }
    let out = bash(dir.path(), "\"$GKE_RL\" render --config <(yes 'topology: {}' | head -c 50000000)");
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("gke-rl reads files of at most 10 MiB"), "{}", both(&out));
    // A named pipe nobody writes to: refused at once, alone or in a folder.
    std::fs::create_dir(dir.path().join("files")).unwrap();
    assert!(Command::new("mkfifo").arg(dir.path().join("files/env.sh")).status().unwrap().success());
    std::fs::write(dir.path().join("files/.rayignore"), "env.sh\n.git/\nray_runtime_env*.json\n").unwrap();
    let out = bash(dir.path(), "timeout 20 \"$GKE_RL\" validate files/env.sh; echo \"exit $?\"");
    assert!(stdout(&out).ends_with("exit 2\n") && stderr(&out).contains("files/env.sh is a named pipe"), "{}", both(&out));
    let out = bash(dir.path(), "timeout 20 \"$GKE_RL\" validate files; echo \"exit $?\"");
    assert!(
        stdout(&out).ends_with("exit 0\n") && stderr(&out).contains("skipped 1 file that gke-rl does not check: files/env.sh"),
        "{}",
        both(&out)
    );
}

/// Item 4: symlinks planted in `--out`, under the output's names and the temp names an
/// earlier gke-rl used (`.NAME.gke-rl-PID.tmp`), lead nowhere.
#[test]
fn render_never_writes_through_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, victim) = (dir.path().join("out"), dir.path().join("victim"));
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, out_dir.join("env.sh")).unwrap();
    let next_pid = Command::new("true").spawn().unwrap().id();
    for pid in next_pid..next_pid + 400 {
        for name in ["env.sh", "ray-cluster.yaml", "run_nemo_rl.sh"] {
            std::os::unix::fs::symlink(&victim, out_dir.join(format!(".{name}.gke-rl-{pid}.tmp"))).unwrap();
        }
    }
    let out = gke_rl(dir.path(), &["render"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("refusing to overwrite files that gke-rl did not generate: out/env.sh"), "{}", both(&out));
    let out = gke_rl(dir.path(), &["render", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n", "the link's target is untouched");
    let env_sh = std::fs::symlink_metadata(out_dir.join("env.sh")).unwrap();
    assert!(env_sh.is_file(), "the link was replaced by the file");
}

/// Item 8: a literal token in an env.sh, a config's snippet and a runtime env never reaches
/// the terminal.
#[test]
fn secrets_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("env.sh"), format!("export REGION=us-east1\nexport HF_TOKEN=\"{HF}\"\n")).unwrap();
    let render = gke_rl(dir.path(), &["render", "--env-file", "env.sh"]);
    let validate = gke_rl(dir.path(), &["validate", "env.sh"]);
    std::fs::write(dir.path().join("runtime.json"), format!("{{\"env_vars\": {{\"MY_TOKEN\": \"{HF}\"}}}}\n")).unwrap();
    let submit = gke_rl(dir.path(), &["submit", "--address", "http://127.0.0.1:9", "--runtime-env", "runtime.json"]);
    for (out, code) in [(&render, 0), (&validate, 1), (&submit, 2)] {
        assert_eq!(out.status.code(), Some(code), "{}", both(out));
        assert!(!both(out).contains(HF) && both(out).contains("<redacted>"), "{}", both(out));
    }
}

/// Item 10: a project id is an id wherever it comes from, and a wide CIDR is named as a risk.
#[test]
fn project_ids_cannot_carry_gcluster_vars() {
    let dir = tempfile::tempdir().unwrap();
    let out = gke_rl(dir.path(), &["deploy", "--dry-run", "--project", "x,authorized_cidr=0.0.0.0/0"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("is not a valid project id"), "{}", both(&out));
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let out = cloud.gke_rl(&["deploy", "--dry-run", "--toolkit", "toolkit"], &[("FAKE_PROJECT", "acme,authorized_cidr=0.0.0.0/0")]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("gcloud's configured project"), "{}", both(&out));
    let out = cloud.gke_rl(&["deploy", "--dry-run", "--toolkit", "toolkit", "--authorized-cidr", "0.0.0.0/0"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(both(&out).contains("warning: authorized CIDR 0.0.0.0/0: it lets 33 million or more addresses"), "{}", both(&out));
}

/// Items 11, 14, 15 and 16: broken shell, nothing to check, a file that is not UTF-8, and a
/// JSON error that says JSON.
#[test]
fn validate_reports_what_it_cannot_read_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("run_nemo_rl.sh"), "#!/bin/bash\r\nexport RAY_OVERRIDE_JOB_RUNTIME_ENV=1\r\n").unwrap();
    std::fs::write(files.join("env.sh"), "export REGION=us-east1\nexport ZONE=\"us-east1-b\n").unwrap();
    std::fs::write(files.join("ray_runtime_env.json"), b"{\"env_vars\": {\"A\": \"caf\xe9\"}}\n").unwrap();
    std::fs::write(files.join("other_runtime_env.json"), "{\"env_vars\": {\"A\": \"1\", \"A\": \"2\"}}\n").unwrap();
    let out = gke_rl(dir.path(), &["validate", "files", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let at = |file: &str| -> Vec<(String, u64, u64)> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["file"] == format!("files/{file}"))
            .map(|f| (f["code"].as_str().unwrap().to_owned(), f["line"].as_u64().unwrap(), f["column"].as_u64().unwrap()))
            .collect()
    };
    assert_eq!(at("run_nemo_rl.sh")[0], ("syntax".to_owned(), 1, 12), "CRLF");
    assert_eq!(at("env.sh"), [("env-sh-unterminated".to_owned(), 2, 13)], "an unterminated quote");
    assert_eq!(at("ray_runtime_env.json"), [("syntax".to_owned(), 1, 24)], "not UTF-8, with its line and column");
    let duplicate = report["findings"].as_array().unwrap().iter().find(|f| f["file"] == "files/other_runtime_env.json").unwrap();
    assert!(duplicate["message"].as_str().unwrap().starts_with("invalid JSON: duplicate"), "{duplicate}");

    std::fs::create_dir(dir.path().join("empty")).unwrap();
    std::fs::write(dir.path().join("README.md"), "hello").unwrap();
    for folder in ["empty", "."] {
        let out = gke_rl(dir.path(), &["validate", folder]);
        assert_eq!(out.status.code(), Some(2), "{folder}: {}", both(&out));
        assert!(stderr(&out).contains("nothing to check"), "{}", both(&out));
    }
}

/// Item 13: a render that fails its own validation writes nothing, unless forced.
#[test]
fn render_refuses_a_config_whose_render_fails_validation() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gke-rl.yaml"), "lustre:\n  capacity_gib: 1\n").unwrap();
    let out = gke_rl(dir.path(), &["render"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(stderr(&out).contains("error[lustre-capacity-range]") && stderr(&out).contains("nothing was written"), "{}", both(&out));
    assert!(!dir.path().join("out").exists());
    let out = gke_rl(dir.path(), &["render", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(dir.path().join("out/env.sh").is_file());
}

/// Item 16: each message names the real problem.
#[test]
fn messages_name_the_real_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gke-rl.yaml"), "topology:\n  node_count: \"8\"\n").unwrap();
    let out = gke_rl(dir.path(), &["render"]);
    assert!(stderr(&out).contains("found the text \"8\" (quoted, so not a number"), "{}", both(&out));
    std::fs::remove_file(dir.path().join("gke-rl.yaml")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), format!("token {HF}\n")).unwrap();
    let out = bash(dir.path(), "\"$GKE_RL\" submit --address http://127.0.0.1:9 --include notes.txt");
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("leave it out of --include") && !stderr(&out).contains(".rayignore"), "{}", both(&out));
    let out = gke_rl(dir.path(), &["status", "--address", "http://127.0.0.1:9", "--headers", r#"{"X-Token": "a\nb"}"#]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("header `X-Token`") && !stderr(&out).contains("dashboard address"), "{}", both(&out));
}

/// Item 17: a reader that has gone away ends gke-rl quietly, as `head` expects.
#[test]
fn a_closed_pipe_ends_gke_rl_quietly() {
    let codelab = project_root().join("tests/fixtures/codelab");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .args(["validate", codelab.to_str().unwrap(), "--format", "sarif"])
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked") && !stderr(&out).contains("error"), "{}", stderr(&out));
}

/// Item 18: escape sequences from files and from servers are shown, not obeyed.
#[test]
fn control_characters_are_escaped_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("env.sh"), "export REGION=us-east1\nexport ZONE=us-west1-a # \u{1b}]0;pwned\u{7}\u{1b}[2J\n").unwrap();
    let out = gke_rl(dir.path(), &["validate", "env.sh"]);
    assert!(stdout(&out).contains("zone-not-in-region") && stdout(&out).contains("\\u{1b}]0;pwned\\u{7}"), "{}", both(&out));
    std::fs::write(dir.path().join("gke-rl.yaml"), "cost:\n  source: \"ours \\e]0;pwned\\a\"\n").unwrap();
    let out = gke_rl(dir.path(), &["cost", "--config", "gke-rl.yaml"]);
    assert!(out.status.success() && stdout(&out).contains("config prices: ours \\u{1b}]0;pwned\\u{7}"), "{}", both(&out));
    assert!(!both(&out).contains('\u{1b}'), "{:?}", both(&out));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.read(&mut [0u8; 4096]);
            let body = "\u{1b}[2J\u{1b}]0;pwned\u{7}boom";
            let _ = write!(stream, "HTTP/1.1 500 Oops\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        }
    });
    let out = gke_rl(dir.path(), &["jobs", "--address", &address]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("\\u{1b}[2J\\u{1b}]0;pwned\\u{7}boom"), "{}", both(&out));
    assert!(!both(&out).contains('\u{1b}') && !both(&out).contains('\u{7}'), "{:?}", both(&out));
}

/// Item 20: out-of-range values are refused or warned about.
#[test]
fn out_of_range_values_are_refused_or_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    for (args, expected) in [
        (&["jobs", "--request-timeout", "0", "--address", "http://127.0.0.1:9"][..], "0 is not in 1..=3600"),
        (&["deploy", "--dry-run", "--project", "my-project-1", "--timeout", "18446744073709551615s"], "longer than a week"),
        (&["status", "--as", "job"], "invalid value 'job' for '--as <MODE>': expected cluster or rayjob"),
        // The default image's Ray has no tokens, which a RayJob's operator needs.
        (&["submit", "--as", "rayjob", "--", "true"], "--as rayjob: job.mode rayjob needs Ray's token authentication"),
    ] {
        let out = gke_rl(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", both(&out));
        assert!(stderr(&out).contains(expected), "{args:?}: {}", both(&out));
    }
    let out = gke_rl(dir.path(), &["deploy", "--dry-run", "--project", "my-project-1", "--toolkit", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(both(&out).contains("# warning: no Cluster Toolkit checkout at /nonexistent"), "{}", both(&out));
    assert!(both(&out).contains("and build gcluster with `make` in it"), "issue 32, item 8: {}", both(&out));

    let cloud = Cloud::new(Pods::ReadyAfter(0));
    std::fs::create_dir_all(cloud.root.join("deployment")).unwrap();
    let state =
        gke_rl::lifecycle::State { version: 999, ..gke_rl::lifecycle::State::new(&gke_rl::Deployment::default(), "fake-project", "") };
    std::fs::write(cloud.root.join("deployment/state.json"), state.to_json()).unwrap();
    let out = cloud.destroy(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("format version 999; this gke-rl reads version 1"), "{}", both(&out));
    assert!(!cloud.calls().contains("gcluster destroy"), "nothing was destroyed");
    // Another project's state: refused, with what to do.
    let foreign = gke_rl::lifecycle::State::new(&gke_rl::Deployment::default(), "another-project", "");
    std::fs::write(cloud.root.join("deployment/state.json"), foreign.to_json()).unwrap();
    let out = cloud.destroy(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("the state file belongs to deployment ray-a4-gpu-spot in project another-project"), "{}", both(&out));
    assert!(stderr(&out).contains("belongs to that deployment; use its config and project, or another --folder"), "{}", both(&out));
    assert!(!cloud.calls().contains("gcluster destroy"), "nothing was destroyed");
}

/// Issue 31, item 1: the job ended but its log stream went silent instead of closing (a
/// half-open port-forward). `logs --follow` asks the job's state after the idle time, prints
/// the rest of the log and ends with the job, instead of waiting forever.
#[test]
fn following_ends_with_the_job_when_its_log_stream_goes_silent() {
    let dir = tempfile::tempdir().unwrap();
    let address = gke_rl_ray::fake::silent_head("step 1\n", "step 1\nstep 2\ndone\n", |_| "SUCCEEDED");
    let started = std::time::Instant::now();
    let out = bash(dir.path(), &format!("timeout 90 \"$GKE_RL\" logs --follow --address {address} {}", gke_rl_ray::fake::JOB));
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(stdout(&out).contains("step 1\nstep 2\ndone\n"), "{}", both(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
}

/// Issue 31, item 12: amounts Ray cannot reserve are refused before anything is sent: JSON has
/// no NaN or infinity (serde_json would send `null`), and a negative count is no reservation.
#[test]
fn resource_amounts_are_finite_and_not_negative() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--entrypoint-num-gpus", "--entrypoint-num-cpus"] {
        for value in ["NaN", "inf", "1e400", "-1"] {
            let out = gke_rl(dir.path(), &["submit", "--address", "http://127.0.0.1:1", &format!("{flag}={value}"), "--", "echo"]);
            assert_eq!(out.status.code(), Some(2), "{flag} {value}: {}", both(&out));
            assert!(stderr(&out).contains("is not an amount Ray can reserve"), "{flag} {value}: {}", both(&out));
        }
    }
    let out = gke_rl(dir.path(), &["submit", "--address", "http://127.0.0.1:1", "--entrypoint-resources", r#"{"TPU": -1}"#, "--", "echo"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("`TPU` is -1; give a finite number, 0 or more"), "{}", both(&out));
}

/// The metadata key that marks gke-rl's own jobs is refused on a user's: a run so marked would
/// be hidden from `status` and `logs` without an id.
#[test]
fn the_key_that_marks_gke_rls_own_jobs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = gke_rl(dir.path(), &["submit", "--address", "http://127.0.0.1:1", "--metadata", "gke-rl-helper=x", "--", "echo"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("metadata key `gke-rl-helper` marks gke-rl's own jobs"), "{}", both(&out));
}

/// Issue 31, item 10: a closed or full stderr never turns a finished command into a panic, and
/// output that could not be written is an error (status 2 and the reason), never a success.
#[test]
fn output_that_cannot_be_written_is_an_error_and_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let codelab = project_root().join("tests/fixtures/codelab");
    let codelab = codelab.display();
    for stderr_to in ["2>&-", "2>/dev/full"] {
        let out = bash(dir.path(), &format!("\"$GKE_RL\" render --out out {stderr_to}; echo \"status $?\""));
        assert!(stdout(&out).contains("status 0"), "render {stderr_to}: {}", both(&out));
        assert!(dir.path().join("out/ray-cluster.yaml").is_file(), "render {stderr_to} wrote its files");
    }
    let out = bash(dir.path(), &format!("\"$GKE_RL\" validate {codelab} --format sarif >/dev/full"));
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("error: cannot write to stdout: No space left on device"), "{}", both(&out));
}

/// Issue 31, item 11: a server that answers another submission id than the one sent is
/// refused, so no id of its choosing reaches a command printed to be pasted.
#[test]
fn a_submission_id_the_server_chose_is_refused() {
    use gke_rl_ray::fake::{respond, serve, version_body};
    let dir = tempfile::tempdir().unwrap();
    let address = serve(|path, head, stream| match path {
        "/api/version" => respond(stream, "200 OK", "", &version_body("2.46.0")),
        "/api/jobs/" if head.starts_with("POST") => {
            respond(stream, "200 OK", "", r#"{"submission_id": "x; touch pwned", "job_id": null}"#);
        }
        "/api/jobs/" => respond(stream, "200 OK", "", "[]"),
        _ if path.starts_with("/api/v0/nodes") => {
            respond(stream, "200 OK", "", r#"{"data": {"result": {"result": [{"state": "ALIVE"}, {"state": "ALIVE"}]}}}"#);
        }
        _ if path.starts_with("/api/packages/") => respond(stream, "200 OK", "", ""),
        _ => respond(stream, "404 Not Found", "", ""),
    });
    let out = gke_rl(dir.path(), &["submit", "--no-wait", "--address", &address, "--", "echo", "hi"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains(r#"the server answered submission id "x; touch pwned" for the "raysubmit_"#), "{}", both(&out));
    assert!(!both(&out).contains("logs x; touch pwned"), "{}", both(&out));
}

/// Issue 31, item 14: a signal during `render` leaves no temporary file behind, and one that a
/// killed run left (older than a minute) is swept by the next run.
#[test]
fn render_leaves_no_temporary_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let temporaries = |out: &Path| -> Vec<String> {
        std::fs::read_dir(out)
            .map(|entries| {
                entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".tmp")).collect()
            })
            .unwrap_or_default()
    };
    for round in 0..24u64 {
        let out = dir.path().join(format!("out{round}"));
        let child = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
            .current_dir(dir.path())
            .args(["render", "--out", out.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(round * 700));
        let signal = ["-INT", "-TERM", "-HUP"][usize::try_from(round % 3).unwrap()];
        let _ = Command::new("kill").args([signal, &child.id().to_string()]).status();
        let status = child.wait_with_output().unwrap().status;
        // Killed by the signal itself before render listens: it has written nothing yet.
        use std::os::unix::process::ExitStatusExt as _;
        assert!(
            matches!((status.code(), status.signal()), (Some(0 | 129 | 130 | 143), _) | (None, Some(1 | 2 | 15))),
            "round {round}: {status:?}"
        );
        assert_eq!(temporaries(&out), Vec::<String>::new(), "round {round} ({signal}) left temporary files");
    }
    let out = dir.path().join("out0");
    std::fs::create_dir_all(&out).unwrap();
    let stale = std::fs::File::create(out.join(".gke-rl-killed.tmp")).unwrap();
    stale.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(120)).unwrap();
    std::fs::write(out.join(".gke-rl-writing.tmp"), "").unwrap();
    let rendered = gke_rl(dir.path(), &["render", "--out", out.to_str().unwrap(), "--force"]);
    assert_eq!(rendered.status.code(), Some(0), "{}", both(&rendered));
    assert_eq!(temporaries(&out), vec![".gke-rl-writing.tmp".to_owned()], "the stale one is swept, the young one kept");
}

/// Issue 31, item 13: `deploy --dry-run` refuses what `render` refuses, and shows every object
/// deploy would apply, the idle guard's included.
#[test]
fn deploy_dry_run_refuses_what_render_refuses_and_shows_the_idle_guard() {
    let dir = tempfile::tempdir().unwrap();
    let dry_run = ["deploy", "--dry-run", "--project", "my-project", "--authorized-cidr", "203.0.113.7/32"];
    let mut guarded = dry_run.to_vec();
    guarded.extend(["--idle-timeout", "30m"]);
    let out = gke_rl(dir.path(), &guarded);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let plan = both(&out);
    assert!(plan.contains("the run keeper: ConfigMap default/ray-a4-gpu-spot-keeper, CronJob default/ray-a4-gpu-spot-keeper"), "{plan}");
    assert!(plan.contains("the idle guard: ServiceAccount default/") && plan.contains("CronJob default/"), "{plan}");
    std::fs::write(dir.path().join("gke-rl.yaml"), "lustre:\n  capacity_gib: 1\n").unwrap();
    let out = gke_rl(dir.path(), &dry_run);
    assert_ne!(out.status.code(), Some(0), "{}", both(&out));
    assert!(stderr(&out).contains("the render fails validation") && stderr(&out).contains("1 GiB is outside"), "{}", both(&out));
}

/// Issue 31, item 15: a named pipe reached through /proc (not a shell's `<(…)` descriptor) is
/// refused at once like any other, and bidirectional overrides in a file are shown escaped.
#[test]
fn proc_paths_to_named_pipes_are_refused_and_bidi_overrides_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.yaml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let through_proc = format!("/proc/self/root{}", fifo.display());
    let out = bash(dir.path(), &format!("timeout 20 \"$GKE_RL\" render --config {through_proc}"));
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("is a named pipe, not a file"), "{}", both(&out));
    std::fs::write(dir.path().join("env.sh"), "export REGION=us-east1\nexport ZONE=us-west1-a # \u{202e}txt.exe\n").unwrap();
    let out = gke_rl(dir.path(), &["validate", "env.sh"]);
    assert!(stdout(&out).contains("\\u{202e}txt.exe") && !both(&out).contains('\u{202e}'), "{}", both(&out));
}

/// Issue 31, item 8: parsing is near-linear and bounded. A mapping of 249k keys (390 s when
/// each key was checked against every one before it) validates at once; a log that draws a
/// progress bar with `\r` and never a `\n` is followed in memory bounded by one line, not by
/// the log: 192 MiB of it under a 128 MiB address-space limit.
#[test]
fn mapping_keys_and_log_lines_cost_linear_time_and_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let render = gke_rl(dir.path(), &["render", "--out", "r"]);
    assert!(render.status.success(), "{}", both(&render));
    let path = dir.path().join("r/ray-cluster.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let labels: String = (0..249_000).map(|n| format!("    k{n}: v{n}\n")).collect();
    std::fs::write(&path, text.replacen("  labels:\n", &format!("  labels:\n{labels}"), 1)).unwrap();
    let out = bash(dir.path(), "ulimit -v 1048576; timeout 120 \"$GKE_RL\" validate r/ray-cluster.yaml; echo \"exit $?\"");
    assert!(stdout(&out).ends_with("exit 0\n"), "{}", &both(&out)[..both(&out).len().min(2000)]);

    let address = gke_rl_ray::fake::progress_bar_head(192 << 20);
    let job = gke_rl_ray::fake::JOB;
    let out = bash(
        dir.path(),
        &format!("set -o pipefail; ulimit -v 131072; timeout 120 \"$GKE_RL\" logs --follow --address {address} {job} | tail -c 40"),
    );
    assert!(out.status.success() && stdout(&out).ends_with("\rloading  35%"), "{}", both(&out));
}

/// A loopback address nothing listens on: reaching it fails at once, so a test sees whether a
/// command got as far as connecting.
fn closed_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("127.0.0.1:{}", listener.local_addr().unwrap().port())
}

/// Issue 31, items 7 and 9, through `submit`, before it connects: a link out of the working
/// dir is refused by name, credential files are left out and listed, a name holding the token
/// is refused without showing it, and a 2^40-path link maze and a 3 GB `.rayignore` end at
/// their bounds (under a 1 GiB address-space limit).
#[test]
fn the_upload_carries_no_link_out_no_credentials_and_no_secret_in_a_name() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join(".ssh")).unwrap();
    std::fs::write(work.join("train.py"), "print('step')\n").unwrap();
    // A runtime env of its own: the rendered one's `excludes` leave the credential files out already.
    std::fs::write(dir.path().join("plain.json"), "{}").unwrap();
    let submit = format!(
        "ulimit -v 1048576; timeout 60 \"$GKE_RL\" submit --no-wait --runtime-env plain.json --working-dir work --address {}",
        closed_address()
    );

    symlink("/etc/passwd", work.join("passwd")).unwrap();
    let out = bash(dir.path(), &submit);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("work/passwd: a symlink to /etc/passwd, outside the working dir"), "{}", both(&out));
    assert!(!stderr(&out).contains("cannot reach"), "refused before connecting: {}", both(&out));
    let out = bash(dir.path(), &format!("{submit} --follow-links-out"));
    assert!(stderr(&out).contains("cannot reach"), "followed as Ray follows it: {}", both(&out));
    std::fs::remove_file(work.join("passwd")).unwrap();

    std::fs::write(work.join(".ssh/id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    std::fs::write(work.join(".npmrc"), "//registry.npmjs.org/:_authToken=x\n").unwrap();
    let out = bash(dir.path(), &submit);
    assert!(stderr(&out).contains("left out of the upload, as credentials: .npmrc, .ssh/id_ed25519"), "{}", both(&out));
    assert!(stderr(&out).contains("cannot reach"), "{}", both(&out));

    // A Ray token has no shape the terminal would know to hide.
    let ray_token = "plainRayToken0123456789";
    std::fs::write(work.join(format!("notes-{ray_token}.txt")), "x\n").unwrap();
    let out = bash(dir.path(), &format!("export RAY_AUTH_TOKEN={ray_token}; {submit}"));
    assert!(
        stderr(&out).contains("notes-<RAY_AUTH_TOKEN>.txt: the name holds the value of RAY_AUTH_TOKEN") && !both(&out).contains(ray_token),
        "{}",
        both(&out)
    );
    std::fs::remove_file(work.join(format!("notes-{ray_token}.txt"))).unwrap();

    for level in 0..40 {
        let folder = work.join(format!("maze/l{level}"));
        std::fs::create_dir_all(&folder).unwrap();
        for link in ["a", "b"] {
            symlink(format!("../l{}", level + 1), folder.join(link)).unwrap();
        }
    }
    let out = bash(dir.path(), &submit);
    assert!(stderr(&out).contains("more than 16 times through symlinks"), "{}", both(&out));
    std::fs::write(work.join(".rayignore"), "maze/\n").unwrap();
    std::fs::OpenOptions::new().append(true).open(work.join(".rayignore")).unwrap().set_len(3 << 30).unwrap();
    let out = bash(dir.path(), &submit);
    assert!(stderr(&out).contains("work/.rayignore: larger than 1 MiB"), "{}", both(&out));
}

/// A sibling of issue 31, item 4: SIGTERM to a `logs --follow` (a CI runner cancelling) detaches
/// as Ctrl-C does, and the exit code names the signal: 143, not 130.
#[test]
fn sigterm_detaches_a_follow_with_143() {
    let dir = tempfile::tempdir().unwrap();
    let address = gke_rl_ray::fake::silent_head("step 1\n", "step 1\n", |_| "RUNNING");
    let child = Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .current_dir(dir.path())
        .args(["logs", "--follow", "--address", &address, gke_rl_ray::fake::JOB])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(Command::new("kill").args(["-TERM".to_owned(), child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", both(&out));
    assert!(stdout(&out).contains("step 1") && stderr(&out).contains("detached from job"), "{}", both(&out));
}

/// The storage check's program (issue 50) against a mount others can write: a link planted on
/// the way to the checks' folder is refused before anything is written or swept, and the sweep
/// of killed checks removes only a check's own leased, stale folder; a SIGTERM mid-write still
/// removes what was written, and says so only then.
#[test]
fn the_storage_check_trusts_nothing_others_can_write_in_the_mount() {
    let mount = tempfile::tempdir().unwrap();
    let root = mount.path();
    let script = root.join("storage_check.py");
    std::fs::write(&script, gke_rl_in_cluster::storage::program()).unwrap();
    let run = |extra: &[&str]| {
        Command::new("python3")
            .arg(&script)
            .args(["--local", "--root", &root.display().to_string(), "--ranks", "2", "--rank-bytes", "1048576", "--files", "20"])
            .args(extra)
            .output()
            .expect("python3 runs")
    };
    let aged = |path: &Path| {
        let ten_minutes_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
        std::fs::File::open(path).unwrap().set_modified(ten_minutes_ago).unwrap();
    };
    // Someone's checkpoints, and the checks' folder turned into a link to them.
    let theirs = root.join("checkpoints");
    for step in ["step_10", "check-old"] {
        std::fs::create_dir_all(theirs.join(step)).unwrap();
        std::fs::write(theirs.join(step).join(".lease"), "").unwrap();
        aged(&theirs.join(step).join(".lease"));
    }
    std::fs::create_dir_all(root.join("gke-rl")).unwrap();
    std::os::unix::fs::symlink(&theirs, root.join("gke-rl/storage-check")).unwrap();
    let dir = root.join("gke-rl/storage-check").display().to_string();
    let linked = run(&["--dir", &dir]);
    assert_eq!(linked.status.code(), Some(1), "{}", both(&linked));
    assert!(stdout(&linked).contains("gke-rl/storage-check is a link or not a folder: not using it"), "{}", both(&linked));
    assert!(theirs.join("step_10").is_dir() && theirs.join("check-old").is_dir(), "nothing of theirs was removed");
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 2, "nothing was written into theirs");

    // A real folder: only a check's own name, with a stale lease that is a file, is swept.
    std::fs::remove_file(root.join("gke-rl/storage-check")).unwrap();
    let checks = root.join("gke-rl/storage-check");
    let plant = |name: &str, lease: Option<bool>| {
        std::fs::create_dir_all(checks.join(name).join("node-0")).unwrap();
        match lease {
            Some(true) => std::fs::write(checks.join(name).join(".lease"), "").unwrap(),
            Some(false) => std::fs::create_dir(checks.join(name).join(".lease")).unwrap(),
            None => {}
        }
        if lease.is_some() {
            aged(&checks.join(name).join(".lease"));
        }
    };
    plant("check-killed-1", Some(true));
    plant("gke-rl-storage-check-AbC123", Some(true));
    plant("my-data", Some(true));
    plant("check-no-lease", None);
    plant("check-lease-is-a-folder", Some(false));
    std::fs::create_dir_all(theirs.join("inside")).unwrap();
    std::os::unix::fs::symlink(&theirs, checks.join("check-link")).unwrap();
    let dir = checks.display().to_string();
    let swept = run(&["--dir", &dir]);
    assert_eq!(swept.status.code(), Some(0), "{}", both(&swept));
    let said = stdout(&swept);
    assert!(
        said.contains("storage-check removed \"check-killed-1\"") && said.contains("removed \"gke-rl-storage-check-AbC123\""),
        "{said}"
    );
    let mut left: Vec<String> =
        std::fs::read_dir(&checks).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["check-lease-is-a-folder", "check-link", "check-no-lease", "my-data"], "{said}");
    assert!(theirs.join("inside").is_dir(), "a link is never followed");

    // SIGTERM while the ranks write: the threads stop, the folder goes, and only then it says so.
    let child = Command::new("python3")
        .arg(&script)
        .args(["--local", "--root", &root.display().to_string(), "--dir", &dir, "--ranks", "4", "--rank-bytes", "2147483648"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let writing = || std::fs::read_dir(&checks).unwrap().filter_map(Result::ok).any(|e| e.path().join("node-0/rank-0.bin").exists());
    while !writing() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    assert!(stdout(&out).contains(&format!("storage-check error: {}", gke_rl_in_cluster::storage::STOPPED)), "{}", both(&out));
    let mut left: Vec<String> =
        std::fs::read_dir(&checks).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["check-lease-is-a-folder", "check-link", "check-no-lease", "my-data"], "the stopped check left nothing");

    // SIGTERM while the ranks' threads start (once seen under load, now made to happen): the
    // signal waits until every thread runs, then stops them all as above.
    let sigterm_in_the_second_start = format!(
        "import os, runpy, signal, sys, threading\n\
         start, started = threading.Thread.start, []\n\
         def start_and_signal(thread):\n\
         \x20   started.append(thread)\n\
         \x20   if len(started) == 2:\n\
         \x20       os.kill(os.getpid(), signal.SIGTERM)\n\
         \x20   start(thread)\n\
         threading.Thread.start = start_and_signal\n\
         sys.argv = {:?}\n\
         runpy.run_path(sys.argv[0], run_name='__main__')\n",
        [
            script.display().to_string(),
            "--local".into(),
            "--root".into(),
            root.display().to_string(),
            "--dir".into(),
            dir.clone(),
            "--ranks".into(),
            "4".into(),
            "--rank-bytes".into(),
            "1048576".into()
        ]
    );
    let out = Command::new("python3").args(["-c", &sigterm_in_the_second_start]).output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    assert!(stdout(&out).contains("storage-check error: stopped; the check's folder was removed"), "{}", both(&out));
    let mut left: Vec<String> =
        std::fs::read_dir(&checks).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["check-lease-is-a-folder", "check-link", "check-no-lease", "my-data"], "the stopped check left nothing");
}

/// Issue 65, class 2: the storage check's node part reaches every file from the descriptor of
/// the check's folder, opened from the mount down: a link planted inside that folder (where the
/// barriers, a node's files or the small files go) is refused, never followed, so nothing is
/// written into the folder it points at; a folder on the way that another user can change is
/// refused, the same rule the supervisor keeps; a link the user made at the mount itself is
/// resolved once and said, and the check measures where it leads.
#[test]
fn the_storage_checks_node_part_never_writes_through_a_name_someone_swapped() {
    use std::os::unix::fs::PermissionsExt as _;
    let mount = tempfile::tempdir().unwrap();
    let root = mount.path().join("mnt");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(mount.path().join("storage_check.py"), gke_rl_in_cluster::storage::program()).unwrap();
    let theirs = mount.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    // The check's folder as the driver made it, with a link where the node part writes.
    for planted in [".barrier", "node-0"] {
        let check = root.join(format!("check-{}", planted.trim_start_matches('.')));
        std::fs::create_dir(&check).unwrap();
        std::fs::write(check.join(".lease"), "").unwrap();
        std::os::unix::fs::symlink(&theirs, check.join(planted)).unwrap();
        let driver = format!(
            "import json, sys\nfrom storage_check import node_part, Refused\ntry:\n    node_part({:?}, {:?}, 0, 1, 1, 4096, 4, 0.99, 30, None)\n    print('measured')\nexcept (Refused, OSError) as e:\n    print('refused:', e)\n",
            root.display().to_string(),
            check.display().to_string()
        );
        let out = Command::new("python3").args(["-c", &driver]).env("PYTHONPATH", mount.path()).output().unwrap();
        assert!(stdout(&out).starts_with("refused:"), "{planted}: {}", both(&out));
        assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0, "{planted}: nothing was written through the link");
    }

    // A folder on the way that another user can change is not the check's to write in.
    let run = |dir: &Path, root: &Path| {
        Command::new("python3")
            .arg(mount.path().join("storage_check.py"))
            .args(["--local", "--root", &root.display().to_string(), "--dir", &dir.display().to_string()])
            .args(["--ranks", "1", "--rank-bytes", "1048576", "--files", "10"])
            .output()
            .expect("python3 runs")
    };
    let shared = root.join("gke-rl");
    std::fs::create_dir(&shared).unwrap();
    if nix_is_root() {
        assert!(Command::new("chown").args(["65534", &shared.display().to_string()]).status().unwrap().success());
    } else {
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let out = run(&shared.join("storage-check"), &root);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(stdout(&out).contains("gke-rl") && stdout(&out).contains("is not gke-rl's to write in"), "{}", both(&out));
    assert!(!shared.join("storage-check").exists(), "nothing was made in it");

    // The user's own link at the mount: said, and measured where it leads.
    let linked = mount.path().join("home");
    std::os::unix::fs::symlink(&root, &linked).unwrap();
    let out = run(&linked.join("data"), &linked);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let real = std::fs::canonicalize(&root).unwrap();
    assert!(stdout(&out).contains(&format!("is a link to {}: using {}", real.display(), real.display())), "{}", both(&out));
    assert_eq!(std::fs::read_dir(real.join("data")).unwrap().count(), 0, "measured there, and removed");
}

fn nix_is_root() -> bool {
    String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout).unwrap().trim() == "0"
}

/// Issue 51, class 7: a RayCluster with lone carriage returns is refused at the first one, as a
/// syntax error at the line and column every position of gke-rl counts (lines end at `\n`), in
/// the text, JSON and SARIF outputs alike; no fix is offered, so none can rewrite another line.
#[test]
fn a_lone_carriage_return_is_one_definition_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = std::fs::read_to_string(project_root().join("manifests/ray-cluster.yaml")).unwrap();
    // rayVersion made wrong (a fix would be offered), and three line ends made lone CRs.
    let cluster = cluster.replace("rayVersion: \"2.54.0\"", "rayVersion: \"2.46.0\"");
    let first_break = cluster.find("metadata:\n").unwrap() + "metadata:".len();
    let mut bytes = cluster.into_bytes();
    bytes[first_break] = b'\r';
    let hostile = String::from_utf8(bytes).unwrap().replacen("\n  labels:\n", "\r  labels:\r", 1);
    std::fs::write(dir.path().join("ray-cluster.yaml"), &hostile).unwrap();
    let line = hostile[..hostile.find('\r').unwrap()].matches('\n').count() + 1;
    let json = gke_rl(dir.path(), &["validate", "ray-cluster.yaml", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0]["code"], "syntax");
    assert_eq!((findings[0]["line"].as_u64(), findings[0]["column"].as_u64()), (Some(line as u64), Some(10)));
    assert!(
        findings[0]["message"].as_str().unwrap().contains("lone carriage return") && findings[0].get("fix").is_none_or(|f| f.is_null())
    );
    let sarif = gke_rl(dir.path(), &["validate", "ray-cluster.yaml", "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    let result = &log["runs"][0]["results"][0];
    assert_eq!(result["locations"][0]["physicalLocation"]["region"]["startLine"].as_u64(), Some(line as u64));
    assert!(result.get("fixes").is_none(), "{result}");
    let text = gke_rl(dir.path(), &["validate", "ray-cluster.yaml"]);
    assert!(stdout(&text).contains(&format!("ray-cluster.yaml:{line}:10")), "{}", stdout(&text));
    assert!(!stderr(&text).contains("panicked"));
}

/// Issue 51, class 6: figures from a log can neither hang the report nor be lost to its size.
/// Rewards of ±1e308 and a restart record whose waits are 1e308 are left out, and the page says
/// so, in seconds; a log of more than 256 MiB (more than the Jobs API answers whole) is read as
/// a stream in bounded memory, so its last records and steps count; past 50,000 steps the
/// progress still says where the run is.
#[test]
fn figures_from_a_log_never_hang_or_drop_the_report() {
    use gke_rl_in_cluster::records::RECORD_PREFIX;
    let dir = tempfile::tempdir().unwrap();
    let step = |n: u64, of: u64, reward: &str| {
        format!(
            "========================= Step {n}/{of} =========================\n📊 Training Results:\n  • Loss: 0.1\n  • Avg Reward: {reward}\n\
             ⏱️  Timing:\n  • Total step time: 10.00s\n"
        )
    };
    let restart = r#"{"event": "restart", "number": 1, "kind": "node-lost", "cause": "c", "failed": "s", "resumed_from": 1, "steps_redone": 0, "waited_s": 1e308, "back_to_running_s": 1.0, "lost_s": 1e308, "noticed_at": 1.0, "node_back_at": 2.0, "running_at": 3.0}"#;
    let log = format!("{}{}{RECORD_PREFIX}{restart}\n{}", step(1, 3, "1e308"), step(2, 3, "-1e308"), step(3, 3, "0.5"));
    std::fs::write(dir.path().join("run.log"), &log).unwrap();
    let out = bash(dir.path(), "timeout 60 \"$GKE_RL\" report --log run.log --out page; echo \"exit $?\"");
    assert!(stdout(&out).ends_with("exit 0\n"), "{}", both(&out));
    assert!(
        stdout(&out).contains("note: 2 figures out of range (not finite, or past ±1e12) were left out; 1 supervisor records"),
        "{}",
        both(&out)
    );
    let page = std::fs::read_to_string(dir.path().join("page/report.html")).unwrap();
    assert!(page.contains("id=\"left-out\"") && page.contains("2 figures out of range"), "the page says so");

    // 300 MiB of log: a restart record near its start, 60,000 steps, and the run's end last.
    let good_restart = restart.replace("1e308", "5.0");
    let mut blocks = vec![format!("{RECORD_PREFIX}{good_restart}\n")];
    blocks.push((1..=60_000).map(|n| step(n, 60_000, "0.25")).collect());
    let ended = format!(
        "{RECORD_PREFIX}{{\"event\": \"ended\", \"status\": \"SUCCEEDED\", \"reason\": \"the training succeeded\", \"at\": 9.0}}\n"
    );
    let address = gke_rl_ray::fake::long_log_head(blocks, "(pid=7) a worker's line\n".to_owned(), 300 << 20, ended);
    let job = gke_rl_ray::fake::JOB;
    let status =
        bash(dir.path(), &format!("ulimit -v 1048576; timeout 300 \"$GKE_RL\" status --address {address} {job}; echo \"exit $?\""));
    assert!(stdout(&status).ends_with("exit 0\n"), "{}", both(&status));
    assert!(
        both(&status).contains("restarts: 1 (") && both(&status).contains("run SUCCEEDED: the training succeeded"),
        "{}",
        both(&status)
    );
    let report =
        bash(dir.path(), &format!("ulimit -v 1048576; timeout 300 \"$GKE_RL\" report --address {address} {job}; echo \"exit $?\""));
    assert!(stdout(&report).ends_with("exit 0\n"), "{}", both(&report));
    assert!(stdout(&report).contains("run: step 60000/60000"), "{}", both(&report));
    assert!(
        stdout(&report).contains("the 10000 steps after the first 50000 are in the progress but not in the figures"),
        "{}",
        both(&report)
    );
}

/// Issue 65, class 4: `storage-check --dir` takes the characters `lustre.mount_path` does, so no
/// shell on the head ever reads a `$(…)` or a `$x` of it; refused before anything is asked.
#[test]
fn a_storage_check_folder_a_shell_would_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for hostile in ["/data$x", "/data/$(touch pwned)", "/data/`id`", "relative/data", "/data dir"] {
        let out = gke_rl(dir.path(), &["storage-check", "--dir", hostile, "--address", "http://127.0.0.1:9"]);
        assert_eq!(out.status.code(), Some(2), "{hostile}: {}", stderr(&out));
        assert!(stderr(&out).contains("is not an absolute path of letters, digits and"), "{hostile}: {}", stderr(&out));
    }
    assert!(!dir.path().join("pwned").exists());
}
