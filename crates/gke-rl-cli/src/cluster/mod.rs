//! `gke-rl deploy`, `destroy`, `suspend` and `resume`: arguments into `gke_rl_ops`
//! options, the outcome into lines and an exit code.

mod deploy;
mod destroy;
mod export;
mod suspend;

use std::path::PathBuf;

pub use deploy::DeployArgs;
pub use destroy::DestroyArgs;
pub use export::ExportArgs;
pub use suspend::{ResumeArgs, SuspendArgs};

/// Which deployment, in which project: flags shared by deploy, destroy and export.
#[derive(clap::Args)]
pub struct Target {
    #[command(flatten)]
    pub source: crate::config::Source,
    /// Google Cloud project [default: the config's project_id, else $PROJECT_ID, else gcloud's configured project]
    #[arg(long, value_name = "ID", value_parser = project_id)]
    project: Option<gke_rl::model::ProjectId>,
    /// Deployment folder (state file, patched blueprint, gcluster's files) [default: .gke-rl/<cluster_name>]
    #[arg(long, value_name = "DIR")]
    folder: Option<PathBuf>,
    /// Cluster Toolkit checkout [default: ./cluster-toolkit]
    #[arg(long, value_name = "DIR", env = "GKE_RL_TOOLKIT")]
    toolkit: Option<PathBuf>,
}

impl Target {
    fn options(&self) -> gke_rl_ops::SiteOptions {
        gke_rl_ops::SiteOptions { project: self.project.clone(), folder: self.folder.clone(), toolkit: self.toolkit.clone() }
    }

    /// The command that writes the cluster's kubeconfig entry, for hints.
    fn get_credentials(&self, deployment: &gke_rl::Deployment) -> gke_rl::lifecycle::Command {
        let project = self.project.as_ref().or(deployment.project.project_id.as_ref()).map(ToString::to_string);
        gke_rl::lifecycle::credentials(deployment, project.as_deref().unwrap_or("PROJECT_ID"))
    }
}

/// `--project`: an id by Google's rules, so that it cannot carry other gcluster vars.
fn project_id(text: &str) -> Result<gke_rl::model::ProjectId, String> {
    gke_rl::model::ProjectId::new(text).map_err(|e| e.to_string())
}
