//! `cargo xtask deploy` and `cargo xtask destroy`: the plans of `gke_rl::lifecycle`, run with
//! gcloud and gcluster (as processes) and kube-rs (in process), resumable through a state file.

mod deploy;
mod destroy;
#[cfg(test)]
mod tests;

use std::io::{IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use gke_rl::Deployment;
use gke_rl::lifecycle::{self, Command, State};
use xshell::Shell;

pub use deploy::DeployArgs;
pub use destroy::DestroyArgs;

/// Exit code of a run stopped by Ctrl-C.
pub const INTERRUPTED: u8 = 130;

/// Which deployment, in which project: flags shared by deploy and destroy.
#[derive(clap::Args)]
pub struct Target {
    #[command(flatten)]
    source: crate::config::Source,
    /// Google Cloud project [default: the config's project_id, else gcloud's configured project]
    #[arg(long, value_name = "ID")]
    project: Option<String>,
    /// Deployment folder (state file, patched blueprint, gcluster's files) [default: .gke-rl/<cluster_name>]
    #[arg(long, value_name = "DIR")]
    folder: Option<PathBuf>,
    /// Cluster Toolkit checkout [default: ./cluster-toolkit]
    #[arg(long, value_name = "DIR", env = "GKE_RL_TOOLKIT")]
    toolkit: Option<PathBuf>,
}

/// Where a run gets its effects from; tests swap the Kubernetes client, the console and Ctrl-C.
pub struct Env<'a> {
    /// Runs gcloud and gcluster (its PATH decides which ones) and reads secret variables.
    pub sh: &'a Shell,
    /// Progress and messages.
    pub console: Console,
    /// The Kubernetes client, made once credentials exist.
    pub kube: Kube,
    /// Ctrl-C.
    pub interrupt: Interrupt,
    /// How often to look at the pods.
    pub poll: Duration,
    /// Variables that hold secrets: removed from every child's environment.
    pub hidden: Vec<String>,
}

impl<'a> Env<'a> {
    /// The real effects: `sh`'s PATH, the kubeconfig, stderr, Ctrl-C. Call inside [`runtime`].
    fn real(sh: &'a Shell) -> Self {
        Env {
            sh,
            console: Console::stderr(),
            kube: Kube::FromKubeconfig,
            interrupt: Interrupt::on_ctrl_c(),
            poll: Duration::from_secs(2),
            hidden: Vec::new(),
        }
    }
}

/// How to reach the cluster's API server.
pub enum Kube {
    /// The kubeconfig `gcloud container clusters get-credentials` wrote.
    FromKubeconfig,
    /// A given client (tests: kube's mock service).
    #[cfg_attr(not(test), allow(dead_code))]
    Given(kube::Client),
}

impl Kube {
    /// A client for `context` of the kubeconfig (the one get-credentials wrote for the cluster,
    /// whatever the current context is).
    /// The credential plugin it runs does not inherit `hidden` (the secret variables).
    async fn client(&self, context: &str, hidden: &[String]) -> Result<kube::Client, gke_rl_kube::Error> {
        match self {
            Kube::FromKubeconfig => {
                let options = gke_rl_kube::Options { hidden_env: hidden.to_vec(), ..gke_rl_kube::Options::default() };
                Ok(gke_rl_kube::connect(None, Some(context), &options).await?.client)
            }
            Kube::Given(client) => Ok(client.clone()),
        }
    }
}

/// The fix for a Kubernetes failure that is about reaching the API at all, if it is one.
/// `get_credentials` is the command that writes the cluster's kubeconfig entry.
pub fn kube_help(error: &anyhow::Error, get_credentials: &str) -> Option<String> {
    use gke_rl_kube::Unreachable;
    let refresh = format!("refresh the cluster's credentials: {get_credentials}");
    let help = match error.chain().find_map(|e| e.downcast_ref::<gke_rl_kube::Error>())? {
        gke_rl_kube::Error::Kubeconfig(_) => format!("write the cluster's kubeconfig entry: {get_credentials}"),
        gke_rl_kube::Error::Unreachable { cause, .. } => match cause {
            Unreachable::Connect(detail) if detail.contains("certificate") => {
                format!("the kubeconfig's CA is not the cluster's (was it re-created?): {refresh}")
            }
            Unreachable::Connect(_) | Unreachable::NoAnswer(_) => {
                "the control plane answers only its authorized networks: if this machine's \
                 public address changed since deploy, run `cargo xtask deploy --authorized-cidr <your address>/32`, which updates them \
                 (`cargo xtask destroy` works without the API); if the cluster is gone, `cargo xtask destroy` cleans up the rest"
                    .to_owned()
            }
            Unreachable::Unauthorized(_) => format!("{refresh}\n  (if gcloud's login expired, run `gcloud auth login` first)"),
            Unreachable::Forbidden(_) => "the account gcloud uses may not do this in the cluster: grant it roles/container.developer \
                 on the project, or switch to an account that has it (`gcloud config set account …`)"
                .to_owned(),
            Unreachable::CredentialPlugin { missing: true, .. } => {
                format!(
                    "GKE kubeconfigs authenticate through {}: install it with {}",
                    lifecycle::AUTH_PLUGIN,
                    lifecycle::INSTALL_AUTH_PLUGIN
                )
            }
            Unreachable::CredentialPlugin { missing: false, .. } => {
                format!("{} gets its token from gcloud: run `gcloud auth login`, then try again", lifecycle::AUTH_PLUGIN)
            }
        },
        _ => return None,
    };
    Some(format!("help: {help}"))
}

/// Whether Ctrl-C was pressed. Child processes get the signal too (same process group), so a
/// running gcluster stops by itself; the run then saves its state and exits 130.
#[derive(Clone)]
pub struct Interrupt(tokio::sync::watch::Receiver<bool>);

impl Interrupt {
    /// Listens for Ctrl-C (must be called inside a multi-threaded runtime, so the listener runs
    /// while a child process blocks the main thread).
    pub fn on_ctrl_c() -> Self {
        let (set, interrupt) = Self::manual();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = set.send(true);
            }
        });
        interrupt
    }

    /// An interrupt set by sending `true`.
    pub fn manual() -> (tokio::sync::watch::Sender<bool>, Self) {
        let (set, seen) = tokio::sync::watch::channel(false);
        (set, Interrupt(seen))
    }

    fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    async fn wait(&mut self) {
        let _ = self.0.wait_for(|set| *set).await;
    }
}

/// Where progress goes: stderr, or a buffer in tests.
#[derive(Clone)]
pub struct Console {
    sink: Arc<Mutex<Box<dyn Write + Send>>>,
    terminal: bool,
}

impl Console {
    /// stderr, with a progress bar when it is a terminal.
    pub fn stderr() -> Self {
        Console { sink: Arc::new(Mutex::new(Box::new(std::io::stderr()))), terminal: std::io::stderr().is_terminal() }
    }

    /// A console that writes into `buffer`.
    #[cfg(test)]
    pub fn captured(buffer: Arc<Mutex<Vec<u8>>>) -> Self {
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        Console { sink: Arc::new(Mutex::new(Box::new(Shared(buffer)))), terminal: false }
    }

    fn say(&self, text: impl std::fmt::Display) {
        let mut sink = self.sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = writeln!(sink, "{text}");
    }
}

/// A deployment's inputs, resolved: the model, its project and folder, the plan's site.
struct Resolved {
    deployment: Deployment,
    source: String,
    site: lifecycle::Site,
}

impl Target {
    /// Loads the config and resolves the project (flag, config, gcloud) and the folders.
    /// Also hides the config's secret variables from every child process of `env`.
    /// The site's authorized CIDR is left empty: only deploy needs one.
    fn resolve(&self, env: &mut Env<'_>, download_dependencies: bool) -> anyhow::Result<Resolved> {
        let loaded = self.source.load()?;
        let deployment = loaded.deployment;
        env.hidden = lifecycle::secret_entries(&deployment).into_iter().map(|(_, variable, _)| variable.to_owned()).collect();
        let project_id = match (&self.project, &deployment.project.project_id) {
            (Some(flag), _) => flag.clone(),
            (None, Some(configured)) => configured.to_string(),
            (None, None) => {
                let configured = read(
                    env,
                    &Command { program: "gcloud".into(), args: vec!["config".into(), "get-value".into(), "project".into()], dir: None },
                );
                match configured.map(|p| p.trim().to_owned()) {
                    Ok(p) if !p.is_empty() && p != "(unset)" => p,
                    _ => bail!(
                        "no project: set project.project_id in the config, pass --project, or run `gcloud config set project PROJECT_ID`"
                    ),
                }
            }
        };
        let folder = match &self.folder {
            Some(folder) => folder.clone(),
            None => Path::new(".gke-rl").join(deployment.project.cluster_name.as_str()),
        };
        let folder = std::path::absolute(&folder).with_context(|| format!("cannot resolve {}", folder.display()))?;
        let toolkit = std::path::absolute(self.toolkit.clone().unwrap_or_else(|| PathBuf::from("cluster-toolkit")))?;
        let checkout_gcluster = toolkit.join("gcluster");
        let gcluster = if checkout_gcluster.is_file() { checkout_gcluster.display().to_string() } else { "gcluster".to_owned() };
        let site = lifecycle::Site {
            project_id,
            authorized_cidr: String::new(),
            toolkit: toolkit.display().to_string(),
            gcluster,
            folder: folder.display().to_string(),
            download_dependencies,
            skip_gcsfuse_validator: false,
        };
        Ok(Resolved { deployment, source: loaded.source, site })
    }
}

impl Resolved {
    /// The RayClusters of the deployment's namespace, through its kubeconfig context.
    async fn clusters(&self, env: &Env<'_>) -> anyhow::Result<gke_rl_kube::RayClusters> {
        let client = env.kube.client(&lifecycle::kube_context(&self.deployment, &self.site), &env.hidden).await?;
        Ok(gke_rl_kube::RayClusters::new(client, self.deployment.ray.namespace.as_str()))
    }

    /// `error`, with the fix when it is about reaching the cluster's API.
    fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        match kube_help(&error, &lifecycle::credentials(&self.deployment, &self.site.project_id).to_string()) {
            Some(help) => anyhow::anyhow!("{error:#}\n{help}"),
            None => error,
        }
    }

    /// The deployment folder (`Site::folder`, absolute).
    fn folder(&self) -> &Path {
        Path::new(&self.site.folder)
    }

    fn state_path(&self) -> PathBuf {
        PathBuf::from(lifecycle::Folder(&self.site.folder).state())
    }

    /// The state file, if there is one; refused when it is another deployment's.
    fn load_state(&self) -> anyhow::Result<Option<State>> {
        let path = self.state_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let state = State::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if let Some(mismatch) = state.mismatch(&self.deployment, &self.site.project_id) {
            bail!(
                "refusing to act: {mismatch}\nhelp: {} belongs to that deployment; use its config and project, or another --folder",
                path.display()
            );
        }
        Ok(Some(state))
    }

    fn save_state(&self, state: &State) -> anyhow::Result<()> {
        std::fs::create_dir_all(self.folder()).with_context(|| format!("cannot create {}", self.site.folder))?;
        crate::render::write_atomically(&self.state_path(), state.to_json().as_bytes(), false)
    }
}

/// Runs `command` in its directory, without the secret variables in its environment.
fn with_cmd<T>(env: &Env<'_>, command: &Command, run: impl FnOnce(xshell::Cmd<'_>) -> T) -> T {
    let _dir = command.dir.as_ref().map(|dir| env.sh.push_dir(dir));
    let mut cmd = env.sh.cmd(&command.program).args(&command.args).quiet();
    for variable in &env.hidden {
        cmd = cmd.env_remove(variable);
    }
    run(cmd)
}

/// Runs a read-only command; its stdout, or why it failed.
fn read(env: &Env<'_>, command: &Command) -> Result<String, String> {
    match with_cmd(env, command, |cmd| cmd.ignore_status().output()) {
        Ok(output) if output.status.success() => Ok(String::from_utf8_lossy(&output.stdout).into_owned()),
        Ok(output) => Err(format!("{} exited with {}: {}", command.program, output.status, String::from_utf8_lossy(&output.stderr).trim())),
        Err(e) => Err(format!("cannot run {}: {e}", command.program)),
    }
}

/// Runs a command with its output streamed to the terminal; `false` when it failed.
fn stream(env: &Env<'_>, command: &Command) -> bool {
    env.console.say(format_args!("  $ {command}"));
    with_cmd(env, command, |cmd| cmd.run().is_ok())
}

/// Asks before something costly or destructive; `--yes` answers for the user.
fn confirm(question: &str, yes: bool) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        bail!("{question}\nrefusing to go on without an answer: stdin is not a terminal; pass --yes");
    }
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// A multi-threaded runtime: the Ctrl-C listener runs while a child process blocks the main
/// thread.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?)
}

/// Parses `90s`, `30m`, `1h` or `500ms`, as kubectl's `--timeout` does.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
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

/// Formats a duration as "4.2s" or "12m03s".
fn took(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    if seconds < 60.0 { format!("{seconds:.1}s") } else { format!("{}m{:02}s", elapsed.as_secs() / 60, elapsed.as_secs() % 60) }
}
