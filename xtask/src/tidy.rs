//! Repository rules, checked by `cargo test` (rust-analyzer's tidy pattern). Each failure
//! names the file and line and the rule it breaks.

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
    let is_diff = |p: &Path| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("blueprint__"));
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

/// The invariant "the SDK does no I/O" is enforced by clippy (`crates/gke-rl/clippy.toml`,
/// `cargo xtask ci`'s lint step with -D warnings); this keeps that list from losing a family.
#[test]
fn the_sdk_bans_io_to_the_compiler() {
    let config = fs::read_to_string(project_root().join("crates/gke-rl/clippy.toml")).unwrap();
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
    for path in rust_files("crates/gke-rl/src") {
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
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
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

/// The crates whose modules import each other in no loop: each top-level module of `src/` a
/// node, each `crate::` (or, from the crate root's children, `super::`) path to another an
/// edge. A loop ties its modules into one, which no crate can then be cut between.
const LOOPLESS_CRATES: &[&str] = &[
    "crates/gke-rl",
    "crates/gke-rl-yaml",
    "crates/gke-rl-gitwildmatch",
    "crates/gke-rl-ray",
    "crates/gke-rl-kube",
    "crates/gke-rl-ops",
    "crates/gke-rl-cli",
    "crates/gke-rl-wasm",
    "crates/test-support",
    "xtask",
];

#[test]
fn no_module_loop_inside_a_crate() {
    let mut problems = Vec::new();
    for krate in LOOPLESS_CRATES {
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

/// Each top-level module of `src` and the others it names, each with the first place it does.
fn module_imports(src: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> {
    let modules: Vec<String> = fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut edges = std::collections::BTreeMap::new();
    for module in &modules {
        let dir = src.join(module);
        let files = if dir.is_dir() {
            text_files().into_iter().filter(|p| p.starts_with(&dir) && p.extension().is_some_and(|e| e == "rs")).collect()
        } else {
            vec![src.join(format!("{module}.rs"))]
        };
        let mut named = std::collections::BTreeMap::new();
        for file in files {
            // `super::` names the crate root from src/x.rs and src/x/mod.rs only.
            let super_is_root = file.parent() == Some(src) || file.ends_with(format!("{module}/mod.rs"));
            let text = fs::read_to_string(&file).unwrap();
            // Tests (the module at the end of a file) may reach anywhere.
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                let prefixes: &[&str] = if super_is_root { &["crate::", "super::"] } else { &["crate::"] };
                for prefix in prefixes {
                    for name in paths_after(line, prefix) {
                        if &name != module && modules.contains(&name) {
                            named.entry(name).or_insert_with(|| format!("{}:{}", relative(&file), n + 1));
                        }
                    }
                }
            }
        }
        edges.insert(module.clone(), named);
    }
    edges
}

/// The first segment of each path after `prefix` in `line`, `prefix{a, b::c}` giving a and b.
fn paths_after(line: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut names = Vec::new();
    for (at, _) in line.match_indices(prefix) {
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &line[at + prefix.len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let (mut depth, mut item) = (0, String::new());
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            names.push(ident(item.trim()));
                            item.clear();
                            continue;
                        }
                        _ => {}
                    }
                    item.push(c);
                }
                names.push(ident(item.trim()));
            }
            None => names.push(ident(rest)),
        }
    }
    names.retain(|n| !n.is_empty());
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
    assert_eq!(paths_after("use crate::{model::{A, B}, quote, auth::X};", "crate::"), ["model", "quote", "auth"]);
    assert_eq!(paths_after("let x = crate::cost::dollars(y) + mycrate::z;", "crate::"), ["cost"]);
}
