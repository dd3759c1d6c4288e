//! The storage check's save pass (issue 66), run as `--local` on this machine's CPUs: with the
//! torch of NeMo-RL's newest release (in the newest tested Ray's venv, where `cargo xtask ci`
//! installs it), without torch, with Debian's torch 1.13, and on a file system that fills up
//! half-way through the save. And the device run's script, on CPU, so that it keeps working.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gke_rl::checkpoint_plan::{Basis, Device};
use gke_rl_test_support::{project_root, stderr, stdout};

/// The Python of `version`'s Ray venv, which `cargo xtask ci` makes: a missing one fails, never
/// skips.
fn ray_python(version: &str) -> PathBuf {
    let python = project_root().join("target/ray").join(version).join("bin/python");
    assert!(python.is_file(), "{} is missing: `cargo xtask ci` installs it", python.display());
    python
}

/// The check's program, as `gke-rl storage-check` submits it, in a fresh folder.
fn program() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("storage_check.py"), gke_rl_in_cluster::storage::program()).expect("the program");
    dir
}

fn both(out: &Output) -> String {
    format!("{}\n{}", stdout(out), stderr(out))
}

/// The node's figures the check printed.
fn node(out: &Output) -> serde_json::Value {
    let line = stdout(out).lines().find_map(|l| l.strip_prefix("storage-check node ").map(str::to_owned));
    serde_json::from_str(&line.unwrap_or_else(|| panic!("no node line:\n{}", both(out)))).expect("a node line")
}

/// One trial at a time: each starts several torch processes, and two cores take them in turn.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The check's command on `dir`: two ranks of 2 MiB, with a time limit far past what it takes
/// on a loaded machine.
fn check_command(python: &Path, program: &Path, dir: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(python);
    command
        .arg(program.join("storage_check.py"))
        .args(["--local", "--dir", &dir.display().to_string(), "--ranks", "2", "--rank-bytes", "2097152", "--files", "20"])
        .args(["--timeout", "300"])
        .args(extra);
    command
}

fn check(python: &Path, program: &Path, dir: &Path, extra: &[&str]) -> Output {
    check_command(python, program, dir, extra).output().expect("python runs")
}

#[test]
fn a_save_pass_with_a_new_torch_saves_a_real_checkpoint_and_removes_it() {
    let _one = one_at_a_time();
    let python = ray_python(gke_rl_ray::NEWEST_TESTED_RAY);
    let (program, dir) = (program(), tempfile::tempdir().expect("temp dir"));
    let out = check(&python, program.path(), dir.path(), &["--save-threads", "2", "--save-async"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let save = &node(&out)["save"];
    assert_eq!(save["device"], "cpu", "no GPU here: {save}");
    assert_eq!((save["ranks"].as_u64(), save["threads"].as_u64()), (Some(2), Some(2)), "{save}");
    assert_eq!(save["bytes_per_parameter"].as_u64(), Some(gke_rl::knowledge::CHECKPOINT_BYTES_PER_PARAMETER), "the rules' layout");
    // Two ranks' 2 MiB, as whole parameters, and DCP's metadata.
    let bytes = save["bytes"].as_u64().expect("bytes");
    assert!(((4 << 20) - 28..(4 << 20) + (64 << 10)).contains(&bytes), "{bytes} bytes");
    let at = |key: &str| save[key].as_f64().unwrap_or_else(|| panic!("no {key}: {save}"));
    assert!(at("start") <= at("returned") && at("returned") <= at("durable"), "{save}");
    let asynchronous = &save["async"];
    let (blocked, landed) = (asynchronous["blocked"].as_f64(), asynchronous["landed"].as_f64());
    assert!(blocked.is_some() && blocked <= landed, "{save}");
    // Judged as gke-rl judges it: the prediction comes from the saved checkpoint.
    let report = gke_rl_in_cluster::storage::Report::parse(&stdout(&out));
    let verdict = report.judge(&gke_rl_in_cluster::storage::Expectation::for_deployment(&gke_rl::Deployment::default(), 0.5));
    let basis = verdict.prediction.map(|p| p.basis);
    let cpu = |basis| matches!(basis, Some(Basis::Saved { device: Device::Cpu, staging_s: None, .. }));
    assert!(cpu(basis), "{basis:?}\n{}", both(&out));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the check removed its folder and the checkpoint");
}

#[test]
fn without_a_torch_that_can_save_the_check_says_why_and_keeps_the_raw_pass() {
    let _one = one_at_a_time();
    let no_torch = ray_python(gke_rl_ray::OLDEST_TESTED_RAY);
    let program = program();
    // Debian's python3-torch, which `ci` installs for the fabric check, is 1.13.
    let debian = Path::new("/usr/bin/python3");
    for (python, why) in [(no_torch.as_path(), "torch does not import in "), (debian, "torch 1.13")] {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = check(python, program.path(), dir.path(), &["--save-async"]);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        let node = node(&out);
        let skipped = node["save"]["skipped"].as_str().unwrap_or_default();
        assert!(skipped.contains(why) && skipped.contains(&python.display().to_string()), "{}", both(&out));
        if why == "torch 1.13" {
            assert!(skipped.contains("older than 2.3: it has no torch.distributed.checkpoint.async_save"), "{skipped}");
        }
        assert_eq!(node["write"]["bytes"].as_u64(), Some(4 << 20), "the raw pass ran: {node}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left");
    }
}

/// A file system that another writer fills once the save pass has begun (a tmpfs of 24 MiB in a
/// mount namespace of this test's own): the save fails half-way, says why, and leaves nothing.
#[test]
fn a_save_that_runs_out_of_room_half_way_leaves_nothing_and_says_why() {
    let _one = one_at_a_time();
    let python = ray_python(gke_rl_ray::NEWEST_TESTED_RAY);
    let (program, mount, logs) = (program(), tempfile::tempdir().expect("temp dir"), tempfile::tempdir().expect("temp dir"));
    // The filler waits until the save pass has removed the raw files, then leaves 3 MiB: half
    // of the two ranks' 4 MiB and more.
    let filler = r#"
import glob, os, sys, time
mount = sys.argv[1]
deadline = time.monotonic() + 240
while time.monotonic() < deadline:
    saving = glob.glob(os.path.join(mount, "check-*", ".barrier", "save", "0"))
    if saving and not glob.glob(os.path.join(mount, "check-*", "node-0", "rank-*.bin")):
        break
    time.sleep(0.01)
else:
    sys.exit("the save pass never began")
fd = os.open(os.path.join(mount, "filler"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
st = os.statvfs(mount)
os.posix_fallocate(fd, 0, st.f_bavail * st.f_frsize - (3 << 20))
os.close(fd)
"#;
    let script = r#"
set -u
mount -t tmpfs -o size=24m tmpfs "$1" || exit 90
"$2" "$3" --local --dir "$1" --ranks 2 --rank-bytes 2097152 --files 20 --max-fill 1 --timeout 300 > "$4/check.log" 2>&1 &
check=$!
"$2" -c "$5" "$1" || echo "filler failed" >> "$4/check.log"
wait $check
echo "rc=$?" >> "$4/check.log"
ls -A "$1" > "$4/left"
"#;
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", script, "sh"])
        .arg(mount.path())
        .arg(&python)
        .arg(program.path().join("storage_check.py"))
        .arg(logs.path())
        .arg(filler)
        .output()
        .expect("unshare runs");
    assert!(out.status.success(), "a mount namespace of the test's own: {}", both(&out));
    let log = std::fs::read_to_string(logs.path().join("check.log")).expect("the check's log");
    assert!(log.ends_with("rc=1\n"), "the check failed:\n{log}");
    assert!(
        log.contains("storage-check error: the distributed checkpoint ran out of room on the file system under test: "),
        "it says why:\n{log}"
    );
    let left = std::fs::read_to_string(logs.path().join("left")).expect("the listing");
    assert_eq!(left, "filler\n", "only the other writer's file is left:\n{log}");
}

/// `xtask/device/dcp_save.py --cpu`: the script a lent GPU runs, on the generated program and a
/// small model, so that a moved path or a changed line fails here.
#[test]
fn the_device_script_runs_on_cpu() {
    let _one = one_at_a_time();
    let python = ray_python(gke_rl_ray::NEWEST_TESTED_RAY);
    let (program, out_dir, disk) = (program(), tempfile::tempdir().expect("temp dir"), tempfile::tempdir().expect("temp dir"));
    let out = Command::new(&python)
        .arg(project_root().join("xtask/device/dcp_save.py"))
        .args(["--cpu", "--parameters", "4e6", "--side", "1024", "--timeout", "300"])
        .arg("--check")
        .arg(program.path().join("storage_check.py"))
        .arg("--out")
        .arg(out_dir.path())
        .arg("--dir")
        .arg(disk.path())
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{}", both(&out));
    let text = std::fs::read_to_string(out_dir.path().join("dcp-save.json")).expect("dcp-save.json");
    let figures: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(figures["storage_check"]["device"], "cpu", "{figures}");
    for key in ["predicted_over_measured", "raw_predicted_over_measured", "bytes_per_parameter"] {
        assert!(figures[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {figures}");
    }
    assert!((figures["bytes_per_parameter"].as_f64().unwrap() - 14.0).abs() < 0.1, "{figures}");
}

/// SIGTERM (`ray job stop`, a pod's end) while the ranks save: they are ended with the check,
/// and the checkpoint and the check's folder go.
#[test]
fn a_check_stopped_while_it_saves_ends_its_ranks_and_leaves_nothing() {
    let _one = one_at_a_time();
    let python = ray_python(gke_rl_ray::NEWEST_TESTED_RAY);
    let (program, dir) = (program(), tempfile::tempdir().expect("temp dir"));
    let mut command = check_command(&python, program.path(), dir.path(), &[]);
    // Shares large enough that the ranks are still making their tensors when the stop comes.
    let mut child = command.args(["--rank-bytes", "1073741824"]).stdout(std::process::Stdio::piped()).spawn().expect("python runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
    let saving = || std::fs::read_dir(dir.path()).into_iter().flatten().flatten().any(|check| check.path().join("node-0/save").is_dir());
    while !saving() {
        assert!(std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(), "the save pass never began");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = i32::try_from(child.id()).unwrap();
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let out = child.wait_with_output().expect("it ends");
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    assert!(stdout(&out).contains("storage-check error: stopped; the check's folder was removed"), "{}", both(&out));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left");
    // No process runs the program any more: its ranks went with it.
    let program_path = program.path().display().to_string();
    let running = std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&program_path))
    });
    assert!(!running, "a rank outlived the check");
}
