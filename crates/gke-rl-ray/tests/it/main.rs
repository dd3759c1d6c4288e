//! The integration tests of this crate, one binary (as cargo's and rust-analyzer's are).

mod hostile;
mod tls;
