//! Which deployment, in which project and folders: the options deploy and destroy share,
//! resolved into the SDK's [`Site`], and the deployment's state file.

use std::path::{Path, PathBuf};

use gke_rl::Deployment;
use gke_rl::lifecycle::{self, Command, Site, State};
use gke_rl::model::ProjectId;

use crate::events::{LifecycleEvent, Progress};
use crate::{CommonError, Env, files};

/// Which deployment, where.
#[derive(Clone, Debug, Default)]
pub struct SiteOptions {
    /// The Google Cloud project [default: the config's `project_id`, else gcloud's configured project].
    pub project: Option<ProjectId>,
    /// The deployment folder: state file, patched blueprint, gcluster's files [default: `.gke-rl/<cluster_name>`].
    pub folder: Option<PathBuf>,
    /// The Cluster Toolkit checkout [default: `./cluster-toolkit`].
    pub toolkit: Option<PathBuf>,
}

/// A deployment with its site and the variables that hold its secrets.
pub(crate) struct Resolved<'a> {
    pub deployment: &'a Deployment,
    pub site: Site,
    /// Removed from every child's environment.
    pub hidden: Vec<String>,
}

impl SiteOptions {
    /// Resolves the project (option, config, `PROJECT_ID`, gcloud) and the folders, once. The site's
    /// authorized CIDR is left unknown: only deploy needs one.
    pub(crate) fn resolve<'a>(
        &self,
        deployment: &'a Deployment,
        env: &Env,
        download_dependencies: bool,
    ) -> Result<Resolved<'a>, CommonError> {
        let hidden = lifecycle::secret_variables(deployment);
        let project_id = match (&self.project, &deployment.project.project_id) {
            (Some(given), _) => given.clone(),
            (None, Some(configured)) => configured.clone(),
            // The codelab's env.sh exports PROJECT_ID, and the guide's step-by-step (docs/deploy.md) does too.
            (None, None) if let Some(exported) = env.var("PROJECT_ID") => ProjectId::new(exported.as_str())
                .map_err(|e| CommonError::BadProject { from: "the PROJECT_ID environment variable", reason: e.to_string() })?,
            (None, None) => {
                let configured = env.runner.read(&lifecycle::configured_project(), &hidden).map(|p| p.trim().to_owned());
                match configured {
                    // gcloud's answer goes into gcluster's `--vars` like the others: it must be an id.
                    Ok(p) if !p.is_empty() && p != "(unset)" => ProjectId::new(p.as_str()).map_err(|e| CommonError::BadProject {
                        from: "gcloud's configured project (`gcloud config get-value project`)",
                        reason: e.to_string(),
                    })?,
                    _ => return Err(CommonError::NoProject),
                }
            }
        };
        let folder = self.folder.clone().unwrap_or_else(|| Path::new(".gke-rl").join(deployment.project.cluster_name.as_str()));
        let absolute = |path: &Path| std::path::absolute(path).map_err(|source| CommonError::Read { path: path.to_owned(), source });
        let folder = absolute(&folder)?;
        // Not given: the one the deployment was provisioned with, else ./cluster-toolkit.
        let remembered = || -> Option<PathBuf> {
            let text = files::read_text(&PathBuf::from(lifecycle::Folder(&folder).state())).ok()?;
            State::from_json(&text).ok()?.toolkit.map(PathBuf::from)
        };
        let toolkit = absolute(&self.toolkit.clone().or_else(remembered).unwrap_or_else(|| PathBuf::from("cluster-toolkit")))?;
        let checkout_gcluster = toolkit.join("gcluster");
        let gcluster = if checkout_gcluster.is_file() { checkout_gcluster.display().to_string() } else { "gcluster".to_owned() };
        let site =
            Site { project_id, authorized_cidr: None, toolkit, gcluster, folder, download_dependencies, skip_gcsfuse_validator: false };
        Ok(Resolved { deployment, site, hidden })
    }
}

impl Resolved<'_> {
    /// The deployment folder (absolute).
    pub fn folder(&self) -> &Path {
        &self.site.folder
    }

    /// The state file.
    pub fn state_path(&self) -> PathBuf {
        PathBuf::from(self.site.folder().state())
    }

    /// The state file, if there is one; refused when it is another deployment's.
    pub fn load_state(&self) -> Result<Option<State>, CommonError> {
        let path = self.state_path();
        let text = match files::read_text(&path) {
            Ok(text) => text,
            Err(CommonError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let state = State::from_json(&text).map_err(|source| CommonError::State { path: path.clone(), source })?;
        if let Some(mismatch) = state.mismatch(self.deployment, self.site.project_id.as_str()) {
            return Err(CommonError::ForeignState { path, mismatch });
        }
        Ok(Some(state))
    }

    pub fn save_state(&self, state: &State) -> Result<(), CommonError> {
        std::fs::create_dir_all(self.folder()).map_err(|source| CommonError::Write { path: self.folder().to_owned(), source })?;
        files::write_atomically(&self.state_path(), state.to_json().as_bytes(), false)
    }

    /// The RayClusters of the deployment's namespace, through the kubeconfig context
    /// get-credentials wrote for the cluster (whatever the current context is).
    pub async fn clusters(&self, env: &Env) -> Result<gke_rl_kube::Namespaced, CommonError> {
        let context = lifecycle::kube_context(self.deployment, &self.site);
        let client = env.kube.client(Some(&context), &self.hidden).await?;
        Ok(gke_rl_kube::Namespaced::new(client, self.deployment.ray.namespace.as_str()))
    }

    /// What fixes `error` when it is about reaching the cluster's API.
    pub fn fix(&self, error: &CommonError) -> Option<crate::Fix> {
        error.fix(&lifecycle::credentials(self.deployment, self.site.project_id.as_str()))
    }

    /// Runs a read-only command without the secret variables.
    pub fn read(&self, env: &Env, command: &Command) -> Result<String, crate::RunError> {
        env.runner.read(command, &self.hidden)
    }

    /// Runs a command whose output goes to the terminal, saying so first; whether it succeeded.
    pub fn stream(&self, env: &Env, progress: &dyn Progress, command: &Command) -> bool {
        progress.lifecycle(LifecycleEvent::Running(command));
        env.runner.stream(command, &self.hidden)
    }
}
