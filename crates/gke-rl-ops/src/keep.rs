//! Keeping what a run made beyond its Lustre instance. [`export`] copies a run's checkpoints,
//! its records, config and report, and on request its Hugging Face model, from the instance to
//! a bucket through Managed Lustre's own transfers; [`import`] brings a checkpoint back into a
//! run's checkpoint folder before any job runs (`deploy --resume-from`); [`losses`] is what a
//! destroy would lose. Every copy is verified file for file, with its size, against what the
//! cluster lists on the mount (`gke_rl_in_cluster::checkpoints`, a job on the head), and
//! recorded in the deployment's state signed with the cluster's run key: what a destroy may
//! delete. A transfer is recorded before it starts and followed until it ends: one that was
//! interrupted is followed again, never started over.

use std::sync::Arc;
use std::time::Duration;

use gke_rl::Deployment;
use gke_rl::durability::{self, Bucket, Comparison, File, Layout, Object, Operation};
use gke_rl::lifecycle::{self, Direction, Kept, KeptKind, State, Transfer};
use gke_rl::model::{CheckpointUri, GcsPath};
use gke_rl_in_cluster::checkpoints::{self, AtRisk, Folder, Listing, Request, Survey};
use gke_rl_ray::Client;

use crate::env::Armed;
use crate::events::{LifecycleEvent, Progress};
use crate::head::{Head, HeadOptions};
use crate::site::{Resolved, SiteOptions};
use crate::{CommonError, Env, KeepError, LifecycleError, RunError};

/// Which steps of a checkpoint folder an export copies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Steps {
    /// The newest complete one.
    #[default]
    Newest,
    /// This one.
    Step(u64),
    /// Every complete one.
    All,
}

/// How to export.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// Which deployment, where.
    pub target: SiteOptions,
    /// How to reach its RayCluster's head, where the cluster lists its files.
    pub head: HeadOptions,
    /// The run (its first submission id) whose checkpoint folder to export [default: the
    /// config's `job.checkpointing.dir`, else the most recently active run's].
    pub run: Option<String>,
    /// The folder of runs on the shared file system, as `submit --runs-dir` names it
    /// [default: `<mount>/gke-rl/runs`].
    pub runs_dir: Option<String>,
    /// Which steps.
    pub steps: Steps,
    /// The bucket folder [default: the config's `storage.export_to`].
    pub to: Option<GcsPath>,
    /// Also convert each step to a Hugging Face model with NeMo-RL's converter, and export it.
    pub hf: bool,
    /// The longest one transfer is followed; it goes on after, and the next export follows it.
    pub timeout: Duration,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            target: SiteOptions::default(),
            head: HeadOptions::default(),
            run: None,
            runs_dir: None,
            steps: Steps::Newest,
            to: None,
            hf: false,
            timeout: Duration::from_secs(6 * 3600),
        }
    }
}

/// How an export ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Exported {
    /// Every copy asked for is in the bucket, verified, and recorded.
    Kept {
        /// The copies made now.
        copies: Vec<Kept>,
        /// Copies verified before, not made again.
        already: usize,
        /// The run's folder in the bucket.
        run_folder: String,
    },
    /// Interrupted: a transfer in flight goes on, and the next export follows it.
    Interrupted {
        /// The signal's number.
        signal: i32,
    },
}

/// Exports `options`'s steps of a run to its bucket folder, with the run's records, config and
/// report, each verified and recorded.
pub async fn export(
    deployment: &Deployment,
    options: &ExportOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Exported, LifecycleError> {
    let interrupt = env.interrupt.arm()?;
    if options.to.is_none() && deployment.storage.export_to.is_none() {
        return Err(KeepError::NoDestination.into());
    }
    let resolved = options.target.resolve(deployment, env, false)?;
    let folder = resolved.folder().to_owned();
    if !folder.is_dir() {
        return Err(KeepError::NoState { folder }.into());
    }
    let _held = crate::site::lock_folder(&folder, "gke-rl export")?;
    let state = resolved.load_state()?.ok_or(KeepError::NoState { folder })?;
    let outcome = async {
        let head = crate::mode::connect(deployment, &options.head, env, progress.clone()).await?;
        let mut keeping =
            Keeping::new(&resolved, state, env, progress.clone(), interrupt, options.timeout, options.runs_dir.clone()).await?;
        keeping.export(&head, options).await
    };
    match outcome.await {
        Err(LifecycleError::Interrupted { signal }) => Ok(Exported::Interrupted { signal }),
        other => other,
    }
}

/// [`export`] within a destroy, which holds the deployment folder and its `state`: `steps` of
/// the folder `run` writes (else the config's), to `to`, through the deployment's own head.
#[allow(clippy::too_many_arguments)] // one export's whole context
pub(crate) async fn export_locked(
    deployment: &Deployment,
    resolved: &Resolved<'_>,
    state: &mut State,
    run: Option<String>,
    runs_dir: Option<String>,
    steps: Steps,
    to: &GcsPath,
    env: &Env,
    progress: Arc<dyn Progress>,
    interrupt: Armed,
) -> Result<(), LifecycleError> {
    let forwarded = HeadOptions { ray_address: false, ..HeadOptions::default() };
    let options =
        ExportOptions { head: forwarded, run, runs_dir: runs_dir.clone(), steps, to: Some(to.clone()), ..ExportOptions::default() };
    let head = crate::mode::connect(deployment, &options.head, env, progress.clone()).await?;
    let mut keeping = Keeping::new(resolved, state.clone(), env, progress, interrupt, options.timeout, runs_dir).await?;
    let exported = keeping.export(&head, &options).await;
    *state = keeping.state;
    exported.map(drop)
}

/// [`costs`] of the deployment whose state is in `folder` [default: `.gke-rl/<cluster_name>`],
/// read offline: no gcloud, no cluster. Empty when there is no state there.
pub fn recorded_costs(deployment: &Deployment, folder: Option<&std::path::Path>) -> Result<Vec<String>, LifecycleError> {
    let folder = folder.map_or_else(|| crate::site::default_folder(deployment), std::path::Path::to_path_buf);
    let path = folder.join("state.json");
    let text = match crate::files::read_text(&path) {
        Ok(text) => text,
        Err(CommonError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let state = State::from_json(&text).map_err(|source| LifecycleError::State { path, source })?;
    Ok(if state.deployment == deployment.project.cluster_name.as_str() { costs(deployment, &state) } else { Vec::new() })
}

/// What the Lustre instance costs a day, beside what the verified copies in buckets cost a
/// month: the lines of `cost` and of destroy's plan. The copies are counted as the state
/// records them (nothing offline can check their signatures).
pub fn costs(deployment: &Deployment, state: &State) -> Vec<String> {
    let estimate = gke_rl::cost::estimate(deployment);
    let lustre = estimate.lines.iter().find(|line| line.component.starts_with("Lustre"));
    let instance = match lustre.and_then(|line| line.per_hour) {
        Some(per_hour) => format!("the Lustre instance costs ${:.2}/day while it exists", per_hour * 24.0),
        None => "the Lustre instance: unpriced (set cost.lustre_per_gib_month)".to_owned(),
    };
    let copied = state.kept.iter().filter(|k| k.kind != KeptKind::Import).fold(0u64, |sum, k| sum.saturating_add(k.bytes));
    if copied == 0 {
        return vec![format!("{instance}; nothing exported to a bucket yet")];
    }
    vec![format!("{instance}; exported: {}", durability::bucket_cost_line(deployment.project.region.as_str(), copied))]
}

/// What a destroy of the deployment would lose: the runs' checkpoint folders whose newest
/// complete step no verified copy holds.
pub(crate) struct Losses {
    /// What no bucket holds.
    pub at_risk: Vec<AtRisk>,
}

/// What a destroy of the deployment would lose, asked of its RayCluster's head; `state` is
/// the deployment's, whose records of verified copies count when the run key signed them.
pub(crate) async fn losses(
    resolved: &Resolved<'_>,
    state: &State,
    runs_dir: Option<String>,
    env: &Env,
    progress: Arc<dyn Progress>,
    interrupt: Armed,
) -> Result<Losses, LifecycleError> {
    let d = resolved.deployment;
    if let Some(transfer) = &state.transfer {
        return Err(KeepError::TransferRunning {
            what: format!("the {} of step {} of {}", direction_noun(transfer.direction), transfer.step, transfer.checkpoints),
            operation: transfer.operation.clone().unwrap_or_else(|| "not yet answered".to_owned()),
            fix: match transfer.direction {
                Direction::Export => "run `gke-rl export` to follow it to its end and record it, then destroy again",
                Direction::Import => "run `gke-rl deploy` to follow it to its end and record it, then destroy again",
            },
        }
        .into());
    }
    let forwarded = HeadOptions { ray_address: false, ..HeadOptions::default() };
    let head = crate::mode::connect(d, &forwarded, env, progress.clone()).await?;
    let mut keeping = Keeping::new(resolved, state.clone(), env, progress, interrupt, Duration::ZERO, runs_dir).await?;
    let survey = keeping.survey(&head.client).await?;
    if let Some(why) = &survey.runs_unread {
        // Which checkpoint folders its runs write is then unknown.
        return Err(KeepError::Lister { what: "the runs".to_owned(), id: "the survey".to_owned(), why: why.clone() }.into());
    }
    if let Some((folder, why)) = survey.folders.iter().find_map(|f| Some((f, f.unreadable.as_ref()?))) {
        return Err(
            KeepError::Lister { what: format!("checkpoint folder {}", folder.dir), id: "the survey".to_owned(), why: why.clone() }.into()
        );
    }
    // A live run may save a step between the survey and the delete.
    if let Some((folder, claim)) = survey.folders.iter().find_map(|f| Some((f, f.claim.as_ref()?))) {
        return Err(writing(&folder.dir, claim).into());
    }
    // The copies the count relies on are listed again: a bucket folder emptied or changed since
    // it was verified holds the step no more.
    let mut kept = keeping.kept();
    let mut changed = Vec::new();
    for record in checkpoints::relied_on(&survey, &kept) {
        let uri = GcsPath::new(record.uri.as_str())?;
        let there = keeping.bucket_files(&uri)?;
        let (files, bytes) = (there.len() as u64, durability::total_bytes(&there));
        if (files, bytes) != (record.files, record.bytes) {
            let differs = format!(
                "{files} files, {} now; {} files, {} when verified",
                gke_rl::quote::bytes(bytes as f64),
                record.files,
                gke_rl::quote::bytes(record.bytes as f64)
            );
            keeping.progress().lifecycle(LifecycleEvent::KeptChanged { uri: &record.uri, differs: &differs });
            changed.push(record);
        }
    }
    kept.retain(|k| !changed.iter().any(|c| std::ptr::eq(*c, *k)));
    let at_risk = checkpoints::at_risk(&survey, &kept);
    Ok(Losses { at_risk })
}

/// The export command that keeps each of `at_risk`, as a person runs it.
pub(crate) fn export_commands(at_risk: &[AtRisk], to: Option<&GcsPath>) -> Vec<String> {
    let to = to.map_or_else(|| " --to gs://BUCKET/PATH/".to_owned(), |to| format!(" --to {to}"));
    at_risk
        .iter()
        .map(|risk| {
            let run = risk.run.as_deref().map_or_else(String::new, |run| format!(" {}", gke_rl::quote::sh(run)));
            let export = format!("gke-rl export{run} --step {}{to}", risk.step);
            if risk.swapped {
                // Exported once the supervisor has put it back, at the run's next start.
                format!("gke-rl submit (the run's supervisor puts old_step_{0} back as step_{0}), then {export}", risk.step)
            } else {
                export
            }
        })
        .collect()
}

/// Imports the checkpoint `uri` into the deployment's checkpoint folder, as its `step_N`, and
/// records it in `state`: before any job runs, so that the run resumes from it. A folder that
/// holds a newer step is never written into.
pub(crate) async fn import(
    resolved: &Resolved<'_>,
    state: &mut State,
    uri: &CheckpointUri,
    env: &Env,
    progress: Arc<dyn Progress>,
    interrupt: Armed,
) -> Result<(), LifecycleError> {
    let d = resolved.deployment;
    let forwarded = HeadOptions { ray_address: false, ..HeadOptions::default() };
    let head = crate::mode::connect(d, &forwarded, env, progress.clone()).await?;
    let mut keeping = Keeping::new(resolved, state.clone(), env, progress, interrupt, IMPORT_WITHIN, None).await?;
    let imported = keeping.import(&head.client, uri).await;
    *state = keeping.state;
    imported
}

/// The longest deploy follows an import.
const IMPORT_WITHIN: Duration = Duration::from_secs(6 * 3600);
/// How often a transfer is looked at, at most and at first: twice as long each time.
const FIRST_LOOK: Duration = Duration::from_secs(1);
const LOOK_AT_MOST: Duration = Duration::from_secs(30);
/// Failed looks in a row before a transfer is given up on (it goes on in Managed Lustre).
const LOOKS_FAILED: u32 = 5;

fn direction_noun(direction: Direction) -> &'static str {
    match direction {
        Direction::Export => "export",
        Direction::Import => "import",
    }
}

/// What a copy holds: its kind, and the step of the checkpoint folder and run it is of.
#[derive(Clone, Copy)]
struct Of<'a> {
    kind: KeptKind,
    run: &'a str,
    dir: &'a str,
    step: u64,
}

/// One export or import: the deployment, its state, the run key that signs what it records,
/// and what stops it.
struct Keeping<'a> {
    resolved: &'a Resolved<'a>,
    state: State,
    key: Vec<u8>,
    env: &'a Env,
    progress: Arc<dyn Progress>,
    interrupt: Armed,
    timeout: Duration,
    /// The runs folder, when not the deployment's.
    runs_dir: Option<String>,
}

impl<'a> Keeping<'a> {
    async fn new(
        resolved: &'a Resolved<'a>,
        state: State,
        env: &'a Env,
        progress: Arc<dyn Progress>,
        interrupt: Armed,
        timeout: Duration,
        runs_dir: Option<String>,
    ) -> Result<Keeping<'a>, LifecycleError> {
        let d = resolved.deployment;
        let secret = gke_rl::auth::secret_name(d);
        let clusters = resolved.clusters(env).await?;
        let key = clusters.secret_value(&secret, gke_rl::auth::TOKEN_KEY).await?;
        let key = key.map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()).ok_or_else(|| KeepError::NoRunKey {
            namespace: d.ray.namespace.to_string(),
            secret: secret.clone(),
            reason: "it is not there, or holds no key".to_owned(),
        })?;
        for kept in state.kept.iter().filter(|kept| !gke_rl_in_cluster::records::is_genuine(kept, key.as_bytes())) {
            progress.lifecycle(LifecycleEvent::UnsignedKept { uri: &kept.uri });
        }
        Ok(Keeping { resolved, state, key: key.into_bytes(), env, progress, interrupt, timeout, runs_dir })
    }

    fn d(&self) -> &'a Deployment {
        self.resolved.deployment
    }

    fn progress(&self) -> &dyn Progress {
        &*self.progress
    }

    fn save(&self) -> Result<(), LifecycleError> {
        Ok(self.resolved.save_state(&self.state)?)
    }

    /// The genuine records of verified copies: one the run key did not sign (said once, when
    /// the key is read) does not count.
    fn kept(&self) -> Vec<&Kept> {
        self.state.kept.iter().filter(|kept| gke_rl_in_cluster::records::is_genuine(kept, &self.key)).collect()
    }

    fn is_kept(&self, kind: KeptKind, dir: &str, step: u64, uri: &GcsPath) -> bool {
        self.kept().iter().any(|k| k.kind == kind && k.checkpoints == dir && k.step == step && k.uri == uri.as_str())
    }

    /// Whether the step, whose files are `files` now, was copied to `uri` before and the bucket
    /// still holds every one of them: a step saved again since under its number, or a copy
    /// changed in the bucket, is copied again (as destroy's count of what it would lose has it).
    fn verified_before(&self, dir: &str, step: u64, uri: &GcsPath, files: &[File]) -> Result<bool, LifecycleError> {
        let (count, bytes) = (files.len() as u64, durability::total_bytes(files));
        let recorded = self.kept().iter().any(|k| {
            k.kind == KeptKind::Step
                && k.checkpoints == dir
                && k.step == step
                && k.uri == uri.as_str()
                && (k.files, k.bytes) == (count, bytes)
        });
        Ok(recorded && Comparison::of(files, uri, &self.objects(uri)?).holds_all())
    }

    fn read(&self, command: &lifecycle::Command) -> Result<String, RunError> {
        self.resolved.read(self.env, command)
    }

    fn query(&self, what: &str, command: &lifecycle::Command) -> Result<String, LifecycleError> {
        self.read(command).map_err(|e| LifecycleError::Query { what: what.to_owned(), reason: e.to_string() })
    }

    async fn survey(&mut self, client: &Client) -> Result<Survey, LifecycleError> {
        let request = Request::survey(self.d(), self.runs_dir.as_deref());
        crate::lister::answer(
            client,
            &request,
            "the runs' checkpoints",
            checkpoints::survey,
            self.env,
            &mut self.interrupt,
            &*self.progress,
        )
        .await
    }

    /// The files of the folder `name` of `dir`; `None` when it is not there.
    async fn listing(&mut self, client: &Client, dir: &str, name: &str) -> Result<Option<Listing>, LifecycleError> {
        let request = Request::Files { mount: self.d().lustre.mount_path.to_string(), dir: dir.to_owned(), name: name.to_owned() };
        let what = format!("the files of {dir}/{name}");
        let listing =
            crate::lister::answer(client, &request, &what, checkpoints::listing, self.env, &mut self.interrupt, &*self.progress).await?;
        Ok(Some(listing).filter(|l| !l.missing))
    }

    /// The objects under `uri`; none when it holds none.
    fn objects(&self, uri: &GcsPath) -> Result<Vec<Object>, LifecycleError> {
        match self.read(&lifecycle::list_folder(uri)) {
            Ok(text) => durability::objects_from_json(&text)
                .map_err(|reason| LifecycleError::Query { what: format!("cannot read the objects of {uri}"), reason }),
            // gcloud storage fails on a folder with no objects (`One or more URLs matched no objects`).
            Err(RunError::Failed { stderr, .. }) if stderr.contains("matched no objects") => Ok(Vec::new()),
            Err(e) => Err(LifecycleError::Query { what: format!("cannot list the objects of {uri}"), reason: e.to_string() }),
        }
    }

    /// The logged-in gcloud account, for the commands that grant it what it lacks.
    fn account(&self) -> String {
        let account = lifecycle::Preflight::new(self.d(), &self.resolved.site).account;
        self.read(&account)
            .ok()
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty() && !a.contains(char::is_whitespace))
            .unwrap_or_else(|| "ACCOUNT".to_owned())
    }

    /// The bucket of `base` exists (made in the cluster's region when missing and `make`), can
    /// be read, is not one destroy empties, and the Lustre service agent may copy to and from it.
    fn bucket_ready(&self, base: &GcsPath, make: bool) -> Result<(), LifecycleError> {
        let (d, site) = (self.d(), &self.resolved.site);
        let bucket = base.bucket();
        if make && !d.project.existing_cluster {
            let listed =
                self.query("cannot list the deployment's own buckets (destroy empties them)", &lifecycle::list_buckets(d, site))?;
            if listed.lines().any(|b| b.trim().trim_start_matches("gs://").trim_end_matches('/') == bucket) {
                return Err(
                    KeepError::DeploymentsBucket { bucket: bucket.to_owned(), deployment: d.project.cluster_name.to_string() }.into()
                );
            }
        }
        let number = self.query("cannot read the project's number", &lifecycle::project_number(site))?.trim().to_owned();
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(LifecycleError::Query {
                what: "cannot read the project's number".to_owned(),
                reason: format!("gcloud said `{number}`"),
            });
        }
        let caller = || format!("user:{}", self.account());
        match self.read(&lifecycle::describe_bucket(bucket)) {
            Ok(text) => {
                let found = Bucket::from_json(&text)
                    .map_err(|reason| LifecycleError::Query { what: format!("cannot read bucket {bucket}"), reason })?;
                if found.project_number != number {
                    self.progress().lifecycle(LifecycleEvent::BucketOfAnotherProject { bucket, project_number: &found.project_number });
                }
            }
            Err(e) if e.is_not_found() && make => {
                let region = d.project.region.as_str();
                match self.read(&lifecycle::create_bucket(bucket, region, site)) {
                    Ok(_) => self.progress().lifecycle(LifecycleEvent::BucketCreated { bucket, region }),
                    Err(e) => {
                        let fix = lifecycle::grant_account(site, &self.account(), durability::BUCKET_ADMIN_ROLE);
                        return Err(KeepError::Bucket {
                            bucket: bucket.to_owned(),
                            problem: "cannot be made",
                            reason: reason_of(&e),
                            fix: Some(fix),
                        }
                        .into());
                    }
                }
            }
            Err(RunError::Failed { stderr, .. }) if crate::env::not_found(&stderr) => {
                return Err(KeepError::Bucket { bucket: bucket.to_owned(), problem: "does not exist", reason: stderr, fix: None }.into());
            }
            Err(e @ RunError::Failed { .. }) => {
                let fix = lifecycle::grant_on_bucket(bucket, &caller(), durability::BUCKET_ADMIN_ROLE);
                return Err(KeepError::Bucket {
                    bucket: bucket.to_owned(),
                    problem: "cannot be read",
                    reason: reason_of(&e),
                    fix: Some(fix),
                }
                .into());
            }
            Err(e) => return Err(LifecycleError::Query { what: format!("cannot read bucket {bucket}"), reason: e.to_string() }),
        }
        let agent = durability::service_agent(&number);
        let member = format!("serviceAccount:{agent}");
        let granted = self
            .read(&lifecycle::bucket_policy(bucket))
            .ok()
            .is_some_and(|p| durability::policy_grants_agent(&p, &member).unwrap_or(false));
        if !granted {
            let grant = lifecycle::grant_on_bucket(bucket, &member, durability::AGENT_ROLE);
            match self.read(&grant) {
                Ok(_) => self.progress().lifecycle(LifecycleEvent::AgentGranted { bucket, agent: &agent }),
                Err(e) => {
                    let reason = reason_of(&e);
                    // The agent exists once the project had an instance; made by hand otherwise.
                    let fix = if reason.contains("does not exist") {
                        format!("{} && {grant}", lifecycle::create_service_agent(site))
                    } else {
                        grant.to_string()
                    };
                    return Err(
                        KeepError::AgentNotGranted { bucket: bucket.to_owned(), agent, role: durability::AGENT_ROLE, reason, fix }.into()
                    );
                }
            }
        }
        Ok(())
    }

    /// Starts `transfer` (or follows the one it records) to its end; its operation.
    async fn transfer(&mut self, transfer: Transfer) -> Result<Operation, LifecycleError> {
        // Recorded before it starts: an answer that never comes is asked again with the same
        // request id, which Google's APIs take as the same request (AIP-155, google.aip.dev/155;
        // `request_id` of `ExportDataRequest` in googleapis `google/cloud/lustre/v1/transfer.proto`).
        self.state.transfer = Some(transfer.clone());
        self.save()?;
        let uri = GcsPath::new(transfer.uri.as_str())?;
        let (from, to) = match transfer.direction {
            Direction::Export => (transfer.lustre_path.clone(), transfer.uri.clone()),
            Direction::Import => (transfer.uri.clone(), transfer.lustre_path.clone()),
        };
        let name = match &transfer.operation {
            Some(name) => {
                self.progress().lifecycle(LifecycleEvent::TransferStarted {
                    direction: transfer.direction,
                    from: &from,
                    to: &to,
                    operation: name,
                    resumed: true,
                });
                name.clone()
            }
            None => {
                let command = lifecycle::transfer(
                    self.d(),
                    &self.resolved.site,
                    transfer.direction,
                    &transfer.lustre_path,
                    &uri,
                    &transfer.request_id,
                );
                let started = match self.read(&command) {
                    Ok(answer) => Operation::from_json(&answer)
                        .map_err(|reason| LifecycleError::Query { what: format!("cannot read gcloud's answer to `{command}`"), reason })?,
                    Err(RunError::NoAnswer { .. }) => {
                        // It may have started: the record stays, and the next run asks again.
                        return Err(LifecycleError::Query {
                            what: format!(
                                "the {} of {from} to {to} was asked for, and gcloud gave no answer",
                                direction_noun(transfer.direction)
                            ),
                            reason: "run the same command again: it asks with the same request id, which never starts a second transfer"
                                .to_owned(),
                        });
                    }
                    Err(e) if refused_by_the_api(&e) => {
                        self.state.transfer = None;
                        self.save()?;
                        return Err(self.refused(&transfer, from, to, e));
                    }
                    Err(e) => {
                        // gcloud failed without the API's refusal (a signal, a cut connection):
                        // the request may have been taken, and is asked again with its id.
                        return Err(LifecycleError::Query {
                            what: format!("the {} of {from} to {to} was asked for, and gcloud failed ({e})", direction_noun(transfer.direction)),
                            reason: "run the same command again: it asks with the same request id, which Managed Lustre takes as the same request".to_owned(),
                        });
                    }
                };
                if let Some(pending) = &mut self.state.transfer {
                    pending.operation = Some(started.name.clone());
                }
                self.save()?;
                self.progress().lifecycle(LifecycleEvent::TransferStarted {
                    direction: transfer.direction,
                    from: &from,
                    to: &to,
                    operation: &started.name,
                    resumed: false,
                });
                started.name
            }
        };
        match self.follow(transfer.direction, &name).await {
            Err(failed) if matches!(failed.keep(), Some(KeepError::TransferFailed { .. })) => {
                // Ended: the next run starts another, which copies only what is missing.
                self.state.transfer = None;
                self.save()?;
                Err(failed)
            }
            other => other,
        }
    }

    /// Why a transfer's start was refused, with its fix.
    fn refused(&self, transfer: &Transfer, from: String, to: String, error: RunError) -> LifecycleError {
        let reason = reason_of(&error);
        let permission = match transfer.direction {
            Direction::Export => "lustre.instances.exportData",
            Direction::Import => "lustre.instances.importData",
        };
        let fix = if reason.contains("PERMISSION_DENIED") || reason.contains(permission) {
            Some(format!(
                "it needs {permission}, which {} holds: {}",
                durability::TRANSFER_ROLE,
                lifecycle::grant_account(&self.resolved.site, &self.account(), durability::TRANSFER_ROLE)
            ))
        } else if reason.contains("ABORTED") || reason.contains("unable to queue") {
            Some(format!(
                "Managed Lustre runs one transfer at a time on an instance and another runs: wait for it (`gcloud lustre operations list --location {} --project {}`), then run the same command again",
                self.d().project.zone,
                self.resolved.site.project_id
            ))
        } else {
            None
        };
        KeepError::TransferRefused { direction: transfer.direction, from, to, reason, fix }.into()
    }

    /// Follows the operation `name` until it ends, within the timeout; its last look.
    async fn follow(&mut self, direction: Direction, name: &str) -> Result<Operation, LifecycleError> {
        let started = self.env.clock.now();
        let (mut wait, mut failed, mut said) = (FIRST_LOOK, 0, None);
        loop {
            match self.read(&lifecycle::describe_operation(name)) {
                Ok(answer) => {
                    failed = 0;
                    let operation = Operation::from_json(&answer)
                        .map_err(|reason| LifecycleError::Query { what: format!("cannot read operation {name}"), reason })?;
                    if said != Some(operation.counters) {
                        self.progress().lifecycle(LifecycleEvent::TransferProgress(&operation.counters));
                        said = Some(operation.counters);
                    }
                    if operation.done {
                        return match operation.error {
                            Some((code, message)) => Err(KeepError::TransferFailed {
                                direction,
                                operation: operation.name,
                                code,
                                message,
                                failures: operation.failures,
                            }
                            .into()),
                            None => Ok(operation),
                        };
                    }
                }
                Err(RunError::Failed { stderr, .. }) if crate::env::not_found(&stderr) => {
                    return Err(KeepError::TransferFailed {
                        direction,
                        operation: name.to_owned(),
                        code: 5,
                        message: format!("Managed Lustre does not know it ({stderr})"),
                        failures: Vec::new(),
                    }
                    .into());
                }
                Err(e) => {
                    failed += 1;
                    if failed >= LOOKS_FAILED {
                        return Err(LifecycleError::Query {
                            what: format!("cannot look at operation {name} (it goes on in Managed Lustre)"),
                            reason: e.to_string(),
                        });
                    }
                }
            }
            if self.env.clock.now().duration_since(started) >= self.timeout {
                return Err(KeepError::TransferTimedOut { direction, operation: name.to_owned(), after: self.timeout }.into());
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.interrupt.wait() => return Err(LifecycleError::Interrupted { signal: self.interrupt.signal().unwrap_or(2) }),
            }
            wait = (wait * 2).min(LOOK_AT_MOST);
        }
    }

    /// Records a verified copy, signed, and forgets the transfer.
    fn record(&mut self, what: Of<'_>, uri: &GcsPath, files: &[File]) -> Result<Kept, LifecycleError> {
        let Of { kind, run, dir, step } = what;
        let kept = Kept {
            kind,
            run: run.to_owned(),
            checkpoints: dir.to_owned(),
            step,
            uri: uri.to_string(),
            files: files.len() as u64,
            bytes: durability::total_bytes(files),
            at: self.env.clock.unix_millis() / 1000,
            mac: String::new(),
        };
        let kept = gke_rl_in_cluster::records::sign_kept(kept, &self.key);
        self.progress().lifecycle(LifecycleEvent::Verified { uri: &kept.uri, files: kept.files, bytes: kept.bytes });
        self.state.kept.retain(|k| !(k.kind == kind && k.checkpoints == dir && k.step == step && k.uri == kept.uri));
        self.state.kept.push(kept.clone());
        self.state.transfer = None;
        self.save()?;
        Ok(kept)
    }

    /// Copies the folder `source` (as the nodes mount it), whose files are `files`, to `uri`,
    /// verified and recorded as `what`.
    async fn copy_out(&mut self, what: Of<'_>, source: &str, uri: &GcsPath, files: &[File]) -> Result<Kept, LifecycleError> {
        let Of { kind, run, dir, step } = what;
        // Nothing is deleted from a bucket: a step's folder that holds more than the step would
        // give it back with the import. (A run's records only grow; they are never imported.)
        let extra = Comparison::of(files, uri, &self.objects(uri)?).extra;
        if !extra.is_empty() && kind != KeptKind::Records {
            let extra = Comparison { extra, ..Comparison::default() }.describe();
            return Err(KeepError::BucketFolderTaken { uri: uri.to_string(), extra }.into());
        }
        let lustre_path = durability::file_system_path(self.d(), source).ok_or_else(|| outside_mount(self.d(), source))?;
        let transfer = Transfer {
            direction: Direction::Export,
            kind,
            run: run.to_owned(),
            checkpoints: dir.to_owned(),
            step,
            lustre_path,
            uri: uri.to_string(),
            request_id: request_id()?,
            operation: None,
        };
        let operation = self.transfer(transfer).await?;
        self.verified(|keeping| keeping.verify_out(&operation.name, uri, files))?;
        self.record(what, uri, files)
    }

    /// `verify`'s answer on the transfer that just ended: one that did not copy everything is
    /// forgotten, so that the next run starts another, which copies only what is missing.
    fn verified(&mut self, verify: impl FnOnce(&Self) -> Result<(), LifecycleError>) -> Result<(), LifecycleError> {
        let verified = verify(self);
        if verified.is_err() {
            self.state.transfer = None;
            self.save()?;
        }
        verified
    }

    fn verify_out(&self, operation: &str, uri: &GcsPath, files: &[File]) -> Result<(), LifecycleError> {
        let comparison = Comparison::of(files, uri, &self.objects(uri)?);
        if comparison.holds_all() {
            return Ok(());
        }
        Err(KeepError::NotVerified {
            direction: Direction::Export,
            operation: operation.to_owned(),
            what: format!("{uri} lacks what the cluster lists"),
            differs: comparison.describe(),
            fix: AGAIN.to_owned(),
        }
        .into())
    }

    /// Follows a transfer an earlier run recorded to its end, verifies and records it.
    async fn finish_pending(&mut self, client: &Client) -> Result<(), LifecycleError> {
        let Some(transfer) = self.state.transfer.clone() else { return Ok(()) };
        let uri = GcsPath::new(transfer.uri.as_str())?;
        let operation = self.transfer(transfer.clone()).await?;
        let mount = self.d().lustre.mount_path.as_str().trim_end_matches('/');
        let node_path = format!("{mount}{}", transfer.lustre_path.trim_end_matches('/'));
        let (dir, name) = node_path.rsplit_once('/').map(|(dir, name)| (dir.to_owned(), name.to_owned())).unwrap_or_default();
        let listing = match self.listing(client, &dir, &name).await? {
            Some(listing) => listing,
            None => return self.settle_gone(client, &transfer, &uri, &dir, &name).await,
        };
        self.verified(|keeping| match transfer.direction {
            Direction::Export => keeping.verify_out(&operation.name, &uri, &listing.files),
            Direction::Import => keeping.verify_in(&operation.name, &uri, &listing),
        })?;
        if transfer.direction == Direction::Import {
            let (from, to) = (durability::import_folder(transfer.step), durability::step_folder(transfer.step));
            self.commit(client, &transfer.checkpoints, from, to, Some(transfer.step)).await?;
        }
        let what = Of { kind: transfer.kind, run: &transfer.run, dir: &transfer.checkpoints, step: transfer.step };
        self.record(what, &uri, &listing.files)?;
        Ok(())
    }

    /// A recorded transfer whose folder on Lustre is gone: an export's step removed since
    /// (NeMo-RL's `keep_top_k`) is forgotten, nothing recorded; an import whose `tmp_step_N` was
    /// renamed into place before its record was saved is recorded once its `step_N` is the
    /// bucket's.
    async fn settle_gone(
        &mut self,
        client: &Client,
        transfer: &Transfer,
        uri: &GcsPath,
        dir: &str,
        name: &str,
    ) -> Result<(), LifecycleError> {
        let what = Of { kind: transfer.kind, run: &transfer.run, dir: &transfer.checkpoints, step: transfer.step };
        if transfer.direction == Direction::Import {
            let complete = durability::step_folder(transfer.step);
            if let Some(there) = self.listing(client, &transfer.checkpoints, &complete).await? {
                let in_bucket = self.bucket_files(uri)?;
                if same_as_bucket(uri, &in_bucket, &there).0 {
                    self.record(what, uri, &in_bucket)?;
                    return Ok(());
                }
            }
        }
        let why = format!("{dir}/{name} is gone since the {} began, so nothing of it is recorded", direction_noun(transfer.direction));
        self.progress().lifecycle(LifecycleEvent::TransferForgotten { uri: uri.as_str(), why: &why });
        self.state.transfer = None;
        self.save()
    }

    /// The manifest `object` holds; none when there is no such object.
    fn manifest(&self, object: &str) -> Result<Option<durability::Manifest>, LifecycleError> {
        match self.read(&lifecycle::read_object(object)) {
            Ok(text) => durability::Manifest::from_json(&text)
                .map(Some)
                .map_err(|reason| LifecycleError::Query { what: format!("cannot read {object}"), reason }),
            // `The following URLs matched no objects or files`: anything else is no answer.
            Err(RunError::Failed { stderr, .. }) if stderr.contains("matched no objects") => Ok(None),
            Err(e) => Err(LifecycleError::Query { what: format!("cannot read {object}"), reason: e.to_string() }),
        }
    }

    /// The files of the bucket folder `uri`, as paths below it.
    fn bucket_files(&self, uri: &GcsPath) -> Result<Vec<File>, LifecycleError> {
        Ok(self
            .objects(uri)?
            .iter()
            .filter_map(|o| {
                o.name
                    .strip_prefix(uri.prefix())
                    .filter(|rest| !rest.is_empty() && !rest.ends_with('/'))
                    .map(|rest| File { path: rest.to_owned(), size: o.size })
            })
            .collect())
    }

    async fn export(&mut self, head: &Head, options: &ExportOptions) -> Result<Exported, LifecycleError> {
        let d = self.d();
        let client = &head.client;
        let base = options.to.clone().or_else(|| d.storage.export_to.clone()).ok_or(KeepError::NoDestination)?;
        self.bucket_ready(&base, true)?;
        self.finish_pending(client).await?;
        let survey = self.survey(client).await?;
        let folder = chosen(&survey, options.run.as_deref(), d)?;
        if let Some(claim) = &folder.claim {
            return Err(writing(&folder.dir, claim).into());
        }
        if let Some(why) = &folder.unreadable {
            return Err(KeepError::Lister {
                what: format!("checkpoint folder {}", folder.dir),
                id: "the survey".to_owned(),
                why: why.clone(),
            }
            .into());
        }
        let steps = steps_of(&folder, options.steps)?;
        let run = folder.run().unwrap_or(d.job.name.as_str()).to_owned();
        let layout = Layout::new(&base, &run)?;
        let (mut copies, mut already) = (Vec::new(), 0);
        for step in steps {
            let name = durability::step_folder(step);
            let uri = layout.step(step);
            let listing = self.listing(client, &folder.dir, &name).await?.ok_or_else(|| KeepError::NoSuchStep {
                dir: folder.dir.clone(),
                step,
                why: "it is gone".to_owned(),
            })?;
            unexportable(&folder.dir, &name, &listing)?;
            if listing.files.is_empty() && options.steps == Steps::All {
                self.progress().lifecycle(LifecycleEvent::EmptyStepSkipped { dir: &folder.dir, step });
                continue;
            }
            if listing.files.is_empty() {
                return Err(KeepError::NoSuchStep {
                    dir: folder.dir.clone(),
                    step,
                    why: format!("{name} holds no file: no checkpoint was saved there"),
                }
                .into());
            }
            let source = durability::Manifest::source_of(d, self.resolved.site.project_id.as_str(), &folder.dir);
            if let Some(theirs) = self.manifest(&layout.manifest(step))?.filter(|m| m.source != source) {
                return Err(KeepError::AnotherExport { uri: uri.to_string(), step, theirs: theirs.source, ours: source }.into());
            }
            if self.verified_before(&folder.dir, step, &uri, &listing.files)? {
                self.progress().lifecycle(LifecycleEvent::AlreadyKept { uri: uri.as_str() });
                already += 1;
            } else {
                copies.push(
                    self.copy_out(
                        Of { kind: KeptKind::Step, run: &run, dir: &folder.dir, step },
                        &below(&folder.dir, &name),
                        &uri,
                        &listing.files,
                    )
                    .await?,
                );
            }
            // Last, once every file is verified: what an import takes for a whole export.
            let manifest = durability::Manifest { source, run: run.clone(), step, files: listing.files.clone() };
            self.put(&layout.manifest(step), &manifest.to_json())?;
            if options.hf {
                match self.export_hf(head, &folder.dir, &run, &layout, step, &listing).await? {
                    Some(kept) => copies.push(kept),
                    None => already += 1,
                }
            }
        }
        let newest = steps_of(&folder, Steps::Newest).ok().and_then(|s| s.first().copied()).unwrap_or_default();
        if let Some(owner) = folder.run() {
            let runs = self.runs_dir.clone().unwrap_or_else(|| gke_rl_in_cluster::supervisor::runs_dir(d));
            let listing = self
                .listing(client, &runs, owner)
                .await?
                .ok_or_else(|| KeepError::NoSuchRun { run: owner.to_owned(), runs: Vec::new() })?;
            unexportable(&runs, owner, &listing)?;
            copies.push(
                self.copy_out(
                    Of { kind: KeptKind::Records, run: &run, dir: &folder.dir, step: newest },
                    &below(&runs, owner),
                    &layout.records(),
                    &listing.files,
                )
                .await?,
            );
        }
        self.upload_run_files(options, folder.run(), &layout).await?;
        Ok(Exported::Kept { copies, already, run_folder: layout.run().to_string() })
    }

    /// Converts step `step` with NeMo-RL's converter (once: its `step_N-hf` is kept on Lustre),
    /// and exports the model; `None` when a verified copy is there already.
    async fn export_hf(
        &mut self,
        head: &Head,
        dir: &str,
        run: &str,
        layout: &Layout,
        step: u64,
        step_listing: &Listing,
    ) -> Result<Option<Kept>, LifecycleError> {
        let uri = layout.hf(step);
        if self.is_kept(KeptKind::Hf, dir, step, &uri) {
            self.progress().lifecycle(LifecycleEvent::AlreadyKept { uri: uri.as_str() });
            return Ok(None);
        }
        let name = durability::hf_folder(step);
        let converted = match self.listing(&head.client, dir, &name).await? {
            Some(listing) => listing,
            None => {
                self.convert(head, dir, step, step_listing).await?;
                self.listing(&head.client, dir, &name).await?.ok_or_else(|| KeepError::NoSuchStep {
                    dir: dir.to_owned(),
                    step,
                    why: format!("the converter left no {name}"),
                })?
            }
        };
        unexportable(dir, &name, &converted)?;
        self.copy_out(Of { kind: KeptKind::Hf, run, dir, step }, &below(dir, &name), &uri, &converted.files).await.map(Some)
    }

    /// Runs NeMo-RL's converter for step `step` on the head, into `tmp_step_N-hf`, then names
    /// the folder `step_N-hf` once it has succeeded.
    async fn convert(&mut self, head: &Head, dir: &str, step: u64, step_listing: &Listing) -> Result<(), LifecycleError> {
        let draft = durability::hf_draft_folder(step);
        if self.listing(&head.client, dir, &draft).await?.is_some_and(|l| !l.files.is_empty()) {
            return Err(KeepError::NoSuchStep {
                dir: dir.to_owned(),
                step,
                why: format!("{dir}/{draft} holds a conversion that was stopped: remove that folder, then export again"),
            }
            .into());
        }
        let weights = step_listing.weights.as_ref().ok_or_else(|| KeepError::NoConverter { dir: dir.to_owned(), step })?;
        let converter =
            gke_rl::knowledge::hf_converter(&weights.format).ok_or_else(|| KeepError::NoConverter { dir: dir.to_owned(), step })?;
        let step_path = format!("{}/{}", dir.trim_end_matches('/'), durability::step_folder(step));
        let line = converter.command(&step_path, &weights.path, &format!("{}/{draft}", dir.trim_end_matches('/')));
        let prepared = crate::jobs::own_job("hf", Vec::new(), line)?;
        let id = crate::jobs::submit(&head.client, prepared, self.progress()).await?;
        self.progress().lifecycle(LifecycleEvent::Converting { id: &id, script: converter.script });
        let job = match crate::jobs::ended(&head.client, &id, CONVERT_WITHIN, self.env, &mut self.interrupt).await? {
            Some(job) => job,
            None => return Err(LifecycleError::Interrupted { signal: self.interrupt.signal().unwrap_or(2) }),
        };
        if job.status != gke_rl_ray::JobStatus::Succeeded {
            return Err(KeepError::ConverterFailed { id, status: job.status.to_string(), message: job.message.unwrap_or_default() }.into());
        }
        self.commit(&head.client, dir, draft, durability::hf_folder(step), None).await
    }

    /// Writes `text` as the object `object`, through a private temporary file, and checks that
    /// the bucket holds it at its size.
    fn put(&self, object: &str, text: &str) -> Result<(), LifecycleError> {
        let local = |what: &str| {
            let what = what.to_owned();
            move |source| CommonError::Local { what, source }
        };
        let dir = tempfile::Builder::new().prefix("gke-rl-export-").tempdir().map_err(local("cannot make a private folder"))?;
        let path = dir.path().join("object");
        std::fs::File::create_new(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .map_err(local("cannot write a file to upload"))?;
        self.query(&format!("cannot upload {object}"), &lifecycle::upload(&path.display().to_string(), object))?;
        let (folder, name) = object.rsplit_once('/').unwrap_or_default();
        let folder = GcsPath::new(format!("{folder}/"))?;
        let comparison = Comparison::of(&[File { path: name.to_owned(), size: text.len() as u64 }], &folder, &self.objects(&folder)?);
        if !comparison.holds_all() {
            let what = format!("{folder} lacks what was uploaded");
            return Err(KeepError::NotVerified {
                direction: Direction::Export,
                operation: "gcloud storage cp".to_owned(),
                what,
                differs: comparison.describe(),
                fix: AGAIN.to_owned(),
            }
            .into());
        }
        self.progress().lifecycle(LifecycleEvent::Uploaded { object });
        Ok(())
    }

    /// The deployment's config, and the run's report where one can be made, beside the checkpoints.
    async fn upload_run_files(&mut self, options: &ExportOptions, run: Option<&str>, layout: &Layout) -> Result<(), LifecycleError> {
        let d = self.d();
        self.put(
            &format!("{}{}", layout.files(), durability::CONFIG_FILE),
            &(serde_json::to_string_pretty(d).expect("a deployment serializes") + "\n"),
        )?;
        if let Some(run) = run {
            match crate::commands::report(d, &options.head, Some(run), self.env, self.progress.clone()).await {
                Ok((_, report)) => {
                    let text = serde_json::to_string_pretty(&report).expect("a report serializes") + "\n";
                    self.put(&format!("{}{}", layout.files(), durability::REPORT_FILE), &text)?;
                }
                Err(e) => self.progress().lifecycle(LifecycleEvent::NoReport { why: crate::chain(&e) }),
            }
        }
        Ok(())
    }

    async fn import(&mut self, client: &Client, checkpoint: &CheckpointUri) -> Result<(), LifecycleError> {
        let d = self.d();
        let uri = checkpoint.folder();
        let (dir, step) = (d.job.checkpointing.dir.to_string(), checkpoint.step());
        let run = d.job.name.to_string();
        if self.is_kept(KeptKind::Import, &dir, step, &uri) {
            self.progress().lifecycle(LifecycleEvent::AlreadyKept { uri: uri.as_str() });
            return Ok(());
        }
        self.bucket_ready(&uri, false)?;
        if let Some(other) = self.state.transfer.clone().filter(|t| t.direction == Direction::Import && t.uri != uri.as_str()) {
            // Another checkpoint was being imported: this deploy asks for this one.
            let why = format!(
                "this deploy resumes from {uri} instead; remove {} if it is there",
                below(&other.checkpoints, &durability::import_folder(other.step))
            );
            self.progress().lifecycle(LifecycleEvent::TransferForgotten { uri: &other.uri, why: &why });
            self.state.transfer = None;
            self.save()?;
        }
        self.finish_pending(client).await?;
        if self.is_kept(KeptKind::Import, &dir, step, &uri) {
            return Ok(());
        }
        let in_bucket = self.bucket_files(&uri)?;
        if in_bucket.is_empty() {
            return Err(KeepError::EmptyCheckpoint { uri: uri.to_string() }.into());
        }
        // Only a whole export: the manifest its export wrote last, and exactly its files.
        let not_whole = |why: String| KeepError::NotAWholeExport { uri: uri.to_string(), why };
        let manifest = match self.read(&lifecycle::read_object(&checkpoint.manifest())) {
            Ok(text) => durability::Manifest::from_json(&text).map_err(not_whole)?,
            Err(RunError::Failed { .. }) => {
                return Err(not_whole(format!(
                    "there is no {}, which an export writes once every file is verified",
                    checkpoint.manifest()
                ))
                .into());
            }
            Err(e) => return Err(LifecycleError::Query { what: format!("cannot read {}", checkpoint.manifest()), reason: e.to_string() }),
        };
        let listed = Listing { files: in_bucket.clone(), ..Listing::default() };
        let (same, differs) = same_as_bucket(&uri, &manifest.files, &listed);
        if !same || manifest.step != step {
            return Err(not_whole(format!("the folder is not what {} lists ({differs})", checkpoint.manifest())).into());
        }
        let mount = d.lustre.mount_path.to_string();
        let prepare = Request::Prepare { mount: mount.clone(), dir: dir.clone(), step };
        let prepared = crate::lister::answer(
            client,
            &prepare,
            "the checkpoint folder for the import",
            checkpoints::prepared,
            self.env,
            &mut self.interrupt,
            &*self.progress,
        )
        .await?;
        let complete = durability::step_folder(step);
        if prepared.existing {
            // An import that finished before its record: the same files, or another checkpoint.
            let there = self.listing(client, &dir, &complete).await?.unwrap_or_default();
            let (whole, differs) = same_as_bucket(&uri, &in_bucket, &there);
            if !whole {
                return Err(KeepError::NoSuchStep {
                    dir,
                    step,
                    why: format!("{complete} is there and is not {uri} ({differs}): an import never writes over a step"),
                }
                .into());
            }
            self.record(Of { kind: KeptKind::Import, run: &run, dir: &dir, step }, &uri, &in_bucket)?;
            return Ok(());
        }
        let draft = durability::import_folder(step);
        let node_path = format!("{}/{draft}", dir.trim_end_matches('/'));
        let lustre_path = durability::file_system_path(d, &node_path).ok_or_else(|| outside_mount(d, &node_path))?;
        let transfer = Transfer {
            direction: Direction::Import,
            kind: KeptKind::Import,
            run: run.clone(),
            checkpoints: dir.clone(),
            step,
            lustre_path,
            uri: uri.to_string(),
            request_id: request_id()?,
            operation: None,
        };
        let operation = self.transfer(transfer).await?;
        let imported = self.listing(client, &dir, &draft).await?.unwrap_or_default();
        self.verified(|keeping| keeping.verify_in(&operation.name, &uri, &imported))?;
        self.commit(client, &dir, draft, complete, Some(step)).await?;
        self.record(Of { kind: KeptKind::Import, run: &run, dir: &dir, step }, &uri, &in_bucket)?;
        Ok(())
    }

    /// Renames the folder `from` of `dir`, which an import or a conversion filled, to `to`.
    async fn commit(&mut self, client: &Client, dir: &str, from: String, to: String, step: Option<u64>) -> Result<(), LifecycleError> {
        let request = Request::Commit { mount: self.d().lustre.mount_path.to_string(), dir: dir.to_owned(), from, to, step };
        let what = format!("{dir}'s finished folder");
        crate::lister::answer(client, &request, &what, checkpoints::committed, self.env, &mut self.interrupt, &*self.progress).await
    }

    fn verify_in(&self, operation: &str, uri: &GcsPath, imported: &Listing) -> Result<(), LifecycleError> {
        let in_bucket = self.bucket_files(uri)?;
        let (whole, differs) = same_as_bucket(uri, &in_bucket, imported);
        let more_there = imported.files.iter().any(|f| !in_bucket.iter().any(|b| b.path == f.path));
        if whole && imported.refused.is_empty() {
            return Ok(());
        }
        let differs = if imported.refused.is_empty() {
            differs
        } else {
            format!(
                "{differs}; refused: {}",
                imported.refused.iter().map(|r| format!("{}: {}", r.path, r.why)).collect::<Vec<_>>().join(", ")
            )
        };
        let d = self.d();
        let draft =
            below(d.job.checkpointing.dir.as_str(), &durability::import_folder(CheckpointUri::new(uri.as_str()).map_or(0, |c| c.step())));
        let fix = if more_there || !imported.refused.is_empty() {
            format!("remove {draft}, which holds what the bucket does not (left by an earlier import or a save), then deploy again")
        } else {
            AGAIN.to_owned()
        };
        Err(KeepError::NotVerified {
            direction: Direction::Import,
            operation: operation.to_owned(),
            what: format!("the imported folder is not {uri}"),
            differs,
            fix,
        }
        .into())
    }
}

/// What to do when a transfer ended without every file: it copies only what is missing.
const AGAIN: &str = "run the same command again: the next transfer copies only what is missing";

/// How long NeMo-RL's converter may take: a 72B model's shards are read and written once.
const CONVERT_WITHIN: Duration = Duration::from_secs(4 * 3600);

/// Whether the files of a folder on Lustre are the bucket's, exactly (none missing, none more).
fn same_as_bucket(uri: &GcsPath, in_bucket: &[File], there: &Listing) -> (bool, String) {
    let as_objects: Vec<Object> =
        there.files.iter().map(|f| Object { name: format!("{}{}", uri.prefix(), f.path), size: f.size }).collect();
    let comparison = Comparison::of(in_bucket, uri, &as_objects);
    let describe = comparison.describe().replace("in the bucket", "on Lustre").replace("the step lacks", "the bucket lacks");
    (comparison.holds_all() && comparison.extra.is_empty(), describe)
}

/// The refusal a live run's claim on `dir` gives.
fn writing(dir: &str, claim: &checkpoints::Claim) -> KeepError {
    KeepError::RunWriting {
        dir: dir.to_owned(),
        run: claim.run.clone().unwrap_or_else(|| "?".to_owned()),
        submission: claim.submission.clone().unwrap_or_else(|| "?".to_owned()),
        age_s: claim.age_s,
    }
}

/// The folder `name` of `dir`, as the nodes mount it.
fn below(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

/// Refuses a folder that holds what a bucket cannot (links, names that are not UTF-8).
fn unexportable(dir: &str, name: &str, listing: &Listing) -> Result<(), LifecycleError> {
    if listing.refused.is_empty() {
        return Ok(());
    }
    let refused = listing.refused.iter().take(10).map(|r| format!("{}: {}", r.path, r.why)).collect();
    Err(KeepError::Unexportable { dir: dir.to_owned(), folder: name.to_owned(), refused }.into())
}

fn outside_mount(d: &Deployment, path: &str) -> LifecycleError {
    KeepError::NoSuchStep { dir: path.to_owned(), step: 0, why: format!("it is not below the Lustre mount {}", d.lustre.mount_path) }.into()
}

/// The checkpoint folder to export: the one `run` writes, else the config's, else the most
/// recently active run's; each must hold a complete step.
fn chosen(survey: &Survey, run: Option<&str>, d: &Deployment) -> Result<Folder, LifecycleError> {
    let with_steps = |f: &&Folder| !f.steps.is_empty();
    if let Some(run) = run {
        let folder = survey.folders.iter().find(|f| f.runs.iter().any(|r| r.run == run));
        let runs = survey.folders.iter().flat_map(|f| f.runs.iter().map(|r| r.run.clone())).collect();
        return folder.cloned().ok_or_else(|| KeepError::NoSuchRun { run: run.to_owned(), runs }.into());
    }
    let configured = d.job.checkpointing.dir.as_str().trim_end_matches('/');
    let config = survey.folders.iter().find(|f| f.dir.trim_end_matches('/') == configured).filter(with_steps);
    let latest = || {
        survey.folders.iter().filter(with_steps).max_by(|a, b| {
            let last = |f: &Folder| f.runs.last().map_or(0.0, |r| r.last);
            last(a).total_cmp(&last(b))
        })
    };
    config.or_else(latest).cloned().ok_or_else(|| {
        let looked = survey
            .folders
            .iter()
            .map(|f| format!("{} ({})", f.dir, f.missing.as_deref().unwrap_or("no complete step_N")))
            .collect::<Vec<_>>()
            .join(", ");
        KeepError::NothingToExport { looked: format!("no checkpoint folder holds a complete step: {looked}") }.into()
    })
}

/// The steps of `folder` that `steps` asks for; refused when the one named is no complete step.
fn steps_of(folder: &Folder, steps: Steps) -> Result<Vec<u64>, LifecycleError> {
    match steps {
        Steps::All => Ok(folder.steps.clone()),
        // The survey's newest complete step holds a file: an empty `step_N` is no checkpoint.
        Steps::Newest => folder.newest.as_ref().map(|newest| vec![newest.step]).ok_or_else(|| {
            KeepError::NothingToExport { looked: format!("{} holds no complete step_N with a file in it", folder.dir) }.into()
        }),
        Steps::Step(step) if folder.steps.contains(&step) => Ok(vec![step]),
        Steps::Step(step) => {
            let name = durability::step_folder(step);
            let why = if folder.partial.contains(&step) {
                format!("it is still being written (tmp_step_{step}), or a save that was stopped left it half-written")
            } else if let Some(refused) = folder.refused.iter().find(|r| r.name == name) {
                format!("{name} is {}", refused.why)
            } else {
                format!(
                    "there is no {name}; its complete steps are {}",
                    if folder.steps.is_empty() {
                        "none".to_owned()
                    } else {
                        folder.steps.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
                    }
                )
            };
            Err(KeepError::NoSuchStep { dir: folder.dir.clone(), step, why }.into())
        }
    }
}

/// Whether gcloud's failure is the API refusing the request (its canonical codes), so that
/// nothing was started.
fn refused_by_the_api(error: &RunError) -> bool {
    const REFUSALS: [&str; 7] =
        ["PERMISSION_DENIED", "ABORTED", "FAILED_PRECONDITION", "INVALID_ARGUMENT", "NOT_FOUND", "UNAUTHENTICATED", "unable to queue"];
    matches!(error, RunError::Failed { stderr, .. } if REFUSALS.iter().any(|code| stderr.contains(code)))
}

/// What gcloud said, for an error's reason.
fn reason_of(error: &RunError) -> String {
    match error {
        RunError::Failed { stderr, .. } if !stderr.is_empty() => {
            stderr.lines().filter(|l| !l.trim().is_empty()).take(3).collect::<Vec<_>>().join(" ")
        }
        other => other.to_string(),
    }
}

/// A random UUID (version 4), a transfer's request id.
fn request_id() -> Result<String, LifecycleError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| CommonError::Local { what: "cannot draw a request id".into(), source: std::io::Error::other(e.to_string()) })?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_version_4_uuids() {
        let id = request_id().unwrap();
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
        assert!(parts[2].starts_with('4') && matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'), "{id}");
        assert_ne!(request_id().unwrap(), id);
    }
}
