//! Ray job submission without Python: a typed client for the Ray Jobs REST API and a
//! working-dir packager whose package URIs equal Ray's own.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use gke_rl_ray::{Client, ClientOptions, SubmitRequest, package::Plan};
//! let client = Client::new("http://localhost:8265", ClientOptions::default())?;
//! let server = client.version().await?;
//! let package = Plan::for_files(vec![("run.sh".into(), b"echo hello\n".to_vec(), false)]).build(&[])?;
//! if !client.package_exists(&package.uri).await? {
//!     client.upload_package(&package.uri, package.zip).await?;
//! }
//! let mut runtime_env = serde_json::Map::new();
//! runtime_env.insert("working_dir".into(), package.uri.into());
//! let request = SubmitRequest { entrypoint: "bash run.sh".into(), runtime_env: Some(runtime_env), ..Default::default() };
//! let id = client.submit(&request, &server, &mut |e| eprintln!("{e}; asking again")).await?;
//! let job = gke_rl_ray::follow(&client, &id, &Default::default(), |_| {}).await?;
//! println!("{id}: {}", job.status);
//! # Ok(()) }
//! ```

mod auth;
mod client;
mod error;
#[cfg(feature = "fake")]
pub mod fake;
mod follow;
pub mod package;
mod tested;
mod token_source;

pub use auth::Token;
pub use client::{
    AGENT_WAIT, Client, ClientOptions, JobDetails, JobStatus, LogTail, SubmitRequest, TailEnd, Version, entrypoint, latest_submission,
    new_submission_id,
};
pub use error::Error;
pub use follow::{Event, FollowOptions, LogRead, follow, read_log};
pub use tested::{NEWEST_TESTED_RAY, OLDEST_TESTED_RAY, TESTED_RAY};
pub use token_source::TokenSource;

/// Makes ring the process's rustls crypto provider unless one was chosen already, so that
/// every TLS client of the process (reqwest here, kube-rs, the log WebSocket) uses the same
/// one. The workspace compiles no other provider; a binary calls this first thing, and
/// [`Client::new`] calls it for tools that embed this crate without choosing.
pub fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another thread that installed one is fine: one was chosen.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
