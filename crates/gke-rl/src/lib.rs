//! gke-rl's SDK: a typed model of a NeMo-RL GRPO deployment on GKE with KubeRay and Managed
//! Lustre, and pure functions that load, render and check it.
//!
//! ```
//! let deployment = gke_rl::Deployment::default(); // the codelab's reference setup, fixed
//! let artifacts = gke_rl::render(&deployment, "the embedded default").unwrap();
//! let cluster = artifacts.iter().find(|a| a.name == "ray-cluster.yaml").unwrap();
//! assert!(cluster.contents.contains("rayVersion: \"2.46.0\""));
//! ```
//!
//! The crate does no I/O: it reads text and returns text, so it builds for
//! `wasm32-unknown-unknown` and every front end (CLI, browser, other tools) shares it.

pub mod blueprint;
pub mod checkpoints;
pub mod config;
pub mod diagnostic;
pub mod envsh;
pub mod gitwildmatch;
pub mod knowledge;
pub mod lifecycle;
pub mod model;
mod quote;
pub mod render;
mod suggest;
pub mod validate;
pub mod yaml;

pub use diagnostic::{Diagnostic, Severity};
pub use model::Deployment;
pub use render::{Artifact, render};
