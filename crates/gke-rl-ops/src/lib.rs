//! gke-rl's cluster operations as a library: [`deploy`](deploy::deploy), [`destroy`](destroy::destroy),
//! [`connect`](mode::connect) to a RayCluster's head, the job operations in [`jobs`] (submit,
//! follow, stop), each job command whole in [`commands`] (submit, status, logs, stop, the list),
//! which reach the head through the deployment's job mode ([`mode`]: cluster mode resumes a
//! suspended RayCluster before a submit and suspends it after; RayJob mode makes a RayJob per
//! run), and the [`fabric`] and [`storage`] checks.
//!
//! Each takes a loaded [`gke_rl::Deployment`], typed options, an [`Env`] (the programs it runs,
//! the Kubernetes API, a clock, what interrupts it) and a [`Progress`] sink that receives typed
//! [`Event`]s and answers the questions asked before costly or destructive steps. Errors and
//! events are typed by family ([`LifecycleError`], [`JobError`], [`ReportError`], each holding
//! [`CommonError`]; [`LifecycleEvent`], [`JobEvent`]), so a signature says what it can fail
//! with. Nothing here prints, parses arguments or picks exit codes: the `gke-rl` command line
//! is one front end over this crate, and any Rust tool can be another.
//!
//! ```no_run
//! # async fn run() -> Result<(), gke_rl_ops::LifecycleError> {
//! use gke_rl_ops::{Env, Quiet, deploy};
//! let deployment = gke_rl::Deployment::default();
//! let options = gke_rl::RenderOptions { source: "the embedded default", regenerate: "my-tool render" };
//! let artifacts = gke_rl::render(&deployment, &options)?;
//! let env = Env::real();
//! println!("{}", deploy::plan(&deployment, &artifacts, &deploy::DeployOptions::default(), &env)?);
//! match deploy::deploy(&deployment, &artifacts, &deploy::DeployOptions::default(), &env, std::sync::Arc::new(Quiet)).await? {
//!     deploy::Deployed::Ready => println!("ready"),
//!     other => println!("not ready: {other:?}"),
//! }
//! # Ok(()) }
//! ```
//!
//! `examples/` has runnable programs: the deploy plan of a config built in code, and a job
//! submitted to an address and followed.

pub mod address;
pub mod blueprint;
mod cluster;
pub mod commands;
pub mod deploy;
pub mod destroy;
mod env;
mod error;
mod events;
pub mod existing;
pub mod fabric;
pub mod files;
pub mod fix;
pub mod head;
pub mod jobs;
pub mod keep;
mod lister;
pub mod mode;
pub mod monitoring;
mod preflight;
mod rayjob;
pub mod run;
mod site;
pub mod storage;
pub mod suspend;

pub use env::{Clock, Env, Interrupt, Kube, Processes, RunError, Runner, SystemClock};
pub(crate) use error::root_cause;
pub use error::{CommonError, Error, Fix, JobError, KeepError, LifecycleError, NotDeleted, Problem, ReportError, Unanswerable, chain};
pub use events::{Event, JobEvent, LifecycleEvent, Progress, Question, Quiet};
pub use gke_rl_kube::{ClusterState, Error as KubeError, Queued, RayJobState, Readiness};
pub use site::{SiteOptions, default_folder};

/// A duration as people read it in progress lines: `4.2s`, `12m03s`.
pub fn took(elapsed: std::time::Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    if seconds < 60.0 { format!("{seconds:.1}s") } else { format!("{}m{:02}s", elapsed.as_secs() / 60, elapsed.as_secs() % 60) }
}
