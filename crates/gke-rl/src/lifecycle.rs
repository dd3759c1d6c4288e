//! The cluster lifecycle as data: every command `deploy` and `destroy` run, every object they
//! apply, in order, and the state file that lets an interrupted run resume. Pure, like the rest
//! of the SDK: `xtask` runs the plan, `--dry-run` prints it, tests snapshot it.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use crate::model::{Deployment, Provisioning};
use crate::quote;
use crate::render::{HF_TOKEN_KEY, WANDB_API_KEY_KEY};

/// The gcluster validator that needs a custom IAM role fresh projects lack.
pub const GCSFUSE_VALIDATOR: &str = "test_gcsfuse_iam_role_exists";
/// The custom role that validator looks for.
pub const GCSFUSE_ROLE: &str = "gke.gcsfuse.profileUser";
/// APIs the patched blueprint needs (gcluster's `test_apis_enabled` and the Lustre modules).
pub const REQUIRED_APIS: &[&str] = &[
    "compute.googleapis.com",
    "container.googleapis.com",
    "iam.googleapis.com",
    "lustre.googleapis.com",
    "servicenetworking.googleapis.com",
    "storage.googleapis.com",
];
/// The credential plugin every GKE kubeconfig runs (`gcloud container clusters get-credentials`).
pub const AUTH_PLUGIN: &str = "gke-gcloud-auth-plugin";
/// How to install [`AUTH_PLUGIN`].
pub const INSTALL_AUTH_PLUGIN: &str = "gcloud components install gke-gcloud-auth-plugin (where gcloud came from apt: sudo apt-get install google-cloud-cli-gke-gcloud-auth-plugin)";
/// Where a Cluster Toolkit checkout keeps the blueprint and the templates it stages.
pub const TOOLKIT_EXAMPLE: &str = "examples/gke-a4";
/// Files the blueprint stages with `$(ghpc_stage("./…"))`, copied beside the patched blueprint.
pub const STAGED_TEMPLATES: &[&str] = &["kueue-configuration.yaml.tftpl", "nccl-installer.yaml.tftpl"];

/// What the plan needs to know about this machine and the project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// Google Cloud project id.
    pub project_id: String,
    /// CIDR allowed to reach the control plane.
    pub authorized_cidr: String,
    /// Cluster Toolkit checkout.
    pub toolkit: String,
    /// The gcluster program (the checkout's `./gcluster`, or `gcluster` on PATH).
    pub gcluster: String,
    /// gke-rl's deployment folder: the state file, the patched blueprint, and gcluster's folder.
    pub folder: String,
    /// Let gcluster download Terraform and Packer.
    pub download_dependencies: bool,
    /// Skip gcluster's GCS-Fuse role validator (the role does not exist in the project).
    pub skip_gcsfuse_validator: bool,
}

/// A program and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// Program name or path.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Working directory, when it matters.
    pub dir: Option<String>,
}

impl Command {
    fn of(program: &str, args: &[&str]) -> Self {
        Command { program: program.to_owned(), args: args.iter().map(|a| (*a).to_owned()).collect(), dir: None }
    }

    fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    fn in_dir(mut self, dir: &str) -> Self {
        self.dir = Some(dir.to_owned());
        self
    }
}

impl fmt::Display for Command {
    /// As a shell line to paste: `(cd DIR && program args…)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line =
            std::iter::once(self.program.as_str()).chain(self.args.iter().map(String::as_str)).map(quote::sh).collect::<Vec<_>>().join(" ");
        match &self.dir {
            Some(dir) => write!(f, "(cd {} && {line})", quote::sh(dir)),
            None => f.write_str(&line),
        }
    }
}

/// The steps of `deploy`, in order; the state file records the completed ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// Checks that change nothing.
    Preflight,
    /// Render, validate, patch the blueprint into the folder.
    Render,
    /// `gcluster deploy`: network, cluster, node pool, Lustre, PVC.
    Provision,
    /// kubeconfig for the new cluster.
    Credentials,
    /// The token Secret.
    Secret,
    /// The RayCluster.
    RayCluster,
    /// Until every pod is Running and Ready.
    Ready,
}

impl Step {
    /// Every step, in order.
    pub const ALL: [Step; 7] =
        [Step::Preflight, Step::Render, Step::Provision, Step::Credentials, Step::Secret, Step::RayCluster, Step::Ready];

    /// What the step does, for progress lines.
    pub fn title(self) -> &'static str {
        match self {
            Step::Preflight => "preflight",
            Step::Render => "render, validate and patch the blueprint",
            Step::Provision => "provision with gcluster (network, GKE, A4 nodes, Managed Lustre; 30-60 min)",
            Step::Credentials => "cluster credentials",
            Step::Secret => "token Secret",
            Step::RayCluster => "RayCluster",
            Step::Ready => "wait for every Ray pod to be Ready",
        }
    }
}

/// Paths inside the deployment folder.
pub struct Folder<'a>(pub &'a str);

impl Folder<'_> {
    /// The state file.
    pub fn state(&self) -> String {
        format!("{}/state.json", self.0)
    }

    /// The patched blueprint.
    pub fn blueprint(&self) -> String {
        format!("{}/gke-a4.yaml", self.0)
    }

    /// The gcluster deployment file.
    pub fn deployment_file(&self) -> String {
        format!("{}/gke-a4-deployment.yaml", self.0)
    }

    /// The RayCluster manifest.
    pub fn ray_cluster(&self) -> String {
        format!("{}/ray-cluster.yaml", self.0)
    }

    /// A template the blueprint stages, copied beside it.
    pub fn template(&self, name: &str) -> String {
        format!("{}/{name}", self.0)
    }

    /// gcluster's deployment folder (`-o FOLDER` makes `FOLDER/<deployment_name>`).
    pub fn gcluster(&self, deployment: &Deployment) -> String {
        format!("{}/{}", self.0, deployment.project.cluster_name)
    }
}

/// The token Secret's entries: key in the Secret, local variable it is read from, required.
pub fn secret_entries(deployment: &Deployment) -> Vec<(&'static str, &str, bool)> {
    let secrets = &deployment.secrets;
    let mut entries = vec![(HF_TOKEN_KEY, secrets.hf_token_env.as_str(), true)];
    if let Some(wandb) = &secrets.wandb_api_key_env {
        entries.push((WANDB_API_KEY_KEY, wandb.as_str(), false));
    }
    entries
}

/// The read-only checks `deploy` starts with.
pub struct Preflight {
    /// An active gcloud account.
    pub account: Command,
    /// The project's enabled APIs.
    pub apis: Command,
    /// The custom role gcluster's GCS-Fuse validator needs.
    pub gcsfuse_role: Command,
    /// gcluster.
    pub gcluster: Command,
    /// Terraform and Packer, which gcluster needs (unless it downloads them).
    pub tools: Vec<Command>,
    /// The credential plugin the kubeconfig of a GKE cluster runs.
    pub auth_plugin: Command,
}

impl Preflight {
    /// The checks for `site`.
    pub fn new(site: &Site) -> Self {
        let project = site.project_id.as_str();
        let tools = if site.download_dependencies {
            Vec::new()
        } else {
            vec![Command::of("terraform", &["version"]), Command::of("packer", &["version"])]
        };
        Preflight {
            account: Command::of("gcloud", &["auth", "list", "--filter=status:ACTIVE", "--format=value(account)"]),
            apis: Command::of("gcloud", &["services", "list", "--enabled", "--project", project, "--format=value(config.name)"]),
            gcsfuse_role: Command::of("gcloud", &["iam", "roles", "describe", GCSFUSE_ROLE, "--project", project, "--format=value(name)"]),
            gcluster: Command::of(&site.gcluster, &["--version"]).in_dir(&site.toolkit),
            tools,
            auth_plugin: Command::of(AUTH_PLUGIN, &["--version"]),
        }
    }

    /// Every check, with what it answers.
    pub fn all(&self) -> Vec<(&'static str, &Command)> {
        let mut all = vec![
            ("an active gcloud account", &self.account),
            ("the enabled APIs", &self.apis),
            ("the GCS-Fuse profile role (missing: gcluster's validator is skipped)", &self.gcsfuse_role),
            ("gcluster", &self.gcluster),
        ];
        all.extend(self.tools.iter().map(|tool| ("gcluster needs it", tool)));
        all.push(("the kubeconfig of a GKE cluster runs it", &self.auth_plugin));
        all
    }
}

/// The exact command that enables `missing` APIs.
pub fn enable_apis(missing: &[&str], site: &Site) -> Command {
    let mut command = Command::of("gcloud", &["services", "enable"]);
    command.args.extend(missing.iter().map(|api| (*api).to_owned()));
    command.arg("--project").arg(site.project_id.clone())
}

/// The commands that create the GCS-Fuse role gcluster's validator looks for, and bind it to
/// the GKE service agent (`modules/file-system/gke-persistent-volume/README.md`).
pub fn create_gcsfuse_role(site: &Site) -> Command {
    Command::of(
        "gcloud",
        &[
            "iam",
            "roles",
            "create",
            GCSFUSE_ROLE,
            "--project",
            &site.project_id,
            "--title=GKE GCSFuse Profile User",
            "--permissions=storage.objects.list,storage.buckets.get,storage.anywhereCaches.create,storage.anywhereCaches.get,storage.anywhereCaches.list,storage.anywhereCaches.update",
        ],
    )
}

/// `gcluster deploy` of the patched blueprint, non-interactive (its prompt's "(S)top" exits 0).
pub fn provision(site: &Site) -> Command {
    let folder = Folder(&site.folder);
    let vars = format!("project_id={},authorized_cidr={}", site.project_id, site.authorized_cidr);
    let mut command = Command::of(&site.gcluster, &["deploy", &folder.blueprint(), "-d", &folder.deployment_file(), "--vars", &vars])
        .arg("-o")
        .arg(site.folder.clone())
        .arg("-w")
        .arg("--auto-approve");
    if site.download_dependencies {
        command = command.arg("--download-dependencies");
    }
    if site.skip_gcsfuse_validator {
        command = command.arg("--skip-validators").arg(GCSFUSE_VALIDATOR);
    }
    command.in_dir(&site.toolkit)
}

/// kubeconfig credentials for the cluster in `project_id`.
pub fn credentials(deployment: &Deployment, project_id: &str) -> Command {
    let p = &deployment.project;
    Command::of(
        "gcloud",
        &["container", "clusters", "get-credentials", p.cluster_name.as_str(), "--region", p.region.as_str(), "--project", project_id],
    )
}

/// The kubeconfig context `get-credentials` writes for the cluster: deploy and destroy use it
/// whatever the current context is.
pub fn kube_context(deployment: &Deployment, site: &Site) -> String {
    let p = &deployment.project;
    format!("gke_{}_{}_{}", site.project_id, p.region, p.cluster_name)
}

/// The blueprint's buckets (Cluster Toolkit labels every resource with its deployment).
pub fn list_buckets(deployment: &Deployment, site: &Site) -> Command {
    let filter = format!("labels.ghpc_deployment={}", deployment.project.cluster_name);
    Command::of("gcloud", &["storage", "buckets", "list", "--project", &site.project_id, "--filter", &filter, "--format=value(name)"])
}

/// The objects of a bucket (`force_destroy: false`: a non-empty bucket fails the destroy).
pub fn list_objects(bucket: &str) -> Command {
    Command::of("gcloud", &["storage", "ls", "--recursive", &format!("gs://{bucket}/**")])
}

/// Deletes every object of a bucket, keeping the bucket for Terraform to delete.
pub fn empty_bucket(bucket: &str) -> Command {
    Command::of("gcloud", &["storage", "rm", "--recursive", "--all-versions", &format!("gs://{bucket}/**")])
}

/// `gcluster destroy` of gcluster's folder, non-interactive.
pub fn teardown(deployment: &Deployment, site: &Site) -> Command {
    Command::of(&site.gcluster, &["destroy", &Folder(&site.folder).gcluster(deployment), "--auto-approve"]).in_dir(&site.toolkit)
}

/// Commands that succeed while a billable resource still exists: (what, command).
pub fn leftovers(deployment: &Deployment, site: &Site) -> Vec<(String, Command)> {
    let p = &deployment.project;
    let cluster = p.cluster_name.as_str();
    let lustre = deployment.lustre.instance_id.as_str();
    vec![
        (
            format!("GKE cluster {cluster}"),
            Command::of(
                "gcloud",
                &[
                    "container",
                    "clusters",
                    "describe",
                    cluster,
                    "--region",
                    p.region.as_str(),
                    "--project",
                    &site.project_id,
                    "--format=value(name)",
                ],
            ),
        ),
        (
            format!("Managed Lustre instance {lustre}"),
            Command::of(
                "gcloud",
                &[
                    "lustre",
                    "instances",
                    "describe",
                    lustre,
                    "--location",
                    p.zone.as_str(),
                    "--project",
                    &site.project_id,
                    "--format=value(name)",
                ],
            ),
        ),
    ]
}

/// The record of a deployment, kept in its folder as `state.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Format version.
    pub version: u32,
    /// Project the resources live in.
    pub project_id: String,
    /// gcluster deployment, GKE cluster and RayCluster name.
    pub deployment: String,
    /// Region of the cluster.
    pub region: String,
    /// Zone of the nodes and the Lustre instance.
    pub zone: String,
    /// A digest of what was rendered; another digest re-runs the steps from `render`.
    pub rendered: String,
    /// Completed steps.
    pub completed: Vec<Step>,
    /// The CIDR the control plane accepts, as the last completed provision set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorized_cidr: Option<String>,
    /// What exists because of this deployment.
    pub created: Created,
}

/// Resources a deployment created, as far as gke-rl knows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Created {
    /// GKE cluster (once `provision` completed).
    pub cluster: Option<String>,
    /// Managed Lustre instance (once `provision` completed).
    pub lustre_instance: Option<String>,
    /// Namespace of the RayCluster and the Secret.
    pub namespace: Option<String>,
    /// The token Secret.
    pub secret: Option<String>,
    /// The RayCluster's uid.
    pub ray_cluster_uid: Option<String>,
}

impl State {
    /// A fresh state for `deployment` in `project_id`.
    pub fn new(deployment: &Deployment, project_id: &str, rendered: &str) -> Self {
        let p = &deployment.project;
        State {
            version: 1,
            project_id: project_id.to_owned(),
            deployment: p.cluster_name.to_string(),
            region: p.region.to_string(),
            zone: p.zone.to_string(),
            rendered: rendered.to_owned(),
            ..State::default()
        }
    }

    /// Whether `step` completed.
    pub fn done(&self, step: Step) -> bool {
        self.completed.contains(&step)
    }

    /// Records `step` as completed.
    pub fn complete(&mut self, step: Step) {
        if !self.done(step) {
            self.completed.push(step);
            self.completed.sort();
        }
    }

    /// Forgets the steps from `step` on (their inputs changed).
    pub fn redo_from(&mut self, step: Step) {
        self.completed.retain(|s| *s < step);
    }

    /// Why this state cannot be acted on with `deployment` in `project_id`, if it cannot.
    pub fn mismatch(&self, deployment: &Deployment, project_id: &str) -> Option<String> {
        let p = &deployment.project;
        let theirs = (self.project_id.as_str(), self.deployment.as_str(), self.region.as_str(), self.zone.as_str());
        let ours = (project_id, p.cluster_name.as_str(), p.region.as_str(), p.zone.as_str());
        (theirs != ours).then(|| {
            format!(
                "the state file belongs to deployment {} in project {} ({} / {}), but the config is for {} in {} ({} / {})",
                theirs.1, theirs.0, theirs.2, theirs.3, ours.1, ours.0, ours.2, ours.3
            )
        })
    }

    /// Parses a state file.
    pub fn from_json(text: &str) -> Result<State, String> {
        serde_json::from_str(text).map_err(|e| format!("not a gke-rl state file: {e}"))
    }

    /// The state file's contents.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a state serializes") + "\n"
    }
}

/// A digest of the rendered artifacts and the patched blueprint (FNV-1a: it detects change,
/// it is not a security boundary).
pub fn digest(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0]) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// The whole `deploy` plan as text: every command with its arguments and every object, with
/// secret values shown as the variable they come from.
pub fn deploy_plan(deployment: &Deployment, site: &Site, ray_cluster: &str, wait: &str) -> String {
    let p = &deployment.project;
    let folder = Folder(&site.folder);
    let mut out = format!(
        "deploy {} in project {} ({} / {}); state and files in {}\n",
        p.cluster_name, site.project_id, p.region, p.zone, site.folder
    );
    let mut step = |s: Step, lines: &[String]| {
        let _ = write!(out, "\n{}. {}\n", Step::ALL.iter().position(|x| *x == s).unwrap_or_default() + 1, s.title());
        for line in lines {
            for (i, text) in line.lines().enumerate() {
                let _ = writeln!(out, "   {}{text}", if i == 0 { "" } else { "  " });
            }
        }
    };
    let mut checks: Vec<String> = Preflight::new(site).all().into_iter().map(|(what, c)| format!("$ {c}    # {what}")).collect();
    checks.push(format!("check that {} are enabled", REQUIRED_APIS.join(", ")));
    for (_, variable, required) in secret_entries(deployment) {
        checks.push(format!("check that ${variable} is set{}", if required { "" } else { " (optional)" }));
    }
    step(Step::Preflight, &checks);
    let toolkit_example = format!("{}/{TOOLKIT_EXAMPLE}", site.toolkit);
    let mut render = vec![
        "render the artifacts and validate them with the patched blueprint (refuse on errors)".to_owned(),
        format!("write {} (patched from {toolkit_example}/gke-a4.yaml)", folder.blueprint()),
        format!("write {}", folder.deployment_file()),
        format!("write {}", folder.ray_cluster()),
    ];
    render.extend(STAGED_TEMPLATES.iter().map(|t| format!("copy {toolkit_example}/{t} to {}", folder.template(t))));
    step(Step::Render, &render);
    step(Step::Provision, &[format!("$ {}", provision(site))]);
    step(Step::Credentials, &[format!("$ {}", credentials(deployment, &site.project_id))]);
    let secret: Vec<String> = secret_entries(deployment)
        .into_iter()
        .map(|(key, variable, required)| format!("{key}: <the value of ${variable}{}>", if required { "" } else { ", if set" }))
        .collect();
    step(
        Step::Secret,
        &[format!(
            "server-side apply (field manager gke-rl) Secret {}/{}, type Opaque, data:\n{}",
            deployment.ray.namespace,
            deployment.secrets.kubernetes_secret,
            secret.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
        )],
    );
    let manifest: String = ray_cluster.lines().filter(|l| !l.starts_with("# Generated by")).map(|l| format!("  {l}\n")).collect();
    step(Step::RayCluster, &[format!("server-side apply (field manager gke-rl):\n{}", manifest.trim_end())]);
    let workers = deployment.topology.node_count;
    step(
        Step::Ready,
        &[format!(
            "wait up to {wait} for the head and {workers} workers of RayCluster {} to be Running and Ready{}",
            p.cluster_name,
            match deployment.topology.provisioning {
                Provisioning::Spot => " (Spot: capacity may be short)",
                Provisioning::Reservation(_) => "",
            }
        )],
    );
    out
}

/// The whole `destroy` plan as text.
pub fn destroy_plan(deployment: &Deployment, site: &Site, state: &State) -> String {
    let p = &deployment.project;
    let mut out = format!("destroy {} in project {} ({} / {})\n", p.cluster_name, site.project_id, p.region, p.zone);
    let mut lines = Vec::new();
    if state.done(Step::Credentials) {
        lines.push(format!("$ {}", credentials(deployment, &site.project_id)));
        lines.push(format!(
            "delete RayCluster {ns}/{} and Secret {ns}/{}; wait for the pods to go",
            p.cluster_name,
            deployment.secrets.kubernetes_secret,
            ns = deployment.ray.namespace
        ));
    }
    if state.done(Step::Provision) || state.done(Step::Render) {
        lines.push(format!("$ {}", list_buckets(deployment, site)));
        lines.push(format!("for each bucket B that holds objects: $ {}", empty_bucket("B")));
        lines.push(format!("$ {}", teardown(deployment, site)));
    }
    for (what, command) in leftovers(deployment, site) {
        lines.push(format!("verify that {what} is gone: $ {command}"));
    }
    for line in lines {
        let _ = writeln!(out, "   {line}");
    }
    out
}
