//! Why keeping a run's output failed: an export, an import, or a destroy that would lose a
//! checkpoint. Each says what fixes it; where the fix is a command, the command is data.

use std::time::Duration;

use gke_rl::lifecycle::Command;
use gke_rl::lifecycle::Direction;
use gke_rl_in_cluster::checkpoints::AtRisk;

/// Why keeping a run's output failed, or why destroy refuses to lose it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeepError {
    /// No bucket folder to export to.
    #[error("no bucket folder to export to: pass --to gs://BUCKET/PATH/, or set storage.export_to in the config")]
    NoDestination,
    /// No deployment state to record the verified copies in.
    #[error(
        "no deployment state in {}: export records what it verified in the state of the deployment whose Lustre instance it copies from; pass --folder if the deployment lives elsewhere",
        folder.display()
    )]
    NoState {
        /// The folder looked in.
        folder: std::path::PathBuf,
    },
    /// The cluster's run key, which signs the record of each verified copy, cannot be read.
    #[error(
        "cannot read the cluster's run key from Secret {namespace}/{secret} ({reason}): each verified copy is recorded signed with it; deploy makes it"
    )]
    NoRunKey {
        /// Its namespace.
        namespace: String,
        /// The Secret.
        secret: String,
        /// Why.
        reason: String,
    },
    /// The checkpoint lister could not answer.
    #[error("the cluster could not list {what} (job {id}): {why}")]
    Lister {
        /// What it was asked.
        what: String,
        /// Its job.
        id: String,
        /// Why it gave no answer.
        why: String,
    },
    /// No run and no checkpoint folder of the config holds a complete checkpoint.
    #[error("nothing to export: {looked}")]
    NothingToExport {
        /// What was looked at, for people.
        looked: String,
    },
    /// The run named is not one the cluster has records of.
    #[error("no run {run} writes checkpoints on the cluster; its runs are: {}", if runs.is_empty() { "none".to_owned() } else { runs.join(", ") })]
    NoSuchRun {
        /// The run named.
        run: String,
        /// The runs there are.
        runs: Vec<String>,
    },
    /// The step named is not a complete checkpoint.
    #[error("step {step} of {dir} cannot be exported: {why}")]
    NoSuchStep {
        /// The checkpoint folder.
        dir: String,
        /// The step.
        step: u64,
        /// Why: still being written, a link, not there.
        why: String,
    },
    /// A live run writes the checkpoint folder.
    #[error(
        "run {run} is writing {dir} (its supervisor's claim was kept {age_s:.0}s ago, submission {submission}): a save or NeMo-RL's cleanup of old steps would change what is copied; wait for the run to end, or stop it (`gke-rl stop {run}`)"
    )]
    RunWriting {
        /// The folder.
        dir: String,
        /// The run.
        run: String,
        /// Its submission that writes.
        submission: String,
        /// Seconds since its claim was kept fresh.
        age_s: f64,
    },
    /// A folder holds what a bucket cannot hold.
    #[error(
        "{dir}/{folder} holds what a bucket cannot hold: {}; a checkpoint is folders and regular files only: remove them, or save the checkpoint again",
        refused.join("; ")
    )]
    Unexportable {
        /// The checkpoint folder.
        dir: String,
        /// The folder in it.
        folder: String,
        /// What, and why.
        refused: Vec<String>,
    },
    /// The bucket folder holds files the checkpoint does not: an import of it would bring them back.
    #[error("{uri} holds objects this checkpoint lacks ({extra}): nothing is ever deleted from a bucket; export to another folder (--to)")]
    BucketFolderTaken {
        /// The bucket folder.
        uri: String,
        /// What differs.
        extra: String,
    },
    /// The bucket folder holds another export's step of that number.
    #[error(
        "{uri} holds step {step} exported from {theirs}, not from {ours}: an export never writes over another's; export to another folder (--to)"
    )]
    AnotherExport {
        /// The bucket folder.
        uri: String,
        /// The step.
        step: u64,
        /// Where its manifest says it came from.
        theirs: String,
        /// Where this export copies from.
        ours: String,
    },
    /// The bucket is one of the deployment's own, which destroy empties.
    #[error(
        "bucket {bucket} belongs to deployment {deployment} (gcluster made it), and destroy empties it: export to a bucket of your own"
    )]
    DeploymentsBucket {
        /// The bucket.
        bucket: String,
        /// The deployment.
        deployment: String,
    },
    /// The bucket cannot be read, or made.
    #[error("bucket {bucket} {problem} ({reason}); {}", fix.as_ref().map_or_else(|| "check the bucket's name".to_owned(), |fix| format!("ask for access: {fix}")))]
    Bucket {
        /// The bucket.
        bucket: String,
        /// What went wrong: "cannot be read", "cannot be made".
        problem: &'static str,
        /// gcloud's answer.
        reason: String,
        /// The command that grants what is missing, run by one who may.
        fix: Option<Command>,
    },
    /// The Lustre service agent lacks the role it transfers with, and gke-rl cannot grant it.
    #[error(
        "the Managed Lustre service agent {agent} needs {role} on bucket {bucket} to copy to and from it, and gke-rl could not grant it ({reason}); grant it: {fix}"
    )]
    AgentNotGranted {
        /// The bucket.
        bucket: String,
        /// The agent.
        agent: String,
        /// The role.
        role: &'static str,
        /// Why.
        reason: String,
        /// The command (more than one, with `&&`, when the agent must be made first).
        fix: String,
    },
    /// The transfer's start was refused.
    #[error("{} of {from} to {to} was refused: {reason}{}", direction_word(*.direction), fix.as_ref().map_or_else(String::new, |fix| format!("; {fix}")))]
    TransferRefused {
        /// Which way.
        direction: Direction,
        /// What is copied.
        from: String,
        /// Where to.
        to: String,
        /// gcloud's answer.
        reason: String,
        /// What fixes it, for people.
        fix: Option<String>,
    },
    /// Another transfer runs on the instance (one at a time), or is recorded as in flight.
    #[error("{what} runs (operation {operation}): {fix}")]
    TransferRunning {
        /// What it copies, for people.
        what: String,
        /// The operation.
        operation: String,
        /// What to do.
        fix: &'static str,
    },
    /// The transfer failed.
    #[error("{} {operation} failed: {message} (code {code}){}", direction_word(*.direction), if failures.is_empty() { String::new() } else { format!("; {}", failures.join("; ")) })]
    TransferFailed {
        /// Which way.
        direction: Direction,
        /// The operation.
        operation: String,
        /// `google.rpc.Code`.
        code: i64,
        /// Its message.
        message: String,
        /// Its error summaries.
        failures: Vec<String>,
    },
    /// The transfer did not end within the bound; it goes on.
    #[error("{} {operation} did not end within {}: it goes on in Managed Lustre; run the same command again to follow it to its end", direction_word(*.direction), crate::took(*.after))]
    TransferTimedOut {
        /// Which way.
        direction: Direction,
        /// The operation.
        operation: String,
        /// The bound.
        after: Duration,
    },
    /// The transfer said it was done, but the copy is not whole.
    #[error("{} {operation} said it was done, but {what}: {differs}; {fix}", direction_word(*.direction))]
    NotVerified {
        /// Which way.
        direction: Direction,
        /// The operation.
        operation: String,
        /// What was compared, for people.
        what: String,
        /// What differs.
        differs: String,
        /// What to do.
        fix: String,
    },
    /// The bucket folder to import holds no whole export: no record that one was verified, or
    /// other files than that record lists.
    #[error("{uri} is not a checkpoint `gke-rl export` verified: {why}; export it again (gke-rl export), or name another step")]
    NotAWholeExport {
        /// The bucket folder.
        uri: String,
        /// Why.
        why: String,
    },
    /// The checkpoint to import is not in the bucket.
    #[error("{uri} holds no files: name a checkpoint `gke-rl export` wrote (gs://BUCKET/PATH/RUN/step_N/)")]
    EmptyCheckpoint {
        /// The bucket folder.
        uri: String,
    },
    /// NeMo-RL's converter failed.
    #[error("the Hugging Face conversion (job {id}) {status}: {message}; its log: `gke-rl logs {id}`")]
    ConverterFailed {
        /// The converter's job.
        id: String,
        /// How it ended.
        status: String,
        /// Ray's message.
        message: String,
    },
    /// The step's weights are in no format NeMo-RL converts.
    #[error(
        "step {step} of {dir} has neither Megatron's policy/weights/iter_N nor a DCP checkpoint's policy/weights/.metadata: no converter of NeMo-RL's takes it"
    )]
    NoConverter {
        /// The checkpoint folder.
        dir: String,
        /// The step.
        step: u64,
    },
    /// The destroy would delete checkpoints no bucket holds.
    #[error("{}", at_risk_words(risky, export))]
    AtRisk {
        /// What would be lost.
        risky: Vec<AtRisk>,
        /// The command that exports each, in order.
        export: Vec<String>,
    },
    /// What the destroy would delete cannot be known.
    #[error(
        "destroy cannot tell what it would lose with Lustre instance {instance}: {why}; destroy again once the RayCluster's head lists the runs' checkpoints (`gke-rl resume` brings it back in cluster mode; in rayjob mode, while a run's RayJob is up), or delete them anyway (--discard-checkpoints)"
    )]
    CannotSurvey {
        /// The instance.
        instance: String,
        /// Why.
        why: String,
    },
    /// Destroy would delete the instance by name with no state to say what a bucket holds.
    #[error(
        "refusing to delete Lustre instance {instance}: the deployment's state in {} is gone, and with it the record of which checkpoints are in a bucket; copy them to one first (`{export}`, and any other folder your runs saved to), or delete them anyway with --discard-checkpoints",
        folder.display()
    )]
    StateLost {
        /// The instance.
        instance: String,
        /// The folder the state was looked for in.
        folder: std::path::PathBuf,
        /// The gcloud command that copies the config's checkpoint folder to a bucket.
        export: String,
    },
}

fn direction_word(direction: Direction) -> &'static str {
    match direction {
        Direction::Export => "the export",
        Direction::Import => "the import",
    }
}

fn at_risk_words(risky: &[AtRisk], export: &[String]) -> String {
    let mut words = String::from(
        "refusing to destroy: these checkpoints are on the Lustre instance only, and destroy deletes it with every file on it:",
    );
    for (risk, command) in risky.iter().zip(export) {
        words.push_str(&format!("\n  - {risk}\n      $ {command}"));
    }
    words.push_str(
        "\nexport them first (the commands above, or destroy --export-to gs://BUCKET/PATH/), or delete them anyway with --discard-checkpoints",
    );
    words
}
