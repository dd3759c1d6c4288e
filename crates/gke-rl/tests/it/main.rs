//! The integration tests of this crate, one binary (as cargo's and rust-analyzer's are).

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests read fixtures; the library does no I/O

mod artifacts;
mod blueprint;
mod cost;
mod lifecycle;
mod models;
mod nemo_rl;

use std::path::{Path, PathBuf};

/// Writes `contents` into a fresh temporary directory as `name`.
pub fn temp_file(name: &str, contents: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, contents).unwrap();
    (dir, path)
}

/// Makes `path` executable.
pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
