//! The `gke-rl` command line: arguments, the console rendering of the operations' events,
//! prompts and exit codes, over the SDK (`gke-rl`) and the operations (`gke-rl-ops`).
//!
//! The binary is `gke-rl`; `cargo xtask <command>` runs the same [`Command`]s through [`run`],
//! so the two cannot drift. Exit codes: 0 success, 1 findings, a failed job or a failed deploy
//! step, 2 usage or I/O errors, 130 when Ctrl-C detaches from a job or interrupts deploy/destroy,
//! 143 or 129 when SIGTERM or SIGHUP interrupts deploy/destroy.

mod blueprint;
mod cluster;
mod config;
mod console;
mod cost;
mod diagnostics;
mod fabric;
mod jobs;
mod render;
mod storage;
mod terminal;
mod validate;

use std::process::ExitCode;
use std::sync::OnceLock;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

/// Reproducible, checked NeMo-RL GRPO training on GKE with KubeRay and Managed Lustre.
#[derive(Parser)]
#[command(name = "gke-rl", bin_name = "gke-rl", version, long_version = long_version())]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The user commands.
#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once
#[allow(missing_docs)] // a variant's doc comment would replace its arguments' doc as its help
pub enum Command {
    Render(render::Args),
    Validate(validate::Args),
    Blueprint(blueprint::Args),
    Cost(cost::Args),
    Deploy(cluster::DeployArgs),
    Destroy(cluster::DestroyArgs),
    Export(cluster::ExportArgs),
    Suspend(cluster::SuspendArgs),
    Resume(cluster::ResumeArgs),
    Submit(jobs::SubmitArgs),
    Status(jobs::StatusArgs),
    Logs(jobs::LogsArgs),
    Report(jobs::ReportArgs),
    Stop(jobs::StopArgs),
    Jobs(jobs::JobsArgs),
    FabricCheck(fabric::Args),
    StorageCheck(storage::Args),
    /// Print what gke-rl knows: its models, GPU families and NeMo-RL releases (Markdown)
    Models,
    /// Print the JSON schema of the config file (gke-rl.yaml), every key with its type and default
    Schema,
    /// Print a shell completion script (bash, zsh or fish) to stdout
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The command that regenerates rendered files, named in their headers: the same from every
/// front end, so a render's bytes do not depend on how it was run.
pub const REGENERATE: &str = "gke-rl render";

/// The artifacts of `deployment`, loaded from `source`, with the CLI's headers.
pub fn artifacts(deployment: &gke_rl::Deployment, source: &str) -> anyhow::Result<gke_rl::Artifacts> {
    Ok(gke_rl::render(deployment, &gke_rl::RenderOptions { source, regenerate: REGENERATE })?)
}

/// The name users type for this CLI, in hints and next steps: `gke-rl` or `cargo xtask`.
pub fn name() -> &'static str {
    NAME.get().copied().unwrap_or("gke-rl")
}

static NAME: OnceLock<&'static str> = OnceLock::new();

/// `gke-rl`'s `main`: parses the arguments and runs the command.
pub fn main() -> ExitCode {
    // `cargo xtask <command>` runs this binary from a clone, where hints name that command.
    let name = match std::env::var(CALLED_AS).as_deref() {
        Ok(XTASK) => XTASK,
        _ => "gke-rl",
    };
    let matches = Cli::command().bin_name(name).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    run(cli.command, name)
}

/// The variable `cargo xtask` sets to [`XTASK`] when it runs this binary for a user command.
pub const CALLED_AS: &str = "GKE_RL_CALLED_AS";
/// How a clone calls the user commands.
pub const XTASK: &str = "cargo xtask";

/// Runs `command` as the CLI called `name` would, printing errors, and gives its exit code.
fn run(command: Command, name: &'static str) -> ExitCode {
    let _ = NAME.set(name);
    // One TLS crypto provider for kube, reqwest and the WebSocket client, chosen before any is built.
    gke_rl_ray::ensure_crypto_provider();
    let result = match command {
        Command::Render(args) => args.run(),
        Command::Validate(args) => args.run().map(u8::from),
        Command::Blueprint(args) => args.run().map(|()| 0),
        Command::Cost(args) => args.run().map(|()| 0),
        Command::Deploy(args) => args.run(),
        Command::Destroy(args) => args.run(),
        Command::Export(args) => args.run(),
        Command::Suspend(args) => args.run(),
        Command::Resume(args) => args.run(),
        Command::Submit(args) => args.run(),
        Command::Status(args) => args.run(),
        Command::Logs(args) => args.run(),
        Command::Report(args) => args.run(),
        Command::Stop(args) => args.run(),
        Command::Jobs(args) => args.run(),
        Command::FabricCheck(args) => args.run(),
        Command::StorageCheck(args) => args.run(),
        // The generated files, built in: an installed binary has no clone beside it.
        // `cargo xtask codegen` writes them and its check mode keeps them current.
        Command::Models => {
            // The generated page's first line is its maintainers' note, an HTML comment.
            let page = include_str!("../../../docs/models.md");
            terminal::out(page.split_once("-->\n").map_or(page, |(_, rest)| rest));
            Ok(0)
        }
        Command::Schema => {
            terminal::out(include_str!("../../../schemas/gke-rl.schema.json"));
            Ok(0)
        }
        Command::Completions { shell } => {
            terminal::out(&completions(shell));
            Ok(0)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            match e.downcast_ref::<diagnostics::Reported>() {
                Some(reported) => crate::terminal::errln!("{}", terminal::shown(&reported.0)),
                None => crate::terminal::errln!("error: {}", terminal::shown(&format!("{e:#}"))),
            }
            ExitCode::from(2)
        }
    }
}

/// `--version`: the version, the commit it was built from, and the upstream versions it knows.
fn long_version() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let images: Vec<String> = gke_rl::knowledge::known_images().map(|(image, ray)| format!("{image} (Ray {ray})")).collect();
        let releases: Vec<&str> = gke_rl::knowledge::NEMO_RL_RELEASES.iter().map(|r| r.tag).collect();
        format!(
            "{} (commit {})\nknows: NeMo-RL images {}; KubeRay {} (its RayCluster CRD); NeMo-RL {} (their GRPO launchers and recipe keys); {} models (`gke-rl models`)",
            env!("CARGO_PKG_VERSION"),
            env!("GKE_RL_COMMIT"),
            images.join(", "),
            gke_rl::knowledge::KUBERAY_VERSION,
            releases.join(", "),
            gke_rl::knowledge::MODELS.len(),
        )
    })
}

/// The one runtime of the commands that talk to a cluster: multi-threaded, so the Ctrl-C
/// listener runs while a child process (gcluster) blocks the main thread.
fn runtime() -> anyhow::Result<Runtime> {
    Ok(Runtime(tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?))
}

/// A runtime that runs one future and then stops, waiting at most a second for blocking work:
/// a credential plugin that never answers holds a blocking thread, and must not hold the exit
/// (tokio's own drop waits for it forever).
struct Runtime(tokio::runtime::Runtime);

impl Runtime {
    fn block_on<F: std::future::Future>(self, future: F) -> F::Output {
        let output = self.0.block_on(future);
        self.0.shutdown_timeout(std::time::Duration::from_secs(1));
        output
    }
}

/// Parses `90s`, `30m`, `1h` or `500ms`, as kubectl's `--timeout` does, up to a week: longer
/// is a typo, and deadlines past the clock's range would end the process.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    use std::time::Duration;
    const LONGEST: Duration = Duration::from_secs(7 * 24 * 3600);
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let number: u64 = digits.parse().map_err(|_| format!("`{text}` is not a duration such as 90s, 30m or 1h"))?;
    let millis_per_unit: u64 = match &text[digits.len()..] {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(format!("`{text}` needs a unit: ms, s, m or h")),
    };
    match number.checked_mul(millis_per_unit).map(Duration::from_millis) {
        Some(duration) if duration <= LONGEST => Ok(duration),
        _ => Err(format!("`{text}` is longer than a week (168h), the longest gke-rl waits")),
    }
}

/// The exit code of a run a signal stopped or detached, as a shell reports one it killed: 128 +
/// its number (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
fn interrupted(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(130)
}

/// Parses a size in bytes with K, M, G or T (powers of 1024), from 1 byte to `max`.
fn parse_size(text: &str, max: u64) -> Result<u64, String> {
    let (digits, shift) = match text.chars().last() {
        Some('K' | 'k') => (&text[..text.len() - 1], 10),
        Some('M' | 'm') => (&text[..text.len() - 1], 20),
        Some('G' | 'g') => (&text[..text.len() - 1], 30),
        Some('T' | 't') => (&text[..text.len() - 1], 40),
        _ => (text, 0),
    };
    let number: u64 = digits.parse().map_err(|_| format!("`{text}` is not a size such as 1M, 256M or 1G"))?;
    match number.checked_shl(shift).filter(|b| b >> shift == number) {
        Some(bytes) if (1..=max).contains(&bytes) => Ok(bytes),
        _ => Err(format!("`{text}` is outside 1 byte to {}", gke_rl_in_cluster::fabric::size(max).replace(' ', "").replace("iB", ""))),
    }
}

/// Parses a fraction between 0 and 1.
fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("`{text}` is not a fraction between 0 and 1, such as 0.6")),
    }
}

/// An operations error for printing: a positioned one rustc-style, a foreign state with what
/// to do, the rest as `explain` words them.
fn reported(error: impl Into<gke_rl_ops::Error>, explain: &dyn Fn(&gke_rl_ops::Error) -> String) -> anyhow::Error {
    let error = error.into();
    match &error {
        gke_rl_ops::Error::Lifecycle(gke_rl_ops::LifecycleError::Blueprint { path, text, diagnostic }) => {
            diagnostics::Reported(diagnostics::Located { file: path, source: text, diagnostic }.to_string()).into()
        }
        gke_rl_ops::Error::Lifecycle(gke_rl_ops::LifecycleError::ForeignState { path, .. }) => {
            anyhow::anyhow!("{error}\nhelp: {} belongs to that deployment; use its config and project, or another --folder", path.display())
        }
        gke_rl_ops::Error::Jobs(gke_rl_ops::JobError::RuntimeEnv { .. }) => anyhow::anyhow!("{error}"),
        _ => anyhow::anyhow!("{}", explain(&error)),
    }
}

/// The completion script of `gke-rl` for `shell`. clap_complete 4 names bash's subcommand states
/// inconsistently for a binary whose name has a hyphen (`gke__rl__subcmd__x` where it sets them,
/// `gke__subcmd__rl__subcmd__x` where it matches them: clap-rs/clap#6421), so no option of a
/// subcommand would complete: the names are made one.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gke-rl", &mut script);
    let script = String::from_utf8_lossy(&script);
    match shell {
        clap_complete::Shell::Bash => script.replace("gke__subcmd__rl", "gke__rl"),
        _ => script.into_owned(),
    }
}

/// The options `T` with their defaults, as its command without flags has them (what deploy's
/// `--fabric-check` and `--storage-check` run).
pub(crate) fn defaults<T: clap::Args>() -> T {
    #[derive(clap::Parser)]
    struct Defaults<T: clap::Args> {
        #[command(flatten)]
        options: T,
    }
    <Defaults<T> as clap::Parser>::parse_from(["gke-rl"]).options
}
