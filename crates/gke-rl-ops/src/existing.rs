//! Deploy onto a cluster gke-rl did not create (`project.existing_cluster`): read it and its
//! Lustre instance with gcloud, fit the deployment to them, turn on missing add-ons, create or
//! attach the instance and bind it with a static volume. Destroy's side lives in `destroy`.

use gke_rl::Deployment;
use gke_rl::lifecycle::existing::{self, Cluster, Fit, Instance};
use gke_rl::lifecycle::{self, State};

use crate::events::{LifecycleEvent, Progress};
use crate::site::Resolved;
use crate::{Env, LifecycleError, Problem};

/// Preflight on an existing cluster: deploy's basic checks, Lustre's location when gke-rl
/// creates the instance, and the cluster and instance as they are. Every problem at once; the
/// deployment fitted to them (the head's pool, the RDMA networks, the instance's figures).
pub(crate) async fn preflight(env: &Env, resolved: &Resolved<'_>, progress: &dyn Progress) -> Result<Deployment, LifecycleError> {
    let checks = lifecycle::Preflight::new(resolved.deployment, &resolved.site);
    let mut problems = Vec::new();
    let signed_in = crate::preflight::basics(env, resolved, &checks, progress, &mut problems);
    let mut found = None;
    if resolved.deployment.job.queue.is_some() {
        // gke-rl's queues are the ones its blueprint makes.
        problems.push(Problem::QueueOnExistingCluster);
    }
    if signed_in {
        if !resolved.deployment.lustre.existing
            && let Err(reason) = resolved.read(env, &checks.lustre_location)
        {
            problems.push(Problem::LustreLocation { zone: resolved.deployment.project.zone.to_string(), reason: reason.to_string() });
        }
        found = read(env, resolved, progress, &mut problems).await;
    }
    match found {
        Some(found) if problems.is_empty() => Ok(found),
        _ => Err(LifecycleError::Preflight { problems }),
    }
}

/// Why a description was not read: gcloud did not give one, or gave one gke-rl cannot read.
#[derive(Debug)]
pub(crate) enum NotRead {
    /// gcloud's refusal (no such resource, no permission).
    Asked(String),
    /// gcloud's answer, which holds what gke-rl cannot read.
    Unreadable(String),
}

impl std::fmt::Display for NotRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRead::Asked(reason) | NotRead::Unreadable(reason) => f.write_str(reason),
        }
    }
}

/// The cluster as gcloud describes it, or why it cannot be read.
pub(crate) fn read_cluster(env: &Env, resolved: &Resolved<'_>) -> Result<Cluster, NotRead> {
    let json =
        resolved.read(env, &lifecycle::describe_cluster(resolved.deployment, &resolved.site)).map_err(|e| NotRead::Asked(e.to_string()))?;
    Cluster::from_json(&json).map_err(|e| NotRead::Unreadable(e.to_string()))
}

/// The configured Lustre instance as gcloud describes it, or why it cannot be read.
pub(crate) fn read_instance(env: &Env, resolved: &Resolved<'_>) -> Result<Instance, NotRead> {
    let json =
        resolved.read(env, &lifecycle::describe_lustre(resolved.deployment, &resolved.site)).map_err(|e| NotRead::Asked(e.to_string()))?;
    Instance::from_json(&json).map_err(|e| NotRead::Unreadable(e.to_string()))
}

/// What to check when the cluster's Kubernetes API cannot be read.
const REACH: &str = "check that this machine reaches its control plane with those credentials (`kubectl get nodes`): its authorized \
                     networks, your IAM role";

/// The cluster as gcloud describes it; why not goes into `problems`.
fn described(env: &Env, resolved: &Resolved<'_>, problems: &mut Vec<Problem>) -> Option<Cluster> {
    let d = resolved.deployment;
    read_cluster(env, resolved)
        .map_err(|not_read| {
            problems.push(match not_read {
                NotRead::Asked(reason) => {
                    Problem::ClusterUnknown { cluster: d.project.cluster_name.to_string(), location: d.project.region.to_string(), reason }
                }
                NotRead::Unreadable(reason) => Problem::Undescribed { what: format!("cluster {}", d.project.cluster_name), reason },
            })
        })
        .ok()
}

/// How the deployment fits `cluster`, and the instance it attaches as gcloud describes it;
/// every disagreement goes into `problems`.
fn fit_and_instance(env: &Env, resolved: &Resolved<'_>, cluster: &Cluster, problems: &mut Vec<Problem>) -> (Option<Fit>, Option<Instance>) {
    let d = resolved.deployment;
    let fit = existing::fit(d, cluster).map_err(|misfits| problems.extend(misfits.into_iter().map(Problem::Misfit))).ok();
    let instance = if d.lustre.existing {
        match read_instance(env, resolved) {
            Ok(instance) => {
                problems.extend(existing::check_instance(d, cluster, &instance).into_iter().map(Problem::Misfit));
                Some(instance)
            }
            Err(NotRead::Asked(reason)) => {
                let (instance, zone) = (d.lustre.instance_id.to_string(), d.project.zone.to_string());
                problems.push(Problem::LustreUnknown { instance, zone, reason });
                None
            }
            Err(NotRead::Unreadable(reason)) => {
                problems.push(Problem::Undescribed { what: format!("Lustre instance {}", d.lustre.instance_id), reason });
                None
            }
        }
    } else {
        None
    };
    (fit, instance)
}

/// The deployment fitted to its existing cluster and instance as gcloud describes them (the
/// head's pool and its machine, the instance's capacity and tier), without their Nodes and GKE
/// networks: what `cost` prices. An `Err` holds every problem (the cluster cannot be read, or
/// does not fit).
pub fn as_it_is(deployment: &Deployment, target: &crate::SiteOptions, env: &Env) -> Result<Deployment, LifecycleError> {
    let resolved = target.resolve(deployment, env, false)?;
    let mut problems = Vec::new();
    if let Some(cluster) = described(env, &resolved, &mut problems)
        && let (Some(fit), instance) = fit_and_instance(env, &resolved, &cluster, &mut problems)
        && problems.is_empty()
    {
        return existing::fitted(deployment, &fit, &[], instance.as_ref())
            .map_err(|misfit| LifecycleError::Preflight { problems: vec![Problem::Misfit(misfit)] });
    }
    Err(LifecycleError::Preflight { problems })
}

/// Reads the cluster, its Nodes, its GKE networks and the Lustre instance; every disagreement
/// with the config goes into `problems`.
async fn read(env: &Env, resolved: &Resolved<'_>, progress: &dyn Progress, problems: &mut Vec<Problem>) -> Option<Deployment> {
    let d = resolved.deployment;
    let mut cluster = described(env, resolved, problems)?;
    let name = cluster.name.clone();
    let unknown = |what, reason, fix| Problem::ClusterObjectsUnknown { cluster: name.clone(), what, reason, fix };
    let objects = match kubernetes(env, resolved, progress).await {
        Ok(objects) => objects,
        Err(reason) => {
            problems.push(unknown("nodes", reason, REACH));
            return None;
        }
    };
    // A fixed pool's size is its Nodes: gcloud's figure is the one it was made with.
    match objects.pool_nodes().await {
        Ok(listed) => cluster.count_nodes(&listed),
        // A role that may not list Nodes still deploys, on gcloud's figures.
        Err(e) if e.is_forbidden() => {
            progress.lifecycle(LifecycleEvent::NodesUnlisted { cluster: &name, reason: &crate::chain(&e) });
        }
        Err(e) => {
            problems.push(unknown("nodes", crate::chain(&e), REACH));
            return None;
        }
    }
    let (fit, instance) = fit_and_instance(env, resolved, &cluster, problems);
    let fit = fit?;
    if let Some((listed, made)) = cluster.pools.iter().find(|p| p.name == fit.gpu_pool).and_then(existing::Pool::short) {
        progress.lifecycle(LifecycleEvent::PoolShort { pool: &fit.gpu_pool, listed, made });
    }
    // The workers' RDMA networks are Kubernetes objects of the cluster: read them only where
    // the fabric is wired and the config names none.
    let rdma = if d.fabric.rdma_networks.is_none() && d.wired_fabric().ok().flatten().is_some() {
        match objects.gke_networks().await {
            Ok(networks) => existing::rdma_networks(&fit, &networks.param_sets, &networks.networks),
            Err(e) => {
                let fix = "set fabric.rdma_networks to the networks the workers attach, or fabric.mode: off";
                problems.push(unknown("GKE networks", crate::chain(&e), fix));
                return None;
            }
        }
    } else {
        Vec::new()
    };
    let fitted = match existing::fitted(d, &fit, &rdma, instance.as_ref()) {
        Ok(fitted) => fitted,
        Err(misfit) => {
            problems.push(Problem::Misfit(misfit));
            return None;
        }
    };
    let fabric = match (&fitted.fabric.rdma_networks, fitted.wired_fabric().ok().flatten()) {
        (Some(networks), Some(_)) => {
            format!("GPUDirect RDMA over {}", networks.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
        }
        (None, Some(_)) => "GPUDirect RDMA over the blueprint's networks".to_owned(),
        _ if d.wired_fabric().ok().flatten().is_some() => {
            format!("TCP: node pool {} has no RDMA networks, so collectives across nodes go over one NIC", fit.gpu_pool)
        }
        _ => "TCP (fabric.mode: off)".to_owned(),
    };
    let head_pool =
        fitted.ray.head.pool.as_ref().map_or_else(|| "a GPU node (ray.head.node_pool: gpu)".to_owned(), |p| format!("node pool {p}"));
    progress.lifecycle(LifecycleEvent::ExistingCluster {
        cluster: &cluster.name,
        version: &cluster.version,
        gpu_pool: &fit.gpu_pool,
        head_pool: &head_pool,
        fabric: &fabric,
        addons_off: &fit.addons_off,
    });
    Some(fitted)
}

/// The cluster's Kubernetes API, through credentials get-credentials writes.
async fn kubernetes(env: &Env, resolved: &Resolved<'_>, progress: &dyn Progress) -> Result<gke_rl_kube::Namespaced, String> {
    let credentials = lifecycle::credentials(resolved.deployment, resolved.site.project_id.as_str());
    if !resolved.stream(env, progress, &credentials) {
        return Err("gcloud container clusters get-credentials failed".to_owned());
    }
    resolved.clusters(env).await.map_err(|e| crate::chain(&e))
}

/// Provision on an existing cluster: the missing add-ons, and the Lustre instance when gke-rl
/// creates it (the codelab's scripts' way: a peering range, the peering, then the instance).
pub(crate) fn provision(env: &Env, resolved: &Resolved<'_>, state: &mut State, progress: &dyn Progress) -> Result<(), LifecycleError> {
    let (d, site) = (resolved.deployment, &resolved.site);
    let described = read_cluster(env, resolved).map_err(|reason| LifecycleError::Query {
        what: format!("cannot read cluster {}", d.project.cluster_name),
        reason: reason.to_string(),
    })?;
    let off = described.addons_off();
    if !off.is_empty() {
        if !resolved.stream(env, progress, &lifecycle::update_addons(d, site, &off, true)) {
            return Err(LifecycleError::CommandFailed { what: "gcloud container clusters update --update-addons".into() });
        }
        for addon in off {
            if !state.created.addons.iter().any(|a| a == addon) {
                state.created.addons.push(addon.to_owned());
            }
        }
    }
    if d.lustre.existing {
        return Ok(());
    }
    // An instance of that name: the one an earlier deploy created (recorded, or labelled as
    // this deployment's after a create that was cut short), or someone else's.
    // Only gcloud's "not found" says there is none: any other failure is no answer.
    let found = match read_instance(env, resolved) {
        Ok(found) => Some(found),
        Err(NotRead::Asked(reason)) if crate::env::not_found(&reason) => None,
        Err(reason) => {
            return Err(LifecycleError::Query {
                what: format!("cannot tell whether Lustre instance {} exists", d.lustre.instance_id),
                reason: reason.to_string(),
            });
        }
    };
    if let Some(found) = found {
        let ours = found.made_by(d);
        if !ours && state.created.lustre_instance.is_none() {
            return Err(LifecycleError::Query {
                what: format!("cannot create Lustre instance {}", d.lustre.instance_id),
                reason: format!(
                    "an instance of that name exists in {} and gke-rl did not create it: set lustre.existing: true to attach it, or name another",
                    d.project.zone
                ),
            });
        }
        state.created.lustre_instance = Some(d.lustre.instance_id.to_string());
        return Ok(());
    }
    let (network, project) = (described.network_name(), described.network_project());
    if resolved.read(env, &lifecycle::describe_peering_range(network, project)).is_err()
        && !resolved.stream(env, progress, &lifecycle::create_peering_range(network, project))
    {
        return Err(LifecycleError::CommandFailed { what: "gcloud compute addresses create".into() });
    }
    let peered = resolved
        .read(env, &lifecycle::list_peerings(network, project))
        .is_ok_and(|services| services.lines().any(|s| s.trim() == lifecycle::SERVICE_NETWORKING));
    if !peered && !resolved.stream(env, progress, &lifecycle::connect_peering(network, project)) {
        return Err(LifecycleError::CommandFailed { what: "gcloud services vpc-peerings connect".into() });
    }
    // Recorded before it is asked for: a create cut short still finishes at Google, and
    // destroy must know to delete it. (The next deploy finds it by its label.)
    state.created.lustre_instance = Some(d.lustre.instance_id.to_string());
    // The instance listens where the nodes look: 6988 with GKE support, for a cluster on the
    // legacy port; 988 otherwise.
    let create = lifecycle::create_lustre(d, site, &described.network, described.legacy_lustre_port);
    if !resolved.stream(env, progress, &create) {
        // Kept only if the instance there is the one asked for: another's of the same name,
        // made in between, is not to be deleted by destroy.
        // What cannot be told is kept: destroy asks again, and deletes only what carries the label.
        let ours = match read_instance(env, resolved) {
            Ok(found) => found.made_by(d),
            Err(NotRead::Asked(reason)) => !crate::env::not_found(&reason),
            Err(NotRead::Unreadable(_)) => true,
        };
        if !ours {
            state.created.lustre_instance = None;
        }
        return Err(LifecycleError::CommandFailed { what: "gcloud lustre instances create".into() });
    }
    Ok(())
}

/// The instance as it is now, for its volume: `ACTIVE`, with an address to mount.
pub(crate) fn instance(env: &Env, resolved: &Resolved<'_>) -> Result<Instance, LifecycleError> {
    let d = resolved.deployment;
    let what = format!("cannot bind Lustre instance {}", d.lustre.instance_id);
    let instance =
        read_instance(env, resolved).map_err(|reason| LifecycleError::Query { what: what.clone(), reason: reason.to_string() })?;
    if instance.state != "ACTIVE" || instance.ip.is_empty() || instance.filesystem.is_empty() {
        let reason = format!(
            "it is {} with mount point `{}@tcp:/{}`: run deploy again once `gcloud lustre instances describe` says ACTIVE",
            if instance.state.is_empty() { "in no state" } else { &instance.state },
            instance.ip.escape_debug(),
            instance.filesystem.escape_debug()
        );
        return Err(LifecycleError::Query { what, reason });
    }
    Ok(instance)
}

/// The PersistentVolumeClaim and PersistentVolume deploy made, as a manifest to delete by.
pub(crate) fn volume_objects(d: &Deployment, volume: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {}\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: {volume}\n",
        d.lustre.pvc_name
    )
}
