//! `validate(files)`: every artifact parsed into a positioned view, every rule run on the
//! views, one list of findings. Pure: the caller reads the files.
//!
//! ```
//! use gke_rl::{RenderOptions, Severity, config};
//! use gke_rl_validate::{SourceFile, validate};
//!
//! let deployment = config::from_yaml("topology:\n  node_count: 4\n").expect("a valid config");
//! let options = RenderOptions { source: "my-config.yaml", regenerate: "my-tool render" };
//! let artifacts = gke_rl::render(&deployment, &options).expect("a known image");
//! let cluster = artifacts.ray_cluster.as_ref().expect("cluster mode");
//!
//! // The render checks clean...
//! let files: Vec<SourceFile> = artifacts.iter().map(SourceFile::from).collect();
//! assert!(validate(&files).iter().all(|f| f.diagnostic.severity < Severity::Warning));
//!
//! // ...and a hand-edited RayCluster that disagrees with env.sh does not.
//! let edited = cluster.contents.replace("replicas: 4", "replicas: 8");
//! let files = [SourceFile::from(&artifacts.env_sh), SourceFile { name: "ray-cluster.yaml", text: &edited }];
//! let findings = validate(&files);
//! let finding = findings.iter().find(|f| f.diagnostic.severity == Severity::Error).expect("a mismatch");
//! println!("{}:{}: {}", finding.file, finding.diagnostic, finding.diagnostic.help);
//! ```

pub mod crd;
mod facts;
pub mod job_script;
mod rules;
mod sarif;

use std::collections::BTreeMap;

use serde::Serialize;

pub use crd::{CrdSchema, json_schema};
pub use rules::{RULES, Rule};
pub use sarif::sarif;

use gke_rl::ArtifactKind;
use gke_rl::diagnostic::{Diagnostic, Severity};
use gke_rl::envsh;
use gke_rl::yaml::Node;

/// Why a CRD given to the validator cannot take the place of the built-in schema.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrdError {
    /// A CRD (or JSON Schema) that cannot check a RayCluster.
    #[error("the CRD {problem}")]
    Unusable {
        /// What is wrong with it.
        problem: String,
    },
    /// A CRD that is neither JSON nor YAML.
    #[error("the CRD is neither JSON nor YAML")]
    Syntax(#[source] gke_rl::yaml::Error),
    /// A second CRD of one kind, given to [`Checked::crd`].
    #[error("a {kind} CRD is already given: one per kind takes the place of the built-in schema")]
    KindGiven {
        /// `RayCluster` or `RayJob`.
        kind: &'static str,
    },
}

/// Files larger than this are refused rather than parsed.
pub const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;

/// A file to validate: its name (for messages and kind detection) and its text.
#[derive(Clone, Copy, Debug)]
pub struct SourceFile<'a> {
    /// Path or name, as it should appear in findings.
    pub name: &'a str,
    /// Contents.
    pub text: &'a str,
}

impl<'a> From<&'a gke_rl::Artifact> for SourceFile<'a> {
    fn from(artifact: &'a gke_rl::Artifact) -> Self {
        SourceFile { name: artifact.name, text: &artifact.contents }
    }
}

/// A diagnostic about one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The file, as named in [`SourceFile::name`].
    pub file: String,
    /// What is wrong where, and the fix.
    #[serde(flatten)]
    pub diagnostic: Diagnostic,
}

/// A YAML (or JSON) file with its positioned tree.
pub(crate) struct Tree<'a> {
    pub file: &'a str,
    pub text: &'a str,
    pub root: Node,
}

impl<'a> Tree<'a> {
    /// A RayJob's cluster as a RayCluster: its own fields, with `spec` its `rayClusterSpec`
    /// (KubeRay makes the cluster from these, and copies the RayJob's metadata to it). Every node
    /// keeps its place in the RayJob's file, so a finding points there.
    fn ray_job_cluster(&self) -> Option<Tree<'a>> {
        let spec = self.root.get(&["spec", "rayClusterSpec"])?;
        let fields = self.root.entries().iter().map(|(key, node)| (key.clone(), if key == "spec" { spec.clone() } else { node.clone() }));
        let root = Node { value: gke_rl::yaml::Value::Map(fields.collect()), ..self.root.clone() };
        Some(Tree { file: self.file, text: self.text, root })
    }
}

/// An env.sh with every assignment and the value it evaluates to (`None`: read from the
/// environment at run time).
pub(crate) struct EnvShView<'a> {
    pub file: &'a str,
    pub assignments: Vec<(envsh::Assignment, Option<String>)>,
}

impl EnvShView<'_> {
    pub fn get(&self, name: &str) -> Option<&(envsh::Assignment, Option<String>)> {
        self.assignments.iter().rev().find(|(a, _)| a.name == name)
    }
}

pub(crate) struct RayIgnoreView<'a> {
    pub file: &'a str,
    pub text: &'a str,
    pub rules: gke_rl_gitwildmatch::PatternSet,
}

impl RayIgnoreView<'_> {
    /// Whether Ray's packager leaves out `path` (relative to the working dir); for a
    /// directory, whether it leaves out what is inside (`data/` keeps the empty `data`).
    pub fn excludes(&self, path: &str, is_dir: bool) -> bool {
        if is_dir { self.rules.excludes(&format!("{path}/file")) } else { self.rules.excludes(path) }
    }
}

pub(crate) struct JobView<'a> {
    pub file: &'a str,
    pub text: &'a str,
    pub script: job_script::JobScript,
}

/// Every parsed file, by kind.
#[derive(Default)]
pub(crate) struct Views<'a> {
    pub env_sh: Vec<EnvShView<'a>>,
    /// The RayClusters, and each RayJob's cluster ([`Tree::ray_job_cluster`]).
    pub ray_clusters: Vec<Tree<'a>>,
    pub ray_jobs: Vec<Tree<'a>>,
    pub runtime_envs: Vec<Tree<'a>>,
    pub ray_ignores: Vec<RayIgnoreView<'a>>,
    pub jobs: Vec<JobView<'a>>,
    pub deployment_files: Vec<Tree<'a>>,
    pub blueprints: Vec<Tree<'a>>,
    pub kueue_configurations: Vec<KueueView<'a>>,
}

/// A Kueue configuration and the queues it creates.
#[derive(Debug)]
pub(crate) struct KueueView<'a> {
    pub file: &'a str,
    pub queues: Vec<gke_rl::knowledge::kueue::Queue>,
}

/// A rule that could not run for lack of a fact, and what would provide it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The rule's code.
    pub code: &'static str,
    /// What is missing, e.g. "no Lustre throughput tier".
    pub missing: String,
    /// The file or setting that would provide it, e.g. "add LUSTRE_THROUGHPUT to env.sh".
    pub enable: String,
}

/// What a validation found, and what it could not check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Validation {
    /// The findings, by file, line and column.
    pub findings: Vec<Finding>,
    /// The rules that did not run, each with what would let it.
    pub skipped: Vec<Skipped>,
    /// How many rules ran.
    pub rules_checked: usize,
    /// How many rules there are.
    pub rules: usize,
    /// Rules no check accounted for although a file they read was given: a gap in gke-rl,
    /// which its tests keep empty.
    #[serde(skip)]
    pub unaccounted: Vec<&'static str>,
}

/// Collects findings, and which rules ran or could not; severities come from the registry.
pub(crate) struct Sink {
    findings: Vec<Finding>,
    /// Rule code → `None` when it ran, else why not and what would let it.
    coverage: BTreeMap<&'static str, Option<(String, String)>>,
}

impl Sink {
    fn new() -> Self {
        Sink { findings: Vec::new(), coverage: BTreeMap::new() }
    }

    /// Records that `rule` ran (whether or not it found anything).
    pub fn ran(&mut self, rule: &Rule) {
        self.coverage.insert(rule.code, None);
    }

    /// Records that `rule` could not run: `missing` says what it lacks, `enable` where that
    /// comes from. A rule that ran on another file counts as run.
    pub fn skip(&mut self, rule: &Rule, missing: impl Into<String>, enable: impl Into<String>) {
        self.coverage.entry(rule.code).or_insert_with(|| Some((missing.into(), enable.into())));
    }

    fn absorb(&mut self, other: Sink) {
        self.findings.extend(other.findings);
        for (code, state) in other.coverage {
            match (self.coverage.get(code), &state) {
                (Some(None), _) | (Some(Some(_)), Some(_)) => {}
                _ => {
                    self.coverage.insert(code, state);
                }
            }
        }
    }

    /// Records a finding of `rule`; the caller may add its fix.
    pub fn emit(
        &mut self,
        rule: &Rule,
        file: &str,
        at: (u32, u32),
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> &mut Diagnostic {
        self.ran(rule);
        let diagnostic = Diagnostic {
            code: rule.code,
            severity: rule.severity,
            line: at.0.max(1),
            column: at.1.max(1),
            message: message.into(),
            help: help.into(),
            fix: None,
        };
        self.findings.push(Finding { file: file.to_owned(), diagnostic });
        &mut self.findings.last_mut().expect("just pushed").diagnostic
    }
}

/// Validates `files` together: each file's own rules, then the rules across files.
/// Files whose kind cannot be told are skipped; use [`detect`] to report them.
pub fn validate(files: &[SourceFile<'_>]) -> Vec<Finding> {
    check(files).findings()
}

/// [`validate`], with `crd` in place of the built-in schema of its kind.
pub fn validate_with_crd(files: &[SourceFile<'_>], crd: &CrdSchema) -> Vec<Finding> {
    check(files).with_crd(crd).findings()
}

/// Files parsed and checked by every rule, before their findings are taken: a caller can
/// compile a CRD schema meanwhile and add its checks without parsing the files again.
pub struct Checked<'a> {
    views: Views<'a>,
    sink: Sink,
    /// The kinds a given CRD schema has checked, which the built-in ones leave alone.
    crds_given: Vec<crd::Kind>,
}

/// Parses `files` and runs every rule on them.
pub fn check<'a>(files: &[SourceFile<'a>]) -> Checked<'a> {
    let mut sink = Sink::new();
    let views = parse_all(files, &mut sink);
    rules::run(&views, &mut sink);
    Checked { views, sink, crds_given: Vec::new() }
}

impl Checked<'_> {
    /// Checks each object of `crd`'s kind against it, in place of KubeRay v1.7.0's built-in
    /// schema. One schema may be given per kind: a second one is refused
    /// ([`CrdError::KindGiven`]).
    pub fn crd(self, crd: &CrdSchema) -> Result<Self, CrdError> {
        if self.crds_given.contains(&crd.kind()) {
            return Err(CrdError::KindGiven { kind: crd.kind().name() });
        }
        Ok(self.with_crd(crd))
    }

    fn with_crd(mut self, crd: &CrdSchema) -> Self {
        self.check_crd(crd);
        self.crds_given.push(crd.kind());
        self
    }

    fn check_crd(&mut self, crd: &CrdSchema) {
        let trees: Vec<&Tree<'_>> = match crd.kind() {
            crd::Kind::RayJob => self.views.ray_jobs.iter().collect(),
            // A RayJob's cluster is also a RayCluster view: the RayJob's own schema checks it there.
            crd::Kind::RayCluster => {
                self.views.ray_clusters.iter().filter(|t| t.root.get(&["kind"]).and_then(Node::text) != Some("RayJob")).collect()
            }
        };
        if !trees.is_empty() {
            self.sink.ran(&rules::CRD_SCHEMA);
        }
        crd.check(&trees, &mut self.sink);
    }

    /// Adds a file that could not be read as text (see [`gke_rl::diagnostic::utf8`]): its
    /// error is a finding like any other, and the other files are still checked.
    pub fn unreadable(mut self, file: &str, diagnostic: Diagnostic) -> Self {
        self.sink.ran(&rules::SYNTAX);
        self.sink.findings.push(Finding { file: file.to_owned(), diagnostic });
        self
    }

    /// The findings, by file, line and column.
    pub fn findings(self) -> Vec<Finding> {
        self.finish().findings
    }

    /// The findings, and the rules that could not run with what would let them. A rule no check
    /// accounted for is reported by what it reads ([`Rule::reads`]).
    pub fn finish(mut self) -> Validation {
        for kind in [crd::Kind::RayCluster, crd::Kind::RayJob] {
            if !self.crds_given.contains(&kind) {
                self.check_crd(&CrdSchema::kuberay(kind));
            }
        }
        let Checked { views, mut sink, .. } = self;
        let mut findings = std::mem::take(&mut sink.findings);
        findings.sort_by(|a, b| (&a.file, a.diagnostic.line, a.diagnostic.column).cmp(&(&b.file, b.diagnostic.line, b.diagnostic.column)));
        findings.dedup();
        let (mut skipped, mut unaccounted) = (Vec::new(), Vec::new());
        let mut rules_checked = 0;
        for rule in RULES {
            match sink.coverage.get(rule.code) {
                Some(None) => rules_checked += 1,
                Some(Some((missing, enable))) => {
                    skipped.push(Skipped { code: rule.code, missing: missing.clone(), enable: enable.clone() })
                }
                None => {
                    let (missing, enable, gap) = rules::unaccounted(rule, &views);
                    if gap {
                        unaccounted.push(rule.code);
                    }
                    skipped.push(Skipped { code: rule.code, missing, enable });
                }
            }
        }
        Validation { findings, skipped, rules_checked, rules: RULES.len(), unaccounted }
    }
}

/// One file, parsed into its view.
enum View<'a> {
    EnvSh(EnvShView<'a>),
    RayIgnore(RayIgnoreView<'a>),
    Job(JobView<'a>),
    RuntimeEnv(Tree<'a>),
    RayCluster(Tree<'a>),
    RayJob(Tree<'a>),
    DeploymentFile(Tree<'a>),
    Blueprint(Tree<'a>),
    Kueue(KueueView<'a>),
}

/// Parses every file into its view. Files are independent, so on a platform with threads
/// they are parsed in parallel; views and findings keep the input order either way.
fn parse_all<'a>(files: &[SourceFile<'a>], sink: &mut Sink) -> Views<'a> {
    // The browser has no threads: without this branch, the wasm build would carry the thread
    // machinery it can never use.
    let cores = if cfg!(target_family = "wasm") { 1 } else { std::thread::available_parallelism().map_or(1, usize::from) };
    let threads = cores.min(files.len().div_ceil(8)).max(1);
    let parsed: Vec<(Option<View<'a>>, Sink)> = if threads == 1 {
        files.iter().map(parse_file).collect()
    } else {
        let chunk = files.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let workers: Vec<_> =
                files.chunks(chunk).map(|part| scope.spawn(move || part.iter().map(parse_file).collect::<Vec<_>>())).collect();
            workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        })
    };
    let mut views = Views::default();
    for (view, findings) in parsed {
        sink.absorb(findings);
        match view {
            Some(View::EnvSh(v)) => views.env_sh.push(v),
            Some(View::RayIgnore(v)) => views.ray_ignores.push(v),
            Some(View::Job(v)) => views.jobs.push(v),
            Some(View::RuntimeEnv(v)) => views.runtime_envs.push(v),
            Some(View::RayCluster(v)) => views.ray_clusters.push(v),
            Some(View::RayJob(v)) => {
                views.ray_clusters.extend(v.ray_job_cluster());
                views.ray_jobs.push(v);
            }
            Some(View::DeploymentFile(v)) => views.deployment_files.push(v),
            Some(View::Blueprint(v)) => views.blueprints.push(v),
            Some(View::Kueue(v)) => views.kueue_configurations.push(v),
            None => {}
        }
    }
    views
}

fn parse_file<'a>(file: &SourceFile<'a>) -> (Option<View<'a>>, Sink) {
    let mut sink = Sink::new();
    if file.text.len() > MAX_FILE_BYTES {
        let message = format!("{} is larger than 10 MiB and was not read", file.name);
        sink.emit(&rules::FILE_TOO_LARGE, file.name, (1, 1), message, "check that this is the file you meant");
        return (None, sink);
    }
    sink.ran(&rules::FILE_TOO_LARGE);
    let Some(kind) = ArtifactKind::detect(file.name, file.text) else { return (None, sink) };
    sink.ran(&rules::SYNTAX);
    let view = match kind {
        ArtifactKind::EnvSh => match envsh::parse(file.text).and_then(envsh::evaluate_all) {
            Ok(assignments) => Some(View::EnvSh(EnvShView { file: file.name, assignments })),
            Err(d) => {
                sink.findings.push(Finding { file: file.name.to_owned(), diagnostic: d });
                None
            }
        },
        // Ray reads it as Python's text files are read, where a lone `\r` ends a line too.
        ArtifactKind::RayIgnore if let Some((at, said)) = gke_rl::yaml::ambiguous_line_end(file.text) => {
            sink.emit(&rules::SYNTAX, file.name, at, said, "fix the line ends");
            None
        }
        ArtifactKind::RayIgnore => match gke_rl_gitwildmatch::PatternSet::parse(file.text) {
            Ok(rules) => Some(View::RayIgnore(RayIgnoreView { file: file.name, text: file.text, rules })),
            Err(e) => {
                let at = (u32::try_from(e.line).unwrap_or(u32::MAX), 1);
                let message = format!("invalid pattern `{}`: {}; Ray's packager would fail on it", e.pattern, e.reason);
                sink.emit(&rules::SYNTAX, file.name, at, message, "fix the pattern (gitignore syntax)");
                None
            }
        },
        ArtifactKind::JobScript => {
            if let Some(d) = job_script::syntax_error(file.text) {
                sink.emit(&rules::SYNTAX, file.name, (d.line, d.column), d.message, d.help);
            }
            Some(View::Job(JobView { file: file.name, text: file.text, script: job_script::parse(file.text) }))
        }
        ArtifactKind::RuntimeEnv => match serde_json::from_str::<serde::de::IgnoredAny>(file.text) {
            Err(e) => {
                let at = (u32::try_from(e.line()).unwrap_or(1), u32::try_from(e.column()).unwrap_or(1));
                sink.emit(&rules::SYNTAX, file.name, at, format!("invalid JSON: {e}"), "fix the JSON syntax");
                None
            }
            Ok(_) => tree(file, &mut sink).map(View::RuntimeEnv),
        },
        ArtifactKind::RayCluster => tree(file, &mut sink).map(View::RayCluster),
        ArtifactKind::DeploymentFile => tree(file, &mut sink).map(View::DeploymentFile),
        ArtifactKind::Blueprint => tree(file, &mut sink).map(View::Blueprint),
        ArtifactKind::RayJob => tree(file, &mut sink).map(View::RayJob),
        // A template: `${…}` stays a plain scalar until the blueprint's module fills it in.
        ArtifactKind::KueueConfiguration => match gke_rl::knowledge::kueue::queues(file.text) {
            Ok(queues) => Some(View::Kueue(KueueView { file: file.name, queues })),
            Err(e) => {
                sink.emit(&rules::SYNTAX, file.name, e.at(), format!("invalid YAML: {}", e.message()), "fix the YAML");
                None
            }
        },
        ArtifactKind::SecretInstructions | ArtifactKind::NetworkPolicy | ArtifactKind::BlueprintPatch => None,
    };
    (view, sink)
}

/// `text` with each `{{…}}` outside comments replaced by as many `_`, so template debris
/// parses as a plain scalar at the same columns; and where each was.
fn mask_placeholders(text: &str) -> (std::borrow::Cow<'_, str>, Vec<(u32, u32)>) {
    if !text.contains("{{") {
        return (std::borrow::Cow::Borrowed(text), Vec::new());
    }
    let mut masked = String::with_capacity(text.len());
    let mut found = Vec::new();
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("{{").filter(|&i| !rest[..i].contains('#')) {
            let Some(len) = rest[start..].find("}}").map(|end| end + 2) else { break };
            let column = line.len() - rest.len() + start;
            found.push((u32::try_from(index + 1).unwrap_or(u32::MAX), u32::try_from(line[..column].chars().count() + 1).unwrap_or(1)));
            masked.push_str(&rest[..start]);
            masked.extend(std::iter::repeat_n('_', rest[start..start + len].chars().count()));
            rest = &rest[start + len..];
        }
        masked.push_str(rest);
    }
    (std::borrow::Cow::Owned(masked), found)
}

fn tree<'a>(file: &SourceFile<'a>, sink: &mut Sink) -> Option<Tree<'a>> {
    let (text, placeholders) = mask_placeholders(file.text);
    for at in placeholders {
        sink.emit(&rules::PLACEHOLDER, file.name, at, "a template placeholder was left in", "replace the placeholder with the real value");
    }
    match Node::try_parse(&text) {
        Ok(root) => Some(Tree { file: file.name, text: file.text, root }),
        Err(e) => {
            // JSON files are read as YAML (a superset) for positions; their errors are JSON's.
            let language = if file.name.ends_with(".json") { "JSON" } else { "YAML" };
            sink.emit(&rules::SYNTAX, file.name, e.at(), format!("invalid {language}: {}", e.message()), format!("fix the {language}"));
            None
        }
    }
}

/// Counts of findings by severity.
pub fn count(findings: &[Finding], severity: Severity) -> usize {
    findings.iter().filter(|f| f.diagnostic.severity == severity).count()
}
