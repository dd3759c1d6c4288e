//! `gke-rl validate`: check artifacts — rendered, hand-written or the codelab's — in one
//! pass. Exit 0 without errors, 1 with errors, 2 for usage or I/O problems.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use gke_rl::Severity;
use gke_rl_validate::{self as validate, SourceFile, Validation};

use crate::config;
use crate::diagnostics::Located;
use crate::terminal::{outln, shown};

const KNOWN_FILES: &str =
    "gke-rl checks env.sh, *.sh job scripts, RayCluster YAML, runtime-env JSON, .rayignore, gcluster deployment files and blueprints";

/// Check artifacts for every known defect, alone and across files
#[derive(clap::Args)]
pub struct Args {
    /// Files or directories to check [default: the render of the current config]
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The config whose render fills in the kinds of file PATH lacks (or is checked alone)
    #[command(flatten)]
    source: config::Source,
    /// Check RayClusters (or RayJobs) against this CRD's openAPIV3Schema instead of KubeRay v1.7.0's, which is built in (a CRD in YAML or JSON, or a RayCluster's schema as JSON); once per kind
    #[arg(long, value_name = "FILE")]
    crd: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// List the rules that were not checked, and what would let each run
    #[arg(long, short)]
    verbose: bool,
    /// Make the edits the findings suggest in the files named. As `cargo fix`, only in files git
    /// can undo (tracked, no uncommitted changes); for others the edits are shown, not made
    #[arg(long)]
    fix: bool,
    /// With --fix, edit files that have uncommitted changes or are not in git too
    #[arg(long, requires = "fix")]
    allow_dirty: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// rustc-style, with the source line and a caret
    Human,
    /// An object: {findings: [{file, code, severity, line, column, message, help, fix?}], skipped: [{code, missing, enable}], rules_checked, rules}
    Json,
    /// SARIF 2.1.0, for code-scanning UIs
    Sarif,
}

impl Args {
    /// Returns whether any finding is an error.
    pub fn run(self) -> anyhow::Result<bool> {
        let Inputs { mut files, paths, unreadable, unknown } = self.read_paths()?;
        let from_disk: std::collections::BTreeSet<String> = files.keys().cloned().collect();
        if !unknown.is_empty() {
            crate::terminal::errln!(
                "note: skipped {} that gke-rl does not check: {}",
                plural(unknown.len(), "file"),
                shown(&unknown.join(", "))
            );
        }
        if !self.paths.is_empty() && files.is_empty() && unreadable.is_empty() && !self.source.is_explicit() {
            let named: Vec<String> = self.paths.iter().map(|p| display(p)).collect();
            bail!("nothing to check: {} holds no file gke-rl knows\nhelp: {KNOWN_FILES}", named.join(", "));
        }
        if self.paths.is_empty() || self.source.is_explicit() {
            let loaded = self.source.load()?.fitted_to_cluster()?;
            let rendered = loaded.artifacts()?;
            if self.paths.is_empty() && self.format == Format::Human {
                // Say what is checked: with no file named, it is a render nobody wrote to disk.
                crate::terminal::errln!(
                    "checking the render of {} (name files or folders to check those instead)\n",
                    crate::terminal::shown(&loaded.source)
                );
            }
            let given: Vec<_> = files.keys().filter_map(|name| gke_rl::ArtifactKind::detect(name, &files[name])).collect();
            for artifact in rendered {
                // Never in place of a file named: one of another kind may bear the name.
                if gke_rl::ArtifactKind::detect(artifact.name, &artifact.contents).is_some_and(|kind| !given.contains(&kind)) {
                    files.entry(artifact.name.to_owned()).or_insert(artifact.contents);
                }
            }
        }
        let mut validation = self.check(&files, &unreadable)?;
        if self.fix {
            // Each file by its path as the folder gave it: a name shown alike is another file.
            let on_disk: Vec<gke_rl_ops::fix::OnDisk<'_>> = files
                .iter()
                .filter(|(name, _)| from_disk.contains(*name))
                .filter_map(|(name, text)| Some(gke_rl_ops::fix::OnDisk { name, path: paths.get(name)?, text }))
                .collect();
            let edited = gke_rl_ops::fix::edits(&gke_rl_ops::Env::real(), &on_disk, &validation.findings);
            let (writable, shown_only): (Vec<_>, Vec<_>) = edited.into_iter().partition(|e| self.allow_dirty || e.unsaved.is_none());
            gke_rl_ops::fix::write(&writable)?;
            for file in &writable {
                crate::terminal::errln!("{:>9}  {}: {}", "fixed", shown(&file.name), shown(&file.made.join("; ")));
                files.insert(file.name.clone(), file.after.clone());
            }
            for file in &shown_only {
                let why = file.unsaved.as_deref().unwrap_or_default();
                crate::terminal::errln!(
                    "{}\nnot written: {} ({why}); commit it, or pass --allow-dirty to write it anyway\n",
                    diff(&file.name, &file.before, &file.after),
                    shown(&file.name)
                );
            }
            if writable.is_empty() && shown_only.is_empty() {
                crate::terminal::errln!("nothing to fix: no finding in the files named has an edit that fixes it");
            }
            if !writable.is_empty() {
                validation = self.check(&files, &unreadable)?;
            }
        }
        match self.format {
            Format::Human => {
                let mut shown = files;
                shown.extend(unreadable.into_iter().map(|(name, _, lossy)| (name, lossy)));
                print_human(&validation, &shown, self.verbose)
            }
            Format::Json => outln!("{}", serde_json::to_string_pretty(&validation)?),
            Format::Sarif => outln!("{}", serde_json::to_string_pretty(&validate::sarif(&validation))?),
        }
        Ok(validate::count(&validation.findings, Severity::Error) > 0)
    }

    /// The findings on `files`, with the CRDs given.
    fn check(&self, files: &BTreeMap<String, String>, unreadable: &[(String, gke_rl::Diagnostic, String)]) -> anyhow::Result<Validation> {
        let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
        let mut checked = unreadable
            .iter()
            .fold(validate::check(&sources), |checked, (name, diagnostic, _)| checked.unreadable(name, diagnostic.clone()));
        // KubeRay v1.7.0's CRDs are built in; one given takes the place of the built-in of its kind.
        for path in &self.crd {
            let text = config::read_input(path)?;
            let schema = validate::CrdSchema::from_crd(&text, true).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            checked = checked.crd(&schema).map_err(|e| anyhow::anyhow!("{}: {e}\nhelp: give one --crd per kind", path.display()))?;
        }
        Ok(checked.finish())
    }

    /// Every file named, and the files of every directory named whose kind gke-rl knows.
    fn read_paths(&self) -> anyhow::Result<Inputs> {
        let mut inputs = Inputs::default();
        for path in &self.paths {
            if path.is_dir() {
                // Each entry's type as the directory gives it (not following a link), so a
                // folder costs no call per file before its files are opened.
                let mut entries: Vec<(PathBuf, bool)> = std::fs::read_dir(path)
                    .with_context(|| format!("cannot read {}", path.display()))?
                    .map(|e| e.map(|e| (e.path(), e.file_type().is_ok_and(|t| t.is_file()))))
                    .collect::<Result<_, _>>()?;
                entries.sort();
                for (entry, is_file) in entries {
                    // Only regular files: a folder's named pipes, sockets and subfolders are not inputs.
                    if is_file {
                        inputs.read(&entry, false)?;
                    } else {
                        inputs.unknown.push(display(&entry));
                    }
                }
            } else {
                inputs.read(path, true)?;
            }
        }
        Ok(inputs)
    }
}

/// The files to check, as text, by the name they are shown by; the path each name is for;
/// those that are not UTF-8, with the error and a lossy text to show; and the files of the
/// folders named that gke-rl does not know.
#[derive(Default)]
struct Inputs {
    files: BTreeMap<String, String>,
    paths: BTreeMap<String, PathBuf>,
    unreadable: Vec<(String, gke_rl::Diagnostic, String)>,
    unknown: Vec<String>,
}

impl Inputs {
    /// Reads `path`; a file named on its own must be one gke-rl knows.
    fn read(&mut self, path: &Path, named: bool) -> anyhow::Result<()> {
        let name = display(path);
        match self.paths.get(&name) {
            Some(known) if known != path => {
                bail!("{} and another file are both shown as {}: rename one", shown(&format!("{:?}", path)), shown(&name))
            }
            Some(_) => return Ok(()),
            None => {}
        }
        self.paths.insert(name.clone(), path.to_owned());
        let bytes = gke_rl_ops::files::read_bytes(path)?;
        // UTF-8, as nearly every file is, becomes the text without a copy.
        let (text, broken) = match String::from_utf8(bytes) {
            Ok(text) => (text, None),
            Err(error) => {
                let bytes = error.into_bytes();
                (String::from_utf8_lossy(&bytes).into_owned(), gke_rl::diagnostic::utf8(&bytes).err())
            }
        };
        if gke_rl::ArtifactKind::detect(&name, &text).is_none() {
            if named {
                bail!("cannot tell what {name} is\nhelp: {KNOWN_FILES}");
            }
            self.unknown.push(name);
            return Ok(());
        }
        match broken {
            None => {
                self.files.insert(name, text);
            }
            Some(diagnostic) => self.unreadable.push((name, diagnostic, text)),
        }
        Ok(())
    }
}

/// The lines that differ between `before` and `after`, as a unified diff of one hunk with two
/// lines of context.
fn diff(name: &str, before: &str, after: &str) -> String {
    let (old, new): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let same_start = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let same_end = old[same_start..].iter().rev().zip(new[same_start..].iter().rev()).take_while(|(a, b)| a == b).count();
    let from = same_start.saturating_sub(2);
    let (old_end, new_end) = ((old.len() - same_end + 2).min(old.len()), (new.len() - same_end + 2).min(new.len()));
    // As `diff -u` writes a hunk: an empty range starts at the line before it.
    let start = |len: usize| if len == 0 { from } else { from + 1 };
    let (old_len, new_len) = (old_end - from, new_end - from);
    let mut out = format!("--- a/{name}\n+++ b/{name}\n@@ -{},{old_len} +{},{new_len} @@", start(old_len), start(new_len));
    let line = |prefix: char, text: &str| format!("\n{prefix}{}", shown(text));
    out.extend(old[from..same_start].iter().map(|l| line(' ', l)));
    out.extend(old[same_start..old.len() - same_end].iter().map(|l| line('-', l)));
    out.extend(new[same_start..new.len() - same_end].iter().map(|l| line('+', l)));
    out.extend(old[old.len() - same_end..old_end].iter().map(|l| line(' ', l)));
    out
}

/// `path` for people and for findings: as it is when it is UTF-8, with each byte that is not
/// written `\xHH` otherwise, so that two names never show alike by a lossy stand-in (a path
/// is kept beside its name for writing).
fn display(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let mut out = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02X}"));
        }
    }
    out
}

fn print_human(validation: &Validation, files: &BTreeMap<String, String>, verbose: bool) {
    let findings = &validation.findings;
    for finding in findings {
        let source = files.get(&finding.file).map_or("", String::as_str);
        outln!("{}\n", Located { file: Path::new(&finding.file), source, diagnostic: &finding.diagnostic });
    }
    let count = |severity| validate::count(findings, severity);
    outln!(
        "{}, {}, {} info in {}",
        plural(count(Severity::Error), "error"),
        plural(count(Severity::Warning), "warning"),
        count(Severity::Info),
        plural(files.len(), "file")
    );
    outln!("{}", coverage(validation, verbose));
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// What was checked and what was not, the end of every run: one line, or with `verbose` the
/// rules not checked, grouped by what would let them.
fn coverage(validation: &Validation, verbose: bool) -> String {
    let mut out = format!("checked with {} of {} rules", validation.rules_checked, validation.rules);
    if validation.skipped.is_empty() {
        return out;
    }
    if !verbose {
        return out + &format!(" ({} not checked for want of other files or settings: --verbose lists them)", validation.skipped.len());
    }
    let mut groups: Vec<((&str, &str), Vec<&str>)> = Vec::new();
    for skipped in &validation.skipped {
        let key = (skipped.missing.as_str(), skipped.enable.as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, codes)) => codes.push(skipped.code),
            None => groups.push((key, vec![skipped.code])),
        }
    }
    out.push_str("; not checked:");
    for ((missing, enable), codes) in groups {
        out.push_str(&format!("\n  {}: {missing} ({enable})", codes.join(", ")));
    }
    out
}
