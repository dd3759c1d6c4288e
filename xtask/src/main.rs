//! gke-rl's command line, run as `cargo xtask <command>` (see matklad/cargo-xtask).
//!
//! One `Shell`, one `match`: each command lives in its own module. This crate is the only
//! place that runs external programs. Generated files are checked by `cargo test -p xtask`.

mod bench;
mod blueprint;
mod ci;
mod cluster;
mod codegen;
mod config;
mod console;
mod fuzz;
mod jobs;
mod ray_head;
mod render;
mod report;
#[cfg(test)]
mod tidy;
mod validate;
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
enum Command {
    Render(render::Args),
    Validate(validate::Args),
    Blueprint(blueprint::Args),
    Deploy(Box<cluster::DeployArgs>),
    Destroy(cluster::DestroyArgs),
    Submit(Box<jobs::SubmitArgs>),
    Status(jobs::StatusArgs),
    Logs(jobs::LogsArgs),
    Stop(jobs::StopArgs),
    Jobs(jobs::JobsArgs),
    /// Regenerate the committed files: manifests/, schemas/, examples/, docs/rules.md, the NeMo-RL key table
    Codegen {
        /// Fail instead of writing when a file is stale
        #[arg(long)]
        check: bool,
    },
    /// Build the browser validator into web-validator/pkg/ and report its size
    Wasm,
    /// Run the web validator's test in Chromium (part of ci)
    BrowserTest,
    /// Serve the web validator on localhost
    ServeWeb {
        /// Port on 127.0.0.1
        #[arg(long, default_value_t = 8000)]
        port: u16,
    },
    /// Run every check CI runs, installing what is missing first
    Ci,
    /// Fuzz the parsers (cargo-fuzz, nightly)
    Fuzz(fuzz::Args),
    /// Run a benchmark and compare it with its target
    Bench {
        #[arg(value_enum)]
        target: bench::Target,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // One TLS crypto provider for kube, reqwest and the WebSocket client, chosen before any is built.
    gke_rl_ray::ensure_crypto_provider();
    // Exit codes: 0 success, 1 findings or a failed job, 2 errors, 130 detached by Ctrl-C.
    let result = Shell::new().map_err(anyhow::Error::from).and_then(|sh| match cli.command {
        Command::Render(args) => args.run().map(|()| 0),
        Command::Validate(args) => args.run().map(u8::from),
        Command::Blueprint(args) => args.run().map(|()| 0),
        Command::Deploy(args) => args.run(),
        Command::Destroy(args) => args.run(),
        Command::Submit(args) => args.run(),
        Command::Status(args) => args.run(),
        Command::Logs(args) => args.run(),
        Command::Stop(args) => args.run(),
        Command::Jobs(args) => args.run(),
        Command::Codegen { check } => codegen::run(check).map(|()| 0),
        Command::Wasm => wasm::run(&sh).map(|()| 0),
        Command::BrowserTest => web::browser_test(&sh).map(|_| 0),
        Command::ServeWeb { port } => web::serve(&sh, port).map(|()| 0),
        Command::Ci => ci::run(&sh).map(|()| 0),
        Command::Fuzz(args) => args.run(&sh).map(|()| 0),
        Command::Bench { target } => bench::run(&sh, target).map(|()| 0),
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            match e.downcast_ref::<report::Reported>() {
                Some(reported) => eprintln!("{reported}"),
                None => eprintln!("error: {e:#}"),
            }
            ExitCode::from(2)
        }
    }
}

/// The one runtime of the commands that talk to a cluster: multi-threaded, so the Ctrl-C
/// listener runs while a child process (gcluster) blocks the main thread.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?)
}

/// Parses `90s`, `30m`, `1h` or `500ms`, as kubectl's `--timeout` does.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    use std::time::Duration;
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let number: u64 = digits.parse().map_err(|_| format!("`{text}` is not a duration such as 90s, 30m or 1h"))?;
    match &text[digits.len()..] {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(number * 60)),
        "h" => Ok(Duration::from_secs(number * 3600)),
        _ => Err(format!("`{text}` needs a unit: ms, s, m or h")),
    }
}

/// An operations error for `main` to print: a positioned one rustc-style, a foreign state
/// with what to do, the rest as `explain` words them.
fn reported(error: gke_rl_ops::Error, explain: &dyn Fn(&gke_rl_ops::Error) -> String) -> anyhow::Error {
    match &error {
        gke_rl_ops::Error::Blueprint { path, text, diagnostic } => {
            report::Reported(report::Report { file: path, source: text, diagnostic }.to_string()).into()
        }
        gke_rl_ops::Error::ForeignState { path, .. } => {
            anyhow::anyhow!("{error}\nhelp: {} belongs to that deployment; use its config and project, or another --folder", path.display())
        }
        gke_rl_ops::Error::RuntimeEnv { .. } => anyhow::anyhow!("{error}"),
        _ => anyhow::anyhow!("{}", explain(&error)),
    }
}

/// The project root, wherever `cargo xtask` was started.
fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask/ has a parent").to_path_buf()
}
