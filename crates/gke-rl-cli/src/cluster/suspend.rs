//! `gke-rl suspend` and `gke-rl resume`: stop paying for GPU pods between jobs, and bring them
//! back.

use std::time::Duration;

use gke_rl_ops::Env;
use gke_rl_ops::suspend::{Resumed, Suspended};

use crate::console::{Console, explain};

/// Suspend the RayCluster: KubeRay deletes its pods and keeps its spec, so the GPU nodes idle
/// (and an autoscaling node pool removes them) until `resume`
#[derive(clap::Args)]
pub struct SuspendArgs {
    #[command(flatten)]
    source: crate::config::Source,
    /// Give up waiting for the pods to go after this long (90s, 10m)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::parse_duration)]
    timeout: Duration,
}

/// Resume a suspended RayCluster and wait until every pod is Ready
#[derive(clap::Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    source: crate::config::Source,
    /// Give up waiting for the pods after this long (90s, 30m, 1h)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::parse_duration)]
    timeout: Duration,
}

impl SuspendArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(self.execute(Env::real(), Console::stderr(false)))
    }

    pub(super) async fn execute(&self, env: Env, console: Console) -> anyhow::Result<u8> {
        let loaded = self.source.load()?;
        let d = &loaded.deployment;
        let name = &d.project.cluster_name;
        let suspended = gke_rl_ops::suspend::suspend(d, self.timeout, &env, &console).await.map_err(|e| reported(e, d))?;
        Ok(match suspended {
            Suspended::Now => {
                console.say(format_args!("RayCluster {name} is suspended; `{} resume` brings it back", crate::name()));
                0
            }
            Suspended::Already => {
                console.say(format_args!("RayCluster {name} was suspended already"));
                0
            }
            Suspended::NoCluster => {
                console.say(format_args!("RayCluster {name} does not exist (deploy it first)"));
                1
            }
            other => anyhow::bail!("suspend ended in a way this version does not know: {other:?}"),
        })
    }
}

impl ResumeArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(self.execute(Env::real(), Console::stderr(false)))
    }

    pub(super) async fn execute(&self, env: Env, console: Console) -> anyhow::Result<u8> {
        let loaded = self.source.load()?;
        let d = &loaded.deployment;
        let name = &d.project.cluster_name;
        let resumed = gke_rl_ops::suspend::resume(d, self.timeout, &env, &console).await.map_err(|e| reported(e, d))?;
        Ok(match resumed {
            Resumed::Now => {
                console.say(format_args!("RayCluster {name} is back: every pod Ready"));
                0
            }
            Resumed::NotSuspended => {
                console.say(format_args!("RayCluster {name} is not suspended (`{} status` shows its pods)", crate::name()));
                0
            }
            Resumed::NoCluster => {
                console.say(format_args!("RayCluster {name} does not exist (deploy it first)"));
                1
            }
            other => anyhow::bail!("resume ended in a way this version does not know: {other:?}"),
        })
    }
}

/// An operation's error, with the fix for a cluster out of reach.
fn reported(error: gke_rl_ops::Error, d: &gke_rl::Deployment) -> anyhow::Error {
    let project = d.project.project_id.as_ref().map_or("PROJECT_ID", |p| p.as_str());
    let get_credentials = gke_rl::lifecycle::credentials(d, project);
    crate::reported(error, &|e| explain(e, None, &get_credentials))
}
