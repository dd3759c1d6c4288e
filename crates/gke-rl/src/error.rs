//! The SDK's error type. Input a user wrote is refused with a positioned [`crate::Diagnostic`]
//! (file, line, column, fix); everything else the SDK refuses is an [`Error`].

/// Why the SDK refused a value, a file or a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A value that its type does not allow: a name, a zone, a CIDR, a quantity…
    #[error("`{value}` {problem}")]
    InvalidValue {
        /// The value as given.
        value: String,
        /// What is wrong and what is expected, e.g. "is not a Google Cloud zone such as `us-east1-b`".
        problem: String,
    },
    /// The image is not in the table of known images and the config gives no Ray version.
    #[error("the Ray version inside image `{image}` is unknown: set `ray.ray_version` to the version the image ships")]
    UnknownRayVersion {
        /// The image.
        image: String,
    },
    /// `ray.auth: token` on an image whose Ray has no token authentication.
    #[error("`ray.auth: token` needs Ray {} or newer; the image's Ray is {version}", crate::knowledge::TOKEN_AUTH_SINCE)]
    TokenAuthUnsupported {
        /// The image's Ray.
        version: String,
    },
    /// `fabric.mode: on` on a machine type whose fabric gke-rl cannot wire.
    #[error("`fabric.mode: on`, but machine type `{machine}` has no fabric gke-rl wires: {why}; set `fabric.mode: auto` or `off`")]
    NoFabric {
        /// The machine type.
        machine: String,
        /// Why not.
        why: String,
    },
    /// A state file that gke-rl did not write, or wrote in another format.
    #[error("not a gke-rl state file")]
    State(#[source] serde_json::Error),
    /// A state file in a format version this gke-rl does not read.
    #[error("the state file has format version {found}; this gke-rl reads version {reads}: use the gke-rl that wrote it")]
    StateVersion {
        /// The file's version.
        found: u32,
        /// The version this gke-rl reads.
        reads: u32,
    },
    /// The Kueue configuration of a queued run cannot be staged.
    #[error("the gke-a4 blueprint's kueue-configuration.yaml.tftpl cannot be staged for job.queue: {0}")]
    Kueue(Box<StageError>),
}

/// Why gke-rl cannot stage its Kueue configuration from a blueprint's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StageError {
    /// The template is not YAML once templated.
    #[error("{0}")]
    Syntax(crate::yaml::Error),
    /// The template is not shaped as gke-rl knows it.
    #[error(
        "it {0}, and gke-rl knows the gke-a4 blueprint's one ClusterQueue covering nvidia.com/gpu alone: restore the file from the Cluster Toolkit checkout, or leave job.queue out"
    )]
    Shape(String),
    /// A machine whose allocatable CPU and memory gke-rl does not know.
    #[error(
        "job.queue needs the allocatable CPU and memory of machine type `{0}` for the ClusterQueue's quota, and gke-rl does not know them: use a machine type it knows, or leave job.queue out"
    )]
    UnknownMachine(String),
}
