//! Repository rules, checked by `cargo test` (rust-analyzer's tidy pattern). Each failure
//! names the file and line and the rule it breaks.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::project_root;

/// Committed text files, skipping build output and the copied upstream data.
fn text_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | "out" | ".git" | "node_modules") {
                    walk(&path, out);
                }
            } else if ["rs", "toml", "md", "yaml", "yml", "json", "sh", "snap"].iter().any(|ext| name.ends_with(&format!(".{ext}")))
                || name == "run"
                || name == ".rayignore"
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&project_root(), &mut files);
    files
}

fn rust_files(dir: &str) -> Vec<PathBuf> {
    text_files().into_iter().filter(|p| p.starts_with(project_root().join(dir)) && p.extension().is_some_and(|e| e == "rs")).collect()
}

fn relative(path: &Path) -> String {
    path.strip_prefix(project_root()).unwrap_or(path).display().to_string()
}

#[test]
fn no_trailing_whitespace_or_tabs_in_source() {
    let mut problems = Vec::new();
    // The codelab fixtures reproduce upstream text byte for byte, defects included, and a
    // unified diff writes a blank context line as a single space.
    let verbatim = [project_root().join("tests/fixtures/codelab"), project_root().join(crate::codegen::UPSTREAM)];
    let is_diff = |p: &Path| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("it__blueprint__"));
    for path in text_files().into_iter().filter(|p| !verbatim.iter().any(|v| p.starts_with(v)) && !is_diff(p)) {
        let text = fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.ends_with(' ') || line.ends_with('\t') {
                problems.push(format!("{}:{}: trailing whitespace", relative(&path), i + 1));
            }
        }
        if !text.is_empty() && !text.ends_with('\n') {
            problems.push(format!("{}: no newline at end of file", relative(&path)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The crates that do no I/O: the SDK, the validator, and the in-cluster programs with the
/// reading of their records.
const PURE_CRATES: [&str; 3] = ["crates/gke-rl", "crates/gke-rl-validate", "crates/gke-rl-in-cluster"];

/// The invariant "the SDK does no I/O" is enforced by clippy (`crates/gke-rl/clippy.toml`,
/// which each pure crate's `clippy.toml` links to, and `cargo xtask ci`'s lint step with -D
/// warnings); this keeps that list from losing a family or a crate.
#[test]
fn the_sdk_bans_io_to_the_compiler() {
    let config = fs::read_to_string(project_root().join("crates/gke-rl/clippy.toml")).unwrap();
    for krate in PURE_CRATES.iter().filter(|krate| **krate != "crates/gke-rl") {
        let own = project_root().join(krate).join("clippy.toml");
        let linked = fs::symlink_metadata(&own).is_ok_and(|m| m.file_type().is_symlink())
            && fs::read_link(&own).is_ok_and(|target| target == Path::new("../gke-rl/clippy.toml"));
        assert!(linked, "{krate}/clippy.toml: link it to ../gke-rl/clippy.toml, the pure crates' one list");
    }
    let required = [
        "std::fs::read_to_string",
        "std::fs::write",
        "std::fs::File",
        "std::env::var",
        "std::process::Command",
        "std::process::exit",
        "std::net::TcpStream",
        "std::time::Instant::now",
        "std::time::SystemTime::now",
        "std::println",
    ];
    let missing: Vec<&str> = required.iter().copied().filter(|api| !config.contains(&format!("path = \"{api}\""))).collect();
    assert!(missing.is_empty(), "crates/gke-rl/clippy.toml no longer bans {missing:?}: the SDK must do no I/O");
}

/// Programs run in one place of the libraries: the operations' runner (`gke_rl_ops::Processes`),
/// which strips the secret variables from every child; the CLI runs its dev tooling.
#[test]
fn only_the_ops_runner_runs_programs() {
    let runner = project_root().join("crates/gke-rl-ops/src/env.rs");
    let mut problems = Vec::new();
    for path in rust_files("crates") {
        let is_test = path.ends_with("tests.rs")
            || path.starts_with(project_root().join("crates/test-support"))
            || path.components().any(|c| c.as_os_str() == "tests" || c.as_os_str() == "benches" || c.as_os_str() == "examples");
        let is_build_script = path.ends_with("build.rs");
        if !is_test && !is_build_script && path != runner && fs::read_to_string(&path).unwrap().contains("Command::new") {
            problems.push(format!("{}: runs a program; go through gke_rl_ops::Runner", relative(&path)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_crate_root_has_a_module_doc() {
    let roots = text_files().into_iter().filter(|p| p.ends_with("src/lib.rs") || p.ends_with("src/main.rs"));
    for root in roots {
        let text = fs::read_to_string(&root).unwrap();
        assert!(text.starts_with("//!"), "{}: start the crate with a `//!` doc saying what it is for", relative(&root));
    }
}

/// Library code returns errors; an `expect` states the invariant that makes it safe. Doc
/// examples may unwrap.
#[test]
fn no_bare_unwrap_in_library_code() {
    let mut problems = Vec::new();
    for path in PURE_CRATES.iter().flat_map(|krate| rust_files(&format!("{krate}/src"))) {
        let text = fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (i, line) in code.lines().enumerate() {
            if line.contains(".unwrap()") && !line.trim_start().starts_with("//") {
                problems.push(format!(
                    "{}:{}: `.unwrap()` in library code; return an error or `expect` an invariant",
                    relative(&path),
                    i + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// One rustls crypto provider in the whole build, ring: with two compiled in, rustls cannot pick
/// one and every TLS client (kube, reqwest, the WebSocket) panics on its first `https://` peer.
#[test]
fn one_tls_crypto_provider() {
    let lock = fs::read_to_string(project_root().join("Cargo.lock")).unwrap();
    let packages: Vec<&str> = lock.lines().filter_map(|l| l.strip_prefix("name = \"")).map(|n| n.trim_end_matches('"')).collect();
    let second = packages.iter().filter(|p| p.starts_with("aws-lc")).collect::<Vec<_>>();
    assert!(
        second.is_empty(),
        "Cargo.lock has {second:?}: a crate enabled rustls's aws-lc-rs provider; keep ring only (`cargo tree -i aws-lc-rs`)"
    );
    assert!(packages.contains(&"ring"), "Cargo.lock lost ring, the one provider");
}

/// The upstream files under `tests/fixtures/upstream/` are what their `SOURCE.md` says: each
/// listed with its git blob id, and byte for byte that blob (`git hash-object`), so tests read
/// upstream's own text and no file there goes unaccounted for.
#[test]
fn upstream_fixtures_are_verbatim() {
    use sha1::Digest as _;
    let root = project_root().join(crate::codegen::UPSTREAM);
    let mut listed = Vec::new();
    let mut problems = Vec::new();
    for source in text_files().into_iter().filter(|p| p.starts_with(&root) && p.ends_with("SOURCE.md")) {
        let folder = source.parent().unwrap().to_path_buf();
        for line in fs::read_to_string(&source).unwrap().lines() {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let (Some(file), Some(blob)) = (cells.first(), cells.last()) else { continue };
            if blob.len() != 40 || !blob.chars().all(|c| c.is_ascii_hexdigit()) {
                continue;
            }
            let path = folder.join(file);
            let Ok(bytes) = fs::read(&path) else {
                problems.push(format!("{}: lists {file}, which is missing", relative(&source)));
                continue;
            };
            let mut hasher = sha1::Sha1::new();
            hasher.update(format!("blob {}\0", bytes.len()));
            hasher.update(&bytes);
            let actual: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
            if actual != *blob {
                problems.push(format!(
                    "{}: blob {actual}, but {} says {blob}: copy it again, verbatim",
                    relative(&path),
                    relative(&source)
                ));
            }
            listed.push(path);
        }
    }
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                files(&path, out)
            } else if !path.ends_with("SOURCE.md") {
                out.push(path)
            }
        }
    }
    let mut present = Vec::new();
    files(&root, &mut present);
    for path in present.iter().filter(|p| !listed.contains(p)) {
        problems.push(format!("{}: not listed in a SOURCE.md with its repository, commit and blob id", relative(path)));
    }
    assert!(listed.len() >= 8, "only {} upstream fixtures listed", listed.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Each crate builds only what its job needs: the Kubernetes and Ray clients build the SDK
/// alone, and the page builds the SDK and the validator, so that editing an in-cluster program
/// rebuilds neither them nor the page, and the SDK builds neither of the other two.
#[test]
fn each_crate_builds_only_what_its_job_needs() {
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let crates = fs::read_dir(project_root().join("crates")).unwrap().map(|e| e.unwrap().path());
    for dir in crates.chain([project_root().join("xtask")]) {
        let text = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let name = text.lines().find_map(|l| l.strip_prefix("name = ")).unwrap().trim_matches('"').to_owned();
        let normal = text.split("\n[").find(|s| s.starts_with("dependencies]")).unwrap_or_default();
        // A fake is turned on by dev-dependencies only, so that no binary a user runs holds one.
        assert!(!normal.contains("\"fake\""), "{name}: a fake among its [dependencies]");
        let deps = normal.lines().skip(1).filter_map(|l| l.split(['.', ' ', '=']).next()).filter(|d| d.starts_with("gke-rl"));
        graph.insert(name, deps.map(str::to_owned).collect());
    }
    let builds = |root: &str| {
        let (mut seen, mut stack) = (BTreeSet::new(), vec![root.to_owned()]);
        while let Some(krate) = stack.pop() {
            stack.extend(graph.get(&krate).into_iter().flatten().filter(|d| seen.insert((*d).clone())).cloned());
        }
        seen
    };
    for (krate, never) in [
        ("gke-rl", ["gke-rl-validate", "gke-rl-in-cluster"].as_slice()),
        ("gke-rl-kube", &["gke-rl-validate", "gke-rl-in-cluster"]),
        ("gke-rl-ray", &["gke-rl-validate", "gke-rl-in-cluster"]),
        ("gke-rl-validate", &["gke-rl-in-cluster"]),
        ("gke-rl-wasm", &["gke-rl-in-cluster"]),
        // Dev tooling: the CLI is run, never linked, and the operations are not its business.
        ("xtask", &["gke-rl-cli", "gke-rl-ops", "gke-rl-kube"]),
    ] {
        let built = builds(krate);
        assert!(graph.contains_key(krate), "{krate}: no such crate");
        let wrong: Vec<&&str> = never.iter().filter(|n| built.contains(**n)).collect();
        assert!(wrong.is_empty(), "{krate} builds {wrong:?}: move what it uses down into the SDK");
    }
}

/// One integration test binary per crate (`tests/it/main.rs` with modules, or one file), as
/// cargo's and rust-analyzer's: each links tokio, kube and TLS once. Real-Ray trials with a
/// harness of their own (`harness = false`) are the one exception.
#[test]
fn one_integration_test_binary_per_crate() {
    let crates = fs::read_dir(project_root().join("crates")).unwrap().map(|e| e.unwrap().path());
    for dir in crates.chain([project_root().join("xtask")]) {
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let own_harness: Vec<&str> = manifest
            .split("[[test]]")
            .skip(1)
            .filter(|section| section.contains("harness = false"))
            .filter_map(|section| section.lines().find_map(|l| l.strip_prefix("name = ")).map(|n| n.trim_matches('"')))
            .collect();
        let Ok(entries) = fs::read_dir(dir.join("tests")) else { continue };
        let mut targets = Vec::new();
        for path in entries.map(|e| e.unwrap().path()) {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let is_target = if path.is_dir() { path.join("main.rs").is_file() } else { path.extension().is_some_and(|e| e == "rs") };
            if is_target && !own_harness.contains(&name.as_str()) {
                targets.push(name);
            }
        }
        assert!(targets.len() <= 1, "{}: test binaries {targets:?}; make them modules of tests/it/main.rs", relative(&dir));
    }
}

/// Every dependency a crate's `Cargo.toml` lists is named in that crate's code (dev ones in its
/// tests, benches or examples too), so `cargo tree` shows no edge the code does not use.
#[test]
fn every_dependency_is_named_in_its_code() {
    let mut problems = Vec::new();
    let manifests = text_files().into_iter().filter(|p| p.ends_with("Cargo.toml") && p.parent() != Some(&project_root()));
    for manifest in manifests.filter(|p| !p.starts_with(project_root().join("fuzz"))) {
        let crate_dir = manifest.parent().unwrap();
        let text = fs::read_to_string(&manifest).unwrap();
        let own_name = text.lines().find_map(|l| l.strip_prefix("name = ")).unwrap_or_default().trim_matches('"').to_owned();
        // The code a section's dependencies may be named in: the library and binaries for
        // [dependencies]; with the tests, benches and examples (here or by `path`) for dev ones.
        let mut library = rust_files_under(&crate_dir.join("src"));
        library.extend(rust_files_under(&crate_dir.join("build.rs")));
        let mut development = library.clone();
        for folder in ["tests", "benches", "examples"] {
            development.extend(rust_files_under(&crate_dir.join(folder)));
        }
        for path in text.lines().filter_map(|l| l.strip_prefix("path = ")) {
            let file = crate_dir.join(path.trim_matches('"'));
            development.extend(rust_files_under(&file));
            development.extend(rust_files_under(&file.parent().unwrap().join("common")));
        }
        // The code without its comments: a crate named only in prose is not used.
        let read = |files: &[PathBuf]| {
            let text: Vec<String> = files.iter().map(|f| fs::read_to_string(f).unwrap()).collect();
            text.iter().flat_map(|t| t.lines()).map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
        };
        let (library, development) = (read(&library), read(&development));
        let mut section = "";
        for (number, line) in text.lines().enumerate() {
            if line.starts_with('[') {
                section = line;
                continue;
            }
            let code = match section {
                "[dependencies]" => &library,
                "[dev-dependencies]" => &development,
                _ => continue,
            };
            let Some(name) = line.split(['.', ' ', '=']).next().filter(|n| !n.is_empty() && !n.starts_with('#')) else { continue };
            let ident = name.replace('-', "_");
            let named = code.match_indices(&ident).any(|(at, _)| {
                let before = code[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                let after = code[at + ident.len()..].chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                before && after
            });
            if name != own_name && !named {
                problems.push(format!("{}:{}: `{name}` is never named in the code: drop it", relative(&manifest), number + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The Rust files at `path`: the file itself, or those under the folder.
fn rust_files_under(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    text_files().into_iter().filter(|p| p.starts_with(path) && p.extension().is_some_and(|e| e == "rs")).collect()
}

/// A clone has nothing beside it: no tracked file may point at the research folder the project
/// was started from. Cite the upstream repository, path and tag, or a file under `docs/`.
#[test]
fn nothing_points_outside_the_repository() {
    let outside = concat!("..", "/shared");
    let listed = std::process::Command::new("git").args(["ls-files", "-z"]).current_dir(project_root()).output().expect("git ls-files");
    assert!(listed.status.success(), "git ls-files failed: a clone has its .git");
    let tracked: Vec<PathBuf> = listed
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| project_root().join(String::from_utf8_lossy(p).as_ref()))
        .collect();
    assert!(tracked.len() > 100, "only {} tracked files", tracked.len());
    let problems: Vec<String> = tracked
        .iter()
        .flat_map(|path| {
            // Binary files are read as what text they hold.
            let text = fs::read(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default();
            text.lines()
                .enumerate()
                .filter(|(_, line)| line.contains(outside) || line.contains(concat!("nemo-rl", ".md")))
                .map(|(number, _)| format!("{}:{}: points outside the repository", relative(path), number + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// An artifact's file name is written once, in `gke_rl::ArtifactKind::file`: the code outside
/// tests names the kind, never the file as a value or a path (a string that is the name, or has
/// it after a `/`). Prose in messages may still say it, the GPU families' table holds Cluster
/// Toolkit's own paths, and `include_str!` embeds an upstream copy by its path.
#[test]
fn artifact_file_names_are_written_once() {
    let table = project_root().join("crates/gke-rl/src/artifact.rs");
    let names: Vec<String> = fs::read_to_string(&table)
        .unwrap()
        .lines()
        .filter(|l| l.contains("=> \"") && l.contains("ArtifactKind::"))
        .filter_map(|l| l.split('"').nth(1).map(str::to_owned))
        .filter(|name| name.contains('.'))
        .collect();
    assert!(names.len() >= 9, "found only {names:?} in {}", relative(&table));
    let mut problems = Vec::new();
    let upstream_paths = project_root().join("crates/gke-rl/src/knowledge/mod.rs");
    let sources = rust_files("crates").into_iter().filter(|p| *p != table && *p != upstream_paths);
    for path in sources.filter(|p| !p.ends_with("tests.rs") && !p.components().any(|c| c.as_os_str() == "tests")) {
        let text = fs::read_to_string(&path).unwrap();
        // The code before its unit tests.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (number, line) in code.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with("//") && !l.contains("include_str!(")) {
            let as_value = |name: &String| {
                line.match_indices(name.as_str()).any(|(at, _)| {
                    let (before, after) = (line[..at].chars().next_back(), line[at + name.len()..].chars().next());
                    before == Some('/') || (before == Some('"') && after == Some('"'))
                })
            };
            for name in names.iter().filter(|name| as_value(name)) {
                problems.push(format!("{}:{}: writes {name}; use gke_rl::ArtifactKind's file()", relative(&path), number + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The operations read the environment only through their `Env` (its runner's variables), so
/// a test or an embedding tool decides what they see.
#[test]
fn the_operations_read_the_environment_through_env() {
    let seam = project_root().join("crates/gke-rl-ops/src/env.rs");
    let problems: Vec<String> = rust_files("crates/gke-rl-ops/src")
        .into_iter()
        .filter(|path| *path != seam && fs::read_to_string(path).unwrap().contains("std::env::var"))
        .map(|path| format!("{}: reads the environment; use Env::var", relative(&path)))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Issue 32, item 6: `cargo install --path crates/gke-rl-cli` resolves only the CLI's graph and
/// warns about a profile override naming a package outside it (a test-only one, such as insta).
/// Not `--offline`: `--target all` reads the manifests of every platform's crates (Windows'
/// `anstyle-wincon` on Linux), which a new machine's cargo home has not downloaded (issue 52).
#[test]
fn profile_overrides_name_packages_the_installed_binary_builds() {
    let cargo = crate::cargo();
    let tree = std::process::Command::new(cargo)
        .args(["tree", "--locked", "-p", "gke-rl-cli", "-e", "normal,build", "--prefix", "none", "--target", "all"])
        .current_dir(project_root())
        .output()
        .expect("cargo tree");
    assert!(tree.status.success(), "{}", String::from_utf8_lossy(&tree.stderr));
    let built: std::collections::BTreeSet<String> =
        String::from_utf8_lossy(&tree.stdout).lines().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect();
    let manifest = fs::read_to_string(project_root().join("Cargo.toml")).unwrap();
    let outside: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("[profile.dev.package.")?.strip_suffix(']'))
        .filter(|package| *package != "\"*\"" && !built.contains(*package))
        .collect();
    assert!(outside.is_empty(), "Cargo.toml: profile overrides for packages gke-rl-cli does not build (cargo install warns): {outside:?}");
}

/// Issue 52: nothing in `ci` may depend on what a machine's cargo home happens to hold, so no
/// command the tests or xtask run asks cargo to stay offline.
#[test]
fn no_command_runs_cargo_offline() {
    let flag = ["--", "offline"].concat();
    let mut sources = rust_files("xtask/src");
    sources.extend(rust_files("tests"));
    sources.extend(rust_files("crates").into_iter().filter(|p| p.components().any(|c| c.as_os_str() == "tests")));
    let problems: Vec<String> = sources
        .into_iter()
        .filter(|path| fs::read_to_string(path).unwrap().contains(&format!("\"{flag}\"")))
        .map(|path| format!("{}: runs cargo with {flag}; a new machine's cargo home lacks what this machine's has", relative(&path)))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Issue 54: each module of the operations fails with its family's error (or the common one
/// that every family holds), never the catch-all `Error`, so that a signature says what it can
/// fail with. The one crossing: cluster mode resumes a suspended RayCluster before a run (and
/// reads why a resume failed) and suspends it after (`JobError::SuspendAfterRun`). The check is
/// by name, in each module's code without comments and tests.
#[test]
fn each_operation_fails_with_its_familys_error() {
    const FAMILIES: [(&str, &[&str]); 4] = [
        ("CommonError", &["files", "fix"]),
        ("LifecycleError", &["address", "blueprint", "deploy", "destroy", "existing", "keep", "lister", "preflight", "site", "suspend"]),
        ("JobError", &["cluster", "commands", "fabric", "head", "jobs", "mode", "rayjob", "run", "storage"]),
        ("ReportError", &["monitoring"]),
    ];
    const CROSSINGS: [(&str, &str); 1] = [("cluster", "LifecycleError")];
    const NOT_OPERATIONS: [&str; 4] = ["env", "error", "events", "lib"];
    let src = project_root().join("crates/gke-rl-ops/src");
    let names = |code: &str, name: &str| {
        code.match_indices(name).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            let after = code[at + name.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    let (mut problems, mut crossed, mut seen) = (Vec::new(), Vec::new(), Vec::new());
    for path in rust_files_in(&src) {
        let module =
            path.strip_prefix(&src).unwrap().components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        seen.push(module.clone());
        if NOT_OPERATIONS.contains(&module.as_str()) {
            continue;
        }
        let Some((own, _)) = FAMILIES.iter().find(|(_, modules)| modules.contains(&module.as_str())) else {
            problems.push(format!("{}: a module of no family; add it to FAMILIES", relative(&path)));
            continue;
        };
        let code = code_of(&fs::read_to_string(&path).unwrap());
        for (other, _) in FAMILIES.iter().filter(|(family, _)| family != own && *family != "CommonError") {
            if !names(&code, other) {
                continue;
            }
            if CROSSINGS.contains(&(module.as_str(), *other)) {
                crossed.push((module.clone(), *other));
            } else {
                problems.push(format!("{}: a {own} module names {other}", relative(&path)));
            }
        }
        if names_the_catch_all(&code) {
            problems.push(format!("{}: names the catch-all Error; name its family's", relative(&path)));
        }
    }
    for (module, family) in CROSSINGS {
        if !crossed.iter().any(|(m, f)| m == module && *f == family) {
            problems.push(format!("CROSSINGS: {module} no longer names {family}; remove the crossing"));
        }
    }
    for module in FAMILIES.iter().flat_map(|(_, modules)| modules.iter()).chain(&NOT_OPERATIONS) {
        if !seen.iter().any(|m| m == module) {
            problems.push(format!("FAMILIES: no module {module} in gke-rl-ops"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Whether `code` names the operations' catch-all `Error`: `crate::Error`, `crate::error::Error`,
/// or either in a `use` group (`crate::{Env, Error}`, `crate::error::{Error, Fix}`).
fn names_the_catch_all(code: &str) -> bool {
    ["crate::", "crate::error::"].iter().any(|prefix| paths_after(code, prefix).iter().any(|(name, _)| name == "Error"))
}

#[test]
fn the_catch_all_error_is_found_however_it_is_named() {
    for named in [
        "fn f() -> Result<(), crate::Error>",
        "use crate::{Env, Error};",
        "use crate::{events::{Event}, Error};",
        "use crate::error::Error;",
        "use crate::error::{Error, Fix};",
        "use crate::{\n    Env,\n    Error,\n};",
    ] {
        assert!(names_the_catch_all(named), "{named}");
    }
    for other in [
        "#[derive(thiserror::Error)]",
        "Box<dyn std::error::Error>",
        "gke_rl_kube::Error",
        "crate::RunError",
        "use crate::{JobError, ErrorKind};",
        "crate::error::JobError",
    ] {
        assert!(!names_the_catch_all(other), "{other}");
    }
}

/// Each crate's modules import each other in no loop: each top-level module of `src/` a node,
/// each path to another an edge (`crate::m`, `super::…::m` reaching the root, or an item the
/// root re-exports from `m`). A loop ties its modules into one, which no crate can then be cut
/// between. Every workspace member is held to it.
#[test]
fn no_module_loop_inside_a_crate() {
    let manifest = fs::read_to_string(project_root().join("Cargo.toml")).unwrap();
    let members = manifest.split("members = [").nth(1).and_then(|m| m.split(']').next()).unwrap_or_default();
    let crates: Vec<&str> = members.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()).collect();
    assert!(crates.len() >= 9, "the workspace's members: {crates:?}");
    let mut problems = Vec::new();
    for krate in crates {
        let src = project_root().join(krate).join("src");
        let edges = module_imports(&src);
        for component in strongly_connected(&edges) {
            let ties: Vec<String> = component
                .iter()
                .flat_map(|from| {
                    edges[from].iter().filter(|(to, _)| component.contains(to)).map(move |(to, at)| format!("    {from} -> {to} ({at})"))
                })
                .collect();
            problems.push(format!("{krate}: modules {} import each other in a loop:\n{}", component.join(", "), ties.join("\n")));
        }
    }
    assert!(problems.is_empty(), "move what ties them down to a module both can import:\n{}", problems.join("\n"));
}

/// Code of `text` without its comments and its tests module, each line's text kept at its
/// place so that positions still give lines.
fn code_of(text: &str) -> String {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    code.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The items `src`'s crate root re-exports from its modules (`pub use m::{A, B}`), by name.
fn root_exports(src: &Path, modules: &[String]) -> std::collections::BTreeMap<String, String> {
    let root = ["lib.rs", "main.rs"].iter().find_map(|f| fs::read_to_string(src.join(f)).ok()).unwrap_or_default();
    let code = code_of(&root).replace('\n', " ");
    let mut exports = std::collections::BTreeMap::new();
    for statement in code.split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ").or_else(|| statement.trim().strip_prefix("pub(crate) use ")) else {
            continue;
        };
        let Some((module, items)) = rest.split_once("::") else { continue };
        if !modules.iter().any(|m| m == module.trim()) {
            continue;
        }
        for item in items.trim_matches(|c| c == '{' || c == '}' || c == ' ').split(',') {
            let name = item.split(" as ").last().unwrap_or_default().trim().rsplit("::").next().unwrap_or_default().trim();
            if !name.is_empty() && name != "self" {
                exports.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    exports
}

/// Each top-level module of `src` and the others it names, each with the first place it does.
fn module_imports(src: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> {
    let modules: Vec<String> = fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let exports = root_exports(src, &modules);
    let mut edges = std::collections::BTreeMap::new();
    for module in &modules {
        let dir = src.join(module);
        let files = if dir.is_dir() { rust_files_in(&dir) } else { vec![src.join(format!("{module}.rs"))] };
        let mut named = std::collections::BTreeMap::new();
        for file in files {
            // How many `super::` reach the crate root from this file: its depth below `src`.
            let inside = file.strip_prefix(src).unwrap();
            let depth = inside.components().count() - usize::from(inside.ends_with("mod.rs"));
            let code = code_of(&fs::read_to_string(&file).unwrap());
            let mut names = paths_after(&code, "crate::");
            names.extend(paths_after(&code, &"super::".repeat(depth)));
            for (name, at) in names {
                let target = if modules.contains(&name) { Some(name) } else { exports.get(&name).cloned() };
                if let Some(target) = target.filter(|t| t != module) {
                    let line = code[..at].matches('\n').count() + 1;
                    named.entry(target).or_insert_with(|| format!("{}:{line}", relative(&file)));
                }
            }
        }
        edges.insert(module.clone(), named);
    }
    edges
}

/// The Rust files under `dir`, at any depth, wherever it is (a made-up crate's too).
fn rust_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files_in(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The first segment of each path after `prefix` in `code`, with its position:
/// `prefix{a, b::c}` gives a and b, across lines. A `prefix` that continues a longer path
/// (`super::super::` for `super::`) is left to the longer one.
fn paths_after(code: &str, prefix: &str) -> Vec<(String, usize)> {
    let ident = |s: &str| s.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut names = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = &code[..at];
        if before.chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if rest.starts_with("super::") {
            continue;
        }
        match rest.strip_prefix('{') {
            Some(group) => {
                let (mut depth, mut item) = (0, String::new());
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            names.push((ident(&item), at));
                            item.clear();
                            continue;
                        }
                        _ => {}
                    }
                    item.push(c);
                }
                names.push((ident(&item), at));
            }
            None => names.push((ident(rest), at)),
        }
    }
    names.retain(|(n, _)| !n.is_empty());
    names
}

/// The components of more than one node (Tarjan's algorithm), each sorted.
fn strongly_connected<V>(edges: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, V>>) -> Vec<Vec<String>> {
    struct Walk<'a, V> {
        edges: &'a std::collections::BTreeMap<String, std::collections::BTreeMap<String, V>>,
        index: std::collections::BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a, V>(w: &mut Walk<'a, V>, node: &'a str) {
        let n = w.index.len();
        w.index.insert(node, (n, n));
        w.stack.push(node);
        for next in w.edges.get(node).into_iter().flat_map(|e| e.keys()) {
            match w.index.get(next.as_str()).copied() {
                None => {
                    visit(w, next);
                    let low = w.index[next.as_str()].1;
                    w.index.get_mut(node).unwrap().1 = w.index[node].1.min(low);
                }
                Some((i, _)) if w.stack.contains(&next.as_str()) => w.index.get_mut(node).unwrap().1 = w.index[node].1.min(i),
                Some(_) => {}
            }
        }
        if w.index[node].0 == w.index[node].1 {
            let at = w.stack.iter().rposition(|v| *v == node).unwrap();
            let mut component: Vec<String> = w.stack.split_off(at).into_iter().map(str::to_owned).collect();
            if component.len() > 1 {
                component.sort();
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk { edges, index: std::collections::BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for node in edges.keys() {
        if !walk.index.contains_key(node.as_str()) {
            visit(&mut walk, node);
        }
    }
    walk.found
}

#[test]
fn a_loop_of_modules_is_found_and_a_chain_is_not() {
    let graph = |pairs: &[(&str, &str)]| {
        let mut edges: std::collections::BTreeMap<String, std::collections::BTreeMap<String, ()>> = std::collections::BTreeMap::new();
        for (from, to) in pairs {
            edges.entry((*from).to_owned()).or_default().insert((*to).to_owned(), ());
            edges.entry((*to).to_owned()).or_default();
        }
        edges
    };
    assert_eq!(strongly_connected(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])), [["a", "b", "c"]]);
    assert!(strongly_connected(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    let names = |code: &str, prefix: &str| paths_after(code, prefix).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
    assert_eq!(names("use crate::{model::{A, B}, quote, auth::X};", "crate::"), ["model", "quote", "auth"]);
    assert_eq!(names("use crate::{\n    model::A,\n    quote,\n};", "crate::"), ["model", "quote"], "a group over lines");
    assert_eq!(names("let x = crate::cost::dollars(y) + mycrate::z;", "crate::"), ["cost"]);
    assert_eq!(names("use super::super::x; use super::y;", "super::"), ["y"], "super::super:: is the longer path's");
    assert_eq!(names("use super::super::x;", "super::super::"), ["x"]);

    // A made-up crate: a loop through an item the root re-exports, and one through a nested file.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    fs::create_dir_all(src.join("b")).unwrap();
    fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\npub use a::{Thing, other::Other};\n").unwrap();
    fs::write(src.join("a.rs"), "use crate::c::X;\n").unwrap();
    fs::write(src.join("c.rs"), "// use crate::b::Y;\nfn f() -> crate::Thing { todo!() }\n").unwrap();
    fs::write(src.join("b/mod.rs"), "mod inner;\n").unwrap();
    fs::write(src.join("b/inner.rs"), "use super::super::a::Z;\n").unwrap();
    let edges = module_imports(src);
    let targets = |m: &str| edges[m].keys().cloned().collect::<Vec<_>>();
    assert_eq!((targets("a"), targets("b"), targets("c")), (vec!["c".to_owned()], vec!["a".to_owned()], vec!["a".to_owned()]));
    assert_eq!(strongly_connected(&edges), [["a", "c"]]);
}
