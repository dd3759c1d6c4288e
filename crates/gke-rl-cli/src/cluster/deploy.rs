//! `gke-rl deploy`: from a config to a Ready RayCluster with Lustre mounted.

use std::time::Duration;

use gke_rl::lifecycle::Step;
use gke_rl_ops::deploy::{DeployOptions, Deployed};
use gke_rl_ops::{Env, address::ADDRESS_ECHO};

use super::Target;
use crate::console::{Console, explain};
use crate::interrupted;

/// Create the GKE cluster, Managed Lustre and the RayCluster from the config, and wait until
/// every Ray pod is Ready; re-running resumes after the last completed step
#[derive(clap::Args)]
pub struct DeployArgs {
    #[command(flatten)]
    target: Target,
    /// CIDR allowed to reach the control plane [default: the config's, else this machine's public address]
    #[arg(long, value_name = "CIDR", value_parser = cidr)]
    authorized_cidr: Option<gke_rl::model::Cidr>,
    /// Let gcluster download Terraform and Packer instead of requiring them on PATH
    #[arg(long)]
    download_dependencies: bool,
    /// Print every command and Kubernetes object, change nothing
    #[arg(long)]
    dry_run: bool,
    /// Do not ask before creating billable resources
    #[arg(long)]
    yes: bool,
    /// How long to wait for the Ray pods to be Ready (90s, 30m, 1h)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::parse_duration)]
    timeout: Duration,
    /// Where to ask for this machine's public address (plain text, one address)
    #[arg(long, value_name = "URL", env = "GKE_RL_ADDRESS_ECHO", default_value = ADDRESS_ECHO, hide = true)]
    address_echo: String,
    /// Once the RayCluster is Ready, run `fabric-check` on it (exit 1 when it fails)
    #[arg(long)]
    fabric_check: bool,
    /// Once the RayCluster is Ready, run `storage-check` on it (exit 1 when it fails), before
    /// any training bills the GPUs
    #[arg(long)]
    storage_check: bool,
    /// Import this checkpoint (gs://BUCKET/PATH/RUN/step_N/, as `export` wrote it) into the
    /// checkpoint folder once the RayCluster is Ready, before any run: the first run resumes from
    /// it [default: the config's job.resume_from]
    #[arg(long, value_name = "GS_CHECKPOINT", value_parser = checkpoint_uri)]
    resume_from: Option<gke_rl::model::CheckpointUri>,
    /// Install an in-cluster guard that suspends the RayCluster after this long without a
    /// running job (30m, 2h); the GPU pool then autoscales from zero [default: the config's job.idle_timeout_minutes]
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
    idle_timeout: Option<Duration>,
}

impl DeployArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        crate::runtime()?.block_on(self.execute(Env::real(), Console::stderr(self.yes)))
    }

    pub(super) async fn execute(&self, env: Env, console: Console) -> anyhow::Result<u8> {
        let mut loaded = self.target.source.load()?;
        // A placeholder's default is fine to look at, not to pay for.
        if !self.dry_run && !loaded.defaulted.is_empty() {
            anyhow::bail!(
                "{} still holds placeholders for {}, so deploy would create gke-rl's defaults in their place\nhelp: set them in {0} (the warnings above say what each is); `--dry-run` shows the plan as it is",
                loaded.source,
                loaded.defaulted.join(", ")
            );
        }
        if loaded.deployment.job.mode == gke_rl::model::JobMode::Rayjob {
            let flag = [
                ("--idle-timeout", self.idle_timeout.is_some()),
                ("--fabric-check", self.fabric_check),
                ("--storage-check", self.storage_check),
            ]
            .into_iter()
            .find(|(_, on)| *on);
            if let Some((flag, _)) = flag {
                anyhow::bail!(
                    "{flag} acts on the long-lived RayCluster, which job.mode: rayjob does not have: each RayJob brings its own\nhelp: leave out {flag}, or set job.mode: cluster"
                );
            }
        }
        if let Some(idle) = self.idle_timeout {
            loaded.deployment.job.idle_timeout_minutes = Some(idle_minutes(idle));
        }
        if let Some(uri) = &self.resume_from {
            loaded.deployment.job.resume_from = Some(uri.clone());
            if let Some(conflict) = loaded.deployment.mode_conflict() {
                anyhow::bail!("--resume-from: {}\nhelp: {}", conflict.message(), conflict.help());
            }
        }
        let d = &loaded.deployment;
        let artifacts = loaded.artifacts()?;
        let options = DeployOptions {
            target: self.target.options(),
            authorized_cidr: self.authorized_cidr.clone(),
            download_dependencies: self.download_dependencies,
            timeout: self.timeout,
            address_echo: self.address_echo.clone(),
        };
        let get_credentials = self.target.get_credentials(d);
        let explained = |e: &gke_rl_ops::Error| explain(e, None, &get_credentials);
        if self.dry_run {
            let plan = gke_rl_ops::deploy::plan(d, &artifacts, &options, &env).map_err(|e| crate::reported(e, &explained))?;
            console.say(plan);
            return Ok(0);
        }
        let console = std::sync::Arc::new(console);
        let deployed =
            gke_rl_ops::deploy::deploy(d, &artifacts, &options, &env, console.clone()).await.map_err(|e| crate::reported(e, &explained))?;
        let ready = matches!(deployed, Deployed::Ready | Deployed::AlreadyReady { .. });
        let (words, code) = said(deployed, d, &get_credentials)?;
        console.say(words);
        if !(ready && (self.fabric_check || self.storage_check)) {
            return Ok(code);
        }
        // The cluster just deployed, through Kubernetes: never another head RAY_ADDRESS names.
        let forwarded = gke_rl_ops::head::HeadOptions { ray_address: false, ..gke_rl_ops::head::HeadOptions::default() };
        let head = gke_rl_ops::mode::connect(d, &forwarded, &env, console.clone()).await.map_err(|e| crate::reported(e, &explained))?;
        // Both checks run even when the first fails (each says what to fix), unless interrupted.
        let mut code = 0;
        if self.fabric_check {
            code = crate::defaults::<crate::fabric::CheckArgs>().run(&loaded, &head, &env, &console).await?;
            if code >= 128 {
                return Ok(code);
            }
        }
        if self.storage_check {
            code = code.max(crate::defaults::<crate::storage::CheckArgs>().run(&loaded, &head, &env, &console).await?);
        }
        Ok(code)
    }
}

/// `--resume-from`: a checkpoint in a bucket, checked before anything runs.
fn checkpoint_uri(text: &str) -> Result<gke_rl::model::CheckpointUri, String> {
    gke_rl::model::CheckpointUri::new(text).map_err(|e| e.to_string())
}

/// `--authorized-cidr`: an IPv4 block, checked before anything runs.
fn cidr(text: &str) -> Result<gke_rl::model::Cidr, String> {
    gke_rl::model::Cidr::new(text).map_err(|e| e.to_string())
}

/// `--idle-timeout` in the config's whole minutes, rounded up: 90s is 2 minutes, never 0.
fn idle_minutes(idle: Duration) -> std::num::NonZeroU32 {
    let minutes = u32::try_from(idle.as_secs().div_ceil(60)).unwrap_or(u32::MAX);
    std::num::NonZeroU32::new(minutes).unwrap_or(std::num::NonZeroU32::MIN)
}

/// What a deploy's outcome says, and its exit code.
fn said(deployed: Deployed, d: &gke_rl::Deployment, get_credentials: &gke_rl::lifecycle::Command) -> anyhow::Result<(String, u8)> {
    let cli = crate::name();
    let cluster = &d.project.cluster_name;
    let rayjob = d.job.mode == gke_rl::model::JobMode::Rayjob;
    Ok(match deployed {
        Deployed::Ready if rayjob => (
            format!(
                "{cluster} is ready for RayJobs: no GPU node runs until one does. Next:\n  \
                 {cli} render    prints the commands that run the job as a RayJob\n  \
                 {cli} destroy   when you are done: Lustre and the CPU nodes bill by the hour"
            ),
            0,
        ),
        Deployed::Ready => (
            format!(
                "RayCluster {cluster} is Ready. Next:\n  {cli} submit    (port-forwards to the head by itself)\n  \
                 {cli} destroy   when you are done: A4 nodes and Lustre bill by the hour"
            ),
            0,
        ),
        Deployed::AlreadyReady { ready, wanted } => (format!("nothing to do: RayCluster {cluster} is Ready ({ready}/{wanted} pods)"), 0),
        Deployed::AlreadyDeployed => (format!("nothing to do: {cluster} is deployed for RayJobs"), 0),
        Deployed::Declined => ("nothing was created".to_owned(), 1),
        Deployed::Failed { step: Step::Preflight, error, .. } => {
            (format!("✗ {} failed\n{}", Step::Preflight.title(), explain(&error.into(), None, get_credentials)), 1)
        }
        Deployed::Failed { step, took, error, fix, state } => (
            format!(
                "✗ {} failed after {}\n{}\nre-run `{cli} deploy` to resume from this step (state: {})",
                step.title(),
                gke_rl_ops::took(took),
                explain(&error.into(), fix.as_ref(), get_credentials),
                state.display()
            ),
            1,
        ),
        Deployed::Unchecked { error, fix } => {
            (format!("✗ cannot check RayCluster {cluster}\n{}", explain(&error.into(), fix.as_ref(), get_credentials)), 1)
        }
        Deployed::Interrupted { step, state, signal } => (
            format!(
                "interrupted during \"{}\"; the state is saved in {}\n  {cli} deploy    resumes from there\n  {cli} destroy   removes what exists",
                step.title(),
                state.display()
            ),
            interrupted(signal),
        ),
        other => anyhow::bail!("deploy ended in a way this version does not know: {other:?}"),
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_idle_timeout_is_whole_minutes_rounded_up() {
        assert_eq!(idle_minutes(Duration::from_secs(2 * 3600)).get(), 120);
        assert_eq!(idle_minutes(Duration::from_secs(90)).get(), 2);
        assert_eq!(idle_minutes(Duration::from_millis(500)).get(), 1);
    }

    #[test]
    fn a_deploys_outcome_says_what_to_do_next_and_exits_as_documented() {
        let d = gke_rl::Deployment::default();
        let credentials = gke_rl::lifecycle::credentials(&d, "p");
        let state = PathBuf::from("/f/state.json");
        let cases = [
            (Deployed::Ready, "RayCluster ray-a4-gpu-spot is Ready. Next:", 0),
            (Deployed::AlreadyReady { ready: 9, wanted: 9 }, "nothing to do: RayCluster ray-a4-gpu-spot is Ready (9/9 pods)", 0),
            (
                Deployed::Failed {
                    step: Step::Secret,
                    took: Duration::from_secs(1),
                    error: gke_rl_ops::LifecycleError::SecretUnset("HF_TOKEN".into()),
                    fix: None,
                    state: state.clone(),
                },
                "re-run `gke-rl deploy` to resume from this step (state: /f/state.json)",
                1,
            ),
            (Deployed::Interrupted { step: Step::Ready, state, signal: 2 }, "gke-rl deploy    resumes from there", 130),
            (Deployed::Declined, "nothing was created", 1),
            (
                Deployed::Failed {
                    step: Step::Preflight,
                    took: Duration::ZERO,
                    error: gke_rl_ops::CommonError::NoProject.into(),
                    fix: None,
                    state: "/f".into(),
                },
                "✗ preflight failed\nno project",
                1,
            ),
        ];
        for (deployed, words, exit) in cases {
            let (said, code) = said(deployed, &d, &credentials).unwrap();
            assert!(said.contains(words) && code == exit, "{words:?} exit {exit}: {said:?} exit {code}");
        }
    }
}
