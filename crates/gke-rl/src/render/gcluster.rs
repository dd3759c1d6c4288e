//! `gke-a4-deployment.yaml`: the gcluster deployment file (`gcluster deploy … -d`) holding
//! the blueprint vars of the model.

use crate::model::{Deployment, Provisioning};
use crate::quote::yaml;

pub(super) fn deployment_file(d: &Deployment) -> String {
    let known = |name: &str, value: String| format!("  {name}: {value}\n");
    let unknown = |name: &str, env: &str| format!("  # {name}: not known yet; pass --vars {name}=${env}\n");
    let mut vars = vec![
        d.project.project_id.as_ref().map_or_else(|| unknown("project_id", "PROJECT_ID"), |id| known("project_id", yaml(id.as_str()))),
        known("deployment_name", yaml(d.project.cluster_name.as_str())),
        known("region", yaml(d.project.region.as_str())),
        known("zone", yaml(d.project.zone.as_str())),
        known("static_node_count", d.topology.node_count.to_string()),
        d.network
            .authorized_cidr
            .as_ref()
            .map_or_else(|| unknown("authorized_cidr", "AUTHORIZED_CIDR"), |c| known("authorized_cidr", yaml(c.as_str()))),
        known("accelerator_type", yaml(d.topology.accelerator.as_str())),
    ];
    if let Provisioning::Reservation(name) = &d.topology.provisioning {
        vars.push(known("reservation", yaml(name.as_str())));
    }
    vars.push(known("lustre_instance_id", yaml(d.lustre.instance_id.as_str())));
    vars.push(known("lustre_size_gib", d.lustre.capacity_gib.to_string()));
    vars.push(known("per_unit_storage_throughput", d.lustre.throughput_mbps_per_tib.to_string()));
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
        vars.concat()
    )
}
