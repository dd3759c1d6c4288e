//! The integration tests of this crate, one binary (as cargo's and rust-analyzer's are).

mod guard_schema;
mod reach;
mod real_cluster;
