//! Why the run report could not ask Cloud Monitoring what the run's Lustre instance did.

use super::{CommonError, holds_common};

/// Why the run report could not ask Cloud Monitoring.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// What any operation can meet.
    #[error(transparent)]
    Common(#[from] CommonError),
    /// Cloud Monitoring's endpoint override is neither Google's nor on loopback.
    #[error(
        "{given} is neither Cloud Monitoring's endpoint ({}) nor a loopback address (a test's); gcloud's access token goes nowhere else",
        gke_rl_in_cluster::lustre_usage::ENDPOINT
    )]
    MonitoringEndpoint {
        /// The endpoint given.
        given: String,
    },
    /// gcloud gave no access token.
    #[error("cannot get an access token from gcloud (`gcloud auth print-access-token`): {reason}")]
    AccessToken {
        /// Why.
        reason: String,
    },
    /// Cloud Monitoring did not list a metric.
    #[error("Cloud Monitoring could not list {metric}: {reason}")]
    Monitoring {
        /// The metric type.
        metric: String,
        /// Why.
        reason: String,
    },
    /// The run's window in time is unknown or unusable.
    #[error("the run's time is not known well enough to ask what its Lustre instance did meanwhile: {why}")]
    NoRunWindow {
        /// Why.
        why: &'static str,
    },
}

holds_common!(ReportError);
