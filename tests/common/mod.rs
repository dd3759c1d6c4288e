//! Helpers shared by the end-to-end tests: run the real `xtask` binary, find upstream files.

#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `cargo xtask ARGS…` (the built binary) in `cwd`.
pub fn xtask(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).current_dir(cwd).args(args).output().expect("xtask runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ has a parent").to_path_buf()
}

/// A file under `../shared/upstream`: missing fails under `CI`, and skips (`None`) elsewhere.
pub fn upstream(relative: &str) -> Option<PathBuf> {
    let path = project_root().join("../shared/upstream").join(relative);
    if path.is_file() {
        return Some(path);
    }
    assert!(std::env::var_os("CI").is_none(), "{} is missing: CI needs ../shared/upstream beside the checkout", path.display());
    eprintln!("skipping: {} is missing", path.display());
    None
}
