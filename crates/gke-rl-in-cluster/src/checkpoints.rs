//! The checkpoint lister: `checkpoints.py` ([`program`]), run as a Ray job on a node that mounts
//! the shared file system, and the reading of its answers. It tells `gke-rl export`, `destroy`
//! and `deploy --resume-from` what the runs left there (a [`Survey`]), lists one folder's files
//! with their sizes (a [`Listing`]), and makes and renames the folders an import fills. What a
//! destroy would lose ([`at_risk`]) is the survey set against what was kept in a bucket.
//!
//! The request travels in a file of the job's working dir ([`REQUEST_FILE`]), never on the
//! entrypoint's command line, so that no path of the user's passes through a shell. Every answer
//! ends with a `done` line: a log without one is an answer cut short, never an empty folder.

use serde::{Deserialize, Serialize};

use gke_rl::Deployment;
use gke_rl::durability::File;
use gke_rl::lifecycle::{Kept, KeptKind};

use crate::supervisor::INTERPRETERS;

/// What starts each line of the lister's answers in the job's log.
pub use crate::supervisor::CHECKPOINTS_PREFIX as PREFIX;
/// The program's file in the job's working dir.
pub const PROGRAM_FILE: &str = "checkpoints.py";
/// The request's file in the job's working dir.
pub const REQUEST_FILE: &str = "request.json";

const SOURCE: &str = include_str!("../python/checkpoints.py");

/// The lister's source, with gke-rl's tables and the records' reader.
pub fn program() -> String {
    crate::supervisor::generated(SOURCE)
}

/// The job's entrypoint: the same for every request.
pub fn entrypoint() -> Vec<String> {
    vec![INTERPRETERS[0].to_owned(), PROGRAM_FILE.to_owned(), REQUEST_FILE.to_owned()]
}

/// What the lister is asked to do. Every path is as the nodes mount it, below `mount`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "do", rename_all = "kebab-case")]
pub enum Request {
    /// The runs of `runs` and the checkpoint folders they and `dirs` name.
    Survey {
        /// The file system's mount.
        mount: String,
        /// The runs folder.
        runs: String,
        /// Checkpoint folders to look at whether or not a run names them.
        dirs: Vec<String>,
    },
    /// The files of the folder `name` of `dir`.
    Files {
        /// The file system's mount.
        mount: String,
        /// The folder that holds it.
        dir: String,
        /// Its name there.
        name: String,
    },
    /// Makes `dir` and its `tmp_step_N` for an import of step `step`, unless a newer step is there.
    Prepare {
        /// The file system's mount.
        mount: String,
        /// The checkpoint folder.
        dir: String,
        /// The step imported.
        step: u64,
    },
    /// Renames the folder `from` of `dir` to `to`, which must not exist; with `step`, not while
    /// a newer step is there (an import's).
    Commit {
        /// The file system's mount.
        mount: String,
        /// The folder that holds both.
        dir: String,
        /// The folder filled.
        from: String,
        /// Its name once whole.
        to: String,
        /// The step `to` is, for an imported checkpoint.
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<u64>,
    },
}

impl Request {
    /// The survey of `deployment`'s runs: its runs folder (`runs`, else the deployment's) and
    /// its configured checkpoint folder.
    pub fn survey(deployment: &Deployment, runs: Option<&str>) -> Request {
        Request::Survey {
            mount: deployment.lustre.mount_path.to_string(),
            runs: runs.map_or_else(|| crate::supervisor::runs_dir(deployment), str::to_owned),
            dirs: vec![deployment.job.checkpointing.dir.to_string()],
        }
    }

    /// The request file's contents.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a request serializes")
    }
}

/// Why the lister gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// It refused, and said why.
    Refused(String),
    /// Its answer has no last line: it was cut short (the job failed or its log was lost).
    Unfinished,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(why) => f.write_str(why),
            Failure::Unfinished => {
                f.write_str("its answer was cut short: the job's log has no last line (the job failed, or Ray lost its log)")
            }
        }
    }
}

/// A run that names a checkpoint folder, with its last record's time.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct RunSeen {
    /// Its first submission id.
    pub run: String,
    /// When it last recorded something, in seconds since the epoch (0: never).
    pub last: f64,
}

/// A name in a checkpoint folder refused for what it is.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct NameRefused {
    /// The name (cut to 200 characters).
    pub name: String,
    /// Why.
    pub why: String,
}

/// A file or folder below a step refused for what it is.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct PathRefused {
    /// Its path below the step.
    pub path: String,
    /// Why.
    pub why: String,
}

/// A live run's claim on a checkpoint folder.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct Claim {
    /// The run.
    pub run: Option<String>,
    /// Its submission that writes.
    pub submission: Option<String>,
    /// Where its supervisor runs.
    pub host: Option<String>,
    /// Seconds since the claim was last kept fresh.
    pub age_s: f64,
}

/// The newest complete step of a checkpoint folder.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct Newest {
    /// Its number.
    pub step: u64,
    /// Its files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// What in it is no file a bucket can hold (links, names that are not UTF-8).
    pub refused: Vec<PathRefused>,
}

/// A checkpoint folder as the survey found it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct Folder {
    /// The folder, as the nodes mount it.
    pub dir: String,
    /// The runs whose records name it, the most recently active last.
    pub runs: Vec<RunSeen>,
    /// Its complete steps (`step_N` folders), ascending.
    pub steps: Vec<u64>,
    /// Its half-written steps (`tmp_step_N`).
    pub partial: Vec<u64>,
    /// Steps a save's swap set aside (`old_step_N`).
    pub old: Vec<u64>,
    /// Names refused for what they are (a link named as a step, a number past 64 bits).
    pub refused: Vec<NameRefused>,
    /// A live run's claim, when one holds the folder.
    pub claim: Option<Claim>,
    /// The newest complete step.
    pub newest: Option<Newest>,
    /// Why there is nothing to read, when the folder is not there.
    #[serde(default)]
    pub missing: Option<String>,
    /// Why the folder could not be read, when it is there (a link on the way, no permission):
    /// what it holds is unknown.
    #[serde(default)]
    pub unreadable: Option<String>,
    /// Runs whose run.json nobody signed that name the folder: it is looked at all the same.
    #[serde(default)]
    pub unsigned: Vec<String>,
}

impl Folder {
    /// The run that writes the folder: the one most recently active, if a run names it.
    pub fn run(&self) -> Option<&str> {
        self.runs.last().map(|r| r.run.as_str())
    }
}

/// What the runs left on the shared file system.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Survey {
    /// Each checkpoint folder a run or the config names.
    pub folders: Vec<Folder>,
    /// Genuine runs in the runs folder.
    pub runs: u64,
    /// Run folders whose run.json nobody vouches for (not counted as runs).
    pub unsigned_runs: u64,
    /// Why the runs folder could not be read, when it could not (one that is not there holds
    /// no run): the checkpoint folders its runs name are then unknown.
    pub runs_unread: Option<String>,
}

/// The files of one folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Every regular file with its size.
    pub files: Vec<File>,
    /// What is no file a bucket can hold.
    pub refused: Vec<PathRefused>,
    /// The format of a step's weights, when the folder is a step.
    pub weights: Option<Weights>,
    /// The folder is not there (nothing was listed because there is nothing).
    pub missing: bool,
}

impl Listing {
    /// Its bytes.
    pub fn bytes(&self) -> u64 {
        gke_rl::durability::total_bytes(&self.files)
    }
}

/// The format of a step's weights, and where they are below the step.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Weights {
    /// `megatron` (`iter_N` folders) or `dcp` (a `.metadata` file).
    pub format: String,
    /// Their folder below the step.
    pub path: String,
}

/// What a prepared import found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The step's `step_N` is there already (an earlier import finished).
    pub existing: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Line {
    Folder { folder: Folder },
    File { file: String, size: u64 },
    Refused { refused: String, why: Option<String> },
    Done(Done),
}

#[derive(Deserialize)]
struct Done {
    done: String,
    /// Folder lines the survey printed.
    #[serde(default)]
    folders: Option<usize>,
    /// File lines the listing printed.
    #[serde(default)]
    files: Option<usize>,
    #[serde(default)]
    runs: u64,
    #[serde(default)]
    unsigned_runs: u64,
    #[serde(default)]
    runs_unread: Option<String>,
    #[serde(default)]
    existing: bool,
    #[serde(default)]
    weights: Option<Weights>,
    #[serde(default)]
    missing: bool,
}

/// The lister's lines of a log, and its last one, or why the answer is no answer.
fn lines(log: &str, request: &str) -> Result<(Vec<Line>, Done), Failure> {
    let mut read = Vec::new();
    for line in log.lines() {
        let Some(json) = line.trim_end().strip_prefix(PREFIX) else { continue };
        match serde_json::from_str::<Line>(json) {
            Ok(Line::Done(done)) if done.done == request => return Ok((read, done)),
            Ok(Line::Refused { refused, why: None }) => return Err(Failure::Refused(refused)),
            Ok(line) => read.push(line),
            Err(_) => {}
        }
    }
    Err(Failure::Unfinished)
}

/// The survey in a lister's log.
pub fn survey(log: &str) -> Result<Survey, Failure> {
    let (read, done) = lines(log, "survey")?;
    let folders: Vec<Folder> =
        read.into_iter().filter_map(|line| if let Line::Folder { folder } = line { Some(folder) } else { None }).collect();
    whole(done.folders, folders.len())?;
    Ok(Survey { folders, runs: done.runs, unsigned_runs: done.unsigned_runs, runs_unread: done.runs_unread })
}

/// An answer holds as many lines as its last line counts: one that could not be read is a
/// gap, never a folder or a file less.
fn whole(said: Option<usize>, read: usize) -> Result<(), Failure> {
    match said {
        Some(said) if said != read => Err(Failure::Refused(format!("its answer names {said} entries and {read} could be read"))),
        _ => Ok(()),
    }
}

/// The listing in a lister's log.
pub fn listing(log: &str) -> Result<Listing, Failure> {
    let (read, done) = lines(log, "files")?;
    let mut listing = Listing { weights: done.weights, missing: done.missing, ..Listing::default() };
    for line in read {
        match line {
            Line::File { file, size } => listing.files.push(File { path: file, size }),
            Line::Refused { refused, why: Some(why) } => listing.refused.push(PathRefused { path: refused, why }),
            _ => {}
        }
    }
    whole(done.files, listing.files.len())?;
    Ok(listing)
}

/// What a prepare found, from a lister's log.
pub fn prepared(log: &str) -> Result<Prepared, Failure> {
    lines(log, "prepare").map(|(_, done)| Prepared { existing: done.existing })
}

/// Whether a commit was done, from a lister's log.
pub fn committed(log: &str) -> Result<(), Failure> {
    lines(log, "commit").map(drop)
}

/// A checkpoint a destroy would lose: a folder's newest complete step that no verified copy
/// in a bucket holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AtRisk {
    /// The checkpoint folder.
    pub dir: String,
    /// The run that wrote it, if a run's records name it.
    pub run: Option<String>,
    /// The step.
    pub step: u64,
    /// Its files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The newest step a verified copy holds, if any.
    pub kept: Option<u64>,
    /// The step is an `old_step_N` a save's swap set aside and stopped before it put `step_N`
    /// in its place: the newest complete checkpoint, which the run's supervisor puts back as
    /// `step_N` when the run starts again (its files are not counted).
    pub swapped: bool,
}

impl std::fmt::Display for AtRisk {
    /// `DIR: step N of run R (FILES, BYTES; what a bucket holds)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let run = self.run.as_deref().map_or_else(|| "no run's records name it".to_owned(), |run| format!("run {run}"));
        let kept = self.kept.map_or_else(|| "never exported".to_owned(), |step| format!("step {step} is the newest in a bucket"));
        let (dir, step) = (&self.dir, self.step);
        if self.swapped {
            return write!(f, "{dir}: step {step} of {run} (old_step_{step}, a save stopped between its renames; {kept})");
        }
        let files = gke_rl::durability::files(usize::try_from(self.files).unwrap_or(usize::MAX));
        write!(f, "{dir}: step {step} of {run} ({files}, {}; {kept})", gke_rl::quote::bytes(self.bytes as f64))
    }
}

/// The folders of `survey` whose newest complete step no verified, genuine copy of `kept` holds:
/// one of that step with the same files and bytes (a copy of an older step, or of a step of that
/// number saved again since, does not count). The newest complete step may be an `old_step_N`
/// without its `step_N`: a save stopped between its renames, which only a copy of that step
/// keeps.
pub fn at_risk(survey: &Survey, kept: &[&Kept]) -> Vec<AtRisk> {
    survey
        .folders
        .iter()
        .filter_map(|folder| {
            let wanted = wanted(folder)?;
            if kept.iter().any(|k| holds(folder, wanted, k)) {
                return None;
            }
            let in_bucket = kept.iter().filter(|k| of_folder(folder, k)).map(|k| k.step).max();
            let (files, bytes) = wanted.size.unwrap_or_default();
            Some(AtRisk {
                dir: folder.dir.clone(),
                run: folder.run().map(str::to_owned),
                step: wanted.step,
                files,
                bytes,
                kept: in_bucket,
                swapped: wanted.size.is_none(),
            })
        })
        .collect()
}

/// The records of `kept` that [`at_risk`] counts as holding a folder's newest step: what a
/// destroy relies on, to be looked at in its bucket again.
pub fn relied_on<'a>(survey: &Survey, kept: &[&'a Kept]) -> Vec<&'a Kept> {
    kept.iter().copied().filter(|k| survey.folders.iter().any(|folder| wanted(folder).is_some_and(|w| holds(folder, w, k)))).collect()
}

/// The step of a folder a copy must hold, with its files and bytes; none for an `old_step_N`
/// (not listed: the swap's step as a whole).
#[derive(Clone, Copy)]
struct Wanted {
    step: u64,
    size: Option<(u64, u64)>,
}

fn wanted(folder: &Folder) -> Option<Wanted> {
    let swapped = folder.old.iter().copied().filter(|old| !folder.steps.contains(old)).max();
    match (&folder.newest, swapped) {
        (newest, Some(old)) if newest.as_ref().is_none_or(|n| n.step < old) => Some(Wanted { step: old, size: None }),
        (Some(newest), _) => Some(Wanted { step: newest.step, size: Some((newest.files, newest.bytes)) }),
        (None, _) => None,
    }
}

fn of_folder(folder: &Folder, k: &Kept) -> bool {
    matches!(k.kind, KeptKind::Step | KeptKind::Import) && same_folder(&k.checkpoints, &folder.dir)
}

fn holds(folder: &Folder, wanted: Wanted, k: &Kept) -> bool {
    of_folder(folder, k) && k.step == wanted.step && wanted.size.is_none_or(|size| (k.files, k.bytes) == size)
}

fn same_folder(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(value: &str) -> String {
        format!("{PREFIX}{value}\n")
    }

    #[test]
    fn a_survey_is_read_only_whole() {
        let folder = r#"{"folder": {"dir": "/lustre/ckpt", "runs": [{"run": "raysubmit_a", "last": 5.0}], "steps": [2, 4], "partial": [6], "old": [],
            "refused": [{"name": "step_99999999999999999999", "why": "its number does not fit 64 bits"}], "claim": null,
            "newest": {"step": 4, "files": 3, "bytes": 300, "refused": []}}}"#;
        let log = format!(
            "noise\n{}{}",
            line(&folder.replace('\n', " ")),
            line(r#"{"done": "survey", "folders": 1, "runs": 1, "unsigned_runs": 2}"#)
        );
        let survey = survey(&log).unwrap();
        assert_eq!((survey.runs, survey.unsigned_runs, survey.folders.len()), (1, 2, 1));
        let read = &survey.folders[0];
        assert_eq!(
            (read.run(), read.steps.as_slice(), read.newest.as_ref().map(|n| n.bytes)),
            (Some("raysubmit_a"), &[2, 4][..], Some(300))
        );
        assert_eq!(read.refused[0].why, "its number does not fit 64 bits");
        // A log cut before its last line is no survey, whatever it holds: never "nothing there".
        assert_eq!(super::survey(&line(&folder.replace('\n', " "))), Err(Failure::Unfinished));
        assert_eq!(super::survey(""), Err(Failure::Unfinished));
        assert_eq!(super::survey(&line(r#"{"refused": "/lustre is not there"}"#)), Err(Failure::Refused("/lustre is not there".into())));
    }

    #[test]
    fn a_listing_keeps_files_refusals_and_the_weights_format() {
        let log = [
            line(r#"{"file": "config.yaml", "size": 12}"#),
            line(r#"{"file": "policy/weights/iter_0000004/a.distcp", "size": 100}"#),
            line(r#"{"refused": "evil", "why": "a link"}"#),
            line(r#"{"done": "files", "files": 2, "bytes": 112, "refused": 1, "weights": {"format": "megatron", "path": "policy/weights/iter_0000004"}}"#),
        ]
        .concat();
        let listing = listing(&log).unwrap();
        assert_eq!(listing.bytes(), 112);
        assert_eq!(listing.refused, [PathRefused { path: "evil".into(), why: "a link".into() }]);
        assert_eq!(listing.weights.as_ref().map(|w| w.format.as_str()), Some("megatron"));
        assert_eq!(super::listing(&log[..log.rfind(PREFIX).unwrap()]), Err(Failure::Unfinished));
        // Another request's last line ends nothing.
        assert_eq!(super::listing(&line(r#"{"done": "survey"}"#)), Err(Failure::Unfinished));
    }

    fn kept(step: u64, dir: &str) -> Kept {
        Kept {
            kind: KeptKind::Step,
            run: "r".into(),
            checkpoints: dir.into(),
            step,
            uri: "gs://b-1/r/step_1/".into(),
            files: 2,
            bytes: 20,
            at: 0,
            mac: String::new(),
        }
    }

    #[test]
    fn only_a_copy_of_the_newest_step_with_its_files_keeps_a_folder() {
        let folder = |dir: &str, step: Option<u64>| Folder {
            dir: dir.into(),
            runs: vec![],
            steps: step.into_iter().collect(),
            partial: vec![],
            old: vec![],
            refused: vec![],
            claim: None,
            newest: step.map(|step| Newest { step, files: 2, bytes: 20, refused: vec![] }),
            missing: None,
            unreadable: None,
            unsigned: vec![],
        };
        let survey = Survey {
            folders: vec![folder("/lustre/a", Some(8)), folder("/lustre/b", Some(4)), folder("/lustre/c", None)],
            runs: 2,
            unsigned_runs: 0,
            runs_unread: None,
        };
        let (old_a, b, other) = (kept(6, "/lustre/a"), kept(4, "/lustre/b/"), kept(9, "/lustre/z"));
        let risky = at_risk(&survey, &[&old_a, &b, &other]);
        assert_eq!(risky.len(), 1);
        assert_eq!((risky[0].dir.as_str(), risky[0].step, risky[0].kept), ("/lustre/a", 8, Some(6)));
        // A copy of a step of that number with other files: the step was saved again since.
        let resaved = Kept { bytes: 19, ..kept(4, "/lustre/b") };
        assert_eq!(at_risk(&survey, &[&kept(8, "/lustre/a"), &resaved]).len(), 1, "a copy of other bytes keeps nothing");
        // A copy of a newer step than the folder holds now (it was emptied and a new run began).
        assert_eq!(at_risk(&survey, &[&kept(9, "/lustre/a"), &b]).len(), 1, "only a copy of the newest step keeps it");
        assert_eq!(at_risk(&survey, &[]).len(), 2);
        let mut hf = kept(8, "/lustre/a");
        hf.kind = KeptKind::Hf;
        assert_eq!(at_risk(&survey, &[&hf, &b]).len(), 1, "a Hugging Face copy is no checkpoint");
        // A save stopped between its renames: old_step_10 is the newest complete checkpoint.
        let mut swapped = survey.clone();
        swapped.folders[0].old = vec![10];
        let risky = at_risk(&swapped, &[&kept(8, "/lustre/a"), &b]);
        assert_eq!((risky.len(), risky[0].step, risky[0].swapped), (1, 10, true), "{risky:?}");
        swapped.folders[0].steps.push(10);
        swapped.folders[0].newest = Some(Newest { step: 10, files: 2, bytes: 20, refused: vec![] });
        assert!(at_risk(&swapped, &[&kept(10, "/lustre/a"), &b]).is_empty(), "beside its step_10, old_step_10 is an orphan");
    }

    #[test]
    fn the_request_travels_as_json_and_the_entrypoint_names_no_path() {
        let survey = Request::survey(&Deployment::default(), None);
        assert_eq!(
            survey.to_json(),
            r#"{"do":"survey","mount":"/lustre","runs":"/lustre/gke-rl/runs","dirs":["/lustre/nemo_rl_qwen_72b_ds_cp/nemo-rl-grpo-test1"]}"#
        );
        assert_eq!(entrypoint(), ["python3", "checkpoints.py", "request.json"]);
        assert!(
            program().contains("\"checkpoints_prefix\": \"gke-rl-checkpoints \"")
                || program().contains("\"checkpoints_prefix\":\"gke-rl-checkpoints \"")
        );
    }
}
