//! gke-rl's development tasks, run as `cargo xtask <command>` (see matklad/cargo-xtask): ci,
//! codegen, bench, dist, fuzz, wasm, the browser test, tidy. Any other command (`cargo xtask
//! render`, `deploy`, …) is the `gke-rl` binary's, built from this clone and run as a child, as
//! a cargo alias would: xtask does not link it.
//!
//! One `Shell`, one `match`: each task lives in its own module. Generated files are checked by
//! `cargo test -p xtask`.

mod bench;
mod ci;
mod codegen;
mod crd;
mod dist;
mod fuzz;
mod install;
mod models;
mod nemo_rl;
mod python;
mod recipes;
#[cfg(test)]
mod tidy;
mod wasm;
mod web;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xshell::Shell;

/// Reproducible, checked NeMo-RL GRPO training on GKE with KubeRay and Managed Lustre.
#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    version,
    after_help = "Any other command is gke-rl's, built from this clone and run as a child: `cargo xtask render --help`; `cargo run -p gke-rl-cli -- help` lists them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The development tasks.
    #[command(flatten)]
    Dev(Task),
    /// Every other command is the `gke-rl` binary's: render, validate, deploy, submit, …
    #[command(external_subcommand)]
    User(Vec<OsString>),
}

/// What `cargo xtask` tells the `gke-rl` binary it runs, so that its hints name `cargo xtask`
/// (`gke_rl_cli::CALLED_AS` and `gke_rl_cli::XTASK`, held equal by a tidy test).
const CALLED_AS: (&str, &str) = ("GKE_RL_CALLED_AS", "cargo xtask");

#[derive(Subcommand)]
enum Task {
    /// Regenerate the committed files: manifests/, schemas/, examples/, docs/rules.md, the NeMo-RL key table, completions/, man/
    Codegen {
        /// Fail instead of writing when a file is stale
        #[arg(long)]
        check: bool,
    },
    /// Build the browser validator and renderer into web-validator/pkg/ and report their sizes
    Wasm,
    /// Run the pages in Chromium: the web validator against native, and the run report (part of ci)
    BrowserTest,
    /// Lint the Python gke-rl ships (the in-cluster programs as they run) and tests with, with Ruff (part of ci)
    PythonLint,
    /// Serve the web validator on localhost
    ServeWeb {
        /// Port on 127.0.0.1
        #[arg(long, default_value_t = 8000)]
        port: u16,
    },
    /// Run every check CI runs, installing what is missing first
    Ci,
    /// Build the release's archive and installer for this host with cargo-dist, and run what they install (part of ci)
    Dist(dist::Args),
    /// Fuzz the parsers (cargo-fuzz, nightly)
    Fuzz(fuzz::Args),
    /// Run a benchmark and compare it with its target
    Bench {
        #[arg(value_enum)]
        target: bench::Target,
    },
}

fn main() -> ExitCode {
    let task = match Cli::parse().command {
        Command::User(args) => return user_command(&args),
        Command::Dev(task) => task,
    };
    let result = Shell::new().map_err(anyhow::Error::from).and_then(|sh| match task {
        Task::Codegen { check } => codegen::run(&sh, check),
        Task::Wasm => wasm::run(&sh),
        Task::BrowserTest => web::browser_test(&sh).and_then(|_| web::report_test(&sh)),
        Task::PythonLint => python::lint(&sh),
        Task::ServeWeb { port } => web::serve(&sh, port),
        Task::Ci => ci::run(&sh),
        Task::Dist(args) => args.run(&sh),
        Task::Fuzz(args) => args.run(&sh),
        Task::Bench { target } => bench::run(&sh, target),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs `gke-rl ARGS…` from this clone (`cargo run --package gke-rl-cli`) and exits as it does.
fn user_command(args: &[OsString]) -> ExitCode {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["run", "--quiet", "--package", "gke-rl-cli", "--bin", "gke-rl", "--"])
        .args(args)
        .env(CALLED_AS.0, CALLED_AS.1)
        .status();
    match status {
        Ok(status) => ExitCode::from(status.code().and_then(|code| u8::try_from(code).ok()).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::from(2)
        }
    }
}

/// The project root, wherever `cargo xtask` was started.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ has a parent").to_path_buf()
}

#[cfg(test)]
mod tests {
    /// The `gke-rl` binary answers to the name and variable `cargo xtask` gives it.
    #[test]
    fn the_cli_knows_what_xtask_calls_it() {
        let cli = std::fs::read_to_string(crate::project_root().join("crates/gke-rl-cli/src/lib.rs")).unwrap();
        let (variable, name) = super::CALLED_AS;
        assert!(cli.contains(&format!("pub const CALLED_AS: &str = \"{variable}\";")), "gke_rl_cli::CALLED_AS is not {variable}");
        assert!(cli.contains(&format!("pub const XTASK: &str = \"{name}\";")), "gke_rl_cli::XTASK is not {name}");
    }
}
