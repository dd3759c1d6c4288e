//! Destroy: remove every billable resource a deploy created, and prove it with gcloud.

use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use gke_rl::Deployment;
use gke_rl::durability;
use gke_rl::lifecycle::{self, Direction, State, Step, existing};
use gke_rl::model::GcsPath;
use gke_rl_kube::Wait;

use crate::events::{LifecycleEvent, Progress, Question};
use crate::site::{Resolved, SiteOptions};
use crate::{CommonError, Env, KeepError, LifecycleError};

/// How to destroy.
#[derive(Clone, Debug, Default)]
pub struct DestroyOptions {
    /// Which deployment, where.
    pub target: SiteOptions,
    /// Turn off the add-ons deploy turned on in an existing cluster.
    pub disable_addons: bool,
    /// Export every checkpoint the Lustre instance alone holds to this bucket folder first.
    pub export_to: Option<GcsPath>,
    /// Delete the Lustre instance even with checkpoints no bucket holds, or when what it holds
    /// cannot be listed (after the question, which names them).
    pub discard_checkpoints: bool,
    /// The folder of runs on the shared file system, as `submit --runs-dir` names it
    /// [default: `<mount>/gke-rl/runs`].
    pub runs_dir: Option<String>,
}

/// How a destroy ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Destroyed {
    /// gcloud finds nothing left; the state file is removed.
    Destroyed {
        /// How long it took.
        took: Duration,
        /// On a cluster gke-rl did not create: the command that turns off the add-ons deploy
        /// turned on, which stay on (destroy turns them off only with `--disable-addons`).
        addons_left_on: Option<String>,
    },
    /// There is no state in the deployment folder: gke-rl destroys only what its deploy recorded.
    NothingRecorded {
        /// The folder looked in.
        folder: PathBuf,
    },
    /// The question before deleting was answered no: nothing was deleted.
    Declined,
    /// Something still exists (or gcluster destroy failed); the state stays.
    NotDestroyed {
        /// What remains, for people.
        remains: Vec<String>,
        /// The state file.
        state: PathBuf,
    },
    /// Interrupted; nothing is lost: a second destroy finishes.
    Interrupted {
        /// The signal's number (2 for Ctrl-C, 15 for SIGTERM, 1 for SIGHUP).
        signal: i32,
    },
}

/// What a dry run of destroy shows.
#[derive(Debug)]
pub enum Plan {
    /// What goes and every command, as text.
    Steps(String),
    /// There is no state in the deployment folder.
    NothingRecorded {
        /// The folder looked in.
        folder: PathBuf,
    },
}

/// The plan (`--dry-run`): what would go, and every command; what the Lustre instance holds
/// that no bucket does, as the cluster lists it, and what the instance and the copies cost.
pub async fn plan(
    deployment: &Deployment,
    options: &DestroyOptions,
    env: &Env,
    progress: Arc<dyn Progress>,
) -> Result<Plan, LifecycleError> {
    let resolved = options.target.resolve(deployment, env, false)?;
    let Some(state) = resolved.load_state()? else { return Ok(Plan::NothingRecorded { folder: resolved.folder().to_owned() }) };
    let mut plan = lifecycle::destroy_plan(deployment, &resolved.site, &state, None, options.disable_addons);
    if deletes_instance(deployment, &state, env, &resolved) {
        let interrupt = env.interrupt.arm()?;
        let said = match crate::keep::losses(&resolved, &state, options.runs_dir.clone(), env, progress, interrupt).await {
            Ok(losses) if losses.at_risk.is_empty() => {
                vec!["every complete checkpoint on the instance is in a bucket, verified".to_owned()]
            }
            Ok(losses) => {
                let commands =
                    crate::keep::export_commands(&losses.at_risk, options.export_to.as_ref().or(deployment.storage.export_to.as_ref()));
                let mut lines = vec![if options.export_to.is_some() {
                    "exported first (--export-to), then the instance is deleted:".to_owned()
                } else if options.discard_checkpoints {
                    "LOST with the instance (--discard-checkpoints):".to_owned()
                } else {
                    "destroy refuses: these checkpoints are on the instance only (export them, or --discard-checkpoints):".to_owned()
                }];
                lines.extend(losses.at_risk.iter().zip(&commands).map(|(risk, command)| format!("  {risk}\n      $ {command}")));
                lines
            }
            Err(LifecycleError::Interrupted { .. }) => vec!["what the instance holds was not listed: interrupted".to_owned()],
            Err(e) => vec![format!(
                "destroy refuses unless --discard-checkpoints: what the instance holds cannot be listed ({})",
                crate::chain(&e)
            )],
        };
        plan.resources.extend(said);
    }
    plan.resources.extend(crate::keep::costs(deployment, &state));
    Ok(Plan::Steps(plan.to_string()))
}

/// Whether the destroy deletes a Lustre instance deploy created (on gcluster's path, with the
/// rest; on a cluster gke-rl did not create, by name, when it carries the deployment's label),
/// once pods may have written it.
fn deletes_instance(deployment: &Deployment, state: &State, env: &Env, resolved: &Resolved<'_>) -> bool {
    // What the state records decides, as it decides the delete: not the config's
    // `lustre.existing`, which may have changed since. Pods may have written the instance once
    // deploy made the namespace's Secret: steps redone since (a config changed, a new address)
    // do not undo that, so `created` says it, not the steps done.
    let made = state.created.lustre_instance.is_some();
    let written = state.created.namespace.is_some();
    let ours = || !state.existing_cluster || crate::existing::read_instance(env, resolved).map_or(true, |found| found.made_by(deployment));
    made && written && ours()
}

/// What the destroy learned before it deletes the instance.
#[derive(Default)]
struct Kept {
    /// The lines the question adds: what is lost.
    lost: Vec<String>,
    /// Why the cluster's Kubernetes API cannot be used, when the listing found so.
    api_unusable: Option<String>,
}

/// Before the instance is deleted: what it alone holds is exported (`export_to`), or named in
/// the question (`discard_checkpoints`), or the destroy is refused.
async fn keep_first(
    deployment: &Deployment,
    options: &DestroyOptions,
    resolved: &Resolved<'_>,
    state: &mut State,
    env: &Env,
    progress: Arc<dyn Progress>,
    interrupt: &crate::env::Armed,
) -> Result<Kept, LifecycleError> {
    let losses = match crate::keep::losses(resolved, state, options.runs_dir.clone(), env, progress.clone(), interrupt.clone()).await {
        Ok(losses) => losses,
        Err(e @ LifecycleError::Interrupted { .. }) => return Err(e),
        Err(e) if options.discard_checkpoints => {
            let lost = vec![format!("LOST: whatever the Lustre instance holds, which could not be listed ({})", crate::chain(&e))];
            return Ok(Kept { lost, api_unusable: e.api_unusable() });
        }
        // A refusal of its own (a run writing, a transfer in flight) says what to do; anything
        // else means the cluster could not tell.
        Err(e) if e.keep().is_some_and(|keep| !matches!(keep, KeepError::Lister { .. })) => return Err(e),
        Err(e) => return Err(KeepError::CannotSurvey { instance: deployment.lustre.instance_id.to_string(), why: crate::chain(&e) }.into()),
    };
    if losses.at_risk.is_empty() {
        return Ok(Kept::default());
    }
    if let Some(to) = &options.export_to {
        for risk in &losses.at_risk {
            let steps = crate::keep::Steps::Step(risk.step);
            crate::keep::export_locked(
                deployment,
                resolved,
                state,
                risk.run.clone(),
                options.runs_dir.clone(),
                steps,
                to,
                env,
                progress.clone(),
                interrupt.clone(),
            )
            .await?;
        }
        // Asked again: only what is now verified in a bucket counts.
        let again = crate::keep::losses(resolved, state, options.runs_dir.clone(), env, progress, interrupt.clone()).await?;
        if again.at_risk.is_empty() {
            return Ok(Kept::default());
        }
        let export = crate::keep::export_commands(&again.at_risk, Some(to));
        return Err(KeepError::AtRisk { risky: again.at_risk, export }.into());
    }
    if options.discard_checkpoints {
        return Ok(Kept { lost: losses.at_risk.iter().map(|risk| format!("LOST: {risk}")).collect(), api_unusable: None });
    }
    let export = crate::keep::export_commands(&losses.at_risk, deployment.storage.export_to.as_ref());
    Err(KeepError::AtRisk { risky: losses.at_risk, export }.into())
}

/// Deletes the RayCluster (when the cluster's API answers), empties the buckets, runs
/// `gcluster destroy`, and asks gcloud what remains.
pub async fn destroy(
    deployment: &Deployment,
    options: &DestroyOptions,
    env: &Env,
    progress_arc: Arc<dyn Progress>,
) -> Result<Destroyed, LifecycleError> {
    let progress: &dyn Progress = &*progress_arc;
    let mut interrupt = env.interrupt.arm()?;
    let resolved = options.target.resolve(deployment, env, false)?;
    // No folder, nothing of it to race over. A folder that cannot be locked is destroyed
    // anyway: refusing would leave resources billing.
    let folder = resolved.folder();
    let _held = match folder.is_dir().then(|| crate::site::lock_folder(folder, "gke-rl destroy")).transpose() {
        Ok(held) => held,
        Err(busy @ LifecycleError::FolderInUse { .. }) => return Err(busy),
        Err(other) => {
            progress.lifecycle(LifecycleEvent::Unlocked { folder, why: other.to_string() });
            None
        }
    };
    let d = deployment;
    let Some(mut state) = resolved.load_state()? else {
        // A cluster gke-rl did not create: without the record of what deploy made there, it
        // deletes nothing.
        if d.project.existing_cluster {
            return Ok(Destroyed::NothingRecorded { folder: resolved.folder().to_owned() });
        }
        // No state, perhaps a lost folder: never "nothing to destroy" while resources bill.
        let remains = leftovers(env, &resolved);
        if remains.is_empty() {
            return Ok(Destroyed::NothingRecorded { folder: resolved.folder().to_owned() });
        }
        return without_state(env, &resolved, options, &remains, &mut interrupt, progress).await;
    };
    let provisioned = state.done(Step::Render) && !state.existing_cluster;
    let surveys = deletes_instance(d, &state, env, &resolved);
    let kept = if surveys {
        // The cluster is asked through the kubeconfig entry gcloud writes now, not one left from
        // before (another machine's deploy, an address that changed).
        if !resolved.stream(env, progress, &lifecycle::credentials(d, resolved.site.project_id.as_str())) && !options.discard_checkpoints {
            let why = "gcloud could not write the cluster's kubeconfig entry (its output is above)".to_owned();
            return Err(KeepError::CannotSurvey { instance: d.lustre.instance_id.to_string(), why }.into());
        }
        match keep_first(d, options, &resolved, &mut state, env, progress_arc.clone(), &interrupt).await {
            Ok(kept) => kept,
            Err(LifecycleError::Interrupted { signal }) => return Ok(Destroyed::Interrupted { signal }),
            Err(e) => return Err(e),
        }
    } else {
        Kept::default()
    };
    let buckets = if provisioned { buckets(env, &resolved)? } else { Vec::new() };
    let mut plan = lifecycle::destroy_plan(d, &resolved.site, &state, Some(&buckets), options.disable_addons);
    plan.resources.extend(kept.lost);
    plan.resources.extend(crate::keep::costs(d, &state));
    let preview = plan.preview();
    match progress.confirm(&Question::Destroy { preview: &preview }) {
        Ok(true) => {}
        Ok(false) => return Ok(Destroyed::Declined),
        Err(reason) => return Err(LifecycleError::Unanswered { question: preview, reason }),
    }
    // A run may have saved a step while the question waited: asked again, nothing more may be
    // at risk than was agreed to (nothing, unless the checkpoints are discarded).
    if surveys && !options.discard_checkpoints {
        let again = DestroyOptions { export_to: None, ..options.clone() };
        match keep_first(d, &again, &resolved, &mut state, env, progress_arc.clone(), &interrupt).await {
            Ok(_) => {}
            Err(LifecycleError::Interrupted { signal }) => return Ok(Destroyed::Interrupted { signal }),
            Err(e) => return Err(e),
        }
    }

    let started = env.clock.now();
    let mut teardown_failed = false;
    let objects_gone = !state.done(Step::Credentials)
        || match &kept.api_unusable {
            Some(reason) => {
                progress.lifecycle(LifecycleEvent::ClusterObjectsSkipped {
                    reason: &format!("cannot use the cluster's Kubernetes API: {reason}"),
                });
                false
            }
            None => delete_ray_cluster(env, &resolved, state.created.volume.as_deref(), &mut interrupt, progress).await,
        };
    if interrupt.is_set() {
        return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
    }
    if state.existing_cluster {
        // The cluster stays: what gke-rl put on it must go now, or it runs on.
        let mut remains = Vec::new();
        if !objects_gone {
            remains.push(format!(
                "RayCluster {}, its Secrets, helpers and Lustre volume in namespace {} of cluster {} (its API could not be used)",
                d.project.cluster_name, d.ray.namespace, d.project.cluster_name
            ));
        }
        return on_existing_cluster(env, &resolved, state, options, remains, &mut interrupt, progress, started).await;
    }
    if provisioned {
        for (bucket, objects) in buckets.iter().filter(|(_, objects)| *objects > 0) {
            let emptied = resolved.stream(env, progress, &lifecycle::empty_bucket(bucket));
            if interrupt.is_set_after(emptied).await {
                return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
            }
            if !emptied {
                return Err(LifecycleError::BucketNotEmptied { bucket: bucket.clone(), objects: *objects });
            }
        }
        let gcluster_folder = resolved.site.folder().gcluster(d);
        if std::path::Path::new(&gcluster_folder).is_dir() && !resolved.stream(env, progress, &lifecycle::teardown(d, &resolved.site)) {
            if interrupt.is_set_after(false).await {
                return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
            }
            progress.lifecycle(LifecycleEvent::TeardownFailed);
            teardown_failed = true;
        }
    }

    let mut remains = leftovers(env, &resolved);
    if teardown_failed {
        // What gcloud is not asked about (networks, service accounts) may remain too.
        remains.push(format!(
            "whatever else gcluster did not destroy (networks, firewall rules, service accounts of {})",
            d.project.cluster_name
        ));
    }
    if !remains.is_empty() {
        return Ok(Destroyed::NotDestroyed { remains, state: resolved.state_path() });
    }
    let state_path = resolved.state_path();
    std::fs::remove_file(&state_path).map_err(|source| CommonError::Write { path: state_path, source })?;
    Ok(Destroyed::Destroyed { took: env.clock.now() - started, addons_left_on: None })
}

/// The rest of a destroy on a cluster gke-rl did not create, after its Kubernetes objects
/// (`remains` says whether they stayed): the Lustre instance if deploy
/// created it, the add-ons it turned on if asked; never the cluster, its pools, or an attached
/// instance. Then asks gcloud whether the instance it deleted is gone.
#[allow(clippy::too_many_arguments)] // one destroy's whole context
async fn on_existing_cluster(
    env: &Env,
    resolved: &Resolved<'_>,
    state: gke_rl::lifecycle::State,
    options: &DestroyOptions,
    mut remains: Vec<String>,
    interrupt: &mut crate::env::Armed,
    progress: &dyn Progress,
    started: std::time::Instant,
) -> Result<Destroyed, LifecycleError> {
    let (d, site) = (resolved.deployment, &resolved.site);
    // An instance that pods may still mount stays until they are gone; one that does not
    // carry this deployment's label is not the one deploy created (a create that lost a race
    // to another's of the same name), and stays.
    if state.created.lustre_instance.is_some() && remains.is_empty() {
        let ours = match crate::existing::read_instance(env, resolved) {
            Ok(found) => found.made_by(d),
            // Gone already, or not to be read: the delete says which, and the leftovers after.
            Err(_) => true,
        };
        if ours {
            let deleted = resolved.stream(env, progress, &lifecycle::delete_lustre(d, site));
            if interrupt.is_set_after(deleted).await {
                return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
            }
            remains.extend(named_leftovers(env, resolved));
        } else {
            progress.lifecycle(LifecycleEvent::NotOurs {
                what: &format!(
                    "Lustre instance {}: it lacks the label {}={}, so gke-rl did not create it",
                    d.lustre.instance_id,
                    existing::INSTANCE_LABEL,
                    d.project.cluster_name
                ),
            });
        }
    }
    let addons: Vec<&str> = state.created.addons.iter().map(String::as_str).collect();
    // Turned off only once no pod of the deployment needs them any more.
    if options.disable_addons && !addons.is_empty() && remains.is_empty() {
        let turned_off = resolved.stream(env, progress, &lifecycle::update_addons(d, site, &addons, false));
        if interrupt.is_set_after(turned_off).await {
            return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
        }
        // Then asked again, as the rest is.
        match crate::existing::read_cluster(env, resolved) {
            Ok(cluster) => {
                let still_on: Vec<&str> = addons.iter().copied().filter(|a| !cluster.addons_off().contains(a)).collect();
                if !still_on.is_empty() {
                    remains.push(format!(
                        "add-ons {} of cluster {} (still on after gcloud was asked to turn them off)",
                        still_on.join(", "),
                        d.project.cluster_name
                    ));
                }
            }
            Err(reason) => remains.push(format!("add-ons {} of cluster {} (unknown: {reason})", addons.join(", "), d.project.cluster_name)),
        }
    }
    if !remains.is_empty() {
        return Ok(Destroyed::NotDestroyed { remains, state: resolved.state_path() });
    }
    let state_path = resolved.state_path();
    std::fs::remove_file(&state_path).map_err(|source| CommonError::Write { path: state_path, source })?;
    let addons_left_on =
        (!options.disable_addons && !addons.is_empty()).then(|| lifecycle::update_addons(d, site, &addons, false).to_string());
    Ok(Destroyed::Destroyed { took: env.clock.now() - started, addons_left_on })
}

/// Deletes with gcloud what exists of the deployment (its clusters and buckets by gcluster's
/// `ghpc_deployment` label, its Lustre instance by name) when its folder, and with it gcluster's Terraform state, is gone;
/// then asks gcloud again.
async fn without_state(
    env: &Env,
    resolved: &Resolved<'_>,
    options: &DestroyOptions,
    remains: &[String],
    interrupt: &mut crate::env::Armed,
    progress: &dyn Progress,
) -> Result<Destroyed, LifecycleError> {
    let (d, site) = (resolved.deployment, &resolved.site);
    // The records of what a bucket holds went with the state: every checkpoint on the instance
    // may be its only copy. (The config's instance, which it attaches, is never deleted.)
    let deletes_instance = !named_leftovers(env, resolved).is_empty();
    if deletes_instance && !options.discard_checkpoints {
        let checkpoints = durability::file_system_path(d, d.job.checkpointing.dir.as_str()).unwrap_or_else(|| "/".to_owned());
        let export = lifecycle::transfer_by_hand(d, site, Direction::Export, &checkpoints, "gs://BUCKET/PATH/").to_string();
        return Err(
            KeepError::StateLost { instance: d.lustre.instance_id.to_string(), folder: resolved.folder().to_owned(), export }.into()
        );
    }
    let buckets = buckets(env, resolved)?;
    // Each labelled cluster where it is, then the Lustre instance.
    let clusters = labelled_clusters(env, resolved).unwrap_or_default();
    let mut commands: Vec<_> = clusters.iter().map(|(name, location)| lifecycle::delete_cluster(name, location, site)).collect();
    if deletes_instance {
        commands.push(lifecycle::delete_lustre(d, site));
    }
    for (bucket, _) in &buckets {
        commands.push(lifecycle::empty_bucket(bucket));
        commands.push(lifecycle::delete_bucket(bucket, site));
    }
    let lost = if deletes_instance { "\nLOST with the instance (--discard-checkpoints): every file on it" } else { "" };
    let preview = format!(
        "no deployment state in {}, but these of {} exist and may bill:\n{}\ndelete them with gcloud (gcluster's state is lost with the folder):\n{}{lost}",
        resolved.folder().display(),
        d.project.cluster_name,
        remains.iter().map(|r| format!("  - {r}")).collect::<Vec<_>>().join("\n"),
        commands.iter().map(|c| format!("  $ {c}")).collect::<Vec<_>>().join("\n"),
    );
    match progress.confirm(&Question::Destroy { preview: &preview }) {
        Ok(true) => {}
        Ok(false) => return Ok(Destroyed::Declined),
        Err(reason) => return Err(LifecycleError::Unanswered { question: preview, reason }),
    }
    let started = env.clock.now();
    for command in &commands {
        // A resource already gone fails its delete; what remains is asked below.
        let done = resolved.stream(env, progress, command);
        if interrupt.is_set_after(done).await {
            return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
        }
    }
    let mut remains = leftovers(env, resolved);
    if !remains.is_empty() {
        remains.push(format!("networks, firewall rules and service accounts gcluster made for {}", d.project.cluster_name));
        return Ok(Destroyed::NotDestroyed { remains, state: resolved.state_path() });
    }
    progress.lifecycle(LifecycleEvent::MayRemainWithoutState { name: d.project.cluster_name.as_str() });
    Ok(Destroyed::Destroyed { took: env.clock.now() - started, addons_left_on: None })
}

/// The blueprint's buckets and how many objects each holds.
fn buckets(env: &Env, resolved: &Resolved<'_>) -> Result<Vec<(String, usize)>, LifecycleError> {
    let listed = resolved
        .read(env, &lifecycle::list_buckets(resolved.deployment, &resolved.site))
        .map_err(|reason| LifecycleError::Query { what: "cannot list the buckets".into(), reason: reason.to_string() })?;
    listed
        .lines()
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            let name = name.trim_start_matches("gs://").trim_end_matches('/').to_owned();
            // `gcloud storage ls` fails on a bucket with no objects, saying so; any other failure
            // leaves its count unknown, never 0.
            let objects = match resolved.read(env, &lifecycle::list_objects(&name)) {
                Ok(listed) => listed.lines().filter(|l| !l.trim().is_empty()).count(),
                Err(crate::RunError::Failed { stderr, .. }) if stderr.contains("matched no objects") => 0,
                Err(reason) => {
                    return Err(LifecycleError::Query {
                        what: format!("cannot count the objects of bucket {name}"),
                        reason: reason.to_string(),
                    });
                }
            };
            Ok((name, objects))
        })
        .collect()
}

/// Deletes the RayCluster and the Secret and waits for the pods to go; when the cluster's API
/// cannot be used, says so and leaves them to go with the cluster.
async fn delete_ray_cluster(
    env: &Env,
    resolved: &Resolved<'_>,
    volume: Option<&str>,
    interrupt: &mut crate::env::Armed,
    progress: &dyn Progress,
) -> bool {
    if !resolved.stream(env, progress, &lifecycle::credentials(resolved.deployment, resolved.site.project_id.as_str())) {
        progress.lifecycle(LifecycleEvent::ClusterObjectsSkipped { reason: "the cluster has no credentials to give (already gone?)" });
        return false;
    }
    if let Err(e) = delete_objects(env, resolved, volume, interrupt, progress).await {
        progress.lifecycle(LifecycleEvent::ClusterObjectsSkipped {
            reason: &format!("cannot use the cluster's Kubernetes API: {}", crate::chain(&e)),
        });
        return false;
    }
    true
}

async fn delete_objects(
    env: &Env,
    resolved: &Resolved<'_>,
    volume: Option<&str>,
    interrupt: &mut crate::env::Armed,
    progress: &dyn Progress,
) -> Result<(), LifecycleError> {
    let d = resolved.deployment;
    let clusters = resolved.clusters(env).await?;
    let (namespace, name) = (d.ray.namespace.as_str(), d.project.cluster_name.as_str());
    // Every Ray pod holds Lustre: the long-lived RayCluster's, and those of gke-rl's RayJobs,
    // whichever the mode (it may have changed since they were made).
    // On a cluster gke-rl did not create, a RayCluster of that name it did not apply stays, pods
    // and all.
    let foreign = d.project.existing_cluster && clusters.managed_by_gke_rl(name).await? == Some(false);
    let mut pods_of = Vec::new();
    if !foreign {
        pods_of.push(name.to_owned());
        if clusters.delete(name).await? {
            progress.lifecycle(LifecycleEvent::Deleted { kind: "RayCluster", namespace, name });
        }
    }
    for (job, cluster) in clusters.managed_ray_jobs().await? {
        if clusters.delete_ray_job(&job, None).await? {
            progress.lifecycle(LifecycleEvent::Deleted { kind: "RayJob", namespace, name: &job });
        }
        pods_of.extend(cluster);
    }
    // The run keeper and the idle guard, and a Ray without tokens' NetworkPolicy: on a cluster
    // gke-rl did not create, nothing else takes them away.
    for (what, manifests) in gke_rl_in_cluster::every_helper(d) {
        let objects = clusters.delete_all(&manifests).await?;
        if !objects.is_empty() {
            progress.lifecycle(LifecycleEvent::HelperDeleted { what, namespace, objects: &objects });
        }
    }
    let policy = gke_rl::auth::network_policy_name(d);
    if clusters.delete_network_policy(&policy).await? {
        progress.lifecycle(LifecycleEvent::Deleted { kind: "NetworkPolicy", namespace, name: &policy });
    }
    for secret in lifecycle::cluster_secrets(d) {
        if clusters.delete_secret(&secret).await? {
            progress.lifecycle(LifecycleEvent::Deleted { kind: "Secret", namespace, name: &secret });
        }
    }
    let wait = Wait { timeout: Duration::from_secs(600), poll: env.poll };
    let gone = async {
        for cluster in &pods_of {
            clusters.wait_pods_gone(cluster, wait).await?;
        }
        Ok::<_, gke_rl_kube::Error>(())
    };
    tokio::select! {
        gone = gone => gone?,
        () = interrupt.wait() => return Ok(()),
    }
    progress.lifecycle(LifecycleEvent::PodsGone);
    // Once no pod mounts it; the volume's policy is Retain: the data stays on Lustre.
    if let Some(volume) = volume {
        let objects = clusters.delete_all(&crate::existing::volume_objects(d, volume)).await?;
        if !objects.is_empty() {
            progress.lifecycle(LifecycleEvent::HelperDeleted { what: "Lustre volume", namespace, objects: &objects });
        }
    }
    Ok(())
}

/// The deployment's clusters by label, anywhere in the project: one in another region than the
/// config's counts too.
fn labelled_clusters(env: &Env, resolved: &Resolved<'_>) -> Result<Vec<(String, String)>, String> {
    resolved
        .read(env, &lifecycle::labelled_clusters(resolved.deployment, &resolved.site))
        .map(|listed| lifecycle::clusters_listed(&listed))
        .map_err(|e| e.to_string())
}

/// What still exists of what gke-rl finds by name (the Lustre instance), by asking gcloud.
fn named_leftovers(env: &Env, resolved: &Resolved<'_>) -> Vec<String> {
    let mut remains = Vec::new();
    // Only gcloud's "not found" proves it is gone: a refused login or role, or no answer in
    // time, says nothing, and what it asked about may remain (and bill).
    for (what, command) in lifecycle::leftovers(resolved.deployment, &resolved.site) {
        match resolved.read(env, &command) {
            Ok(out) if !out.trim().is_empty() => remains.push(what),
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(reason) => remains.push(format!("{what} (unknown: {reason})")),
        }
    }
    remains
}

/// What still exists, by asking gcloud.
fn leftovers(env: &Env, resolved: &Resolved<'_>) -> Vec<String> {
    let d = resolved.deployment;
    let label = format!("labelled ghpc_deployment={} and ghpc_blueprint={}", d.project.cluster_name, gke_rl::knowledge::PATCHED_BLUEPRINT);
    let mut remains: Vec<String> = match labelled_clusters(env, resolved) {
        Ok(clusters) => clusters.iter().map(|(name, location)| format!("GKE cluster {name} ({location}, {label})")).collect(),
        Err(reason) => vec![format!("GKE clusters {label} (gcloud could not list them: {reason})")],
    };
    remains.extend(named_leftovers(env, resolved));
    match resolved.read(env, &lifecycle::list_buckets(resolved.deployment, &resolved.site)) {
        Ok(buckets) => remains.extend(buckets.lines().map(str::trim).filter(|b| !b.is_empty()).map(|b| format!("bucket {b}"))),
        Err(e) if e.is_not_found() => {}
        Err(reason) => remains.push(format!("buckets (unknown: {reason})")),
    }
    remains
}
