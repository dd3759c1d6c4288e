//! Destroy: remove every billable resource a deploy created, and prove it with gcloud.

use std::path::PathBuf;
use std::time::Duration;

use gke_rl::Deployment;
use gke_rl::lifecycle::{self, Step, existing};
use gke_rl_kube::Wait;

use crate::events::{LifecycleEvent, Progress, Question};
use crate::site::{Resolved, SiteOptions};
use crate::{CommonError, Env, LifecycleError};

/// How to destroy.
#[derive(Clone, Debug, Default)]
pub struct DestroyOptions {
    /// Which deployment, where.
    pub target: SiteOptions,
    /// Turn off the add-ons deploy turned on in an existing cluster.
    pub disable_addons: bool,
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

/// The plan (`--dry-run`): what would go, and every command.
pub fn plan(deployment: &Deployment, options: &DestroyOptions, env: &Env) -> Result<Plan, LifecycleError> {
    let resolved = options.target.resolve(deployment, env, false)?;
    Ok(match resolved.load_state()? {
        Some(state) => Plan::Steps(lifecycle::destroy_plan(deployment, &resolved.site, &state, None, options.disable_addons).to_string()),
        None => Plan::NothingRecorded { folder: resolved.folder().to_owned() },
    })
}

/// Deletes the RayCluster (when the cluster's API answers), empties the buckets, runs
/// `gcluster destroy`, and asks gcloud what remains.
pub async fn destroy(
    deployment: &Deployment,
    options: &DestroyOptions,
    env: &Env,
    progress: &dyn Progress,
) -> Result<Destroyed, LifecycleError> {
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
    let Some(state) = resolved.load_state()? else {
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
        return without_state(env, &resolved, &remains, &mut interrupt, progress).await;
    };
    let provisioned = state.done(Step::Render) && !state.existing_cluster;
    let buckets = if provisioned { buckets(env, &resolved)? } else { Vec::new() };
    let preview = lifecycle::destroy_plan(d, &resolved.site, &state, Some(&buckets), options.disable_addons).preview();
    match progress.confirm(&Question::Destroy { preview: &preview }) {
        Ok(true) => {}
        Ok(false) => return Ok(Destroyed::Declined),
        Err(reason) => return Err(LifecycleError::Unanswered { question: preview, reason }),
    }

    let started = env.clock.now();
    let mut teardown_failed = false;
    let objects_gone = !state.done(Step::Credentials)
        || delete_ray_cluster(env, &resolved, state.created.volume.as_deref(), &mut interrupt, progress).await;
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
    remains: &[String],
    interrupt: &mut crate::env::Armed,
    progress: &dyn Progress,
) -> Result<Destroyed, LifecycleError> {
    let (d, site) = (resolved.deployment, &resolved.site);
    let buckets = buckets(env, resolved)?;
    // Each labelled cluster where it is, then the Lustre instance.
    let clusters = labelled_clusters(env, resolved).unwrap_or_default();
    let mut commands: Vec<_> = clusters.iter().map(|(name, location)| lifecycle::delete_cluster(name, location, site)).collect();
    // An instance the config attaches is never deleted.
    if !d.lustre.existing {
        commands.push(lifecycle::delete_lustre(d, site));
    }
    for (bucket, _) in &buckets {
        commands.push(lifecycle::empty_bucket(bucket));
        commands.push(lifecycle::delete_bucket(bucket, site));
    }
    let preview = format!(
        "no deployment state in {}, but these of {} exist and may bill:\n{}\ndelete them with gcloud (gcluster's state is lost with the folder):\n{}",
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
    Ok(listed
        .lines()
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            let name = name.trim_start_matches("gs://").trim_end_matches('/').to_owned();
            // `gcloud storage ls` fails on a bucket with no objects.
            let objects = resolved
                .read(env, &lifecycle::list_objects(&name))
                .map(|l| l.lines().filter(|l| !l.trim().is_empty()).count())
                .unwrap_or(0);
            (name, objects)
        })
        .collect())
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
    // A describe that fails says "not found"; one that gave no answer in time says nothing, and
    // what it asked about may remain.
    for (what, command) in lifecycle::leftovers(resolved.deployment, &resolved.site) {
        match resolved.read(env, &command) {
            Ok(out) if !out.trim().is_empty() => remains.push(what),
            Err(reason @ crate::RunError::NoAnswer { .. }) => remains.push(format!("{what} (unknown: {reason})")),
            Ok(_) | Err(_) => {}
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
        Err(reason @ crate::RunError::NoAnswer { .. }) => remains.push(format!("buckets (unknown: {reason})")),
        Err(_) => {}
    }
    remains
}
