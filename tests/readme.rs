//! The README's documented commands, taken from the README itself and run as written, with
//! the fake cloud where one is needed (issue 32): a README example that stops working fails
//! here. Left out, each with its reason: `cargo install` (a second full build; its warning is
//! `tidy::profile_overrides_name_packages_the_installed_binary_builds`), `man -l` (a viewer),
//! and `submit`, `deploy` and `destroy` themselves (the deploy and Ray job tests run them).

mod common;

use std::path::Path;
use std::process::Output;

use common::{Cloud, project_root, stderr};
use gke_rl_kube::fake::Pods;

/// The commands of the first `sh` block after the line that starts with `marker`: comments
/// dropped, `\` continuations joined, and the left-out ones skipped (those starting with an
/// entry, or equal to one that ends in `$`).
fn commands_after(marker: &str, left_out: &[&str]) -> Vec<String> {
    let readme = std::fs::read_to_string(project_root().join("README.md")).unwrap();
    let start = readme.lines().position(|l| l.starts_with(marker)).unwrap_or_else(|| panic!("README: no line starts with {marker:?}"));
    let block: Vec<&str> = readme.lines().skip(start).skip_while(|l| *l != "```sh").skip(1).take_while(|l| *l != "```").collect();
    let joined = block.join("\n").replace("\\\n", " ");
    let commands: Vec<String> = joined
        .lines()
        .map(|l| l.split(" # ").next().unwrap_or_default().trim().to_owned())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter(|l| !left_out.iter().any(|skip| skip.strip_suffix('$').map_or_else(|| l.starts_with(skip), |whole| l == whole)))
        .collect();
    assert!(!commands.is_empty(), "README: the block after {marker:?} has no command");
    commands
}

/// `commands` in one bash (-e: the first failure stops it) in `dir`, with the fake cloud, the
/// binary as `gke-rl`, and `HOME` in the scratch folder.
fn run(cloud: &Cloud, dir: &Path, commands: &[String]) -> Output {
    let script = format!("set -eu\n{}\n", commands.join("\n"));
    let out = cloud.wrapper("bash").current_dir(dir).env("HOME", cloud.root.join("home")).args(["-c", &script]).output().unwrap();
    assert!(out.status.success(), "{script}\nfailed: {}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    out
}

#[test]
fn the_readmes_commands_work_as_written() {
    let cloud = Cloud::new(Pods::ReadyAfter(0));
    let fake = project_root().join("tests/fixtures/fakes/fake.sh");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gke-rl"), cloud.root.join("bin/gke-rl")).unwrap();
    std::os::unix::fs::symlink(&fake, cloud.root.join("bin/kubectl")).unwrap();
    let project = cloud.root.join("project");
    std::fs::create_dir_all(project.join("home")).unwrap();
    // Where the README puts the checkout: ./cluster-toolkit.
    std::os::unix::fs::symlink(cloud.root.join("toolkit"), project.join("cluster-toolkit")).unwrap();

    // Install: the version and the completions, into a HOME that has no completions folder yet.
    run(&cloud, &project, &commands_after("The commands below are the `gke-rl` binary's", &["cargo install", "man -l"]));
    let completions = std::fs::read_to_string(cloud.root.join("home/.local/share/bash-completion/completions/gke-rl")).unwrap();
    assert!(completions.contains("complete -F"), "{completions}");

    // The config, copied from the example as the Quickstart says (the editor left out): its
    // schema line resolves beside the copy, and render picks the copy up.
    for folder in ["examples", "schemas"] {
        std::os::unix::fs::symlink(project_root().join(folder), project.join(folder)).unwrap();
    }
    run(&cloud, &project, &commands_after("## Quickstart", &["$EDITOR"]));
    let config = std::fs::read_to_string(project.join("gke-rl.yaml")).unwrap();
    let schema = config.lines().next().and_then(|l| l.split_once("$schema=")).map(|(_, path)| path).unwrap();
    assert!(project.join(schema).is_file(), "{schema} does not resolve beside the copy");

    // The render, then the deploy plan.
    run(&cloud, &project, &["gke-rl render".to_owned()]);
    let planned = run(
        &cloud,
        &project,
        &commands_after("Or start from the codelab's own `env.sh`", &["gke-rl deploy$", "gke-rl submit", "gke-rl destroy"]),
    );
    let plan = format!("{}{}", String::from_utf8_lossy(&planned.stdout), stderr(&planned));
    assert!(plan.contains("gcluster deploy") && plan.contains("kind: RayCluster"), "{plan}");

    // Step by step: the blueprint patch, gcluster (which checks every staged file is beside
    // the blueprint), kubectl.
    run(&cloud, &project, &commands_after("Step by step instead:", &["gke-rl submit"]));
    let calls = cloud.calls();
    assert!(
        calls.contains("gcluster deploy out/gke-a4.yaml -d out/gke-a4-deployment.yaml --vars project_id=my-project\\,authorized_cidr=203.0.113.7/32 --auto-approve"),
        "{calls}"
    );
    assert!(calls.contains("kubectl apply -f out/ray-cluster.yaml"), "{calls}");
}
