//! `ray-job.yaml`: the run as a KubeRay RayJob (`ray.io/v1`), in `rayjob` mode.
//!
//! The RayJob brings its own RayCluster (`rayClusterSpec`, the RayCluster render's own spec)
//! and deletes it when the run ends. It is submitted in `InteractiveMode`, the one mode in which
//! KubeRay submits nothing itself (`apis/ray/v1/rayjob_types.go`, KubeRay v1.7.0): in the others
//! the operator, a submitter Job or a sidecar runs `ray job submit` as soon as the cluster is
//! ready, with a runtime env whose `working_dir` must already be a URI, while the working dir
//! here is uploaded from the user's machine, to the new cluster's dashboard, which exists only
//! once the cluster does. KubeRay waits until `spec.jobId` names the job submitted there
//! (`gke-rl submit` applies it with that id, then submits the job; `gke_rl_ops` does it).

use std::fmt::Write as _;

use super::ray_cluster;
use crate::knowledge::GpuFabric;
use crate::model::Deployment;
use crate::quote::yaml;

pub(super) fn manifest(d: &Deployment, ray_version: &str, token_auth: bool, fabric: Option<&GpuFabric>) -> String {
    let job = &d.job;
    let mut deadlines = String::new();
    if let Some(seconds) = job.rayjob_active_deadline_seconds {
        let _ = writeln!(deadlines, "  activeDeadlineSeconds: {seconds}");
    }
    if let Some(seconds) = job.rayjob_pre_running_deadline_seconds {
        let _ = writeln!(deadlines, "  preRunningDeadlineSeconds: {seconds}");
    }
    let cluster: String = ray_cluster::spec(d, ray_version, token_auth, fabric).lines().map(|line| format!("  {line}\n")).collect();
    format!(
        "apiVersion: ray.io/v1
kind: RayJob
{metadata}spec:
  # KubeRay submits nothing in this mode: it waits until spec.jobId names the job submitted
  # to its cluster (`gke-rl submit` sets it once it has submitted the job).
  submissionMode: InteractiveMode
  entrypoint: {entrypoint}
  # KubeRay retries nothing in InteractiveMode.
  backoffLimit: 0
  # The cluster is deleted this long after the run, giving its GPU nodes back.
  shutdownAfterJobFinishes: true
  ttlSecondsAfterFinished: {ttl}
{deadlines}  rayClusterSpec:
{cluster}",
        metadata = ray_cluster::metadata(d, d.job.name.as_str(), fabric),
        entrypoint = yaml(&super::entrypoint()),
        ttl = job.rayjob_ttl_seconds_after_finished,
    )
}
