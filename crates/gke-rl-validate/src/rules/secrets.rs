//! Tokens written into files, files with tokens uploaded with the working dir, and the
//! runtime env's shape.

use super::*;
use crate::{EnvShView, RayIgnoreView};
use gke_rl::yaml::{Node, Value};

use gke_rl::secrets::{is_secret_name, secret_value, tokens};

pub(super) fn check(views: &Views<'_>, sink: &mut Sink) {
    let trees = views.ray_clusters.iter().chain(&views.runtime_envs).chain(&views.deployment_files).chain(&views.blueprints);
    if !views.env_sh.is_empty() || !views.jobs.is_empty() || trees.clone().next().is_some() {
        sink.ran(&SECRET_LITERAL);
    }
    if !views.runtime_envs.is_empty() {
        sink.ran(&RUNTIME_ENV_TYPES);
    }
    if !views.ray_ignores.is_empty() {
        sink.ran(&UPLOAD_INCLUDES_SECRETS);
    }
    // The config's own names for its tokens, as env.sh gives them.
    let configured: Vec<&str> = views
        .env_sh
        .iter()
        .flat_map(|env| ["HF_TOKEN_ENV", "WANDB_API_KEY_ENV"].map(|name| env.get(name).and_then(|(_, value)| value.as_deref())))
        .flatten()
        .filter(|name| !name.is_empty())
        .collect();
    for env in &views.env_sh {
        for (assignment, value) in &env.assignments {
            let Some(value) = value.as_deref() else { continue };
            if let Some(what) = secret_value(&assignment.name, value, &configured) {
                sink.emit(
                    &SECRET_LITERAL,
                    env.file,
                    assignment.value_at,
                    format!("{} holds {what} in a file", assignment.name),
                    format!("delete the value; export {} in your shell or from a secret manager, and give it to the pods through a Kubernetes Secret", assignment.name),
                );
            }
        }
    }
    for env in &views.runtime_envs {
        runtime_env(env, &configured, sink);
    }
    for tree in trees {
        literal_values(tree, &configured, sink);
    }
    ray_override(views, sink);
    for job in &views.jobs {
        for (index, line) in job.text.lines().enumerate() {
            for token in tokens(line) {
                let at = (
                    u32::try_from(index + 1).unwrap_or(u32::MAX),
                    u32::try_from(line[..token.range.start].chars().count() + 1).unwrap_or(1),
                );
                let end = (at.0, at.1.saturating_add(u32::try_from(line[token.range.clone()].chars().count()).unwrap_or(0)));
                sink.emit(
                    &SECRET_LITERAL,
                    job.file,
                    at,
                    format!("the job script holds {}", token.kind),
                    "delete it; the pods get their tokens from a Kubernetes Secret",
                )
                .fix = Some(Box::new(Fix {
                    title: "delete the token".to_owned(),
                    line: at.0,
                    column: at.1,
                    end_line: end.0,
                    end_column: end.1,
                    text: String::new(),
                }));
            }
        }
        for export in job.script.exports.iter().filter(|e| is_secret_name(&e.name) || configured.contains(&e.name.as_str())) {
            let literal = export.value.iter().any(|p| matches!(p, gke_rl::envsh::Part::Text(t) if !t.is_empty()));
            if literal {
                sink.emit(
                    &SECRET_LITERAL,
                    job.file,
                    export.value_at,
                    format!("the job script sets {} to a literal value", export.name),
                    "delete it; the pods get it from a Kubernetes Secret",
                );
            }
        }
    }
    for ignore in &views.ray_ignores {
        uploads(ignore, views, sink);
    }
}

/// Whether the secret in `value` is all of it, so deleting the value deletes no more than the
/// secret (a token inside a command line or URL is not).
fn whole_secret(value: &str) -> bool {
    tokens(value).first().is_none_or(|token| token.range.len() == value.trim().len())
}

/// Secrets anywhere in a YAML or JSON file: a Kubernetes env entry (`name:` and `value:`) or a
/// key whose value is a secret by its name, and any string holding a token by its shape.
fn literal_values(tree: &crate::Tree<'_>, configured: &[&str], sink: &mut Sink) {
    fn visit(node: &Node, key: &str, tree: &crate::Tree<'_>, configured: &[&str], sink: &mut Sink) {
        match &node.value {
            Value::Map(entries) => {
                let env_name = node.get(&["name"]).and_then(Node::text);
                for (child_key, child) in entries {
                    let name = if child_key == "value" { env_name.unwrap_or(child_key) } else { child_key };
                    visit(child, name, tree, configured, sink);
                }
            }
            Value::Seq(items) => items.iter().for_each(|item| visit(item, key, tree, configured, sink)),
            Value::String(text) => {
                if let Some(what) = secret_value(key, text, configured) {
                    let shown = if key.is_empty() { String::new() } else { format!("`{key}` ") };
                    sink.emit(
                        &SECRET_LITERAL,
                        tree.file,
                        node.at(),
                        format!("{shown}holds {what}: files get copied, committed and uploaded"),
                        "delete it; give it to the pods through a Kubernetes Secret (secretKeyRef), or to the tools from your environment",
                    )
                    .fix = whole_secret(text)
                        .then(|| Fix::replace_scalar(tree.text, node.at(), text, "\"\"".to_owned(), "delete the token".to_owned()))
                        .flatten()
                        .map(Box::new);
                }
            }
            _ => {}
        }
    }
    match &tree.root.value {
        // The runtime env's `env_vars` have their own message (see `runtime_env`).
        Value::Map(entries) => {
            for (key, child) in entries.iter().filter(|(key, _)| key != "env_vars") {
                visit(child, key, tree, configured, sink);
            }
        }
        _ => visit(&tree.root, "", tree, configured, sink),
    }
}

fn runtime_env(env: &crate::Tree<'_>, configured: &[&str], sink: &mut Sink) {
    let Some(vars) = env.root.get(&["env_vars"]) else { return };
    if !matches!(vars.value, Value::Map(_)) {
        sink.emit(&RUNTIME_ENV_TYPES, env.file, vars.at(), "`env_vars` is not an object", "write `\"env_vars\": {\"NAME\": \"value\"}`");
        return;
    }
    for (name, value) in vars.entries() {
        let Value::String(text) = &value.value else {
            let shown = value.text().map_or_else(|| "not a string".to_owned(), |t| format!("{t}, not a string"));
            sink.emit(
                &RUNTIME_ENV_TYPES,
                env.file,
                value.at(),
                format!("env_vars `{name}` is {shown}"),
                format!("quote it: `\"{name}\": \"{}\"`", value.text().unwrap_or("…")),
            );
            continue;
        };
        if let Some(what) = secret_value(name, text, configured) {
            sink.emit(
                &SECRET_LITERAL,
                env.file,
                value.at(),
                format!("env_vars `{name}` holds {what}: the Jobs API stores it and returns it to anyone who lists jobs"),
                format!("remove `{name}` here; the pods get it from a Kubernetes Secret (secretKeyRef)"),
            );
        }
    }
}

/// What the working_dir upload would carry, given `.rayignore`.
fn uploads(ignore: &RayIgnoreView<'_>, views: &Views<'_>, sink: &mut Sink) {
    let file_name = |path: &str| path.rsplit(['/', '\\']).next().unwrap_or(path).to_owned();
    let secret_in = |env: &EnvShView<'_>| {
        env.assignments
            .iter()
            .find(|(a, v)| v.as_deref().is_some_and(|v| secret_value(&a.name, v, &[]).is_some()))
            .map(|(a, _)| format!(" (it holds {} on line {})", a.name, a.value_at.0))
    };
    // Paths the upload must leave out, and why each matters: the files given, else the
    // names gke-rl and the codelab use.
    let mut exposed: std::collections::BTreeMap<String, (bool, String)> = std::collections::BTreeMap::new();
    exposed.insert(".git".to_owned(), (true, String::new()));
    for env in &views.env_sh {
        exposed.insert(file_name(env.file), (false, secret_in(env).unwrap_or_default()));
    }
    for env in &views.runtime_envs {
        exposed.insert(file_name(env.file), (false, String::new()));
    }
    if views.env_sh.is_empty() {
        exposed.insert(ArtifactKind::EnvSh.file().to_owned(), (false, String::new()));
    }
    if views.runtime_envs.is_empty() {
        exposed.insert(ArtifactKind::RuntimeEnv.file().to_owned(), (false, String::new()));
    }
    // At the end of .rayignore, where the missing line goes (its fix appends it there).
    let end = (u32::try_from(ignore.text.lines().count()).unwrap_or(u32::MAX).max(1), 1);
    for (path, (is_dir, why)) in exposed {
        if !ignore.excludes(&path, is_dir) {
            let shown = if is_dir { format!("{path}/") } else { path.clone() };
            sink.emit(
                &UPLOAD_INCLUDES_SECRETS,
                ignore.file,
                end,
                format!("the working_dir upload includes {shown}{why}: .rayignore does not exclude it"),
                format!("add a line `{shown}` to .rayignore"),
            )
            .fix = excluding_fix(ignore, &path, is_dir, &shown).map(Box::new);
        }
    }
}

/// The line `shown` added to `.rayignore`, where it then leaves `path` out: a name with the
/// patterns' special characters (`[`, `*`, `\\`, a leading `#` or `!`) would not.
fn excluding_fix(ignore: &RayIgnoreView<'_>, path: &str, is_dir: bool, shown: &str) -> Option<Fix> {
    let fix = Fix::append_line(ignore.text, shown, format!("add `{shown}` to .rayignore"));
    let fixed = fix.apply(ignore.text)?;
    let rules = gke_rl_gitwildmatch::PatternSet::parse(&fixed).ok()?;
    RayIgnoreView { file: ignore.file, text: &fixed, rules }.excludes(path, is_dir).then_some(fix)
}

fn ray_override(views: &Views<'_>, sink: &mut Sink) {
    let in_runtime_env =
        views.runtime_envs.iter().any(|e| e.root.get(&["env_vars", "RAY_OVERRIDE_JOB_RUNTIME_ENV"]).and_then(Node::text) == Some("1"));
    for job in &views.jobs {
        let Some(launch) = &job.script.launch else {
            sink.skip(
                &RAY_OVERRIDE_MISSING,
                "the job script has no NeMo-RL launch line",
                "launch examples/run_grpo_math.py in run_nemo_rl.sh",
            );
            continue;
        };
        sink.ran(&RAY_OVERRIDE_MISSING);
        let exported = job
            .script
            .exports
            .iter()
            .any(|e| e.name == "RAY_OVERRIDE_JOB_RUNTIME_ENV" && e.value == [gke_rl::envsh::Part::Text("1".into())]);
        if !exported && !in_runtime_env {
            sink.emit(
                &RAY_OVERRIDE_MISSING,
                job.file,
                launch.at,
                "NeMo-RL runs without RAY_OVERRIDE_JOB_RUNTIME_ENV=1, so ray.init fails with a runtime env conflict",
                "add `export RAY_OVERRIDE_JOB_RUNTIME_ENV=1` before the launch line",
            );
        }
    }
}
