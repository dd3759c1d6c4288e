//! The deploy and destroy plans (what `--dry-run` prints) and the state file's rules.

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests and benches read fixtures; the library does no I/O

mod common;

use common::{configs, render};
use gke_rl::Deployment;
use gke_rl::lifecycle::{self, Site, State, Step};

fn site(deployment: &Deployment) -> Site {
    Site {
        project_id: gke_rl::model::ProjectId::new("my-project").unwrap(),
        authorized_cidr: Some(gke_rl::model::Cidr::new("203.0.113.7/32").unwrap()),
        toolkit: "/opt/cluster-toolkit".into(),
        gcluster: "./gcluster".into(),
        folder: format!("/home/me/run/.gke-rl/{}", deployment.project.cluster_name).into(),
        download_dependencies: false,
        skip_gcsfuse_validator: true,
    }
}

fn config(name: &str) -> Deployment {
    configs().into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no config {name}")).1
}

fn plan(deployment: &Deployment) -> String {
    let artifacts = render(deployment);
    lifecycle::deploy_plan(deployment, &site(deployment), artifacts.ray_cluster.as_ref().map(|a| a.contents.as_str()), "30m00s")
}

#[test]
fn deploy_plan_default() {
    insta::assert_snapshot!(plan(&Deployment::default()));
}

/// RayJob mode: no RayCluster to apply or wait for, and a GPU pool that bills only while a
/// RayJob runs.
#[test]
fn deploy_plan_rayjob() {
    insta::assert_snapshot!(plan(&config("rayjob")));
}

#[test]
fn deploy_plan_reservation() {
    insta::assert_snapshot!(plan(&config("reservation-2-nodes")));
}

#[test]
fn destroy_plan_after_a_complete_deploy() {
    let deployment = Deployment::default();
    let mut state = State::new(&deployment, "my-project", "d");
    Step::ALL.into_iter().for_each(|s| state.complete(s));
    let plan = lifecycle::destroy_plan(&deployment, &site(&deployment), &state, None);
    insta::assert_snapshot!(plan.to_string());
    let buckets = [("training-ray-a4-gpu-spot-1a2b".to_owned(), 2)];
    let listed = lifecycle::destroy_plan(&deployment, &site(&deployment), &state, Some(&buckets));
    assert!(listed.preview().ends_with("\n  bucket training-ray-a4-gpu-spot-1a2b (2 objects, emptied first)"), "{}", listed.preview());
    assert_eq!(listed.steps, plan.steps, "the same commands either way");
}

#[test]
fn the_plan_never_holds_a_secret_value_and_names_its_source() {
    let text = plan(&Deployment::default());
    assert!(text.contains("HF_TOKEN: <the value of $HF_TOKEN>"), "{text}");
    assert!(text.contains("--auto-approve") && text.contains("--vars project_id=my-project,authorized_cidr=203.0.113.7/32"), "{text}");
}

#[test]
fn state_round_trips_and_refuses_another_deployment() {
    let deployment = Deployment::default();
    let mut state = State::new(&deployment, "my-project", "abc");
    state.complete(Step::Provision);
    state.complete(Step::Preflight);
    assert_eq!(state.completed, [Step::Preflight, Step::Provision], "kept in step order");
    assert_eq!(State::from_json(&state.to_json()).unwrap(), state);
    assert!(state.to_json().contains("\"provision\""));
    assert_eq!(state.mismatch(&deployment, "my-project"), None);
    let other = state.mismatch(&deployment, "other-project").unwrap();
    assert!(other.contains("belongs to deployment ray-a4-gpu-spot in project my-project"), "{other}");
    let renamed = gke_rl::config::from_yaml("project:\n  cluster_name: another\n").unwrap();
    assert!(state.mismatch(&renamed, "my-project").is_some());
    state.redo_from(Step::Render);
    assert_eq!(state.completed, [Step::Preflight]);
    assert!(matches!(State::from_json("{\"version\": \"x\"}"), Err(gke_rl::Error::State(_))));
}

#[test]
fn digest_changes_with_any_part() {
    let a = lifecycle::digest(&["x", "y"]);
    assert_eq!(a, lifecycle::digest(&["x", "y"]));
    assert_ne!(a, lifecycle::digest(&["xy", ""]), "parts are separated");
    assert_ne!(a, lifecycle::digest(&["x", "z"]));
}

#[test]
fn labelled_clusters_are_read_with_their_location() {
    let listed = "ray-a4-gpu-spot\tus-east1\nold-copy\tus-central1-b\n\n";
    assert_eq!(
        lifecycle::clusters_listed(listed),
        [("ray-a4-gpu-spot".to_owned(), "us-east1".to_owned()), ("old-copy".to_owned(), "us-central1-b".to_owned())]
    );
    assert!(lifecycle::clusters_listed("").is_empty());
}
