//! How far a RayCluster's pods are from Ready, and why: read from the pods and their events.

use std::collections::BTreeSet;

use gke_rl::knowledge::GPU_HEALTH_CHECK;
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};

/// The state of a RayCluster's pods at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Whether the head pod is Running and Ready.
    pub head_ready: bool,
    /// Worker pods Running and Ready.
    pub workers_ready: u32,
    /// Worker pods the RayCluster asks for.
    pub workers_expected: u32,
    /// Pods that exist (head and workers).
    pub pods: u32,
    /// What keeps pods from Ready, one line each, e.g. "ray-a4-worker-x: Unschedulable: 0/3 nodes
    /// are available: 3 Insufficient nvidia.com/gpu".
    pub problems: Vec<String>,
    /// What the pods' state amounts to.
    pub state: ClusterState,
    /// When the RayCluster was created, in seconds since the Unix epoch.
    pub created: Option<i64>,
}

/// What a RayCluster that is not Ready is waiting for: each calls for something else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClusterState {
    /// The head and every worker are Running and Ready.
    Ready,
    /// Pods are being scheduled or started; nothing is wrong so far.
    #[default]
    Starting,
    /// Pods wait for GPU nodes that do not come: a Spot stock-out, or no reservation capacity
    /// or quota. Waiting longer may help.
    WaitingForCapacity,
    /// The cluster was whole before and lost nodes (a Spot preemption, a repair): KubeRay is
    /// recreating their pods, which wait for nodes to come back.
    Recovering,
    /// Something waiting will not fix: an image that does not pull, a crash loop, a volume
    /// that does not mount, a pod that failed on a live node, a node that fails the GPU health
    /// check.
    Broken,
    /// Suspended (KubeRay's `spec.suspend`): no pods, on purpose, until it is resumed.
    Suspended,
    /// Held back by Kueue (suspended until its Workload is admitted): it waits for its
    /// ClusterQueue's quota, not for nodes.
    Queued,
}

impl ClusterState {
    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            ClusterState::Ready => "ready",
            ClusterState::Starting => "starting",
            ClusterState::WaitingForCapacity => "waiting for GPU capacity (Spot stock-out, reservation or quota)",
            ClusterState::Recovering => "preempted: KubeRay is recreating the lost pods, which wait for nodes",
            ClusterState::Broken => "broken: waiting will not help (see the reasons)",
            ClusterState::Suspended => "suspended: no pods until `resume` or the next submit",
            ClusterState::Queued => "queued by Kueue: not admitted yet (why below); its pods come once it is",
        }
    }
}

impl Readiness {
    /// The head and every expected worker are Running and Ready.
    pub fn is_ready(&self) -> bool {
        self.head_ready && self.workers_ready >= self.workers_expected
    }

    /// Pods Ready out of pods wanted, counting the head.
    pub fn progress(&self) -> (u32, u32) {
        (u32::from(self.head_ready) + self.workers_ready, 1 + self.workers_expected)
    }

    /// Whether a problem looks like missing GPU capacity (Spot stock-out, no reservation
    /// capacity, quota): the pods wait for nodes that do not come.
    pub fn waits_for_capacity(&self) -> bool {
        self.problems.iter().any(|p| p.contains("Unschedulable") || p.contains("NotTriggerScaleUp") || p.contains("FailedScaleUp"))
    }
}

/// Event reasons that explain a pod that is not Ready.
const TELLING_EVENTS: &[&str] = &[
    "FailedScheduling",
    "NotTriggerScaleUp",
    "FailedScaleUp",
    "FailedMount",
    "FailedAttachVolume",
    "Unhealthy",
    "Failed",
    "BackOff",
    "Evicted",
    "Preempting",
    "FailedCreatePodSandBox",
];

/// Container waiting reasons that are problems (not the normal `ContainerCreating`), none of
/// which waiting fixes.
const TELLING_WAITS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

/// Event reasons that no wait fixes (every telling container wait is such).
const BROKEN_EVENTS: &[&str] = &["FailedMount", "FailedAttachVolume", "BackOff", "FailedCreatePodSandBox"];

/// How the kubelet marks a pod it ended because its node shut down (a Spot VM's preemption
/// notice starts a graceful node shutdown): the pod's status reason, its `DisruptionTarget`
/// condition's reasons.
const SHUT_DOWN_REASONS: &[&str] = &["Terminated", "Shutdown", "NodeShutdown", "TerminationByKubelet", "DeletionByPodGC"];

/// Reads the pods of one RayCluster (label `ray.io/cluster`) and the events about them;
/// `was_whole`: the RayCluster had every pod Ready once (KubeRay's `RayClusterProvisioned`).
pub fn assess(pods: &[Pod], events: &[Event], workers_expected: u32, was_whole: bool) -> Readiness {
    let mut readiness = Readiness { workers_expected, pods: u32::try_from(pods.len()).unwrap_or(u32::MAX), ..Readiness::default() };
    let mut problems = BTreeSet::new();
    let (mut broken, mut shut_down) = (false, false);
    for pod in pods {
        let name = pod.metadata.name.as_deref().unwrap_or("?");
        let is_head = pod.metadata.labels.as_ref().and_then(|l| l.get("ray.io/node-type")).is_some_and(|t| t == "head");
        let status = pod.status.as_ref();
        let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
        let ready = status.and_then(|s| s.phase.as_deref()) == Some("Running")
            && conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True")
            && pod.metadata.deletion_timestamp.is_none();
        if ready {
            if is_head {
                readiness.head_ready = true;
            } else {
                readiness.workers_ready += 1;
            }
            continue;
        }
        if let Some(unschedulable) = conditions.iter().find(|c| c.type_ == "PodScheduled" && c.status == "False") {
            let reason = unschedulable.reason.as_deref().unwrap_or("Unschedulable");
            problems.insert(format!("{name}: {reason}: {}", unschedulable.message.as_deref().unwrap_or_default()));
        }
        let disrupted = conditions.iter().any(|c| {
            c.type_ == "DisruptionTarget" && c.status == "True" && c.reason.as_deref().is_some_and(|r| SHUT_DOWN_REASONS.contains(&r))
        });
        let shut_down_with_node = disrupted || status.and_then(|s| s.reason.as_deref()).is_some_and(|r| SHUT_DOWN_REASONS.contains(&r));
        shut_down |= shut_down_with_node;
        if status.and_then(|s| s.phase.as_deref()) == Some("Failed") {
            let why = status.and_then(|s| s.message.as_deref().or(s.reason.as_deref())).unwrap_or("the pod failed");
            problems.insert(format!("{name}: Failed: {why}"));
            broken |= !shut_down_with_node;
        }
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        let mut failed_init = BTreeSet::new();
        for init in status.and_then(|s| s.init_container_statuses.as_deref()).unwrap_or_default() {
            if let Some(problem) = failed_init_container(name, node, init) {
                broken = true;
                failed_init.insert(init.name.as_str());
                problems.insert(problem);
            }
        }
        let containers = status.into_iter().flat_map(|s| s.init_container_statuses.iter().chain(&s.container_statuses)).flatten();
        for container in containers.filter(|c| !failed_init.contains(c.name.as_str())) {
            let waiting = container.state.as_ref().and_then(|s| s.waiting.as_ref());
            if let Some(waiting) = waiting.filter(|w| w.reason.as_deref().is_some_and(|r| TELLING_WAITS.contains(&r))) {
                let reason = waiting.reason.as_deref().unwrap_or_default();
                broken = true;
                problems.insert(format!("{name} ({}): {reason}: {}", container.name, waiting.message.as_deref().unwrap_or_default()));
            }
        }
        for event in events.iter().filter(|e| e.involved_object.name.as_deref() == Some(name)) {
            let reason = event.reason.as_deref().unwrap_or_default();
            if TELLING_EVENTS.contains(&reason) && event.type_.as_deref() != Some("Normal") {
                broken |= BROKEN_EVENTS.contains(&reason);
                problems.insert(format!("{name}: {reason}: {}", event.message.as_deref().unwrap_or_default().trim()));
            }
        }
    }
    readiness.problems = problems.into_iter().map(|p| p.trim_end_matches([' ', ':']).to_owned()).collect();
    readiness.state = if readiness.is_ready() {
        ClusterState::Ready
    } else if broken {
        ClusterState::Broken
    } else if was_whole || shut_down {
        ClusterState::Recovering
    } else if readiness.waits_for_capacity() {
        ClusterState::WaitingForCapacity
    } else {
        ClusterState::Starting
    };
    readiness
}

/// An init container that exited with an error (now, or before the back-off it waits in), as
/// a problem naming the node it ran on: a failed GPU health check is the node's fault, and the
/// fix is to keep the pod off that node. One that failed once and has since run or passed is not.
fn failed_init_container(pod: &str, node: Option<&str>, init: &ContainerStatus) -> Option<String> {
    let state = init.state.as_ref()?;
    let terminated = match (&state.terminated, &state.waiting) {
        (Some(terminated), _) => terminated,
        (None, Some(_)) => init.last_state.as_ref()?.terminated.as_ref()?,
        (None, None) => return None,
    };
    if terminated.exit_code == 0 {
        return None;
    }
    // Cordoning alone leaves the pod where it is, retrying the check: it must be deleted too.
    let fix = node.map_or_else(
        || format!("delete pod {pod}: KubeRay recreates it"),
        |n| format!("kubectl cordon {n}, then delete pod {pod}: KubeRay recreates it on another node"),
    );
    let node = node.map_or_else(|| "an unknown node".to_owned(), |n| format!("node {n}"));
    let output = terminated.message.as_deref().map(str::trim).filter(|m| !m.is_empty());
    let why = output.map_or_else(|| format!("exit code {}", terminated.exit_code), |m| m.lines().last().unwrap_or(m).to_owned());
    Some(if init.name == GPU_HEALTH_CHECK.container {
        format!("{pod}: {node}: GPU health check failed: {why} ({fix})")
    } else {
        format!("{pod} ({}): {node}: init container failed: {why}", init.name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node_type: &str, status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"ray.io/cluster": "c", "ray.io/node-type": node_type}},
            "status": status,
        }))
        .unwrap()
    }

    fn ready() -> serde_json::Value {
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    }

    #[test]
    fn counts_ready_head_and_workers() {
        let pods = [pod("h", "head", ready()), pod("w1", "worker", ready()), pod("w2", "worker", json!({"phase": "Pending"}))];
        let r = assess(&pods, &[], 2, false);
        assert_eq!((r.head_ready, r.workers_ready, r.progress(), r.is_ready(), r.state), (true, 1, (2, 3), false, ClusterState::Starting));
        assert_eq!(assess(&pods[..2], &[], 1, false).state, ClusterState::Ready);
    }

    #[test]
    fn names_unschedulable_pods_image_pulls_and_mount_failures() {
        let unschedulable = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]});
        let pulling = json!({"phase": "Pending", "containerStatuses": [{"name": "ray-worker", "image": "i", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"i\""}}}]});
        let mount: Event =
            serde_json::from_value(json!({"metadata": {"name": "e"}, "involvedObject": {"name": "w2"}, "reason": "FailedMount",
            "type": "Warning", "message": "MountVolume.SetUp failed for volume \"lustre-pv\": rpc error"}))
            .unwrap();
        let r = assess(
            &[pod("h", "head", unschedulable), pod("w1", "worker", pulling), pod("w2", "worker", json!({"phase": "Pending"}))],
            &[mount],
            2,
            false,
        );
        assert_eq!(
            r.problems,
            [
                "h: Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
                "w1 (ray-worker): ImagePullBackOff: Back-off pulling image \"i\"",
                "w2: FailedMount: MountVolume.SetUp failed for volume \"lustre-pv\": rpc error",
            ]
        );
        assert!(r.waits_for_capacity());
        assert_eq!(r.state, ClusterState::Broken, "a volume that does not mount is not fixed by waiting");
    }

    fn unschedulable() -> serde_json::Value {
        json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]})
    }

    #[test]
    fn a_node_that_fails_the_gpu_health_check_is_named() {
        let failing = json!({"phase": "Pending", "initContainerStatuses": [{"name": "gpu-healthcheck", "image": "i", "imageID": "",
            "ready": false, "restartCount": 2,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s restarting failed container=gpu-healthcheck"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": "only 7 GPUs, expected 8\n"}}}]});
        let mut worker = pod("w1", "worker", failing);
        worker.spec = Some(serde_json::from_value(json!({"nodeName": "gke-a4-pool-7f3k", "containers": []})).unwrap());
        let r = assess(&[pod("h", "head", ready()), worker], &[], 1, false);
        assert_eq!(
            r.problems,
            [
                "w1: node gke-a4-pool-7f3k: GPU health check failed: only 7 GPUs, expected 8 (kubectl cordon gke-a4-pool-7f3k, then delete pod w1: KubeRay recreates it on another node)"
            ],
            "the node, the check's own words, and no second line for its back-off"
        );
        assert_eq!(r.state, ClusterState::Broken, "waiting does not mend a GPU");

        let other = json!({"phase": "Pending", "initContainerStatuses": [{"name": "setup", "image": "i", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]});
        let r = assess(&[pod("h", "head", ready()), pod("w1", "worker", other)], &[], 1, false);
        assert_eq!(r.problems, ["w1 (setup): an unknown node: init container failed: exit code 2"]);
        assert_eq!(r.state, ClusterState::Broken);

        let passed_on_retry = json!({"phase": "Pending", "initContainerStatuses": [{"name": "gpu-healthcheck", "image": "i", "imageID": "",
            "ready": true, "restartCount": 1, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": "GPU 3: 2 uncorrected ECC errors"}}}]});
        let r = assess(&[pod("h", "head", ready()), pod("w1", "worker", passed_on_retry)], &[], 1, false);
        assert_eq!((r.problems.len(), r.state), (0, ClusterState::Starting), "an old failure is history: {r:?}");
    }

    #[test]
    fn capacity_preemption_and_breakage_are_told_apart() {
        let pods = [pod("h", "head", ready()), pod("w1", "worker", ready()), pod("w2", "worker", unschedulable())];
        assert_eq!(assess(&pods, &[], 2, false).state, ClusterState::WaitingForCapacity, "never whole: a stock-out");
        assert_eq!(assess(&pods, &[], 2, true).state, ClusterState::Recovering, "whole before: preempted, being recreated");

        // The kubelet's mark on a pod it ended for a node shutdown (a Spot preemption notice).
        let shut_down = json!({"phase": "Failed", "reason": "Terminated", "message": "Pod was terminated in response to imminent node shutdown.",
            "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}]});
        let r = assess(&[pod("h", "head", ready()), pod("w1", "worker", shut_down)], &[], 1, false);
        assert_eq!(r.state, ClusterState::Recovering, "{r:?}");
        assert_eq!(r.problems, ["w1: Failed: Pod was terminated in response to imminent node shutdown."]);

        let crashing = json!({"phase": "Running", "containerStatuses": [{"name": "ray-worker", "image": "i", "imageID": "", "ready": false,
            "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}}}]});
        let pods = [pod("h", "head", ready()), pod("w1", "worker", crashing), pod("w2", "worker", unschedulable())];
        assert_eq!(assess(&pods, &[], 2, true).state, ClusterState::Broken, "a crash loop outranks the rest");
    }
}
