//! gke-rl's SDK: a typed model of a NeMo-RL GRPO deployment on GKE with KubeRay and Managed
//! Lustre, and pure functions that load, render and check it.
//!
//! A config file becomes a [`Deployment`] (keys left out take the codelab's reference setup,
//! fixed); [`render()`] turns it into every artifact; [`validate::validate`] checks artifacts,
//! rendered or hand-written, alone and across files:
//!
//! ```
//! use gke_rl::validate::{SourceFile, validate};
//! use gke_rl::{RenderOptions, Severity, config};
//!
//! // A config: only what differs from the default.
//! let deployment = config::from_yaml("topology:\n  node_count: 4\n").expect("a valid config");
//! let options = RenderOptions { source: "my-config.yaml", regenerate: "my-tool render" };
//! let artifacts = gke_rl::render(&deployment, &options).expect("a known image");
//! // In cluster mode (the default) a long-lived RayCluster; in `job.mode: rayjob`, a RayJob.
//! let cluster = artifacts.ray_cluster.as_ref().expect("cluster mode");
//! assert!(cluster.contents.contains("replicas: 4"));
//!
//! // The render checks clean...
//! let files: Vec<SourceFile> = artifacts.iter().map(SourceFile::from).collect();
//! assert!(validate(&files).iter().all(|f| f.diagnostic.severity < Severity::Warning));
//!
//! // ...and a hand-edited RayCluster that disagrees with env.sh does not.
//! let edited = cluster.contents.replace("replicas: 4", "replicas: 8");
//! let files = [SourceFile::from(&artifacts.env_sh), SourceFile { name: "ray-cluster.yaml", text: &edited }];
//! let findings = validate(&files);
//! let finding = findings.iter().find(|f| f.diagnostic.severity == Severity::Error).expect("a mismatch");
//! println!("{}:{}: {}", finding.file, finding.diagnostic, finding.diagnostic.help);
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
pub mod envsh;
mod error;
pub mod fabric;
pub mod guard;
pub mod knowledge;
pub mod kueue;
pub mod lifecycle;
pub mod log_lines;
pub mod lustre_usage;
pub mod model;
pub mod quote;
pub mod records;
pub mod recovery;
pub mod render;
pub mod run_log;
pub mod run_report;
pub mod secrets;
pub mod storage;
mod suggest;
pub mod supervisor;

// Crates of their own, used inside under their old names.
use gke_rl_gitwildmatch as gitwildmatch;
/// The positioned YAML trees the validator reads ([`validate::CrdSchema::violations`] takes one).
pub use gke_rl_yaml as yaml;
pub mod validate;

pub use artifact::ArtifactKind;
pub use diagnostic::{Diagnostic, Severity};
pub use error::{Error, StageError};
pub use model::Deployment;
pub use render::{Artifact, Artifacts, RenderOptions, render};
