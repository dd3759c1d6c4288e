//! `cargo xtask destroy`: remove every billable resource a deploy created, and prove it.

use std::time::{Duration, Instant};

use anyhow::bail;
use gke_rl::lifecycle::{self, Folder, Step};
use gke_rl_kube::Wait;
use xshell::Shell;

use super::{Env, INTERRUPTED, Resolved, Target, confirm, read, stream, took};

/// Delete the RayCluster, empty the blueprint's buckets, run `gcluster destroy`, and verify with
/// gcloud that the cluster and the Lustre instance are gone
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
}

impl DestroyArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let sh = Shell::new()?;
        super::runtime()?.block_on(async { self.execute(Env::real(&sh)).await })
    }

    pub(super) async fn execute(&self, mut env: Env<'_>) -> anyhow::Result<u8> {
        let resolved = self.target.resolve(&mut env, false)?;
        let d = &resolved.deployment;
        let Some(state) = resolved.load_state()? else {
            env.console.say(format_args!(
                "nothing to destroy: no deployment state in {}\n  (gke-rl destroys only what its deploy recorded; pass --folder if the deployment lives elsewhere)",
                resolved.site.folder
            ));
            return Ok(0);
        };
        if self.dry_run {
            env.console.say(lifecycle::destroy_plan(d, &resolved.site, &state, None));
            return Ok(0);
        }
        let provisioned = state.done(Step::Render);
        let buckets = if provisioned { self.buckets(&env, &resolved)? } else { Vec::new() };
        env.console.say(lifecycle::destroy_plan(d, &resolved.site, &state, Some(&buckets)).preview());
        if !confirm("delete all of this?", self.yes)? {
            env.console.say("nothing was deleted");
            return Ok(1);
        }

        let started = Instant::now();
        let mut teardown_failed = false;
        if state.done(Step::Credentials) {
            self.delete_ray_cluster(&mut env, &resolved).await;
            if env.interrupt.is_set() {
                return Ok(interrupted(&env));
            }
        }
        if provisioned {
            for (bucket, objects) in buckets.iter().filter(|(_, objects)| *objects > 0) {
                if !stream(&env, &lifecycle::empty_bucket(bucket)) {
                    bail!(
                        "could not empty bucket {bucket} ({objects} objects); gcluster destroy would fail on it. Nothing else was deleted"
                    );
                }
            }
            let gcluster_folder = Folder(&resolved.site.folder).gcluster(d);
            if std::path::Path::new(&gcluster_folder).is_dir() && !stream(&env, &lifecycle::teardown(d, &resolved.site)) {
                if env.interrupt.is_set() {
                    return Ok(interrupted(&env));
                }
                env.console.say("gcluster destroy failed; its output is above. Checking what remains:");
                teardown_failed = true;
            }
        }

        let mut remains = self.leftovers(&env, &resolved);
        if teardown_failed {
            // What gcloud is not asked about (networks, service accounts) may remain too.
            remains.push(format!(
                "whatever else gcluster did not destroy (networks, firewall rules, service accounts of {})",
                d.project.cluster_name
            ));
        }
        if !remains.is_empty() {
            env.console.say(format_args!(
                "\nNOT DESTROYED — these still exist and may still bill:\n{}\nre-run `cargo xtask destroy`, or delete them in the console; the state stays in {}",
                remains.iter().map(|r| format!("  - {r}")).collect::<Vec<_>>().join("\n"),
                resolved.state_path().display()
            ));
            return Ok(1);
        }
        std::fs::remove_file(resolved.state_path())?;
        env.console.say(format_args!(
            "destroyed in {}: no cluster, Lustre instance or bucket of {} remains",
            took(started.elapsed()),
            d.project.cluster_name
        ));
        Ok(0)
    }

    /// The blueprint's buckets and how many objects each holds.
    fn buckets(&self, env: &Env<'_>, resolved: &Resolved) -> anyhow::Result<Vec<(String, usize)>> {
        let listed = read(env, &lifecycle::list_buckets(&resolved.deployment, &resolved.site))
            .map_err(|e| anyhow::anyhow!("cannot list the buckets: {e}"))?;
        listed
            .lines()
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(|name| {
                let name = name.trim_start_matches("gs://").trim_end_matches('/').to_owned();
                // `gcloud storage ls` fails on a bucket with no objects.
                let objects =
                    read(env, &lifecycle::list_objects(&name)).map(|l| l.lines().filter(|l| !l.trim().is_empty()).count()).unwrap_or(0);
                Ok((name, objects))
            })
            .collect()
    }

    /// Deletes the RayCluster and the Secret and waits for the pods to go; when the cluster's
    /// API cannot be used, says so and leaves them to go with the cluster.
    async fn delete_ray_cluster(&self, env: &mut Env<'_>, resolved: &Resolved) {
        if !stream(env, &lifecycle::credentials(&resolved.deployment, &resolved.site.project_id)) {
            env.console.say("  the cluster has no credentials to give (already gone?): skipping the Kubernetes objects");
            return;
        }
        if let Err(e) = self.delete_objects(env, resolved).await {
            env.console.say(format_args!(
                "  cannot use the cluster's Kubernetes API: {e:#}\n  skipping the RayCluster and the Secret: deleting the cluster removes them"
            ));
        }
    }

    async fn delete_objects(&self, env: &mut Env<'_>, resolved: &Resolved) -> anyhow::Result<()> {
        let d = &resolved.deployment;
        let clusters = resolved.clusters(env).await?;
        let name = d.project.cluster_name.as_str();
        if clusters.delete(name).await? {
            env.console.say(format_args!("  deleted RayCluster {}/{name}", d.ray.namespace));
        }
        if clusters.delete_secret(d.secrets.kubernetes_secret.as_str()).await? {
            env.console.say(format_args!("  deleted Secret {}/{}", d.ray.namespace, d.secrets.kubernetes_secret));
        }
        let wait = Wait { timeout: Duration::from_secs(600), poll: env.poll };
        tokio::select! {
            gone = clusters.wait_pods_gone(name, wait) => gone?,
            () = env.interrupt.wait() => return Ok(()),
        }
        env.console.say("  the Ray pods are gone");
        Ok(())
    }

    /// What still exists, by asking gcloud.
    fn leftovers(&self, env: &Env<'_>, resolved: &Resolved) -> Vec<String> {
        let mut remains: Vec<String> = lifecycle::leftovers(&resolved.deployment, &resolved.site)
            .into_iter()
            .filter(|(_, command)| read(env, command).is_ok_and(|out| !out.trim().is_empty()))
            .map(|(what, _)| what)
            .collect();
        if let Ok(buckets) = read(env, &lifecycle::list_buckets(&resolved.deployment, &resolved.site)) {
            remains.extend(buckets.lines().map(str::trim).filter(|b| !b.is_empty()).map(|b| format!("bucket {b}")));
        }
        remains
    }
}

fn interrupted(env: &Env<'_>) -> u8 {
    env.console.say("interrupted; nothing is lost: re-run `cargo xtask destroy` to finish");
    INTERRUPTED
}
