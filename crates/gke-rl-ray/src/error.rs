//! The crate's one error type: a Jobs API call or a package that failed, in words that keep
//! the server's and name the path and the fix.

use std::path::PathBuf;

use crate::token_source::TokenSource;

/// Everything a call or the packager can fail with.
#[allow(missing_docs)] // each variant's message is its documentation
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // The Jobs API.
    #[error("{0} is not a Ray dashboard address: expected http://HOST:PORT or https://HOST:PORT")]
    Address(String),
    #[error("cannot reach the Ray dashboard at {address}: {reason}")]
    Unreachable { address: String, reason: String },
    #[error(
        "{given} is Ray's GCS address (as `ray start` prints it and KubeRay pods set RAY_ADDRESS), not its dashboard's: it opened with an HTTP/2 SETTINGS frame, as a gRPC server does. Give the dashboard's address instead: http://127.0.0.1:8265 on the head by default (`ray start --head` prints it as the dashboard URL)"
    )]
    GcsAddress { given: String },
    #[error("the Ray dashboard at {address} did not answer {what} within {seconds} s")]
    Timeout { address: String, what: String, seconds: u64 },
    #[error("{address} answered /api/version with 404: it is not a Ray dashboard (or Ray is older than 1.9)")]
    NotADashboard { address: String },
    #[error("{address} answered /api/version with `{found}`: that is not a Ray dashboard's version answer")]
    NotAVersion { address: String, found: String },
    #[error(
        "the dashboard at {address} runs Ray {found}; the Jobs API needs Ray {needs} or newer (gke-rl is tested with Ray {} to {})",
        crate::tested::OLDEST_TESTED_RAY,
        crate::tested::NEWEST_TESTED_RAY
    )]
    RayTooOld { address: String, found: String, needs: &'static str },
    #[error(
        "the dashboard at {address} answered {what} with a redirect ({status}) to {location}; gke-rl does not follow redirects (Ray's dashboard sends none), so nothing went there: use the address the dashboard really has"
    )]
    Redirected { address: String, what: String, status: u16, location: String },
    #[error("the answer to {what} is larger than {} MiB; gke-rl stopped reading it", limit / 1_048_576)]
    AnswerTooLarge { what: String, limit: usize },
    #[error("header `{name}`: {reason}")]
    Header { name: String, reason: &'static str },
    #[error(
        "header `{name}` would carry a token, and headers given on the command line show in `ps`: put the Ray token in {}, or in a file that {} names, or in ~/{}",
        gke_rl::auth::TOKEN_VARIABLE,
        gke_rl::auth::TOKEN_PATH_VARIABLE,
        gke_rl::auth::TOKEN_HOME_FILE
    )]
    AuthorizationHeader { name: String },
    #[error("cannot read the Ray token from {}: {reason}", .path.display())]
    TokenFile { path: PathBuf, reason: String },
    #[error("the Ray token from {from} holds a space, a line break or a control character, which no Ray token has")]
    BadToken { from: String },
    #[error("{}", unauthorized_message(address, what, *status, tried.as_deref(), message))]
    Unauthorized { address: String, what: String, status: u16, tried: Option<Box<crate::TokenSource>>, message: String },
    #[error("the working dir changed after it was hashed as {uri}: submit again")]
    PackageChanged { uri: String },
    #[error("job {id} does not exist")]
    JobNotFound { id: String },
    #[error("a job with submission id {id} already exists: choose another submission id")]
    AlreadyExists { id: String },
    #[error("{field} needs Ray {needs} or newer; the cluster runs Ray {server}")]
    Unsupported { field: &'static str, needs: &'static str, server: String },
    #[error("the Ray dashboard refused {what} ({status}): {message}")]
    Server { what: String, status: u16, message: String },
    #[error("the dashboard refused the {size}-byte package as too large (HTTP 413): exclude large files in .rayignore")]
    PayloadTooLarge { size: usize },
    #[error("unexpected answer to {what}: {reason}")]
    Protocol { what: String, reason: String },
    #[error("the runtime env's {field} {reason}")]
    RuntimeEnv { field: &'static str, reason: &'static str },

    // The packager.
    #[error("cannot read {path}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{file}:{}: invalid pattern `{}`: {}; Ray's packager would fail on it too", .error.line, .error.pattern, .error.reason)]
    Pattern { file: String, error: gke_rl_gitwildmatch::PatternError },
    #[error("{path}: the file name is not UTF-8, which Ray cannot package; rename it or exclude it in .rayignore")]
    NonUtf8Name { path: PathBuf },
    #[error("{path}: a symlink loops back to {target}; exclude it in .rayignore")]
    SymlinkLoop { path: PathBuf, target: PathBuf },
    /// `message` is the packager's: the sizes and the `.rayignore` lines that leave them out.
    #[error("{message}")]
    TooLarge { total: u64, largest: Vec<(String, u64)>, message: String },
    #[error("{path} contains the value of {name}; a secret must never be uploaded: exclude the file in .rayignore")]
    SecretInFile { path: String, name: String },
    #[error("{zip} holds {entry}, which contains the value of {name}; a secret must never be uploaded: build the zip without it")]
    SecretInZip { zip: String, entry: String, name: String },
    #[error("{path} is not a zip gke-rl can read through ({reason}); Ray could not unpack it either")]
    BadZip { path: String, reason: String },
    #[error("{path} is not a directory (nor a .zip file): pass the folder to upload")]
    NotADirectory { path: PathBuf },
    #[error("{path} changed while it was being packaged; submit again")]
    Changed { path: PathBuf },
    #[error(
        "{}: a symlink to {}, outside the working dir: gke-rl does not upload what such a link points at (Ray would); exclude the link in .rayignore, or pass --follow-links-out to upload it",
        .link.display(), .target.display()
    )]
    LinkOut { link: PathBuf, target: PathBuf },
    #[error(
        "{}: the walk entered {} more than {limit} times through symlinks; exclude the links in .rayignore",
        .path.display(), .target.display()
    )]
    LinkMaze { path: PathBuf, target: PathBuf, limit: usize },
    #[error("{}: deeper than {limit} folders, more than Ray's packager can walk; exclude it in .rayignore", .path.display())]
    TooDeep { path: PathBuf, limit: usize },
    #[error("{message}")]
    Hidden { message: String },
    #[error("{}: the working dir is a credential folder ({pattern}); pass --with-credential-files to upload it", .path.display())]
    CredentialFolder { path: PathBuf, pattern: &'static str },
    #[error("the working dir holds more than {limit} paths, more than one upload can carry; exclude some in .rayignore")]
    TooManyPaths { limit: usize },
    #[error("{}: larger than {} MiB; an ignore file that large is not one (gke-rl stopped reading it)", .path.display(), limit >> 20)]
    IgnoreFileTooLarge { path: PathBuf, limit: u64 },
    #[error("{}: the ignore files read so far pass {} MiB in all; gke-rl stopped reading them: exclude folders whose ignore files you do not need", .path.display(), limit >> 20)]
    IgnoreFilesTooLarge { path: PathBuf, limit: u64 },
    #[error(
        "{path}: the name holds the value of {name} (shown as <{name}>); a secret must never be uploaded: rename it or exclude it in .rayignore"
    )]
    SecretInName { path: String, name: String },
    /// `message` is the packager's, with the sizes.
    #[error("{message}")]
    ZipTooLarge { bytes: u64, files: usize, message: String },
}

/// A refusal for want of the right token: which token was tried (by where it came from, never
/// its value) and where the right one is.
fn unauthorized_message(address: &str, what: &str, status: u16, tried: Option<&TokenSource>, message: &str) -> String {
    use gke_rl::auth::{TOKEN_HOME_FILE, TOKEN_PATH_VARIABLE, TOKEN_VARIABLE};
    let refused = format!("the Ray dashboard at {address} refused {what} ({status}: {message})");
    match tried {
        None => format!(
            "{refused}: it needs the cluster's Ray token, and none was given: set {TOKEN_VARIABLE}, or {TOKEN_PATH_VARIABLE} to a file \
             that holds it, or write it to ~/{TOKEN_HOME_FILE}; for a cluster gke-rl deployed, gke-rl's own port-forward (no \
             --address) reads the token from the cluster's Secret"
        ),
        Some(source @ TokenSource::Secret { .. }) => format!(
            "{refused} with the token of {source}: the Ray pods started with another token (the Secret was replaced after they \
             started); restart them with `gke-rl suspend` and `gke-rl resume`"
        ),
        Some(source) => format!(
            "{refused} with the token from {source}, which is not this cluster's token: give the cluster's token there, or \
             unset {TOKEN_VARIABLE} and {TOKEN_PATH_VARIABLE} so that gke-rl's own port-forward (no --address) reads a deployed \
             cluster's token from its Secret"
        ),
    }
}
