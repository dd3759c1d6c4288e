//! Generated files that are committed: `manifests/` (the render of the embedded default),
//! `schemas/gke-rl.schema.json`, `examples/gke-rl.yaml`, and, from `tests/fixtures/upstream`, the
//! NeMo-RL release table, the model catalogue and the KubeRay CRDs' compiled schemas. In check mode a stale file is an error that says how to
//! refresh it; `#[test] fn codegen_is_fresh` runs check mode.

use std::fs;
use std::path::Path;

use anyhow::{Context, bail};
use gke_rl::Deployment;

use crate::project_root;

/// Where the committed render of the embedded default lives.
pub const MANIFESTS_DIR: &str = "manifests";
/// The config schema, relative to the project root.
pub const SCHEMA_PATH: &str = "schemas/gke-rl.schema.json";
/// The example config, relative to the project root.
pub const EXAMPLE_PATH: &str = "examples/gke-rl.yaml";
/// The rules reference, relative to the project root.
const RULES_DOC_PATH: &str = "docs/rules.md";
/// What gke-rl knows of models, GPU families and NeMo-RL releases, relative to the project root.
const MODELS_DOC_PATH: &str = "docs/models.md";
/// The upstream files the project reads, copied verbatim (each folder's `SOURCE.md` says from where).
pub const UPSTREAM: &str = "tests/fixtures/upstream";

pub fn run(check: bool) -> anyhow::Result<()> {
    let root = project_root();
    let mut stale = Vec::new();
    let mut ensure = |relative: &str, contents: &str| -> anyhow::Result<()> {
        // Every file it writes says so near its top (the rendered manifests by gke-rl's own
        // header, `render::GENERATED_MARKER`), but JSON, which has no comments: the schema is
        // the binary's `gke-rl schema`, byte for byte.
        let marked = contents.lines().take(4).any(|l| l.contains("@generated") || l.contains(gke_rl::render::GENERATED_MARKER));
        if !marked && !relative.ends_with(".json") {
            bail!("{relative} would not say it is @generated near its top");
        }
        let path = root.join(relative);
        if fs::read_to_string(&path).is_ok_and(|existing| existing == contents) {
            return Ok(());
        }
        if check {
            stale.push(relative.to_owned());
            return Ok(());
        }
        fs::create_dir_all(path.parent().expect("relative paths have a parent"))?;
        gke_rl_ops::files::write_atomically(&path, contents.as_bytes(), false)?;
        eprintln!("updated {relative}");
        Ok(())
    };

    let artifacts = gke_rl_cli::artifacts(&Deployment::default(), "the embedded default")?;
    for artifact in &artifacts {
        ensure(&format!("{MANIFESTS_DIR}/{}", artifact.name), &artifact.contents)?;
    }
    ensure(SCHEMA_PATH, &schema())?;
    ensure(EXAMPLE_PATH, &example_config()?)?;
    ensure(RULES_DOC_PATH, &rules_doc())?;
    ensure(MODELS_DOC_PATH, &models_doc())?;
    let releases = crate::nemo_rl::releases(&root.join(UPSTREAM).join("nemo-rl"))?;
    ensure(crate::nemo_rl::TABLE_PATH, &crate::nemo_rl::table(&releases, gke_rl::knowledge::NEMO_RL_IMAGE_REPOSITORY)?)?;
    // Upstream files by name, with their texts.
    let upstream = |files: &[&'static str]| {
        files
            .iter()
            .map(|file| {
                let path = root.join(UPSTREAM).join(file);
                fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display())).map(|text| (*file, text))
            })
            .collect::<anyhow::Result<Vec<_>>>()
    };
    ensure("crates/gke-rl/src/knowledge/models.rs", &crate::models::catalogue(&upstream(crate::models::FACT_FILES)?)?)?;
    ensure(crate::crd::TABLE_PATH, &crate::crd::table(&upstream(&crate::crd::CRD_FILES)?)?)?;
    for (path, contents) in completions_and_man_pages()? {
        ensure(&path, &contents)?;
    }

    let leftovers = leftover_manifests(&root.join(MANIFESTS_DIR), &artifacts)?;
    if check {
        stale.extend(leftovers.iter().map(|name| format!("{MANIFESTS_DIR}/{name} (no longer generated)")));
    } else {
        for name in leftovers {
            fs::remove_file(root.join(MANIFESTS_DIR).join(&name))?;
            eprintln!("removed {MANIFESTS_DIR}/{name}");
        }
    }
    if !stale.is_empty() {
        bail!("generated files are not up to date: {}\nhelp: run `cargo xtask codegen` and commit the result", stale.join(", "));
    }
    Ok(())
}

fn leftover_manifests(dir: &Path, artifacts: &gke_rl::Artifacts) -> anyhow::Result<Vec<String>> {
    let Ok(entries) = fs::read_dir(dir) else { return Ok(Vec::new()) };
    let mut leftovers = Vec::new();
    for entry in entries {
        let name = entry.context("cannot list manifests/")?.file_name().to_string_lossy().into_owned();
        if artifacts.get(&name).is_none() {
            leftovers.push(name);
        }
    }
    leftovers.sort();
    Ok(leftovers)
}

/// `gke-rl`'s shell completions (bash, zsh, fish) and man pages (one per command), from its
/// argument definitions.
fn completions_and_man_pages() -> anyhow::Result<Vec<(String, String)>> {
    use clap::CommandFactory as _;
    use clap_complete::Shell;
    let mut files = Vec::new();
    for (shell, file) in [(Shell::Bash, "gke-rl.bash"), (Shell::Zsh, "_gke-rl"), (Shell::Fish, "gke-rl.fish")] {
        let script = gke_rl_cli::completions(shell);
        // zsh finds a completion by its first line, `#compdef`: the mark goes after it.
        let (first, rest) = script.split_once('\n').filter(|(first, _)| first.starts_with("#compdef")).unwrap_or(("", &script));
        let first = if first.is_empty() { String::new() } else { format!("{first}\n") };
        let marked = format!("{first}# @generated by `cargo xtask codegen` from gke-rl's arguments.\n{rest}");
        files.push((format!("completions/{file}"), marked));
    }
    // The man pages carry the version, not the commit: they change with releases, not commits.
    let cli = gke_rl_cli::Cli::command().long_version(env!("CARGO_PKG_VERSION"));
    let mut pages = vec![("gke-rl".to_owned(), cli.clone())];
    for sub in cli.get_subcommands() {
        let name = format!("gke-rl-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().name(name).version(env!("CARGO_PKG_VERSION"))));
    }
    for (name, command) in pages {
        let mut page = Vec::new();
        clap_mangen::Man::new(command).render(&mut page)?;
        let page = String::from_utf8(page)?;
        files.push((format!("man/{name}.1"), format!(".\\\" @generated by `cargo xtask codegen` from gke-rl's arguments.\n{page}")));
    }
    Ok(files)
}

fn schema() -> String {
    let mut schema = schemars::schema_for!(Deployment);
    schema.insert("title".into(), "gke-rl config (gke-rl.yaml)".into());
    let mut text = serde_json::to_string_pretty(&schema).expect("schemas serialize");
    text.push('\n');
    text
}

/// The rules reference, from the registry.
fn rules_doc() -> String {
    let mut doc = String::from(
        "# Validation rules\n\n\
         @generated by `cargo xtask codegen` from `gke_rl_validate::RULES`. Each finding names the rule's code,\n\
         the file, line and column of the value to change, and the fix.\n\n\
         | code | severity | what it checks |\n| --- | --- | --- |\n",
    );
    for rule in gke_rl_validate::RULES {
        doc.push_str(&format!("| `{}` | {} | {} |\n", rule.code, rule.severity, rule.explanation().replace('|', "\\|")));
    }
    doc
}

/// The model catalogue, the GPU families and the NeMo-RL releases, for people.
fn models_doc() -> String {
    use gke_rl::knowledge::{GPU_FAMILIES, MODELS, NEMO_RL_RELEASES};
    let mut doc = String::from(
        "<!-- @generated by `cargo xtask codegen` from the SDK's tables; do not edit. -->\n\
         # What gke-rl knows: models, GPU families, NeMo-RL releases\n\n\
         ## Models\n\n\
         Each model's architecture is its `config.json`'s (`tests/fixtures/upstream/models/`); the parameter count is \
         derived from it. `validate` checks the parallelism, the memory estimate and the Lustre sizing of these models; \
         any other `policy.model_name` gets a `model-unknown` note saying which checks were skipped.\n\n\
         | model | layers | heads | KV heads | hidden | experts | parameters | config of |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for m in MODELS {
        let experts = if m.experts == 0 { "—".to_owned() } else { format!("{} ({} per token)", m.experts, m.experts_per_token) };
        let config_of = if m.config_of == m.name { "itself".to_owned() } else { format!("{} (base)", m.config_of) };
        doc.push_str(&format!(
            "| {} | {} | {} | {} | {} | {experts} | {:.2} B | {config_of} |\n",
            m.name,
            m.layers,
            m.attention_heads,
            m.kv_heads,
            m.hidden,
            m.parameters as f64 / 1e9
        ));
    }
    doc.push_str(
        "\n## GPU families\n\n\
         | family | machine type | accelerator label | GPUs per node | GPU memory | Cluster Toolkit blueprint | GPU network across nodes |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for f in GPU_FAMILIES {
        let memory = f.gpu_memory_gb.map_or("not recorded".to_owned(), |gb| format!("{gb} GB ({})", f.gpu));
        let blueprint = f.blueprint.map_or("none".to_owned(), |(_, path)| format!("`{path}`"));
        doc.push_str(&format!(
            "| {} | `{}` | `{}` | {} | {memory} | {blueprint} | {} |\n",
            f.name,
            f.machine,
            f.accelerator,
            f.gpus_per_node,
            f.network()
        ));
    }
    doc.push_str(&format!(
        "\nRender and validate follow the family of `topology.machine_type`; the blueprint patch edits only `{}`.\n\n\
         ## NeMo-RL releases\n\n\
         | release | image | Ray | GRPO launcher | dataset key | recipe keys |\n| --- | --- | --- | --- | --- | --- |\n",
        gke_rl::knowledge::PATCHED_BLUEPRINT
    ));
    for r in NEMO_RL_RELEASES {
        doc.push_str(&format!(
            "| {} | `{}` | {} | `{}` | `{}` | {} |\n",
            r.tag,
            r.image,
            r.ray,
            r.launcher,
            r.dataset_key,
            r.recipe_keys().count()
        ));
    }
    doc.push_str("\nKeys that moved:\n\n");
    for (since, old, new) in gke_rl::knowledge::MOVED_KEYS {
        doc.push_str(&format!("- {since}: `{old}` → `{new}`\n"));
    }
    doc
}

/// The embedded default written out in full, with the editor schema line.
fn example_config() -> anyhow::Result<String> {
    let body = serde_saphyr::to_string(&Deployment::default()).context("cannot serialize the default model")?;
    Ok(format!(
        "# yaml-language-server: $schema={SCHEMA_PATH}\n\
         # Every key of a gke-rl config with its default (the codelab's reference setup). Copy this\n\
         # file to gke-rl.yaml in the clone's root (the schema path above is relative to it), keep\n\
         # only what you change, and run `cargo xtask render`. @generated by `cargo xtask codegen`.\n{body}"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn codegen_is_fresh() {
        if let Err(e) = super::run(true) {
            panic!("{e:#}");
        }
    }

    #[test]
    fn schema_accepts_the_example_and_every_fixture_config_and_rejects_unknown_keys() {
        let root = crate::project_root();
        let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root.join(super::SCHEMA_PATH)).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let fixtures = std::fs::read_dir(root.join("tests/fixtures/configs")).unwrap().map(|e| e.unwrap().path());
        for path in fixtures.chain([root.join(super::EXAMPLE_PATH)]) {
            let config: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let errors: Vec<String> = validator.iter_errors(&config).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        }
        assert!(!validator.is_valid(&serde_json::json!({ "lustre": { "capacity_gb": 9000 } })));
        assert!(!validator.is_valid(&serde_json::json!({ "topology": { "node_count": 0 } })));
    }

    /// Editors check values with each type's `pattern`; gke-rl with Rust code. They agree.
    #[test]
    fn newtype_patterns_agree_with_their_validators() {
        use gke_rl::model::{AbsPath, Cidr, EnvName, Name, ProjectId, Quantity, Region, Word, Zone};
        fn agree(pattern: &str, accepts: impl Fn(&str) -> bool, samples: &[&str]) {
            let validator = jsonschema::validator_for(&serde_json::json!({ "type": "string", "pattern": pattern })).unwrap();
            for sample in samples {
                assert_eq!(validator.is_valid(&serde_json::json!(sample)), accepts(sample), "{pattern} vs {sample:?}");
            }
        }
        let names = ["ray-a4", "a", "A", "1a", "a-", "a_b", "", &"a".repeat(63), &"a".repeat(64)];
        agree(Name::PATTERN, |s| Name::new(s).is_ok(), &names);
        agree(
            ProjectId::PATTERN,
            |s| ProjectId::new(s).is_ok(),
            &["acme-rl", "acme", "acme-rl-research-123", "Acme-rl", "acme-rl-", &"a".repeat(31)],
        );
        agree(Region::PATTERN, |s| Region::new(s).is_ok(), &["us-east1", "europe-west4", "us-east1-b", "useast1", "us-east"]);
        agree(Zone::PATTERN, |s| Zone::new(s).is_ok(), &["us-east1-b", "us-east1", "us-east1-bb", "us-east1-1"]);
        agree(Cidr::PATTERN, |s| Cidr::new(s).is_ok(), &["0.0.0.0/0", "203.0.113.7/32", "1.2.3.4", "1.2.3/8", "a.b.c.d/1"]);
        agree(EnvName::PATTERN, |s| EnvName::new(s).is_ok(), &["HF_TOKEN", "_X", "1X", "X-Y", ""]);
        agree(Word::PATTERN, |s| Word::new(s).is_ok(), &["nvcr.io/nvidia/nemo-rl:v0.4.0", "a b", "", "{{X}}", "x@y+z"]);
        agree(AbsPath::PATTERN, |s| AbsPath::new(s).is_ok(), &["/lustre", "/", "lustre", "/a b", "/a/../b"]);
        agree(Quantity::PATTERN, |s| Quantity::new(s).is_ok(), &["8", "0.5", "500m", "64Gi", "Gi", "8gb", ".5", "1.2.3"]);
    }

    #[test]
    fn example_config_is_the_default() {
        let text = std::fs::read_to_string(crate::project_root().join(super::EXAMPLE_PATH)).unwrap();
        assert_eq!(gke_rl::config::from_yaml(&text).unwrap(), gke_rl::Deployment::default());
    }
}
