//! `gke-a4-deployment.yaml`: the gcluster deployment file (`gcluster deploy … -d`) holding
//! the blueprint vars of the model.

use crate::model::{Deployment, Provisioning};
use crate::quote::yaml;

/// A blueprint var's value in the file.
pub(super) enum Value {
    Known(String),
    /// Not known yet: `gcluster deploy --vars` passes it from this environment variable.
    FromEnvironment(&'static str),
    /// Not needed by this deployment.
    Absent,
}

/// A blueprint var: its name, the config key it comes from, and its value.
type Var = (&'static str, &'static str, fn(&Deployment) -> Value);

/// The blueprint vars the file sets, in order.
pub(super) const VARS: &[Var] = &[
    ("project_id", "project.project_id", |d| {
        d.project.project_id.as_ref().map_or(Value::FromEnvironment("PROJECT_ID"), |id| Value::Known(yaml(id.as_str())))
    }),
    ("deployment_name", "project.cluster_name", |d| Value::Known(yaml(d.project.cluster_name.as_str()))),
    ("region", "project.region", |d| Value::Known(yaml(d.project.region.as_str()))),
    ("zone", "project.zone", |d| Value::Known(yaml(d.project.zone.as_str()))),
    ("static_node_count", "topology.node_count", |d| Value::Known(d.topology.node_count.to_string())),
    ("authorized_cidr", "network.authorized_cidr", |d| {
        d.network.authorized_cidr.as_ref().map_or(Value::FromEnvironment("AUTHORIZED_CIDR"), |c| Value::Known(yaml(c.as_str())))
    }),
    ("accelerator_type", "topology.accelerator", |d| Value::Known(yaml(d.topology.accelerator.as_str()))),
    ("reservation", "topology.provisioning", |d| match &d.topology.provisioning {
        Provisioning::Reservation(name) => Value::Known(yaml(name.as_str())),
        _ => Value::Absent,
    }),
    ("lustre_instance_id", "lustre.instance_id", |d| Value::Known(yaml(d.lustre.instance_id.as_str()))),
    ("lustre_size_gib", "lustre.capacity_gib", |d| Value::Known(d.lustre.capacity_gib.to_string())),
    ("per_unit_storage_throughput", "lustre.throughput_mbps_per_tib", |d| Value::Known(d.lustre.throughput_mbps_per_tib.to_string())),
];

pub(super) fn deployment_file(d: &Deployment) -> String {
    let vars: String = VARS
        .iter()
        .map(|(name, _, value)| match value(d) {
            Value::Known(value) => format!("  {name}: {value}\n"),
            Value::FromEnvironment(env) => format!("  # {name}: not known yet; pass --vars {name}=${env}\n"),
            Value::Absent => String::new(),
        })
        .collect();
    let provisioning = match d.topology.provisioning {
        Provisioning::Spot => "Spot needs no var: the patched node pool sets `spot: true` itself (a var as well would be unused)",
        Provisioning::Reservation(_) => "On-demand nodes: the node pool consumes the reservation named below",
        Provisioning::FlexStart => {
            "Flex-start needs no var: the patched node pool sets `enable_flex_start: true` and autoscales up to static_node_count"
        }
        Provisioning::OnDemand => "On-demand nodes without a reservation: the patched node pool consumes none",
    };
    format!(
        "# Blueprint vars for the patched gke-a4 blueprint: `gcluster deploy <blueprint> -d gke-a4-deployment.yaml\n\
         # --auto-approve`. Vars left out here must come from `--vars` (which wins over this file).\n\
         # {provisioning}.\n\
         vars:\n{}",
        vars
    )
}
