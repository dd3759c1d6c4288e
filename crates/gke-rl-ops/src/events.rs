//! What an operation reports while it runs, and how it asks before acting. A front end
//! implements [`Progress`]: the CLI prints lines and a progress bar, another tool may log or
//! show them in a UI.

use std::net::SocketAddr;
use std::time::Duration;

use gke_rl::lifecycle::{Command, Step};
use gke_rl_in_cluster::run_log::Save;
use gke_rl_kube::{ClusterState, Readiness};
use gke_rl_ray::JobStatus;
use gke_rl_validate::Finding;

use crate::error::Unanswerable;

/// Something that happened, in the family of operations it belongs to. Borrowed data lives
/// only for the call.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// To the cluster and its objects.
    Lifecycle(LifecycleEvent<'a>),
    /// To a job.
    Jobs(JobEvent<'a>),
}

impl<'a> From<LifecycleEvent<'a>> for Event<'a> {
    fn from(event: LifecycleEvent<'a>) -> Self {
        Event::Lifecycle(event)
    }
}

impl<'a> From<JobEvent<'a>> for Event<'a> {
    fn from(event: JobEvent<'a>) -> Self {
        Event::Jobs(event)
    }
}

/// Something that happened to the cluster and its objects: deploy, destroy, suspend and
/// resume, and the cluster a RayJob brings up.
#[derive(Debug)]
#[non_exhaustive]
pub enum LifecycleEvent<'a> {
    /// The deployment folder could not be locked (a file system without locks, a read-only
    /// folder); destroy goes on without the lock rather than leave resources billing.
    Unlocked {
        /// The folder.
        folder: &'a std::path::Path,
        /// Why.
        why: String,
    },
    /// A deploy step began.
    StepStarted(Step),
    /// It completed.
    StepDone {
        /// The step.
        step: Step,
        /// How long it took.
        took: Duration,
    },
    /// It had completed in an earlier run.
    StepDoneBefore(Step),
    /// A program whose output goes to the terminal is about to run.
    Running(&'a Command),
    /// The gcloud account preflight found.
    Account(&'a str),
    /// The CIDR the control plane will accept; `detected_from` names the service that told
    /// this machine's public address, when that is where it came from.
    AuthorizedCidr {
        /// The CIDR.
        cidr: &'a str,
        /// The address-echo URL, when detected.
        detected_from: Option<&'a str>,
    },
    /// The authorized CIDR is a /0 to /7 block ([`gke_rl::model::Cidr::WIDE_RISK`]).
    WideAuthorizedCidr {
        /// The CIDR.
        cidr: &'a str,
    },
    /// The CIDR differs from the one the cluster was provisioned with: gcluster runs again.
    AuthorizedCidrChanged {
        /// The CIDR the cluster has.
        from: &'a str,
        /// The CIDR it gets.
        to: &'a str,
    },
    /// Whether this machine is inside the authorized CIDR could not be told.
    AddressUnknown {
        /// The CIDR.
        cidr: &'a str,
        /// Why.
        reason: &'a str,
    },
    /// The project lacks the custom role gcluster's GCS-Fuse validator wants: it is skipped.
    GcsfuseValidatorSkipped {
        /// The project.
        project: &'a str,
        /// The command that creates the role.
        create_role: &'a Command,
    },
    /// Preflight read the existing cluster and fitted the deployment to it.
    ExistingCluster {
        /// The cluster.
        cluster: &'a str,
        /// Its control plane's version.
        version: &'a str,
        /// The pool of the GPU workers.
        gpu_pool: &'a str,
        /// Where the head runs.
        head_pool: &'a str,
        /// How the workers' collectives travel, for people.
        fabric: &'a str,
        /// The add-ons found off, which provision turns on.
        addons_off: &'a [&'static str],
    },
    /// The existing cluster's Nodes cannot be listed: its pools' sizes are gcloud's.
    NodesUnlisted {
        /// The cluster.
        cluster: &'a str,
        /// Why.
        reason: &'a str,
    },
    /// The existing cluster's GPU pool lists fewer Nodes than it was made with.
    PoolShort {
        /// The pool.
        pool: &'a str,
        /// Nodes listed.
        listed: u32,
        /// Its size when it was made.
        made: u32,
    },
    /// Destroy keeps what the state names but gke-rl did not make.
    NotOurs {
        /// What, and why it is not gke-rl's.
        what: &'a str,
    },
    /// The config or the blueprint changed since the last deploy: the steps run again from render.
    ConfigChanged,
    /// The RayCluster of a completed deploy was deleted: it is applied again.
    RayClusterGone {
        /// Its name.
        name: &'a str,
    },
    /// A destroy without state deleted what gcloud finds by name and label; what gcluster made
    /// besides (networks, firewall rules, service accounts) it cannot find.
    MayRemainWithoutState {
        /// The deployment.
        name: &'a str,
    },
    /// The Ray token's Secret: made with a new token, or kept (the running pods hold its token).
    RayTokenSecret {
        /// Namespace.
        namespace: &'a str,
        /// Name.
        name: &'a str,
        /// Whether it was created now.
        created: bool,
    },
    /// The RayCluster ran without token authentication before this deploy turned it on: its
    /// running pods keep running without it until they are recreated.
    PodsWithoutToken {
        /// Namespace.
        namespace: &'a str,
        /// The RayCluster.
        name: &'a str,
    },
    /// The objects of an in-cluster helper (the run keeper, the idle guard) were applied.
    HelperApplied {
        /// Which helper.
        what: &'a str,
        /// Their namespace.
        namespace: &'a str,
        /// Their kinds and names.
        objects: &'a [(String, String)],
    },
    /// A helper of the long-lived RayCluster (run keeper, idle guard) was deleted, with it.
    HelperDeleted {
        /// Which helper.
        what: &'a str,
        /// Their namespace.
        namespace: &'a str,
        /// The kinds and names of those that were there.
        objects: &'a [(String, String)],
    },
    /// The RayCluster was asked to suspend (KubeRay deletes its pods).
    SuspendRequested {
        /// The RayCluster.
        name: &'a str,
    },
    /// The RayCluster was asked to resume (KubeRay recreates its pods).
    ResumeRequested {
        /// The RayCluster.
        name: &'a str,
    },
    /// The queued RayCluster waits for Kueue to admit it; nothing was changed.
    AwaitingKueue {
        /// The RayCluster.
        name: &'a str,
    },
    /// A completed deploy has pods that are not Ready: the wait runs again.
    PodsNotAllReady {
        /// The RayCluster.
        name: &'a str,
        /// Pods Ready.
        ready: u32,
        /// Pods wanted.
        wanted: u32,
        /// What that amounts to.
        state: ClusterState,
    },
    /// The token Secret was applied with these keys.
    SecretApplied {
        /// Namespace.
        namespace: &'a str,
        /// Name.
        name: &'a str,
        /// Its keys (never the values).
        keys: &'a [&'a str],
    },
    /// The RayCluster was applied.
    RayClusterApplied {
        /// Namespace.
        namespace: &'a str,
        /// Name.
        name: &'a str,
        /// Its uid.
        uid: &'a str,
    },
    /// A RayJob was created for a submission.
    RayJobCreated {
        /// Namespace.
        namespace: &'a str,
        /// Name.
        name: &'a str,
        /// The submission id it is for.
        submission: &'a str,
    },
    /// Kueue holds the RayJob back, or admitted it: what its Workload says.
    Queued {
        /// The RayJob.
        name: &'a str,
        /// What Kueue says.
        queued: &'a gke_rl_kube::Queued,
    },
    /// What Kueue says of a RayJob held back cannot be read (no Kueue, no permission); the
    /// wait goes on without it.
    QueueUnknown {
        /// Why.
        error: &'a gke_rl_kube::Error,
    },
    /// The API server could not be used; a wait asks it again.
    Retrying {
        /// Why.
        error: &'a gke_rl_kube::Error,
    },
    /// A RayJob's state changed while waiting for its cluster.
    RayJobState {
        /// Name.
        name: &'a str,
        /// What KubeRay reports now.
        state: &'a gke_rl_kube::RayJobState,
    },
    /// The wait for the pods looked: this many are Ready.
    Pods {
        /// Pods Ready.
        ready: u32,
        /// Pods wanted.
        wanted: u32,
    },
    /// A new reason a pod is not Ready (told once while waiting).
    Waiting(&'a str),
    /// What the RayCluster waits for changed: capacity, recovery from a preemption, or nothing
    /// (broken).
    ClusterState(ClusterState),
    /// destroy leaves the in-cluster objects to go with the cluster.
    ClusterObjectsSkipped {
        /// Why.
        reason: &'a str,
    },
    /// A Kubernetes object was deleted.
    Deleted {
        /// `RayCluster` or `Secret`.
        kind: &'static str,
        /// Namespace.
        namespace: &'a str,
        /// Name.
        name: &'a str,
    },
    /// The Ray pods are gone.
    PodsGone,
    /// `gcluster destroy` failed; what remains is checked next.
    TeardownFailed,
    /// A job of gke-rl's own reads the shared file system on the head (the checkpoint lister).
    Listing {
        /// What it lists, for people.
        what: &'a str,
        /// Its submission id.
        id: &'a str,
    },
    /// The bucket was made.
    BucketCreated {
        /// The bucket.
        bucket: &'a str,
        /// Its region.
        region: &'a str,
    },
    /// The bucket belongs to another project, which gke-rl can read and write.
    BucketOfAnotherProject {
        /// The bucket.
        bucket: &'a str,
        /// Its project's number.
        project_number: &'a str,
    },
    /// The Managed Lustre service agent was granted its role on the bucket.
    AgentGranted {
        /// The bucket.
        bucket: &'a str,
        /// The agent.
        agent: &'a str,
    },
    /// A transfer started, or one recorded as started is followed again.
    TransferStarted {
        /// Which way.
        direction: gke_rl::lifecycle::Direction,
        /// What is copied.
        from: &'a str,
        /// Where to.
        to: &'a str,
        /// The operation.
        operation: &'a str,
        /// Whether an earlier run started it.
        resumed: bool,
    },
    /// A transfer's progress, as Managed Lustre counts it.
    TransferProgress(&'a gke_rl::durability::Counters),
    /// A copy holds every file, each with its size.
    Verified {
        /// The bucket folder.
        uri: &'a str,
        /// Its files.
        files: u64,
        /// Their bytes.
        bytes: u64,
    },
    /// A copy was verified before: nothing to transfer.
    AlreadyKept {
        /// The bucket folder.
        uri: &'a str,
    },
    /// A file of gke-rl's went into the bucket beside the checkpoints.
    Uploaded {
        /// The object.
        object: &'a str,
    },
    /// The run's report could not be made: the export goes on without it.
    NoReport {
        /// Why.
        why: String,
    },
    /// A transfer recorded as started whose folder on Lustre is gone: it is forgotten.
    TransferForgotten {
        /// The bucket folder.
        uri: &'a str,
        /// Why.
        why: &'a str,
    },
    /// A step `--all` passes over: it holds no file.
    EmptyStepSkipped {
        /// The checkpoint folder.
        dir: &'a str,
        /// The step.
        step: u64,
    },
    /// A verified copy whose bucket folder no longer holds what was verified: it does not count.
    KeptChanged {
        /// The bucket folder.
        uri: &'a str,
        /// What differs.
        differs: &'a str,
    },
    /// A record of a verified copy that the cluster's run key did not sign: it does not count.
    UnsignedKept {
        /// The bucket folder it names.
        uri: &'a str,
    },
    /// NeMo-RL's converter runs as a job on the head.
    Converting {
        /// Its submission id.
        id: &'a str,
        /// The converter.
        script: &'a str,
    },
}

/// Something that happened to a job: the connection to its head, its submit, its run and its
/// end.
#[derive(Debug)]
#[non_exhaustive]
pub enum JobEvent<'a> {
    // ---- the connection to the head ----
    /// A local port forwards to the head pod.
    PortForward {
        /// The local address.
        local: SocketAddr,
        /// The head pod's namespace.
        namespace: &'a str,
        /// The head pod.
        pod: &'a str,
        /// Its port.
        port: u16,
    },
    /// One forwarded connection failed (the forward goes on).
    PortForwardFailed(&'a std::io::Error),
    /// The dashboard answered.
    Connected {
        /// Its Ray version.
        ray_version: &'a str,
        /// Its address.
        address: &'a str,
        /// Whether gke-rl's tests ran against that Ray ([`gke_rl_ray::TESTED_RAY`]).
        tested: bool,
    },

    // ---- submit and follow ----
    /// A finding about the runtime env being submitted.
    RuntimeEnvFinding {
        /// Its text, for snippets.
        text: &'a str,
        /// The finding.
        finding: &'a Finding,
    },
    /// A working dir's ignore files were read.
    IgnoreFiles {
        /// The folder.
        dir: &'a str,
        /// How many `.gitignore`/`.rayignore` files apply.
        count: usize,
    },
    /// Credential files left out of the upload (Ray's packager would have uploaded them).
    CredentialFilesLeftOut {
        /// Their paths in the working dir.
        paths: &'a [String],
    },
    /// A file Ray warns about for its size.
    LargeFile {
        /// Its path in the package.
        path: &'a str,
        /// Its size.
        bytes: u64,
    },
    /// The working dir given replaces the runtime env's `working_dir`.
    WorkingDirOverridden,
    /// A local variable goes into the job's runtime env, readable through the Jobs API.
    EnvFromLocal {
        /// The variable.
        name: &'a str,
    },
    /// The cluster has the package already.
    PackageReused {
        /// Its URI.
        uri: &'a str,
        /// Files in it.
        files: usize,
    },
    /// The package is being uploaded.
    Uploading {
        /// Its URI.
        uri: &'a str,
        /// Files in it.
        files: usize,
        /// Its size.
        bytes: u64,
    },
    /// The Ray head's job agent is not up yet: the submit is asked again, within a bound.
    AgentNotReady {
        /// What the head answered.
        error: &'a gke_rl_ray::Error,
        /// How long it is asked again for.
        within: std::time::Duration,
    },
    /// The job was accepted.
    Submitted {
        /// Its submission id.
        id: &'a str,
    },
    /// Log text, in order, each byte once.
    Log(&'a str),
    /// The log stream dropped; it reconnects.
    Reconnecting(&'a str),
    /// The job ended, but the end of its log could not be read, and why.
    LogUnread(&'a str),
    /// The job's state changed while it is followed.
    JobState {
        /// Submission id.
        id: &'a str,
        /// The new state.
        status: JobStatus,
        /// Ray's message, if any.
        message: Option<&'a str>,
    },
    /// NeMo-RL saved a checkpoint (from its log).
    CheckpointSaved(&'a Save),
    /// Where a followed run is, from its log and records: sent when a figure changes, once the
    /// log has shown a step.
    RunProgress(&'a gke_rl_in_cluster::run_report::Progress),
    /// A stop was requested.
    StopRequested {
        /// Submission id.
        id: &'a str,
    },
    /// A followed run's submission went away without its supervisor's record: the keeper
    /// resubmits it, and following waits for that.
    AwaitingKeeper {
        /// The submission.
        id: &'a str,
        /// What happened to it.
        why: &'a str,
        /// How long following waits.
        wait: std::time::Duration,
    },
    /// Whether the RayCluster is suspended could not be told before a submit; the port-forward
    /// meets the cause again, and explains it.
    SuspendedUnknown {
        /// Why.
        error: &'a crate::error::LifecycleError,
    },
    /// A piece of the log so far of one submission of a job, as `logs` reads them one by one,
    /// a chunk at a time.
    JobLog {
        /// The submission.
        id: &'a str,
        /// The piece of its log.
        text: &'a str,
        /// Whether this is the submission's first piece, and the job has restarts: each
        /// submission's log is introduced.
        introduce: bool,
    },
    /// A submission whose log `logs` read is empty: neither its stream nor Ray's whole log
    /// gave a byte.
    EmptyLog {
        /// The submission.
        id: &'a str,
    },
    /// A followed job ended. (Not its whole details: their runtime env holds variables' values.)
    JobEnded {
        /// Its submission id.
        id: &'a str,
        /// Its final state.
        status: JobStatus,
        /// Ray's message about it.
        message: Option<&'a str>,
        /// What its log said: the steps and the checkpoint saves.
        log: &'a gke_rl_in_cluster::run_log::RunLog,
        /// What the run's supervisors recorded, when it was followed as a run.
        records: Option<&'a gke_rl_in_cluster::records::Records>,
    },
    /// Following goes on with the keeper's resubmission.
    Resubmitted {
        /// Its id.
        id: &'a str,
    },
}

impl<'a> JobEvent<'a> {
    /// [`JobEvent::JobEnded`] of a followed job, its log and, when followed as a run, its records.
    pub(crate) fn job_ended(
        job: &'a gke_rl_ray::JobDetails,
        log: &'a gke_rl_in_cluster::run_log::RunLog,
        records: Option<&'a gke_rl_in_cluster::records::Records>,
    ) -> Self {
        JobEvent::JobEnded { id: job.id(), status: job.status, message: job.message.as_deref(), log, records }
    }
}

/// What an operation asks before a step that costs money or deletes data.
#[derive(Debug)]
#[non_exhaustive]
pub enum Question<'a> {
    /// Create billable resources.
    Create {
        /// What is created, for people.
        what: &'a str,
    },
    /// Delete what the preview lists.
    Destroy {
        /// The preview: what goes and what is lost.
        preview: &'a str,
    },
}

/// Where an operation's events and questions go.
pub trait Progress: Send + Sync {
    /// Reports an event.
    fn event(&self, event: Event<'_>);

    /// Asks before acting: `Ok(true)` goes on, `Ok(false)` stops with nothing done, `Err`
    /// says why nobody can answer (stops too, as an error).
    fn confirm(&self, question: &Question<'_>) -> Result<bool, Unanswerable>;
}

/// A sink that drops events and answers every question with yes: for tools that have asked
/// already.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

/// Telling an event of one family.
impl dyn Progress + '_ {
    /// Reports what happened to the cluster and its objects.
    pub(crate) fn lifecycle(&self, event: LifecycleEvent<'_>) {
        self.event(Event::Lifecycle(event));
    }

    /// Reports what happened to a job.
    pub(crate) fn job(&self, event: JobEvent<'_>) {
        self.event(Event::Jobs(event));
    }
}

impl Progress for Quiet {
    fn event(&self, _: Event<'_>) {}

    fn confirm(&self, _: &Question<'_>) -> Result<bool, Unanswerable> {
        Ok(true)
    }
}

/// Reports the pods a wait looks at: how many are Ready, what the cluster's state amounts to
/// when it changes, and every new reason a pod is not Ready.
pub(crate) fn pod_reporter(progress: &dyn Progress) -> impl FnMut(&Readiness) + '_ {
    let (mut told, mut last, mut last_state) = (Vec::<String>::new(), None, None);
    move |readiness: &Readiness| {
        let (ready, wanted) = readiness.progress();
        if last != Some(ready) {
            progress.lifecycle(LifecycleEvent::Pods { ready, wanted });
            last = Some(ready);
        }
        if last_state != Some(readiness.state) && !readiness.is_ready() {
            progress.lifecycle(LifecycleEvent::ClusterState(readiness.state));
        }
        last_state = Some(readiness.state);
        for problem in &readiness.problems {
            if !told.contains(problem) {
                progress.lifecycle(LifecycleEvent::Waiting(problem));
                told.push(problem.clone());
            }
        }
    }
}
