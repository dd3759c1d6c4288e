//! The record of a deployment, kept in its folder as `state.json`.

use serde::{Deserialize, Serialize};

use super::Step;
use crate::model::Deployment;

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
    /// The Cluster Toolkit checkout the last completed provision ran (absolute): destroy runs
    /// the same one unless told otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolkit: Option<String>,
    /// The cluster existed before gke-rl (`project.existing_cluster`): gke-rl never deletes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub existing_cluster: bool,
    /// What exists because of this deployment.
    pub created: Created,
    /// What was copied between the Lustre instance and a bucket and verified there, file for
    /// file, each record signed with the cluster's run key: what a destroy may delete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<Kept>,
    /// A transfer started and not yet verified: the next export (or deploy) follows it to its
    /// end, never starts it over; destroy waits for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<Transfer>,
}

/// What a verified copy holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeptKind {
    /// A checkpoint, exported.
    Step,
    /// The Hugging Face model converted from a checkpoint, exported.
    Hf,
    /// The run's records, exported.
    Records,
    /// A checkpoint imported from a bucket (`deploy --resume-from`): it is in the bucket.
    Import,
}

/// One verified copy between the Lustre instance and a bucket: every file of the folder is in
/// both, with its size. Its `mac` (HMAC-SHA256 with the cluster's run key over the run, the
/// record's kind `kept` and its other fields, as the run's records are signed in the cluster:
/// gke-rl-in-cluster `records.py`) is what makes it count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// What it holds.
    pub kind: KeptKind,
    /// The run that wrote the checkpoint folder (its first submission id), or the job's name.
    pub run: String,
    /// The checkpoint folder, as the nodes mount it.
    pub checkpoints: String,
    /// The step.
    pub step: u64,
    /// The bucket folder.
    pub uri: String,
    /// Its files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// When it was verified, in seconds since the epoch.
    pub at: u64,
    /// The signature; empty until signed.
    #[serde(default)]
    pub mac: String,
}

impl Kept {
    /// The record's kind in its signature.
    pub const SIGNED_AS: &str = "kept";

    /// The text its signature covers: its fields but `mac`, as compact JSON with sorted keys
    /// (what `records.py`'s `json.dumps(sort_keys=True, separators=(",", ":"))` writes of it).
    pub fn signed_text(&self) -> String {
        let mut value = serde_json::to_value(self).expect("a record serializes");
        if let Some(fields) = value.as_object_mut() {
            fields.remove("mac");
        }
        value.to_string()
    }
}

/// A transfer that was started: enough to follow it again, or to ask the same start again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// Which way.
    pub direction: super::Direction,
    /// What it copies.
    pub kind: KeptKind,
    /// The run, as in [`Kept::run`].
    pub run: String,
    /// The checkpoint folder, as the nodes mount it.
    pub checkpoints: String,
    /// The step.
    pub step: u64,
    /// The file system's path it copies from or into.
    pub lustre_path: String,
    /// The bucket folder.
    pub uri: String,
    /// The request's id, sent again if its answer never came.
    pub request_id: String,
    /// The operation, once its start was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
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
    /// Add-ons deploy turned on in an existing cluster (gcloud's `--update-addons` names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addons: Vec<String>,
    /// The PersistentVolume (and its claim) deploy made for the Lustre instance on an
    /// existing cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
}

impl State {
    /// A fresh state for `deployment` in `project_id`.
    pub fn new(deployment: &Deployment, project_id: &str, rendered: &str) -> Self {
        let p = &deployment.project;
        State {
            version: State::VERSION,
            project_id: project_id.to_owned(),
            deployment: p.cluster_name.to_string(),
            region: p.region.to_string(),
            zone: p.zone.to_string(),
            rendered: rendered.to_owned(),
            existing_cluster: p.existing_cluster,
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
        if theirs != ours {
            return Some(format!(
                "the state file belongs to deployment {} in project {} ({} / {}), but the config is for {} in {} ({} / {})",
                theirs.1, theirs.0, theirs.2, theirs.3, ours.1, ours.0, ours.2, ours.3
            ));
        }
        // A cluster gke-rl did not create is never destroyed as its own, nor the other way round;
        // once gcluster may have run (from render on), a state is a made cluster's.
        match (self.existing_cluster, p.existing_cluster) {
            (true, false) => {
                return Some(format!(
                    "the state file records cluster {} as one gke-rl did not create, but the config says project.existing_cluster: false; \
                     gke-rl never deletes a cluster it did not create: set project.existing_cluster: true",
                    self.deployment
                ));
            }
            (false, true) if self.created.cluster.is_some() || self.done(Step::Render) => {
                return Some(format!(
                    "the state file records cluster {} as created by gke-rl, but the config says project.existing_cluster: true: \
                     set it to false to act on the deployment gke-rl made",
                    self.deployment
                ));
            }
            _ => {}
        }
        // On a cluster gke-rl did not create, what it made is named by the state: the config
        // must still name it, or a destroy would delete someone else's.
        let recorded = [
            ("lustre.instance_id", self.created.lustre_instance.as_deref(), deployment.lustre.instance_id.to_string()),
            ("ray.namespace", self.created.namespace.as_deref(), deployment.ray.namespace.to_string()),
            ("lustre.pvc_name (its volume)", self.created.volume.as_deref(), super::existing::persistent_volume(deployment)),
        ];
        let differs = recorded.into_iter().find(|(_, made, now)| self.existing_cluster && made.is_some_and(|made| made != now));
        differs.map(|(key, made, now)| {
            format!(
                "the state file records {} made by deploy on cluster {}, but the config's {key} names {now}: \
                 set it back until `destroy` has removed what deploy made",
                made.unwrap_or_default(),
                self.deployment
            )
        })
    }

    /// The format version this gke-rl writes and reads.
    pub const VERSION: u32 = 1;

    /// Parses a state file ([`crate::Error::State`] when it is not one, [`crate::Error::StateVersion`]
    /// when another gke-rl wrote it in a format this one does not know).
    pub fn from_json(text: &str) -> Result<State, crate::Error> {
        let state: State = serde_json::from_str(text).map_err(crate::Error::State)?;
        if state.version != State::VERSION {
            return Err(crate::Error::StateVersion { found: state.version, reads: State::VERSION });
        }
        Ok(state)
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
