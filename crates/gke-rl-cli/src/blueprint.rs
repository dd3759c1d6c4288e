//! `gke-rl blueprint`: patch Cluster Toolkit's gke-a4 blueprint for Lustre, the Ray
//! operator and Spot (or a reservation), with a reviewable diff and the deployment file.

use std::path::PathBuf;

use anyhow::bail;
use gke_rl::{Artifact, ArtifactKind};
use gke_rl_ops::blueprint::{patch_checked, staged_templates, toolkit_blueprint};

use crate::config;
use crate::render::{summarize, write_all};

/// Patch the upstream gke-a4 blueprint into a deployable Lustre + Ray + Spot blueprint
#[derive(clap::Args)]
pub struct Args {
    /// Cluster Toolkit checkout (reads examples/gke-a4/gke-a4.yaml)
    #[arg(long, value_name = "DIR", required_unless_present = "blueprint", conflicts_with = "blueprint")]
    toolkit: Option<PathBuf>,
    /// The blueprint file to patch
    #[arg(long, value_name = "FILE")]
    blueprint: Option<PathBuf>,
    #[command(flatten)]
    source: config::Source,
    #[command(flatten)]
    output: config::Output,
}

impl Args {
    pub fn run(self) -> anyhow::Result<()> {
        let input = match (&self.blueprint, &self.toolkit) {
            (Some(file), _) => file.clone(),
            (None, Some(dir)) => toolkit_blueprint(dir),
            (None, None) => bail!("pass --toolkit DIR or --blueprint FILE"),
        };
        let loaded = self.source.load()?;
        if loaded.deployment.project.existing_cluster {
            bail!(
                "the config says project.existing_cluster: true: the cluster exists, and no blueprint makes it; \
                 `gke-rl deploy` fits the Ray cluster to it (or set project.existing_cluster: false to have gcluster create one)"
            );
        }
        let original = config::read_input(&input)?;
        let rendered = loaded.artifacts()?;
        let patched =
            patch_checked(&input, &original, &loaded.deployment, &rendered).map_err(|e| crate::reported(e, &|e| gke_rl_ops::chain(e)))?;

        let (name, patch_name) = (ArtifactKind::Blueprint.file(), ArtifactKind::BlueprintPatch.file());
        let diff = gke_rl::blueprint::unified_diff(&original, &patched, name);
        let header = format!(
            "# {} {} from {}: apply with `patch -p0 < {patch_name}`.\n",
            gke_rl::render::GENERATED_MARKER,
            env!("CARGO_PKG_VERSION"),
            input.display()
        );
        let staged = staged_templates(&input, &patched, &loaded.deployment).map_err(|e| crate::reported(e, &|e| gke_rl_ops::chain(e)))?;
        let copies: String = staged.iter().map(|t| gke_rl::blueprint::copied_template_line(t.name, &t.contents) + "\n").collect();
        let blueprint = Artifact { name, contents: patched, executable: false };
        let patch = Artifact { name: patch_name, contents: header + &copies + &diff, executable: false };
        // The patch last: it records the copies, so it must not claim ones a failed run left unwritten.
        let artifacts: Vec<&Artifact> = [&blueprint].into_iter().chain(&rendered.deployment_file).chain(&staged).chain([&patch]).collect();
        // A patched blueprint carries no header (it would pollute the diff): it is ours when
        // patching it again changes nothing. A staged template is upstream's (or, for a queue,
        // gke-rl's Kueue configuration staged from it): it is ours while it matches what the
        // patch file beside it says was copied.
        let earlier_patch = config::read_input(&self.output.out.join(patch_name)).ok().filter(|p| gke_rl::render::is_generated(p));
        let ours = |file: &str, existing: &str| {
            gke_rl::render::is_generated(existing)
                || (file == name && gke_rl::blueprint::patch(existing, &loaded.deployment).is_ok_and(|again| again == existing))
                || earlier_patch.as_ref().is_some_and(|patch| gke_rl::blueprint::is_recorded_copy(patch, file, existing))
        };
        let outcomes = write_all(&self.output.out, &artifacts, self.output.force, ours)?;
        summarize(&self.output.out, &artifacts, &outcomes);
        let changed =
            diff.lines().filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")).count();
        let project = &loaded.deployment;
        let unknown: Vec<&str> = [
            ("project_id=$PROJECT_ID", project.project.project_id.is_none()),
            ("authorized_cidr=$AUTHORIZED_CIDR", project.network.authorized_cidr.is_none()),
        ]
        .into_iter()
        .filter_map(|(var, missing)| missing.then_some(var))
        .collect();
        let vars = if unknown.is_empty() { String::new() } else { format!(" --vars {}", unknown.join(",")) };
        let at = |file: &str| gke_rl::quote::sh(&self.output.out.join(file).display().to_string());
        crate::terminal::errln!(
            "{}",
            crate::terminal::shown(&format!(
                "{changed} lines changed; review {}, then:\n  gcluster deploy {} -d {}{vars} --auto-approve",
                at(patch_name),
                at(name),
                at(ArtifactKind::DeploymentFile.file())
            ))
        );
        Ok(())
    }
}
