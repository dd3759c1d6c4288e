//! `gke-rl destroy`: remove every billable resource a deploy created, and prove it.

use gke_rl_ops::Env;
use gke_rl_ops::destroy::{DestroyOptions, Destroyed};

use super::Target;
use crate::console::{Console, explain};
use crate::interrupted;

/// Delete the RayCluster, empty the blueprint's buckets, run `gcluster destroy`, and verify with
/// gcloud that the cluster and the Lustre instance are gone; on a cluster gke-rl did not create,
/// delete only what its deploy made
#[derive(clap::Args)]
pub struct DestroyArgs {
    #[command(flatten)]
    target: Target,
    /// Print what would be deleted and every command, change nothing
    #[arg(long)]
    dry_run: bool,
    /// Do not ask before deleting
    #[arg(long)]
    yes: bool,
    /// On a cluster gke-rl did not create, also turn off the add-ons its deploy turned on
    /// (RayOperator, LustreCsiDriver)
    #[arg(long)]
    disable_addons: bool,
    /// Before the Lustre instance is deleted, export every checkpoint no bucket holds yet to
    /// this bucket folder (gs://BUCKET/PATH/), verified
    #[arg(long, value_name = "GS_FOLDER", value_parser = super::export::gcs_path, conflicts_with = "discard_checkpoints")]
    export_to: Option<gke_rl::model::GcsPath>,
    /// Delete the Lustre instance even with checkpoints no bucket holds (the question names
    /// them), or when what it holds cannot be listed
    #[arg(long)]
    discard_checkpoints: bool,
    /// Where the runs keep their records, on the cluster's shared file system, as `submit
    /// --runs-dir` named it [default: LUSTRE_MOUNT/gke-rl/runs]
    #[arg(long, value_name = "DIR", env = "GKE_RL_RUNS_DIR")]
    runs_dir: Option<String>,
}

impl DestroyArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(self.execute(Env::real(), Console::stderr(self.yes)))
    }

    pub(super) async fn execute(&self, env: Env, console: Console) -> anyhow::Result<u8> {
        let loaded = self.target.source.load()?;
        let d = &loaded.deployment;
        let options = DestroyOptions {
            target: self.target.options(),
            disable_addons: self.disable_addons,
            export_to: self.export_to.clone(),
            discard_checkpoints: self.discard_checkpoints,
            runs_dir: self.runs_dir.clone(),
        };
        let explained = |e: &gke_rl_ops::Error| explain(e, None, &self.target.get_credentials(d));
        let console = std::sync::Arc::new(console);
        if self.dry_run {
            match gke_rl_ops::destroy::plan(d, &options, &env, console.clone()).await.map_err(|e| crate::reported(e, &explained))? {
                gke_rl_ops::destroy::Plan::Steps(plan) => console.say(plan),
                gke_rl_ops::destroy::Plan::NothingRecorded { folder } => console.say(nothing(&folder)),
            }
            return Ok(0);
        }
        let destroyed =
            gke_rl_ops::destroy::destroy(d, &options, &env, console.clone()).await.map_err(|e| crate::reported(e, &explained))?;
        let (words, code) = said(destroyed, d)?;
        console.say(words);
        Ok(code)
    }
}

/// What a destroy's outcome says, and its exit code.
fn said(destroyed: Destroyed, d: &gke_rl::Deployment) -> anyhow::Result<(String, u8)> {
    let cli = crate::name();
    Ok(match destroyed {
        Destroyed::Destroyed { took, addons_left_on } if d.project.existing_cluster => {
            let (cluster, instance) = (&d.project.cluster_name, &d.lustre.instance_id);
            let mut kept = if d.lustre.existing {
                format!("cluster {cluster} and Lustre instance {instance} stay as they were")
            } else {
                format!("cluster {cluster} stays as it was")
            };
            if let Some(command) = addons_left_on {
                kept = format!("{kept}, but for the add-ons deploy turned on, which stay on; to turn them off:\n  $ {command}");
            }
            (format!("destroyed in {}: what gke-rl made on cluster {cluster} is gone; {kept}", gke_rl_ops::took(took)), 0)
        }
        Destroyed::Destroyed { took, .. } => (
            format!("destroyed in {}: no cluster, Lustre instance or bucket of {} remains", gke_rl_ops::took(took), d.project.cluster_name),
            0,
        ),
        Destroyed::NothingRecorded { folder } => (nothing(&folder), 0),
        Destroyed::Declined => ("nothing was deleted".to_owned(), 1),
        Destroyed::NotDestroyed { remains, state } => (
            format!(
                "\nNOT DESTROYED — these still exist and may still bill:\n{}\nre-run `{cli} destroy`, or delete them in the console; the state stays in {}",
                remains.iter().map(|r| format!("  - {r}")).collect::<Vec<_>>().join("\n"),
                state.display()
            ),
            1,
        ),
        Destroyed::Interrupted { signal } => {
            (format!("interrupted; nothing is lost: re-run `{cli} destroy` to finish"), interrupted(signal))
        }
        other => anyhow::bail!("destroy ended in a way this version does not know: {other:?}"),
    })
}

/// What destroy says when the folder holds no state.
fn nothing(folder: &std::path::Path) -> String {
    format!(
        "nothing to destroy: no deployment state in {}\n  (gke-rl destroys only what its deploy recorded; pass --folder if the deployment lives elsewhere)",
        folder.display()
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn a_destroys_outcome_says_loudly_what_remains() {
        let d = gke_rl::Deployment::default();
        let remains = vec!["Managed Lustre instance rl-demo-gpu-lustre".to_owned()];
        let (remaining, code) = said(Destroyed::NotDestroyed { remains, state: PathBuf::from("/f/state.json") }, &d).unwrap();
        assert!(
            remaining.contains("NOT DESTROYED — these still exist and may still bill:\n  - Managed Lustre instance rl-demo-gpu-lustre"),
            "{remaining}"
        );
        assert_eq!(code, 1);
        let (nothing, code) = said(Destroyed::NothingRecorded { folder: PathBuf::from("/f") }, &d).unwrap();
        assert!(nothing.starts_with("nothing to destroy: no deployment state in /f") && code == 0, "{nothing}");
        let (destroyed, _) = said(Destroyed::Destroyed { took: std::time::Duration::from_secs(1), addons_left_on: None }, &d).unwrap();
        assert!(destroyed.contains("no cluster, Lustre instance or bucket of ray-a4-gpu-spot remains"), "{destroyed}");
    }
}
