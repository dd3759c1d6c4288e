//! The Python gke-rl ships and tests with, linted by Ruff (pinned, from PyPI): the in-cluster
//! programs as they run (the generated tables, the records' reader and the token's finder in
//! place, so each is one whole module), and the test and device helpers as they are. The rules
//! are `ruff.toml`'s.

use std::path::PathBuf;

use xshell::{Shell, cmd};

use crate::project_root;

/// The Ruff `ci` installs.
const RUFF: &str = "ruff==0.17.6";

/// Python files that run as they are.
const STANDALONE: [&str; 4] =
    ["crates/gke-rl/tests/gcloud_messages.py", "tests/ray/oracle.py", "tests/ray/record_messages.py", "xtask/device/dcp_save.py"];

/// `target/ruff/bin/ruff`: a venv with [`RUFF`], created once.
pub fn install(sh: &Shell) -> anyhow::Result<PathBuf> {
    let venv = project_root().join("target/ruff");
    let ruff = venv.join("bin/ruff");
    let wanted = RUFF.trim_start_matches("ruff==");
    if !cmd!(sh, "{ruff} --version").quiet().ignore_stderr().read().unwrap_or_default().contains(wanted) {
        cmd!(sh, "python3 -m venv {venv}").run()?;
        let pip = venv.join("bin/pip");
        cmd!(sh, "{pip} install --quiet --disable-pip-version-check {RUFF}").run()?;
    }
    Ok(ruff)
}

/// Each in-cluster program as it ships, by the name it runs as.
fn programs() -> [(&'static str, String); 5] {
    [
        ("supervise.py", gke_rl::supervisor::program()),
        ("keeper.py", gke_rl::supervisor::keeper()),
        ("idle_guard.py", gke_rl::guard::program()),
        ("fabric_check.py", gke_rl::fabric::CHECK_SCRIPT.to_owned()),
        ("storage_check.py", gke_rl::storage::CHECK_SCRIPT.to_owned()),
    ]
}

/// Lints every program and helper; every finding is printed, then the step fails.
pub fn lint(sh: &Shell) -> anyhow::Result<()> {
    let ruff = install(sh)?;
    let config = project_root().join("ruff.toml");
    let mut failed = Vec::new();
    for (name, source) in programs() {
        if cmd!(sh, "{ruff} check --no-cache --quiet --config {config} --stdin-filename {name} -").stdin(source).run().is_err() {
            failed.push(name.to_owned());
        }
    }
    let files: Vec<PathBuf> = STANDALONE.iter().map(|f| project_root().join(f)).collect();
    if cmd!(sh, "{ruff} check --no-cache --quiet --config {config} {files...}").run().is_err() {
        failed.push(STANDALONE.join(", "));
    }
    anyhow::ensure!(failed.is_empty(), "Ruff finds fault with {}", failed.join(", "));
    Ok(())
}
