//! `cargo xtask wasm`: the browser build of the validator into `web-validator/pkg/`, with its
//! size against the budget. Installs what it needs (the wasm32 target, `wasm-bindgen-cli` at
//! exactly the version of the `wasm-bindgen` crate in Cargo.lock) when missing.

use std::path::Path;

use anyhow::{Context, bail};
use xshell::{Shell, cmd};

use crate::project_root;

/// The page's first file, the validator's `.wasm` gzipped, must stay under this: the page's
/// budget. What keeps it there: the renderer is a second file ([`BUILDS`]), no `core` float
/// formatting (`gke_rl_yaml::decimal`), no `serde_json::Value` and no serde_json reader on the
/// page's path, and the recipe key table as text. (Binaryen's `wasm-opt` is no help: `-O1`
/// breaks wasm-bindgen's externref table, and its size levels grow the gzip size.)
pub const BUDGET_GZIP_BYTES: u64 = 230 * 1000;

/// The builds of `gke-rl-wasm` the page loads: its feature, the name of its files in `pkg/`, and
/// its gzip budget. The renderer is fetched, from the page's own origin, only when a config is
/// first rendered. Its budget was 170 KB until `job.overrides`, the config's first map of free
/// keys, brought serde's map path to the page's config reader (3 KB gzip; 172 KB then), and 175
/// KB until the keys of an existing cluster (issue 53: `fabric.rdma_networks`, the config's first
/// list, `ray.head.pool`, `topology.pool`, `project.existing_cluster`, `lustre.existing`, and the placement
/// there) took it from 172.1 to 175.1 KB.
const BUILDS: [(&str, &str, u64); 2] = [("validator", "gke_rl_wasm", BUDGET_GZIP_BYTES), ("renderer", "gke_rl_render", 178 * 1000)];

/// Each of the page's scripts, gzipped, must stay under this: the editor (CodeMirror, its YAML,
/// JSON and shell modes, the lint UI) is most of it.
const SCRIPT_BUDGET_GZIP_BYTES: u64 = 140 * 1000;

/// Builds the wasm packages and reports their sizes.
pub fn run(sh: &Shell) -> anyhow::Result<()> {
    let root = project_root();
    let _root = sh.push_dir(&root);
    crate::install::install_wasm_target(sh)?;
    let wanted = locked_version("wasm-bindgen")?;
    let installed = cmd!(sh, "wasm-bindgen --version").quiet().ignore_stderr().read().unwrap_or_default();
    if installed.split_whitespace().nth(1) != Some(wanted.as_str()) {
        crate::install::cargo_install(sh, &["wasm-bindgen-cli", "--version", &wanted])?;
    }
    let cargo = crate::cargo();
    let built = root.join("target/wasm32-unknown-unknown/wasm-release/gke_rl_wasm.wasm");
    let out = root.join("web-validator/pkg");
    let mut reports = Vec::new();
    for (feature, name, budget) in BUILDS {
        // One build at a time: each overwrites the same `.wasm`, which wasm-bindgen then reads.
        cmd!(sh, "{cargo} build --quiet --package gke-rl-wasm --no-default-features --features {feature} --target wasm32-unknown-unknown --profile wasm-release").run()?;
        cmd!(sh, "wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section --out-name {name} --out-dir {out} {built}").run()?;
        let wasm = out.join(format!("{name}_bg.wasm"));
        let raw = std::fs::metadata(&wasm)?.len();
        let gzip = cmd!(sh, "gzip -9 -c {wasm}").quiet().output()?.stdout.len() as u64;
        let report = format!(
            "{}: {:.1} KB raw, {:.1} KB gzip (budget {:.0} KB gzip)",
            wasm.strip_prefix(&root).unwrap_or(&wasm).display(),
            raw as f64 / 1000.0,
            gzip as f64 / 1000.0,
            budget as f64 / 1000.0,
        );
        // Over budget fails the build, so `ci` catches a dependency that bloats the page.
        anyhow::ensure!(gzip <= budget, "{report}: over budget; `twiggy top` on the unstripped build shows what grew");
        reports.push(report);
    }
    write_examples(&out)?;
    for (_, name, _) in BUILDS {
        write_wasm_script(&out, name)?;
    }
    reports.extend(bundle(sh, &out)?);
    for report in reports {
        eprintln!("{report}");
    }
    Ok(())
}

/// `pkg/NAME_bg.wasm.js`: a build's wasm as a classic script, for a page opened from file://,
/// which may fetch nothing (`web-validator/src/wasm.js` loads it there only).
fn write_wasm_script(out: &std::path::Path, name: &str) -> anyhow::Result<()> {
    let wasm = std::fs::read(out.join(format!("{name}_bg.wasm")))?;
    let encoded = data_encoding::BASE64.encode(&wasm);
    let js = format!("(globalThis.gkeRlWasm ??= {{}}).{name} = \"{encoded}\";\n");
    std::fs::write(out.join(format!("{name}_bg.wasm.js")), js)?;
    Ok(())
}

/// The page's script and its worker, bundled by esbuild (pinned in package-lock.json) with
/// CodeMirror and the wasm-bindgen glue into classic scripts: a page opened from file:// may
/// load no module. Returns their sizes.
fn bundle(sh: &Shell, out: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let web = project_root().join("web-validator");
    npm_ci(sh, &web)?;
    let _web = sh.push_dir(&web);
    let mut reports = Vec::new();
    for (source, bundled) in [("src/page.js", "page.js"), ("src/worker.js", "worker.js")] {
        let target = out.join(bundled);
        // The glue's `import.meta.url` finds the wasm when none is given; the page always gives it.
        cmd!(sh, "node_modules/.bin/esbuild {source} --bundle --format=iife --target=es2022 --minify --legal-comments=none --log-level=warning --log-override:empty-import-meta=silent --outfile={target}").run()?;
        let raw = std::fs::metadata(&target)?.len();
        let gzip = cmd!(sh, "gzip -9 -c {target}").quiet().output()?.stdout.len() as u64;
        let report = format!("web-validator/pkg/{bundled}: {:.1} KB raw, {:.1} KB gzip", raw as f64 / 1000.0, gzip as f64 / 1000.0);
        anyhow::ensure!(
            gzip <= SCRIPT_BUDGET_GZIP_BYTES,
            "{report}: over the scripts' budget of {} KB gzip",
            SCRIPT_BUDGET_GZIP_BYTES / 1000
        );
        reports.push(report);
    }
    Ok(reports)
}

/// A package's version as Cargo.lock pins it.
fn locked_version(package: &str) -> anyhow::Result<String> {
    let lock = std::fs::read_to_string(project_root().join("Cargo.lock")).context("cannot read Cargo.lock")?;
    let marker = format!("name = \"{package}\"\nversion = \"");
    let Some(start) = lock.find(&marker).map(|i| i + marker.len()) else { bail!("{package} is not in Cargo.lock") };
    Ok(lock[start..].split('"').next().unwrap_or_default().to_owned())
}

/// `pkg/examples.js`: the codelab's files (the test fixtures), so the page can load them
/// without a request.
fn write_examples(out: &std::path::Path) -> anyhow::Result<()> {
    let files = codelab_files(&project_root())?;
    let js = format!(
        "// The codelab's files as it writes them (tests/fixtures/codelab/), defects included.\nexport const codelab = {};\n",
        serde_json::Value::Object(files)
    );
    std::fs::write(out.join("examples.js"), js)?;
    Ok(())
}

/// Installs the page's npm packages as `package-lock.json` pins them, when they are missing or
/// the lock file's contents changed since: a copy of the lock it installed stays beside them
/// (a timestamp would change on a checkout, and `npm ci` deletes what is there first).
pub fn npm_ci(sh: &Shell, web: &Path) -> anyhow::Result<()> {
    let lock = std::fs::read(web.join("package-lock.json")).context("web-validator/package-lock.json")?;
    let installed = web.join("node_modules/.gke-rl-installed-lock.json");
    if std::fs::read(&installed).ok().as_deref() != Some(lock.as_slice()) {
        let _dir = sh.push_dir(web);
        cmd!(sh, "npm ci --no-audit --no-fund --silent").run()?;
        std::fs::write(&installed, &lock)?;
    }
    Ok(())
}

/// The codelab fixtures as the page's example holds them.
pub fn codelab_files(root: &Path) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let dir = root.join("tests/fixtures/codelab");
    let mut files = serde_json::Map::new();
    let mut names: Vec<String> =
        std::fs::read_dir(&dir)?.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned())).collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        if name != "README.md" {
            files.insert(name.clone(), std::fs::read_to_string(dir.join(&name))?.into());
        }
    }
    Ok(files)
}
