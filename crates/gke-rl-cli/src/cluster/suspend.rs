//! `gke-rl suspend` and `gke-rl resume`: stop paying for GPU pods between jobs, and bring them
//! back.

use std::time::Duration;

use gke_rl_ops::Env;
use gke_rl_ops::suspend::Changed;

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
        set_suspended(&self.source, true, self.timeout, env, console).await
    }
}

impl ResumeArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(self.execute(Env::real(), Console::stderr(false)))
    }

    pub(super) async fn execute(&self, env: Env, console: Console) -> anyhow::Result<u8> {
        set_suspended(&self.source, false, self.timeout, env, console).await
    }
}

async fn set_suspended(source: &crate::config::Source, suspended: bool, wait: Duration, env: Env, console: Console) -> anyhow::Result<u8> {
    let loaded = source.load()?.fitted_to_cluster()?;
    let d = &loaded.deployment;
    let name = &d.project.cluster_name;
    let project = d.project.project_id.as_ref().map_or("PROJECT_ID", |p| p.as_str());
    let get_credentials = gke_rl::lifecycle::credentials(d, project);
    let changed = gke_rl_ops::suspend::set_suspended(d, suspended, wait, &env, &console)
        .await
        .map_err(|e| crate::reported(e, &|e| explain(e, None, &get_credentials)))?;
    let (words, code) = said(changed, suspended, name.as_str())?;
    console.say(words);
    Ok(code)
}

/// What a suspend or resume says, and its exit code.
fn said(changed: Changed, suspended: bool, name: &str) -> anyhow::Result<(String, u8)> {
    let cli = crate::name();
    Ok(match (changed, suspended) {
        (Changed::Now, true) => (format!("RayCluster {name} is suspended; `{cli} resume` brings it back"), 0),
        (Changed::Now, false) => (format!("RayCluster {name} is back: every pod Ready"), 0),
        (Changed::Already, true) => (format!("RayCluster {name} was suspended already"), 0),
        (Changed::Already, false) => (format!("RayCluster {name} is not suspended (`{cli} status` shows its pods)"), 0),
        (Changed::NoCluster, _) => (format!("RayCluster {name} does not exist (deploy it first)"), 1),
        (other, _) => anyhow::bail!("suspend/resume ended in a way this version does not know: {other:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspend_and_resume_say_what_they_found() {
        let cases = [
            (Changed::NoCluster, true, "RayCluster c does not exist (deploy it first)", 1),
            (Changed::Now, true, "RayCluster c is suspended; `gke-rl resume` brings it back", 0),
            (Changed::Already, true, "RayCluster c was suspended already", 0),
            (Changed::Now, false, "RayCluster c is back: every pod Ready", 0),
            (Changed::Already, false, "RayCluster c is not suspended", 0),
        ];
        for (changed, suspended, words, exit) in cases {
            let (said, code) = said(changed, suspended, "c").unwrap();
            assert!(said.starts_with(words) && code == exit, "{said:?} exit {code}");
        }
    }
}
