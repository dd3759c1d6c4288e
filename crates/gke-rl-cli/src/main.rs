//! `gke-rl`: reproducible, checked NeMo-RL GRPO training on GKE with KubeRay and Managed Lustre.

fn main() -> std::process::ExitCode {
    gke_rl_cli::main()
}
