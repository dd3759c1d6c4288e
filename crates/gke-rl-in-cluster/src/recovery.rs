//! Why a Ray job failed, read from Ray's status message and the job's log: the infrastructure
//! went away (a node, the driver), which a resubmission recovers from since NeMo-RL resumes from
//! its newest checkpoint, or the program failed, which a resubmission would only repeat.

use serde::Serialize;

/// What ended a failed job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "cause", content = "detail", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Failure {
    /// A Ray node died (a Spot preemption, a node pool repair): the actors and tasks on it died.
    NodeLost(String),
    /// The job's driver or its supervisor was lost (the head restarted or its node went away).
    DriverLost(String),
    /// The program failed: an exception, a bad override, an out-of-memory kill on a live node.
    Program(String),
}

impl Failure {
    /// Whether resubmitting can help.
    pub fn is_infrastructure(&self) -> bool {
        matches!(self, Failure::NodeLost(_) | Failure::DriverLost(_))
    }

    /// The line that says why, as Ray or the program put it.
    pub fn detail(&self) -> &str {
        match self {
            Failure::NodeLost(detail) | Failure::DriverLost(detail) | Failure::Program(detail) => detail,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::NodeLost(detail) => write!(f, "a Ray node was lost ({detail})"),
            Failure::DriverLost(detail) => write!(f, "the job's driver was lost ({detail})"),
            Failure::Program(detail) => write!(f, "the program failed ({detail})"),
        }
    }
}

/// Ray's words that tell a lost node or driver from a program failure: the one definition that
/// [`classify`] reads and the in-cluster supervisor is generated with
/// ([`crate::supervisor::program`]).
#[derive(Debug, Serialize)]
pub struct Patterns {
    /// A lost node (2.46 to 2.54): actors and tasks that died with their node, and nodes the
    /// GCS marked dead.
    pub node_lost: &'static [&'static str],
    /// A lost driver or job supervisor.
    pub driver_lost: &'static [&'static str],
    /// Out of memory on a node that stays alive: the program's own doing.
    pub out_of_memory: &'static [&'static str],
    /// How the name of a Python exception ends.
    pub exception_ends: &'static [&'static str],
    /// What starts another thread's traceback, after the main one.
    pub thread_separator: &'static str,
}

/// The patterns.
pub const PATTERNS: Patterns = Patterns {
    node_lost: &[
        "its node has died",
        "NodeDiedError",
        "has been marked dead",
        "was marked dead",
        "node running the task has died",
        "the actor's node was terminated",
        // 2.46, for an actor whose owner's node went away.
        "node has crashed",
        // 2.46, for a call to an actor whose node went away mid-call (ActorUnavailableError,
        // recorded in tests/fixtures/ray-messages).
        "The actor is temporarily unavailable",
    ],
    driver_lost: &[
        "Job supervisor actor died",
        "job supervisor actor",
        "Job driver was lost",
        "driver was lost",
        // 2.46 names the dead supervisor actor's class only (recorded in tests/fixtures/ray-messages).
        "class_name: JobSupervisor",
    ],
    out_of_memory: &["OutOfMemoryError", "running low on memory"],
    exception_ends: &["Error", "Exception", "Exit", "Interrupt"],
    thread_separator: "\nException in thread ",
};

/// Why a job that ended FAILED failed, from Ray's `message` and the tail of its log. A program
/// failure wins when both are seen: an out-of-memory kill reads like a lost worker.
pub fn classify(message: &str, log_tail: &str) -> Failure {
    let lines = || message.lines().chain(log_tail.lines());
    let find = |markers: &[&str]| lines().find(|l| markers.iter().any(|m| l.contains(m))).map(|l| l.trim().to_owned());
    if let Some(line) = find(PATTERNS.out_of_memory) {
        return Failure::Program(line);
    }
    if let Some(line) = find(PATTERNS.node_lost) {
        return Failure::NodeLost(line);
    }
    if let Some(line) = find(PATTERNS.driver_lost) {
        return Failure::DriverLost(line);
    }
    Failure::Program(exception(log_tail).or_else(|| exception(message)).unwrap_or_else(|| "no reason given".to_owned()))
}

/// The exception a Python traceback ends in (`ValueError: step 2 went wrong`), before any other
/// thread's traceback that follows it; else the last line.
fn exception(text: &str) -> Option<String> {
    let main = text.split(PATTERNS.thread_separator).next().unwrap_or(text);
    let is_exception = |line: &&str| {
        let name = line.split([':', '(']).next().unwrap_or_default();
        !name.is_empty() && !name.contains(' ') && line.contains(": ") && PATTERNS.exception_ends.iter().any(|end| name.ends_with(end))
    };
    let lines = || main.lines().map(str::trim).rev();
    lines().find(is_exception).or_else(|| lines().find(|l| !l.is_empty())).map(str::to_owned)
}

/// What a resubmission's id adds to the first: `…-r1`, `…-r2`.
pub const RESTART_SUFFIX: &str = "-r";

/// The id of the `attempt`th resubmission of `first`.
pub fn restart_id(first: &str, attempt: u32) -> String {
    format!("{first}{RESTART_SUFFIX}{attempt}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Ray 2.54 reported for a job whose actor's node was killed (recorded here).
    const NODE_DIED: &str = "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\n\
        \tpid: 4512\n\tip: 192.0.2.2\n\
        The actor died because its node has died. Node Id: ed8e0a51b51782742e68d156ccb3ac04649ec8254b343ea2dc0b3893\n\
        \tthe actor's node was terminated expectedly: received SIGTERM";

    #[test]
    fn a_dead_node_is_infrastructure() {
        let failure = classify(NODE_DIED, "");
        assert!(failure.is_infrastructure(), "{failure:?}");
        assert!(failure.detail().starts_with("The actor died because its node has died"), "{failure}");
    }

    /// What Ray 2.46 reported for an actor on a killed node (recorded here).
    const OWNER_NODE_CRASHED: &str = "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n\
        \tclass_name: Trainer\n\tip: 192.0.2.2\n\
        The actor is dead because its owner has died. Owner Id: 04000000ffffffffffffffffffffffffffffffffffffffffffffffff \
        Owner Ip address: 192.0.2.2 Owner worker exit type: SYSTEM_ERROR Worker exit detail: Owner's node has crashed.";

    #[test]
    fn an_actor_whose_owners_node_crashed_is_infrastructure() {
        let failure = classify("Job entrypoint command failed with exit code 1", OWNER_NODE_CRASHED);
        assert!(
            matches!(&failure, Failure::NodeLost(line) if line.starts_with("The actor is dead because its owner has died")),
            "{failure:?}"
        );
    }

    #[test]
    fn an_exception_is_the_programs() {
        let log = "Traceback (most recent call last):\n  File \"train.py\", line 3\nValueError: step 2 went wrong\n";
        let failure = classify("Job entrypoint command failed with exit code 1", log);
        assert_eq!(failure, Failure::Program("ValueError: step 2 went wrong".into()));
        assert!(!failure.is_infrastructure());
    }

    #[test]
    fn the_exception_is_found_before_another_threads_noise() {
        let log = "trained step 1\nTraceback (most recent call last):\n  File \"train.py\", line 19\n\
                   ray.exceptions.RayTaskError(ValueError): ray::Trainer.step() (pid=1)\n  File \"train.py\", line 14\n\
                   ValueError: step 2 went wrong\nException in thread ray_print_logs:\nTraceback (most recent call last):\n\
                   BrokenPipeError: [Errno 32] Broken pipe\n";
        assert_eq!(classify("", log), Failure::Program("ValueError: step 2 went wrong".into()));
    }

    #[test]
    fn out_of_memory_on_a_live_node_is_not_retried() {
        let log = "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n";
        assert!(!classify("", log).is_infrastructure());
    }

    #[test]
    fn a_lost_supervisor_is_infrastructure() {
        let failure = classify("Job supervisor actor died: the actor's node was lost", "");
        assert!(failure.is_infrastructure());
        assert_eq!(restart_id("nemo-rl-grpo-test1", 2), "nemo-rl-grpo-test1-r2");
    }
}
