//! Where a Ray token came from, as errors and `submit` name it: never what it is.

use std::path::PathBuf;

use gke_rl::auth::{TOKEN_KEY, TOKEN_PATH_VARIABLE, TOKEN_VARIABLE};

/// Where a token came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenSource {
    /// `RAY_AUTH_TOKEN`.
    Variable,
    /// The file `RAY_AUTH_TOKEN_PATH` names.
    PathVariable(PathBuf),
    /// `~/.ray/auth_token`.
    HomeFile(PathBuf),
    /// The RayCluster's Secret, read through the Kubernetes API.
    Secret {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl std::fmt::Display for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenSource::Variable => write!(f, "{TOKEN_VARIABLE}"),
            TokenSource::PathVariable(path) => write!(f, "{} (the file {TOKEN_PATH_VARIABLE} names)", path.display()),
            TokenSource::HomeFile(path) => write!(f, "{}", path.display()),
            TokenSource::Secret { namespace, name } => write!(f, "Secret {namespace}/{name} (key {TOKEN_KEY})"),
        }
    }
}
