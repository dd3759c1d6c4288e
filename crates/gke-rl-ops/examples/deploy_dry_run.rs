//! The deploy plan of a deployment built in code: every command and Kubernetes object, in
//! order, and nothing run. `cargo run -p gke-rl-ops --example deploy_dry_run`

use gke_rl::model::{Cidr, ProjectId, Zone};
use gke_rl_ops::deploy::{self, DeployOptions};
use gke_rl_ops::{Env, SiteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The codelab's reference setup, on 4 nodes in another zone of the same region.
    let mut deployment = gke_rl::Deployment::default();
    deployment.project.project_id = Some(ProjectId::new("my-rl-project")?);
    deployment.project.zone = Zone::new("us-east1-c")?;
    deployment.topology.node_count = 4.try_into()?;
    deployment.network.authorized_cidr = Some(Cidr::new("203.0.113.7/32")?);

    let render = gke_rl::RenderOptions { source: "examples/deploy_dry_run.rs", regenerate: "cargo run --example deploy_dry_run" };
    let artifacts = gke_rl::render(&deployment, &render)?;
    let options = DeployOptions {
        target: SiteOptions { toolkit: Some("cluster-toolkit".into()), ..SiteOptions::default() },
        ..DeployOptions::default()
    };
    // The project is in the model, so planning asks gcloud nothing.
    println!("{}", deploy::plan(&deployment, &artifacts, &options, &Env::real())?);
    Ok(())
}
