//! gke-rl's development tasks, run as `cargo xtask <command>` (see matklad/cargo-xtask): ci,
//! codegen, bench, dist, fuzz, wasm, the browser test, tidy. The user commands (`cargo xtask render`,
//! `deploy`, …) are the `gke-rl` binary's, run through `gke_rl_cli::run`.
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

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xshell::Shell;

/// Reproducible, checked NeMo-RL GRPO training on GKE with KubeRay and Managed Lustre.
#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once
enum Command {
    /// The user commands, the same code as the `gke-rl` binary's.
    #[command(flatten)]
    User(gke_rl_cli::Command),
    /// The development tasks.
    #[command(flatten)]
    Dev(Task),
}

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
        Command::User(command) => return gke_rl_cli::run(command, "cargo xtask"),
        Command::Dev(task) => task,
    };
    let result = Shell::new().map_err(anyhow::Error::from).and_then(|sh| match task {
        Task::Codegen { check } => codegen::run(check),
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

/// The project root, wherever `cargo xtask` was started.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ has a parent").to_path_buf()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    /// `cargo xtask <command>` and `gke-rl <command>` are the same code: their help says so.
    #[test]
    fn user_commands_have_the_help_of_the_gke_rl_binary() {
        let mut installed = gke_rl_cli::Cli::command().bin_name("gke-rl");
        let mut delegated = super::Cli::command().bin_name("cargo xtask");
        installed.build();
        delegated.build();
        let mut compared = 0;
        // `help` lists every command of its CLI, and xtask's include the dev tasks.
        for command in installed.get_subcommands_mut().filter(|c| c.get_name() != "help") {
            let name = command.get_name().to_owned();
            let ours = delegated.find_subcommand_mut(&name).unwrap_or_else(|| panic!("cargo xtask has no `{name}`"));
            let expected = command.render_long_help().to_string();
            let actual = ours.render_long_help().to_string().replace("cargo xtask", "gke-rl");
            assert_eq!(actual, expected, "`cargo xtask {name} --help` differs from `gke-rl {name} --help`");
            compared += 1;
        }
        assert!(compared >= 10, "only {compared} commands compared");
    }
}
