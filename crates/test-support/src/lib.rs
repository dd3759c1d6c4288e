//! What gke-rl's tests and its benchmarks share: where the repository and its upstream
//! fixtures are, a child's output as text, the files under a folder, and local Ray heads ([`ray_head`]). Never a
//! dependency of a shipped crate.

pub mod codegen;
pub mod configs;
pub mod crd_reference;
pub mod nemo_rl_log;
pub mod ray_head;

use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository's root.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the project root")
}

/// An upstream file the tests read, from `tests/fixtures/upstream/` (copied verbatim, see its
/// `SOURCE.md`): a missing one fails the test.
pub fn upstream(relative: &str) -> PathBuf {
    let path = project_root().join("tests/fixtures/upstream").join(relative);
    assert!(path.is_file(), "{} is missing: the upstream fixtures are part of the repository", path.display());
    path
}

/// A child's standard output, as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A child's standard error, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every file under `root`, links not followed.
pub fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push(entry.path()),
                Ok(kind) if kind.is_file() => files.push(entry.path()),
                _ => {}
            }
        }
    }
    files
}
