//! Deploy: from a model to a Ready RayCluster with Lustre mounted, in resumable steps.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gke_rl::lifecycle::{self, Preflight, State, Step};
use gke_rl::model::{Cidr, Provisioning};
use gke_rl::{Artifacts, Deployment};
use gke_rl_kube::Wait;

use crate::address::{ADDRESS_ECHO, host_cidr, public_address};
use crate::blueprint::{patch_checked, toolkit_blueprint};
use crate::events::{LifecycleEvent, Progress, Question};
use crate::site::{Resolved, SiteOptions};
use crate::{CommonError, Env, Fix, LifecycleError, Problem, files};

/// How to deploy.
#[derive(Clone, Debug)]
pub struct DeployOptions {
    /// Which deployment, where.
    pub target: SiteOptions,
    /// The CIDR allowed to reach the control plane [default: the config's, else the one the
    /// cluster was provisioned with, else this machine's public address].
    pub authorized_cidr: Option<Cidr>,
    /// Let gcluster download Terraform and Packer instead of requiring them on `PATH`.
    pub download_dependencies: bool,
    /// How long to wait for the Ray pods to be Ready.
    pub timeout: Duration,
    /// The service that tells this machine's public address (plain text, one address).
    pub address_echo: String,
}

impl Default for DeployOptions {
    fn default() -> Self {
        DeployOptions {
            target: SiteOptions::default(),
            authorized_cidr: None,
            download_dependencies: false,
            timeout: Duration::from_secs(30 * 60),
            address_echo: ADDRESS_ECHO.to_owned(),
        }
    }
}

/// How a deploy ended (an `Err` is a problem before any step: a bad state file, a blueprint
/// of the wrong shape, no project).
#[derive(Debug)]
#[non_exhaustive]
pub enum Deployed {
    /// Every Ray pod is Running and Ready.
    Ready,
    /// Deployed already in `rayjob` mode, which has no long-lived RayCluster to look at:
    /// nothing was done.
    AlreadyDeployed,
    /// It was Ready already: nothing was done.
    AlreadyReady {
        /// Pods Ready.
        ready: u32,
        /// Pods wanted.
        wanted: u32,
    },
    /// The question before creating billable resources was answered no: nothing was created.
    Declined,
    /// A step failed. The state is saved: the next deploy resumes at that step.
    Failed {
        /// The step.
        step: Step,
        /// How long it ran.
        took: Duration,
        /// Why.
        error: LifecycleError,
        /// What fixes it, when the cluster's API could not be used.
        fix: Option<Fix>,
        /// The state file.
        state: PathBuf,
    },
    /// A completed deployment could not be checked.
    Unchecked {
        /// Why.
        error: LifecycleError,
        /// What fixes it, when the cluster's API could not be used.
        fix: Option<Fix>,
    },
    /// Interrupted during `step`; the state is saved.
    Interrupted {
        /// The step.
        step: Step,
        /// The state file.
        state: PathBuf,
        /// The signal's number (2 for Ctrl-C, 15 for SIGTERM, 1 for SIGHUP).
        signal: i32,
    },
}

/// The RayCluster deploy applies, which a config in `rayjob` mode does not have.
fn ray_cluster(artifacts: &Artifacts) -> Option<&str> {
    artifacts.ray_cluster.as_ref().map(|a| a.contents.as_str())
}

/// The whole plan as text (`--dry-run`): every command and Kubernetes object, in order.
/// Reads gcloud's configured project when neither the options nor the config name one.
pub fn plan(deployment: &Deployment, artifacts: &Artifacts, options: &DeployOptions, env: &Env) -> Result<String, LifecycleError> {
    let mut resolved = options.target.resolve(deployment, env, options.download_dependencies)?;
    resolved.site.authorized_cidr = options.authorized_cidr.clone().or_else(|| deployment.network.authorized_cidr.clone());
    let wait = crate::took(options.timeout);
    let helpers = gke_rl_in_cluster::helpers(deployment);
    if deployment.project.existing_cluster {
        // No blueprint, no toolkit, no CIDR: the cluster is someone else's.
        crate::blueprint::check_render(deployment, artifacts, None)?;
        return Ok(lifecycle::deploy_plan(deployment, &resolved.site, ray_cluster(artifacts), &helpers, &wait));
    }
    // What a deploy would refuse, the plan refuses: a render with errors, with the patched
    // blueprint when the toolkit is there (without it, preflight would stop; warned below).
    let blueprint_path = toolkit_blueprint(&resolved.site.toolkit);
    match files::read_text(&blueprint_path) {
        Ok(original) => drop(patch_checked(&blueprint_path, &original, deployment, artifacts)?),
        Err(_) => crate::blueprint::check_render(deployment, artifacts, None)?,
    }
    let plan = lifecycle::deploy_plan(deployment, &resolved.site, ray_cluster(artifacts), &helpers, &wait);
    // The plan is what a real deploy would do: say up front what would stop it.
    let mut warnings = Vec::new();
    if !toolkit_blueprint(&resolved.site.toolkit).is_file() {
        warnings.push(format!(
            "# warning: {} (pass --toolkit DIR): deploy would stop at preflight",
            Problem::NoToolkit { toolkit: resolved.site.toolkit.display().to_string() }
        ));
    }
    if let Some(cidr) = resolved.site.authorized_cidr.as_ref().filter(|c| c.is_wide()) {
        warnings.push(format!("# warning: authorized CIDR {cidr}: {}", Cidr::WIDE_RISK));
    }
    Ok(warnings.into_iter().map(|w| w + "\n").collect::<String>() + &plan)
}

/// Deploys `deployment`, whose render is `artifacts`, resuming after the last completed step.
pub async fn deploy(
    deployment: &Deployment,
    artifacts: &Artifacts,
    options: &DeployOptions,
    env: &Env,
    progress_arc: Arc<dyn Progress>,
) -> Result<Deployed, LifecycleError> {
    let progress: &dyn Progress = &*progress_arc;
    let mut interrupt = env.interrupt.arm()?;
    let mut resolved = options.target.resolve(deployment, env, options.download_dependencies)?;
    let folder = resolved.folder();
    std::fs::create_dir_all(folder).map_err(|source| CommonError::Write { path: folder.to_owned(), source })?;
    let _held = crate::site::lock_folder(folder, "gke-rl deploy")?;
    let mut state = match resolved.load_state()? {
        Some(state) => state,
        None => State::new(deployment, resolved.site.project_id.as_str(), ""),
    };
    let existing_cluster = deployment.project.existing_cluster;
    // A state that passed the check above and ran nothing of gcluster's becomes the existing
    // cluster's for good: what deploy makes there is told apart by it.
    state.existing_cluster |= existing_cluster;
    if !existing_cluster {
        let provisioned = state.done(Step::Provision).then(|| state.authorized_cidr.clone()).flatten();
        let cidr = authorized_cidr(options, deployment, provisioned.as_deref(), progress).await?;
        if cidr.is_wide() {
            progress.lifecycle(LifecycleEvent::WideAuthorizedCidr { cidr: cidr.as_str() });
        }
        if let Some(before) = provisioned.as_deref().filter(|before| *before != cidr.as_str()) {
            progress.lifecycle(LifecycleEvent::AuthorizedCidrChanged { from: before, to: cidr.as_str() });
            state.redo_from(Step::Provision);
        }
        resolved.site.authorized_cidr = Some(cidr);
    }

    let started = env.clock.now();
    progress.lifecycle(LifecycleEvent::StepStarted(Step::Preflight));
    let result = if existing_cluster {
        crate::existing::preflight(env, &resolved, progress).await.map(Some)
    } else {
        preflight(options, env, &mut resolved, &state, progress).await.map(|()| None)
    };
    // Ctrl-C ends preflight's query (the terminal signals its whole group): an interrupt, not a
    // failed check.
    let interrupted = interrupt.is_set_after(result.is_ok()).await;
    if interrupted {
        resolved.save_state(&state)?;
        return Ok(Deployed::Interrupted { step: Step::Preflight, state: resolved.state_path(), signal: interrupt.signal().unwrap_or(2) });
    }
    let found = match result {
        Ok(found) => found,
        Err(error) => {
            let took = env.clock.now() - started;
            return Ok(Deployed::Failed { step: Step::Preflight, took, error, fix: None, state: resolved.state_path() });
        }
    };
    progress.lifecycle(LifecycleEvent::StepDone { step: Step::Preflight, took: env.clock.now() - started });
    state.complete(Step::Preflight);

    // On an existing cluster, from here on the deployment is the one fitted to it, rendered again.
    let fitted = match found {
        Some(fitted) => {
            let options = gke_rl::RenderOptions { source: "the config fitted to the existing cluster", regenerate: "gke-rl deploy" };
            let artifacts = gke_rl::render(&fitted, &options)?;
            crate::blueprint::check_render(&fitted, &artifacts, None)?;
            Some((fitted, artifacts))
        }
        None => None,
    };
    let (deployment, artifacts) = fitted.as_ref().map_or((deployment, artifacts), |(d, a)| (d, a));
    let resolved = Resolved { deployment, site: resolved.site, hidden: resolved.hidden };
    let (blueprint, staged) = if existing_cluster {
        (String::new(), Vec::new())
    } else {
        let blueprint_path = toolkit_blueprint(&resolved.site.toolkit);
        let original = files::read_text(&blueprint_path)?;
        let blueprint = patch_checked(&blueprint_path, &original, deployment, artifacts)?;
        let staged = crate::blueprint::staged_templates(&blueprint_path, &blueprint, deployment)?;
        (blueprint, staged)
    };
    let helpers: Vec<String> = gke_rl_in_cluster::helpers(deployment).into_iter().map(|(_, manifests)| manifests).collect();
    let deployment_file = artifacts.deployment_file.as_ref().map_or("", |a| a.contents.as_str());
    let mut rendered = vec![blueprint.as_str(), deployment_file, ray_cluster(artifacts).unwrap_or_default()];
    rendered.extend(helpers.iter().map(String::as_str));
    // A queue's Kueue configuration, staged from the checkout's, is applied with the cluster.
    let kueue = staged.iter().find(|t| t.name == gke_rl::ArtifactKind::KueueConfiguration.file() && deployment.job.queue.is_some());
    rendered.extend(kueue.map(|t| t.contents.as_str()));
    let digest = lifecycle::digest(&rendered);
    if state.rendered != digest {
        if !state.rendered.is_empty() {
            progress.lifecycle(LifecycleEvent::ConfigChanged);
        }
        state.redo_from(Step::Render);
        state.rendered = digest;
    }
    // The import is looked at each time: it does nothing once its verified record is there.
    if deployment.job.resume_from.is_some() {
        state.completed.retain(|s| *s != Step::Resume);
    }
    if Step::ALL.iter().all(|s| state.done(*s)) && ray_cluster(artifacts).is_none() {
        // No long-lived cluster to look at: each RayJob brings its own.
        return Ok(Deployed::AlreadyDeployed);
    }
    if Step::ALL.iter().all(|s| state.done(*s)) {
        let name = deployment.project.cluster_name.as_str();
        match health(env, &resolved).await {
            Err(error) => return Ok(Deployed::Unchecked { fix: error.common().and_then(|e| resolved.fix(e)), error }),
            Ok(Health::Gone) => {
                progress.lifecycle(LifecycleEvent::RayClusterGone { name });
                state.redo_from(Step::Secret);
            }
            Ok(Health::Ready(ready, wanted)) => return Ok(Deployed::AlreadyReady { ready, wanted }),
            Ok(Health::Waiting(ready, wanted, cluster_state)) => {
                progress.lifecycle(LifecycleEvent::PodsNotAllReady { name, ready, wanted, state: cluster_state });
                state.redo_from(Step::Ready);
            }
        }
    }
    if !state.done(Step::Provision) {
        let what = creates(deployment);
        match progress.confirm(&Question::Create { what: &what }) {
            Ok(true) => {}
            Ok(false) => return Ok(Deployed::Declined),
            Err(reason) => return Err(LifecycleError::Unanswered { question: what, reason }),
        }
    }

    let written = Written { artifacts, blueprint: &blueprint, staged: &staged };
    for step in Step::ALL.into_iter().skip(1) {
        if state.done(step) {
            progress.lifecycle(LifecycleEvent::StepDoneBefore(step));
            continue;
        }
        if step == Step::Resume && deployment.job.resume_from.is_none() {
            state.complete(step);
            resolved.save_state(&state)?;
            continue;
        }
        let started = env.clock.now();
        progress.lifecycle(LifecycleEvent::StepStarted(step));
        let result = run_step(step, options, env, &resolved, &mut state, &written, &mut interrupt, &progress_arc).await;
        let interrupted = interrupt.is_set_after(result.is_ok()).await;
        if interrupted {
            resolved.save_state(&state)?;
            return Ok(Deployed::Interrupted { step, state: resolved.state_path(), signal: interrupt.signal().unwrap_or(2) });
        }
        if let Err(error) = result {
            resolved.save_state(&state)?;
            let took = env.clock.now() - started;
            return Ok(Deployed::Failed {
                step,
                took,
                fix: error.common().and_then(|e| resolved.fix(e)),
                error,
                state: resolved.state_path(),
            });
        }
        state.complete(step);
        resolved.save_state(&state)?;
        progress.lifecycle(LifecycleEvent::StepDone { step, took: env.clock.now() - started });
    }
    Ok(Deployed::Ready)
}

/// The CIDR from the options, the config, the one the cluster was provisioned with, or this
/// machine's public address.
async fn authorized_cidr(
    options: &DeployOptions,
    deployment: &Deployment,
    provisioned: Option<&str>,
    progress: &dyn Progress,
) -> Result<Cidr, LifecycleError> {
    if let Some(cidr) = options.authorized_cidr.as_ref().or(deployment.network.authorized_cidr.as_ref()) {
        return Ok(cidr.clone());
    }
    if let Some(cidr) = provisioned {
        // The state file's record, which deploy wrote from a checked CIDR.
        return Ok(Cidr::new(cidr)?);
    }
    let cidr = host_cidr(public_address(&options.address_echo).await?, &options.address_echo)?;
    progress.lifecycle(LifecycleEvent::AuthorizedCidr { cidr: cidr.as_str(), detected_from: Some(&options.address_echo) });
    Ok(cidr)
}

/// Checks everything it can before anything is created, and reports every problem at once.
async fn preflight(
    options: &DeployOptions,
    env: &Env,
    resolved: &mut Resolved<'_>,
    state: &State,
    progress: &dyn Progress,
) -> Result<(), LifecycleError> {
    let site = &resolved.site;
    let checks = Preflight::new(resolved.deployment, site);
    let mut problems = Vec::new();
    let signed_in = crate::preflight::basics(env, resolved, &checks, progress, &mut problems);
    // Capacity: what gcluster would otherwise find out after 30-60 minutes of building.
    if signed_in {
        problems.extend(capacity(env, resolved, &checks));
    }
    if let Err(reason) = resolved.read(env, &checks.gcluster) {
        problems.push(Problem::NoGcluster { toolkit: site.toolkit.display().to_string(), reason: reason.to_string() });
    }
    for tool in &checks.tools {
        if resolved.read(env, tool).is_err() {
            problems.push(Problem::NoTool { tool: tool.program.clone() });
        }
    }
    if state.done(Step::Provision)
        && let Some(problem) = outside_authorized_cidr(options, site.authorized_cidr.as_ref(), resolved.deployment, progress).await
    {
        // The Kubernetes steps need the control plane, which answers only the authorized CIDR.
        problems.push(problem);
    }
    if !toolkit_blueprint(&site.toolkit).is_file() {
        problems.push(Problem::NoToolkit { toolkit: site.toolkit.display().to_string() });
    }
    if resolved.deployment.lustre.existing {
        // The blueprint creates the instance it mounts.
        problems.push(Problem::ExistingLustreNeedsExistingCluster { instance: resolved.deployment.lustre.instance_id.to_string() });
    }
    let skip = resolved.read(env, &checks.gcsfuse_role).is_err();
    if skip && signed_in {
        progress.lifecycle(LifecycleEvent::GcsfuseValidatorSkipped {
            project: site.project_id.as_str(),
            create_role: &lifecycle::create_gcsfuse_role(site),
        });
    }
    resolved.site.skip_gcsfuse_validator = skip;
    if !problems.is_empty() {
        return Err(LifecycleError::Preflight { problems });
    }
    progress.lifecycle(LifecycleEvent::AuthorizedCidr { cidr: &resolved.site.authorized_cidr_text(), detected_from: None });
    Ok(())
}

/// The GPU quota, the machine type, the RoCE profile and Lustre's location, as gcloud answers
/// about them.
fn capacity(env: &Env, resolved: &Resolved<'_>, checks: &Preflight) -> Vec<Problem> {
    let d = resolved.deployment;
    let (region, zone) = (d.project.region.to_string(), d.project.zone.to_string());
    let mut problems = Vec::new();
    if let Some(metric) = lifecycle::capacity::gpu_quota_metric(d) {
        let needed = lifecycle::capacity::gpus_needed(d);
        match resolved.read(env, &checks.quotas).map_err(|e| e.to_string()).and_then(|json| lifecycle::capacity::find_quota(&json, &metric))
        {
            Ok(quota) => {
                // Quotas are whole numbers; gcloud prints them as floats.
                let (limit, free) = quota.map_or((0, 0), |q| (q.limit as u64, q.free() as u64));
                if free < needed {
                    let project = resolved.site.project_id.to_string();
                    problems.push(Problem::GpuQuota { metric, region, project, limit, free, needed });
                }
            }
            Err(reason) => problems.push(Problem::QuotaUnknown { region, reason }),
        }
    }
    if resolved.read(env, &checks.machine_type).is_err() {
        problems.push(Problem::MachineTypeMissing { machine: d.topology.machine_type.to_string(), zone: zone.clone() });
    }
    if checks.roce_profile.as_ref().is_some_and(|profile| resolved.read(env, profile).is_err()) {
        problems.push(Problem::NoRoceProfile { zone: zone.clone() });
    }
    // Only the location can be told: no gcloud command reports the Lustre capacity quota.
    if let Err(reason) = resolved.read(env, &checks.lustre_location) {
        problems.push(Problem::LustreLocation { zone, reason: reason.to_string() });
    }
    problems
}

/// The problem when this machine's public address is outside `cidr`; `None` when it is
/// inside or cannot be told.
async fn outside_authorized_cidr(options: &DeployOptions, cidr: Option<&Cidr>, d: &Deployment, progress: &dyn Progress) -> Option<Problem> {
    let cidr = cidr?;
    let address = match public_address(&options.address_echo).await {
        Ok(address) => address,
        Err(e) => {
            progress.lifecycle(LifecycleEvent::AddressUnknown { cidr: cidr.as_str(), reason: &e.to_string() });
            return None;
        }
    };
    let std::net::IpAddr::V4(v4) = address else { return None };
    (!cidr.contains(v4)).then(|| Problem::OutsideAuthorizedCidr {
        address: address.to_string(),
        cidr: cidr.to_string(),
        cluster: d.project.cluster_name.to_string(),
    })
}

/// What the question before creating says.
fn creates(d: &Deployment) -> String {
    if d.project.existing_cluster {
        let lustre = match lifecycle::billable(d).first() {
            Some(instance) => format!("create {instance} in {} (it bills until the deployment is destroyed), ", d.project.zone),
            None => String::new(),
        };
        return format!(
            "{lustre}turn on the RayOperator and Lustre CSI add-ons where they are off, and run RayCluster {} on existing cluster {}? Its nodes bill as they do now; gke-rl never deletes the cluster.",
            d.project.cluster_name, d.project.cluster_name
        );
    }
    format!(
        "create {} in {}? They bill {} until the deployment is destroyed.",
        lifecycle::billable(d).join(", "),
        d.project.zone,
        gke_rl::cost::estimate(d).summary()
    )
}

/// How a deployment whose every step completed is doing.
enum Health {
    /// Its RayCluster was deleted behind gke-rl's back.
    Gone,
    /// Ready and wanted pods: all there.
    Ready(u32, u32),
    /// Ready and wanted pods: some are not Ready, and why.
    Waiting(u32, u32, gke_rl_kube::ClusterState),
}

async fn health(env: &Env, resolved: &Resolved<'_>) -> Result<Health, LifecycleError> {
    let d = resolved.deployment;
    let clusters = resolved.clusters(env).await?;
    let name = d.project.cluster_name.as_str();
    if clusters.uid(name).await?.is_none() {
        return Ok(Health::Gone);
    }
    let readiness = clusters.readiness(name, d.topology.node_count.get()).await?;
    let (ready, wanted) = readiness.progress();
    Ok(if readiness.is_ready() { Health::Ready(ready, wanted) } else { Health::Waiting(ready, wanted, readiness.state) })
}

/// The files the render step writes into the deployment folder.
struct Written<'a> {
    artifacts: &'a Artifacts,
    blueprint: &'a str,
    /// The templates the blueprint stages, as read (and, for a queue, staged) once.
    staged: &'a [gke_rl::Artifact],
}

impl Written<'_> {
    fn write(&self, resolved: &Resolved<'_>) -> Result<(), LifecycleError> {
        let folder = resolved.site.folder();
        std::fs::create_dir_all(resolved.folder()).map_err(|source| CommonError::Write { path: resolved.folder().to_owned(), source })?;
        let write = |path: String, contents: &str| files::write_atomically(Path::new(&path), contents.as_bytes(), false);
        // An existing cluster has neither, but what deploy found there, for the other commands.
        if let Some(deployment_file) = &self.artifacts.deployment_file {
            write(folder.blueprint(), self.blueprint)?;
            write(folder.deployment_file(), &deployment_file.contents)?;
        } else {
            let found = lifecycle::existing::Found::of(resolved.deployment);
            write(folder.template(lifecycle::existing::FOUND_FILE), &found.to_json())?;
        }
        match ray_cluster(self.artifacts) {
            Some(manifest) => write(folder.ray_cluster(), manifest)?,
            // An earlier deploy in cluster mode wrote one; this deploy applies none.
            None => match std::fs::remove_file(folder.ray_cluster()) {
                Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                    return Err(CommonError::Write { path: folder.ray_cluster().into(), source }.into());
                }
                _ => {}
            },
        }
        for template in self.staged {
            write(folder.template(template.name), &template.contents)?;
        }
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)] // one step's whole context
async fn run_step(
    step: Step,
    options: &DeployOptions,
    env: &Env,
    resolved: &Resolved<'_>,
    state: &mut State,
    written: &Written<'_>,
    interrupt: &mut crate::env::Armed,
    progress_arc: &Arc<dyn Progress>,
) -> Result<(), LifecycleError> {
    let progress: &dyn Progress = &**progress_arc;
    let d = resolved.deployment;
    let site = &resolved.site;
    match step {
        Step::Preflight => Ok(()),
        Step::Render => written.write(resolved),
        Step::Provision if d.project.existing_cluster => crate::existing::provision(env, resolved, state, progress),
        Step::Provision => {
            if !resolved.stream(env, progress, &lifecycle::provision(site)) {
                return Err(LifecycleError::CommandFailed { what: "gcluster deploy".into() });
            }
            state.created.cluster = Some(d.project.cluster_name.to_string());
            state.created.lustre_instance = Some(d.lustre.instance_id.to_string());
            state.authorized_cidr = site.authorized_cidr.as_ref().map(ToString::to_string);
            state.toolkit = Some(site.toolkit.display().to_string());
            Ok(())
        }
        Step::Credentials => {
            if !resolved.stream(env, progress, &lifecycle::credentials(d, site.project_id.as_str())) {
                return Err(LifecycleError::CommandFailed { what: "gcloud container clusters get-credentials".into() });
            }
            Ok(())
        }
        Step::Secret => {
            let mut entries = Vec::new();
            for (key, variable, required) in lifecycle::secret_entries(d) {
                match env.var(variable) {
                    Some(value) => entries.push((key, value)),
                    None if required => return Err(LifecycleError::SecretUnset(variable.to_owned())),
                    None => {}
                }
            }
            let entries: Vec<(&str, &str)> = entries.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let clusters = resolved.clusters(env).await?;
            clusters.apply_namespace().await?;
            clusters.apply_secret(d.secrets.kubernetes_secret.as_str(), &entries).await?;
            let keys: Vec<&str> = entries.iter().map(|(k, _)| *k).collect();
            progress.lifecycle(LifecycleEvent::SecretApplied {
                namespace: d.ray.namespace.as_str(),
                name: d.secrets.kubernetes_secret.as_str(),
                keys: &keys,
            });
            // The cluster's token: Ray's where it uses tokens, and the run key in any case.
            {
                let name = gke_rl::auth::secret_name(d);
                let created = clusters.create_secret_unless_present(&name, gke_rl::auth::TOKEN_KEY, &new_ray_token()?).await?;
                // A Secret of that name without a token would keep the pods from starting.
                let holds_token =
                    created || clusters.secret_value(&name, gke_rl::auth::TOKEN_KEY).await?.is_some_and(|t| !t.trim().is_empty());
                if !holds_token {
                    return Err(CommonError::NoRayToken {
                        cluster: d.project.cluster_name.to_string(),
                        namespace: d.ray.namespace.to_string(),
                        secret: name,
                    }
                    .into());
                }
                progress.lifecycle(LifecycleEvent::RayTokenSecret { namespace: d.ray.namespace.as_str(), name: &name, created });
            }
            state.created.namespace = Some(d.ray.namespace.to_string());
            state.created.secret = Some(d.secrets.kubernetes_secret.to_string());
            Ok(())
        }
        Step::RayCluster => {
            let clusters = resolved.clusters(env).await?;
            let namespace = d.ray.namespace.as_str();
            if d.project.existing_cluster {
                // A RayCluster of that name that gke-rl did not apply is someone else's: never
                // taken over (and so never deleted by destroy).
                let cluster = d.project.cluster_name.as_str();
                if clusters.managed_by_gke_rl(cluster).await? == Some(false) {
                    return Err(LifecycleError::ForeignRayCluster { namespace: namespace.to_owned(), name: cluster.to_owned() });
                }
                // The instance, by the address and file system it has now, as a static volume,
                // recorded first: a claim that fails leaves a volume destroy must find.
                let instance = crate::existing::instance(env, resolved)?;
                let volume = lifecycle::existing::lustre_volume(d, site.project_id.as_str(), &instance);
                // A claim or volume of those names that gke-rl did not apply (the codelab's
                // template makes `lustre-pvc`) is someone else's: never taken over, nor deleted.
                let foreign = clusters.unmanaged(&volume).await?;
                if !foreign.is_empty() {
                    let objects = foreign.iter().map(|(kind, name)| format!("{kind} {name}")).collect::<Vec<_>>().join(" and ");
                    return Err(LifecycleError::ForeignVolume { objects });
                }
                state.created.volume = Some(lifecycle::existing::persistent_volume(d));
                let applied = clusters.apply_all(&volume).await?;
                progress.lifecycle(LifecycleEvent::HelperApplied { what: "Lustre volume", namespace, objects: &applied });
            }
            // The NetworkPolicy first, so that no pod of a Ray without tokens starts open.
            if let Some(policy) = &written.artifacts.network_policy {
                let applied = clusters.apply_all(&policy.contents).await?;
                progress.lifecycle(LifecycleEvent::HelperApplied { what: "network policy", namespace, objects: &applied });
            }
            let cluster = d.project.cluster_name.as_str();
            let token_auth = d.ray.token_auth()?;
            let Some(manifest) = ray_cluster(written.artifacts) else {
                // RayJob mode: the RayCluster an earlier deploy in cluster mode made (that one,
                // by its uid) would hold the GPU nodes for nothing.
                if let Some(uid) = state.created.ray_cluster_uid.clone() {
                    if clusters.uid(cluster).await?.as_deref() == Some(uid.as_str()) && clusters.delete(cluster).await? {
                        progress.lifecycle(LifecycleEvent::Deleted { kind: "RayCluster", namespace, name: cluster });
                    }
                    state.created.ray_cluster_uid = None;
                }
                // And the helpers cluster mode applies, which look after that cluster.
                for (what, manifests) in gke_rl_in_cluster::every_helper(d) {
                    let objects = clusters.delete_all(&manifests).await?;
                    if !objects.is_empty() {
                        progress.lifecycle(LifecycleEvent::HelperDeleted { what, namespace, objects: &objects });
                    }
                }
                if token_auth {
                    delete_open_policy(&clusters, d, progress).await?;
                }
                return Ok(());
            };
            // Kueue moves no running cluster between queues (its webhook refuses the label's
            // change), and one taken out of its queue would keep its quota: it is made again.
            if let Some(was) = clusters.queue_label(cluster).await?
                && was.as_deref() != d.job.queue.as_ref().map(|q| q.as_str())
            {
                return Err(LifecycleError::QueueChanged {
                    cluster: cluster.to_owned(),
                    namespace: namespace.to_owned(),
                    was,
                    now: d.job.queue.as_ref().map(ToString::to_string),
                });
            }
            // Whether pods already run without the tokens this apply turns on.
            let ran_open = token_auth && clusters.uid(cluster).await?.is_some() && clusters.token_secret(cluster).await?.is_none();
            let (name, uid) = clusters.apply(manifest).await?;
            progress.lifecycle(LifecycleEvent::RayClusterApplied { namespace, name: &name, uid: &uid });
            state.created.ray_cluster_uid = Some(uid);
            if token_auth {
                // An operator whose CRD predates authOptions (KubeRay before 1.5.1) drops the
                // field without a word, and the pods would start without tokens.
                if clusters.token_secret(&name).await?.is_none() {
                    return Err(LifecycleError::TokenAuthDropped { namespace: namespace.to_owned(), name });
                }
                if ran_open {
                    progress.lifecycle(LifecycleEvent::PodsWithoutToken { namespace, name: &name });
                }
                delete_open_policy(&clusters, d, progress).await?;
            }
            for (what, manifests) in gke_rl_in_cluster::helpers(d) {
                let applied = clusters.apply_all(&manifests).await?;
                progress.lifecycle(LifecycleEvent::HelperApplied { what, namespace: d.ray.namespace.as_str(), objects: &applied });
            }
            Ok(())
        }
        // RayJob mode: nothing runs until a RayJob does.
        Step::Ready if ray_cluster(written.artifacts).is_none() => Ok(()),
        Step::Ready => wait_ready(options, env, resolved, interrupt, progress).await,
        Step::Resume => match &d.job.resume_from {
            Some(uri) => crate::keep::import(resolved, state, uri, env, progress_arc.clone(), interrupt.clone()).await,
            None => Ok(()),
        },
    }
}

/// Deletes the NetworkPolicy an earlier deploy made for a Ray without tokens, which would keep
/// out the token's other holders.
async fn delete_open_policy(clusters: &gke_rl_kube::Namespaced, d: &Deployment, progress: &dyn Progress) -> Result<(), LifecycleError> {
    let policy = gke_rl::auth::network_policy_name(d);
    if clusters.delete_network_policy(&policy).await? {
        progress.lifecycle(LifecycleEvent::Deleted { kind: "NetworkPolicy", namespace: d.ray.namespace.as_str(), name: &policy });
    }
    Ok(())
}

/// A new Ray token: 32 bytes from the operating system's generator, in hex (as Ray's own
/// `ray get-auth-token --generate` makes them). It lives in memory until it is in the Secret.
fn new_ray_token() -> Result<String, LifecycleError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| CommonError::Local { what: "cannot draw a random Ray token".into(), source: std::io::Error::other(e.to_string()) })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Waits for the pods, reporting progress and every new reason a pod is not Ready.
async fn wait_ready(
    options: &DeployOptions,
    env: &Env,
    resolved: &Resolved<'_>,
    interrupt: &mut crate::env::Armed,
    progress: &dyn Progress,
) -> Result<(), LifecycleError> {
    let d = resolved.deployment;
    let clusters = resolved.clusters(env).await?;
    let wait = Wait { timeout: options.timeout, poll: env.poll };
    let workers = d.topology.node_count.get();
    let waited = tokio::select! {
        result = clusters.wait_ready(d.project.cluster_name.as_str(), workers, wait, crate::events::pod_reporter(progress)) => result,
        () = interrupt.wait() => return Ok(()),
    };
    match waited {
        Ok(_) => Ok(()),
        Err(source @ gke_rl_kube::Error::NotReady { .. }) => match &source {
            gke_rl_kube::Error::NotReady { readiness, .. } if readiness.waits_for_capacity() => {
                let (cause, inspect) = no_capacity(d, resolved.site.project_id.as_str());
                Err(LifecycleError::NoCapacity { source: Box::new(source), cause, inspect })
            }
            _ => Err(source.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// Why GPU nodes do not come, and the command that shows their node pool.
fn no_capacity(d: &Deployment, project_id: &str) -> (String, gke_rl::lifecycle::Command) {
    let p = &d.project;
    let cause = match &d.topology.provisioning {
        Provisioning::Spot => format!("Spot capacity for {} in {} is likely exhausted (a stock-out)", d.topology.machine_type, p.zone),
        Provisioning::Reservation(name) => format!("reservation {name} may have no free {} capacity", d.topology.machine_type),
        Provisioning::FlexStart => {
            format!("flex-start has not obtained {} × {} in {} yet", d.topology.node_count, d.topology.machine_type, p.zone)
        }
        Provisioning::OnDemand => format!("on-demand capacity or quota for {} in {} may be short", d.topology.machine_type, p.zone),
    };
    (cause, lifecycle::describe_node_pool(d, project_id))
}
