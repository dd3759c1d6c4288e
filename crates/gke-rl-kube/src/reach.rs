//! Reaching an API server: a client from the kubeconfig with bounded timeouts, and why a call
//! could not reach it (refused, silent, credentials refused, the credential plugin missing).

use std::fmt;
use std::path::Path;
use std::time::Duration;

use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};

use crate::Error;

/// The most of one answer's body the client reads. The answers gke-rl asks for (a namespace's
/// pods, one RayCluster) are far smaller; an endless or huge answer ends in
/// [`Unreachable::AnswerTooLarge`] instead of eating memory. The Ray client's bound is the same.
pub const MAX_ANSWER_BYTES: usize = 16 << 20;

/// How to reach an API server.
#[derive(Clone, Debug)]
pub struct Options {
    /// Bound on opening a connection, TLS handshake included.
    pub connect_timeout: Duration,
    /// Bound on one whole call: connection, credentials, request and answer. Port-forward
    /// streams are not calls: they live as long as their connection.
    pub call_timeout: Duration,
    /// Environment variables the kubeconfig's credential plugin must not inherit (secrets).
    pub hidden_env: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options { connect_timeout: Duration::from_secs(10), call_timeout: Duration::from_secs(30), hidden_env: Vec::new() }
    }
}

/// A client and the API server it talks to.
#[derive(Clone)]
pub struct Connected {
    /// The client; its connections are bounded by [`Options::connect_timeout`] (and the calls
    /// of [`crate::Namespaced`] by [`Options::call_timeout`]).
    pub client: Client,
    /// The API server's URL, from the kubeconfig.
    pub server: String,
}

/// A client for `context` of the kubeconfig at `path` (default: `KUBECONFIG`, else
/// `~/.kube/config`), or of its current context. Building it sends nothing: the first call
/// finds out whether the server answers. TLS uses the process's rustls crypto provider.
pub async fn connect(path: Option<&Path>, context: Option<&str>, options: &Options) -> Result<Connected, Error> {
    let choice = KubeConfigOptions { context: context.map(str::to_owned), ..KubeConfigOptions::default() };
    let config = match path {
        Some(path) => match Kubeconfig::read_from(path) {
            Ok(kubeconfig) => Config::from_custom_kubeconfig(kubeconfig, &choice).await,
            Err(e) => Err(e),
        },
        None => Config::from_kubeconfig(&choice).await,
    };
    let mut config = config.map_err(|e| kubeconfig_error(&e, path))?;
    config.connect_timeout = Some(options.connect_timeout);
    config.write_timeout = Some(options.call_timeout);
    if let Some(exec) = &mut config.auth_info.exec {
        exec.drop_env.get_or_insert_with(Vec::new).extend(options.hidden_env.iter().cloned());
        // Never interactive: kube-rs would hand the plugin our terminal's stdin and stderr,
        // so what it writes (a token in an error line) would reach the terminal unredacted, and
        // a plugin that hangs would hold our stderr open after we exit. Captured, its stderr is
        // shown bounded and redacted (`plugin_said`).
        exec.interactive_mode = Some(kube::config::ExecInteractiveMode::Never);
    }
    let server = config.cluster_url.to_string().trim_end_matches('/').to_owned();
    // Credentials over plain HTTP are readable by anyone on the path; only this machine's
    // loopback (`kubectl proxy`, a tunnel) is spared.
    let loopback = config.cluster_url.host().is_some_and(|host| {
        host == "localhost" || host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    });
    let credentials = config.auth_info.exec.is_some() || config.auth_info.token.is_some() || config.auth_info.token_file.is_some();
    if config.cluster_url.scheme_str() == Some("http") && !loopback && credentials {
        return Err(Error::Kubeconfig(format!(
            "{server} is plain http://: the cluster's credentials would cross the network in clear text; use its https:// address"
        )));
    }
    // An exec plugin runs here already, for the first token: on the blocking pool and within
    // the call bound, so a plugin that never answers cannot hold the caller (destroy goes on
    // without the API). kube-rs runs each refresh on the blocking pool too, inside a call's bound.
    let authenticate = || format!("authenticate to {server}");
    let build = tokio::task::spawn_blocking(move || {
        let limit = tower_http::map_response_body::MapResponseBodyLayer::new(|body| http_body_util::Limited::new(body, MAX_ANSWER_BYTES));
        Ok::<_, kube::Error>(kube::client::ClientBuilder::try_from(config)?.with_layer(&limit).build())
    });
    let client = match tokio::time::timeout(options.call_timeout, build).await {
        Err(_) => {
            let detail = format!("it did not answer within {} s", options.call_timeout.as_secs());
            return Err(Error::Unreachable { action: authenticate(), cause: Unreachable::CredentialPlugin { missing: false, detail } });
        }
        Ok(Err(joined)) => return Err(Error::Kubeconfig(format!("the client could not be built: {joined}"))),
        Ok(Ok(built)) => built.map_err(|e| match plugin_failure(&e) {
            Some(cause) => Error::Unreachable { action: authenticate(), cause },
            None => kubeconfig_error(&e, path),
        })?,
    };
    Ok(Connected { client, server })
}

/// The context names of the kubeconfig at `path` (default: `KUBECONFIG`, else
/// `~/.kube/config`); empty when it cannot be read.
pub fn contexts(path: Option<&Path>) -> Vec<String> {
    let kubeconfig = match path {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    };
    kubeconfig.map(|k| k.contexts.into_iter().map(|c| c.name).collect()).unwrap_or_default()
}

/// A kubeconfig that cannot be used, named, in one line: a parser's snippet of the file could
/// show a token or a client key it holds.
fn kubeconfig_error(error: &(dyn std::error::Error + 'static), path: Option<&Path>) -> Error {
    let text = chain(error);
    let first_line = text.lines().next().unwrap_or_default();
    let file = match path {
        Some(path) => path.display().to_string(),
        None => std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config".to_owned()),
    };
    Error::Kubeconfig(format!("{file}: {}", gke_rl::secrets::redact(first_line)))
}

/// Why an API server could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreachable {
    /// No connection: refused, timed out, no route, no such host, or a TLS failure.
    Connect(String),
    /// Connected, but the call got no answer in time.
    NoAnswer(Duration),
    /// An answer larger than [`MAX_ANSWER_BYTES`] (a proxy or a server gone wrong).
    AnswerTooLarge,
    /// 401: the credentials were refused (expired, or for another cluster).
    Unauthorized(String),
    /// 403: the credentials are valid but not allowed.
    Forbidden(String),
    /// The kubeconfig's exec credential plugin could not be started (`missing`) or failed.
    CredentialPlugin {
        /// The program was not found.
        missing: bool,
        /// What went wrong, in the plugin's or the system's words.
        detail: String,
    },
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreachable::Connect(detail) => write!(f, "cannot connect to the API server: {detail}"),
            Unreachable::NoAnswer(after) => write!(f, "the API server did not answer within {}s", after.as_secs()),
            Unreachable::AnswerTooLarge => write!(f, "the API server's answer is larger than {} MiB", MAX_ANSWER_BYTES >> 20),
            Unreachable::Unauthorized(message) => write!(f, "the API server refused the credentials (401 {message})"),
            Unreachable::Forbidden(message) => write!(f, "the API server denied access (403): {message}"),
            Unreachable::CredentialPlugin { missing: true, detail } => {
                write!(f, "the kubeconfig's credential plugin could not be started: {detail}")
            }
            Unreachable::CredentialPlugin { missing: false, detail } => write!(f, "the kubeconfig's credential plugin failed: {detail}"),
        }
    }
}

/// Whether `error` means the API server could not be used at all (rather than that it refused
/// one request for its content), and why.
pub(crate) fn classify(error: &kube::Error) -> Option<Unreachable> {
    match error {
        kube::Error::Api(status) if status.code == 401 => Some(Unreachable::Unauthorized(status.message.clone())),
        kube::Error::Api(status) if status.code == 403 => Some(Unreachable::Forbidden(status.message.clone())),
        kube::Error::Api(_)
        | kube::Error::SerdeError(_)
        | kube::Error::BuildRequest(_)
        | kube::Error::FromUtf8(_)
        | kube::Error::LinesCodecMaxLineLengthExceeded => None,
        _ => Some(
            plugin_failure(error)
                .or_else(|| timed_out(error))
                .or_else(|| too_large(error))
                .unwrap_or_else(|| Unreachable::Connect(root_cause(error))),
        ),
    }
}

/// A connection that timed out (kube's connect timeout), wherever it sits in the chain.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> Option<Unreachable> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        let io_timeout = e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut);
        if io_timeout || e.is::<tokio::time::error::Elapsed>() {
            return Some(Unreachable::Connect("the connection timed out: no answer to the TCP or TLS handshake".to_owned()));
        }
        cause = e.source();
    }
    None
}

/// An answer cut at [`MAX_ANSWER_BYTES`], wherever it sits in the chain of causes.
fn too_large(error: &(dyn std::error::Error + 'static)) -> Option<Unreachable> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.is::<http_body_util::LengthLimitError>() {
            return Some(Unreachable::AnswerTooLarge);
        }
        cause = e.source();
    }
    None
}

/// The credential plugin's failure, wherever it sits in the chain of causes.
fn plugin_failure(error: &(dyn std::error::Error + 'static)) -> Option<Unreachable> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(auth) = e.downcast_ref::<kube::client::AuthError>() {
            return Some(match auth {
                kube::client::AuthError::AuthExecStart(io) => {
                    Unreachable::CredentialPlugin { missing: io.kind() == std::io::ErrorKind::NotFound, detail: io.to_string() }
                }
                // Not `cmd`: it spells out the environment, the cluster's CA included. Not its
                // stdout: that is where a credential goes. Its stderr, the last lines, bounded,
                // with anything shaped like a token cut out.
                kube::client::AuthError::AuthExecRun { out, .. } => {
                    let said = plugin_said(&out.stderr);
                    let detail = if said.is_empty() {
                        format!("it exited with {}", out.status)
                    } else {
                        format!("it exited with {}: {said}", out.status)
                    };
                    Unreachable::CredentialPlugin { missing: false, detail }
                }
                // The parser's message quotes the answer, which holds the token.
                kube::client::AuthError::AuthExecParse(_) => Unreachable::CredentialPlugin {
                    missing: false,
                    detail: "its answer is not an ExecCredential (JSON with kind ExecCredential and status.token)".to_owned(),
                },
                other => Unreachable::CredentialPlugin { missing: false, detail: gke_rl::secrets::redact(&other.to_string()).into_owned() },
            });
        }
        cause = e.source();
    }
    None
}

/// `text` for a message: at most 512 bytes (cut at a character), with how much was left out.
pub(crate) fn cut(text: &str) -> String {
    const MOST: usize = 512;
    if text.len() <= MOST {
        return text.to_owned();
    }
    let end = (0..=MOST).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    format!("{}… ({} bytes more)", &text[..end], text.len() - end)
}

/// What a failed plugin wrote to stderr, for a message: its last 512 bytes, on one line, with
/// token shapes and the values of secret names cut out.
fn plugin_said(stderr: &[u8]) -> String {
    // Redacted whole first: a cut inside a token would hide its shape.
    let text = String::from_utf8_lossy(stderr);
    let text = gke_rl::secrets::redact(text.trim()).split_whitespace().collect::<Vec<_>>().join(" ");
    let tail = text.char_indices().map(|(i, _)| i).find(|i| text.len() - i <= 512).map_or(text.as_str(), |i| &text[i..]);
    tail.to_owned()
}

/// The innermost cause: what the system or the TLS library said ("Connection refused").
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut root = error;
    while let Some(next) = root.source() {
        root = next;
    }
    root.to_string()
}

/// An error and its causes on one line, each said once (kube's messages often repeat their
/// source's).
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cause = Some(error);
    while let Some(e) = cause {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.retain(|p| !text.contains(p.as_str()));
            parts.push(text);
        }
        cause = e.source();
    }
    parts.join(": ")
}
