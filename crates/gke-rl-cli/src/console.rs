//! The terminal front end of the operations: each typed event as the line people read, a
//! progress bar while pods come up, the questions asked before acting, and the fixes worded
//! with this CLI's commands.

use std::io::{IsTerminal as _, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use gke_rl::lifecycle::{self, Command};
use gke_rl_ops::{Event, Fix, JobEvent, LifecycleEvent, Problem, Progress, Question, Unanswerable};

use crate::diagnostics::Located;

/// Where progress goes: stderr (with a bar on a terminal), or a buffer in tests. Job logs go
/// to stdout.
#[derive(Clone)]
pub struct Console {
    sink: Arc<Mutex<Box<dyn Write + Send>>>,
    terminal: bool,
    /// Answers yes to every question (`--yes`).
    yes: bool,
    bar: Arc<Mutex<Option<indicatif::ProgressBar>>>,
    /// `--quiet`: a followed job's log is not shown, its progress line is.
    quiet_log: Arc<AtomicBool>,
    /// The newest step a plain progress line was printed for (off a terminal, one a step).
    printed_step: Arc<AtomicU64>,
    /// Off a terminal, the progress line held until the log is between two steps, and whether
    /// the log written so far ends a line.
    held: Arc<Mutex<Held>>,
}

/// A plain progress line waiting for a place in the log where no block of NeMo-RL's is cut.
#[derive(Default)]
struct Held {
    line: Option<String>,
    log_mid_line: bool,
}

impl Console {
    /// stderr, with a progress bar when it is a terminal.
    pub fn stderr(yes: bool) -> Self {
        Console::new(Box::new(std::io::stderr()), std::io::stderr().is_terminal(), yes)
    }

    fn new(sink: Box<dyn Write + Send>, terminal: bool, yes: bool) -> Self {
        Console {
            sink: Arc::new(Mutex::new(sink)),
            terminal,
            yes,
            bar: Arc::default(),
            quiet_log: Arc::default(),
            printed_step: Arc::default(),
            held: Arc::default(),
        }
    }

    /// Hides the job's log from here on (`--quiet`); the progress line stays.
    pub fn hide_job_log(&self) {
        self.quiet_log.store(true, Ordering::Relaxed);
    }

    /// A run's progress: on a terminal, one status line under the log, redrawn; elsewhere, a
    /// plain line once a step, put where the log (on stdout, maybe the same pipe) is between two
    /// steps rather than inside a step's blocks.
    fn run_progress(&self, progress: &gke_rl_in_cluster::run_report::Progress) {
        let line = crate::terminal::shown(&progress.line());
        if self.terminal {
            let mut bar = self.bar();
            let bar = bar.get_or_insert_with(|| {
                let bar = indicatif::ProgressBar::new_spinner();
                if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg}") {
                    bar.set_style(style);
                }
                bar.enable_steady_tick(Duration::from_millis(250));
                bar
            });
            bar.set_message(line);
        } else if let Some(step) = progress.step
            && self.printed_step.swap(step, Ordering::Relaxed) != step
        {
            if self.quiet_log.load(Ordering::Relaxed) {
                self.say(line);
            } else {
                self.held().line = Some(line);
            }
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Off a terminal: `text` of the log, with the held progress line said before the first
    /// step header in it (a header cut at the end of `text` counts).
    fn log_between_steps(&self, text: &str) {
        let mut held = self.held();
        let mut start = 0;
        let split = loop {
            let end = text[start..].find('\n').map_or(text.len(), |i| start + i + 1);
            let line = &text[start..end];
            let at_line_start = start > 0 || !held.log_mid_line;
            let header = line.contains(gke_rl_in_cluster::run_log::STEP_HEADER)
                || (end == text.len()
                    && line.trim_start().starts_with('=')
                    && gke_rl_in_cluster::run_log::STEP_HEADER.starts_with(line.trim_start()));
            if at_line_start && header && held.line.is_some() {
                break Some(start);
            }
            if end == text.len() {
                break None;
            }
            start = end;
        };
        held.log_mid_line = !text.is_empty() && !text.ends_with('\n') || (text.is_empty() && held.log_mid_line);
        match split.and_then(|at| Some((at, held.line.take()?))) {
            Some((at, line)) => {
                crate::terminal::out(&text[..at]);
                self.say(line);
                crate::terminal::out(&text[at..]);
            }
            None => crate::terminal::out(text),
        }
    }

    /// A chunk of a job's log to stdout, above the progress line when there is one.
    fn job_log(&self, text: &str) {
        if self.quiet_log.load(Ordering::Relaxed) {
            return;
        }
        let bar = self.bar().clone();
        match bar {
            Some(bar) => bar.suspend(|| crate::terminal::out(text)),
            None => self.log_between_steps(text),
        }
    }

    /// A console that writes into `buffer` and answers yes.
    #[cfg(test)]
    pub fn captured(buffer: Arc<Mutex<Vec<u8>>>) -> Self {
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        Console::new(Box::new(Shared(buffer)), false, true)
    }

    /// Writes a line (above the bar, when there is one).
    pub fn say(&self, text: impl std::fmt::Display) {
        let text = crate::terminal::shown(&text.to_string());
        if let Some(bar) = self.bar().as_ref() {
            bar.println(&text);
            return;
        }
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(sink, "{text}");
    }

    fn bar(&self) -> MutexGuard<'_, Option<indicatif::ProgressBar>> {
        self.bar.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn pods(&self, ready: u32, wanted: u32) {
        if !self.terminal {
            self.say(format_args!("  {ready}/{wanted} pods Ready"));
            return;
        }
        let mut bar = self.bar();
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(u64::from(wanted));
            let style =
                indicatif::ProgressStyle::with_template("  [{bar:30}] {pos}/{len} pods Ready ({elapsed})").map(|s| s.progress_chars("=> "));
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_secs(1));
            bar
        });
        bar.set_position(u64::from(ready));
    }

    fn finish_bar(&self) {
        if let Some(bar) = self.bar().take() {
            bar.finish_and_clear();
        }
    }

    /// Ends a run's progress line, leaving its last words as a line of their own.
    pub fn end_progress(&self) {
        let held = self.held().line.take();
        if let Some(line) = held {
            self.say(line);
        }
        let Some(bar) = self.bar().take() else { return };
        let last = bar.message();
        bar.finish_and_clear();
        if !last.is_empty() {
            self.say(last);
        }
    }
}

impl Progress for Console {
    fn event(&self, event: Event<'_>) {
        match event {
            Event::Lifecycle(event) => self.lifecycle(event),
            Event::Jobs(event) => self.job(event),
            _ => {}
        }
    }

    fn confirm(&self, question: &Question<'_>) -> Result<bool, Unanswerable> {
        let asked = match question {
            Question::Create { what } => (*what).to_owned(),
            Question::Destroy { preview } => {
                self.say(preview);
                "delete all of this?".to_owned()
            }
            _ => return Err(Unanswerable("a question this version cannot ask".into())),
        };
        if self.yes {
            return Ok(true);
        }
        if !std::io::stdin().is_terminal() {
            return Err(Unanswerable("stdin is not a terminal; pass --yes".into()));
        }
        crate::terminal::err(&format!("{asked} [y/N] "));
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer).map_err(|e| Unanswerable(format!("cannot read the answer: {e}")))?;
        Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
    }
}

impl Console {
    /// Words what happened to the cluster and its objects.
    fn lifecycle(&self, event: LifecycleEvent<'_>) {
        match event {
            LifecycleEvent::StepStarted(step) => self.say(format_args!("→ {}", step.title())),
            LifecycleEvent::StepDone { step, took } => {
                self.finish_bar();
                self.say(format_args!("✓ {} ({})", step.title(), gke_rl_ops::took(took)));
            }
            LifecycleEvent::StepDoneBefore(step) => self.say(format_args!("✓ {} (done before)", step.title())),
            LifecycleEvent::Running(command) => self.say(format_args!("  $ {command}")),
            LifecycleEvent::Account(account) => self.say(format_args!("  gcloud account: {account}")),
            LifecycleEvent::ExistingCluster { cluster, version, gpu_pool, head_pool, fabric, addons_off } => {
                let addons = if addons_off.is_empty() { "on".to_owned() } else { format!("off, turned on at provision: {}", addons_off.join(", ")) };
                self.say(format_args!(
                    "  existing cluster {cluster} (GKE {version}): GPU workers on node pool {gpu_pool}, the head on {head_pool}\n  \
                     fabric: {fabric}\n  add-ons RayOperator and LustreCsiDriver: {addons}"
                ));
            }
            LifecycleEvent::NodesUnlisted { cluster, reason } => self.say(format_args!(
                "  cannot list the nodes of cluster {cluster} ({reason}): its pools are taken at the sizes they were made with, \
                 as gcloud describes them"
            )),
            LifecycleEvent::NotOurs { what } => self.say(format_args!("  kept: {what}")),
            LifecycleEvent::PoolShort { pool, listed, made } => self.say(format_args!(
                "  warning: node pool {pool} has {listed} of the {made} nodes it was made with: preempted Spot nodes and repairs \
                 come back by themselves; after a resize down, the workers without a node wait Pending"
            )),
            LifecycleEvent::AuthorizedCidr { cidr, detected_from: Some(url) } => self.say(format_args!(
                "authorized CIDR: {cidr} (this machine's public address, from {url}); pass --authorized-cidr to choose another"
            )),
            LifecycleEvent::AuthorizedCidr { cidr, detected_from: None } => self.say(format_args!("  authorized CIDR: {cidr}")),
            LifecycleEvent::WideAuthorizedCidr { cidr } => {
                self.say(format_args!("warning: authorized CIDR {cidr}: {}", gke_rl::model::Cidr::WIDE_RISK))
            }
            LifecycleEvent::AuthorizedCidrChanged { from, to } => self.say(format_args!(
                "the authorized CIDR changes from {from} to {to}: gcluster runs again to update the control plane's authorized networks"
            )),
            LifecycleEvent::AddressUnknown { cidr, reason } => {
                self.say(format_args!("  cannot tell whether this machine is inside the authorized CIDR {cidr}: {reason}"))
            }
            LifecycleEvent::GcsfuseValidatorSkipped { project, create_role } => self.say(format_args!(
                "  the custom role {} does not exist in {project}: gcluster's {} validator is skipped, and the blueprint's GCS Fuse\n  \
                 volumes (training and checkpoint buckets; not Lustre) may fail to mount. To create the role:\n    {create_role}\n  \
                 then grant it to service-PROJECT_NUMBER@container-engine-robot.iam.gserviceaccount.com",
                lifecycle::GCSFUSE_ROLE,
                lifecycle::GCSFUSE_VALIDATOR,
            )),
            LifecycleEvent::Unlocked { folder, why } => {
                self.say(format_args!("warning: cannot lock {} ({why}); going on without the lock", folder.display()));
            }
            LifecycleEvent::ConfigChanged => {
                self.say("the config or the blueprint changed since the last deploy: running the steps from render again")
            }
            LifecycleEvent::RayClusterGone { name } => self.say(format_args!("RayCluster {name} is gone: applying it again")),
            LifecycleEvent::PodsNotAllReady { name, ready, wanted, state } => {
                self.say(format_args!("RayCluster {name} has {ready}/{wanted} pods Ready ({}): waiting for them again", state.describe()))
            }
            LifecycleEvent::SecretApplied { namespace, name, keys } => {
                self.say(format_args!("  Secret {namespace}/{name} holds {}", keys.join(", ")))
            }
            LifecycleEvent::RayTokenSecret { namespace, name, created: true } => self.say(format_args!(
                "  Secret {namespace}/{name} holds a new cluster token: with tokens, only its holders reach the Jobs API; it signs the run records"
            )),
            LifecycleEvent::RayTokenSecret { namespace, name, created: false } => {
                self.say(format_args!("  Secret {namespace}/{name} keeps the cluster's token"))
            }
            LifecycleEvent::PodsWithoutToken { namespace, name } => self.say(format_args!(
                "  ! RayCluster {namespace}/{name} ran without token authentication; its running pods keep running without it until they restart: `gke-rl suspend`, then `gke-rl resume`"
            )),
            LifecycleEvent::RayClusterApplied { namespace, name, uid } => {
                self.say(format_args!("  RayCluster {namespace}/{name} applied (uid {uid})"))
            }
            LifecycleEvent::RayJobCreated { namespace, name, submission } => {
                self.say(format_args!("RayJob {namespace}/{name} created: KubeRay makes its cluster, then job {submission} is submitted to it"))
            }
            LifecycleEvent::Queued { name, queued } => self.say(format_args!("  RayJob {name}: {}", queued_line(queued))),
            LifecycleEvent::QueueUnknown { error } => {
                self.say(format_args!("  ! what Kueue says of it cannot be read ({}); going on without it", gke_rl_ops::chain(error)))
            }
            LifecycleEvent::Retrying { error } => self.say(format_args!("  ! {}; asking again", gke_rl_ops::chain(error))),
            LifecycleEvent::RayJobState { name, state } => {
                let why = [&state.reason, &state.message].into_iter().flatten().map(|s| format!(": {s}")).collect::<String>();
                self.say(format_args!("  RayJob {name}: {}{why}", state.state()))
            }
            LifecycleEvent::Pods { ready, wanted } => self.pods(ready, wanted),
            LifecycleEvent::Waiting(problem) => self.say(format_args!("  ! {problem}")),
            LifecycleEvent::ClusterState(state) => self.say(format_args!("  state: {}", state.describe())),
            LifecycleEvent::ClusterObjectsSkipped { reason } => {
                self.say(format_args!("  {reason}\n  skipping the RayCluster and the Secret: deleting the cluster removes them"))
            }
            LifecycleEvent::Deleted { kind, namespace, name } => self.say(format_args!("  deleted {kind} {namespace}/{name}")),
            LifecycleEvent::PodsGone => self.say("  the Ray pods are gone"),
            LifecycleEvent::MayRemainWithoutState { name } => self.say(format_args!(
                "the cluster, the Lustre instance and the buckets of {name} are gone; the networks, firewall rules and service \
                 accounts gcluster made cannot be found without its state: check the console (labels ghpc_deployment={name})"
            )),
            LifecycleEvent::HelperApplied { what, namespace, objects } => self.say(format_args!(
                "  {what} applied in {namespace}: {}",
                objects.iter().map(|(kind, name)| format!("{kind} {name}")).collect::<Vec<_>>().join(", ")
            )),
            LifecycleEvent::HelperDeleted { what, namespace, objects } => self.say(format_args!(
                "  {what} of the RayCluster deleted from {namespace}: {}",
                objects.iter().map(|(kind, name)| format!("{kind} {name}")).collect::<Vec<_>>().join(", ")
            )),
            LifecycleEvent::SuspendRequested { name } => self.say(format_args!("suspending RayCluster {name}: KubeRay deletes its pods")),
            LifecycleEvent::ResumeRequested { name } => self.say(format_args!("resuming RayCluster {name}: KubeRay recreates its pods")),
            LifecycleEvent::AwaitingKueue { name } => {
                self.say(format_args!("RayCluster {name} waits in Kueue's queue: its pods come once Kueue admits it"))
            }
            LifecycleEvent::TeardownFailed => self.say("gcluster destroy failed; its output is above. Checking what remains:"),
            LifecycleEvent::Listing { what, id } => self.say(format_args!("  the cluster lists {what} (job {id})")),
            LifecycleEvent::BucketCreated { bucket, region } => self.say(format_args!("  made bucket gs://{bucket} in {region}")),
            LifecycleEvent::BucketOfAnotherProject { bucket, project_number } => {
                self.say(format_args!("  bucket gs://{bucket} belongs to project {project_number}, another project: it bills there"))
            }
            LifecycleEvent::AgentGranted { bucket, agent } => {
                self.say(format_args!("  granted {} on gs://{bucket} to the Managed Lustre service agent {agent}", gke_rl::durability::AGENT_ROLE))
            }
            LifecycleEvent::TransferStarted { direction, from, to, operation, resumed } => {
                let verb = match direction {
                    gke_rl::lifecycle::Direction::Export => "exporting",
                    gke_rl::lifecycle::Direction::Import => "importing",
                };
                let again = if resumed { " (started before: followed again)" } else { "" };
                self.say(format_args!("{verb} {from} to {to}: operation {operation}{again}"))
            }
            LifecycleEvent::TransferProgress(counters) => self.say(format_args!(
                "  {} of {} copied ({} of {} files; {} already there)",
                gke_rl::quote::bytes(counters.copied_bytes as f64),
                gke_rl::quote::bytes((counters.found_bytes + counters.skipped_bytes) as f64),
                counters.copied_objects,
                counters.found_objects + counters.skipped_objects,
                counters.skipped_objects
            )),
            LifecycleEvent::Verified { uri, files, bytes } => self.say(format_args!(
                "✓ {uri} holds every file with its size ({}, {}); recorded",
                gke_rl::durability::files(usize::try_from(files).unwrap_or(usize::MAX)),
                gke_rl::quote::bytes(bytes as f64)
            )),
            LifecycleEvent::AlreadyKept { uri } => self.say(format_args!("✓ {uri} was verified before")),
            LifecycleEvent::TransferForgotten { uri, why } => self.say(format_args!("  warning: the transfer of {uri} is forgotten: {why}")),
            LifecycleEvent::EmptyStepSkipped { dir, step } => {
                self.say(format_args!("  skipping {dir}/step_{step}: it holds no file (no checkpoint was saved there)"))
            }
            LifecycleEvent::KeptChanged { uri, differs } => {
                self.say(format_args!("  warning: {uri} no longer holds what was verified ({differs}): that copy does not count"))
            }
            LifecycleEvent::Uploaded { object } => self.say(format_args!("  wrote {object}")),
            LifecycleEvent::NoReport { why } => self.say(format_args!("  warning: no run report beside the checkpoints: {why}")),
            LifecycleEvent::UnsignedKept { uri } => self.say(format_args!(
                "  warning: the state records a copy in {uri} that the cluster's run key did not sign: it does not count"
            )),
            LifecycleEvent::Converting { id, script } => self.say(format_args!("converting with NeMo-RL's {script} (job {id})")),
            _ => {}
        }
    }

    /// Words what happened to a job.
    fn job(&self, event: JobEvent<'_>) {
        match event {
            JobEvent::AgentNotReady { error, within } => {
                self.say(format_args!("  ! {error}: the head's job agent is not up yet; asking again for up to {} s", within.as_secs()))
            }
            JobEvent::PortForward { local, namespace, pod, port } => {
                self.say(format_args!("port-forward {local} -> {namespace}/{pod}:{port}"))
            }
            JobEvent::PortForwardFailed(e) => self.say(format_args!("warning: port-forward: {e}")),
            JobEvent::Connected { ray_version, address, tested } => {
                self.say(format_args!("Ray {ray_version} at {address}"));
                if !tested {
                    let (low, high) = (gke_rl_ray::OLDEST_TESTED_RAY, gke_rl_ray::NEWEST_TESTED_RAY);
                    self.say(format_args!("warning: gke-rl is tested with Ray {low} to {high}; Ray {ray_version} may answer differently"));
                }
            }
            JobEvent::RuntimeEnvFinding { text, finding } => {
                let report = Located { file: Path::new(&finding.file), source: text, diagnostic: &finding.diagnostic };
                self.say(format_args!("{report}\n"));
            }
            JobEvent::IgnoreFiles { dir, count } => self.say(format_args!("working dir {dir}: {count} ignore file(s) applied")),
            JobEvent::CredentialFilesLeftOut { paths } => {
                let shown: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
                let more = paths.len().saturating_sub(shown.len());
                self.say(format_args!(
                    "left out of the upload, as credentials: {}{}; list them in .rayignore to silence this, or pass --with-credential-files to upload them",
                    shown.join(", "),
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                ))
            }
            JobEvent::LargeFile { path, bytes } => self.say(format_args!(
                "warning: {path} is large ({}); add it to .rayignore unless the job needs it",
                gke_rl_ray::package::mib(bytes)
            )),
            JobEvent::WorkingDirOverridden => self.say("warning: --working-dir overrides the runtime env's working_dir"),
            JobEvent::EnvFromLocal { name } => self.say(format_args!(
                "warning: {name} goes into the job's runtime env: Ray stores it and returns it to anyone who can reach the Jobs API; \
                 the Kubernetes Secret (see hf-token-secret.yaml) keeps it out"
            )),
            JobEvent::PackageReused { uri, files } => {
                self.say(format_args!("package {uri} ({files} files) is already on the cluster: not uploading"))
            }
            JobEvent::Uploading { uri, files, bytes } => {
                self.say(format_args!("uploading {uri} ({files} files, {})", gke_rl_ray::package::mib(bytes)))
            }
            JobEvent::Submitted { id } => self.say(format_args!("job {id} submitted")),
            JobEvent::AwaitingKeeper { why, wait, .. } => self.say(format_args!(
                "{why}: the run's keeper resubmits it (in a deployment, within a minute); waiting up to {} for that",
                gke_rl_ops::took(wait)
            )),
            JobEvent::Resubmitted { id } => self.say(format_args!("following the keeper's resubmission {id}")),
            JobEvent::SuspendedUnknown { error } => {
                self.say(format_args!("warning: cannot tell whether the RayCluster is suspended: {}", gke_rl_ops::chain(error)))
            }
            JobEvent::JobLog { id, text, introduce } => {
                // A restarted job's log is its submissions' logs, in order.
                if introduce {
                    self.say(format_args!("== job {id} =="));
                }
                crate::terminal::out(text);
            }
            JobEvent::EmptyLog { id } => self.say(format_args!("job {id} has an empty log: Ray holds nothing it wrote")),
            JobEvent::JobEnded { id, status, message, log, records } => {
                self.end_progress();
                let reports = [records.map(|r| r.restarts_summary()).unwrap_or_default(), log.checkpoint_report()];
                for report in reports.iter().filter(|r| !r.is_empty()) {
                    crate::terminal::err(&crate::terminal::shown(report));
                }
                self.say(format_args!("job {id} {status}: {}", message.unwrap_or_default()));
            }
            JobEvent::Log(text) => self.job_log(text),
            JobEvent::RunProgress(progress) => self.run_progress(progress),
            JobEvent::Reconnecting(reason) => self.say(format_args!("log stream lost ({reason}); reconnecting")),
            JobEvent::LogUnread(why) => {
                self.say(format_args!("warning: the end of the job's log could not be read ({why}); `logs` shows it whole"))
            }
            JobEvent::JobState { id, status, message } => {
                self.say(format_args!("job {id}: {status}{}", message.map(|m| format!(" ({m})")).unwrap_or_default()))
            }
            JobEvent::StopRequested { id } => self.say(format_args!("stop requested for job {id}")),
            // The end-of-job report lists the saves.
            JobEvent::CheckpointSaved(_) => {}
            _ => {}
        }
    }
}

/// An operations error with its causes, and the fix when it is about reaching the cluster's
/// API: `fix` when the operation found it, else worked out with `get_credentials` (the command
/// that writes the cluster's kubeconfig entry).
pub fn explain(error: &gke_rl_ops::Error, fix: Option<&Fix>, get_credentials: &Command) -> String {
    let cli = crate::name();
    let mut text = match error {
        gke_rl_ops::Error::Lifecycle(gke_rl_ops::LifecycleError::Preflight { problems }) => {
            problems.iter().map(|p| format!("  - {}", problem(p).replace('\n', "\n    "))).collect::<Vec<_>>().join("\n")
        }
        gke_rl_ops::Error::Lifecycle(gke_rl_ops::LifecycleError::NoCapacity { .. }) => format!(
            "{}\n  then re-run `{cli} deploy` later, or use another zone or a reservation (topology.provisioning.reservation)",
            gke_rl_ops::chain(error)
        ),
        gke_rl_ops::Error::Lifecycle(gke_rl_ops::LifecycleError::PublicAddress { .. }) => {
            format!("{}; pass --authorized-cidr", gke_rl_ops::chain(error))
        }
        _ => gke_rl_ops::chain(error),
    };
    if let Some(fix) = fix.cloned().or_else(|| error.fix(get_credentials)) {
        text.push_str("\nhelp: ");
        text.push_str(&fix_text(&fix));
    }
    text
}

/// A preflight problem, with the flag that fixes it where there is one.
fn problem(problem: &Problem) -> String {
    let cli = crate::name();
    match problem {
        Problem::NoTool { .. } => format!("{problem} (--download-dependencies)"),
        Problem::NoToolkit { .. } => format!("{problem} with --toolkit DIR"),
        Problem::OutsideAuthorizedCidr { address, cidr, .. } => format!(
            "{problem}. Run `{cli} deploy --authorized-cidr {address}/32` (gcluster updates the authorized networks in place), \
             or deploy from an address inside {cidr}"
        ),
        _ => problem.to_string(),
    }
}

/// What Kueue says of a job, in a line: queued (and why it is not admitted), or admitted.
pub(crate) fn queued_line(queued: &gke_rl_ops::Queued) -> String {
    match (&queued.waiting, queued.admitted) {
        (_, true) => format!("admitted by Kueue from LocalQueue {}", queued.queue),
        (Some((reason, message)), false) => format!("queued by Kueue in LocalQueue {}, not admitted: {reason}: {message}", queued.queue),
        (None, false) => format!("queued by Kueue in LocalQueue {}, not admitted yet", queued.queue),
    }
}

/// A fix in this CLI's words.
pub fn fix_text(fix: &Fix) -> String {
    let cli = crate::name();
    match fix {
        Fix::AuthorizedNetworks => format!(
            "the control plane answers only its authorized networks: if this machine's public address changed since deploy, run \
             `{cli} deploy --authorized-cidr <your address>/32`, which updates them (`{cli} destroy` works without the API); if the \
             cluster is gone, `{cli} destroy` cleans up the rest"
        ),
        Fix::GetCredentials(command) => format!("write the cluster's kubeconfig entry again: {command}"),
        Fix::RefreshCredentials(command) => {
            format!("refresh the cluster's credentials: {command}\n  (if gcloud's login expired, run `gcloud auth login` first)")
        }
        Fix::GrantDeveloperRole => "the account gcloud uses may not do this in the cluster: grant it roles/container.developer on the \
             project, or switch to an account that has it (`gcloud config set account …`)"
            .to_owned(),
        Fix::InstallAuthPlugin => {
            format!("GKE kubeconfigs authenticate through {}: install it with {}", lifecycle::AUTH_PLUGIN, lifecycle::INSTALL_AUTH_PLUGIN)
        }
        Fix::GcloudLogin => format!("{} gets its token from gcloud: run `gcloud auth login`, then try again", lifecycle::AUTH_PLUGIN),
        _ => "see the error above".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use gke_rl::lifecycle::Step;
    use gke_rl_ops::ClusterState;

    use super::*;

    /// The words of the job events, which reach the console through the same `event` as the
    /// lifecycle's (their logic is tested against real Ray heads in `tests/ray_jobs.rs`).
    #[test]
    fn job_events_are_worded_for_people() {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let console = Console::captured(buffer.clone());
        let local = std::net::SocketAddr::from(([127, 0, 0, 1], 40123));
        let events = [
            (JobEvent::PortForward { local, namespace: "d", pod: "c-head", port: 8265 }, "port-forward 127.0.0.1:40123 -> d/c-head:8265"),
            (
                JobEvent::Connected { ray_version: "2.54.0", address: "http://127.0.0.1:40123", tested: true },
                "Ray 2.54.0 at http://127.0.0.1:40123",
            ),
            (
                JobEvent::Connected { ray_version: "9.0.0", address: "http://h:8265", tested: false },
                "Ray 9.0.0 at http://h:8265\nwarning: gke-rl is tested with Ray",
            ),
            (JobEvent::WorkingDirOverridden, "warning: --working-dir overrides the runtime env's working_dir"),
            (
                JobEvent::PackageReused { uri: "gcs://_ray_pkg_a.zip", files: 3 },
                "package gcs://_ray_pkg_a.zip (3 files) is already on the cluster",
            ),
            (JobEvent::Reconnecting("reset"), "log stream lost (reset); reconnecting"),
            (JobEvent::StopRequested { id: "grpo" }, "stop requested for job grpo"),
        ];
        for (event, words) in events {
            let before = buffer.lock().unwrap().len();
            console.event(event.into());
            let said = String::from_utf8_lossy(&buffer.lock().unwrap()[before..]).into_owned();
            assert!(said.contains(words), "{words:?} missing from {said:?}");
        }
        let before = buffer.lock().unwrap().len();
        console.event(JobEvent::Connected { ray_version: "2.54.0", address: "http://h:8265", tested: true }.into());
        let said = String::from_utf8_lossy(&buffer.lock().unwrap()[before..]).into_owned();
        assert_eq!(said, "Ray 2.54.0 at http://h:8265\n", "a tested Ray gets no warning");
    }

    /// The words of the deploy, destroy and suspend events (their logic is tested in
    /// `crates/gke-rl-ops/tests/it/deploy.rs`).
    #[test]
    fn deploy_and_destroy_events_are_worded_for_people() {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let console = Console::captured(buffer.clone());
        let role = Command { program: "gcloud".into(), args: vec!["iam".into()], dir: None };
        let objects = [("ServiceAccount".to_owned(), "c-idle-guard".to_owned()), ("Role".to_owned(), "c-idle-guard".to_owned())];
        let events = [
            (
                LifecycleEvent::StepDone { step: Step::Provision, took: Duration::from_secs(3) },
                "✓ provision the cluster and Managed Lustre",
            ),
            (
                LifecycleEvent::ExistingCluster {
                    cluster: "c",
                    version: "1.35",
                    gpu_pool: "gpu",
                    head_pool: "node pool cpu",
                    fabric: "TCP",
                    addons_off: &["RayOperator"],
                },
                "existing cluster c (GKE 1.35): GPU workers on node pool gpu, the head on node pool cpu\n  fabric: TCP\n  add-ons RayOperator and LustreCsiDriver: off, turned on at provision: RayOperator",
            ),
            (
                LifecycleEvent::NodesUnlisted { cluster: "c", reason: "forbidden" },
                "cannot list the nodes of cluster c (forbidden): its pools are taken at the sizes they were made with",
            ),
            (
                LifecycleEvent::PoolShort { pool: "gpu", listed: 6, made: 8 },
                "warning: node pool gpu has 6 of the 8 nodes it was made with: preempted Spot nodes",
            ),
            (LifecycleEvent::Waiting("c-head: Unschedulable: 0/3 nodes"), "  ! c-head: Unschedulable: 0/3 nodes"),
            (LifecycleEvent::ClusterState(ClusterState::Recovering), "  state: preempted: KubeRay is recreating"),
            (LifecycleEvent::RayClusterGone { name: "c" }, "RayCluster c is gone: applying it again"),
            (LifecycleEvent::ConfigChanged, "the config or the blueprint changed since the last deploy"),
            (
                LifecycleEvent::PodsNotAllReady { name: "c", ready: 7, wanted: 9, state: ClusterState::Recovering },
                "has 7/9 pods Ready (preempted: KubeRay is recreating the lost pods, which wait for nodes): waiting for them again",
            ),
            (LifecycleEvent::RayTokenSecret { namespace: "d", name: "t", created: true }, "Secret d/t holds a new cluster token"),
            (LifecycleEvent::RayTokenSecret { namespace: "d", name: "t", created: false }, "Secret d/t keeps the cluster's token"),
            (
                LifecycleEvent::PodsWithoutToken { namespace: "d", name: "c" },
                "RayCluster d/c ran without token authentication; its running pods keep running without it",
            ),
            (
                LifecycleEvent::GcsfuseValidatorSkipped { project: "p", create_role: &role },
                "gcluster's test_gcsfuse_iam_role_exists validator is skipped",
            ),
            (
                LifecycleEvent::HelperApplied { what: "idle guard", namespace: "d", objects: &objects },
                "idle guard applied in d: ServiceAccount c-idle-guard, Role c-idle-guard",
            ),
            (LifecycleEvent::MayRemainWithoutState { name: "c" }, "cannot be found without its state"),
            (LifecycleEvent::SuspendRequested { name: "c" }, "suspending RayCluster c: KubeRay deletes its pods"),
            (LifecycleEvent::PodsGone, "the Ray pods are gone"),
        ];
        for (event, words) in events {
            let before = buffer.lock().unwrap().len();
            console.event(event.into());
            let said = String::from_utf8_lossy(&buffer.lock().unwrap()[before..]).into_owned();
            assert!(said.contains(words), "{words:?} missing from {said:?}");
        }
    }
}
