//! The documented commands of the README and the guide (`docs/`), taken from the pages and run
//! as written, with the fake cloud where one is needed (issue 32): an example that stops working
//! fails here, and a new `sh` block is either run here or listed in [`NOT_RUN`] with its reason
//! (issue 52). Left out of the blocks that run, each with its reason: `man -l` (a viewer), and
//! `submit`, `deploy`, `export` and `destroy` themselves (the deploy and Ray job tests run them).

use std::path::Path;
use std::process::Output;

use crate::common::{Cloud, project_root, stderr};
use gke_rl_kube::fake::Pods;

/// The `sh` blocks the test runs: each the first after the line of its page that starts with
/// the marker.
const RUN: &[(&str, &str)] = &[
    ("README.md", "The commands below are the `gke-rl` binary's"),
    ("README.md", "### A new cluster, with Cluster Toolkit"),
    ("README.md", "Or start from the codelab's own `env.sh`"),
    ("README.md", "### Your own cluster and Lustre"),
    ("docs/deploy.md", "Step by step instead:"),
    ("docs/validate.md", "`gke-rl validate` checks the artifacts together"),
];

/// The `sh` blocks not run here, by page and first command, with the reason.
const NOT_RUN: &[(&str, &str, &str)] = &[
    (
        "README.md",
        "curl --proto '=https' --tlsv1.2 -LsSf https://github.com/gke-rl/gke-rl/releases/",
        "it downloads a release: `cargo xtask dist` (a step of `ci`) runs this installer on the archive it builds",
    ),
    (
        "README.md",
        "cargo binstall",
        "it downloads a release: `cargo xtask dist` checks that the binstall metadata names the archive it builds and the binary inside",
    ),
    (
        "README.md",
        "cargo install --locked",
        "a second full build, of the code `ci` tests; `tidy::profile_overrides_name_packages_the_installed_binary_builds` checks its profile",
    ),
    (
        "README.md",
        "ray start --head",
        "it needs a Ray head of its own: crates/gke-rl-cli/tests/ray_jobs.rs submits to real heads of every tested Ray",
    ),
    ("README.md", "cargo xtask render", "the set-up commands: `cargo xtask ci` is the run this test is part of"),
    ("docs/development.md", "cargo xtask render", "the set-up commands, as in the README"),
    ("docs/commands.md", "cargo test -p gke-rl-kube --test real_cluster", "it needs a real Kubernetes cluster with KubeRay"),
    (
        "docs/storage.md",
        "gke-rl export",
        "it needs a Ray head that mounts the file system: two_nodes' `a_run_is_exported_destroyed_and_resumed_in_another_zone` runs export, destroy and deploy --resume-from as written, against the fakes",
    ),
];

/// The `sh` blocks of a page: the line of each opening fence (0-based) and its lines.
fn sh_blocks(page: &str) -> Vec<(usize, Vec<String>)> {
    blocks(page, "sh")
}

/// The blocks of `language` of a page: the line of each opening fence (0-based) and its lines.
fn blocks(page: &str, language: &str) -> Vec<(usize, Vec<String>)> {
    let text = std::fs::read_to_string(project_root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if line.strip_prefix("```") == Some(language) {
            blocks.push((at, lines[at + 1..].iter().take_while(|l| **l != "```").map(|l| (*l).to_owned()).collect()));
        }
    }
    blocks
}

/// The first `sh` block of `page` after its line that starts with `marker`.
fn block_after(page: &str, marker: &str) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(project_root().join(page)).unwrap();
    let start = text.lines().position(|l| l.starts_with(marker)).unwrap_or_else(|| panic!("{page}: no line starts with {marker:?}"));
    sh_blocks(page).into_iter().find(|(at, _)| *at > start).unwrap_or_else(|| panic!("{page}: no sh block after {marker:?}"))
}

/// The commands of the first `sh` block of `page` after the line that starts with `marker`:
/// comments dropped, `\` continuations joined, and the left-out ones skipped (those starting
/// with an entry, or equal to one that ends in `$`).
fn commands_after(page: &str, marker: &str, left_out: &[&str]) -> Vec<String> {
    let (_, block) = block_after(page, marker);
    let joined = block.join("\n").replace("\\\n", " ");
    let commands: Vec<String> = joined
        .lines()
        .map(|l| l.split(" # ").next().unwrap_or_default().trim().to_owned())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter(|l| !left_out.iter().any(|skip| skip.strip_suffix('$').map_or_else(|| l.starts_with(skip), |whole| l == whole)))
        .collect();
    assert!(!commands.is_empty(), "{page}: the block after {marker:?} has no command");
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
    run(&cloud, &project, &commands_after("README.md", "The commands below are the `gke-rl` binary's", &["man -l"]));
    let completions = std::fs::read_to_string(cloud.root.join("home/.local/share/bash-completion/completions/gke-rl")).unwrap();
    assert!(completions.contains("complete -F"), "{completions}");

    // The config, copied from the example as the Quickstart says (the editor left out): its
    // schema line resolves beside the copy, and render picks the copy up.
    for folder in ["examples", "schemas"] {
        std::os::unix::fs::symlink(project_root().join(folder), project.join(folder)).unwrap();
    }
    run(&cloud, &project, &commands_after("README.md", "### A new cluster, with Cluster Toolkit", &["$EDITOR"]));
    let config = std::fs::read_to_string(project.join("gke-rl.yaml")).unwrap();
    let schema = config.lines().next().and_then(|l| l.split_once("$schema=")).map(|(_, path)| path).unwrap();
    assert!(project.join(schema).is_file(), "{schema} does not resolve beside the copy");

    // The render, then the deploy plan.
    run(&cloud, &project, &["gke-rl render".to_owned()]);
    let planned = run(
        &cloud,
        &project,
        &commands_after(
            "README.md",
            "Or start from the codelab's own `env.sh`",
            &["gke-rl deploy$", "gke-rl submit", "gke-rl export", "gke-rl destroy"],
        ),
    );
    let plan = format!("{}{}", String::from_utf8_lossy(&planned.stdout), stderr(&planned));
    assert!(plan.contains("gcluster deploy") && plan.contains("kind: RayCluster"), "{plan}");

    // Step by step: the blueprint patch, gcluster (which checks every staged file is beside
    // the blueprint), kubectl.
    run(&cloud, &project, &commands_after("docs/deploy.md", "Step by step instead:", &["gke-rl submit"]));
    let calls = cloud.calls();
    assert!(
        calls.contains("gcluster deploy out/gke-a4.yaml -d out/gke-a4-deployment.yaml --vars project_id=my-project\\,authorized_cidr=203.0.113.7/32 --auto-approve"),
        "{calls}"
    );
    assert!(calls.contains("kubectl apply -f out/ray-cluster.yaml"), "{calls}");

    // Your own cluster (issue 53): the README's config, then the plan, on xpk's A4 cluster and
    // an instance of the team's own as gcloud describes them.
    let fixtures = project_root().join("tests/fixtures/gcloud");
    let (fake, mine) = (cloud.root.join("cloud"), cloud.root.join("mine"));
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(fake.join("cluster"), "").unwrap();
    std::fs::write(fake.join("lustre"), "").unwrap();
    std::fs::copy(fixtures.join("cluster-xpk-a4.json"), fake.join("cluster.json")).unwrap();
    std::fs::copy(fixtures.join("lustre-instance.json"), fake.join("lustre.json")).unwrap();
    let marker = "### Your own cluster and Lustre";
    let text = std::fs::read_to_string(project_root().join("README.md")).unwrap();
    let start = text.lines().position(|l| l.starts_with(marker)).unwrap();
    let (_, config) = blocks("README.md", "yaml").into_iter().find(|(at, _)| *at > start).expect("the config block");
    std::fs::write(mine.join("gke-rl.yaml"), config.join("\n") + "\n").unwrap();
    let planned = run(&cloud, &mine, &commands_after("README.md", marker, &["gke-rl deploy$", "gke-rl submit", "gke-rl destroy"]));
    let plan = format!("{}{}", String::from_utf8_lossy(&planned.stdout), stderr(&planned));
    assert!(plan.contains("gcloud container clusters describe ray-a4-gpu-spot") && !plan.contains("gcluster"), "{plan}");

    // Validate, as docs/validate.md shows it: the render, a folder, a CRD of another KubeRay.
    std::fs::create_dir_all(project.join("path/to")).unwrap();
    std::os::unix::fs::symlink(project_root().join("tests/fixtures/codelab"), project.join("path/to/codelab")).unwrap();
    std::fs::copy(project_root().join("tests/fixtures/upstream/kuberay/ray.io_rayclusters.yaml"), project.join("ray.io_rayclusters.yaml"))
        .unwrap();
    let commands: Vec<String> = commands_after("docs/validate.md", "`gke-rl validate` checks the artifacts together", &[])
        .into_iter()
        .map(|c| format!("{c} >/dev/null || [ $? = 1 ]")) // findings exit 1; anything else fails
        .collect();
    run(&cloud, &project, &commands);
}

/// Issue 52: every `sh` block of the README and the guide is run by the test above, or named in
/// [`NOT_RUN`] with why it is not; an entry of either that matches no block is stale.
#[test]
fn every_sh_block_of_the_readme_and_the_guide_is_run_or_says_why_not() {
    let mut pages = vec!["README.md".to_owned()];
    let docs = std::fs::read_dir(project_root().join("docs")).unwrap();
    pages.extend(docs.flatten().map(|e| format!("docs/{}", e.file_name().to_string_lossy())).filter(|p| p.ends_with(".md")));
    let run: Vec<(String, usize)> = RUN.iter().map(|(page, marker)| ((*page).to_owned(), block_after(page, marker).0)).collect();
    let mut used = vec![false; NOT_RUN.len()];
    for page in &pages {
        for (at, block) in sh_blocks(page) {
            let first = block.first().map_or("", String::as_str);
            let skipped = NOT_RUN.iter().position(|(p, start, _)| p == page && first.starts_with(start));
            if let Some(i) = skipped {
                used[i] = true;
            }
            assert!(
                run.contains(&(page.clone(), at)) || skipped.is_some(),
                "{page}:{}: this sh block is neither run by the_readmes_commands_work_as_written nor in NOT_RUN with a reason",
                at + 1
            );
        }
    }
    for ((page, start, _), used) in NOT_RUN.iter().zip(used) {
        assert!(used, "NOT_RUN: {page} has no sh block starting with {start:?}");
    }
}

/// Issue 52: `--help`, the README and the command table name the same variables for the
/// address, as `ray job` reads them.
#[test]
fn the_help_and_the_readme_name_the_same_address_variables() {
    let table = std::fs::read_to_string(project_root().join("docs/commands.md")).unwrap();
    let readme = std::fs::read_to_string(project_root().join("README.md")).unwrap();
    let row = table.lines().find(|l| l.starts_with("| `gke-rl submit")).expect("the command table's submit row");
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_gke-rl")).args(["submit", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for variable in ["RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"] {
        assert!(row.contains(&format!("`{variable}`")), "the command table's submit row does not name {variable}: {row}");
        assert!(readme.contains(&format!("`{variable}`")), "the README does not name {variable}");
        assert!(
            help.contains(&format!("{variable},")) || help.contains(&format!("{variable}=")),
            "--help does not name {variable}: {help}"
        );
    }
}
