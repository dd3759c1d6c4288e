//! The RayJob: what KubeRay (`ValidateRayJobSpec`, `controllers/ray/utils/validation.go`) and
//! Kueue (the RayJob webhook, `pkg/controller/jobs/rayjob/rayjob_webhook.go`, v0.17.1) refuse,
//! in their words. KubeRay does not refuse an invalid RayJob
//! at the API: it marks it `ValidationFailed` and never runs it. Its cluster is checked as a
//! RayCluster by the other rules.

use super::*;
use crate::Tree;
use gke_rl::knowledge::QUEUE_LABEL;
use gke_rl::yaml::{Node, Value};

pub(super) fn check(views: &Views<'_>, sink: &mut Sink) {
    for job in &views.ray_jobs {
        sink.ran(&RAYJOB_INVALID);
        invalid(job, sink);
    }
}

fn spec<'t>(job: &'t Tree<'_>, key: &str) -> Option<&'t Node> {
    job.root.get(&["spec", key])
}

/// A boolean field, as YAML writes one (a quoted "true" is a string, which the API refuses).
fn flag(job: &Tree<'_>, key: &str) -> Option<bool> {
    spec(job, key).and_then(|n| match &n.value {
        Value::Number(b) if b.eq_ignore_ascii_case("true") => Some(true),
        Value::Number(b) if b.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    })
}

fn mode<'t>(job: &'t Tree<'_>) -> &'t str {
    spec(job, "submissionMode").and_then(Node::text).unwrap_or("K8sJobMode")
}

fn queued<'t>(job: &'t Tree<'_>) -> Option<&'t Node> {
    job.root.get(&["metadata", "labels"])?.entries().iter().find(|(key, _)| key == QUEUE_LABEL).map(|(_, node)| node)
}

fn invalid(job: &Tree<'_>, sink: &mut Sink) {
    let at = |node: Option<&Node>| node.map_or((1, 1), Node::at);
    let mut emit = |node: Option<&Node>, message: &str, help: &str| {
        sink.emit(&RAYJOB_INVALID, job.file, at(node), message.to_owned(), help.to_owned());
    };
    let backoff = spec(job, "backoffLimit");
    if mode(job) == "InteractiveMode" && backoff.and_then(Node::as_u64).is_some_and(|b| b > 0) {
        emit(
            backoff,
            "KubeRay: BackoffLimit is incompatible with InteractiveMode",
            "set backoffLimit: 0 (KubeRay retries nothing in InteractiveMode)",
        );
    }
    let shutdown = flag(job, "shutdownAfterJobFinishes") == Some(true);
    let ttl = spec(job, "ttlSecondsAfterFinished");
    if !shutdown && ttl.and_then(Node::as_u64).is_some_and(|t| t > 0) {
        emit(
            ttl,
            "KubeRay: a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished",
            "set shutdownAfterJobFinishes: true",
        );
    }
    if spec(job, "rayClusterSpec").is_none() && spec(job, "clusterSelector").is_none() {
        emit(job.root.get(&["spec"]), "KubeRay: one of RayClusterSpec or ClusterSelector must be set", "give spec.rayClusterSpec");
    }
    // Kueue's RayJob webhook checks a RayJob that brings its own cluster only
    // (`rayjob_webhook.go`, kueue v0.17.8).
    let own_cluster = spec(job, "rayClusterSpec").is_some() && spec(job, "clusterSelector").is_none();
    if let Some(label) = queued(job) {
        if !shutdown && own_cluster {
            emit(Some(label), "Kueue: a kueue managed job should delete the cluster after finishing", "set shutdownAfterJobFinishes: true");
        }
        if spec(job, "clusterSelector").is_some() && spec(job, "rayClusterSpec").is_some() {
            emit(spec(job, "clusterSelector"), "Kueue: a kueue managed job should not use an existing cluster", "remove clusterSelector");
        }
    }
}
