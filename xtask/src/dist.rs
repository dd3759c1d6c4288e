//! `cargo xtask dist [--quick]`: the release pipeline, run here so that it cannot rot unseen.
//!
//! cargo-dist, at the version the workspace pins, checks that `.github/workflows/release.yml`
//! is what the config generates, then builds what a release publishes for this host: the
//! archive, its checksum and the shell installer. The README must name that installer; the
//! archive must match its checksum and hold the binary where the `cargo binstall` metadata
//! says. Unpacked, the binary runs `--version`, `render` and `validate`. The installer then
//! installs from the archive just built (its download address pointed at the folder it was
//! built into) into an empty cargo home, and what it installed runs too; from an archive with
//! one byte changed, it installs nothing.
//!
//! `--quick` (what `ci` runs) builds the archive without optimisation: the same pipeline in a
//! third of the time. Without it the build is the release's own (`[profile.dist]`).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;
use xshell::{Shell, cmd};

use crate::project_root;

/// The package cargo-dist releases, and its binary.
const PACKAGE: &str = "gke-rl-cli";
const BINARY: &str = "gke-rl";

#[derive(clap::Args)]
pub struct Args {
    /// Build without optimisation (the pipeline, not the release's speed)
    #[arg(long)]
    quick: bool,
}

impl Args {
    pub fn quick() -> Self {
        Self { quick: true }
    }

    pub fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let root = project_root();
        let _root = sh.push_dir(&root);
        let metadata: Value = serde_json::from_str(&cmd!(sh, "cargo metadata --no-deps --format-version 1").quiet().read()?)?;
        let pinned = metadata["metadata"]["dist"]["cargo-dist-version"]
            .as_str()
            .context("Cargo.toml has no [workspace.metadata.dist] cargo-dist-version")?;
        let package = metadata["packages"]
            .as_array()
            .and_then(|packages| packages.iter().find(|p| p["name"] == PACKAGE))
            .with_context(|| format!("the workspace has no package {PACKAGE}"))?;
        let version = package["version"].as_str().context("a package without a version")?;
        let repository = package["repository"].as_str().context("the package names no repository")?;
        let rust_version = package["rust_version"].as_str().context("the package names no rust-version")?;
        let binstall = &package["metadata"]["binstall"];

        install_dist(sh, pinned)?;
        cmd!(sh, "dist generate --check").run().context("release.yml is not what the dist config generates: run `dist generate`")?;

        let host = host_triple(sh)?;
        let targets = metadata["metadata"]["dist"]["targets"].as_array().context("no dist targets")?;
        if !targets.iter().any(|t| t == host.as_str()) {
            let targets: Vec<&str> = targets.iter().filter_map(Value::as_str).collect();
            bail!(
                "this host ({host}) is not one of the release's targets ({}): run this on one of them, or add it to \
                 [workspace.metadata.dist] targets in Cargo.toml and run `dist generate`",
                targets.join(", ")
            );
        }
        // No archive of an earlier build is taken for this one's.
        let target_directory = metadata["target_directory"].as_str().context("cargo metadata gives no target directory")?;
        let distrib = Path::new(target_directory).join("distrib");
        if distrib.exists() {
            std::fs::remove_dir_all(&distrib)?;
        }
        // Settings, not flags: cargo-dist passes its environment to cargo.
        let quick = [("LTO", "false"), ("OPT_LEVEL", "0"), ("CODEGEN_UNITS", "256"), ("DEBUG", "false"), ("INCREMENTAL", "false")]
            .map(|(key, value)| (format!("CARGO_PROFILE_DIST_{key}"), value));
        let build = cmd!(sh, "dist build --artifacts=all --target {host} --output-format=json");
        let manifest = if self.quick { build.envs(quick) } else { build }.read()?;
        let manifest: Value = serde_json::from_str(&manifest).context("dist build printed no JSON manifest")?;
        let artifacts = manifest["artifacts"].as_object().context("the dist manifest lists no artifacts")?;
        let archive = artifacts
            .values()
            .find(|a| a["kind"] == "executable-zip" && a["target_triples"].as_array().is_some_and(|t| t.iter().any(|t| t == host.as_str())))
            .context("dist built no archive for this host")?;
        let installer = artifacts.values().find(|a| a["kind"] == "installer").context("dist built no installer")?;
        let release = manifest["releases"]
            .as_array()
            .and_then(|releases| releases.iter().find(|r| r["app_name"] == PACKAGE))
            .with_context(|| format!("the dist manifest has no release of {PACKAGE}"))?;
        let archive_path = path_of(archive)?;
        let installer_path = path_of(installer)?;
        let archive_name = archive["name"].as_str().context("an archive without a name")?;
        let published = archive_path.parent().context("an archive without a folder")?;
        let github = &release["hosting"]["github"];
        let download =
            [&github["artifact_base_url"], &github["artifact_download_path"]].map(|part| part.as_str().unwrap_or_default()).concat();

        readme_installs_this_release(&root, repository, rust_version, installer)?;
        checksum_matches(sh, published, archive_name)?;
        let in_archive = binstall_bin_path(binstall, repository, version, &host, &format!("{download}/{archive_name}"))?;
        let scratch = tempfile::tempdir()?;
        let scratch = scratch.path();
        cmd!(sh, "tar -xJf {archive_path} -C {scratch}").run()?;
        let unpacked = scratch.join(&in_archive);
        if !unpacked.is_file() {
            bail!("the archive holds no {in_archive}, where the binstall metadata's bin-dir says the binary is");
        }
        runs(sh, &unpacked, version, &scratch.join("from-the-archive"))?;

        let home = scratch.join("installer-cargo-home");
        let variables = &release["env"];
        install(sh, &installer_path, variables, published, &home, scratch)?
            .run()
            .context("the shell installer failed on the archive just built")?;
        runs(sh, &home.join("bin").join(BINARY), version, &scratch.join("from-the-installer"))?;

        // The README says the installer checks the archive: one byte changed, it installs nothing.
        let tampered = scratch.join("tampered");
        std::fs::create_dir(&tampered)?;
        let mut bytes = std::fs::read(&archive_path)?;
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(tampered.join(archive_name), bytes)?;
        let refused_home = scratch.join("tampered-cargo-home");
        let refused = install(sh, &installer_path, variables, &tampered, &refused_home, scratch)?.ignore_status().quiet().output()?;
        let said = String::from_utf8_lossy(&refused.stderr);
        if refused.status.success() || refused_home.join("bin").join(BINARY).exists() || !said.contains("checksum mismatch") {
            bail!("the shell installer did not refuse an archive that does not match its checksum: {said}");
        }
        eprintln!("dist: {archive_name} and its installer, for {host}: unpacked and installed, and both binaries ran");
        Ok(())
    }
}

/// `dist` at the pinned version, installed unless it is there.
fn install_dist(sh: &Shell, pinned: &str) -> anyhow::Result<()> {
    let installed = cmd!(sh, "dist --version").quiet().ignore_stderr().read().unwrap_or_default();
    if installed.split_whitespace().nth(1) == Some(pinned) {
        return Ok(());
    }
    crate::install::cargo_install(sh, &["cargo-dist", "--version", pinned])
}

/// The shell installer, downloading from `from` and installing into `home`, in an environment
/// of its own but `PATH`: nothing of the user's is read (cargo-dist's installer takes an install
/// folder, quietness and more from variables) and nothing of theirs is touched (no shell profile
/// edited, no receipt in their config). `variables` names the installer's variables, from the
/// dist manifest.
fn install<'a>(
    sh: &'a Shell,
    installer: &Path,
    variables: &Value,
    from: &Path,
    home: &Path,
    scratch: &Path,
) -> anyhow::Result<xshell::Cmd<'a>> {
    let variable = |key: &str| variables[key].as_str().with_context(|| format!("the dist manifest names no {key}"));
    Ok(cmd!(sh, "sh {installer}")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CARGO_HOME", home)
        .env("HOME", scratch)
        .env("XDG_CONFIG_HOME", scratch.join("config"))
        .env(variable("download_url_env_var")?, format!("file://{}", from.display()))
        .env(variable("no_modify_path_env_var")?, "1"))
}

fn host_triple(sh: &Shell) -> anyhow::Result<String> {
    let rustc = cmd!(sh, "rustc -vV").read()?;
    rustc.lines().find_map(|l| l.strip_prefix("host: ")).map(str::to_owned).context("rustc -vV names no host")
}

fn path_of(artifact: &Value) -> anyhow::Result<PathBuf> {
    artifact["path"].as_str().map(PathBuf::from).with_context(|| format!("the dist manifest gives no path for {}", artifact["name"]))
}

/// The README's install commands name this release's installer and this package, and its
/// prerequisites the package's minimum Rust.
fn readme_installs_this_release(root: &Path, repository: &str, rust_version: &str, installer: &Value) -> anyhow::Result<()> {
    let readme = std::fs::read_to_string(root.join("README.md"))?;
    let name = installer["name"].as_str().context("an installer without a name")?;
    for command in [
        format!("{repository}/releases/latest/download/{name} | sh"),
        format!("cargo binstall --git {repository} {PACKAGE}"),
        format!("Rust {rust_version} or newer"),
    ] {
        if !readme.contains(&command) {
            bail!("README.md does not say `{command}`: its Install section must name what the release publishes");
        }
    }
    Ok(())
}

/// The archive `name` in `dir` matches the `.sha256` file published beside it.
fn checksum_matches(sh: &Shell, dir: &Path, name: &str) -> anyhow::Result<()> {
    let _dir = sh.push_dir(dir);
    let checksum = format!("{name}.sha256");
    cmd!(sh, "sha256sum --check --strict {checksum}").quiet().run().with_context(|| format!("{name} does not match {checksum}"))
}

/// The binary's path inside the archive, as `cargo binstall` computes it from the package's
/// metadata (its placeholders, cargo-bins/cargo-binstall
/// crates/binstalk-types/src/cargo_toml_binstall.rs). The pkg-url must be where the release
/// publishes the archive (`download`, from the dist manifest).
fn binstall_bin_path(binstall: &Value, repository: &str, version: &str, target: &str, download: &str) -> anyhow::Result<String> {
    let field = |key: &str| binstall[key].as_str().with_context(|| format!("{PACKAGE}'s [package.metadata.binstall] has no {key}"));
    let fill = |template: &str| {
        let filled = [
            ("{ repo }", repository),
            ("{ version }", version),
            ("{ name }", PACKAGE),
            ("{ target }", target),
            ("{ archive-suffix }", ".tar.xz"),
            ("{ bin }", BINARY),
            ("{ binary-ext }", ""),
        ]
        .iter()
        .fold(template.to_owned(), |text, (placeholder, value)| text.replace(placeholder, value));
        if filled.contains('{') {
            bail!("binstall metadata `{template}` has a placeholder this check does not know");
        }
        Ok(filled)
    };
    if field("pkg-fmt")? != "txz" {
        bail!("binstall's pkg-fmt must be txz: cargo-dist builds .tar.xz archives");
    }
    let url = fill(field("pkg-url")?)?;
    if url != download {
        bail!("binstall's pkg-url gives {url}, but the release publishes the archive at {download}");
    }
    fill(field("bin-dir")?)
}

/// The binary is this version's and renders and validates the embedded default, in `dir` (a new
/// folder, so that no `gke-rl.yaml` is found).
fn runs(sh: &Shell, binary: &Path, version: &str, dir: &Path) -> anyhow::Result<()> {
    let said = cmd!(sh, "{binary} --version").read()?;
    if !said.starts_with(&format!("{BINARY} {version} ")) {
        bail!("{} --version said `{said}`, not version {version}", binary.display());
    }
    std::fs::create_dir(dir)?;
    let _dir = sh.push_dir(dir);
    let out = dir.join("out");
    for command in [cmd!(sh, "{binary} render --out {out}"), cmd!(sh, "{binary} validate {out}")] {
        let shown = command.to_string();
        let ran = command.ignore_status().quiet().output()?;
        if !ran.status.success() {
            bail!("`{shown}` failed:\n{}{}", String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
        }
    }
    Ok(())
}
