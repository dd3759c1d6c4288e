//! Shared test helpers: the configs every artifact test runs on, and access to the verbatim
//! upstream files in `tests/fixtures/upstream`.

#![allow(dead_code)] // each test crate uses its own subset

use std::path::{Path, PathBuf};

use gke_rl::{Artifacts, Deployment, RenderOptions};
#[allow(unused_imports)] // each test crate uses its own subset
pub use gke_rl_test_support::{project_root, upstream};

/// The embedded default plus every config in `tests/fixtures/configs/`, by name.
pub fn configs() -> Vec<(String, Deployment)> {
    let dir = project_root().join("tests/fixtures/configs");
    let mut configs = vec![("default".to_owned(), Deployment::default())];
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).expect("tests/fixtures/configs").map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let deployment = gke_rl::config::from_yaml(&text).unwrap_or_else(|d| panic!("{}: {d}", path.display()));
        configs.push((path.file_stem().unwrap().to_string_lossy().into_owned(), deployment));
    }
    assert!(configs.len() >= 3, "the default and at least two other configs");
    configs
}

/// How the tests render: the header names the test and xtask's render command.
pub const OPTIONS: RenderOptions<'static> = RenderOptions { source: "a test config", regenerate: "cargo xtask render" };

pub fn render(deployment: &Deployment) -> Artifacts {
    gke_rl::render(deployment, &OPTIONS).expect("renders")
}

pub fn artifact<'a>(artifacts: &'a Artifacts, name: &str) -> &'a str {
    &artifacts.get(name).unwrap_or_else(|| panic!("no artifact {name}")).contents
}

/// Writes `contents` into a fresh temporary directory as `name`.
pub fn temp_file(name: &str, contents: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, contents).unwrap();
    (dir, path)
}

pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
