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
const STANDALONE: [&str; 4] = [
    "crates/gke-rl/tests/gcloud_messages.py",
    "crates/gke-rl-cli/tests/ray/oracle.py",
    "crates/gke-rl-cli/tests/ray/record_messages.py",
    "xtask/device/dcp_save.py",
];

/// `target/ruff/bin/ruff`: a venv with [`RUFF`], created once.
pub fn install(sh: &Shell) -> anyhow::Result<PathBuf> {
    let version = RUFF.trim_start_matches("ruff==");
    Ok(crate::install::venv(sh, &project_root().join("target/ruff"), "ruff", RUFF, version)?.join("ruff"))
}

/// Each in-cluster program as it ships, by the name it runs as.
fn programs() -> [(&'static str, String); 6] {
    [
        ("checkpoints.py", gke_rl_in_cluster::checkpoints::program()),
        ("supervise.py", gke_rl_in_cluster::supervisor::program()),
        ("keeper.py", gke_rl_in_cluster::supervisor::keeper()),
        ("idle_guard.py", gke_rl_in_cluster::guard::program()),
        ("fabric_check.py", gke_rl_in_cluster::fabric::CHECK_SCRIPT.to_owned()),
        ("storage_check.py", gke_rl_in_cluster::storage::program()),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The sources [`programs`] are made of: each linted as part of the program that carries it.
    const PROGRAM_SOURCES: [&str; 9] = [
        "crates/gke-rl-in-cluster/python/auth.py",
        "crates/gke-rl-in-cluster/python/checkpoints.py",
        "crates/gke-rl-in-cluster/python/fabric_check.py",
        "crates/gke-rl-in-cluster/python/idle_guard.py",
        "crates/gke-rl-in-cluster/python/storage_check.py",
        "crates/gke-rl-in-cluster/python/keeper.py",
        "crates/gke-rl-in-cluster/python/mount.py",
        "crates/gke-rl-in-cluster/python/records.py",
        "crates/gke-rl-in-cluster/python/supervise.py",
    ];

    #[test]
    fn every_python_file_of_the_project_is_linted() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() && !matches!(name.as_str(), "target" | ".git" | "node_modules" | "upstream" | "out") {
                    walk(&path, out);
                } else if name.ends_with(".py") {
                    out.push(path.strip_prefix(project_root()).unwrap().display().to_string());
                }
            }
        }
        let mut found = Vec::new();
        walk(&project_root(), &mut found);
        let unlinted: Vec<&String> =
            found.iter().filter(|f| !STANDALONE.contains(&f.as_str()) && !PROGRAM_SOURCES.contains(&f.as_str())).collect();
        assert!(unlinted.is_empty(), "not linted: {unlinted:?}: add each to STANDALONE or PROGRAM_SOURCES in xtask/src/python.rs");
        for source in PROGRAM_SOURCES {
            let name = source.rsplit('/').next().unwrap();
            let carried = programs().iter().any(|(program, text)| {
                *program == name
                    || text.contains(std::fs::read_to_string(project_root().join(source)).unwrap().lines().nth(1).unwrap_or_default())
            });
            assert!(carried, "{source} is in no linted program");
        }
    }
}
