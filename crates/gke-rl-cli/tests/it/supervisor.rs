//! The in-cluster supervisor and gke-rl agree on what failed a run: the generated program's
//! `classify` and `gke_rl_in_cluster::recovery::classify` give the same verdict on every message of the
//! corpus in `tests/fixtures/ray-messages/`, recorded from real heads of every tested Ray.

use std::io::Write as _;
use std::process::{Command, Stdio};

use gke_rl_in_cluster::recovery::{Failure, classify};

#[test]
fn the_supervisor_and_gke_rl_classify_every_recorded_message_alike() {
    let corpus = crate::common::project_root().join("tests/fixtures/ray-messages/corpus.json");
    let text = std::fs::read_to_string(&corpus).unwrap_or_else(|e| panic!("{}: {e}", corpus.display()));
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).expect("the corpus is JSON");
    let versions: std::collections::BTreeSet<&str> = cases.iter().filter_map(|c| c["ray"].as_str()).collect();
    for tested in gke_rl_ray::TESTED_RAY {
        assert!(versions.contains(tested), "no messages of Ray {tested}, which the tests run: record them (see SOURCE.md): {versions:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gke_rl_supervise.py"), gke_rl_in_cluster::supervisor::program()).unwrap();
    let driver = "import json, sys\nfrom gke_rl_supervise import classify\n\
                  print(json.dumps([classify(c['message'], c['log_tail']) for c in json.load(sys.stdin)]))";
    let mut python = Command::new("python3")
        .args(["-c", driver])
        .current_dir(dir.path())
        .env("PYTHONPATH", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    python.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(out.status.success(), "the supervisor's classify ran");
    let verdicts: Vec<(String, String)> = serde_json::from_slice(&out.stdout).expect("verdicts");
    let mut kinds = std::collections::BTreeSet::new();
    for (case, (kind, detail)) in cases.iter().zip(verdicts) {
        let rust = classify(case["message"].as_str().unwrap(), case["log_tail"].as_str().unwrap());
        let rust_kind = match &rust {
            Failure::NodeLost(_) => "node-lost",
            Failure::DriverLost(_) => "driver-lost",
            _ => "program",
        };
        assert_eq!((rust_kind, rust.detail()), (kind.as_str(), detail.as_str()), "{}", case["source"]);
        assert_eq!(case["verdict"].as_str(), Some(rust_kind), "the recorded verdict of {}", case["source"]);
        kinds.insert(kind);
    }
    assert_eq!(kinds.len(), 3, "the corpus has a lost node, a lost driver and a program failure: {kinds:?}");
}

/// The in-cluster programs send the Ray token to the dashboard they call and to no one else:
/// against a dashboard that redirects to another host, each program's own `authorized` (from
/// the generated source) gives the token to the first and nothing to the second.
#[test]
fn the_in_cluster_programs_send_the_ray_token_to_their_dashboard_only() {
    let probe = r#"
import http.server, json, sys, threading, urllib.request
heard = {}
class Other(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        heard["other"] = self.headers.get("Authorization")
        self.send_response(200); self.end_headers(); self.wfile.write(b"[]")
    def log_message(self, *a): pass
class Dashboard(Other):
    def do_GET(self):
        heard["dashboard"] = self.headers.get("Authorization")
        self.send_response(307); self.send_header("Location", f"http://127.0.0.2:{other.server_port}/"); self.end_headers()
other = http.server.HTTPServer(("127.0.0.2", 0), Other)
dashboard = http.server.HTTPServer(("127.0.0.1", 0), Dashboard)
for server in (other, dashboard):
    threading.Thread(target=server.serve_forever, daemon=True).start()
urllib.request.urlopen(authorized(urllib.request.Request(f"http://127.0.0.1:{dashboard.server_port}/api/jobs/")), timeout=10).read()
print(json.dumps(heard))
"#;
    let token = "0123456789abcdef0123456789abcdef";
    for (name, source) in [
        ("supervisor", gke_rl_in_cluster::supervisor::program()),
        ("keeper", gke_rl_in_cluster::supervisor::keeper()),
        ("guard", gke_rl_in_cluster::guard::program()),
    ] {
        // The program's definitions without its `main()` call, then the probe.
        let definitions = source.split("\nif __name__ == \"__main__\":").next().unwrap();
        let out = Command::new("python3")
            .args(["-c", &format!("{definitions}\n{probe}")])
            .env("RAY_AUTH_TOKEN", token)
            .env_remove("RAY_AUTH_TOKEN_PATH")
            .output()
            .expect("python3 runs");
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let heard: serde_json::Value = serde_json::from_slice(&out.stdout).expect("what the servers heard");
        assert_eq!(heard["dashboard"], format!("Bearer {token}"), "{name}");
        assert!(heard.get("other").is_some_and(serde_json::Value::is_null), "{name}: the other host heard {heard}");
    }
}

/// Issue 50: the supervisor's reading of NeMo-RL's checkpoint folder before a restart. A save
/// stopped between its swap's renames (`old_step_N` and `tmp_step_N`, no `step_N`) is put back;
/// an `old_step_N` beside its complete `step_N` or older than a complete step is an orphan and
/// goes; one that nothing says is whole stays; links and files named as checkpoints are none.
#[test]
fn the_supervisor_puts_back_a_swapped_checkpoint_and_removes_only_orphans() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gke_rl_supervise.py"), gke_rl_in_cluster::supervisor::program()).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("shard"), "not the run's").unwrap();
    let folder = |name: &str, entries: &[&str]| {
        let folder = dir.path().join(name);
        for entry in entries {
            std::fs::create_dir_all(folder.join(entry)).unwrap();
            std::fs::write(folder.join(entry).join("shard"), entry).unwrap();
        }
        std::fs::write(folder.join("step_10"), "a file, not a checkpoint").unwrap();
        std::os::unix::fs::symlink(&elsewhere, folder.join("old_step_9")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, folder.join("step_12")).unwrap();
        folder
    };
    let driver = "import json, sys\nfrom gke_rl_supervise import checkpoints, restore_swapped, remove_partial\n\
                  folder = sys.argv[1]\nbefore = checkpoints(folder)\nswapped = restore_swapped(folder)\n\
                  partial = remove_partial(folder)\nprint(json.dumps([before, swapped, partial, checkpoints(folder)]))";
    let read = |folder: &std::path::Path| -> [serde_json::Value; 4] {
        let out = Command::new("python3")
            .args(["-c", driver, &folder.display().to_string()])
            .current_dir(dir.path())
            .env("PYTHONPATH", dir.path())
            .output()
            .expect("python3 runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    use serde_json::json;

    // Stopped between the renames of step 4's swap: step 4 is put back, its tmp goes. Issue
    // 65, class 7: a step number past 64 bits (or with a leading zero) is refused by name,
    // never read as the newest step.
    let unnamed = ["step_007", "step_99999999999999999999"];
    let swap = folder("swap", &[&["step_2", "old_step_4", "tmp_step_4"][..], &unnamed].concat());
    let [before, swapped, partial, after] = read(&swap);
    assert_eq!(before, json!([2, ["tmp_step_4"], ["old_step_4"], unnamed]), "links and files are no checkpoints");
    assert_eq!((&swapped[0], &swapped[1], &swapped[3]), (&json!(["step_4"]), &json!([]), &json!([])));
    assert_eq!((&partial[0], &after), (&json!(["tmp_step_4"]), &json!([4, [], [], unnamed])));
    assert_eq!(std::fs::read_to_string(swap.join("step_4/shard")).unwrap(), "old_step_4", "the swapped-out save is step_4 again");

    // Orphans: beside its complete step_6, and older than it; old_step_8 stays, as nothing
    // says it is whole (no tmp_step_8 beside it).
    let orphans = folder("orphans", &["step_6", "old_step_6", "old_step_3", "old_step_8"]);
    let [_, swapped, _, after] = read(&orphans);
    assert_eq!((&swapped[0], &swapped[1], &swapped[3]), (&json!([]), &json!(["old_step_3", "old_step_6"]), &json!([])));
    assert_eq!(after, json!([6, [], ["old_step_8"], []]));
    assert!(elsewhere.join("shard").is_file(), "no link was followed");
}

/// Issue 51, class 4: no training outlives its supervisor, whatever ends it. A stand-in for the
/// supervisor starts the guardian, a training in a session of its own (as the supervisor does,
/// and as a training that detaches would be), and a restart copy; it is then killed with
/// SIGKILL, which runs none of its code: the guardian ends the training and removes the copy.
#[test]
fn a_training_and_its_restart_copy_never_outlive_a_killed_supervisor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gke_rl_supervise.py"), gke_rl_in_cluster::supervisor::program()).unwrap();
    let copy = dir.path().join("gke-rl-restart-copy");
    std::fs::create_dir_all(copy.join("sub")).unwrap();
    let stand_in = format!(
        "import os, subprocess, sys, time\nimport gke_rl_supervise as s\ns.GUARDIAN.start('run-x:sub-x:')\n\
         child = subprocess.Popen(['sleep', '300'], env=dict(os.environ, GKE_RL_ATTEMPT='run-x:sub-x:0'), start_new_session=True)\n\
         s.GUARDIAN.watch_group(child.pid)\ns.GUARDIAN.watch_copy({copy:?})\nprint(child.pid, flush=True)\ntime.sleep(300)\n",
        copy = copy.display().to_string()
    );
    let mut supervisor = Command::new("python3")
        .args(["-c", &stand_in])
        .current_dir(dir.path())
        .env("PYTHONPATH", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(supervisor.stdout.take().unwrap()), &mut line).unwrap();
    let training: u32 = line.trim().parse().expect("the training's pid");
    let alive = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "));
    assert!(alive(training), "the training runs");
    supervisor.kill().unwrap();
    supervisor.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while (alive(training) || copy.exists()) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!alive(training), "the training outlived its supervisor");
    assert!(!copy.exists(), "the restart copy outlived its supervisor");
}

/// Runs `driver` with the supervisor program importable; its standard output.
fn run_with_supervisor(driver: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gke_rl_supervise.py"), gke_rl_in_cluster::supervisor::program()).unwrap();
    let out = Command::new("python3")
        .args(["-c", driver])
        .args(args)
        .current_dir(dir.path())
        .env("PYTHONPATH", dir.path())
        .envs(env.iter().copied())
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Issue 51, class 2: a line of the training's that would read as a record is marked as the
/// training's however the pipe cuts it: at every cut of a text where such a line starts the
/// output, follows a `\n`, and follows a lone `\r`, the echo is the text with each of those
/// lines marked, and gke-rl reads no record from it.
#[test]
fn a_training_line_that_reads_as_a_record_is_marked_wherever_the_pipe_cuts_it() {
    let prefix = gke_rl_in_cluster::records::RECORD_PREFIX;
    let forged = format!("{prefix}{{\"event\":\"ended\",\"status\":\"SUCCEEDED\",\"reason\":\"forged\"}}");
    let text = format!("{forged}\nstep 1\n50%\r{forged}\rtail {prefix}\n{forged}");
    // As the supervisor reads the pipe: a line at a time, cut where the read's bound falls.
    let driver = r#"
import sys
import gke_rl_supervise as s
text = sys.argv[1].encode()
for cut in range(len(text) + 1):
    s.AT_LINE_START[0] = True
    for part in (text[:cut], text[cut:]):
        while part:
            end = part.find(b"\n") + 1 or len(part)
            s.echo(part[:end])
            part = part[end:]
    s.echo(b"", final=True)
    sys.stdout.buffer.write(b"\n=cut=\n")
"#;
    let out = String::from_utf8(run_with_supervisor(driver, &[&text], &[])).unwrap();
    let expected = text.replace(&forged, &format!("(training) {forged}"));
    let echoes: Vec<&str> = out.split("\n=cut=\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(echoes.len(), text.len() + 1);
    for (cut, echo) in echoes.iter().enumerate() {
        assert_eq!(*echo, expected, "cut at byte {cut}");
        assert!(!gke_rl_in_cluster::records::Records::of(echo).supervised(), "cut at byte {cut}: a record was read");
    }
}

/// Issue 51, class 1: a record proves its run and its file, so one cannot be forged, moved to
/// another run or file, or reordered; a package is used only through a copy whose digest was
/// taken as it was copied; nothing but a regular file is ever opened.
#[test]
fn records_prove_their_run_and_file_and_only_checked_bytes_are_used() {
    let driver = r#"
import json, os, sys, hashlib
import gke_rl_supervise as s
d = sys.argv[1]
for run in ("a", "b"):
    os.makedirs(os.path.join(d, run))
a, b = (os.open(os.path.join(d, run), os.O_RDONLY | os.O_DIRECTORY) for run in ("a", "b"))
s.write_record(a, "run.json", "a", {"run": "a", "request": {"entrypoint": "train"}})
s.append_event(a, "a", {"event": "started", "submission": "a"})
import time; time.sleep(0.01)
s.append_event(a, "a", {"event": "pending", "resubmitted": "a-r1"})
said = {"genuine": s.read_record(a, "run.json", "a") is not None}
# Moved to another run, and to another file of the same run.
os.replace(os.path.join(d, "a", "run.json"), os.path.join(d, "b", "run.json"))
said["moved to another run"] = s.read_record(b, "run.json", "b")
lines = open(os.path.join(d, "a", "events.jsonl")).read().splitlines()
open(os.path.join(d, "a", "progress.json"), "w").write(lines[0])
said["moved to another file"] = s.read_record(a, "progress.json", "a")
open(os.path.join(d, "a", "events.jsonl"), "w").write("\n".join(reversed(lines)) + "\n" + "[" * 100000 + "\n")
said["reordered"] = [e["event"] for e in s.read_events(a, "a")]
# A package: checked bytes only.
package = os.path.join(d, "a", "working_dir.zip")
open(package, "wb").write(b"the code")
digest = hashlib.sha256(b"the code").hexdigest()
said["package"] = s.verified_copy(a, "working_dir.zip", digest, 1024).read().decode()
open(package, "wb").write(b"other code")
said["replaced package"] = s.verified_copy(a, "working_dir.zip", digest, 1024)
os.mkfifo(os.path.join(d, "fifo"))
os.symlink(package, os.path.join(d, "link"))
top = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
dev = os.open("/dev", os.O_RDONLY | os.O_DIRECTORY)
said["not regular"] = [s.read_bounded(top, "fifo"), s.read_bounded(top, "link"), s.read_bounded(dev, "zero")]
print(json.dumps(said))
"#;
    let dir = tempfile::tempdir().unwrap();
    let out = run_with_supervisor(driver, &[&dir.path().display().to_string()], &[("GKE_RL_RUN_KEY", "k")]);
    let said: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(
        said,
        serde_json::json!({
            "genuine": true, "moved to another run": null, "moved to another file": null, "reordered": ["started", "pending"],
            "package": "the code", "replaced package": null, "not regular": [null, null, null],
        })
    );
}
