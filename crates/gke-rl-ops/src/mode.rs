//! The deployment's job mode, decided here once: in cluster mode the job goes to the long-lived
//! RayCluster's head, in RayJob mode to the head of the cluster the config's RayJob made.

use std::sync::Arc;

use gke_rl::Deployment;
use gke_rl::model::JobMode;

use crate::events::Progress;
use crate::head::{Head, HeadOptions};
use crate::{Env, Error};

/// Connects to the head `deployment`'s jobs go to: the RayCluster's ([`HeadOptions::address`], or
/// a port-forward to its head pod), or, in RayJob mode, that of the cluster the config's RayJob
/// made, while it has one (no address applies). `progress` is kept to report the forward's
/// failed connections for as long as it runs.
pub async fn connect(deployment: &Deployment, options: &HeadOptions, env: &Env, progress: Arc<dyn Progress>) -> Result<Head, Error> {
    match deployment.job.mode {
        JobMode::Rayjob => crate::rayjob::connect(deployment, options, None, env, progress).await.map(|(head, _)| head),
        JobMode::Cluster => crate::head::connect_cluster(deployment, options, env, progress).await,
    }
}
