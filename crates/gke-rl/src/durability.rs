//! Keeping what a run made beyond its Lustre instance: where a run's checkpoints go in a bucket,
//! the gcloud commands that copy them (Managed Lustre's own transfers, which run on its
//! servers) and check the bucket, the reading of their answers, the check that a bucket holds
//! every file of a step with its size, and what the copy costs there. Pure: `gke-rl-ops` runs
//! the commands.
//!
//! A transfer (`gcloud lustre instances export-data` / `import-data`, the `exportData` and
//! `importData` methods of googleapis `google/cloud/lustre/v1/lustre.proto`) is a long-running
//! operation, incremental (only files missing at the destination, or changed, are copied), one
//! at a time per instance (docs.cloud.google.com/managed-lustre/docs/transfer-data). Its
//! `--lustre-path` is a path of the file system, not of a node's mount point:
//! [`file_system_path`] makes one from the other.

use std::fmt::Write as _;

use serde::Deserialize;

use crate::model::{CheckpointUri, Deployment, GcsPath, step_number};

/// The folder of step `step` in a checkpoint folder, as NeMo-RL names it
/// (`nemo_rl/utils/checkpoint.py`, v0.4.0 to v0.7.0: `step_N`, matched by `step_\d+`).
pub fn step_folder(step: u64) -> String {
    format!("step_{step}")
}

/// The folder an import writes into before it is verified and renamed to its `step_N`: NeMo-RL
/// never loads it (it looks for `step_N` only) and gke-rl's supervisor sets it aside as
/// half-written, as it does NeMo-RL's own.
pub fn import_folder(step: u64) -> String {
    format!("tmp_step_{step}")
}

/// The folder `--hf` converts step `step` into, beside it: no name NeMo-RL or gke-rl's
/// supervisor takes for a checkpoint.
pub fn hf_folder(step: u64) -> String {
    format!("step_{step}-hf")
}

/// The folder the converter writes into until it has finished, renamed to [`hf_folder`] then.
pub fn hf_draft_folder(step: u64) -> String {
    format!("tmp_step_{step}-hf")
}

impl GcsPath {
    /// The bucket.
    pub fn bucket(&self) -> &str {
        self.as_str().trim_start_matches("gs://").split('/').next().unwrap_or_default()
    }

    /// The folder inside the bucket, ending in `/`, or empty for the bucket's root.
    pub fn prefix(&self) -> &str {
        self.as_str().trim_start_matches("gs://").split_once('/').map_or("", |(_, path)| path)
    }

    /// The folder `name` inside this one; refused when `name` is no plain folder name.
    pub fn join(&self, name: &str) -> Result<GcsPath, crate::Error> {
        if name.contains('/') {
            return Err(crate::Error::InvalidValue { value: name.to_owned(), problem: "is not one folder name: it holds `/`".to_owned() });
        }
        GcsPath::new(format!("{}{name}/", self.as_str()))
    }
}

impl CheckpointUri {
    /// The step the checkpoint is of.
    pub fn step(&self) -> u64 {
        let last = self.as_str().trim_end_matches('/').rsplit('/').next().unwrap_or_default();
        last.strip_prefix("step_").and_then(step_number).unwrap_or_default()
    }

    /// The checkpoint's folder, as a bucket path.
    pub fn folder(&self) -> GcsPath {
        GcsPath::new(self.as_str()).expect("a checkpoint's folder is a bucket folder")
    }

    /// The object of its [`Manifest`], which `gke-rl export` writes in the run's folder.
    pub fn manifest(&self) -> String {
        let step = self.as_str().trim_end_matches('/');
        let run = &step[..step.rfind('/').map_or(0, |at| at + 1)];
        manifest_object(run, self.step())
    }
}

/// Where a run's files go under the bucket folder an export is given: a folder of the run's
/// own (`RUN/`), holding `step_N/`, `step_N-hf/` and gke-rl's files of the run (`gke-rl/`: the
/// config, the report, and the run's records as `records/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    run: GcsPath,
}

/// The folder of a run's layout that holds gke-rl's files of it.
pub const RUN_FILES_FOLDER: &str = "gke-rl";
/// The run's records (its folder on Lustre), under [`RUN_FILES_FOLDER`].
pub const RECORDS_FOLDER: &str = "records";
/// The deployment's config as gke-rl ran it, under [`RUN_FILES_FOLDER`]: JSON, which gke-rl
/// reads as YAML.
pub const CONFIG_FILE: &str = "gke-rl.json";
/// The run's report, under [`RUN_FILES_FOLDER`].
pub const REPORT_FILE: &str = "report.json";
/// Where each verified step's [`Manifest`] goes, under [`RUN_FILES_FOLDER`].
pub const MANIFESTS_FOLDER: &str = "kept";

/// The bytes of `files`, at most `u64::MAX`: a listing's sizes are the file system's word.
pub fn total_bytes(files: &[File]) -> u64 {
    files.iter().fold(0, |sum, file| sum.saturating_add(file.size))
}

/// What `gke-rl export` writes once every file of a step is verified in the bucket, last: the
/// step's files with their sizes. `deploy --resume-from` imports only a folder that holds
/// exactly them, never what an export stopped half-way left.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Manifest {
    /// Where the step was copied from: `PROJECT/ZONE/INSTANCE:FOLDER` (the checkpoint folder
    /// as the nodes mount it). Another export never writes over it.
    pub source: String,
    /// The run.
    pub run: String,
    /// The step.
    pub step: u64,
    /// Its files, with their sizes.
    pub files: Vec<File>,
}

impl Manifest {
    /// The [`source`](Self::source) of `deployment`'s checkpoint folder `dir`, in `project`.
    pub fn source_of(deployment: &Deployment, project: &str, dir: &str) -> String {
        format!("{project}/{}/{}:{dir}", deployment.project.zone, deployment.lustre.instance_id)
    }

    /// Reads a manifest.
    pub fn from_json(text: &str) -> Result<Manifest, String> {
        serde_json::from_str(text).map_err(|e| format!("not a manifest of gke-rl's: {e}"))
    }

    /// Its text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest serializes") + "\n"
    }
}

/// The object that holds step `step`'s [`Manifest`] in the run folder `run` (`gs://…/RUN/`).
fn manifest_object(run: &str, step: u64) -> String {
    format!("{run}{RUN_FILES_FOLDER}/{MANIFESTS_FOLDER}/{}.json", step_folder(step))
}

impl Layout {
    /// The layout of run `run` under `base`; refused when `run` (a submission id, or a job
    /// name) is no plain folder name.
    pub fn new(base: &GcsPath, run: &str) -> Result<Layout, crate::Error> {
        Ok(Layout { run: base.join(run)? })
    }

    /// The run's folder.
    pub fn run(&self) -> &GcsPath {
        &self.run
    }

    fn below(&self, names: &[&str]) -> GcsPath {
        let path = names.iter().fold(self.run.as_str().to_owned(), |path, name| format!("{path}{name}/"));
        GcsPath::new(path).expect("a run's folder with plain names below it is a bucket folder")
    }

    /// Where step `step` goes.
    pub fn step(&self, step: u64) -> GcsPath {
        self.below(&[&step_folder(step)])
    }

    /// Where step `step`'s Hugging Face model goes.
    pub fn hf(&self, step: u64) -> GcsPath {
        self.below(&[&hf_folder(step)])
    }

    /// Where gke-rl's files of the run go.
    pub fn files(&self) -> GcsPath {
        self.below(&[RUN_FILES_FOLDER])
    }

    /// Where the run's records go.
    pub fn records(&self) -> GcsPath {
        self.below(&[RUN_FILES_FOLDER, RECORDS_FOLDER])
    }

    /// The object of step `step`'s [`Manifest`].
    pub fn manifest(&self, step: u64) -> String {
        manifest_object(self.run.as_str(), step)
    }
}

/// The path of the file system that `node_path` is on the nodes, where the Lustre instance is
/// mounted at `lustre.mount_path` (the blueprint's PersistentVolume and gke-rl's own mount the
/// file system's root): `/lustre/ckpt/step_5` is `/ckpt/step_5`. `None` for a path outside
/// the mount.
pub fn file_system_path(deployment: &Deployment, node_path: &str) -> Option<String> {
    let mount = deployment.lustre.mount_path.as_str().trim_end_matches('/');
    let node_path = node_path.trim_end_matches('/');
    if node_path == mount {
        return Some("/".to_owned());
    }
    let rest = node_path.strip_prefix(mount)?;
    let inside = rest.starts_with('/') && rest.split('/').skip(1).all(|part| !part.is_empty() && part != "." && part != "..");
    inside.then(|| rest.to_owned())
}

/// The role the Managed Lustre service agent needs on a bucket it transfers to and from
/// ("Managed Lustre service agent permissions", docs.cloud.google.com/managed-lustre/docs/transfer-data).
pub const AGENT_ROLE: &str = "roles/storage.objectUser";
/// Roles that hold every permission of [`AGENT_ROLE`] (Cloud Storage's predefined roles,
/// cloud.google.com/storage/docs/access-control/iam-roles): a binding of any of them is enough.
const ROLES_HOLDING_AGENT_ROLE: [&str; 3] = [AGENT_ROLE, "roles/storage.objectAdmin", "roles/storage.admin"];
/// The role that holds `lustre.instances.exportData` and `lustre.instances.importData`.
pub const TRANSFER_ROLE: &str = "roles/lustre.admin";
/// The role that lets an account create buckets and read and write their objects and IAM policy.
pub const BUCKET_ADMIN_ROLE: &str = "roles/storage.admin";

/// The project's Managed Lustre service agent, from the project's number ("Get the Managed
/// Lustre service agent", docs.cloud.google.com/managed-lustre/docs/transfer-data).
pub fn service_agent(project_number: &str) -> String {
    format!("service-{project_number}@gcp-sa-lustre.iam.gserviceaccount.com")
}

/// A transfer operation as `gcloud lustre operations describe --format=json` (or a transfer
/// started with `--async`) prints it: a `google.longrunning.Operation` whose `metadata` is an
/// `ExportDataMetadata` or `ImportDataMetadata` (googleapis `google/cloud/lustre/v1/transfer.proto`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Operation {
    /// `projects/P/locations/ZONE/operations/ID`.
    pub name: String,
    /// Whether it has ended.
    pub done: bool,
    /// How it failed, if it did: `google.rpc.Status`'s code and message.
    pub error: Option<(i64, String)>,
    /// Its progress, where the metadata says it.
    pub counters: Counters,
    /// The failures it counted, by code, with up to five samples each: `code: count (uri: detail; …)`.
    pub failures: Vec<String>,
}

/// `TransferCounters`: what a transfer found and copied so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Objects found to transfer.
    pub found_objects: u64,
    /// Their bytes.
    pub found_bytes: u64,
    /// Objects already at the destination, not copied again.
    pub skipped_objects: u64,
    /// Their bytes.
    pub skipped_bytes: u64,
    /// Objects copied.
    pub copied_objects: u64,
    /// Their bytes.
    pub copied_bytes: u64,
    /// Objects that could not be written.
    pub failed_objects: u64,
}

/// proto3's JSON gives an int64 as a string; gcloud may print either.
fn int64(value: Option<&serde_json::Value>) -> Result<u64, String> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(0),
        Some(serde_json::Value::String(s)) => s.parse().map_err(|_| format!("`{s}` is not a count")),
        Some(serde_json::Value::Number(n)) => n.as_u64().ok_or_else(|| format!("`{n}` is not a count")),
        Some(other) => Err(format!("`{other}` is not a count")),
    }
}

impl Operation {
    /// Reads gcloud's JSON of an operation; why not, when it is not one.
    pub fn from_json(text: &str) -> Result<Operation, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let name = value.get("name").and_then(serde_json::Value::as_str).filter(|n| n.contains("/operations/"));
        let name = name.ok_or("no operation name (projects/…/operations/…)")?.to_owned();
        let done = match value.get("done") {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(done)) => *done,
            Some(other) => return Err(format!("`done` is `{other}`, not true or false")),
        };
        let error = value.get("error").filter(|e| !e.is_null()).map(|e| {
            let code = e.get("code").and_then(serde_json::Value::as_i64).unwrap_or(2);
            let message = e.get("message").and_then(serde_json::Value::as_str).unwrap_or("no message").to_owned();
            (code, message)
        });
        let transfer = value.pointer("/metadata/operationMetadata");
        let counter = |key: &str| int64(transfer.and_then(|t| t.pointer(&format!("/counters/{key}"))));
        let counters = Counters {
            found_objects: counter("foundObjectsCount")?,
            found_bytes: counter("bytesFoundCount")?,
            skipped_objects: counter("objectsSkippedCount")?,
            skipped_bytes: counter("bytesSkippedCount")?,
            copied_objects: counter("objectsCopiedCount")?,
            copied_bytes: counter("bytesCopiedCount")?,
            failed_objects: counter("objectsFailedCount")?,
        };
        let summaries = transfer.and_then(|t| t.get("errorSummaries")).and_then(serde_json::Value::as_array);
        let failures = summaries
            .into_iter()
            .flatten()
            .take(16)
            .map(|summary| {
                let code = summary.get("errorCode").and_then(serde_json::Value::as_str).unwrap_or("UNKNOWN");
                let count = int64(summary.get("errorCount")).unwrap_or(0);
                let samples: Vec<String> = summary
                    .get("errorLogEntries")
                    .and_then(serde_json::Value::as_array)
                    .into_iter()
                    .flatten()
                    .take(5)
                    .map(|entry| {
                        let uri = entry.get("uri").and_then(serde_json::Value::as_str).unwrap_or("?");
                        let details = entry.get("errorDetails").and_then(serde_json::Value::as_array);
                        let detail = details.and_then(|d| d.first()).and_then(serde_json::Value::as_str).unwrap_or("no detail");
                        format!("{uri}: {detail}")
                    })
                    .collect();
                if samples.is_empty() { format!("{code}: {count}") } else { format!("{code}: {count} ({})", samples.join("; ")) }
            })
            .collect();
        Ok(Operation { name, done, error, counters, failures })
    }
}

/// An object of a bucket, as `gcloud storage objects list --format=json(name,size)` gives it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Object {
    /// Its name in the bucket.
    pub name: String,
    /// Its bytes.
    #[serde(deserialize_with = "de_int64")]
    pub size: u64,
}

fn de_int64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    int64(Some(&value)).map_err(serde::de::Error::custom)
}

/// The objects gcloud listed; a folder with none is an empty list (gcloud prints nothing, or `[]`).
pub fn objects_from_json(text: &str) -> Result<Vec<Object>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(text).map_err(|e| format!("gcloud's list of objects is not one: {e}"))
}

/// A bucket as `gcloud storage buckets describe --raw` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Its name.
    pub name: String,
    /// Its location, as the API gives it (`US-EAST1`, `US`).
    pub location: String,
    /// The number of the project it belongs to.
    pub project_number: String,
}

impl Bucket {
    /// Reads gcloud's JSON of a bucket.
    pub fn from_json(text: &str) -> Result<Bucket, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let field = |key: &str| match value.get(key) {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        Ok(Bucket {
            name: field("name").ok_or("no bucket name")?,
            location: field("location").unwrap_or_default(),
            project_number: field("projectNumber").ok_or("no project number")?,
        })
    }

    /// Whether it is in `region` (a regional bucket there).
    pub fn in_region(&self, region: &str) -> bool {
        self.location.eq_ignore_ascii_case(region)
    }
}

/// Whether an IAM policy (gcloud's JSON) grants `member` one of the roles that hold
/// [`AGENT_ROLE`], without a condition.
pub fn policy_grants_agent(policy: &str, member: &str) -> Result<bool, String> {
    let value: serde_json::Value = serde_json::from_str(policy).map_err(|e| format!("the bucket's IAM policy is not JSON: {e}"))?;
    let bindings = value.get("bindings").and_then(serde_json::Value::as_array).cloned().unwrap_or_default();
    Ok(bindings.iter().any(|binding| {
        let role = binding.get("role").and_then(serde_json::Value::as_str).unwrap_or_default();
        let unconditional = binding.get("condition").is_none_or(serde_json::Value::is_null);
        let members = binding.get("members").and_then(serde_json::Value::as_array);
        ROLES_HOLDING_AGENT_ROLE.contains(&role) && unconditional && members.is_some_and(|m| m.iter().any(|m| m.as_str() == Some(member)))
    }))
}

/// A file of a folder on Lustre, as the cluster listed it: its path below the folder, and its
/// bytes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct File {
    /// Its path below the folder, `/`-separated.
    pub path: String,
    /// Its bytes.
    pub size: u64,
}

/// How a bucket folder compares with the files of a folder on Lustre.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Files the bucket lacks.
    pub missing: Vec<String>,
    /// Files the bucket holds with another size: (path, size on Lustre, size in the bucket).
    pub resized: Vec<(String, u64, u64)>,
    /// Objects of the bucket folder that are no file of the folder.
    pub extra: Vec<String>,
}

impl Comparison {
    /// The files of `folder` on Lustre against the objects listed under the bucket folder
    /// `uri` (objects of other folders are not looked at).
    pub fn of(files: &[File], uri: &GcsPath, objects: &[Object]) -> Comparison {
        let prefix = uri.prefix();
        let listed: std::collections::BTreeMap<&str, u64> = objects
            .iter()
            .filter_map(|o| o.name.strip_prefix(prefix).map(|rest| (rest, o.size)))
            // A folder of a hierarchical namespace is listed as an object ending in `/`.
            .filter(|(rest, _)| !rest.is_empty() && !rest.ends_with('/'))
            .collect();
        let mut comparison = Comparison::default();
        let mut wanted = std::collections::BTreeSet::new();
        for file in files {
            wanted.insert(file.path.as_str());
            match listed.get(file.path.as_str()) {
                None => comparison.missing.push(file.path.clone()),
                Some(size) if *size != file.size => comparison.resized.push((file.path.clone(), file.size, *size)),
                Some(_) => {}
            }
        }
        comparison.extra = listed.keys().filter(|name| !wanted.contains(*name)).map(|name| (*name).to_owned()).collect();
        comparison
    }

    /// Whether the bucket holds every file with its size.
    pub fn holds_all(&self) -> bool {
        self.missing.is_empty() && self.resized.is_empty()
    }

    /// What differs, in words, naming at most a few files of each kind.
    pub fn describe(&self) -> String {
        fn some(names: &[String]) -> String {
            let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
            let more = names.len().saturating_sub(3);
            if more == 0 { shown.join(", ") } else { format!("{}, and {more} more", shown.join(", ")) }
        }
        let mut said = Vec::new();
        if !self.missing.is_empty() {
            said.push(format!("{} missing ({})", files(self.missing.len()), some(&self.missing)));
        }
        if !self.resized.is_empty() {
            let resized: Vec<String> =
                self.resized.iter().map(|(path, lustre, bucket)| format!("{path}: {lustre} bytes, {bucket} in the bucket")).collect();
            said.push(format!("{} of another size ({})", files(self.resized.len()), some(&resized)));
        }
        if !self.extra.is_empty() {
            said.push(format!(
                "{} the step lacks ({})",
                files(self.extra.len()).replace("files", "objects").replace("file", "object"),
                some(&self.extra)
            ));
        }
        said.join("; ")
    }
}

/// "1 file", "2 files".
pub fn files(count: usize) -> String {
    if count == 1 { "1 file".to_owned() } else { format!("{count} files") }
}

/// Where the bucket prices come from.
pub const BUCKET_PRICE_SOURCE: &str =
    "Cloud Storage's list prices for Standard storage in a region (cloud.google.com/storage/pricing, \"Data storage\"), USD per GiB-month";
/// When they were read.
pub const BUCKET_PRICE_DATE: &str = "2026-12-07";

/// Standard storage per GiB-month in the regions that offer A4 where [`BUCKET_PRICE_SOURCE`]
/// gives a price; the other A4 regions stay unpriced.
const BUCKET_PRICES: &[(&str, f64)] = &[
    ("europe-north1", 0.020),
    ("us-central1", 0.020),
    ("us-east1", 0.020),
    ("us-east4", 0.023),
    ("us-south1", 0.020),
    ("us-west2", 0.023),
    ("us-west3", 0.023),
];

/// What `bytes` cost per month in a Standard bucket in `region`, when the table has a price.
pub fn bucket_per_month(region: &str, bytes: u64) -> Option<f64> {
    let (_, per_gib) = BUCKET_PRICES.iter().find(|(r, _)| *r == region)?;
    Some(per_gib * bytes as f64 / crate::knowledge::GIB as f64)
}

/// The export's line of an estimate: what `bytes` in the bucket cost per month, or why it is
/// unpriced.
pub fn bucket_cost_line(region: &str, bytes: u64) -> String {
    let size = crate::quote::bytes(bytes as f64);
    match bucket_per_month(region, bytes) {
        Some(month) => {
            let mut line = format!("{size} in a Standard bucket in {region}: ${month:.2}/month");
            let _ = write!(line, " ({BUCKET_PRICE_SOURCE}, read {BUCKET_PRICE_DATE})");
            line
        }
        None => format!("{size} in a bucket in {region}: unpriced (no citable list price for {region} in the table)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_folders_are_checked_as_cloud_storage_and_lustre_take_them() {
        for good in ["gs://my-bucket/", "gs://my-bucket/runs/a/", "gs://a.b.c/x_y-z:1@2+3/"] {
            assert!(GcsPath::new(good).is_ok(), "{good}");
        }
        let refusals = [
            ("gs://my-bucket/runs", "does not end with `/`"),
            ("gs://my-bucket", "does not end with `/`"),
            ("gs://my-bucket/a/../b/", "the folder `..`"),
            ("gs://my-bucket/./", "the folder `.`"),
            ("gs://my-bucket/a//b/", "empty folder name"),
            ("gs://my-bucket/a*/", "not letters, digits"),
            ("gs://My-Bucket/", "is not a bucket name"),
            ("gs://ab/", "is not a bucket name"),
            ("gs://google-things/", "`google`"),
            ("s3://my-bucket/", "gs://BUCKET/PATH/"),
            ("/lustre/ckpt/", "gs://BUCKET/PATH/"),
        ];
        for (bad, said) in refusals {
            let error = GcsPath::new(bad).unwrap_err().to_string();
            assert!(error.contains(said), "{bad}: {error}");
        }
        let folder = GcsPath::new("gs://my-bucket/runs/").unwrap();
        assert_eq!((folder.bucket(), folder.prefix()), ("my-bucket", "runs/"));
        assert_eq!(GcsPath::new("gs://my-bucket/").unwrap().prefix(), "");
        let layout = Layout::new(&folder, "raysubmit_1").unwrap();
        assert!(Layout::new(&folder, "..").is_err() && Layout::new(&folder, "a b").is_err() && Layout::new(&folder, "a/b").is_err());
        assert_eq!(layout.step(40).as_str(), "gs://my-bucket/runs/raysubmit_1/step_40/");
        assert_eq!(layout.hf(40).as_str(), "gs://my-bucket/runs/raysubmit_1/step_40-hf/");
        assert_eq!(layout.records().as_str(), "gs://my-bucket/runs/raysubmit_1/gke-rl/records/");
        assert_eq!(layout.manifest(40), "gs://my-bucket/runs/raysubmit_1/gke-rl/kept/step_40.json");
        let checkpoint = CheckpointUri::new(layout.step(40).as_str()).unwrap();
        assert_eq!(checkpoint.manifest(), layout.manifest(40), "the import finds what the export wrote");
    }

    #[test]
    fn a_checkpoint_in_a_bucket_ends_in_its_step() {
        let uri = CheckpointUri::new("gs://b-1/runs/r/step_18446744073709551615/").unwrap();
        assert_eq!(uri.step(), u64::MAX);
        assert_eq!(uri.folder().as_str(), "gs://b-1/runs/r/step_18446744073709551615/");
        for bad in ["gs://b-1/runs/r/", "gs://b-1/runs/r/step_18446744073709551616/", "gs://b-1/runs/r/step_x/", "gs://b-1/step_4"] {
            assert!(CheckpointUri::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_nodes_path_is_the_file_systems_below_the_mount() {
        let d = Deployment::default();
        assert_eq!(file_system_path(&d, "/lustre/ckpt/run/step_5").as_deref(), Some("/ckpt/run/step_5"));
        assert_eq!(file_system_path(&d, "/lustre/ckpt/").as_deref(), Some("/ckpt"));
        assert_eq!(file_system_path(&d, "/lustre").as_deref(), Some("/"));
        for outside in ["/lustrefs/ckpt", "/data/ckpt", "/lustre/../etc", "/lustre//x"] {
            assert_eq!(file_system_path(&d, outside), None, "{outside}");
        }
    }

    #[test]
    fn steps_past_u64_or_spelled_otherwise_are_no_steps() {
        assert_eq!(step_number("0"), Some(0));
        assert_eq!(step_number("18446744073709551615"), Some(u64::MAX));
        for bad in ["", "18446744073709551616", "99999999999999999999", "1a", "-1", "+1", "١", "007", "00"] {
            assert_eq!(step_number(bad), None, "{bad}");
        }
    }

    /// The states of a transfer as the API gives them (`google.longrunning.Operation` with the
    /// Lustre v1 transfer metadata), counters as proto3 JSON's strings.
    #[test]
    fn operations_are_read_in_every_state() {
        let running = r#"{"name": "projects/p/locations/us-east1-b/operations/operation-1", "done": false,
            "metadata": {"@type": "type.googleapis.com/google.cloud.lustre.v1.ExportDataMetadata",
              "operationMetadata": {"counters": {"foundObjectsCount": "10", "bytesFoundCount": "1000", "objectsCopiedCount": "4", "bytesCopiedCount": "400"}, "transferType": "EXPORT"}}}"#;
        let op = Operation::from_json(running).unwrap();
        assert!(!op.done && op.error.is_none());
        assert_eq!((op.counters.found_bytes, op.counters.copied_bytes, op.counters.copied_objects), (1000, 400, 4));
        let failed = r#"{"name": "projects/p/locations/z/operations/o", "done": true, "error": {"code": 7, "message": "denied"},
            "metadata": {"operationMetadata": {"errorSummaries": [{"errorCode": "PERMISSION_DENIED", "errorCount": "2",
              "errorLogEntries": [{"uri": "gs://b/x", "errorDetails": ["no access"]}]}]}}}"#;
        let op = Operation::from_json(failed).unwrap();
        assert_eq!(op.error, Some((7, "denied".to_owned())));
        assert_eq!(op.failures, ["PERMISSION_DENIED: 2 (gs://b/x: no access)"]);
        let started = r#"{"name": "projects/p/locations/z/operations/o"}"#;
        assert!(!Operation::from_json(started).unwrap().done);
        for bad in [
            "",
            "{}",
            r#"{"name": "x"}"#,
            r#"{"name": "a/operations/b", "done": "yes"}"#,
            r#"{"name": "a/operations/b", "metadata": {"operationMetadata": {"counters": {"bytesCopiedCount": "-1"}}}}"#,
        ] {
            assert!(Operation::from_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bucket_holds_a_step_only_with_every_file_at_its_size() {
        let uri = GcsPath::new("gs://b-1/runs/r/step_5/").unwrap();
        let files = [File { path: "policy/weights/a".into(), size: 10 }, File { path: "config.yaml".into(), size: 3 }];
        let objects = objects_from_json(
            r#"[{"name": "runs/r/step_5/policy/weights/a", "size": 10}, {"name": "runs/r/step_5/config.yaml", "size": "3"},
                {"name": "runs/r/step_5/policy/", "size": 0}, {"name": "runs/r/step_50/config.yaml", "size": 3}]"#,
        )
        .unwrap();
        let whole = Comparison::of(&files, &uri, &objects);
        assert!(whole.holds_all() && whole.extra.is_empty(), "{whole:?}");
        let short = Comparison::of(&files, &uri, &objects[..1]);
        assert_eq!(short.missing, ["config.yaml"]);
        assert!(!short.holds_all() && short.describe().contains("1 file missing (config.yaml)"), "{}", short.describe());
        let mut cut = objects.clone();
        cut[0].size = 9;
        let resized = Comparison::of(&files, &uri, &cut);
        assert!(
            !resized.holds_all() && resized.describe().contains("policy/weights/a: 10 bytes, 9 in the bucket"),
            "{}",
            resized.describe()
        );
        let stale = Comparison::of(&files[1..], &uri, &objects);
        assert_eq!(stale.extra, ["policy/weights/a"]);
        assert!(objects_from_json("").unwrap().is_empty() && objects_from_json("[]").unwrap().is_empty());
        assert!(objects_from_json(r#"[{"name": "a", "size": -1}]"#).is_err());
    }

    #[test]
    fn the_agent_needs_an_unconditional_binding_of_a_role_that_holds_object_user() {
        let agent = service_agent("123");
        let member = format!("serviceAccount:{agent}");
        let policy = |role: &str, condition: &str| {
            format!(r#"{{"bindings": [{{"role": "{role}", "members": ["{member}"]{condition}}}], "etag": "x"}}"#)
        };
        assert!(policy_grants_agent(&policy("roles/storage.objectUser", ""), &member).unwrap());
        assert!(policy_grants_agent(&policy("roles/storage.admin", ""), &member).unwrap());
        assert!(!policy_grants_agent(&policy("roles/storage.objectViewer", ""), &member).unwrap());
        assert!(!policy_grants_agent(&policy("roles/storage.objectUser", r#", "condition": {"expression": "false"}"#), &member).unwrap());
        assert!(!policy_grants_agent(r#"{"etag": "x"}"#, &member).unwrap());
        assert!(policy_grants_agent("not json", &member).is_err());
    }

    #[test]
    fn bucket_storage_is_priced_only_where_a_list_price_is_cited() {
        let tib = 1u64 << 40;
        assert!((bucket_per_month("us-east1", tib).unwrap() - 20.48).abs() < 1e-9);
        assert!(bucket_cost_line("us-east1", tib).contains("$20.48/month"));
        assert_eq!(bucket_per_month("asia-southeast1", tib), None);
        assert!(bucket_cost_line("asia-southeast1", tib).contains("unpriced"));
    }
}
