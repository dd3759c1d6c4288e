//! The idle guard: a CronJob in the RayCluster's namespace that suspends the RayCluster after
//! a while without a running job. Its program is `idle_guard.py` (standard-library Python, so
//! that a small Python image runs it); its service account may only read and patch that one
//! RayCluster. Its decisions are tested against a real Ray head.

use std::fmt::Write as _;

use gke_rl::model::Deployment;
use gke_rl::quote::yaml;

const IDLE_GUARD: &str = include_str!("../python/idle_guard.py");

/// The guard's source, with its way to find the Ray token.
pub fn program() -> String {
    crate::token::with_python(IDLE_GUARD)
}

/// The image the guard runs in: Python and nothing else.
pub const GUARD_IMAGE: &str = "python:3.12-slim";

/// How often the guard looks.
pub const GUARD_SCHEDULE: &str = "*/5 * * * *";

/// The name of the guard's objects (service account, role, binding, config map, CronJob).
pub fn name(d: &Deployment) -> String {
    format!("{}-idle-guard", d.project.cluster_name)
}

/// The guard's objects, one YAML document each, when the deployment has an idle timeout.
pub fn manifests(d: &Deployment) -> Option<String> {
    let minutes = d.job.idle_timeout_minutes?;
    let (name, namespace, cluster) = (name(d), d.ray.namespace.as_str(), d.project.cluster_name.as_str());
    let labels = "  labels:\n    app.kubernetes.io/managed-by: gke-rl\n";
    let meta =
        |kind: &str, api: &str| format!("apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {namespace}\n{labels}");
    let mut out = String::new();
    let _ = writeln!(out, "{}automountServiceAccountToken: true", meta("ServiceAccount", "v1"));
    let _ = write!(
        out,
        "---\n{}rules:\n  # This RayCluster only: read it, and set its spec.suspend.\n  - apiGroups: [\"ray.io\"]\n    resources: [\"rayclusters\"]\n    resourceNames: [{}]\n    verbs: [\"get\", \"patch\"]\n",
        meta("Role", "rbac.authorization.k8s.io/v1"),
        yaml(cluster)
    );
    let _ = write!(
        out,
        "---\n{}roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {name}\nsubjects:\n  - kind: ServiceAccount\n    name: {name}\n    namespace: {namespace}\n",
        meta("RoleBinding", "rbac.authorization.k8s.io/v1")
    );
    let script: String = program().lines().map(|l| if l.is_empty() { "\n".to_owned() } else { format!("    {l}\n") }).collect();
    let _ = write!(out, "---\n{}data:\n  idle_guard.py: |\n{script}", meta("ConfigMap", "v1"));
    let _ = write!(
        out,
        "---\n{meta}spec:\n  schedule: {schedule}\n  concurrencyPolicy: Forbid\n  successfulJobsHistoryLimit: 1\n  failedJobsHistoryLimit: 3\n  \
         jobTemplate:\n    spec:\n      backoffLimit: 0\n      activeDeadlineSeconds: 240\n      template:\n{helper}        spec:\n          \
         serviceAccountName: {name}\n          restartPolicy: Never\n          containers:\n            - name: guard\n              \
         image: {image}\n              command: [\"python\", \"/guard/idle_guard.py\"]\n              env:\n                \
         - name: GKE_RL_NAMESPACE\n                  value: {namespace}\n                - name: GKE_RL_CLUSTER\n                  value: {cluster_value}\n                \
         - name: GKE_RL_DASHBOARD\n                  value: {dashboard}\n                - name: GKE_RL_IDLE_SECONDS\n                  value: {seconds}\n{token}              \
         resources:\n                requests:\n                  cpu: 50m\n                  memory: 64Mi\n                limits:\n                  memory: 128Mi\n              \
         volumeMounts:\n                - name: guard\n                  mountPath: /guard\n                  readOnly: true\n          \
         volumes:\n            - name: guard\n              configMap:\n                name: {name}\n",
        meta = meta("CronJob", "batch/v1"),
        schedule = yaml(GUARD_SCHEDULE),
        image = yaml(GUARD_IMAGE),
        cluster_value = yaml(cluster),
        dashboard = yaml(&format!("http://{cluster}-head-svc.{namespace}.svc:8265")),
        seconds = yaml(&(u64::from(minutes.get()) * 60).to_string()),
        helper = helper_pod_labels(d),
        token = token_env(d),
    );
    Some(out)
}

/// The pod labels of a gke-rl helper of the cluster (a CronJob's pod template metadata), which
/// the NetworkPolicy of a cluster without tokens admits to the dashboard.
pub(crate) fn helper_pod_labels(d: &Deployment) -> String {
    format!("        metadata:\n          labels:\n            {}: {}\n", gke_rl::auth::HELPER_LABEL, yaml(d.project.cluster_name.as_str()))
}

/// The Ray token in a helper's environment, from the cluster's Secret, when the cluster has one.
pub(crate) fn token_env(d: &Deployment) -> String {
    if !d.ray.token_auth().unwrap_or(false) {
        return String::new();
    }
    let pad = " ".repeat(16);
    format!(
        "{pad}- name: {variable}\n{pad}  valueFrom:\n{pad}    secretKeyRef:\n{pad}      name: {secret}\n{pad}      key: {key}\n",
        variable = gke_rl::auth::TOKEN_VARIABLE,
        secret = gke_rl::auth::secret_name(d),
        key = gke_rl::auth::TOKEN_KEY,
    )
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;
    use gke_rl::yaml::Node;

    #[test]
    fn the_guard_may_touch_only_its_raycluster_and_carries_its_program_verbatim() {
        assert_eq!(manifests(&Deployment::default()), None, "no idle timeout, no guard");
        let mut d = Deployment::default();
        d.job.idle_timeout_minutes = NonZeroU32::new(120);
        let text = manifests(&d).unwrap();
        let docs: Vec<Node> = gke_rl::yaml::documents(&text).map(|doc| Node::parse(doc).expect("each document is YAML")).collect();
        let kinds: Vec<&str> = docs.iter().filter_map(|doc| doc.get(&["kind"])?.text()).collect();
        assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding", "ConfigMap", "CronJob"]);
        let rule = &docs[1].get(&["rules"]).unwrap().items()[0];
        let words = |key: &str| rule.get(&[key]).unwrap().items().iter().filter_map(Node::text).map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            (words("resourceNames"), words("verbs")),
            (vec!["ray-a4-gpu-spot".to_owned()], vec!["get".to_owned(), "patch".to_owned()])
        );
        assert_eq!(docs[3].get(&["data", "idle_guard.py"]).and_then(Node::text), Some(program().as_str()));
        let container = &docs[4].get(&["spec", "jobTemplate", "spec", "template", "spec", "containers"]).unwrap().items()[0];
        let env: Vec<(String, String)> = container
            .get(&["env"])
            .unwrap()
            .items()
            .iter()
            .map(|e| {
                (e.get(&["name"]).and_then(Node::text).unwrap().to_owned(), e.get(&["value"]).and_then(Node::text).unwrap().to_owned())
            })
            .collect();
        assert!(env.contains(&("GKE_RL_IDLE_SECONDS".to_owned(), "7200".to_owned())), "{env:?}");
        assert!(env.contains(&("GKE_RL_DASHBOARD".to_owned(), "http://ray-a4-gpu-spot-head-svc.default.svc:8265".to_owned())));
    }
}
