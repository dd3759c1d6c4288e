//! `cargo xtask deploy`: from a config to a Ready RayCluster with Lustre mounted.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use gke_rl::lifecycle::{self, Folder, Preflight, REQUIRED_APIS, STAGED_TEMPLATES, State, Step, TOOLKIT_EXAMPLE};
use gke_rl::model::Provisioning;
use gke_rl::{Artifacts, Deployment};
use gke_rl_kube::{Readiness, Wait};
use xshell::Shell;

use super::{Console, Env, INTERRUPTED, Resolved, Target, confirm, read, stream, took};

/// Create the GKE cluster, Managed Lustre and the RayCluster from the config, and wait until
/// every Ray pod is Ready; re-running resumes after the last completed step
#[derive(clap::Args)]
pub struct DeployArgs {
    #[command(flatten)]
    target: Target,
    /// CIDR allowed to reach the control plane [default: the config's, else this machine's public address]
    #[arg(long, value_name = "CIDR")]
    authorized_cidr: Option<String>,
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
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = super::parse_duration)]
    timeout: Duration,
}

/// Where the public address comes from when no CIDR is given (plain text, one address).
const ADDRESS_ECHO: &str = "https://api.ipify.org";

impl DeployArgs {
    pub fn run(self) -> anyhow::Result<u8> {
        let sh = Shell::new()?;
        super::runtime()?.block_on(async { self.execute(Env::real(&sh)).await })
    }

    pub(super) async fn execute(&self, mut env: Env<'_>) -> anyhow::Result<u8> {
        let mut resolved = self.target.resolve(&mut env, self.download_dependencies)?;
        let artifacts = crate::config::render(&resolved.deployment, &resolved.source)?;
        let ray_cluster = artifacts.ray_cluster.contents.clone();
        if self.dry_run {
            resolved.site.authorized_cidr = self.authorized_cidr(&env, &resolved.deployment, None).await?;
            env.console.say(lifecycle::deploy_plan(&resolved.deployment, &resolved.site, &ray_cluster, &took(self.timeout)));
            return Ok(0);
        }
        let mut state = match resolved.load_state()? {
            Some(state) => state,
            None => State::new(&resolved.deployment, &resolved.site.project_id, ""),
        };
        let provisioned = state.done(Step::Provision).then(|| state.authorized_cidr.clone()).flatten();
        resolved.site.authorized_cidr = self.authorized_cidr(&env, &resolved.deployment, provisioned.as_deref()).await?;
        if provisioned.as_ref().is_some_and(|before| *before != resolved.site.authorized_cidr) {
            env.console.say(format_args!(
                "the authorized CIDR changes from {} to {}: gcluster runs again to update the control plane's authorized networks",
                provisioned.unwrap_or_default(),
                resolved.site.authorized_cidr
            ));
            state.redo_from(Step::Provision);
        }

        let started = Instant::now();
        env.console.say(format_args!("→ {}", Step::Preflight.title()));
        if let Err(e) = self.preflight(&env, &mut resolved, &state).await {
            env.console.say(format_args!("✗ {} failed\n{e:#}", Step::Preflight.title()));
            return Ok(1);
        }
        env.console.say(format_args!("✓ {} ({})", Step::Preflight.title(), took(started.elapsed())));
        state.complete(Step::Preflight);

        let blueprint_path = Path::new(&resolved.site.toolkit).join(crate::blueprint::TOOLKIT_BLUEPRINT);
        let original = crate::config::read_input(&blueprint_path)?;
        let blueprint = crate::blueprint::patch_checked(&blueprint_path, &original, &resolved.deployment, &artifacts)?;
        let digest = lifecycle::digest(&[&blueprint, &artifacts.deployment_file.contents, &ray_cluster]);
        if state.rendered != digest {
            if !state.rendered.is_empty() {
                env.console.say("the config or the blueprint changed since the last deploy: running the steps from render again");
            }
            state.redo_from(Step::Render);
            state.rendered = digest;
        }
        if Step::ALL.iter().all(|s| state.done(*s)) {
            let name = resolved.deployment.project.cluster_name.as_str();
            match healthy(&env, &resolved).await {
                Err(e) => {
                    env.console.say(format_args!("✗ cannot check RayCluster {name}\n{:#}", resolved.explain(e)));
                    return Ok(1);
                }
                Ok(Health::Gone) => {
                    env.console.say(format_args!("RayCluster {name} is gone: applying it again"));
                    state.redo_from(Step::Secret);
                }
                Ok(Health::Ready(ready, wanted)) => {
                    env.console.say(format_args!("nothing to do: RayCluster {name} is Ready ({ready}/{wanted} pods)"));
                    return Ok(0);
                }
                Ok(Health::Waiting(ready, wanted)) => {
                    env.console.say(format_args!("RayCluster {name} has {ready}/{wanted} pods Ready: waiting for them again"));
                    state.redo_from(Step::Ready);
                }
            }
        }
        if !state.done(Step::Provision) && !confirm(&cost_question(&resolved.deployment), self.yes)? {
            env.console.say("nothing was created");
            return Ok(1);
        }

        let files = Files { artifacts: &artifacts, blueprint: &blueprint, ray_cluster: &ray_cluster };
        for step in Step::ALL.into_iter().skip(1) {
            if state.done(step) {
                env.console.say(format_args!("✓ {} (done before)", step.title()));
                continue;
            }
            let started = Instant::now();
            env.console.say(format_args!("→ {}", step.title()));
            let result = self.step(step, &mut env, &resolved, &mut state, &files).await;
            if env.interrupt.is_set() {
                resolved.save_state(&state)?;
                env.console.say(format_args!(
                    "interrupted during \"{}\"; the state is saved in {}\n  cargo xtask deploy    resumes from there\n  cargo xtask destroy   removes what exists",
                    step.title(),
                    resolved.state_path().display()
                ));
                return Ok(INTERRUPTED);
            }
            if let Err(e) = result {
                resolved.save_state(&state)?;
                env.console.say(format_args!("✗ {} failed after {}\n{:#}", step.title(), took(started.elapsed()), resolved.explain(e)));
                env.console
                    .say(format_args!("re-run `cargo xtask deploy` to resume from this step (state: {})", resolved.state_path().display()));
                return Ok(1);
            }
            state.complete(step);
            resolved.save_state(&state)?;
            env.console.say(format_args!("✓ {} ({})", step.title(), took(started.elapsed())));
        }
        let cluster = &resolved.deployment.project.cluster_name;
        env.console.say(format_args!(
            "RayCluster {cluster} is Ready. Next:\n  cargo xtask submit    (port-forwards to the head by itself)\n  cargo xtask destroy   when you are done: A4 nodes and Lustre bill by the hour"
        ));
        Ok(0)
    }

    /// The CIDR from the flag, the config, the one the cluster was provisioned with, or this
    /// machine's public address.
    async fn authorized_cidr(&self, env: &Env<'_>, deployment: &Deployment, provisioned: Option<&str>) -> anyhow::Result<String> {
        if let Some(cidr) = &self.authorized_cidr {
            gke_rl::model::Cidr::new(cidr).map_err(|e| anyhow::anyhow!("--authorized-cidr: {e}"))?;
            return Ok(cidr.clone());
        }
        if let Some(cidr) = &deployment.network.authorized_cidr {
            return Ok(cidr.to_string());
        }
        if let Some(cidr) = provisioned {
            return Ok(cidr.to_owned());
        }
        if self.dry_run {
            return Ok("<this machine's public address>/32".to_owned());
        }
        let (address, url) = public_address(env).await?;
        let cidr = if address.is_ipv4() { format!("{address}/32") } else { format!("{address}/128") };
        env.console.say(format_args!(
            "authorized CIDR: {cidr} (this machine's public address, from {url}); pass --authorized-cidr to choose another"
        ));
        Ok(cidr)
    }

    /// Checks everything it can before anything is created, and reports all problems at once.
    async fn preflight(&self, env: &Env<'_>, resolved: &mut Resolved, state: &State) -> anyhow::Result<()> {
        let site = &resolved.site;
        let checks = Preflight::new(site);
        let mut problems = Vec::new();
        let account = read(env, &checks.account).ok().map(|a| a.trim().to_owned()).filter(|a| !a.is_empty());
        let signed_in = account.is_some();
        match account {
            Some(account) => env.console.say(format_args!("  gcloud account: {account}")),
            None => problems.push(
                "no active gcloud account: run `gcloud auth login` and `gcloud auth application-default login` (gcluster's validators and Terraform use the application-default credentials)".to_owned(),
            ),
        }
        // Without an account gcloud can answer nothing else about the project.
        if signed_in {
            match read(env, &checks.apis) {
                Ok(enabled) => {
                    let enabled: Vec<&str> = enabled.lines().map(str::trim).collect();
                    let missing: Vec<&str> = REQUIRED_APIS.iter().copied().filter(|api| !enabled.contains(api)).collect();
                    if !missing.is_empty() {
                        problems.push(format!(
                            "APIs not enabled in {}: {}\n  enable them: {}",
                            site.project_id,
                            missing.join(", "),
                            lifecycle::enable_apis(&missing, site)
                        ));
                    }
                }
                Err(e) => problems.push(format!("cannot list the enabled APIs of {}: {e}", site.project_id)),
            }
        }
        if let Err(e) = read(env, &checks.gcluster) {
            problems.push(format!(
                "gcluster not found in {} or on PATH ({e}): run `make` in the Cluster Toolkit checkout, or put gcluster on PATH",
                site.toolkit
            ));
        }
        for tool in &checks.tools {
            if read(env, tool).is_err() {
                problems.push(format!(
                    "{} is not on PATH: install it (gcluster needs Terraform and Packer) or pass --download-dependencies",
                    tool.program
                ));
            }
        }
        if read(env, &checks.auth_plugin).is_err() {
            problems.push(format!(
                "{} is not on PATH: the cluster's kubeconfig runs it to authenticate; install it with {}",
                lifecycle::AUTH_PLUGIN,
                lifecycle::INSTALL_AUTH_PLUGIN
            ));
        }
        if state.done(Step::Provision) {
            // The Kubernetes steps need the control plane, which answers only the authorized CIDR.
            if let Some(problem) = outside_authorized_cidr(env, &site.authorized_cidr, &resolved.deployment).await {
                problems.push(problem);
            }
        }
        let blueprint = Path::new(&site.toolkit).join(TOOLKIT_EXAMPLE);
        if !blueprint.join("gke-a4.yaml").is_file() {
            problems.push(format!(
                "no Cluster Toolkit checkout at {}: clone https://github.com/GoogleCloudPlatform/cluster-toolkit there, or pass --toolkit DIR",
                site.toolkit
            ));
        }
        for (_, variable, required) in lifecycle::secret_entries(&resolved.deployment) {
            if required && !env.sh.var(variable).is_ok_and(|v| !v.is_empty()) {
                problems.push(format!("${variable} is not set: export it; its value goes into the Kubernetes Secret and nowhere else"));
            }
        }
        let skip = read(env, &checks.gcsfuse_role).is_err();
        if skip && signed_in {
            env.console.say(format_args!(
                "  the custom role {} does not exist in {}: gcluster's {} validator is skipped, and the blueprint's GCS Fuse\n  \
                 volumes (training and checkpoint buckets; not Lustre) may fail to mount. To create the role:\n    {}\n  \
                 then grant it to service-PROJECT_NUMBER@container-engine-robot.iam.gserviceaccount.com",
                lifecycle::GCSFUSE_ROLE,
                site.project_id,
                lifecycle::GCSFUSE_VALIDATOR,
                lifecycle::create_gcsfuse_role(site)
            ));
        }
        resolved.site.skip_gcsfuse_validator = skip;
        if !problems.is_empty() {
            let listed: Vec<String> = problems.iter().map(|p| format!("  - {}", p.trim().replace('\n', "\n    "))).collect();
            bail!("{}", listed.join("\n"));
        }
        env.console.say(format_args!("  authorized CIDR: {}", resolved.site.authorized_cidr));
        Ok(())
    }

    async fn step(&self, step: Step, env: &mut Env<'_>, resolved: &Resolved, state: &mut State, files: &Files<'_>) -> anyhow::Result<()> {
        let d = &resolved.deployment;
        let site = &resolved.site;
        match step {
            Step::Preflight => Ok(()),
            Step::Render => files.write(resolved),
            Step::Provision => {
                if !stream(env, &lifecycle::provision(site)) {
                    bail!("gcluster deploy failed; its output is above");
                }
                state.created.cluster = Some(d.project.cluster_name.to_string());
                state.created.lustre_instance = Some(d.lustre.instance_id.to_string());
                state.authorized_cidr = Some(site.authorized_cidr.clone());
                Ok(())
            }
            Step::Credentials => {
                if !stream(env, &lifecycle::credentials(d, &site.project_id)) {
                    bail!("gcloud could not get the cluster's credentials");
                }
                Ok(())
            }
            Step::Secret => {
                let mut entries = Vec::new();
                for (key, variable, required) in lifecycle::secret_entries(d) {
                    match env.sh.var(variable) {
                        Ok(value) if !value.is_empty() => entries.push((key, value)),
                        _ if required => bail!("${variable} is not set"),
                        _ => {}
                    }
                }
                let entries: Vec<(&str, &str)> = entries.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let clusters = resolved.clusters(env).await?;
                clusters.apply_secret(d.secrets.kubernetes_secret.as_str(), &entries).await?;
                env.console.say(format_args!(
                    "  Secret {}/{} holds {}",
                    d.ray.namespace,
                    d.secrets.kubernetes_secret,
                    entries.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
                ));
                state.created.namespace = Some(d.ray.namespace.to_string());
                state.created.secret = Some(d.secrets.kubernetes_secret.to_string());
                Ok(())
            }
            Step::RayCluster => {
                let clusters = resolved.clusters(env).await?;
                let (name, uid) = clusters.apply(files.ray_cluster).await?;
                env.console.say(format_args!("  RayCluster {}/{name} applied (uid {uid})", d.ray.namespace));
                state.created.ray_cluster_uid = Some(uid);
                Ok(())
            }
            Step::Ready => self.wait_ready(env, resolved).await,
        }
    }

    /// Waits for the pods, showing progress and every new reason a pod is not Ready.
    async fn wait_ready(&self, env: &mut Env<'_>, resolved: &Resolved) -> anyhow::Result<()> {
        let d = &resolved.deployment;
        let clusters = resolved.clusters(env).await?;
        let wait = Wait { timeout: self.timeout, poll: env.poll };
        let workers = d.topology.node_count.get();
        let console = env.console.clone();
        let bar = console.progress_bar(u64::from(workers) + 1);
        let mut told: Vec<String> = Vec::new();
        let mut last = None;
        let show = |readiness: &Readiness| {
            let (ready, wanted) = readiness.progress();
            bar.update(&console, ready, wanted, &mut last);
            for problem in readiness.problems.iter().filter(|p| !told.contains(p)).cloned().collect::<Vec<_>>() {
                bar.say(&console, &format!("  ! {problem}"));
                told.push(problem);
            }
        };
        let waited = tokio::select! {
            result = clusters.wait_ready(d.project.cluster_name.as_str(), workers, wait, show) => result,
            () = env.interrupt.wait() => return Ok(()),
        };
        bar.finish();
        match waited {
            Ok(_) => Ok(()),
            Err(gke_rl_kube::Error::NotReady { waited, readiness }) => {
                let mut message = format!("{}", gke_rl_kube::Error::NotReady { waited, readiness: readiness.clone() });
                if readiness.waits_for_capacity() {
                    message.push_str(&capacity_hint(d));
                }
                bail!(message)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// How a deployment whose every step completed is doing.
enum Health {
    /// Its RayCluster was deleted behind gke-rl's back.
    Gone,
    /// Ready and wanted pods: all there.
    Ready(u32, u32),
    /// Ready and wanted pods: some are not Ready.
    Waiting(u32, u32),
}

async fn healthy(env: &Env<'_>, resolved: &Resolved) -> anyhow::Result<Health> {
    let d = &resolved.deployment;
    let clusters = resolved.clusters(env).await?;
    let name = d.project.cluster_name.as_str();
    if clusters.uid(name).await?.is_none() {
        return Ok(Health::Gone);
    }
    let readiness = clusters.readiness(name, d.topology.node_count.get()).await?;
    let (ready, wanted) = readiness.progress();
    Ok(if readiness.is_ready() { Health::Ready(ready, wanted) } else { Health::Waiting(ready, wanted) })
}

/// This machine's public address and where it came from (plain text, one address).
async fn public_address(env: &Env<'_>) -> anyhow::Result<(std::net::IpAddr, String)> {
    let url = env.sh.var("GKE_RL_ADDRESS_ECHO").unwrap_or_else(|_| ADDRESS_ECHO.to_owned());
    gke_rl_ray::ensure_crypto_provider();
    let answer = async { reqwest::Client::new().get(&url).timeout(Duration::from_secs(10)).send().await?.error_for_status()?.text().await };
    let text = answer.await.with_context(|| format!("cannot detect this machine's public address from {url}; pass --authorized-cidr"))?;
    let address =
        text.trim().parse().with_context(|| format!("{url} answered {:?}, not an IP address; pass --authorized-cidr", text.trim()))?;
    Ok((address, url))
}

/// The problem when this machine's public address is outside `cidr`, which the control plane
/// accepts; `None` when it is inside or cannot be told.
async fn outside_authorized_cidr(env: &Env<'_>, cidr: &str, d: &Deployment) -> Option<String> {
    let cidr = gke_rl::model::Cidr::new(cidr).ok()?;
    let (address, _) = match public_address(env).await {
        Ok(found) => found,
        Err(e) => {
            env.console.say(format_args!("  cannot tell whether this machine is inside the authorized CIDR {cidr}: {e:#}"));
            return None;
        }
    };
    let std::net::IpAddr::V4(v4) = address else { return None };
    (!cidr.contains(v4)).then(|| {
        format!(
            "this machine's public address {address} is outside the authorized CIDR {cidr} of cluster {}: its Kubernetes API will not \
             answer. Run `cargo xtask deploy --authorized-cidr {address}/32` (gcluster updates the authorized networks in place), \
             or deploy from an address inside {cidr}",
            d.project.cluster_name
        )
    })
}

/// The rendered files a deploy writes into its folder.
struct Files<'a> {
    artifacts: &'a Artifacts,
    blueprint: &'a str,
    ray_cluster: &'a str,
}

impl Files<'_> {
    fn write(&self, resolved: &Resolved) -> anyhow::Result<()> {
        let folder = Folder(&resolved.site.folder);
        std::fs::create_dir_all(resolved.folder()).with_context(|| format!("cannot create {}", resolved.site.folder))?;
        let write = |path: String, contents: &str| crate::render::write_atomically(Path::new(&path), contents.as_bytes(), false);
        write(folder.blueprint(), self.blueprint)?;
        write(folder.deployment_file(), &self.artifacts.deployment_file.contents)?;
        write(folder.ray_cluster(), self.ray_cluster)?;
        let example = Path::new(&resolved.site.toolkit).join(TOOLKIT_EXAMPLE);
        for template in STAGED_TEMPLATES {
            let text = crate::config::read_input(&example.join(template))?;
            write(folder.template(template), &text)?;
        }
        Ok(())
    }
}

fn cost_question(d: &Deployment) -> String {
    let how = match &d.topology.provisioning {
        Provisioning::Spot => "Spot".to_owned(),
        Provisioning::Reservation(name) => format!("from reservation {name}"),
    };
    format!(
        "create {} × {} ({how}) and a {} GiB Managed Lustre instance in {}? They bill until `cargo xtask destroy`.",
        d.topology.node_count, d.topology.machine_type, d.lustre.capacity_gib, d.project.zone
    )
}

fn capacity_hint(d: &Deployment) -> String {
    let p = &d.project;
    let pool = format!("{}-a4-pool", d.topology.machine_type);
    let cause = match &d.topology.provisioning {
        Provisioning::Spot => format!("Spot capacity for {} in {} is likely exhausted (a stock-out)", d.topology.machine_type, p.zone),
        Provisioning::Reservation(name) => format!("reservation {name} may have no free {} capacity", d.topology.machine_type),
    };
    format!(
        "\nthe pods wait for GPU nodes that do not come: {cause}.\n  see the node pool: gcloud container node-pools describe {pool} --cluster {} --region {} --project PROJECT_ID\n  \
         then re-run `cargo xtask deploy` later, or use another zone or a reservation (topology.provisioning.reservation)",
        p.cluster_name, p.region
    )
}

/// An indicatif bar on a terminal; plain progress lines elsewhere.
enum Bar {
    Terminal(indicatif::ProgressBar),
    Lines,
}

impl Console {
    fn progress_bar(&self, wanted: u64) -> Bar {
        if !self.terminal {
            return Bar::Lines;
        }
        let bar = indicatif::ProgressBar::new(wanted);
        let style =
            indicatif::ProgressStyle::with_template("  [{bar:30}] {pos}/{len} pods Ready ({elapsed})").map(|s| s.progress_chars("=> "));
        if let Ok(style) = style {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_secs(1));
        Bar::Terminal(bar)
    }
}

impl Bar {
    fn update(&self, console: &Console, ready: u32, wanted: u32, last: &mut Option<u32>) {
        match self {
            Bar::Terminal(bar) => bar.set_position(u64::from(ready)),
            Bar::Lines if *last != Some(ready) => console.say(format_args!("  {ready}/{wanted} pods Ready")),
            Bar::Lines => {}
        }
        *last = Some(ready);
    }

    fn say(&self, console: &Console, line: &str) {
        match self {
            Bar::Terminal(bar) => bar.println(line),
            Bar::Lines => console.say(line),
        }
    }

    fn finish(&self) {
        if let Bar::Terminal(bar) = self {
            bar.finish_and_clear();
        }
    }
}
