//! `gke-rl cost`: what the configured deployment costs per hour and per day, offline; on a
//! cluster gke-rl did not create, its pools as gcloud describes them.

use crate::config;
use crate::terminal::outln;

/// Show what the deployment costs per hour and per day while it exists: GPU nodes, the Ray
/// head's and system pools, and Lustre, at the embedded list prices (or the config's `cost`
/// prices). Needs no network, but on an existing cluster (`project.existing_cluster`) it asks
/// gcloud for the head's pool and the Lustre instance as they are.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: config::Source,
}

impl Args {
    pub fn run(self) -> anyhow::Result<()> {
        let loaded = self.source.load()?.fitted_to_cluster()?;
        let mut priced = loaded.deployment.clone();
        if loaded.deployment.project.existing_cluster {
            match gke_rl_ops::existing::as_it_is(&loaded.deployment, &gke_rl_ops::SiteOptions::default(), &gke_rl_ops::Env::real()) {
                Ok(as_it_is) => priced = as_it_is,
                Err(e) => {
                    let why = match &e {
                        gke_rl_ops::LifecycleError::Preflight { problems } => {
                            problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
                        }
                        other => gke_rl_ops::chain(other),
                    };
                    crate::terminal::errln!("note: priced from the config, not the cluster as it is: {}", crate::terminal::shown(&why));
                }
            }
        }
        // The config's own price source is shown escaped, like every other text a file holds.
        outln!("{}", crate::terminal::shown(&gke_rl::cost::estimate(&priced).to_string()));
        // Beside the instance: what its exported checkpoints cost in their bucket, where the
        // deployment folder records any.
        match gke_rl_ops::keep::recorded_costs(&priced, None) {
            Ok(lines) => lines.iter().for_each(|line| outln!("{}", crate::terminal::shown(line))),
            Err(e) => {
                crate::terminal::errln!("note: the deployment's state cannot be read: {}", crate::terminal::shown(&gke_rl_ops::chain(&e)))
            }
        }
        Ok(())
    }
}
