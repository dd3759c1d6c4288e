//! What the dev tasks install on a machine that lacks it, each idempotently: the Rust
//! toolchain's parts, tools from crates.io, Debian packages, Ray venvs.

use xshell::{Shell, cmd};

use crate::project_root;

/// The browser validator's target.
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Debian's torch package and a path it installs: the fabric check's collective on CPU.
pub const DEBIAN_TORCH: (&str, &str) = ("python3-torch", "/usr/lib/python3/dist-packages/torch");

/// `rustup target add wasm32-unknown-unknown` unless it is there.
pub fn install_wasm_target(sh: &Shell) -> anyhow::Result<()> {
    let installed = cmd!(sh, "rustup target list --installed").read()?;
    if !installed.lines().any(|t| t.trim() == WASM_TARGET) {
        cmd!(sh, "rustup target add {WASM_TARGET}").run()?;
    }
    Ok(())
}

pub fn install_toolchain_parts(sh: &Shell) -> anyhow::Result<()> {
    install_wasm_target(sh)?;
    let components = cmd!(sh, "rustup component list --installed").read()?;
    for component in ["rustfmt", "clippy"] {
        if !components.lines().any(|c| c.starts_with(component)) {
            cmd!(sh, "rustup component add {component}").run()?;
        }
    }
    Ok(())
}

/// `cargo install --locked ARGS`: the tool with the dependencies it was released with. A
/// registry mirror that lacks one of them (one published after the mirror's last sync) makes
/// that fail; the install is then resolved again from what the mirror has, and says so.
///
/// Built as `--debug` without debug info: each tool runs for seconds here, and that build takes
/// about 2/5 of a release build's time (cargo-dist: 3.4 against 8.3 minutes on 2 cores).
pub fn cargo_install(sh: &Shell, args: &[&str]) -> anyhow::Result<()> {
    let _no_debug_info = sh.push_env("CARGO_PROFILE_DEV_DEBUG", "0");
    if cmd!(sh, "cargo install --quiet --locked --debug {args...}").run().is_ok() {
        return Ok(());
    }
    eprintln!("note: `cargo install --locked {}` failed; installing with the registry's newest dependencies instead", args.join(" "));
    Ok(cmd!(sh, "cargo install --quiet --debug {args...}").run()?)
}

/// `apt-get install package` unless `installed` exists; a fresh machine may have stale
/// package lists, so a failed install updates them and tries again.
pub fn debian_package(sh: &Shell, (package, installed): (&str, &str)) -> anyhow::Result<()> {
    if std::path::Path::new(installed).exists() || cmd!(sh, "apt-get install -y -q {package}").run().is_ok() {
        return Ok(());
    }
    cmd!(sh, "apt-get update -q").run()?;
    Ok(cmd!(sh, "apt-get install -y -q {package}").run()?)
}

/// `target/ray/<version>/bin`: a venv with `ray[default]==<version>`, created once.
pub fn ray_venv(sh: &Shell, version: &str) -> anyhow::Result<std::path::PathBuf> {
    venv(sh, &project_root().join("target/ray").join(version), "ray", &format!("ray[default]=={version}"), version)
}

/// The torch of NeMo-RL's newest release (NVIDIA-NeMo/RL `pyproject.toml` at v0.7.0), with the
/// numpy its collectives of objects need: the storage check's save pass runs on it, on CPU. From
/// PyPI, since download.pytorch.org's CPU builds cannot be reached: its CUDA libraries come
/// along (2026-12-07: 66.5 s for torch 2.11.0 and 3.9 s for numpy, 5.3 GB); Debian's python3-torch is 1.13, older than the
/// 2.3 that `torch.distributed.checkpoint.async_save` needs.
pub const SAVE_TORCH: (&str, &str) = ("torch==2.11.0", "2.11.0");
/// The numpy beside it, pinned as the rest is.
const SAVE_NUMPY: &str = "numpy==2.4.6";

/// [`SAVE_TORCH`] and numpy in the newest tested Ray's venv, unless there.
pub fn torch_in_newest_ray(sh: &Shell) -> anyhow::Result<()> {
    let bin = ray_venv(sh, gke_rl_ray::NEWEST_TESTED_RAY)?;
    let (requirement, version) = SAVE_TORCH;
    let python = bin.join("python");
    let probe = "import numpy, torch; print(torch.__version__)";
    if cmd!(sh, "{python} -c {probe}").quiet().ignore_stderr().read().is_ok_and(|v| v.starts_with(version)) {
        return Ok(());
    }
    let pip = bin.join("pip");
    Ok(cmd!(sh, "{pip} install --quiet --disable-pip-version-check {requirement} {SAVE_NUMPY}").run()?)
}

/// The `bin` of a venv at `dir` with `requirement` from PyPI, made unless its `program
/// --version` already says `version`.
pub fn venv(sh: &Shell, dir: &std::path::Path, program: &str, requirement: &str, version: &str) -> anyhow::Result<std::path::PathBuf> {
    let bin = dir.join("bin");
    let program = bin.join(program);
    if !cmd!(sh, "{program} --version").quiet().ignore_stderr().read().unwrap_or_default().contains(version) {
        cmd!(sh, "python3 -m venv {dir}").run()?;
        let pip = bin.join("pip");
        cmd!(sh, "{pip} install --quiet --disable-pip-version-check {requirement}").run()?;
    }
    Ok(bin)
}
