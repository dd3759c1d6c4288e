//! gke-rl's SDK: a typed model of a NeMo-RL GRPO deployment on GKE with KubeRay and Managed
//! Lustre, and pure functions that load, render and check it.
//!
//! A config file becomes a [`Deployment`] (keys left out take the codelab's reference setup,
//! fixed); [`render()`] turns it into every artifact (`gke-rl-validate` checks them):
//!
//! ```
//! use gke_rl::{RenderOptions, config};
//!
//! // A config: only what differs from the default.
//! let deployment = config::from_yaml("topology:\n  node_count: 4\n").expect("a valid config");
//! let options = RenderOptions { source: "my-config.yaml", regenerate: "my-tool render" };
//! let artifacts = gke_rl::render(&deployment, &options).expect("a known image");
//! // In cluster mode (the default) a long-lived RayCluster; in `job.mode: rayjob`, a RayJob.
//! let cluster = artifacts.ray_cluster.as_ref().expect("cluster mode");
//! assert!(cluster.contents.contains("replicas: 4"));
//! ```
//!
//! The crate does no I/O: it reads text and returns text, so every front end (the CLI, the
//! browser build, other tools) shares it. Values a user wrote are refused with a positioned
//! [`Diagnostic`]; anything else with an [`Error`].

mod artifact;
pub mod auth;
pub mod blueprint;
pub mod checkpoint_plan;
pub mod config;
pub mod cost;
pub mod diagnostic;
pub mod durability;
pub mod envsh;
mod error;
pub mod knowledge;
pub mod kueue;
pub mod lifecycle;
pub mod model;
pub mod quote;
pub mod render;
pub mod secrets;
pub mod suggest;

/// The positioned YAML trees the model and the validator read.
pub use gke_rl_yaml as yaml;

pub use artifact::ArtifactKind;
pub use diagnostic::{Diagnostic, Severity};
pub use error::{Error, StageError};
pub use model::Deployment;
pub use render::{Artifact, Artifacts, RenderOptions, render};
