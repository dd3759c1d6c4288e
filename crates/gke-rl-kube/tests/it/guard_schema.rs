//! The in-cluster helpers' objects (the idle guard, the run keeper) and the NetworkPolicy against the Kubernetes API's own types (k8s-openapi, generated
//! from the Kubernetes OpenAPI schema): each document must read as its kind and write back
//! unchanged, so a misspelt or misplaced field (which the API server would drop, or refuse)
//! fails here.

use std::num::NonZeroU32;

use gke_rl::Deployment;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::{batch::v1::CronJob, core::v1::ConfigMap, core::v1::ServiceAccount, rbac::v1::Role, rbac::v1::RoleBinding};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `document` read as `T` and written back; what differs, if anything.
fn round_trip<T: DeserializeOwned + Serialize>(document: &serde_json::Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(document.clone()).map_err(|e| format!("does not read as its kind: {e}"))?;
    let back = serde_json::to_value(typed).unwrap();
    if &back == document { Ok(()) } else { Err(format!("fields the API would drop or change:\n{document:#}\nwrites back as\n{back:#}")) }
}

/// Every document checked against the type of its kind; the first problem.
fn check(manifests: &str) -> Result<Vec<String>, String> {
    let mut kinds = Vec::new();
    for text in gke_rl_yaml::documents(manifests) {
        let document = gke_rl_yaml::Node::try_parse(text).map_err(|e| format!("not YAML: {e:?}"))?.to_json();
        let kind = document["kind"].as_str().unwrap_or_default().to_owned();
        let checked = match kind.as_str() {
            "ServiceAccount" => round_trip::<ServiceAccount>(&document),
            "Role" => round_trip::<Role>(&document),
            "RoleBinding" => round_trip::<RoleBinding>(&document),
            "ConfigMap" => round_trip::<ConfigMap>(&document),
            "CronJob" => round_trip::<CronJob>(&document),
            "NetworkPolicy" => round_trip::<NetworkPolicy>(&document),
            other => Err(format!("a kind the guard should not have: {other}")),
        };
        checked.map_err(|e| format!("{kind}: {e}"))?;
        kinds.push(kind);
    }
    Ok(kinds)
}

#[test]
fn the_guard_objects_match_the_kubernetes_schema() {
    let mut d = Deployment::default();
    d.job.idle_timeout_minutes = NonZeroU32::new(120);
    let manifests = gke_rl_in_cluster::guard::manifests(&d).expect("an idle timeout installs the guard");
    assert_eq!(check(&manifests).unwrap(), ["ServiceAccount", "Role", "RoleBinding", "ConfigMap", "CronJob"]);

    // The check can fail: a misspelt field, and a value of the wrong type.
    let misspelt = manifests.replace("concurrencyPolicy:", "concurrencyPolicyy:");
    assert!(check(&misspelt).unwrap_err().starts_with("CronJob: fields the API would drop"));
    let mistyped = manifests.replace("backoffLimit: 0", "backoffLimit: none");
    assert!(check(&mistyped).unwrap_err().starts_with("CronJob: does not read as its kind"));
}

#[test]
fn the_keeper_objects_match_the_kubernetes_schema() {
    let manifests = gke_rl_in_cluster::supervisor::keeper_manifests(&Deployment::default());
    assert_eq!(check(&manifests).unwrap(), ["ConfigMap", "CronJob"]);
    let misspelt = manifests.replace("automountServiceAccountToken:", "automountServiceAccountTokens:");
    assert!(check(&misspelt).unwrap_err().starts_with("CronJob: fields the API would drop"));
}

/// A deployment whose Ray has token authentication (NeMo-RL v0.6.0's Ray 2.54).
fn with_tokens() -> Deployment {
    let mut d = Deployment::default();
    d.ray.image = gke_rl::model::Word::new("nvcr.io/nvidia/nemo-rl:v0.6.0").unwrap();
    d.job.idle_timeout_minutes = NonZeroU32::new(120);
    d
}

#[test]
fn with_tokens_the_helpers_read_the_ray_token_from_its_secret() {
    let d = with_tokens();
    for manifests in [gke_rl_in_cluster::guard::manifests(&d).unwrap(), gke_rl_in_cluster::supervisor::keeper_manifests(&d)] {
        check(&manifests).unwrap();
        let cron: CronJob =
            serde_json::from_value(gke_rl_yaml::Node::parse(gke_rl_yaml::documents(&manifests).last().unwrap()).unwrap().to_json())
                .unwrap();
        let pod = cron.spec.unwrap().job_template.spec.unwrap().template;
        let env = pod.spec.unwrap().containers[0].env.clone().unwrap();
        let token = env.iter().find(|e| e.name == "RAY_AUTH_TOKEN").expect("the token in the helper's environment");
        let from = token.value_from.as_ref().and_then(|f| f.secret_key_ref.as_ref()).expect("from a Secret");
        assert_eq!((from.name.as_str(), from.key.as_str()), ("ray-a4-gpu-spot-ray-token", "auth_token"));
        assert_eq!(pod.metadata.unwrap().labels.unwrap()["gke-rl/helper-of"], "ray-a4-gpu-spot");
    }
    let without = gke_rl_in_cluster::supervisor::keeper_manifests(&Deployment::default());
    assert!(!without.contains("- name: RAY_AUTH_TOKEN"), "no token where the cluster has none");
}

#[test]
fn the_network_policy_matches_the_kubernetes_schema_and_admits_the_helpers_to_the_dashboard() {
    let options = gke_rl::RenderOptions { source: "a test", regenerate: "a test" };
    let policy = gke_rl::render(&Deployment::default(), &options).unwrap().network_policy.expect("Ray 2.46: a NetworkPolicy");
    assert_eq!(check(&policy.contents).unwrap(), ["NetworkPolicy"]);
    let typed: NetworkPolicy = serde_json::from_value(gke_rl_yaml::Node::parse(&policy.contents).unwrap().to_json()).unwrap();
    let rules = typed.spec.unwrap().ingress.unwrap();
    let helper = rules[1].from.as_ref().unwrap()[0].pod_selector.as_ref().unwrap().match_labels.clone().unwrap();
    assert_eq!(helper["gke-rl/helper-of"], "ray-a4-gpu-spot");
    assert!(gke_rl::render(&with_tokens(), &options).unwrap().network_policy.is_none(), "tokens instead");
}
