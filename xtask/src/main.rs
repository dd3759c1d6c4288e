//! gke-rl's development tasks, run as `cargo xtask <command>` (see matklad/cargo-xtask): ci,
//! codegen, bench, dist, fuzz, wasm, the browser test, tidy. Any other command (`cargo xtask
//! render`, `deploy`, …) is the `gke-rl` binary's, built from this clone and run in xtask's place, as
//! a cargo alias would: xtask does not link it.
//!
//! One `Shell`, one `match`: each task lives in its own module. Generated files are checked by
//! `cargo test`: xtask's own here, the CLI's by its test `generated`.

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
    after_help = "Any other command is gke-rl's, built from this clone and run in xtask's place: `cargo xtask render --help`"
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
    let asked: Vec<OsString> = std::env::args_os().skip(1).collect();
    if matches!(asked.as_slice(), [one] if one == "--help" || one == "-h" || one == "help") {
        use clap::CommandFactory as _;
        return match Cli::command().after_help(user_commands()).print_help() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(2),
        };
    }
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

/// Becomes `gke-rl ARGS…` from this clone (`cargo run --package gke-rl-cli`, as the alias runs
/// xtask: quiet, with cargo's progress bar while it builds). The process is replaced, as
/// `cargo run` replaces itself: signals reach gke-rl, which ends with its own exit code.
fn user_command(args: &[OsString]) -> ExitCode {
    use std::os::unix::process::CommandExt as _;
    let cargo = cargo();
    let progress = ["--config", "term.progress.when='always'", "--config", "term.progress.width=80"];
    let mut command = std::process::Command::new(cargo);
    // What `cargo run` told xtask about xtask: build scripts that watch these (ring's) would be
    // run again, and again when the alias next builds xtask without them.
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text.starts_with("CARGO_PKG_")
            || matches!(
                &*text,
                "CARGO_MANIFEST_DIR" | "CARGO_MANIFEST_PATH" | "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
            )
        {
            command.env_remove(&name);
        }
    }
    let error = command
        .args(["run", "--quiet"])
        .args(progress)
        .args(["--package", "gke-rl-cli", "--bin", "gke-rl", "--"])
        .args(args)
        .env(CALLED_AS.0, CALLED_AS.1)
        .exec();
    eprintln!("error: cannot run cargo: {error}");
    ExitCode::from(2)
}

/// gke-rl's commands, as `cargo xtask --help` lists them after its own: each command's man
/// page (generated from the CLI's arguments) names it and says what it does, so xtask need not
/// link the CLI to know them.
fn user_commands() -> String {
    let mut lines = vec!["gke-rl's commands, built from this clone and run in xtask's place (`cargo xtask render --help`):".to_owned()];
    let Ok(pages) = std::fs::read_dir(project_root().join("man")) else {
        return "Any other command is gke-rl's, run in xtask's place; `cargo run -p gke-rl-cli -- help` lists them".to_owned();
    };
    let mut commands: Vec<(String, String)> = pages
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let command = path.file_name()?.to_str()?.strip_prefix("gke-rl-")?.strip_suffix(".1")?.to_owned();
            let page = std::fs::read_to_string(&path).ok()?;
            let name_line = page.lines().skip_while(|l| *l != ".SH NAME").nth(1)?;
            // Roff's escapes undone, and the first clause kept, as a listing shows it.
            let about = name_line.split_once(" \\- ")?.1.replace("\\-", "-").replace("\\*(Aq", "'");
            Some((command, first_clause(&about).to_owned()))
        })
        .collect();
    commands.sort();
    let width = commands.iter().map(|(command, _)| command.len()).max().unwrap_or_default();
    lines.extend(commands.into_iter().map(|(command, about)| format!("  {command:width$}  {about}")));
    lines.join("\n")
}

/// `text` up to its first `:`, `;` or sentence end outside parentheses.
fn first_clause(text: &str) -> &str {
    let mut depth = 0_i32;
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ':' | ';' if depth == 0 => return &text[..at],
            '.' if depth == 0 && text[at..].starts_with(". ") => return &text[..at],
            _ => {}
        }
    }
    text.trim_end_matches('.')
}

/// The cargo that runs xtask (`CARGO`), for every cargo xtask runs.
fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// The project root, wherever `cargo xtask` was started.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ has a parent").to_path_buf()
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    /// Every `gke-rl` command (each has a man page) reaches the binary through `cargo xtask`: no
    /// dev task hides one.
    #[test]
    fn every_user_command_goes_to_the_gke_rl_binary() {
        let pages = std::fs::read_dir(crate::project_root().join("man")).unwrap();
        let commands: Vec<String> =
            pages.filter_map(|e| e.unwrap().file_name().to_str()?.strip_prefix("gke-rl-")?.strip_suffix(".1").map(str::to_owned)).collect();
        assert!(commands.len() >= 15, "only {commands:?}");
        for command in commands {
            let parsed = super::Cli::try_parse_from(["cargo xtask", &command]).map(|cli| cli.command);
            assert!(matches!(parsed, Ok(super::Command::User(_))), "`cargo xtask {command}` is not gke-rl's");
        }
    }

    /// `cargo xtask --help` lists gke-rl's commands too, with what each does.
    #[test]
    fn help_lists_the_user_commands() {
        let listed = super::user_commands();
        assert!(listed.contains("\n  render ") && listed.contains("\n  submit ") && listed.contains("Render every artifact"), "{listed}");
        assert!(!listed.contains('\\'), "a roff escape is left: {listed}");
        assert_eq!(listed.lines().count(), 1 + std::fs::read_dir(crate::project_root().join("man")).unwrap().count() - 1, "{listed}");
    }

    /// The `gke-rl` binary answers to the name and variable `cargo xtask` gives it.
    #[test]
    fn the_cli_knows_what_xtask_calls_it() {
        let cli = std::fs::read_to_string(crate::project_root().join("crates/gke-rl-cli/src/lib.rs")).unwrap();
        let (variable, name) = super::CALLED_AS;
        assert!(cli.contains(&format!("pub const CALLED_AS: &str = \"{variable}\";")), "gke_rl_cli::CALLED_AS is not {variable}");
        assert!(cli.contains(&format!("pub const XTASK: &str = \"{name}\";")), "gke_rl_cli::XTASK is not {name}");
    }
}
