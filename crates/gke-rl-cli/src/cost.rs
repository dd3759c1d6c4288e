//! `gke-rl cost`: what the configured deployment costs per hour and per day, offline.

use crate::config;
use crate::terminal::outln;

/// Show what the deployment costs per hour and per day while it exists: GPU nodes, the Ray
/// head's and system pools, and Lustre, at the embedded list prices (or the config's `cost`
/// prices). Needs no network.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: config::Source,
}

impl Args {
    pub fn run(self) -> anyhow::Result<()> {
        let loaded = self.source.load()?;
        // The config's own price source is shown escaped, like every other text a file holds.
        outln!("{}", crate::terminal::shown(&gke_rl::cost::estimate(&loaded.deployment).to_string()));
        Ok(())
    }
}
