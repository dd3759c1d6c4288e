//! Every gcloud and gcluster command deploy and destroy run, built from the model and a [`Site`].

use std::fmt;

use super::{AUTH_PLUGIN, GCSFUSE_ROLE, GCSFUSE_VALIDATOR, Site};
use crate::model::Deployment;
use crate::quote;

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
    pub(super) fn of(program: &str, args: &[&str]) -> Self {
        Command { program: program.to_owned(), args: args.iter().map(|a| (*a).to_owned()).collect(), dir: None }
    }

    pub(super) fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    fn in_dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        self.dir = Some(dir.as_ref().display().to_string());
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
    /// The region's quotas, for the GPU quota.
    pub quotas: Command,
    /// The GPU machine type, which the zone must offer.
    pub machine_type: Command,
    /// The zone's RoCE network profile, which the RDMA network needs (wired fabrics only).
    pub roce_profile: Option<Command>,
    /// The zone's Managed Lustre instances: the Lustre API refuses a zone it does not serve.
    pub lustre_location: Command,
}

impl Preflight {
    /// The checks for `deployment` at `site`.
    pub fn new(deployment: &Deployment, site: &Site) -> Self {
        let project = site.project_id.as_str();
        let (region, zone) = (deployment.project.region.as_str(), deployment.project.zone.as_str());
        let machine = deployment.topology.machine_type.as_str();
        let wired = deployment.wired_fabric().ok().flatten().is_some();
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
            quotas: Command::of("gcloud", &["compute", "regions", "describe", region, "--project", project, "--format=json(quotas)"]),
            machine_type: Command::of(
                "gcloud",
                &["compute", "machine-types", "describe", machine, "--zone", zone, "--project", project, "--format=value(name)"],
            ),
            lustre_location: Command::of(
                "gcloud",
                &["lustre", "instances", "list", "--location", zone, "--project", project, "--format=value(name)"],
            ),
            roce_profile: wired.then(|| {
                let profile = format!("{zone}-vpc-roce");
                Command::of("gcloud", &["compute", "network-profiles", "describe", &profile, "--project", project, "--format=value(name)"])
            }),
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
        all.push(("the region's GPU quota, against the nodes' GPUs", &self.quotas));
        all.push(("the zone offers the machine type", &self.machine_type));
        if let Some(profile) = &self.roce_profile {
            all.push(("the zone's RoCE network profile, for the RDMA network", profile));
        }
        all.push(("Managed Lustre serves the zone", &self.lustre_location));
        all
    }
}

/// An access token for gcloud's logged-in account, on stdout: for Cloud Monitoring.
pub fn access_token() -> Command {
    Command::of("gcloud", &["auth", "print-access-token"])
}

/// gcloud's configured project, when the config and the options name none.
pub fn configured_project() -> Command {
    Command::of("gcloud", &["config", "get-value", "project"])
}

/// The exact command that enables `missing` APIs.
pub fn enable_apis(missing: &[&str], site: &Site) -> Command {
    let mut command = Command::of("gcloud", &["services", "enable"]);
    command.args.extend(missing.iter().map(|api| (*api).to_owned()));
    command.arg("--project").arg(site.project_id.to_string())
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
            site.project_id.as_str(),
            "--title=GKE GCSFuse Profile User",
            "--permissions=storage.objects.list,storage.buckets.get,storage.anywhereCaches.create,storage.anywhereCaches.get,storage.anywhereCaches.list,storage.anywhereCaches.update",
        ],
    )
}

/// `gcluster deploy` of the patched blueprint, non-interactive (its prompt's "(S)top" exits 0).
/// A site without its authorized CIDR yet shows the placeholder: the dry run's plan; deploy
/// sets the CIDR before it runs this.
pub fn provision(site: &Site) -> Command {
    let folder = site.folder();
    let vars = format!("project_id={},authorized_cidr={}", site.project_id, site.authorized_cidr_text());
    let mut command = Command::of(&site.gcluster, &["deploy", &folder.blueprint(), "-d", &folder.deployment_file(), "--vars", &vars])
        .arg("-o")
        .arg(site.folder.display().to_string())
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

/// Describes the GPU node pool: why nodes do not come (a stock-out, a reservation without room).
pub fn describe_node_pool(deployment: &Deployment, project_id: &str) -> Command {
    let p = &deployment.project;
    // The blueprint's pool, or the one deploy found on a cluster gke-rl did not create.
    let pool =
        deployment.topology.pool.as_ref().map_or_else(|| format!("{}-a4-pool", deployment.topology.machine_type), ToString::to_string);
    Command::of(
        "gcloud",
        &[
            "container",
            "node-pools",
            "describe",
            &pool,
            "--cluster",
            p.cluster_name.as_str(),
            "--region",
            p.region.as_str(),
            "--project",
            project_id,
        ],
    )
}

/// The blueprint's buckets (Cluster Toolkit labels every resource with its deployment).
pub fn list_buckets(deployment: &Deployment, site: &Site) -> Command {
    let filter = format!("labels.ghpc_deployment={}", deployment.project.cluster_name);
    Command::of(
        "gcloud",
        &["storage", "buckets", "list", "--project", site.project_id.as_str(), "--filter", &filter, "--format=value(name)"],
    )
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
    Command::of(&site.gcluster, &["destroy", &site.folder().gcluster(deployment), "--auto-approve"]).in_dir(&site.toolkit)
}

/// Deletes the GKE cluster `name` in `location` (a region or a zone), without gcluster (its
/// Terraform state lost with the deployment folder).
pub fn delete_cluster(name: &str, location: &str, site: &Site) -> Command {
    Command::of(
        "gcloud",
        &["container", "clusters", "delete", name, "--location", location, "--project", site.project_id.as_str(), "--quiet"],
    )
}

/// Deletes the deployment's Lustre instance by name, without gcluster.
pub fn delete_lustre(deployment: &Deployment, site: &Site) -> Command {
    let (lustre, zone) = (deployment.lustre.instance_id.as_str(), deployment.project.zone.as_str());
    Command::of("gcloud", &["lustre", "instances", "delete", lustre, "--location", zone, "--project", site.project_id.as_str(), "--quiet"])
}

/// Deletes an empty bucket.
pub fn delete_bucket(bucket: &str, site: &Site) -> Command {
    Command::of("gcloud", &["storage", "buckets", "delete", &format!("gs://{bucket}"), "--project", site.project_id.as_str(), "--quiet"])
}

/// The project's GKE clusters that carry the deployment's name in gcluster's
/// `ghpc_deployment` label and gke-rl's blueprint in `ghpc_blueprint`, in any location: one
/// `NAME<TAB>LOCATION` line each, which [`clusters_listed`] reads. A cluster of the same name
/// from another blueprint (xpk's is `xpk-gke-a4`) is not gke-rl's.
pub fn labelled_clusters(deployment: &Deployment, site: &Site) -> Command {
    let filter = format!(
        "--filter=resourceLabels.ghpc_deployment={} AND resourceLabels.ghpc_blueprint={}",
        deployment.project.cluster_name,
        crate::knowledge::PATCHED_BLUEPRINT
    );
    Command::of(
        "gcloud",
        &["container", "clusters", "list", "--project", site.project_id.as_str(), &filter, "--format=value(name,location)"],
    )
}

/// The (name, location) of each cluster in [`labelled_clusters`]'s answer.
pub fn clusters_listed(listed: &str) -> Vec<(String, String)> {
    listed
        .lines()
        .filter_map(|line| {
            let mut columns = line.split_whitespace();
            Some((columns.next()?.to_owned(), columns.next().unwrap_or_default().to_owned()))
        })
        .collect()
}

/// Commands that succeed with output while a billable resource gke-rl finds by name still
/// exists: (what, command). The clusters are found by label ([`labelled_clusters`]).
pub fn leftovers(deployment: &Deployment, site: &Site) -> Vec<(String, Command)> {
    let p = &deployment.project;
    let lustre = deployment.lustre.instance_id.as_str();
    // An instance the config attaches is someone else's to delete.
    if deployment.lustre.existing {
        return Vec::new();
    }
    vec![(
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
                site.project_id.as_str(),
                "--format=value(name)",
            ],
        ),
    )]
}

/// The existing cluster as it is, in JSON ([`super::existing::Cluster::from_json`]).
pub fn describe_cluster(deployment: &Deployment, site: &Site) -> Command {
    let p = &deployment.project;
    Command::of(
        "gcloud",
        &[
            "container",
            "clusters",
            "describe",
            p.cluster_name.as_str(),
            "--location",
            p.region.as_str(),
            "--project",
            site.project_id.as_str(),
            "--format=json",
        ],
    )
}

/// The Lustre instance as it is, in JSON ([`super::existing::Instance::from_json`]).
pub fn describe_lustre(deployment: &Deployment, site: &Site) -> Command {
    let (lustre, zone) = (deployment.lustre.instance_id.as_str(), deployment.project.zone.as_str());
    Command::of(
        "gcloud",
        &["lustre", "instances", "describe", lustre, "--location", zone, "--project", site.project_id.as_str(), "--format=json"],
    )
}

/// Turns `addons` of the existing cluster on (`ENABLED`) or off.
pub fn update_addons(deployment: &Deployment, site: &Site, addons: &[&str], enabled: bool) -> Command {
    let p = &deployment.project;
    let state = if enabled { "ENABLED" } else { "DISABLED" };
    let addons: Vec<String> = addons.iter().map(|a| format!("{a}={state}")).collect();
    Command::of(
        "gcloud",
        &[
            "container",
            "clusters",
            "update",
            p.cluster_name.as_str(),
            "--location",
            p.region.as_str(),
            "--project",
            site.project_id.as_str(),
        ],
    )
    .arg(format!("--update-addons={}", addons.join(",")))
    .arg("--quiet")
}

/// The private services access range a new Lustre instance on `network` needs, as the codelab's
/// scripts name it (devrel-demos `ai-ml/rl-gke-managed-lustre/02-provision-lustre.sh`).
pub fn peering_range(network: &str) -> String {
    format!("google-managed-services-{network}")
}

/// Whether [`peering_range`] exists in the VPC's `project` (it fails when not).
pub fn describe_peering_range(network: &str, project: &str) -> Command {
    Command::of(
        "gcloud",
        &["compute", "addresses", "describe", &peering_range(network), "--global", "--project", project, "--format=value(name)"],
    )
}

/// Allocates [`peering_range`] for Google's services in the VPC's `project`, a /24 as the
/// codelab's scripts do.
pub fn create_peering_range(network: &str, project: &str) -> Command {
    Command::of(
        "gcloud",
        &[
            "compute",
            "addresses",
            "create",
            &peering_range(network),
            "--global",
            "--purpose=VPC_PEERING",
            "--prefix-length=24",
            &format!("--network={network}"),
            "--project",
            project,
        ],
    )
}

/// The services `network` (of `project`) is peered with, one a line.
pub fn list_peerings(network: &str, project: &str) -> Command {
    Command::of(
        "gcloud",
        &["services", "vpc-peerings", "list", &format!("--network={network}"), "--project", project, "--format=value(service)"],
    )
}

/// The service Managed Lustre is reached through.
pub const SERVICE_NETWORKING: &str = "servicenetworking.googleapis.com";

/// Peers `network` (of `project`) with Google's services over [`peering_range`].
pub fn connect_peering(network: &str, project: &str) -> Command {
    Command::of(
        "gcloud",
        &[
            "services",
            "vpc-peerings",
            "connect",
            &format!("--service={SERVICE_NETWORKING}"),
            &format!("--ranges={}", peering_range(network)),
            &format!("--network={network}"),
            "--project",
            project,
        ],
    )
}

/// Creates the deployment's Lustre instance on VPC `network` (`projects/P/global/networks/N`),
/// labelled as the deployment's ([`super::existing::INSTANCE_LABEL`]), and waits until it is
/// ready (no `--async`). `gke_support`: it serves GKE on the legacy port 6988, for a cluster
/// whose nodes use that port.
pub fn create_lustre(deployment: &Deployment, site: &Site, network: &str, gke_support: bool) -> Command {
    let l = &deployment.lustre;
    let mut command = Command::of(
        "gcloud",
        &[
            "lustre",
            "instances",
            "create",
            l.instance_id.as_str(),
            "--location",
            deployment.project.zone.as_str(),
            "--project",
            site.project_id.as_str(),
            &format!("--capacity-gib={}", l.capacity_gib),
            &format!("--per-unit-storage-throughput={}", l.throughput_mbps_per_tib),
            &format!("--filesystem={}", crate::knowledge::LUSTRE_FILESYSTEM),
            &format!("--network={network}"),
            &format!("--labels={}={}", super::existing::INSTANCE_LABEL, deployment.project.cluster_name),
        ],
    );
    if gke_support {
        command = command.arg("--gke-support-enabled");
    }
    command
}
