//! The cluster lifecycle as data: every command `deploy` and `destroy` run, every object they
//! apply, in order, and the state file that lets an interrupted run resume. Pure, like the rest
//! of the SDK: a front end runs the plan, `--dry-run` prints it, tests snapshot it.
//!
//! - [`commands`]: each gcloud and gcluster invocation, built from the model and a [`Site`];
//! - [`state`]: the resumable record of a deployment (`state.json`);
//! - [`plan`]: the deploy and destroy plans as text, from those same commands.

pub mod capacity;
mod commands;
pub mod existing;
mod plan;
mod state;
mod transfer;

pub use commands::*;
pub use plan::{DestroyPlan, billable, deploy_plan, destroy_plan};
pub use state::{Created, Kept, KeptKind, State, Transfer, digest};
pub use transfer::*;

use serde::{Deserialize, Serialize};

use crate::ArtifactKind;
use std::path::{Path, PathBuf};

use crate::model::{Cidr, Deployment, ProjectId};
use crate::render::{HF_TOKEN_KEY, WANDB_API_KEY_KEY};

/// The gcluster validator that needs a custom IAM role fresh projects lack.
pub const GCSFUSE_VALIDATOR: &str = "test_gcsfuse_iam_role_exists";
/// The custom role that validator looks for.
pub const GCSFUSE_ROLE: &str = "gke.gcsfuse.profileUser";
/// APIs the patched blueprint needs (gcluster's `test_apis_enabled` and the Lustre modules).
pub const REQUIRED_APIS: &[&str] = &[
    "compute.googleapis.com",
    "container.googleapis.com",
    "iam.googleapis.com",
    "lustre.googleapis.com",
    "servicenetworking.googleapis.com",
    "storage.googleapis.com",
];
/// The APIs deploy needs: the blueprint's, or on an existing cluster GKE's and Lustre's (and
/// what creating an instance's peering takes).
pub fn required_apis(deployment: &Deployment) -> Vec<&'static str> {
    if !deployment.project.existing_cluster {
        return REQUIRED_APIS.to_vec();
    }
    let creates_lustre = !deployment.lustre.existing;
    let needed = ["container.googleapis.com", "lustre.googleapis.com"];
    let peering = ["compute.googleapis.com", "servicenetworking.googleapis.com"];
    REQUIRED_APIS.iter().copied().filter(|api| needed.contains(api) || (creates_lustre && peering.contains(api))).collect()
}
/// The credential plugin every GKE kubeconfig runs (`gcloud container clusters get-credentials`).
pub const AUTH_PLUGIN: &str = "gke-gcloud-auth-plugin";
/// How to install [`AUTH_PLUGIN`].
pub const INSTALL_AUTH_PLUGIN: &str = "gcloud components install gke-gcloud-auth-plugin (where gcloud came from apt: sudo apt-get install google-cloud-cli-gke-gcloud-auth-plugin)";
/// What the plan needs to know about this machine and the project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// Google Cloud project id.
    pub project_id: ProjectId,
    /// CIDR allowed to reach the control plane; `None` until deploy has found it (a dry run
    /// shows this machine's address in its place).
    pub authorized_cidr: Option<Cidr>,
    /// Cluster Toolkit checkout (absolute).
    pub toolkit: PathBuf,
    /// The gcluster program (the checkout's `./gcluster`, or `gcluster` on PATH).
    pub gcluster: String,
    /// gke-rl's deployment folder (absolute): the state file, the patched blueprint, and
    /// gcluster's folder.
    pub folder: PathBuf,
    /// Let gcluster download Terraform and Packer.
    pub download_dependencies: bool,
    /// Skip gcluster's GCS-Fuse role validator (the role does not exist in the project).
    pub skip_gcsfuse_validator: bool,
}

/// The steps of `deploy`, in order; the state file records the completed ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// Checks that change nothing.
    Preflight,
    /// Render, validate, patch the blueprint into the folder.
    Render,
    /// `gcluster deploy`: network, cluster, node pool, Lustre, PVC.
    Provision,
    /// kubeconfig for the new cluster.
    Credentials,
    /// The token Secret.
    Secret,
    /// The RayCluster.
    RayCluster,
    /// Until every pod is Running and Ready.
    Ready,
    /// The checkpoint `job.resume_from` names, imported into the checkpoint folder before any
    /// run (done at once when there is none).
    Resume,
}

impl Step {
    /// Every step, in order.
    pub const ALL: [Step; 8] =
        [Step::Preflight, Step::Render, Step::Provision, Step::Credentials, Step::Secret, Step::RayCluster, Step::Ready, Step::Resume];

    /// What the step does, for progress lines.
    pub fn title(self) -> &'static str {
        match self {
            Step::Preflight => "preflight",
            Step::Render => "render and validate",
            Step::Provision => "provision the cluster and Managed Lustre",
            Step::Credentials => "cluster credentials",
            Step::Secret => "token Secret",
            Step::RayCluster => "RayCluster",
            Step::Ready => "wait for every Ray pod to be Ready",
            Step::Resume => "import the checkpoint the run resumes from",
        }
    }
}

impl Site {
    /// The authorized CIDR as gcluster gets it, or the placeholder a dry run shows.
    pub fn authorized_cidr_text(&self) -> String {
        self.authorized_cidr.as_ref().map_or_else(|| "<this machine's public address>/32".to_owned(), ToString::to_string)
    }

    /// The deployment folder's paths.
    pub fn folder(&self) -> Folder<'_> {
        Folder(&self.folder)
    }
}

/// Paths inside the deployment folder.
pub struct Folder<'a>(pub &'a Path);

impl Folder<'_> {
    /// The state file.
    pub fn state(&self) -> String {
        self.0.join("state.json").display().to_string()
    }

    /// The patched blueprint.
    pub fn blueprint(&self) -> String {
        self.0.join(ArtifactKind::Blueprint.file()).display().to_string()
    }

    /// The gcluster deployment file.
    pub fn deployment_file(&self) -> String {
        self.0.join(ArtifactKind::DeploymentFile.file()).display().to_string()
    }

    /// The RayCluster manifest.
    pub fn ray_cluster(&self) -> String {
        self.0.join(ArtifactKind::RayCluster.file()).display().to_string()
    }

    /// A template the blueprint stages, copied beside it.
    pub fn template(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    /// gcluster's deployment folder (`-o FOLDER` makes `FOLDER/<deployment_name>`).
    pub fn gcluster(&self, deployment: &Deployment) -> String {
        self.0.join(deployment.project.cluster_name.as_str()).display().to_string()
    }
}

/// How long to wait for a RayJob's cluster to come up: a minute past KubeRay's own bound, the
/// pre-running deadline, which fails the RayJob first; an hour without one.
pub fn rayjob_start_wait(d: &Deployment) -> std::time::Duration {
    std::time::Duration::from_secs(d.job.rayjob_pre_running_deadline_seconds.map_or(3600, |s| u64::from(s.get())) + 60)
}

/// The environment variables that hold the deployment's secrets: no child process inherits
/// them, no upload may contain their values, and job output redacts them: the Secret's, and
/// the Ray token's.
pub fn secret_variables(deployment: &Deployment) -> Vec<String> {
    let entries = secret_entries(deployment).into_iter().map(|(_, variable, _)| variable);
    entries.chain([crate::auth::TOKEN_VARIABLE]).map(str::to_owned).collect()
}

/// The Secrets deploy creates in the cluster: the job's tokens, and the cluster's token (Ray's
/// where the cluster uses tokens, and the run key that proves its run records in any case).
pub fn cluster_secrets(deployment: &Deployment) -> Vec<String> {
    vec![deployment.secrets.kubernetes_secret.to_string(), crate::auth::secret_name(deployment)]
}

/// The token Secret's entries: key in the Secret, local variable it is read from, required.
pub fn secret_entries(deployment: &Deployment) -> Vec<(&'static str, &str, bool)> {
    let secrets = &deployment.secrets;
    let mut entries = vec![(HF_TOKEN_KEY, secrets.hf_token_env.as_str(), true)];
    if let Some(wandb) = &secrets.wandb_api_key_env {
        entries.push((WANDB_API_KEY_KEY, wandb.as_str(), false));
    }
    entries
}
