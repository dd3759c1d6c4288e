//! `cargo xtask fuzz [TARGET…] [--seconds N]`: libFuzzer on every parser (cargo-fuzz, nightly),
//! each corpus seeded with the repository's own artifacts and fixtures. A crash, a panic, or
//! an input taking over 5 s (a hang) or growing past 1 GiB of memory (256 MiB in one
//! allocation) fails the run.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use xshell::{Shell, cmd};

use crate::project_root;

/// Every fuzz target, with the files that seed its corpus (relative to the project root).
const TARGETS: &[(&str, &[&str])] = &[
    ("env_sh", &["manifests/env.sh", "tests/fixtures/codelab/env.sh", "tests/fixtures/hostile/doubling-env.sh"]),
    ("env_sh_expansion", &[]),
    ("fabric_report", &["tests/fixtures/fabric-check", "tests/fixtures/upstream/nccl"]),
    ("config_yaml", &["examples/gke-rl.yaml", "tests/fixtures/configs"]),
    ("job_script", &["manifests/run_nemo_rl.sh", "tests/fixtures/codelab/run_nemo_rl.sh"]),
    ("ray_cluster", &["manifests/ray-cluster.yaml", "tests/fixtures/codelab/ray-cluster.yaml"]),
    ("crd_schema", &["manifests/ray-cluster.yaml", "tests/fixtures/codelab/ray-cluster.yaml"]),
    ("yaml_block", &["manifests", "tests/fixtures/codelab", "tests/fixtures/upstream/cluster-toolkit"]),
    ("runtime_env", &["manifests/ray_runtime_env.json", "tests/fixtures/codelab/ray_runtime_env_nemo.json"]),
    ("rayignore", &["manifests/.rayignore", "tests/fixtures/codelab/.rayignore"]),
    ("gitwildmatch", &["manifests/.rayignore", "tests/fixtures/codelab/.rayignore"]),
    ("blueprint", &["tests/fixtures/blueprints", "manifests/gke-a4-deployment.yaml", "tests/fixtures/upstream/cluster-toolkit"]),
    ("blueprint_patch", &["tests/fixtures/upstream/cluster-toolkit/gke-a4.yaml", "tests/fixtures/blueprints"]),
    ("job_log", &["tests/fixtures/ray-messages"]),
    ("redact", &["tests/fixtures/codelab"]),
];

#[derive(clap::Args)]
pub struct Args {
    /// Targets to run [default: all]
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(TARGETS.iter().map(|(name, _)| *name)))]
    targets: Vec<String>,
    /// How long to fuzz each target
    #[arg(long, default_value_t = 600)]
    seconds: u64,
}

impl Args {
    /// Every target for a few seconds.
    pub fn smoke() -> Self {
        Self { targets: Vec::new(), seconds: 3 }
    }

    pub fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let root = project_root();
        let _root = sh.push_dir(&root);
        install_nightly(sh)?;
        if cmd!(sh, "cargo fuzz --version").quiet().ignore_stderr().read().is_err() {
            crate::install::cargo_install(sh, &["cargo-fuzz"])?;
        }
        let selected: Vec<&(&str, &[&str])> =
            TARGETS.iter().filter(|(name, _)| self.targets.is_empty() || self.targets.iter().any(|t| t == name)).collect();
        let seconds = self.seconds.to_string();
        // Build every target first, so each run's time is fuzzing time; all of them in one
        // cargo run when all are wanted, which links them side by side.
        if selected.len() == TARGETS.len() {
            cmd!(sh, "cargo +nightly fuzz build").run()?;
        } else {
            for (name, _) in &selected {
                cmd!(sh, "cargo +nightly fuzz build {name}").run()?;
            }
        }
        for (target, seeds) in selected {
            let corpus = seed_corpus(&root, target, seeds)?;
            let corpus = corpus.to_str().context("corpus path is not UTF-8")?;
            let start = Instant::now();
            let result = cmd!(
                sh,
                "cargo +nightly fuzz run {target} {corpus} -- -max_total_time={seconds} -timeout=5 -rss_limit_mb=1024 -malloc_limit_mb=256 -max_len=65536 -print_final_stats=1"
            )
            .ignore_stdout()
            .output();
            match result {
                Ok(output) => {
                    let stats = String::from_utf8_lossy(&output.stderr);
                    // libFuzzer's own summary: "Done N runs in S second(s)".
                    let done = stats.lines().find_map(|l| l.split_once("Done ")).map(|(_, rest)| rest.trim().to_owned());
                    let summary = done.unwrap_or_else(|| format!("ran for {:.0} s", start.elapsed().as_secs_f64()));
                    eprintln!("fuzz {target}: {summary}, no findings");
                }
                Err(e) => bail!("fuzz {target} found a crash or hang ({e}); the input is under fuzz/artifacts/{target}/"),
            }
        }
        Ok(())
    }
}

/// Installs a minimal nightly toolchain (cargo-fuzz needs one for its sanitizer flags) unless
/// rustup has one, so that fuzzing never depends on what a machine happens to have. Asked by
/// listing first: `rustup toolchain install` checks the channel online even when installed.
pub fn install_nightly(sh: &Shell) -> anyhow::Result<()> {
    let listing = cmd!(sh, "rustup toolchain list").quiet().ignore_stderr().read()?;
    if !lists_nightly(&listing) {
        cmd!(sh, "rustup toolchain install nightly --profile minimal --no-self-update").run()?;
    }
    Ok(())
}

/// Whether `rustup toolchain list` names the toolchain `cargo +nightly` runs: `nightly-<host>`,
/// maybe with `(default)` after it. A dated `nightly-2026-11-01-…` is another toolchain.
fn lists_nightly(listing: &str) -> bool {
    listing.lines().any(|line| {
        line.split_whitespace()
            .next()
            .and_then(|name| name.strip_prefix("nightly-"))
            .is_some_and(|host| !host.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// `target/fuzz-corpus/<target>`, holding every seed file (directories contribute their files).
fn seed_corpus(root: &Path, target: &str, seeds: &[&str]) -> anyhow::Result<PathBuf> {
    let corpus = root.join("target/fuzz-corpus").join(target);
    std::fs::create_dir_all(&corpus)?;
    for seed in seeds {
        let path = root.join(seed);
        let files: Vec<PathBuf> = if path.is_dir() {
            std::fs::read_dir(&path)?.filter_map(|e| Some(e.ok()?.path())).filter(|p| p.is_file()).collect()
        } else {
            vec![path]
        };
        for file in files.into_iter().filter(|f| f.is_file()) {
            let name = format!("seed-{}", file.file_name().context("seed without a name")?.to_string_lossy());
            std::fs::copy(&file, corpus.join(name)).with_context(|| format!("cannot copy {}", file.display()))?;
        }
    }
    Ok(corpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32, item 10: a machine without nightly is told so (ci skips the smoke with this
    /// line) instead of failing in `cargo +nightly`.
    #[test]
    fn a_missing_nightly_is_detected_from_rustups_listing() {
        assert!(lists_nightly("stable-x86_64-unknown-linux-gnu (active, default)\nnightly-x86_64-unknown-linux-gnu\n"));
        assert!(!lists_nightly("nightly-2026-11-01-x86_64-unknown-linux-gnu (default)\n"), "cargo +nightly does not run it");
        assert!(!lists_nightly("stable-x86_64-unknown-linux-gnu (active, default)\n1.95.0-x86_64-unknown-linux-gnu\n"));
        assert!(!lists_nightly("no installed toolchains\n"));
        assert!(!lists_nightly(""));
    }
}
