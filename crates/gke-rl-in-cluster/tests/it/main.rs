//! The integration tests of this crate, one binary (as cargo's and rust-analyzer's are).

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests read fixtures; the library does no I/O

mod checkpoints;
mod fabric;
mod records;
mod run_log;
mod save_pass;
