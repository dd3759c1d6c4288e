//! What a deployment needs of the project's capacity, checked before anything is created: the
//! regional GPU quota for the machine's GPUs in its provisioning mode, read from
//! `gcloud compute regions describe … --format=json(quotas)`.

use serde::Deserialize;

use crate::model::{Deployment, Provisioning};

/// Compute Engine's regional quota metric for a GKE accelerator, on-demand (reservations
/// count against it too); Spot and flex-start VMs count against its `PREEMPTIBLE_` twin.
/// Only metrics gke-rl has seen named are listed.
const GPU_QUOTA_METRICS: &[(&str, &str)] = &[("nvidia-b200", "NVIDIA_B200_GPUS")];

/// The quota metric the deployment's GPU nodes count against, if gke-rl knows it.
pub fn gpu_quota_metric(d: &Deployment) -> Option<String> {
    let (_, metric) = GPU_QUOTA_METRICS.iter().find(|(accelerator, _)| *accelerator == d.topology.accelerator.as_str())?;
    Some(match d.topology.provisioning {
        Provisioning::Spot | Provisioning::FlexStart => format!("PREEMPTIBLE_{metric}"),
        Provisioning::Reservation(_) | Provisioning::OnDemand => (*metric).to_owned(),
    })
}

/// GPUs the deployment's nodes hold.
pub fn gpus_needed(d: &Deployment) -> u64 {
    u64::from(d.topology.node_count.get()) * u64::from(d.topology.gpus_per_node.get())
}

/// One regional quota.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Quota {
    /// The metric, e.g. `PREEMPTIBLE_NVIDIA_B200_GPUS`.
    pub metric: String,
    /// How many the project may use in the region.
    pub limit: f64,
    /// How many it uses now.
    #[serde(default)]
    pub usage: f64,
}

impl Quota {
    /// What is left.
    pub fn free(&self) -> f64 {
        (self.limit - self.usage).max(0.0)
    }
}

#[derive(Deserialize)]
struct Region {
    #[serde(default)]
    quotas: Vec<Quota>,
}

/// The quota `metric` in gcloud's JSON answer; `Ok(None)` when the region does not list it
/// (for a GPU: the region has none of them, a quota of 0).
pub fn find_quota(json: &str, metric: &str) -> Result<Option<Quota>, String> {
    let region: Region = serde_json::from_str(json).map_err(|e| format!("gcloud's answer is not a region's quotas: {e}"))?;
    Ok(region.quotas.into_iter().find(|q| q.metric == metric))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of `gcloud compute regions describe us-east1 --format=json(quotas)`.
    const REGION: &str = r#"{"quotas": [
        {"limit": 2400.0, "metric": "CPUS", "usage": 112.0},
        {"limit": 64.0, "metric": "PREEMPTIBLE_NVIDIA_B200_GPUS", "usage": 16.0},
        {"limit": 0.0, "metric": "NVIDIA_B200_GPUS", "usage": 0.0}
    ]}"#;

    #[test]
    fn spot_nodes_count_against_the_preemptible_quota() {
        let spot = Deployment::default();
        let metric = gpu_quota_metric(&spot).unwrap();
        assert_eq!((metric.as_str(), gpus_needed(&spot)), ("PREEMPTIBLE_NVIDIA_B200_GPUS", 64));
        let quota = find_quota(REGION, &metric).unwrap().unwrap();
        assert_eq!(quota.free(), 48.0, "16 of 64 in use: 8 nodes do not fit");
        let mut on_demand = Deployment::default();
        on_demand.topology.provisioning = Provisioning::OnDemand;
        assert_eq!(find_quota(REGION, &gpu_quota_metric(&on_demand).unwrap()).unwrap().unwrap().limit, 0.0);
        assert_eq!(find_quota(r#"{"quotas": []}"#, &metric).unwrap(), None);
        assert!(find_quota("ERROR: (gcloud.compute.regions.describe)", &metric).is_err());
    }
}
