//! gke-rl's side of a run inside the cluster, and what it records.
//!
//! - The programs that run there, in [`python/`](../python): the supervisor and the run keeper
//!   ([`supervisor`]), the idle guard ([`guard`]), the fabric and storage checks ([`fabric`],
//!   [`storage`]), each generated with gke-rl's own tables and rendered with its manifests.
//! - What a run leaves and how it is read: its records ([`records`]), its log ([`run_log`],
//!   [`log_lines`]), why it failed ([`recovery`]), its report ([`run_report`]) and its Lustre
//!   instance's usage ([`lustre_usage`]).
//!
//! Pure, as the SDK is: the caller reads the logs and the metrics and runs the jobs. The
//! validator and the page do not build this crate, so editing a program rebuilds neither.

pub mod checkpoints;
pub mod fabric;
pub mod guard;
pub mod log_lines;
pub mod lustre_usage;
pub mod records;
pub mod recovery;
pub mod run_log;
pub mod run_report;
pub mod storage;
pub mod supervisor;
mod token;

use gke_rl::Deployment;
use gke_rl::model::JobMode;

/// The in-cluster helpers deploy applies after the RayCluster, each with its objects (one YAML
/// document each): the run keeper, and the idle guard when the deployment has an idle timeout.
pub fn helpers(deployment: &Deployment) -> Vec<(&'static str, String)> {
    // They look after the long-lived RayCluster; a RayJob's cluster is KubeRay's to end.
    if deployment.job.mode == JobMode::Rayjob {
        return Vec::new();
    }
    let keeper = Some(("run keeper", supervisor::keeper_manifests(deployment)));
    let guard = guard::manifests(deployment).map(|m| ("idle guard", m));
    keeper.into_iter().chain(guard).collect()
}

/// Every helper a deploy of this deployment may have applied, whatever its mode and idle
/// timeout were then: what a cleanup deletes (deleting what is not there does nothing).
pub fn every_helper(deployment: &Deployment) -> Vec<(&'static str, String)> {
    let mut cluster_mode = deployment.clone();
    cluster_mode.job.mode = JobMode::Cluster;
    cluster_mode.job.idle_timeout_minutes = Some(std::num::NonZeroU32::MIN);
    helpers(&cluster_mode)
}
