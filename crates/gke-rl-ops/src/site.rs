//! Which deployment, in which project and folders: the options deploy and destroy share,
//! resolved into the SDK's [`Site`], the deployment's state file, and the lock that keeps one
//! deploy or destroy at a time in its folder.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use gke_rl::Deployment;
use gke_rl::lifecycle::{self, Command, Site, State};
use gke_rl::model::ProjectId;

use crate::events::{LifecycleEvent, Progress};
use crate::{CommonError, Env, LifecycleError, files};

/// The deployment folder when none is given: `.gke-rl/<cluster_name>`, relative to the working
/// directory.
pub fn default_folder(deployment: &Deployment) -> PathBuf {
    Path::new(".gke-rl").join(deployment.project.cluster_name.as_str())
}

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
        let folder = self.folder.clone().unwrap_or_else(|| default_folder(deployment));
        // Each is given to gcloud and gcluster as text, and read back as a path: never a lossy one.
        let absolute = |path: &Path| match std::path::absolute(path) {
            Ok(absolute) if absolute.to_str().is_some() => Ok(absolute),
            Ok(absolute) => Err(CommonError::NotUtf8 { path: absolute }),
            Err(source) => Err(CommonError::Read { path: path.to_owned(), source }),
        };
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
    pub fn load_state(&self) -> Result<Option<State>, LifecycleError> {
        let path = self.state_path();
        let text = match files::read_text(&path) {
            Ok(text) => text,
            Err(CommonError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let state = State::from_json(&text).map_err(|source| LifecycleError::State { path: path.clone(), source })?;
        if let Some(mismatch) = state.mismatch(self.deployment, self.site.project_id.as_str()) {
            return Err(LifecycleError::ForeignState { path, mismatch });
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

/// The lock file in a deployment folder.
pub const LOCK_FILE: &str = ".gke-rl.lock";

/// How long [`lock_folder`] waits for a held lock before it says who holds it.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// An exclusive hold on a deployment folder for as long as it lives. It is an advisory lock on
/// the folder's [`LOCK_FILE`], which the kernel frees when the process ends, however it ends:
/// no stale lock outlives a killed gke-rl.
#[derive(Debug)]
pub struct FolderLock {
    _file: std::fs::File,
}

/// Takes the existing `folder` for `holder` (e.g. `gke-rl deploy`), or says which process holds
/// it. The lock file is opened without following a link planted in its place.
pub fn lock_folder(folder: &Path, holder: &str) -> Result<FolderLock, LifecycleError> {
    let path = folder.join(LOCK_FILE);
    let write = |source| CommonError::Write { path: path.clone(), source };
    let mut file = match std::fs::File::create_new(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => open_no_link(&path).map_err(write)?,
        Err(e) => return Err(write(e).into()),
    };
    // A child another thread of this process is forking holds a copy of every descriptor until
    // it execs (closing them): a lock just freed here may look held for a moment.
    let started = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LifecycleError::FolderInUse { folder: folder.to_owned(), holder: holder_of(&path) });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(write(source).into()),
        }
    }
    file.set_len(0).map_err(write)?;
    file.write_all(format!("pid {}: {holder}\n", std::process::id()).as_bytes()).map_err(write)?;
    Ok(FolderLock { _file: file })
}

/// Opens an existing regular file for writing, refusing a symlink or a file swapped for one
/// between the look and the open (the opened file must be the one looked at).
fn open_no_link(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::MetadataExt as _;
    let looked = std::fs::symlink_metadata(path)?;
    let refused = || std::io::Error::other("not a regular file (a link or another kind); remove it");
    if !looked.file_type().is_file() {
        return Err(refused());
    }
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    let opened = file.metadata()?;
    if (opened.dev(), opened.ino()) != (looked.dev(), looked.ino()) {
        return Err(refused());
    }
    Ok(file)
}

/// What the lock file says of its holder (`pid 4242: gke-rl deploy`), read within a bound and
/// with control characters dropped.
fn holder_of(path: &Path) -> String {
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|file| file.take(256).read_to_string(&mut text));
    let holder: String = text.lines().next().unwrap_or_default().chars().filter(|c| !c.is_control()).collect();
    if read.is_err() || holder.is_empty() { "another gke-rl".to_owned() } else { holder }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_held_by_one_lock_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("deployment");
        std::fs::create_dir(&folder).unwrap();
        let held = lock_folder(&folder, "gke-rl deploy").unwrap();
        let refused = lock_folder(&folder, "gke-rl destroy").unwrap_err();
        let pid = std::process::id();
        assert!(
            matches!(&refused, LifecycleError::FolderInUse { holder, .. } if *holder == format!("pid {pid}: gke-rl deploy")),
            "{refused}"
        );
        drop(held);
        // Taken again at once, even while another test of this process forks a child.
        let again = lock_folder(&folder, "gke-rl destroy").unwrap();
        assert_eq!(std::fs::read_to_string(folder.join(LOCK_FILE)).unwrap(), format!("pid {pid}: gke-rl destroy\n"));
        drop(again);
        // A link planted in the lock file's place is never written through.
        std::fs::remove_file(folder.join(LOCK_FILE)).unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep\n").unwrap();
        std::os::unix::fs::symlink(&target, folder.join(LOCK_FILE)).unwrap();
        assert!(matches!(lock_folder(&folder, "gke-rl deploy"), Err(LifecycleError::Common(CommonError::Write { .. }))));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
    }
}
