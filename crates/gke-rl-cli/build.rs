//! Records the commit the binary is built from, for `gke-rl --version`.

use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        // Without optional locks `status` never rewrites the index it is rerun on: a refresh
        // there (racy entries right after a clone) made the next build run this again and
        // rebuild the CLI, the first `render` after `ci` among them.
        Some(commit) if git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty()) => {
            format!("{commit}, modified")
        }
        Some(commit) => commit,
        None => "unknown".to_owned(),
    };
    println!("cargo:rustc-env=GKE_RL_COMMIT={commit}");
    // Rebuilt when HEAD moves (a commit, a checkout) or the index changes.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{reference}");
        }
    }
}
