//! `cargo xtask bench <target>`: benchmarks, each reported against its target, and against
//! the peer tool when the issue names one, measured side by side in the same run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use gke_rl::model::{Name, Quantity, Word};
use gke_rl::{ArtifactKind, Deployment};
use xshell::{Shell, cmd};

use crate::project_root;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Target {
    /// Render the full default artifact set in process (target: under 200 µs)
    Render,
    /// Validate 100 RayClusters with the CRD schema, against check-jsonschema 0.39 (targets: 120× faster, 15 ms, 10,000 documents/s/core)
    Validate,
    /// Validate the default artifact set in Chromium (the web page's wasm) and natively
    Wasm,
    /// Submit to a local Ray 2.54 head against `ray job submit` (target: 10× faster), and
    /// package a 3000-file, 50 MB tree against Ray's packager (target: 5× faster)
    Submit,
    /// The storage check's per-node pass against fio (Debian's) with the same pattern on the
    /// same folder, alternating, and the whole check's wall time through a local Ray head
    /// (target: write and read within 15% of fio's)
    Storage,
    /// Preempt a supervised run 5 times on a real two-node Ray cluster of each tested version:
    /// the supervisor's overheads, from a node's death to noticing it and from its return to the
    /// training running (target: under 10 s each, beyond Ray's own node-join time)
    Recovery,
}

/// The peer the validation benchmark runs against, pinned.
const CHECK_JSONSCHEMA: &str = "check-jsonschema==0.39.0";
/// Timed runs of each command line; the median is reported.
const RUNS: usize = 10;

pub fn run(sh: &Shell, target: Target) -> anyhow::Result<()> {
    let _root = sh.push_dir(project_root());
    match target {
        Target::Render => {
            criterion(sh, "gke-rl", "render", &[])?;
            report_criterion("render the default artifact set", Some(200_000.0))
        }
        Target::Validate => validate(sh),
        Target::Submit => submit(sh),
        Target::Storage => storage(sh),
        Target::Recovery => {
            for version in gke_rl_ray::TESTED_RAY {
                crate::install::ray_venv(sh, version)?;
            }
            crate::install::debian_package(sh, crate::install::DEBIAN_TORCH)?;
            let cargo = crate::cargo();
            Ok(cmd!(sh, "{cargo} test --quiet --package gke-rl-cli --test two_nodes").env("GKE_RL_BENCH_RECOVERY", "1").run()?)
        }
        Target::Wasm => {
            criterion(sh, "gke-rl-validate", "default", &[])?;
            let in_browser_ms = crate::web::browser_test(sh)?;
            let native_ms = criterion_median("validate the default artifact set")? / 1e6;
            eprintln!("\nvalidate the default artifact set (7 files):");
            eprintln!("  in Chromium (wasm; median of 25 batches of 20 runs in the page): {in_browser_ms:.3} ms");
            eprintln!("  native (criterion median):                                      {native_ms:.3} ms");
            eprintln!("  the browser takes {:.1}x the native time", in_browser_ms / native_ms);
            Ok(())
        }
    }
}

/// How the validation benchmark renders its files.
const BENCH_RENDER: gke_rl::RenderOptions<'static> =
    gke_rl::RenderOptions { source: "the validation benchmark", regenerate: "gke-rl render" };

fn criterion(sh: &Shell, package: &str, bench: &str, env: &[(&str, &str)]) -> anyhow::Result<()> {
    let cargo = crate::cargo();
    let mut command = cmd!(sh, "{cargo} bench --package {package} --bench {bench}");
    for (key, value) in env {
        command = command.env(key, value);
    }
    Ok(command.run()?)
}

/// Median of a criterion benchmark, in nanoseconds; with a target, how far under it.
fn report_criterion(id: &str, target_ns: Option<f64>) -> anyhow::Result<()> {
    let median = criterion_median(id)?;
    match target_ns {
        Some(target) => {
            eprintln!("{id}: median {:.1} µs; target {:.0} µs; {:.1}x under the target", median / 1e3, target / 1e3, target / median)
        }
        None => eprintln!("{id}: median {:.2} ms", median / 1e6),
    }
    Ok(())
}

fn criterion_median(id: &str) -> anyhow::Result<f64> {
    let path = project_root().join("target/criterion").join(id).join("new/estimates.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("cannot parse {}", path.display()))?;
    json["median"]["point_estimate"].as_f64().context("no median in criterion's estimates")
}

/// 100 RayClusters (names, images and resources varied), plus the default env.sh, job script,
/// runtime env and .rayignore, so cross-file rules run too. Returns the directory.
fn write_validation_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let images = ["nvcr.io/nvidia/nemo-rl:v0.4.0", "nvcr.io/nvidia/nemo-rl:v0.5.0", "nvcr.io/nvidia/nemo-rl:v0.6.0"];
    let mut manifests = Vec::new();
    for i in 0..100 {
        let mut d = Deployment::default();
        d.project.cluster_name = Name::new(format!("ray-a4-{i:03}"))?;
        d.ray.image = Word::new(images[i % images.len()])?;
        d.ray.worker.cpu = Quantity::new((90 + i % 10).to_string())?;
        d.ray.head.memory_request = Quantity::new(format!("{}Gi", 32 + i % 64))?;
        let cluster = gke_rl::render(&d, &BENCH_RENDER)?.ray_cluster.context("cluster mode renders a RayCluster")?;
        let path = dir.join(format!("raycluster-{i:03}.yaml"));
        std::fs::write(&path, &cluster.contents)?;
        manifests.push(path);
    }
    for artifact in gke_rl::render(&Deployment::default(), &BENCH_RENDER)? {
        if [ArtifactKind::EnvSh, ArtifactKind::JobScript, ArtifactKind::RuntimeEnv, ArtifactKind::RayIgnore]
            .iter()
            .any(|k| k.file() == artifact.name)
        {
            std::fs::write(dir.join(artifact.name), &artifact.contents)?;
        }
    }
    Ok(manifests)
}

/// A Python venv under target/ with the pinned peer, created once.
fn check_jsonschema(sh: &Shell) -> anyhow::Result<PathBuf> {
    let venv = project_root().join("target/venv");
    let tool = venv.join("bin/check-jsonschema");
    let installed = cmd!(sh, "{tool} --version").quiet().ignore_stderr().read().unwrap_or_default();
    if !installed.contains("0.39.0") {
        cmd!(sh, "python3 -m venv {venv}").run()?;
        let pip = venv.join("bin/pip");
        cmd!(sh, "{pip} install --quiet --disable-pip-version-check {CHECK_JSONSCHEMA}").run()?;
    }
    Ok(tool)
}

fn median_wall_time(mut run: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    run()?; // warm the page cache and the interpreters
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        run()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[RUNS / 2])
}

fn validate(sh: &Shell) -> anyhow::Result<()> {
    let root = project_root();
    let crd = root.join(crate::codegen::UPSTREAM).join("kuberay/ray.io_rayclusters.yaml");
    let crd_text = std::fs::read_to_string(&crd).with_context(|| format!("the benchmark needs {}", crd.display()))?;
    let work = root.join("target/bench-validate");
    let files_dir = work.join("files");
    let manifests = write_validation_files(&files_dir)?;
    // The peer reads the schema gke-rl checks: the CRD's v1 schema, made strict, as JSON.
    let schema_path = work.join("raycluster.strict.schema.json");
    let schema = gke_rl_validate::json_schema(&crd_text, true)?;
    std::fs::write(&schema_path, serde_json::to_string(&schema)?)?;

    let installed = installed_binary(sh)?;
    let peer = check_jsonschema(sh)?;
    let cargo = crate::cargo();
    let files = files_dir.display().to_string();
    let succeeds = |what: &str, out: std::process::Output| -> anyhow::Result<()> {
        if !out.status.success() {
            bail!(
                "{what} failed on the benchmark files:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    };
    let through_installed = || succeeds("gke-rl validate", cmd!(sh, "{installed} validate {files}").quiet().ignore_status().output()?);
    let given_crd = || {
        succeeds("gke-rl validate --crd", cmd!(sh, "{installed} validate {files} --crd {schema_path}").quiet().ignore_status().output()?)
    };
    let through_cargo = || succeeds("cargo xtask validate", cmd!(sh, "{cargo} xtask validate {files}").quiet().ignore_status().output()?);
    let cargo_alone = || succeeds("cargo xtask --version", cmd!(sh, "{cargo} xtask --version").quiet().ignore_status().output()?);
    let theirs = || -> anyhow::Result<()> {
        let manifests = &manifests;
        succeeds("check-jsonschema", cmd!(sh, "{peer} --schemafile {schema_path} {manifests...}").quiet().ignore_status().output()?)
    };
    // Build both paths before timing them: the alias builds xtask, which runs the CLI's build.
    through_cargo()?;
    let installed_time = median_wall_time(through_installed)?;
    let given_crd_time = median_wall_time(given_crd)?;
    let cargo_time = median_wall_time(through_cargo)?;
    let cargo_alone_time = median_wall_time(cargo_alone)?;
    let peer_time = median_wall_time(theirs)?;

    // In process, on one core: the bench process is pinned, so the validator runs one thread.
    let pinned = [("GKE_RL_BENCH_FILES", files.as_str())];
    let taskset = cmd!(sh, "taskset -c 0 {cargo} bench --package gke-rl-validate --bench validate");
    pinned.iter().fold(taskset, |command, (key, value)| command.env(key, value)).run()?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    eprintln!("\n100 RayCluster manifests (and 4 companion files), every rule and the strict KubeRay v1.7.0 CRD check,");
    eprintln!("whole processes, median of {RUNS} runs each:");
    eprintln!("  gke-rl validate, installed (release; the CRD compiled in):     {:>8.1} ms (target: 15 ms)", ms(installed_time));
    eprintln!("  gke-rl validate --crd (the same CRD, compiled at run time):    {:>8.1} ms", ms(given_crd_time));
    eprintln!("  cargo xtask validate (cargo, then the dev build):              {:>8.1} ms", ms(cargo_time));
    eprintln!("  cargo xtask --version (cargo's own check and start-up alone):  {:>8.1} ms", ms(cargo_alone_time));
    eprintln!("  {CHECK_JSONSCHEMA} --schemafile (schema only; 100 files): {:>8.1} ms", ms(peer_time));
    eprintln!("  the installed gke-rl is {:.1}x faster than check-jsonschema (target: 120x)", ms(peer_time) / ms(installed_time));
    eprintln!("  cargo xtask validate takes {:.2}x cargo xtask --version (target: under 2x)", ms(cargo_time) / ms(cargo_alone_time));
    report_criterion("compile the strict RayCluster CRD (what --crd does)", None)?;
    let hundred = criterion_median("validate 100 RayClusters, every rule and the CRD, one core")?;
    eprintln!(
        "validate 100 RayClusters, every rule and the CRD, one core: median {:.2} ms, {:.0} documents/s/core (target: 10,000)",
        hundred / 1e6,
        100.0 / (hundred / 1e9)
    );
    Ok(())
}

/// The `gke-rl` binary as `cargo install --path crates/gke-rl-cli` builds it (release).
fn installed_binary(sh: &Shell) -> anyhow::Result<PathBuf> {
    let cargo = crate::cargo();
    cmd!(sh, "{cargo} build --quiet --release --package gke-rl-cli --bin gke-rl").run()?;
    Ok(project_root().join("target/release/gke-rl"))
}

/// A deterministic tree of 3000 files and 50 MB in 30 directories: mostly small files and a
/// few of several MB, as a job folder with data and checkpoints might hold.
fn write_package_tree(dir: &Path) -> anyhow::Result<()> {
    const FILES: usize = 3000;
    const TOTAL: usize = 50 * 1024 * 1024;
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let large = [8, 6, 5, 4, 3, 2, 2].map(|mib: usize| mib * 1024 * 1024);
    let small_each = (TOTAL - large.iter().sum::<usize>()) / (FILES - large.len());
    for i in 0..FILES {
        let sub = dir.join(format!("d{:02}", i % 30));
        std::fs::create_dir_all(&sub)?;
        let size = large.get(i).copied().unwrap_or(small_each);
        let bytes: Vec<u8> = (0..size.div_ceil(8)).flat_map(|_| next().to_le_bytes()).take(size).collect();
        std::fs::write(sub.join(format!("f{i:04}.bin")), bytes)?;
    }
    std::fs::write(dir.join("job.sh"), "true\n")?;
    Ok(())
}

fn submit(sh: &Shell) -> anyhow::Result<()> {
    let root = project_root();
    let tree = root.join("target/bench-submit/tree");
    write_package_tree(&tree)?;
    let bin = crate::install::ray_venv(sh, "2.54.0")?;
    let installed = installed_binary(sh)?;
    let cargo = crate::cargo();
    cmd!(sh, "{cargo} build --quiet --package xtask").run()?;

    // (b) hash + zip, in process on both sides.
    let python = bin.join("python");
    let oracle = root.join("crates/gke-rl-cli/tests/ray/oracle.py");
    let python_seconds: f64 = cmd!(sh, "{python} {oracle} time-package {tree} 5").quiet().ignore_stderr().read()?.trim().parse()?;
    let tree_env = tree.display().to_string();
    criterion(sh, "gke-rl-ray", "package", &[("GKE_RL_BENCH_TREE", &tree_env)])?;
    let ours_ns = criterion_median("package/hash and zip the benchmark tree")?;

    // (a) process start to "job accepted", same head, same folder (packages are reused, as
    // both compute the same URI, so neither uploads after the first run).
    let head = gke_rl_test_support::ray_head::Head::start("2.54.0", &bin).map_err(anyhow::Error::msg)?;
    let (address, version) = (head.address.clone(), head.version);
    // The head requires its token (Ray 2.52+); Ray's CLI sends one only in token mode.
    let _token = head.token.as_deref().map(|t| sh.push_env("RAY_AUTH_TOKEN", t));
    let _mode = head.token.as_ref().map(|_| sh.push_env("RAY_AUTH_MODE", "token"));
    let submit_args = [
        "submit".to_owned(),
        "--address".into(),
        address.clone(),
        "--working-dir".into(),
        tree.display().to_string(),
        "--no-wait".into(),
        "--".into(),
        "bash".into(),
        "job.sh".into(),
    ];
    let submit_args = &submit_args;
    let ours = || -> anyhow::Result<()> {
        cmd!(sh, "{installed} {submit_args...}").quiet().ignore_stderr().run()?;
        Ok(())
    };
    let through_cargo = || -> anyhow::Result<()> {
        cmd!(sh, "{cargo} xtask {submit_args...}").quiet().ignore_stderr().run()?;
        Ok(())
    };
    let ray = bin.join("ray");
    let theirs = || -> anyhow::Result<()> {
        cmd!(sh, "{ray} job submit --address {address} --working-dir {tree} --no-wait -- bash job.sh").quiet().ignore_stderr().read()?;
        Ok(())
    };
    let ours_time = median_wall_time(ours)?;
    let cargo_time = median_wall_time(through_cargo)?;
    let ray_time = median_wall_time(theirs)?;
    drop(head);

    eprintln!("\nSame local Ray {version} head, same 3000-file, 50 MB folder; median of {RUNS} runs each:");
    eprintln!("  (a) process start to job accepted:");
    eprintln!("      gke-rl submit --no-wait (installed):   {:>8.1} ms", ours_time.as_secs_f64() * 1e3);
    eprintln!("      cargo xtask submit --no-wait:          {:>8.1} ms", cargo_time.as_secs_f64() * 1e3);
    eprintln!("      ray job submit --no-wait:              {:>8.1} ms", ray_time.as_secs_f64() * 1e3);
    eprintln!("      ratio: the installed gke-rl is {:.1}x faster (target: 10x)", ray_time.as_secs_f64() / ours_time.as_secs_f64());
    eprintln!("      ratio: cargo xtask submit is {:.1}x faster", ray_time.as_secs_f64() / cargo_time.as_secs_f64());
    eprintln!("  (b) hash + zip of the folder, in process:");
    eprintln!("      gke-rl (criterion median):    {:>8.1} ms", ours_ns / 1e6);
    eprintln!("      Ray's packager (median of 5): {:>8.1} ms", python_seconds * 1e3);
    eprintln!("      ratio: gke-rl is {:.1}x faster (target: 5x)", python_seconds * 1e9 / ours_ns);
    Ok(())
}

/// The storage benchmark's pattern: as one A4 node saves, 8 ranks' files in parallel.
const STORAGE_RANKS: u64 = 8;
/// Bytes each rank writes and reads: 4 GiB a pass, past what a disk's own cache absorbs.
const STORAGE_RANK_BYTES: u64 = 512 << 20;
/// Passes of each tool, alternating which goes first.
const STORAGE_ROUNDS: usize = 5;

fn storage(sh: &Shell) -> anyhow::Result<()> {
    crate::install::debian_package(sh, ("fio", "/usr/bin/fio"))?;
    let work = project_root().join("target/bench-storage");
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    std::fs::create_dir_all(&work)?;
    let script = work.join(gke_rl_in_cluster::storage::CHECK_SCRIPT_FILE);
    std::fs::write(&script, gke_rl_in_cluster::storage::program())?;
    let (ranks, rank_bytes) = (STORAGE_RANKS.to_string(), STORAGE_RANK_BYTES.to_string());
    let checks = work.join("check");
    // The check's own node program, alone on this machine: (write, read, metadata ops/s).
    let check = || -> anyhow::Result<(f64, f64, f64)> {
        cmd!(sh, "sync").run()?;
        let log = cmd!(sh, "python3 {script} --local --dir {checks} --ranks {ranks} --rank-bytes {rank_bytes}").read()?;
        let report = gke_rl_in_cluster::storage::Report::parse(&log);
        let node = report.nodes.first().with_context(|| format!("the check reported no node:\n{log}"))?;
        Ok((node.write.rate(), node.read.rate(), node.metadata.ops_per_second()))
    };
    let fio_dir = work.join("fio");
    let size = format!("{}M", STORAGE_RANK_BYTES >> 20);
    // fio: the same files (one per job), the same 16 MiB requests, fsync at the end of the writes
    // (counted in its time), its page cache dropped before the reads (invalidate=1).
    let fio = || -> anyhow::Result<(f64, f64)> {
        cmd!(sh, "sync").run()?;
        std::fs::create_dir_all(&fio_dir)?;
        let mut rates = [0.0; 2];
        for (rate, (mode, extra)) in rates.iter_mut().zip([("write", "--end_fsync=1"), ("read", "--invalidate=1")]) {
            let json = cmd!(
                sh,
                "fio --name=ckpt --directory={fio_dir} --rw={mode} --bs=16M --size={size} --numjobs={ranks} --ioengine=psync {extra} --group_reporting --output-format=json"
            )
            .read()?;
            let json: serde_json::Value = serde_json::from_str(&json).context("fio's JSON")?;
            *rate = json["jobs"][0][mode]["bw_bytes"].as_f64().context("fio's bandwidth")?;
        }
        std::fs::remove_dir_all(&fio_dir)?;
        Ok((rates[0], rates[1]))
    };
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..STORAGE_ROUNDS {
        if round % 2 == 0 {
            ours.push(check()?);
            theirs.push(fio()?);
        } else {
            theirs.push(fio()?);
            ours.push(check()?);
        }
    }
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let (write, read, metadata) = (
        median(ours.iter().map(|o| o.0).collect()),
        median(ours.iter().map(|o| o.1).collect()),
        median(ours.iter().map(|o| o.2).collect()),
    );
    let (fio_write, fio_read) = (median(theirs.iter().map(|t| t.0).collect()), median(theirs.iter().map(|t| t.1).collect()));
    let whole = whole_check(sh, &work)?;
    let gb = |rate: f64| rate / 1e9;
    eprintln!(
        "\n{} GiB a pass ({STORAGE_RANKS} files of {} MiB in parallel) on this machine's disk, in target/bench-storage; median of {STORAGE_ROUNDS} alternating passes each:",
        (STORAGE_RANKS * STORAGE_RANK_BYTES) >> 30,
        STORAGE_RANK_BYTES >> 20
    );
    for (what, ours, theirs) in [("write (fsync'ed)", write, fio_write), ("read (cache dropped)", read, fio_read)] {
        let off = (ours / theirs - 1.0) * 100.0;
        let verdict = if off.abs() <= 15.0 { "within 15% ✓" } else { "outside 15% ✗" };
        eprintln!("  {what:<22} storage-check {:>6.2} GB/s   fio {:>6.2} GB/s   {:+.1}%  {verdict}", gb(ours), gb(theirs), off);
    }
    eprintln!("  metadata               storage-check {metadata:>8.0} operations/s (2000 files created, stat'ed, deleted)");
    eprintln!("  the whole check (gke-rl storage-check, one Ray node, 4 GiB): {:.1} s from start to its report", whole.as_secs_f64());
    Ok(())
}

/// The wall time of `gke-rl storage-check` (installed) against a local Ray 2.54 head, its
/// folder under `work`.
fn whole_check(sh: &Shell, work: &Path) -> anyhow::Result<Duration> {
    let bin = crate::install::ray_venv(sh, "2.54.0")?;
    let installed = installed_binary(sh)?;
    let head = gke_rl_test_support::ray_head::Head::start("2.54.0", &bin).map_err(anyhow::Error::msg)?;
    let _token = head.token.as_deref().map(|t| sh.push_env("RAY_AUTH_TOKEN", t));
    let config = work.join("gke-rl.yaml");
    std::fs::write(&config, "topology:\n  node_count: 1\nfabric:\n  mode: \"off\"\n")?;
    let (address, dir) = (head.address.clone(), work.join("whole"));
    let start = Instant::now();
    // A folder that is not Lustre fails the check (exit 1): the time is what is measured.
    let out = cmd!(sh, "{installed} storage-check --config {config} --address {address} --dir {dir} --size 4G").ignore_status().output()?;
    let took = start.elapsed();
    if !matches!(out.status.code(), Some(0 | 1)) || !String::from_utf8_lossy(&out.stdout).contains("storage-check: 1 node,") {
        bail!("the whole check did not report:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(took)
}
