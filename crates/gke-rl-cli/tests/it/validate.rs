//! End to end: `gke-rl validate` on renders, the codelab's files and bad paths.

use crate::common::{gke_rl, project_root as root, stderr, stdout, upstream};

#[test]
fn the_default_render_has_no_errors_or_warnings() {
    let cwd = tempfile::tempdir().unwrap();
    let out = gke_rl(cwd.path(), &["validate"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains("0 errors, 0 warnings"), "{}", stdout(&out));
    // Issue 32, item 8: it says what it checked, and points at the config, never at editing
    // a rendered env.sh ("Do not edit").
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.starts_with("checking the render of the embedded default (name files or folders"), "{said}");
    let listed = gke_rl(cwd.path(), &["validate", "--verbose"]);
    assert!(
        !stdout(&listed).contains("in env.sh") && stdout(&listed).contains("set project.project_id in the config"),
        "{}",
        stdout(&listed)
    );

    let rendered = gke_rl(cwd.path(), &["render"]);
    assert!(rendered.status.success());
    let out = gke_rl(cwd.path(), &["validate", "out"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("checking the render"), "files named: those are checked");
}

#[test]
fn the_codelab_files_fail_with_json_and_sarif_output() {
    let codelab = root().join("tests/fixtures/codelab");
    let codelab = codelab.to_str().unwrap();
    let out = gke_rl(&root(), &["validate", codelab]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("error[ray-version-mismatch]") && stdout(&out).contains("ray-cluster.yaml:7:15"), "{}", stdout(&out));

    let json = gke_rl(&root(), &["validate", codelab, "--format", "json"]);
    assert_eq!(json.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON on stdout");
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "secret-literal" && f["file"].as_str().unwrap().ends_with("ray_runtime_env_nemo.json"))
    );
    // The codelab has no blueprint and no Lustre tier: those rules say so.
    let skipped = report["skipped"].as_array().unwrap();
    assert!(skipped.iter().any(|s| s["code"] == "blueprint-ray-operator-missing" && s["missing"] == "no blueprint"), "{skipped:#?}");
    assert!(skipped.iter().any(|s| s["code"] == "lustre-capacity-step"), "{skipped:#?}");

    let sarif = gke_rl(&root(), &["validate", codelab, "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_slice(&sarif.stdout).expect("SARIF on stdout");
    assert_eq!(log["version"], "2.1.0");
    assert!(!log["runs"][0]["results"].as_array().unwrap().is_empty());
    let notes = log["runs"][0]["invocations"][0]["toolExecutionNotifications"].as_array().unwrap();
    assert_eq!(notes.len(), skipped.len(), "SARIF carries the same list");
    // Each finding points at what it is about (issue 52): the end of .rayignore, where the
    // missing line goes; the recipe a path outside Lustre comes from.
    let dir = root().join("tests/fixtures/codelab");
    let line_of =
        |file: &str, line: u64| std::fs::read_to_string(dir.join(file)).unwrap().lines().nth(line as usize - 1).unwrap().to_owned();
    let findings = report["findings"].as_array().unwrap();
    let rayignore = std::fs::read_to_string(dir.join(".rayignore")).unwrap().lines().count() as u64;
    let uploads: Vec<_> = findings.iter().filter(|f| f["code"] == "upload-includes-secrets").collect();
    assert!(!uploads.is_empty() && uploads.iter().all(|f| f["line"] == rayignore), "{uploads:#?}");
    let log_dir =
        findings.iter().find(|f| f["code"] == "path-outside-lustre" && f["message"].as_str().unwrap().contains("logger.log_dir")).unwrap();
    let (line, column) = (log_dir["line"].as_u64().unwrap(), log_dir["column"].as_u64().unwrap() as usize);
    assert!(line_of("run_nemo_rl.sh", line)[column - 1..].starts_with("examples/configs/"), "{log_dir}");
    // The help describes the JSON as it is printed (issue 52).
    let help = stdout(&gke_rl(&root(), &["validate", "--help"]));
    let described = help.split_once("json:").map(|(_, rest)| rest.lines().next().unwrap_or_default()).unwrap_or_default();
    let object = report.as_object().unwrap();
    assert!(object.keys().all(|key| described.contains(key.as_str())), "{described} / {:?}", object.keys().collect::<Vec<_>>());
    for key in ["file", "code", "severity", "line", "column", "message", "help"] {
        assert!(described.contains(key) && report["findings"][0].get(key).is_some(), "{key}: {described}");
    }
}

/// Every run ends with its coverage in one line; `--verbose` lists what was not checked, with
/// what enables it (issue 52: the list ended every run, a clean render's too).
#[test]
fn every_run_ends_with_what_it_could_not_check() {
    let codelab = root().join("tests/fixtures/codelab");
    let out = gke_rl(&root(), &["validate", codelab.to_str().unwrap()]);
    let text = stdout(&out);
    let tail = &text[text.rfind("checked with ").expect("the coverage")..];
    assert!(tail.ends_with(" not checked for want of other files or settings: --verbose lists them)\n"), "{tail}");
    assert_eq!(tail.lines().count(), 1, "{tail}");
    let out = gke_rl(&root(), &["validate", codelab.to_str().unwrap(), "--verbose"]);
    let text = stdout(&out);
    let tail = &text[text.rfind("checked with ").expect("the coverage")..];
    assert!(tail.contains("checked with ") && tail.contains(" rules; not checked:"), "{tail}");
    assert!(
        tail.contains("lustre-capacity-step, lustre-capacity-range, checkpoint-save-time, checkpoint-save-timeout, checkpoint-save-period: no Lustre throughput tier (add gke-a4-deployment.yaml, or LUSTRE_THROUGHPUT to env.sh)"),
        "{tail}"
    );
    assert!(tail.contains("blueprint-var-and-setting: no blueprint (add gke-a4.yaml)"), "{tail}");
}

#[test]
fn a_config_fills_in_what_the_paths_lack() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        cwd.path().join("ray-cluster.yaml"),
        std::fs::read_to_string(root().join("manifests/ray-cluster.yaml")).unwrap().replace("replicas: 8\n", "replicas: 2\n"),
    )
    .unwrap();
    std::fs::write(cwd.path().join("gke-rl.yaml"), "topology:\n  node_count: 8\n").unwrap();
    let out = gke_rl(cwd.path(), &["validate", "ray-cluster.yaml", "--config", "gke-rl.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("worker-replicas"), "{}", stdout(&out));
}

/// The KubeRay v1.7.0 CRDs are built in: a misspelt field of a RayCluster or a RayJob is an
/// error at its line with no flag; `--crd` gives another CRD in their place.
#[test]
fn crd_schema_checks_run_by_default_and_with_crd() {
    let crd = upstream("kuberay/ray.io_rayclusters.yaml");
    let cwd = tempfile::tempdir().unwrap();
    let cluster = std::fs::read_to_string(root().join("manifests/ray-cluster.yaml"))
        .unwrap()
        .replace("        tolerations:\n", "        toleration:\n");
    let at = format!("ray-cluster.yaml:{}:11", cluster.lines().position(|l| l.trim() == "toleration:").unwrap() + 1);
    std::fs::write(cwd.path().join("ray-cluster.yaml"), cluster).unwrap();
    for extra in [&[][..], &["--crd", crd.to_str().unwrap()]] {
        let out = gke_rl(cwd.path(), &[&["validate", "ray-cluster.yaml"][..], extra].concat());
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", stdout(&out));
        assert!(stdout(&out).contains("error[crd-schema]") && stdout(&out).contains(&at), "{}", stdout(&out));
    }
    // One CRD per kind: both kinds may be given, not two of one.
    let rayjob_crd = upstream("kuberay/ray.io_rayjobs.yaml");
    let both = gke_rl(cwd.path(), &["validate", "ray-cluster.yaml", "--crd", crd.to_str().unwrap(), "--crd", rayjob_crd.to_str().unwrap()]);
    assert!(both.status.code() == Some(1) && stdout(&both).contains(&at), "{}", stdout(&both));
    let twice = gke_rl(cwd.path(), &["validate", "ray-cluster.yaml", "--crd", crd.to_str().unwrap(), "--crd", crd.to_str().unwrap()]);
    assert!(twice.status.code() == Some(2) && stderr(&twice).contains("a RayCluster CRD is already given"), "{}", stderr(&twice));
    // A CRD that is not KubeRay's RayCluster or RayJob is refused as such.
    std::fs::write(cwd.path().join("pods.yaml"), "spec:\n  names:\n    kind: Pod\n  versions: []\n").unwrap();
    let out = gke_rl(cwd.path(), &["validate", "ray-cluster.yaml", "--crd", "pods.yaml"]);
    assert!(out.status.code() == Some(2) && stderr(&out).contains("is for Pod: gke-rl checks RayClusters and RayJobs"), "{}", stderr(&out));

    let rayjob = root().join("tests/fixtures/configs/rayjob.yaml");
    let render = gke_rl(cwd.path(), &["render", "--config", rayjob.to_str().unwrap(), "--out", "rj"]);
    assert!(render.status.success(), "{}", stderr(&render));
    let job = std::fs::read_to_string(cwd.path().join("rj/ray-job.yaml")).unwrap();
    let line = job.lines().position(|l| l.trim_start().starts_with("shutdownAfterJobFinishes:")).unwrap() + 1;
    std::fs::write(cwd.path().join("rj/ray-job.yaml"), job.replace("shutdownAfterJobFinishes:", "shutdownAfterJobFinish:")).unwrap();
    let out = gke_rl(cwd.path(), &["validate", "rj/ray-job.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("rj/ray-job.yaml:{line}:3")) && stdout(&out).contains("shutdownAfterJobFinish"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("kubectl explain rayjob.spec"), "{}", stdout(&out));
}

#[test]
fn unknown_files_and_missing_paths_are_usage_errors() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "hello").unwrap();
    let out = gke_rl(cwd.path(), &["validate", "notes.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(crate::common::stderr(&out).contains("cannot tell what notes.txt is"));
    let out = gke_rl(cwd.path(), &["validate", "missing.yaml"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `--fix` makes the edits the findings suggest, as `cargo fix` does: in files git can undo;
/// a file with uncommitted changes, or outside git, gets a dry run (the diff, nothing written)
/// unless `--allow-dirty`.
#[test]
fn fix_edits_committed_files_and_shows_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let codelab = std::fs::read_to_string(root().join("tests/fixtures/codelab/ray-cluster.yaml")).unwrap();
    std::fs::write(cwd.join("ray-cluster.yaml"), &codelab).unwrap();
    std::fs::write(cwd.join(".rayignore"), "env.sh\n").unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let files = ["ray-cluster.yaml", ".rayignore"];

    // Outside git (whatever folder the temporary one is in): shown, not written.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .args([&["validate", "--fix"][..], &files].concat())
        .current_dir(cwd)
        .env("GIT_CEILING_DIRECTORIES", cwd.parent().unwrap())
        .output()
        .unwrap();
    assert!(stderr(&out).contains("not written: ray-cluster.yaml (it is not in a git work tree)"), "{}", stderr(&out));
    assert!(stderr(&out).contains("\n-  rayVersion: '2.54.0'\n+  rayVersion: \"2.46.0\"\n"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(cwd.join("ray-cluster.yaml")).unwrap(), codelab);

    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "codelab"]);
    // Committed: written, and the run's findings are those of the fixed files.
    let out = gke_rl(cwd, &[&["validate", "--fix"][..], &files].concat());
    assert!(stderr(&out).contains("fixed  ray-cluster.yaml: set rayVersion to \"2.46.0\""), "{}", stderr(&out));
    assert!(stderr(&out).contains("fixed  .rayignore: add `"), "{}", stderr(&out));
    assert!(!stdout(&out).contains("ray-version-mismatch") && !stdout(&out).contains("upload-includes-secrets"), "{}", stdout(&out));
    assert!(std::fs::read_to_string(cwd.join("ray-cluster.yaml")).unwrap().contains("rayVersion: \"2.46.0\""));
    assert!(std::fs::read_to_string(cwd.join(".rayignore")).unwrap().contains("\n.git/\n"));

    // Changed since the commit: shown, not written, unless --allow-dirty.
    git(&["checkout", "-q", "."]);
    std::fs::write(cwd.join("ray-cluster.yaml"), format!("{codelab}# mine\n")).unwrap();
    let out = gke_rl(cwd, &["validate", "--fix", "ray-cluster.yaml"]);
    assert!(stderr(&out).contains("not written: ray-cluster.yaml (it has changes that are not committed)"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--- a/ray-cluster.yaml\n+++ b/ray-cluster.yaml\n@@ "), "{}", stderr(&out));
    assert!(!std::fs::read_to_string(cwd.join("ray-cluster.yaml")).unwrap().contains("2.46.0"));
    let out = gke_rl(cwd, &["validate", "--fix", "--allow-dirty", "ray-cluster.yaml"]);
    assert!(stderr(&out).contains("fixed  ray-cluster.yaml"), "{}", stderr(&out));
    let fixed = std::fs::read_to_string(cwd.join("ray-cluster.yaml")).unwrap();
    assert!(fixed.contains("rayVersion: \"2.46.0\"") && fixed.ends_with("# mine\n"), "{fixed}");

    let out = gke_rl(cwd, &["validate", "--allow-dirty", "ray-cluster.yaml"]);
    assert_eq!(out.status.code(), Some(2), "--allow-dirty needs --fix: {}", stderr(&out));
}

/// Issue 65, class 5: git can take seconds between the read and the write of a fix; an edit
/// saved meanwhile is never written over. Here git itself saves one as it answers.
#[test]
fn an_edit_saved_while_fix_asks_git_is_never_written_over() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let codelab = std::fs::read_to_string(root().join("tests/fixtures/codelab/ray-cluster.yaml")).unwrap();
    std::fs::write(cwd.join("ray-cluster.yaml"), &codelab).unwrap();
    let real_git = String::from_utf8(std::process::Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout).unwrap();
    for args in [&["init", "-q"][..], &["add", "-A"], &["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "codelab"]]
    {
        assert!(std::process::Command::new(real_git.trim()).args(args).current_dir(&cwd).status().unwrap().success());
    }
    // A git that answers as the real one, then an editor's save lands before gke-rl writes.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nout=$({} \"$@\"); rc=$?\nprintf '# saved meanwhile\\n' >> {}\nprintf '%s' \"$out\"\nexit $rc\n",
        real_git.trim(),
        gke_rl::quote::sh(&cwd.join("ray-cluster.yaml").display().to_string())
    );
    std::fs::write(bin.join("git"), script).unwrap();
    std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gke-rl"))
        .args(["validate", "--fix", "ray-cluster.yaml"])
        .current_dir(&cwd)
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ray-cluster.yaml changed after it was read"), "{}", stderr(&out));
    let now = std::fs::read_to_string(cwd.join("ray-cluster.yaml")).unwrap();
    assert_eq!(now, format!("{codelab}# saved meanwhile\n"), "the edit is kept, and no fix is written over it");
    assert!(
        std::fs::read_dir(&cwd).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with(".gke-rl-")),
        "no temporary file is left"
    );
}

/// Issue 65, class 6: two files whose names are not UTF-8 and would show alike (each bad byte
/// as U+FFFD) are both checked, shown apart, and each fix lands in its own file, never in a
/// third whose name is the stand-in's.
#[test]
fn names_that_are_not_utf8_are_kept_apart_end_to_end() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("cfg");
    std::fs::create_dir(&folder).unwrap();
    let codelab = std::fs::read_to_string(root().join("tests/fixtures/codelab/ray-cluster.yaml")).unwrap();
    let names = [&b"ray-cluster-\xff.yaml"[..], &b"ray-cluster-\xfe.yaml"[..]];
    for name in names {
        std::fs::write(folder.join(std::ffi::OsStr::from_bytes(name)), &codelab).unwrap();
    }
    let out = gke_rl(dir.path(), &["validate", "--fix", "--allow-dirty", "cfg"]);
    for shown in ["cfg/ray-cluster-\\xFF.yaml", "cfg/ray-cluster-\\xFE.yaml"] {
        assert!(stderr(&out).contains(&format!("fixed  {shown}: set rayVersion")), "{shown}: {}", stderr(&out));
    }
    for name in names {
        let fixed = std::fs::read_to_string(folder.join(std::ffi::OsStr::from_bytes(name))).unwrap();
        assert!(fixed.contains("rayVersion: \"2.46.0\""), "{}", String::from_utf8_lossy(name));
    }
    let listed: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(listed.len(), 2, "no file named by a stand-in: {listed:?}");
}
