//! `cargo xtask ci`: everything CI checks, installing what a fresh machine lacks first.
//! Idempotent: a second run installs nothing.

use std::time::Instant;

use anyhow::Context;
use xshell::{Shell, cmd};

use crate::install::{DEBIAN_TORCH, WASM_TARGET, debian_package, install_toolchain_parts, ray_venv};
use crate::project_root;

pub fn run(sh: &Shell) -> anyhow::Result<()> {
    let _root = sh.push_dir(project_root());
    let cargo = crate::cargo();
    step("toolchain: wasm32 target, rustfmt, clippy", || install_toolchain_parts(sh))?;
    // What is downloaded rather than built comes meanwhile: the first steps compile, and these
    // mostly wait on PyPI, Debian's mirror and the Rust toolchain server.
    let rays = gke_rl_ray::TESTED_RAY.join(", ");
    let debian = DOWNLOADED_DEBIAN_PACKAGES.map(|(package, _)| package).join(", ");
    eprintln!("==> meanwhile: Ray {rays} and Ruff from PyPI; Debian's {debian}; the nightly toolchain");
    let fetched = std::thread::spawn(|| Shell::new().map_err(anyhow::Error::from).and_then(|sh| fetch(&sh)));
    let compiled = step("format", || Ok(cmd!(sh, "{cargo} fmt --all --check").run()?))
        .and_then(|()| step("lint", || Ok(cmd!(sh, "{cargo} clippy --quiet --workspace --all-targets -- -D warnings").run()?)))
        .and_then(|()| {
            step("the SDK and the validator build for wasm32 (the browser validator's core)", || {
                Ok(cmd!(sh, "{cargo} build --quiet --package gke-rl --package gke-rl-validate --target {WASM_TARGET}").run()?)
            })
        });
    // Waited for even when a step failed: no apt-get, pip or rustup is left running on its own.
    let downloaded = step("what came meanwhile", || fetched.join().map_err(|_| anyhow::anyhow!("a download panicked"))?);
    compiled.and(downloaded)?;
    step("Python lint (Ruff, pinned)", || crate::python::lint(sh))?;
    // A codegen test told to write would pass whatever it found: ci checks, never writes.
    step("tests", || Ok(cmd!(sh, "{cargo} test --workspace").env_remove(gke_rl_test_support::codegen::WRITE.0).run()?))?;
    step("the pages in Chromium (the web validator against native, the run report)", || {
        crate::web::browser_test(sh)?;
        crate::web::report_test(sh)
    })?;
    step("release: cargo-dist's archive and installer for this host, unpacked, installed and run", || crate::dist::Args::quick().run(sh))?;
    // The parsers' fuzz targets build and run a few seconds each, so they cannot rot; the
    // 10-minute runs are `cargo xtask fuzz`.
    step("fuzz smoke", || crate::fuzz::Args::smoke().run(sh))
}

/// The Debian packages `ci` installs while the first steps compile, each with a path it
/// installs: the fabric check's collective on CPU (gloo; Debian's torch is 1/10 the size of
/// PyPI's CUDA one); the shells whose completion functions the tests run; the browser; curl and
/// xz, which the release's installer and archive need.
const DOWNLOADED_DEBIAN_PACKAGES: [(&str, &str); 6] = [
    DEBIAN_TORCH,
    ("zsh", "/usr/bin/zsh"),
    ("fish", "/usr/bin/fish"),
    crate::web::CHROMIUM,
    ("curl", "/usr/bin/curl"),
    ("xz-utils", "/usr/bin/xz"),
];

/// The downloads: Ray for the job tests, [`DOWNLOADED_DEBIAN_PACKAGES`], the fuzzers'
/// toolchain. Each is tried, and every failure is said.
fn fetch(sh: &Shell) -> anyhow::Result<()> {
    let _root = sh.push_dir(project_root());
    let failures: Vec<String> = std::thread::scope(|scope| {
        // Side by side: each install mostly waits on PyPI.
        let rays: Vec<_> = gke_rl_ray::TESTED_RAY
            .iter()
            .map(|version| {
                let install = move || {
                    let sh = Shell::new()?;
                    ray_venv(&sh, version)?;
                    if *version == gke_rl_ray::NEWEST_TESTED_RAY { crate::install::torch_in_newest_ray(&sh) } else { Ok(()) }
                };
                (version, scope.spawn(install))
            })
            .collect();
        let mut results: Vec<(String, anyhow::Result<()>)> =
            DOWNLOADED_DEBIAN_PACKAGES.map(|package| (format!("Debian's {}", package.0), debian_package(sh, package))).into();
        results.push(("the nightly toolchain".into(), crate::fuzz::install_nightly(sh)));
        results.push(("Ruff".into(), crate::python::install(sh).map(drop)));
        for (version, install) in rays {
            let result = install.join().unwrap_or_else(|_| Err(anyhow::anyhow!("it panicked")));
            results.push((format!("Ray {version}"), result));
        }
        results.into_iter().filter_map(|(what, result)| result.err().map(|e| format!("{what}: {e:#}"))).collect()
    });
    if failures.is_empty() { Ok(()) } else { anyhow::bail!("not installed:\n{}", failures.join("\n")) }
}

fn step(name: &str, f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
    eprintln!("==> {name}");
    let start = Instant::now();
    f().with_context(|| format!("ci step failed: {name}"))?;
    eprintln!("    {name}: ok in {:.1}s", start.elapsed().as_secs_f64());
    Ok(())
}
