//! The `gke-rl` binary end to end, one test binary (as cargo's and rust-analyzer's are): each
//! module runs the real binary in scratch folders, against the fake cloud and API server of
//! [`common`]. The trials on real Ray heads are `ray_jobs` and `two_nodes`, harnesses of their own.

#[path = "../common/mod.rs"]
mod common;

mod blueprint;
mod deploy;
mod generated;
mod hostile;
mod keep;
mod readme;
mod render;
mod report;
mod supervisor;
mod validate;
