//! The configs every artifact test runs on, and how the tests render them.

use std::path::PathBuf;

use gke_rl::{Artifacts, Deployment, RenderOptions};

use crate::project_root;

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

/// `deployment` rendered as the tests render.
pub fn render(deployment: &Deployment) -> Artifacts {
    gke_rl::render(deployment, &OPTIONS).expect("renders")
}

/// The artifact called `name`; a test fails without it.
pub fn artifact<'a>(artifacts: &'a Artifacts, name: &str) -> &'a str {
    &artifacts.get(name).unwrap_or_else(|| panic!("no artifact {name}")).contents
}
