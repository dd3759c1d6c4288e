//! Shared by the per-file fuzz targets: validate an input alone, and beside the files that
//! cross-file rules take facts from (env.sh, the job script, .rayignore), rendered once.

use std::sync::OnceLock;

use gke_rl_validate::{SourceFile, validate};

/// How the fuzz targets render.
pub const OPTIONS: gke_rl::RenderOptions<'static> = gke_rl::RenderOptions { source: "fuzz", regenerate: "fuzz" };

fn companions() -> &'static [gke_rl::Artifact] {
    static RENDERED: OnceLock<Vec<gke_rl::Artifact>> = OnceLock::new();
    RENDERED.get_or_init(|| {
        let all = gke_rl::render(&gke_rl::Deployment::default(), &OPTIONS).expect("the default renders");
        all.into_iter().filter(|a| matches!(a.name, "env.sh" | "run_nemo_rl.sh" | ".rayignore")).collect()
    })
}

/// Validates `text` as the file `name`, alone and with the companions (a companion of the
/// same name gives way to the input).
pub fn check(name: &str, text: &str) {
    let _ = validate(&[SourceFile { name, text }]);
    let mut files: Vec<SourceFile<'_>> = companions().iter().filter(|a| a.name != name).map(SourceFile::from).collect();
    files.push(SourceFile { name, text });
    let _ = validate(&files);
}
