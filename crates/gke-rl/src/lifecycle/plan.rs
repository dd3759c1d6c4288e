//! The deploy and destroy plans as text: what `--dry-run` prints and destroy's preview, built
//! from the same commands the run executes.

use std::fmt::{self, Write as _};

use super::{
    Preflight, REQUIRED_APIS, Site, State, Step, connect_peering, create_lustre, create_peering_range, credentials, delete_lustre,
    describe_cluster, describe_lustre, empty_bucket, labelled_clusters, leftovers, list_buckets, provision, secret_entries, teardown,
    update_addons,
};
use crate::model::{Deployment, HeadNodePool, Provisioning};

/// The whole `deploy` plan as text: every command with its arguments and every object, with
/// secret values shown as the variable they come from. `helpers` are the in-cluster helpers
/// deploy applies after the RayCluster, each with its objects (the in-cluster crate's `helpers`).
pub fn deploy_plan(deployment: &Deployment, site: &Site, ray_cluster: Option<&str>, helpers: &[(&str, String)], wait: &str) -> String {
    let p = &deployment.project;
    let folder = site.folder();
    let mut out = format!(
        "deploy {} in project {} ({} / {}); state and files in {}\n",
        p.cluster_name,
        site.project_id,
        p.region,
        p.zone,
        site.folder.display()
    );
    let mut step = |s: Step, lines: &[String]| {
        let _ = write!(out, "\n{}. {}\n", Step::ALL.iter().position(|x| *x == s).unwrap_or_default() + 1, s.title());
        for line in lines {
            for (i, text) in line.lines().enumerate() {
                let _ = writeln!(out, "   {}{text}", if i == 0 { "" } else { "  " });
            }
        }
    };
    if p.existing_cluster {
        existing_steps(deployment, site, ray_cluster, &mut step);
    } else {
        let mut checks: Vec<String> =
            Preflight::new(deployment, site).all().into_iter().map(|(what, c)| format!("$ {c}    # {what}")).collect();
        checks.push(format!("check that {} are enabled", REQUIRED_APIS.join(", ")));
        for (_, variable, required) in secret_entries(deployment) {
            checks.push(format!("check that ${variable} is set{}", if required { "" } else { " (optional)" }));
        }
        step(Step::Preflight, &checks);
        let toolkit_example = site.toolkit.join(crate::knowledge::toolkit_example()).display().to_string();
        let upstream = site.toolkit.join(crate::knowledge::toolkit_blueprint());
        let mut render = vec![
            "render the artifacts and validate them with the patched blueprint (refuse on errors)".to_owned(),
            format!("write {} (patched from {})", folder.blueprint(), upstream.display()),
            format!("write {}", folder.deployment_file()),
        ];
        if ray_cluster.is_some() {
            render.push(format!("write {}", folder.ray_cluster()));
        }
        // Which of them the blueprint stages is known only once it is read.
        render.push(format!(
            "copy those of {} that the blueprint stages from {toolkit_example} to {}",
            crate::knowledge::STAGED_TEMPLATES.join(", "),
            folder.0.display()
        ));
        if let Some(queue) = crate::kueue::describe(deployment) {
            render.push(format!(
                "stage gke-rl's {} from the blueprint's: its ClusterQueue covers the Ray head's CPU and memory too, and its GPU flavor has no topology (a workload that asks for one, as the blueprint's nccl-jobset-example.yaml does, is not admitted)",
                crate::ArtifactKind::KueueConfiguration.file()
            ));
            render.push(queue);
        }
        step(Step::Render, &render);
        step(
            Step::Provision,
            &[
                "gcluster makes the network, the GKE cluster, the A4 nodes and Managed Lustre (30-60 min):".to_owned(),
                format!("$ {}", provision(site)),
                format!("creates {}", billable(deployment).join(", ")),
            ],
        );
    }
    step(Step::Credentials, &[format!("$ {}", credentials(deployment, site.project_id.as_str()))]);
    let secret: Vec<String> = secret_entries(deployment)
        .into_iter()
        .map(|(key, variable, required)| format!("{key}: <the value of ${variable}{}>", if required { "" } else { ", if set" }))
        .collect();
    let namespace = deployment.ray.namespace.as_str();
    let mut secret_step = Vec::new();
    if namespace != "default" {
        secret_step.push(format!("server-side apply (field manager gke-rl) Namespace {namespace}"));
    }
    secret_step.push(format!(
        "server-side apply (field manager gke-rl) Secret {}/{}, type Opaque, data:\n{}",
        deployment.ray.namespace,
        deployment.secrets.kubernetes_secret,
        secret.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
    ));
    secret_step.push(format!(
        "create Secret {namespace}/{}, type Opaque, data:\n  {}: <32 random bytes in hex, made here>\n(unless it exists: {})",
        crate::auth::secret_name(deployment),
        crate::auth::TOKEN_KEY,
        if deployment.ray.token_auth().unwrap_or(false) {
            "the running Ray pods hold its token, which also signs the run records"
        } else {
            "it signs the run records the head and the keeper write"
        }
    ));
    step(Step::Secret, &secret_step);
    let mut cluster_step = Vec::new();
    if p.existing_cluster {
        cluster_step.push(format!(
            "server-side apply PersistentVolume {} and PersistentVolumeClaim {namespace}/{}: Lustre instance {} by the address and file system `gcloud lustre instances describe` gives (the shape of the codelab's rl-demo-gpu-lustre.yaml.tmpl)",
            super::existing::persistent_volume(deployment),
            deployment.lustre.pvc_name,
            deployment.lustre.instance_id
        ));
    }
    cluster_step.push(match ray_cluster {
        Some(manifest) => {
            let manifest: String = manifest.lines().filter(|l| !l.starts_with("# Generated by")).map(|l| format!("  {l}\n")).collect();
            format!("server-side apply (field manager gke-rl):\n{}", manifest.trim_end())
        }
        None => format!(
            "no RayCluster (job.mode: rayjob): each run is a RayJob ({}) with a cluster of its own, deleted {}s after the run\n\
             delete RayCluster {namespace}/{}, its run keeper and idle guard, if an earlier deploy in cluster mode made them",
            crate::ArtifactKind::RayJob.file(),
            deployment.job.rayjob_ttl_seconds_after_finished,
            p.cluster_name
        ),
    });
    let policy = crate::auth::network_policy_name(deployment);
    cluster_step.push(if deployment.ray.token_auth().unwrap_or(false) {
        format!("delete NetworkPolicy {namespace}/{policy}, if an earlier deploy made it: tokens take its place")
    } else {
        format!(
            "server-side apply NetworkPolicy {namespace}/{policy} ({}): the Ray pods take connections only from each other and from gke-rl's helpers",
            crate::ArtifactKind::NetworkPolicy.file()
        )
    });
    for (what, manifests) in helpers {
        let objects: Vec<String> = crate::yaml::documents(manifests)
            .filter_map(|document| {
                let root = crate::yaml::Node::parse(document)?;
                Some(format!("{} {namespace}/{}", root.get(&["kind"])?.text()?, root.get(&["metadata", "name"])?.text()?))
            })
            .collect();
        cluster_step.push(format!("server-side apply (field manager gke-rl) the {what}: {}", objects.join(", ")));
    }
    step(Step::RayCluster, &cluster_step);
    let workers = deployment.topology.node_count;
    let ready = match ray_cluster {
        None if matches!(deployment.topology.provisioning, Provisioning::Reservation(_)) => {
            "nothing to wait for: the GPU node pool autoscales from zero (the reservation bills whether or not its nodes run)".to_owned()
        }
        None => "nothing to wait for: the GPU node pool autoscales from zero, so its nodes bill only while a RayJob runs".to_owned(),
        Some(_) => format!(
            "wait up to {wait} for the head and {workers} workers of RayCluster {} to be Running and Ready{}",
            p.cluster_name,
            match deployment.topology.provisioning {
                Provisioning::Spot => " (Spot: capacity may be short)",
                Provisioning::FlexStart => " (flex-start: GKE obtains the nodes when capacity allows)",
                Provisioning::Reservation(_) | Provisioning::OnDemand => "",
            }
        ),
    };
    step(Step::Ready, &[ready]);
    if let Some(uri) = &deployment.job.resume_from {
        let dir = &deployment.job.checkpointing.dir;
        let draft = format!("{dir}/{}", crate::durability::import_folder(uri.step()));
        let lustre_path = crate::durability::file_system_path(deployment, &draft).unwrap_or(draft);
        step(
            Step::Resume,
            &[
                format!("on the head, make {dir} and its tmp_step_{} (refused when a newer step is there)", uri.step()),
                format!(
                    "$ {}    # through Managed Lustre, into tmp_step_{}",
                    super::transfer(deployment, site, super::Direction::Import, &lustre_path, &uri.folder(), "REQUEST_ID"),
                    uri.step()
                ),
                format!(
                    "verify every file with its size against {uri}, then rename tmp_step_{0} to step_{0}: the first run resumes from it",
                    uri.step()
                ),
            ],
        );
    }
    let _ = write!(out, "\n{}\n", crate::cost::estimate(deployment));
    if let Some(prediction) = crate::checkpoint_plan::at_the_tier(deployment) {
        let saving = crate::checkpoint_plan::Saving::of(deployment);
        let release = crate::knowledge::nemo_rl_release(deployment.ray.image.as_str()).map(|r| r.tag);
        let _ = writeln!(out, "\ncheckpoints ({}; `deploy --storage-check` measures the mount):", saving.model.unwrap_or("the model"));
        for line in prediction.advice(&saving, release) {
            let _ = writeln!(out, "  {line}");
        }
        if prediction.past_timeout {
            let _ = writeln!(
                out,
                "  warning: that is past the {} s NeMo-RL's ranks wait at a collective: `validate` says how to fix it",
                crate::knowledge::NEMO_RL_COLLECTIVE_TIMEOUT_S
            );
        }
    }
    out
}

/// Preflight, render and provision on a cluster gke-rl did not create: it reads, never creates
/// or deletes, the cluster and its node pools.
fn existing_steps(d: &Deployment, site: &Site, ray_cluster: Option<&str>, step: &mut impl FnMut(Step, &[String])) {
    let p = &d.project;
    let project = site.project_id.as_str();
    let preflight = Preflight::new(d, site);
    let mut checks = vec![
        format!("$ {}    # an active gcloud account", preflight.account),
        format!("$ {}    # the enabled APIs", preflight.apis),
        format!("check that {} are enabled", super::required_apis(d).join(", ")),
        format!("$ {}    # the cluster as it is: add-ons, VPC, node pools", describe_cluster(d, site)),
        format!(
            "refuse, with the fix, a cluster without a node pool of {} {} nodes ({})",
            d.topology.node_count,
            d.topology.machine_type,
            d.topology.provisioning.describe()
        ),
        match (d.ray.head.node_pool, &d.ray.head.pool) {
            (HeadNodePool::Gpu, _) => "the head shares a GPU node with a worker (ray.head.node_pool: gpu)".to_owned(),
            (_, Some(pool)) => format!("the head runs on node pool {pool}, which must be an on-demand CPU pool that holds it"),
            (_, None) => {
                "pick the head's pool: the first on-demand CPU pool (no GPUs, no taints, not Spot) that holds its requests; none: refuse"
                    .to_owned()
            }
        },
    ];
    if d.lustre.existing {
        checks.push(format!(
            "$ {}    # its capacity and tier (what validate reads), VPC (the cluster's), state (ACTIVE) and GKE support (the cluster's Lustre port)",
            describe_lustre(d, site)
        ));
    } else {
        checks.push(format!("$ {}    # Managed Lustre serves the zone", preflight.lustre_location));
    }
    checks.push(format!("$ {}    # the cluster's Kubernetes API, for what gcloud does not describe", credentials(d, project)));
    checks.push(
        "list the cluster's Nodes by pool (cloud.google.com/gke-nodepool): a fixed pool has those listed; credentials that may not list Nodes: gcloud's sizes, said so".to_owned(),
    );
    if d.fabric.rdma_networks.is_none() && d.wired_fabric().ok().flatten().is_some() {
        checks.push(
            "list the cluster's GKENetworkParamSets and Networks (networking.gke.io/v1): the workers attach those of the GPU pool's RDMA subnetworks; none: TCP, said so".to_owned(),
        );
    }
    checks.push(format!("$ {}    # the kubeconfig of a GKE cluster runs it", preflight.auth_plugin));
    for (_, variable, required) in secret_entries(d) {
        checks.push(format!("check that ${variable} is set{}", if required { "" } else { " (optional)" }));
    }
    step(Step::Preflight, &checks);
    let mut render = vec!["render the artifacts fitted to the cluster and validate them (refuse on errors)".to_owned()];
    if ray_cluster.is_some() {
        render.push(format!("write {}", site.folder().ray_cluster()));
    }
    step(Step::Render, &render);
    let addons = [super::existing::RAY_OPERATOR, super::existing::LUSTRE_CSI_DRIVER];
    let mut provision = vec![format!("turn on those of the add-ons found off: $ {}", update_addons(d, site, &addons, true))];
    if !d.lustre.existing {
        // The network is the cluster's, read at provision.
        let (network, project) = ("VPC", "VPC_PROJECT");
        provision
            .push("where VPC is the cluster's network, of VPC_PROJECT (a Shared VPC's host), as the describe above gives it:".to_owned());
        provision.push(format!("unless the peering range exists: $ {}", create_peering_range(network, project)));
        provision.push(format!("unless the VPC is peered with {}: $ {}", super::SERVICE_NETWORKING, connect_peering(network, project)));
        provision.push(format!(
            "$ {}    # waits until it is ready; --gke-support-enabled where the cluster uses the legacy Lustre port 6988",
            create_lustre(d, site, "projects/VPC_PROJECT/global/networks/VPC", false)
        ));
        provision.push(format!("creates a {} GiB Managed Lustre instance", d.lustre.capacity_gib));
    }
    provision.push(format!("never creates or deletes cluster {} or its node pools", p.cluster_name));
    step(Step::Provision, &provision);
}

/// What a deployment bills for until it is destroyed, for people: the GPU nodes, the Ray
/// head's own node, the Lustre instance.
pub fn billable(d: &Deployment) -> Vec<String> {
    if d.project.existing_cluster {
        // The cluster's nodes bill whether or not gke-rl runs on them.
        return if d.lustre.existing { Vec::new() } else { vec![format!("a {} GiB Managed Lustre instance", d.lustre.capacity_gib)] };
    }
    let how = d.topology.provisioning.describe();
    let mut out = vec![format!("{} × {} ({how})", d.topology.node_count, d.topology.machine_type)];
    if d.ray.head.node_pool == HeadNodePool::Dedicated {
        out.push(format!("1 × {} (on-demand, for the Ray head)", d.ray.head.machine_type));
    }
    out.push(format!("a {} GiB Managed Lustre instance", d.lustre.capacity_gib));
    out
}

/// What `destroy` deletes and the commands it runs, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestroyPlan {
    /// "destroy NAME in project P (REGION / ZONE)".
    pub title: String,
    /// What goes, one resource per line, with what is lost.
    pub resources: Vec<String>,
    /// Every command and Kubernetes deletion, in order.
    pub steps: Vec<String>,
}

impl DestroyPlan {
    /// The title and what goes: what `destroy` shows before it asks.
    pub fn preview(&self) -> String {
        let mut out = format!("{}:\n", self.title);
        for resource in &self.resources {
            let _ = writeln!(out, "  {resource}");
        }
        out.trim_end().to_owned()
    }
}

impl fmt::Display for DestroyPlan {
    /// The whole plan, as `destroy --dry-run` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.preview())?;
        writeln!(f, "steps:")?;
        for step in &self.steps {
            writeln!(f, "   {step}")?;
        }
        Ok(())
    }
}

/// The `destroy` plan for a deployment in `state`. `buckets` are the blueprint's buckets with
/// their object counts, when they were listed (a dry run does not list them). `disable_addons`:
/// turn off the add-ons deploy turned on in an existing cluster.
pub fn destroy_plan(
    deployment: &Deployment,
    site: &Site,
    state: &State,
    buckets: Option<&[(String, usize)]>,
    disable_addons: bool,
) -> DestroyPlan {
    let p = &deployment.project;
    let ns = &deployment.ray.namespace;
    let mut resources = Vec::new();
    let mut steps = Vec::new();
    if state.done(Step::Credentials) {
        let mut objects = vec![
            format!("RayCluster {ns}/{}", p.cluster_name),
            format!("gke-rl's RayJobs in {ns} (their RayClusters go with them)"),
            "the run keeper and the idle guard".to_owned(),
        ];
        objects.extend(super::cluster_secrets(deployment).iter().map(|s| format!("Secret {ns}/{s}")));
        if let Some(volume) = &state.created.volume {
            objects.push(format!(
                "PersistentVolumeClaim {ns}/{} and PersistentVolume {volume} (the data stays on Lustre)",
                deployment.lustre.pvc_name
            ));
        }
        let last = objects.pop().unwrap_or_default();
        let objects = format!("{} and {last}", objects.join(", "));
        resources.push(objects.clone());
        steps.push(format!("$ {}", credentials(deployment, site.project_id.as_str())));
        steps.push(format!("delete {objects}; wait for the pods to go (skipped, with a note, when the cluster's API cannot be reached)"));
    }
    if state.existing_cluster {
        if let Some(instance) = &state.created.lustre_instance {
            resources.push(format!(
                "Managed Lustre instance {instance} ({} GiB in {}), which deploy created: everything under {}, checkpoints included, is lost",
                deployment.lustre.capacity_gib, p.zone, deployment.lustre.mount_path
            ));
            steps.push(format!("$ {}", delete_lustre(deployment, site)));
        }
        let addons: Vec<&str> = state.created.addons.iter().map(String::as_str).collect();
        if disable_addons && !addons.is_empty() {
            resources.push(format!("the add-ons deploy turned on in cluster {}: {}", p.cluster_name, addons.join(", ")));
            steps.push(format!("$ {}", update_addons(deployment, site, &addons, false)));
        }
        resources.push(format!("kept: cluster {} and its node pools, which gke-rl did not create", p.cluster_name));
        if state.created.lustre_instance.is_none() {
            resources.push(format!("kept: Managed Lustre instance {}, which gke-rl attached", deployment.lustre.instance_id));
        }
        if !disable_addons && !addons.is_empty() {
            resources.push(format!("kept: the add-ons deploy turned on ({}; --disable-addons turns them off)", addons.join(", ")));
        }
        for (what, command) in state.created.lustre_instance.iter().flat_map(|_| leftovers(deployment, site)) {
            steps.push(format!("verify that {what} is gone: $ {command}"));
        }
        return DestroyPlan {
            title: format!(
                "destroy what gke-rl made on cluster {} in project {} ({} / {})",
                p.cluster_name, site.project_id, p.region, p.zone
            ),
            resources,
            steps,
        };
    }
    if state.done(Step::Render) {
        resources.push(format!(
            "GKE cluster {} ({}) with its node pools ({} × {})",
            p.cluster_name, p.region, deployment.topology.node_count, deployment.topology.machine_type
        ));
        resources.push(format!(
            "Managed Lustre instance {} ({} GiB in {}): everything under {}, checkpoints included, is lost",
            deployment.lustre.instance_id, deployment.lustre.capacity_gib, p.zone, deployment.lustre.mount_path
        ));
        resources
            .push(format!("networks {0}-net-0, {0}-net-1, {0}-rdma-net, their firewall rules and the service accounts", p.cluster_name));
        match buckets {
            Some(buckets) => {
                resources.extend(buckets.iter().map(|(bucket, objects)| format!("bucket {bucket} ({objects} objects, emptied first)")))
            }
            None => resources.push(format!("the blueprint's buckets (labelled ghpc_deployment={}), emptied first", p.cluster_name)),
        }
        steps.push(format!("$ {}", list_buckets(deployment, site)));
        steps.push(format!("for each bucket B that holds objects: $ {}", empty_bucket("B")));
        steps.push(format!("$ {}", teardown(deployment, site)));
    }
    steps.push(format!(
        "verify that no GKE cluster labelled ghpc_deployment={} (of blueprint gke-a4) remains: $ {}",
        p.cluster_name,
        labelled_clusters(deployment, site)
    ));
    for (what, command) in leftovers(deployment, site) {
        steps.push(format!("verify that {what} is gone: $ {command}"));
    }
    DestroyPlan {
        title: format!("destroy deployment {} in project {} ({} / {})", p.cluster_name, site.project_id, p.region, p.zone),
        resources,
        steps,
    }
}
