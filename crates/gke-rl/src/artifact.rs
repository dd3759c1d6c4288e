//! The kinds of file gke-rl renders and checks: the one table of their file names, how people
//! call them, and how a file is recognised as one. Render names its files from here, validate
//! detects them, and the operations find the job script by it.

/// A kind of file gke-rl renders or checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArtifactKind {
    /// `env.sh`.
    EnvSh,
    /// A gcluster deployment file (`vars:`).
    DeploymentFile,
    /// A KubeRay `RayCluster` manifest.
    RayCluster,
    /// The command that creates the token Secret from the environment (rendered, not checked).
    SecretInstructions,
    /// `.rayignore`.
    RayIgnore,
    /// A Ray runtime-env JSON.
    RuntimeEnv,
    /// The NeMo-RL job script.
    JobScript,
    /// The NetworkPolicy of a Ray without token authentication (rendered, not checked).
    NetworkPolicy,
    /// A Cluster Toolkit blueprint (checked, and patched by `gke-rl blueprint`).
    Blueprint,
    /// The patch `gke-rl blueprint` writes beside the patched blueprint (not checked).
    BlueprintPatch,
    /// A KubeRay `RayJob` manifest.
    RayJob,
    /// A Kueue configuration: the template the blueprint stages, or gke-rl's for a queued run.
    KueueConfiguration,
}

impl ArtifactKind {
    /// The kinds the validator checks: those [`ArtifactKind::detect`] finds.
    pub const CHECKED: [ArtifactKind; 9] = [
        ArtifactKind::EnvSh,
        ArtifactKind::RayCluster,
        ArtifactKind::RayJob,
        ArtifactKind::RuntimeEnv,
        ArtifactKind::RayIgnore,
        ArtifactKind::JobScript,
        ArtifactKind::DeploymentFile,
        ArtifactKind::Blueprint,
        ArtifactKind::KueueConfiguration,
    ];

    /// The file's name as gke-rl writes it.
    pub const fn file(self) -> &'static str {
        match self {
            ArtifactKind::EnvSh => "env.sh",
            ArtifactKind::DeploymentFile => "gke-a4-deployment.yaml",
            ArtifactKind::RayCluster => "ray-cluster.yaml",
            ArtifactKind::SecretInstructions => "hf-token-secret.yaml",
            ArtifactKind::RayIgnore => ".rayignore",
            ArtifactKind::RuntimeEnv => "ray_runtime_env.json",
            ArtifactKind::JobScript => "run_nemo_rl.sh",
            ArtifactKind::NetworkPolicy => "ray-network-policy.yaml",
            ArtifactKind::Blueprint => "gke-a4.yaml",
            ArtifactKind::BlueprintPatch => "gke-a4.yaml.patch",
            ArtifactKind::RayJob => "ray-job.yaml",
            ArtifactKind::KueueConfiguration => "kueue-configuration.yaml.tftpl",
        }
    }

    /// What the file is, as people say it.
    pub const fn what(self) -> &'static str {
        match self {
            ArtifactKind::EnvSh => "env.sh",
            ArtifactKind::DeploymentFile => "gcluster deployment file",
            ArtifactKind::RayCluster => "RayCluster",
            ArtifactKind::SecretInstructions => "token Secret instructions",
            ArtifactKind::RayIgnore => ".rayignore",
            ArtifactKind::RuntimeEnv => "runtime env",
            ArtifactKind::JobScript => "job script",
            ArtifactKind::NetworkPolicy => "NetworkPolicy",
            ArtifactKind::Blueprint => "blueprint",
            ArtifactKind::BlueprintPatch => "blueprint patch",
            ArtifactKind::RayJob => "RayJob",
            ArtifactKind::KueueConfiguration => "Kueue configuration",
        }
    }

    /// Whether the file is a program to run (mode 0755).
    pub const fn is_executable(self) -> bool {
        matches!(self, ArtifactKind::JobScript)
    }

    /// What the file `name` holding `text` is, by name first and content second; `None` for a
    /// file no rule checks.
    pub fn detect(name: &str, text: &str) -> Option<ArtifactKind> {
        let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
        if base == ArtifactKind::RayIgnore.file() {
            return Some(ArtifactKind::RayIgnore);
        }
        if base.ends_with(".sh") {
            let launches = text.lines().any(|l| !l.trim_start().starts_with('#') && l.contains(".py") && l.contains("python"));
            return Some(if launches || base.starts_with("run_") { ArtifactKind::JobScript } else { ArtifactKind::EnvSh });
        }
        if base.ends_with(".json") {
            return (base.contains("runtime_env") || text.contains("\"env_vars\"")).then_some(ArtifactKind::RuntimeEnv);
        }
        if base == ArtifactKind::KueueConfiguration.file() {
            return Some(ArtifactKind::KueueConfiguration);
        }
        if base.ends_with(".yaml") || base.ends_with(".yml") {
            let top_level = |key: &str| text.lines().any(|l| l.starts_with(key) && l[key.len()..].starts_with(':'));
            if text.lines().any(|l| l.trim() == "kind: RayCluster") {
                return Some(ArtifactKind::RayCluster);
            }
            if text.lines().any(|l| l.trim() == "kind: RayJob") {
                return Some(ArtifactKind::RayJob);
            }
            if top_level("blueprint_name") || top_level("deployment_groups") {
                return Some(ArtifactKind::Blueprint);
            }
            if text.lines().any(|l| l.trim() == "kind: ClusterQueue") {
                return Some(ArtifactKind::KueueConfiguration);
            }
            if top_level("vars") {
                return Some(ArtifactKind::DeploymentFile);
            }
        }
        None
    }
}
