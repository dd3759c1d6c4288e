//! The cost block of `cost`, `deploy --dry-run` and the web page, for each provisioning mode.

use gke_rl::Deployment;
use gke_rl::cost::estimate;
use gke_rl::model::Provisioning;
use gke_rl::model::Usd;
use gke_rl_test_support::configs::configs;

fn config(name: &str) -> Deployment {
    configs().into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no config {name}")).1
}

#[test]
fn cost_spot() {
    insta::assert_snapshot!(estimate(&Deployment::default()).to_string());
}

#[test]
fn cost_reservation() {
    insta::assert_snapshot!(estimate(&config("reservation-2-nodes")).to_string());
}

#[test]
fn cost_flex_start() {
    insta::assert_snapshot!(estimate(&config("flex-start-4-nodes")).to_string());
}

#[test]
fn cost_on_demand() {
    let mut on_demand = Deployment::default();
    on_demand.topology.provisioning = Provisioning::OnDemand;
    insta::assert_snapshot!(estimate(&on_demand).to_string());
}

#[test]
fn cost_with_config_prices() {
    let mut d = Deployment::default();
    d.cost.gpu_node_per_hour = Usd::new(25.5);
    d.cost.lustre_per_gib_month = Usd::new(0.3);
    d.cost.source = Some("our 2026 contract".to_owned());
    insta::assert_snapshot!(estimate(&d).to_string());
}

#[test]
fn a_negative_price_in_the_config_is_refused_at_its_line() {
    let err = gke_rl::config::from_yaml("cost:\n  gpu_node_per_hour: -3\n").unwrap_err().to_string();
    assert!(err.contains("2:") && err.contains("is not a price"), "{err}");
}
