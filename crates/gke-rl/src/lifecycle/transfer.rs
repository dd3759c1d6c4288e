//! The gcloud commands that keep what a run made: Managed Lustre's transfers between the
//! instance and a bucket (`gcloud lustre instances export-data` / `import-data`, the
//! `exportData` and `importData` methods of googleapis `google/cloud/lustre/v1/lustre.proto`,
//! long-running operations), and the bucket's own (made, described, listed, its IAM policy).
//! `crate::durability` reads their answers.

use super::{Command, Site};
use crate::model::{Deployment, GcsPath};

fn gcloud(args: &[&str]) -> Command {
    Command::of("gcloud", args)
}

/// Which way a transfer goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Lustre to Cloud Storage.
    Export,
    /// Cloud Storage to Lustre.
    Import,
}

/// Starts a transfer of the file system's `lustre_path` to the bucket folder `folder`, or the
/// other way, and returns at once with the operation (`--async`, JSON). `request_id`, a UUID,
/// makes a repeated request the same one: a start that was interrupted before its answer came
/// is asked again, never started twice.
pub fn transfer(
    deployment: &Deployment,
    site: &Site,
    direction: Direction,
    lustre_path: &str,
    folder: &GcsPath,
    request_id: &str,
) -> Command {
    transfer_by_hand(deployment, site, direction, lustre_path, folder.as_str())
        .arg(format!("--request-id={request_id}"))
        .arg("--async")
        .arg("--format=json")
}

/// The transfer as a person runs it, waiting for its end: `folder` may be a placeholder.
pub fn transfer_by_hand(deployment: &Deployment, site: &Site, direction: Direction, lustre_path: &str, folder: &str) -> Command {
    let verb = match direction {
        Direction::Export => "export-data",
        Direction::Import => "import-data",
    };
    gcloud(&[
        "lustre",
        "instances",
        verb,
        deployment.lustre.instance_id.as_str(),
        "--location",
        deployment.project.zone.as_str(),
        "--project",
        site.project_id.as_str(),
        &format!("--lustre-path={lustre_path}"),
        &format!("--gcs-path-uri={folder}"),
    ])
}

/// The transfer operation `name` (`projects/P/locations/ZONE/operations/ID`) as it is now, in
/// JSON (`crate::durability::Operation::from_json`).
pub fn describe_operation(name: &str) -> Command {
    gcloud(&["lustre", "operations", "describe", name, "--format=json"])
}

/// The objects under a bucket folder with their sizes, in JSON (`crate::durability::objects_from_json`).
pub fn list_folder(folder: &GcsPath) -> Command {
    gcloud(&["storage", "objects", "list", &format!("{folder}**"), "--format=json(name,size)"])
}

/// The bucket's name, location and project number, as the API has them, in JSON
/// (`crate::durability::Bucket::from_json`).
pub fn describe_bucket(bucket: &str) -> Command {
    gcloud(&["storage", "buckets", "describe", &format!("gs://{bucket}"), "--raw", "--format=json(name,location,projectNumber)"])
}

/// Creates the bucket in `region`, private, with uniform access and a hierarchical namespace
/// (which Managed Lustre's transfers are faster with, "Transfer data", docs.cloud.google.com/managed-lustre/docs/transfer-data).
pub fn create_bucket(bucket: &str, region: &str, site: &Site) -> Command {
    gcloud(&[
        "storage",
        "buckets",
        "create",
        &format!("gs://{bucket}"),
        "--project",
        site.project_id.as_str(),
        "--location",
        region,
        "--uniform-bucket-level-access",
        "--public-access-prevention",
        "--enable-hierarchical-namespace",
    ])
}

/// The bucket's IAM policy, in JSON.
pub fn bucket_policy(bucket: &str) -> Command {
    gcloud(&["storage", "buckets", "get-iam-policy", &format!("gs://{bucket}"), "--format=json"])
}

/// Grants `member` (`serviceAccount:…`, `user:…`) `role` on the bucket.
pub fn grant_on_bucket(bucket: &str, member: &str, role: &str) -> Command {
    gcloud(&[
        "storage",
        "buckets",
        "add-iam-policy-binding",
        &format!("gs://{bucket}"),
        &format!("--member={member}"),
        &format!("--role={role}"),
    ])
}

/// Grants `account` (a gcloud account, `user@example.com`) `role` in the project.
pub fn grant_account(site: &Site, account: &str, role: &str) -> Command {
    let member = if account.ends_with(".gserviceaccount.com") { format!("serviceAccount:{account}") } else { format!("user:{account}") };
    gcloud(&["projects", "add-iam-policy-binding", site.project_id.as_str(), &format!("--member={member}"), &format!("--role={role}")])
}

/// The project's number.
pub fn project_number(site: &Site) -> Command {
    gcloud(&["projects", "describe", site.project_id.as_str(), "--format=value(projectNumber)"])
}

/// Makes the project's Managed Lustre service agent, which exists once the project had an
/// instance ("Get the Managed Lustre service agent").
pub fn create_service_agent(site: &Site) -> Command {
    gcloud(&["beta", "services", "identity", "create", "--service=lustre.googleapis.com", "--project", site.project_id.as_str()])
}

/// The object `object`'s contents, on stdout.
pub fn read_object(object: &str) -> Command {
    gcloud(&["storage", "cat", object])
}

/// Copies the local file `local` to the object `object` (`gs://BUCKET/NAME`).
pub fn upload(local: &str, object: &str) -> Command {
    gcloud(&["storage", "cp", local, object])
}
