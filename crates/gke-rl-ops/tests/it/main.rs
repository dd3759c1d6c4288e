//! The integration tests of this crate, one binary (as cargo's and rust-analyzer's are).

mod deploy;
mod jobs;
mod monitoring;
