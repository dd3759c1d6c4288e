//! Where an operation gets its effects: programs (gcloud, gcluster) and the variables they
//! see, the Kubernetes API, a clock and Ctrl-C. Tests and embedding tools swap each one.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use gke_rl::lifecycle::Command;
use tokio::sync::watch;

/// How long a query ([`Runner::read`]) may take: gcloud's slowest answer here is a project's
/// quotas, in seconds.
pub const READ_WITHIN: Duration = Duration::from_secs(120);

/// The process group of the child streaming now (its PID), 0 when none: where a signal that
/// stops the operation is passed on.
static STREAMING: AtomicI32 = AtomicI32::new(0);

/// The number of the signal that stopped the operation, 0 while none has: a child is not started
/// after it, and one started as it came is stopped by [`Processes::stream`] itself.
static STOPPING: AtomicI32 = AtomicI32::new(0);

/// Why a query ([`Runner::read`]) has no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The program could not be started (not on `PATH`, not executable) or waited for.
    #[error("cannot run {program}: {reason}")]
    NotRun {
        /// The program.
        program: String,
        /// Why.
        reason: String,
    },
    /// No whole answer came within the bound: what it was asked is unknown, not "not there".
    #[error("{program} did not answer{} within {} s{}", if *.cut { " in full" } else { "" }, .within.as_secs(), if *.cut { " (something it started keeps its output open)" } else { "" })]
    NoAnswer {
        /// The program.
        program: String,
        /// The bound.
        within: Duration,
        /// Whether it exited but something it started kept its output open.
        cut: bool,
    },
    /// It answered with a failure.
    #[error("{program} exited with {status}: {stderr}")]
    Failed {
        /// The program.
        program: String,
        /// Its exit status.
        status: String,
        /// What it wrote to stderr, trimmed.
        stderr: String,
    },
}

impl RunError {
    /// Whether gcloud's failure says the thing asked about does not exist: the one failure
    /// that proves absence (a refused login or role proves nothing).
    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self, RunError::Failed { stderr, .. } if not_found(stderr))
    }
}

/// Whether gcloud's error text says the thing asked about does not exist.
pub(crate) fn not_found(stderr: &str) -> bool {
    let lower = stderr.to_ascii_lowercase();
    lower.contains("not_found") || lower.contains("notfound") || lower.contains("not found") || lower.contains("404")
}

/// Runs programs and reads the variables of the environment they run in.
pub trait Runner: Send + Sync {
    /// Runs a command that only reads, without the variables in `hidden`; its stdout, or why
    /// it failed (its exit status and stderr).
    fn read(&self, command: &Command, hidden: &[String]) -> Result<String, RunError>;
    /// Runs a command with its output going to the user's terminal, without the variables in
    /// `hidden`; whether it succeeded.
    fn stream(&self, command: &Command, hidden: &[String]) -> bool;
    /// A variable of that environment, if set.
    fn var(&self, name: &str) -> Option<String>;
}

/// Real processes, found on `PATH`, in this process's environment plus `vars`.
#[derive(Clone, Debug, Default)]
pub struct Processes {
    /// Variables set (or, when `None`, removed) on top of this process's environment.
    pub vars: BTreeMap<String, Option<String>>,
}

impl Processes {
    fn command(&self, command: &Command, hidden: &[String]) -> std::process::Command {
        let mut process = std::process::Command::new(&command.program);
        process.args(&command.args);
        if let Some(dir) = &command.dir {
            process.current_dir(dir);
        }
        for (name, value) in &self.vars {
            match value {
                Some(value) => process.env(name, value),
                None => process.env_remove(name),
            };
        }
        for name in hidden {
            process.env_remove(name);
        }
        process
    }

    /// [`Runner::read`] within `within`.
    fn read_within(&self, command: &Command, hidden: &[String], within: Duration) -> Result<String, RunError> {
        let program = || command.program.clone();
        let spawned = self.command(command, hidden).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
        let mut child = spawned.map_err(|e| RunError::NotRun { program: program(), reason: e.to_string() })?;
        // Read on threads that hand over what they read by the deadline: a grandchild that
        // keeps a pipe open must not hold the answer.
        let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            let (send, receive) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(pipe) = pipe {
                    use std::io::Read as _;
                    let _ = pipe.take(16 << 20).read_to_end(&mut bytes);
                }
                let _ = send.send(bytes);
            });
            receive
        };
        let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
        let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
        let deadline = Instant::now() + within;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(RunError::NoAnswer { program: program(), within, cut: false });
                }
                Err(e) => return Err(RunError::NotRun { program: program(), reason: format!("cannot wait for it: {e}") }),
            }
        };
        let collect = |pipe: std::sync::mpsc::Receiver<Vec<u8>>| pipe.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        // An answer cut short is no answer: an empty one would read as "nothing there".
        let (Ok(stdout), Ok(stderr)) = (collect(stdout), collect(stderr)) else {
            return Err(RunError::NoAnswer { program: program(), within, cut: true });
        };
        if status.success() {
            Ok(String::from_utf8_lossy(&stdout).into_owned())
        } else {
            Err(RunError::Failed {
                program: program(),
                status: status.to_string(),
                stderr: String::from_utf8_lossy(&stderr).trim().to_owned(),
            })
        }
    }
}

impl Runner for Processes {
    /// Bounded like a call: a query (gcloud asking the network, a prompt nobody answers) that
    /// takes longer than [`READ_WITHIN`] is killed, and each of its outputs is read up to 16 MiB.
    fn read(&self, command: &Command, hidden: &[String]) -> Result<String, RunError> {
        self.read_within(command, hidden, READ_WITHIN)
    }

    /// The child gets a process group of its own (with everything it starts: gcluster's
    /// terraform), so that a signal to gke-rl (Ctrl-C, SIGTERM, SIGHUP) reaches all of it through
    /// [`Interrupt`] and none of it is orphaned. Its stdin is empty and its output comes through
    /// pipes that gke-rl copies out: a background group that read the terminal, or wrote to one
    /// set to `stty tostop`, would stop.
    fn stream(&self, command: &Command, hidden: &[String]) -> bool {
        use std::os::unix::process::CommandExt as _;
        if STOPPING.load(Ordering::SeqCst) != 0 {
            return false;
        }
        let spawned =
            self.command(command, hidden).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn();
        let Ok(mut child) = spawned else { return false };
        let copies = [
            child.stdout.take().map(|pipe| copy_out(pipe, std::io::stdout)),
            child.stderr.take().map(|pipe| copy_out(pipe, std::io::stderr)),
        ];
        let group = i32::try_from(child.id()).unwrap_or(0);
        STREAMING.store(group, Ordering::SeqCst);
        // The handler stores STOPPING before it reads STREAMING: either it saw this child, or
        // this sees its signal.
        let stopping = STOPPING.load(Ordering::SeqCst);
        if let (Some(group), Some(signal)) = (rustix::process::Pid::from_raw(group), signal_of(stopping)) {
            let _ = rustix::process::kill_process_group(group, signal);
        }
        let status = child.wait();
        STREAMING.store(0, Ordering::SeqCst);
        // What it wrote is out before gke-rl says more; something it started that keeps a pipe
        // open does not hold gke-rl (its copy is left to end with it).
        for copy in copies.into_iter().flatten() {
            let _ = copy.recv_timeout(Duration::from_secs(5));
        }
        status.is_ok_and(|status| status.success())
    }

    fn var(&self, name: &str) -> Option<String> {
        match self.vars.get(name) {
            Some(value) => value.clone(),
            None => std::env::var(name).ok(),
        }
    }
}

/// Copies a child's output pipe to `to` on a thread, as it comes; the receiver hears when the
/// pipe has closed.
fn copy_out<W: std::io::Write + 'static>(mut pipe: impl std::io::Read + Send + 'static, to: fn() -> W) -> std::sync::mpsc::Receiver<()> {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        while let Ok(read @ 1..) = pipe.read(&mut buffer) {
            let mut out = to();
            // A closed terminal loses the output, never the child: it is read to its end.
            let _ = out.write_all(&buffer[..read]).and_then(|()| out.flush());
        }
        let _ = done.send(());
    });
    finished
}

/// The time, for step durations and how long jobs have run.
pub trait Clock: Send + Sync {
    /// A monotonic instant.
    fn now(&self) -> Instant;
    /// Milliseconds since the Unix epoch, as Ray reports job times.
    fn unix_millis(&self) -> u64;
}

/// The system's clocks.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn unix_millis(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// How to reach the cluster's API server.
#[derive(Clone)]
pub enum Kube {
    /// Through the kubeconfig (`KUBECONFIG`, else `~/.kube/config`) that
    /// `gcloud container clusters get-credentials` writes.
    FromKubeconfig,
    /// A given client (tests: the fake API server).
    Given(kube::Client),
}

impl Kube {
    /// A client for `context` (the current one when `None`); the credential plugin it runs does
    /// not inherit `hidden`.
    pub async fn client(&self, context: Option<&str>, hidden: &[String]) -> Result<kube::Client, gke_rl_kube::Error> {
        match self {
            Kube::FromKubeconfig => {
                let options = gke_rl_kube::Options { hidden_env: hidden.to_vec(), ..gke_rl_kube::Options::default() };
                Ok(gke_rl_kube::connect(None, context, &options).await?.client)
            }
            Kube::Given(client) => Ok(client.clone()),
        }
    }
}

/// What stops a running operation early: Ctrl-C, SIGTERM or SIGHUP, or what a test or an
/// embedding tool sends.
#[derive(Clone)]
pub enum Interrupt {
    /// SIGINT, SIGTERM and SIGHUP, each passed on to the child that streams at the time. An
    /// operation listens only from the moment it can stop cleanly; before that a signal ends
    /// the process as usual.
    Signals,
    /// Set by sending the signal's number (`2`, as Ctrl-C).
    Manual(watch::Receiver<Option<i32>>),
}

impl Interrupt {
    /// An interrupt set by sending a signal's number.
    pub fn manual() -> (watch::Sender<Option<i32>>, Interrupt) {
        let (set, seen) = watch::channel(None);
        (set, Interrupt::Manual(seen))
    }

    /// Starts listening. A signal then ends the operation cleanly instead of the process.
    /// Call inside a tokio runtime.
    pub(crate) fn arm(&self) -> Result<Armed, crate::CommonError> {
        self.listen().map_err(|source| crate::CommonError::Local { what: "cannot listen for Ctrl-C".into(), source })
    }

    fn listen(&self) -> std::io::Result<Armed> {
        match self {
            Interrupt::Manual(seen) => Ok(Armed(seen.clone())),
            Interrupt::Signals => {
                use tokio::signal::unix::{Signal, SignalKind, signal};
                // Registered now, synchronously: a signal from here on is ours. A hangup this
                // process was started ignoring (`nohup`) stays ignored, as the user asked.
                let mut interrupt = Some(signal(SignalKind::interrupt())?);
                let mut terminate = Some(signal(SignalKind::terminate())?);
                let mut hangup = if hangup_ignored_at_start() { None } else { Some(signal(SignalKind::hangup())?) };
                async fn received(signal: &mut Option<Signal>) -> Option<()> {
                    match signal {
                        Some(signal) => signal.recv().await,
                        None => std::future::pending().await,
                    }
                }
                let (set, seen) = watch::channel(None);
                tokio::spawn(async move {
                    loop {
                        let number = tokio::select! {
                            Some(()) = received(&mut interrupt) => 2,
                            Some(()) = received(&mut terminate) => 15,
                            Some(()) = received(&mut hangup) => 1,
                            else => break,
                        };
                        // Recorded before the child is signalled: its failure is then always
                        // seen as the stop it is. The first signal names the stop.
                        let _ = STOPPING.compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst);
                        set.send_if_modified(|first| first.is_none() && first.replace(number).is_none());
                        if let (Some(group), Some(signal)) =
                            (rustix::process::Pid::from_raw(STREAMING.load(Ordering::SeqCst)), signal_of(number))
                        {
                            let _ = rustix::process::kill_process_group(group, signal);
                        }
                    }
                });
                Ok(Armed(seen))
            }
        }
    }
}

/// Whether SIGHUP was ignored when this process started (`nohup` starts it so, and a process
/// inherits ignored signals). Read once, before any listener replaces the disposition; Linux
/// says in /proc/self/status, elsewhere it is taken as not ignored.
fn hangup_ignored_at_start() -> bool {
    static IGNORED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IGNORED.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let mask = status.lines().find_map(|line| line.strip_prefix("SigIgn:")).and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok());
        mask.is_some_and(|mask| mask & 1 != 0)
    })
}

/// The signal numbered `number` (2, 15 or 1), for passing on.
fn signal_of(number: i32) -> Option<rustix::process::Signal> {
    match number {
        2 => Some(rustix::process::Signal::INT),
        15 => Some(rustix::process::Signal::TERM),
        1 => Some(rustix::process::Signal::HUP),
        _ => None,
    }
}

/// An interrupt being listened for.
#[derive(Clone)]
pub(crate) struct Armed(watch::Receiver<Option<i32>>);

impl Armed {
    pub(crate) fn is_set(&self) -> bool {
        self.0.borrow().is_some()
    }

    /// The number of the signal that set it (2 for Ctrl-C), if set.
    pub(crate) fn signal(&self) -> Option<i32> {
        *self.0.borrow()
    }

    /// Whether the interrupt is set after a child process that `succeeded` or not: one that a
    /// signal ended fails as the signal reaches this process, before the signal's task may have
    /// run, so after a failure it gets a moment to arrive.
    pub(crate) async fn is_set_after(&mut self, succeeded: bool) -> bool {
        if !succeeded {
            let _ = tokio::time::timeout(std::time::Duration::from_millis(500), self.wait()).await;
        }
        self.is_set()
    }

    /// Resolves when the interrupt is set; never, when nothing can set it any more.
    pub(crate) async fn wait(&mut self) {
        if self.0.wait_for(Option::is_some).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Every effect an operation may have.
#[derive(Clone)]
pub struct Env {
    /// gcloud, gcluster and the variables they (and the Secret step) read.
    pub runner: Arc<dyn Runner>,
    /// The Kubernetes API.
    pub kube: Kube,
    /// Durations.
    pub clock: Arc<dyn Clock>,
    /// What stops a long operation early.
    pub interrupt: Interrupt,
    /// How often to look at pods and jobs.
    pub poll: Duration,
    /// How long a port-forward to the head tries to reach it for each connection (a head pod
    /// that is restarting comes back within it).
    pub reconnect: Duration,
}

impl Env {
    /// The real effects: processes on `PATH`, the kubeconfig, the system clock, Ctrl-C.
    pub fn real() -> Self {
        Env {
            runner: Arc::new(Processes::default()),
            kube: Kube::FromKubeconfig,
            clock: Arc::new(SystemClock),
            interrupt: Interrupt::Signals,
            poll: Duration::from_secs(2),
            reconnect: Duration::from_secs(30),
        }
    }

    /// A variable of the environment the runner's programs see, if set and not empty.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        self.runner.var(name).filter(|v| !v.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 31, item 15: a query that never answers (gcloud on a dead network) is killed at its
    /// bound instead of holding preflight; one that answers gives its output.
    #[test]
    fn a_query_is_bounded_in_time() {
        let run = |program: &str, args: &[&str]| Command {
            program: program.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            dir: None,
        };
        let started = Instant::now();
        let error = Processes::default().read_within(&run("sleep", &["30"]), &[], Duration::from_secs(1)).unwrap_err().to_string();
        assert!(error.contains("sleep did not answer within 1 s"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        assert_eq!(Processes::default().read_within(&run("echo", &["hi"]), &[], Duration::from_secs(10)), Ok("hi\n".to_owned()));
        // A grandchild keeps the output open: the answer is unknown, never an empty one.
        let cut = Processes::default()
            .read_within(&run("sh", &["-c", "sleep 30 & echo hi"]), &[], Duration::from_secs(1))
            .unwrap_err()
            .to_string();
        assert!(cut.contains("did not answer in full within 1 s"), "{cut}");
        let failed = Processes::default().read_within(&run("sh", &["-c", "echo no >&2; exit 3"]), &[], Duration::from_secs(10));
        assert!(failed.is_err_and(|e| e.to_string().contains("exit status: 3: no")));
    }
}
