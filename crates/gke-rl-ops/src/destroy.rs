//! Destroy: remove every billable resource a deploy created, and prove it with gcloud.

use std::path::PathBuf;
use std::time::Duration;

use gke_rl::Deployment;
use gke_rl::lifecycle::{self, Step};
use gke_rl_kube::Wait;

use crate::events::{Event, Progress, Question};
use crate::site::{Resolved, Target};
use crate::{Env, Error};

/// How to destroy.
#[derive(Clone, Debug, Default)]
pub struct DestroyOptions {
    /// Which deployment, where.
    pub target: Target,
}

/// How a destroy ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Destroyed {
    /// gcloud finds nothing left; the state file is removed.
    Destroyed {
        /// How long it took.
        took: Duration,
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
pub fn plan(deployment: &Deployment, options: &DestroyOptions, env: &Env) -> Result<Plan, Error> {
    let resolved = options.target.resolve(deployment, env, false)?;
    Ok(match resolved.load_state()? {
        Some(state) => Plan::Steps(lifecycle::destroy_plan(deployment, &resolved.site, &state, None).to_string()),
        None => Plan::NothingRecorded { folder: resolved.folder().to_owned() },
    })
}

/// Deletes the RayCluster (when the cluster's API answers), empties the buckets, runs
/// `gcluster destroy`, and asks gcloud what remains.
pub async fn destroy(deployment: &Deployment, options: &DestroyOptions, env: &Env, progress: &dyn Progress) -> Result<Destroyed, Error> {
    let mut interrupt = env.interrupt.arm().map_err(|source| Error::Local { what: "cannot listen for Ctrl-C".into(), source })?;
    let resolved = options.target.resolve(deployment, env, false)?;
    // No folder, nothing of it to race over. A folder that cannot be locked is destroyed
    // anyway: refusing would leave resources billing.
    let folder = resolved.folder();
    let _held = match folder.is_dir().then(|| crate::files::lock_folder(folder, "gke-rl destroy")).transpose() {
        Ok(held) => held,
        Err(busy @ Error::FolderInUse { .. }) => return Err(busy),
        Err(other) => {
            progress.event(Event::Unlocked { folder, why: other.to_string() });
            None
        }
    };
    let d = deployment;
    let Some(state) = resolved.load_state()? else {
        // No state, perhaps a lost folder: never "nothing to destroy" while resources bill.
        let remains = leftovers(env, &resolved);
        if remains.is_empty() {
            return Ok(Destroyed::NothingRecorded { folder: resolved.folder().to_owned() });
        }
        return without_state(env, &resolved, &remains, &mut interrupt, progress).await;
    };
    let provisioned = state.done(Step::Render);
    let buckets = if provisioned { buckets(env, &resolved)? } else { Vec::new() };
    let preview = lifecycle::destroy_plan(d, &resolved.site, &state, Some(&buckets)).preview();
    match progress.confirm(&Question::Destroy { preview: &preview }) {
        Ok(true) => {}
        Ok(false) => return Ok(Destroyed::Declined),
        Err(reason) => return Err(Error::Unanswered { question: preview, reason }),
    }

    let started = env.clock.now();
    let mut teardown_failed = false;
    if state.done(Step::Credentials) {
        delete_ray_cluster(env, &resolved, &mut interrupt, progress).await;
        if interrupt.is_set() {
            return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
        }
    }
    if provisioned {
        for (bucket, objects) in buckets.iter().filter(|(_, objects)| *objects > 0) {
            let emptied = resolved.stream(env, progress, &lifecycle::empty_bucket(bucket));
            if interrupt.is_set_after(emptied).await {
                return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
            }
            if !emptied {
                return Err(Error::BucketNotEmptied { bucket: bucket.clone(), objects: *objects });
            }
        }
        let gcluster_folder = resolved.site.folder().gcluster(d);
        if std::path::Path::new(&gcluster_folder).is_dir() && !resolved.stream(env, progress, &lifecycle::teardown(d, &resolved.site)) {
            if interrupt.is_set_after(false).await {
                return Ok(Destroyed::Interrupted { signal: interrupt.signal().unwrap_or(2) });
            }
            progress.event(Event::TeardownFailed);
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
    std::fs::remove_file(&state_path).map_err(|source| Error::Write { path: state_path, source })?;
    Ok(Destroyed::Destroyed { took: env.clock.now() - started })
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
) -> Result<Destroyed, Error> {
    let (d, site) = (resolved.deployment, &resolved.site);
    let buckets = buckets(env, resolved)?;
    // Each labelled cluster where it is, then the Lustre instance.
    let clusters = labelled_clusters(env, resolved).unwrap_or_default();
    let mut commands: Vec<_> = clusters.iter().map(|(name, location)| lifecycle::delete_cluster(name, location, site)).collect();
    commands.push(lifecycle::delete_lustre(d, site));
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
        Err(reason) => return Err(Error::Unanswered { question: preview, reason }),
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
    progress.event(Event::MayRemainWithoutState { name: d.project.cluster_name.as_str() });
    Ok(Destroyed::Destroyed { took: env.clock.now() - started })
}

/// The blueprint's buckets and how many objects each holds.
fn buckets(env: &Env, resolved: &Resolved<'_>) -> Result<Vec<(String, usize)>, Error> {
    let listed = resolved
        .read(env, &lifecycle::list_buckets(resolved.deployment, &resolved.site))
        .map_err(|reason| Error::Query { what: "cannot list the buckets".into(), reason: reason.to_string() })?;
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
async fn delete_ray_cluster(env: &Env, resolved: &Resolved<'_>, interrupt: &mut crate::env::Armed, progress: &dyn Progress) {
    if !resolved.stream(env, progress, &lifecycle::credentials(resolved.deployment, resolved.site.project_id.as_str())) {
        progress.event(Event::ClusterObjectsSkipped { reason: "the cluster has no credentials to give (already gone?)" });
        return;
    }
    if let Err(e) = delete_objects(env, resolved, interrupt, progress).await {
        progress.event(Event::ClusterObjectsSkipped { reason: &format!("cannot use the cluster's Kubernetes API: {}", crate::chain(&e)) });
    }
}

async fn delete_objects(
    env: &Env,
    resolved: &Resolved<'_>,
    interrupt: &mut crate::env::Armed,
    progress: &dyn Progress,
) -> Result<(), Error> {
    let d = resolved.deployment;
    let clusters = resolved.clusters(env).await?;
    let (namespace, name) = (d.ray.namespace.as_str(), d.project.cluster_name.as_str());
    // Every Ray pod holds Lustre: the long-lived RayCluster's, and those of gke-rl's RayJobs,
    // whichever the mode (it may have changed since they were made).
    let mut pods_of = vec![name.to_owned()];
    if clusters.delete(name).await? {
        progress.event(Event::Deleted { kind: "RayCluster", namespace, name });
    }
    for (job, cluster) in clusters.managed_ray_jobs().await? {
        if clusters.delete_ray_job(&job, None).await? {
            progress.event(Event::Deleted { kind: "RayJob", namespace, name: &job });
        }
        pods_of.extend(cluster);
    }
    for secret in lifecycle::cluster_secrets(d) {
        if clusters.delete_secret(&secret).await? {
            progress.event(Event::Deleted { kind: "Secret", namespace, name: &secret });
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
    progress.event(Event::PodsGone);
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

/// What still exists, by asking gcloud.
fn leftovers(env: &Env, resolved: &Resolved<'_>) -> Vec<String> {
    let (d, site) = (resolved.deployment, &resolved.site);
    let label = format!("labelled ghpc_deployment={}", d.project.cluster_name);
    let mut remains: Vec<String> = match labelled_clusters(env, resolved) {
        Ok(clusters) => clusters.iter().map(|(name, location)| format!("GKE cluster {name} ({location}, {label})")).collect(),
        Err(reason) => vec![format!("GKE clusters {label} (gcloud could not list them: {reason})")],
    };
    // A describe that fails says "not found"; one that gave no answer in time says nothing, and
    // what it asked about may remain.
    for (what, command) in lifecycle::leftovers(d, site) {
        match resolved.read(env, &command) {
            Ok(out) if !out.trim().is_empty() => remains.push(what),
            Err(reason @ crate::RunError::NoAnswer { .. }) => remains.push(format!("{what} (unknown: {reason})")),
            Ok(_) | Err(_) => {}
        }
    }
    match resolved.read(env, &lifecycle::list_buckets(resolved.deployment, &resolved.site)) {
        Ok(buckets) => remains.extend(buckets.lines().map(str::trim).filter(|b| !b.is_empty()).map(|b| format!("bucket {b}"))),
        Err(reason @ crate::RunError::NoAnswer { .. }) => remains.push(format!("buckets (unknown: {reason})")),
        Err(_) => {}
    }
    remains
}
