//! `gke-rl render`: write every artifact of the current model into a directory.

use std::fs;
use std::path::Path;

use anyhow::{Context, bail};
use gke_rl::render::is_generated;
use gke_rl::{Artifact, Severity};
use gke_rl_validate::{self as validate, SourceFile};

use crate::config;
use crate::diagnostics::Located;

/// Render every artifact (env.sh, gcluster deployment file, RayCluster, Secret command,
/// .rayignore, runtime env, job script) from the current config.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: config::Source,
    #[command(flatten)]
    output: config::Output,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
}

impl Args {
    /// Exit 1, writing nothing, when the render fails validation (unless `--force`).
    pub fn run(self) -> anyhow::Result<u8> {
        let loaded = self.source.load()?.fitted_to_cluster()?;
        let rendered = loaded.artifacts()?;
        let artifacts: Vec<&Artifact> = rendered.iter().collect();
        let sources: Vec<SourceFile<'_>> = artifacts.iter().map(|a| SourceFile::from(*a)).collect();
        // Errors stop the render; warnings (an assumed NeMo-RL layout, an open Ray) are shown
        // with the files written.
        let shown: Vec<_> = validate::validate(&sources).into_iter().filter(|f| f.diagnostic.severity >= Severity::Warning).collect();
        for finding in &shown {
            let text = artifacts.iter().find(|a| a.name == finding.file).map_or("", |a| a.contents.as_str());
            crate::terminal::errln!("{}\n", at_config(&loaded, finding, text));
        }
        let errors: Vec<_> = shown.iter().filter(|f| f.diagnostic.severity == Severity::Error).collect();
        if !errors.is_empty() {
            let fix = if self.output.force {
                "writing anyway (--force)"
            } else {
                "nothing was written; fix the config, or pass --force to write anyway"
            };
            crate::terminal::errln!("the render has {} error{}: {fix}", errors.len(), if errors.len() == 1 { "" } else { "s" });
            if !self.output.force {
                return Ok(1);
            }
        }
        let out = &self.output.out;
        let outcomes = write_all(out, &artifacts, self.output.force, |_, existing| is_generated(existing))?;
        summarize(out, &artifacts, &outcomes);
        remove_stale(out, rendered.not_rendered())?;
        crate::terminal::errln!("{}", crate::terminal::shown(&next_steps(out, &loaded.deployment, &self.source.flags())));
        Ok(0)
    }
}

/// A finding on the render, said at the config's line of the key that decides it, with a note
/// naming the key and the rendered place; where no one key decides it, or there is no YAML
/// config, at the rendered place, naming the key where one does.
fn at_config(loaded: &config::Loaded, finding: &validate::Finding, rendered: &str) -> String {
    let d = &finding.diagnostic;
    let rendered_at = format!("{}:{}:{}", finding.file, d.line, d.column);
    let source = gke_rl::render::config_key(&loaded.deployment, &finding.file, rendered, d.line, d.column);
    let names_the_key = source.as_ref().is_some_and(|s| s.names_the_key);
    let key = source.map(|s| s.key);
    let root = loaded.config.as_ref().and_then(|(_, text)| gke_rl::yaml::Node::parse(text));
    let place = key.as_deref().zip(root.as_ref()).and_then(|(key, root)| gke_rl::render::config_place(root, key));
    let with_note = |report: Located<'_>, note: String| {
        let gutter = " ".repeat(report.diagnostic.line.to_string().len());
        format!("{report}\n{gutter} = note: {note}")
    };
    match (key, place, &loaded.config) {
        (Some(key), Some((node, set)), Some((path, text))) => {
            let (line, column) = if set && !names_the_key { node.at() } else { node.key_at.unwrap_or(node.at()) };
            let moved = gke_rl::Diagnostic { line, column, fix: None, ..d.clone() };
            let note = if set {
                format!("`{key}` decides it; rendered at {rendered_at}")
            } else {
                format!("`{key}` decides it, and is not set here (its default is used); rendered at {rendered_at}")
            };
            with_note(Located { file: path, source: text, diagnostic: &moved }, note)
        }
        (Some(key), ..) => with_note(
            Located { file: Path::new(&finding.file), source: rendered, diagnostic: d },
            format!("change `{key}` in the config; this file is rendered from it"),
        ),
        (None, ..) => Located { file: Path::new(&finding.file), source: rendered, diagnostic: d }.to_string(),
    }
}

/// Removes what an earlier render wrote and this one does not (a `ray-cluster.yaml` after a
/// switch to `rayjob` mode), so that `kubectl apply -f` on the folder applies only the current
/// render. Only gke-rl's own regular files go; a link or another file is left alone.
fn remove_stale(out: &Path, names: impl Iterator<Item = &'static str>) -> anyhow::Result<()> {
    for name in names {
        let path = out.join(name);
        let regular = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
        if regular && gke_rl_ops::files::read_bytes(&path).is_ok_and(|existing| is_generated(&String::from_utf8_lossy(&existing))) {
            fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
            let shown = crate::terminal::shown(&path.display().to_string());
            crate::terminal::errln!("{:>9}  {shown}  (this render has none; what was applied from it stays in the cluster)", "removed");
        }
    }
    Ok(())
}

/// One line per file on stderr: what happened to it.
pub fn summarize(out: &Path, artifacts: &[&Artifact], outcomes: &[Outcome]) {
    for (artifact, outcome) in artifacts.iter().zip(outcomes) {
        let verb = match outcome {
            Outcome::Created => "created",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
        };
        let path = crate::terminal::shown(&out.join(artifact.name).display().to_string());
        crate::terminal::errln!("{verb:>9}  {path:<32} {:>3} lines", artifact.contents.lines().count());
    }
}

/// Writes each artifact atomically (temp file, then rename), after checking that none would
/// overwrite a file gke-rl did not make (`ours(name, existing contents)`); on refusal nothing
/// is written.
pub fn write_all(out: &Path, artifacts: &[&Artifact], force: bool, ours: impl Fn(&str, &str) -> bool) -> anyhow::Result<Vec<Outcome>> {
    let mut outcomes = Vec::with_capacity(artifacts.len());
    // What each file held when it was judged: it is renamed over only while it still does.
    let mut judged = Vec::with_capacity(artifacts.len());
    let mut foreign = Vec::new();
    for artifact in artifacts {
        let path = out.join(artifact.name);
        // A symlink is never ours, whatever it points to: it is replaced (with --force), never
        // written through.
        let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        let mut held = None;
        let outcome = match gke_rl_ops::files::read_bytes(&path) {
            Ok(existing) if existing == artifact.contents.as_bytes() && !is_link => Outcome::Unchanged,
            Ok(existing) => {
                if !force && (is_link || !ours(artifact.name, &String::from_utf8_lossy(&existing))) {
                    foreign.push(path.display().to_string());
                }
                held = (!is_link).then_some(existing);
                Outcome::Updated
            }
            Err(gke_rl_ops::CommonError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound && !is_link => {
                Outcome::Created
            }
            Err(_) if is_link => {
                if !force {
                    foreign.push(path.display().to_string());
                }
                Outcome::Updated
            }
            Err(e) => return Err(e.into()),
        };
        outcomes.push(outcome);
        judged.push(held);
    }
    if !foreign.is_empty() {
        bail!(
            "refusing to overwrite files that gke-rl did not generate: {}\nhelp: move them away, choose another --out, or pass --force",
            foreign.join(", ")
        );
    }
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    gke_rl_ops::files::sweep_temporaries(out);
    gke_rl_ops::files::remove_temporaries_on_signals().context("cannot listen for signals")?;
    for ((artifact, outcome), held) in artifacts.iter().zip(&outcomes).zip(&judged) {
        let (path, contents, mode) = (out.join(artifact.name), artifact.contents.as_bytes(), gke_rl_ops::files::mode(artifact.executable));
        match (outcome, held) {
            (Outcome::Unchanged, _) => {}
            (Outcome::Created, _) => gke_rl_ops::files::create_atomically(&path, contents, mode)?,
            (Outcome::Updated, Some(held)) => gke_rl_ops::files::replace_unchanged(&path, held, contents, mode)?,
            // A link, replaced (never written through) with --force.
            (Outcome::Updated, None) => gke_rl_ops::files::write_atomically(&path, contents, artifact.executable)?,
        }
    }
    Ok(outcomes)
}

/// What to run next, as words to paste: `deploy`, which does all of it resumably, or the manual
/// path, which patches the upstream blueprint first (Lustre is commented out there).
fn next_steps(out: &Path, d: &gke_rl::Deployment, source: &[String]) -> String {
    use gke_rl::ArtifactKind::{Blueprint, DeploymentFile, EnvSh, NetworkPolicy, RayCluster, SecretInstructions};
    // Each gke-rl command is given the same model source; every word is shell-quoted.
    let command = |words: &[&str]| {
        let mut words = crate::name().split_whitespace().chain(words.iter().copied()).map(str::to_owned);
        let program = words.next().unwrap_or_default();
        gke_rl::lifecycle::Command { program, args: words.chain(source.iter().cloned()).collect(), dir: None }.to_string()
    };
    let at = |file: &str| gke_rl::quote::sh(&out.join(file).display().to_string());
    let mut unknown = Vec::new();
    if d.project.project_id.is_none() {
        unknown.push("PROJECT_ID");
    }
    if d.network.authorized_cidr.is_none() {
        unknown.push("AUTHORIZED_CIDR");
    }
    // The token the job needs, by the config's name for it (W&B's is optional).
    let export = unknown.into_iter().chain([d.secrets.hf_token_env.as_str()]).map(|name| format!("{name}=…")).collect::<Vec<_>>().join(" ");
    let (secrets, policy) = match d.ray.token_auth() {
        Ok(true) => ("the Secrets with the commands", String::new()),
        _ => ("the Secret with the command", format!("kubectl apply -f {}; ", at(NetworkPolicy.file()))),
    };
    if d.project.existing_cluster {
        let p = &d.project;
        let rayjob = d.job.mode == gke_rl::model::JobMode::Rayjob;
        // RayJob mode makes no RayCluster: each run's RayJob brings one, which submit applies.
        let (fits, applies, then) = if rayjob {
            (
                "fits the RayJob's cluster to it",
                String::new(),
                format!(
                    "\n    applies {}, waits for its cluster, submits the job to it and follows the run",
                    at(gke_rl::ArtifactKind::RayJob.file())
                ),
            )
        } else {
            ("fits the RayCluster to it", format!(", then {policy}kubectl apply -f {}", at(RayCluster.file())), String::new())
        };
        return format!(
            "next steps:\n  {deploy}\n    reads cluster {cluster}, {fits}, {lustre} Lustre instance {instance} and binds it (--dry-run shows every command)\n\
             or by hand, on cluster {cluster}: a PersistentVolume and claim {claim} for the instance (docs/deploy.md), {secrets} in {secret}{applies}\n\
             then: {submit}{then}",
            deploy = command(&["deploy"]),
            cluster = p.cluster_name,
            instance = d.lustre.instance_id,
            lustre = if d.lustre.existing { "attaches" } else { "creates" },
            claim = d.lustre.pvc_name,
            secret = at(SecretInstructions.file()),
            submit = command(&["submit"]),
        );
    }
    let out_dir = out.display().to_string();
    let blueprint = command(&["blueprint", "--toolkit", "cluster-toolkit", "--out", &out_dir]);
    let by_hand = format!(
        "  export {export}; source {env_sh}\n  {blueprint}\n  \
         gcluster deploy {patched} -d {deployment_file} --vars project_id=$PROJECT_ID,authorized_cidr=$AUTHORIZED_CIDR --auto-approve\n  \
         create {secrets} in {secret}, then {policy}",
        env_sh = at(EnvSh.file()),
        patched = at(Blueprint.file()),
        deployment_file = at(DeploymentFile.file()),
        secret = at(SecretInstructions.file()),
    );
    if d.job.mode == gke_rl::model::JobMode::Rayjob {
        return format!(
            "next steps:\n  {deploy}\n    creates the cluster and Lustre, and no RayCluster: each run is a RayJob with a cluster of its own\n\
             or by hand:\n{by_hand}\n\
             then: {submit}\n    applies {ray_job}, waits for its cluster, submits the job to it and follows the run",
            deploy = command(&["deploy"]),
            by_hand = by_hand.trim_end_matches(", then "),
            submit = command(&["submit"]),
            ray_job = at(gke_rl::ArtifactKind::RayJob.file()),
        );
    }
    format!(
        "next steps:\n  {deploy}\n    creates the cluster, Lustre and the RayCluster, resumably (--dry-run shows every command)\n\
         or by hand:\n{by_hand}kubectl apply -f {cluster}\n\
         then: {submit}",
        deploy = command(&["deploy"]),
        cluster = at(RayCluster.file()),
        submit = command(&["submit"]),
    )
}
