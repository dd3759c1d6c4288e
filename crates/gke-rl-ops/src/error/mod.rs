//! Why an operation failed, typed by the family of operations that can fail so, with what
//! fixes it: a front end words the fix in its own commands.
//!
//! - [`LifecycleError`]: deploy, destroy, suspend and resume, and the deployment folder's state
//!   and lock;
//! - [`JobError`]: reaching the head, submitting, following, stopping and the job commands;
//! - [`ReportError`]: what the run report asks Cloud Monitoring;
//! - [`CommonError`]: what more than one family can meet (the project, files, the rendered
//!   artifacts, the Ray token's Secret, the Kubernetes API, the process), held by each family.
//!
//! A front end with one renderer takes [`Error`], which each family converts into.

mod jobs;
mod keep;
mod lifecycle;
mod reports;

use std::path::PathBuf;

use gke_rl::lifecycle::Command;

pub use jobs::{JobError, NotDeleted};
pub use keep::KeepError;
pub use lifecycle::{LifecycleError, Problem};
pub use reports::ReportError;

/// Why any operation failed: its family's error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Deploy, destroy, suspend or resume.
    #[error(transparent)]
    Lifecycle(#[from] LifecycleError),
    /// A job operation.
    #[error(transparent)]
    Jobs(#[from] JobError),
    /// The run report.
    #[error(transparent)]
    Reports(#[from] ReportError),
}

/// What more than one family of operations can meet: the project, reading and writing files, a
/// render that fails validation, the Ray token's Secret, the Kubernetes API, the process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommonError {
    /// No project id anywhere: not in the options, the config, the environment or gcloud's
    /// configuration.
    #[error(
        "no project: export PROJECT_ID, set project.project_id in the config, or run `gcloud config set project PROJECT_ID` (deploy and destroy also take --project PROJECT_ID)"
    )]
    NoProject,
    /// A project id that is not one.
    #[error("{from}: {reason}; a project id has 6 to 30 lowercase letters, digits and hyphens and starts with a letter")]
    BadProject {
        /// Where it came from.
        from: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A file could not be read or is not text.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file that is larger than gke-rl reads.
    #[error("{} is {:.1} MiB; gke-rl reads files of at most {} MiB", path.display(), *bytes as f64 / 1_048_576.0, gke_rl_validate::MAX_FILE_BYTES / 1_048_576)]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// A named pipe, socket or device where a file was expected.
    #[error("{} is {kind}, not a file; gke-rl reads regular files, `<(command)` and /dev/stdin", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// A file that is not UTF-8 text.
    #[error("{}:{}:{}: not UTF-8 text; save the file as UTF-8", path.display(), at.0, at.1)]
    NotText {
        /// The file.
        path: PathBuf,
        /// Line and column of the first byte that is not UTF-8.
        at: (u32, u32),
    },
    /// A path gcloud or gcluster is given as text is not UTF-8.
    #[error("{} is not UTF-8, and gcloud and gcluster are given it as text: use a folder whose path is", path.display())]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// A file changed after it was read, before the edit of it was written.
    #[error(
        "{} changed after it was read (an edit saved meanwhile?): not written over, the change is kept; run the command again",
        path.display()
    )]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// A file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The SDK refused the model (an unknown image, a value).
    #[error(transparent)]
    Model(#[from] gke_rl::Error),
    /// The Kubernetes API.
    #[error(transparent)]
    Kube(Box<gke_rl_kube::Error>),
    /// Something of the process's own failed (a signal handler, a local port).
    #[error("{what}")]
    Local {
        /// What failed.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The render (with the patched blueprint, when there is one) fails validation: nothing was
    /// written or deployed.
    #[error("the render fails validation, as `render` would say; nothing was written or deployed:\n  {}", errors.join("\n  "))]
    Invalid {
        /// `file:line: message` of each error.
        errors: Vec<String>,
    },
    /// The RayCluster asks for a Ray token that its Secret does not hold.
    #[error(
        "RayCluster {namespace}/{cluster} admits only holders of the Ray token in Secret {namespace}/{secret} (key auth_token), which holds none or does not exist: delete that Secret if it is there and run deploy, which makes a new token, then restart the pods with `gke-rl suspend` and `gke-rl resume`; or set RAY_AUTH_TOKEN to the cluster's token"
    )]
    NoRayToken {
        /// The RayCluster.
        cluster: String,
        /// Its namespace.
        namespace: String,
        /// The Secret.
        secret: String,
    },
}

impl From<gke_rl_kube::Error> for CommonError {
    fn from(error: gke_rl_kube::Error) -> Self {
        CommonError::Kube(Box::new(error))
    }
}

/// Each family holds [`CommonError`] and converts what it converts from, so that `?` works
/// in each.
macro_rules! holds_common {
    ($family:ident) => {
        impl From<gke_rl_kube::Error> for $family {
            fn from(error: gke_rl_kube::Error) -> Self {
                $family::Common(error.into())
            }
        }

        impl From<gke_rl::Error> for $family {
            fn from(error: gke_rl::Error) -> Self {
                $family::Common(error.into())
            }
        }

        impl $family {
            /// The error any family can meet, when it is one.
            pub fn common(&self) -> Option<&CommonError> {
                match self {
                    $family::Common(common) => Some(common),
                    _ => None,
                }
            }
        }
    };
}
use holds_common;

/// What fixes a failure to use the cluster's Kubernetes API; a front end words it with its
/// own commands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fix {
    /// The control plane answers only its authorized networks: deploy again with this
    /// machine's address as the authorized CIDR (or the cluster is gone).
    AuthorizedNetworks,
    /// The kubeconfig's CA or entry is not the cluster's: write it again with this command.
    GetCredentials(Command),
    /// The credentials were refused: refresh them with this command (after `gcloud auth login`
    /// if gcloud's login expired).
    RefreshCredentials(Command),
    /// The account may not act in the cluster: grant it roles/container.developer.
    GrantDeveloperRole,
    /// Install gke-gcloud-auth-plugin.
    InstallAuthPlugin,
    /// gke-gcloud-auth-plugin failed: `gcloud auth login`.
    GcloudLogin,
}

impl Error {
    /// The fix when the error is about reaching the cluster's API; `get_credentials` is the
    /// command that writes the cluster's kubeconfig entry.
    pub fn fix(&self, get_credentials: &Command) -> Option<Fix> {
        match self {
            Error::Lifecycle(LifecycleError::Head(e)) => e.fix(get_credentials),
            Error::Lifecycle(e) => e.common()?.fix(get_credentials),
            Error::Jobs(e) => e.fix(get_credentials),
            Error::Reports(e) => e.common()?.fix(get_credentials),
        }
    }
}

impl CommonError {
    /// The fix when the error is about reaching the cluster's API.
    pub fn fix(&self, get_credentials: &Command) -> Option<Fix> {
        use gke_rl_kube::Unreachable;
        let CommonError::Kube(kube) = self else { return None };
        Some(match &**kube {
            gke_rl_kube::Error::Kubeconfig(_) => Fix::GetCredentials(get_credentials.clone()),
            gke_rl_kube::Error::Unreachable { cause, .. } => match cause {
                Unreachable::Connect(detail) if detail.contains("certificate") => Fix::GetCredentials(get_credentials.clone()),
                Unreachable::Connect(_) | Unreachable::NoAnswer(_) => Fix::AuthorizedNetworks,
                Unreachable::Unauthorized(_) => Fix::RefreshCredentials(get_credentials.clone()),
                Unreachable::Forbidden(_) => Fix::GrantDeveloperRole,
                Unreachable::CredentialPlugin { missing: true, .. } => Fix::InstallAuthPlugin,
                Unreachable::CredentialPlugin { missing: false, .. } => Fix::GcloudLogin,
                // Not the API server's doing: a proxy, or a server gone wrong. Nothing to run.
                Unreachable::AnswerTooLarge => return None,
            },
            _ => return None,
        })
    }
}

/// The innermost cause of an error: what a transport failure comes down to (a refused
/// connection, a name that does not resolve).
pub(crate) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut root = error;
    while let Some(next) = root.source() {
        root = next;
    }
    root.to_string()
}

/// An error and its causes on one line, each said once.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cause = Some(error);
    while let Some(e) = cause {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = e.source();
    }
    parts.join(": ")
}

/// Why nobody can answer a question: no terminal to ask on, a question the front end does
/// not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unanswerable(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden() -> gke_rl_kube::Error {
        gke_rl_kube::Error::Unreachable { action: "list pods".into(), cause: gke_rl_kube::Unreachable::Forbidden("no".into()) }
    }

    fn credentials() -> Command {
        Command { program: "gcloud".into(), args: vec!["container".into()], dir: None }
    }

    /// The fix for the Kubernetes API is found however deep a family holds it, and only there.
    #[test]
    fn the_fix_is_found_in_every_family() {
        let get = credentials();
        let held: [Error; 5] = [
            LifecycleError::from(forbidden()).into(),
            JobError::from(forbidden()).into(),
            ReportError::from(forbidden()).into(),
            JobError::PortForward { source: Box::new(JobError::from(forbidden())) }.into(),
            JobError::SuspendAfterRun(Box::new(LifecycleError::from(forbidden()))).into(),
        ];
        for error in held {
            assert_eq!(error.fix(&get), Some(Fix::GrantDeveloperRole), "{error:?}");
        }
        let wrapped = LifecycleError::NoCapacity { source: Box::new(forbidden()), cause: "stockout".into(), inspect: get.clone() };
        assert_eq!(Error::from(wrapped).fix(&get), None, "a wait's timeout is not the API refusing");
        assert_eq!(Error::from(JobError::NoJobs).fix(&get), None);
    }

    /// Why a RayJob was not deleted is said, with until when its nodes stay.
    #[test]
    fn a_rayjob_left_behind_says_why_and_until_when() {
        let not_started = |deleted, deadline| JobError::RayJobNotStarted {
            name: "grpo".into(),
            namespace: "default".into(),
            deleted,
            deadline,
            source: Box::new(JobError::NoJobs),
        };
        let deleted = not_started(Ok(()), Some(600)).to_string();
        assert!(deleted.ends_with("RayJob default/grpo is deleted, so that its nodes go"), "{deleted}");
        let unread = not_started(Err(NotDeleted::Unread(Box::new(forbidden()))), Some(600)).to_string();
        assert!(unread.contains("deleting RayJob default/grpo failed (whether it was made cannot be read: "), "{unread}");
        assert!(unread.contains("until its pre-running deadline (600 s from its start)"), "{unread}");
        let refused = not_started(Err(NotDeleted::Refused(Box::new(forbidden()))), None).to_string();
        assert!(refused.contains("failed (list pods: the API server denied access (403): no): delete it with"), "{refused}");
        assert!(refused.contains("`kubectl delete rayjob grpo -n default`") && refused.ends_with("until it is deleted"), "{refused}");
        let preempted = |not_deleted| {
            JobError::RunPreempted { name: "grpo".into(), namespace: "default".into(), state: "Suspended".into(), not_deleted }.to_string()
        };
        assert!(preempted(None).ends_with("NeMo-RL resumes from its newest checkpoint"), "{}", preempted(None));
        let kept = preempted(Some(Box::new(forbidden())));
        assert!(kept.contains("deleting it failed (") && kept.contains("`kubectl delete rayjob grpo -n default`"), "{kept}");
    }
}
