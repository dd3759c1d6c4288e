//! The upstream blueprint, patched and checked beside the artifacts it deploys.

use std::path::{Path, PathBuf};

use gke_rl::{Artifact, ArtifactKind, Artifacts, Deployment, Severity};
use gke_rl_validate::{self as validate, SourceFile};

use crate::{CommonError, LifecycleError};

/// Where the Cluster Toolkit checkout `toolkit` keeps the gke-a4 blueprint.
pub fn toolkit_blueprint(toolkit: &Path) -> PathBuf {
    toolkit.join(gke_rl::knowledge::toolkit_blueprint())
}

/// Patches `original` (read from `path`) for `deployment` and validates it with `rendered`:
/// the patched text, or why not; nothing is written.
pub fn patch_checked(path: &Path, original: &str, deployment: &Deployment, rendered: &Artifacts) -> Result<String, LifecycleError> {
    let patched = gke_rl::blueprint::patch(original, deployment).map_err(|diagnostic| LifecycleError::Blueprint {
        path: path.to_owned(),
        text: original.to_owned(),
        diagnostic: Box::new(diagnostic),
    })?;
    check_render(deployment, rendered, Some(&patched))?;
    Ok(patched)
}

/// The templates `patched` stages (`$(ghpc_stage("./…"))`), read from beside `blueprint`, the
/// file it was patched from: gcluster resolves them beside the blueprint it deploys, so they are
/// written next to the patched one. For a queued run, the Kueue configuration is gke-rl's,
/// staged from the blueprint's ([`gke_rl::kueue::staged`]).
pub fn staged_templates(blueprint: &Path, patched: &str, deployment: &Deployment) -> Result<Vec<Artifact>, LifecycleError> {
    let folder = blueprint.parent().unwrap_or(Path::new("."));
    gke_rl::blueprint::staged_templates(patched)
        .into_iter()
        .map(|name| {
            let path = folder.join(name);
            match crate::files::read_text(&path) {
                Err(CommonError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    Err(LifecycleError::StagedTemplateMissing { blueprint: blueprint.to_owned(), name, path })
                }
                Ok(text) if name == ArtifactKind::KueueConfiguration.file() && deployment.job.queue.is_some() => {
                    let contents = gke_rl::kueue::staged(&text, deployment)
                        .map_err(|e| LifecycleError::KueueTemplate { path, source: Box::new(e) })?;
                    Ok(Artifact { name, contents, executable: false })
                }
                read => Ok(Artifact { name, contents: read?, executable: false }),
            }
        })
        .collect()
}

/// The render validated as `render` validates it, with the patched blueprint when there is
/// one: its errors refuse a deploy, and its plan, each naming the config key that decides it.
pub fn check_render(deployment: &Deployment, rendered: &Artifacts, patched: Option<&str>) -> Result<(), LifecycleError> {
    let mut files: Vec<SourceFile<'_>> = rendered.iter().map(SourceFile::from).collect();
    files.extend(patched.map(|text| SourceFile { name: ArtifactKind::Blueprint.file(), text }));
    let errors: Vec<String> = validate::validate(&files)
        .into_iter()
        .filter(|f| f.diagnostic.severity == Severity::Error)
        .map(|f| {
            let d = &f.diagnostic;
            let text = files.iter().find(|file| file.name == f.file).map_or("", |file| file.text);
            match gke_rl::render::config_key(deployment, &f.file, text, d.line, d.column) {
                Some(source) => format!("{}:{}: {} (change `{}` in the config)", f.file, d.line, d.message, source.key),
                None => format!("{}:{}: {}", f.file, d.line, d.message),
            }
        })
        .collect();
    if errors.is_empty() { Ok(()) } else { Err(CommonError::Invalid { errors }.into()) }
}
