//! NeMo-RL's releases as codegen reads them: each folder `tests/fixtures/upstream/nemo-rl/<tag>/`
//! is one release, and everything gke-rl knows of it is read from its verbatim files into one
//! generated table (`crates/gke-rl/src/knowledge/nemo_rl.rs`). Adding a release is copying its
//! fixtures and running `cargo xtask codegen`.

use std::fs;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

/// The recipe whose merged keys each release's table lists (the codelab's).
pub const RECIPE: &str = "grpo_math_70B_megatron.yaml";
/// Where a release's recipes are, relative to its checkout.
const RECIPES_DIR: &str = "examples/configs/";
/// The generated table, relative to the project root.
pub const TABLE_PATH: &str = "crates/gke-rl/src/knowledge/nemo_rl.rs";
/// The keys that name the GRPO data set, newest layout first (`data.train.dataset_name` since
/// NeMo-RL v0.6.0's split of the data config, NVIDIA-NeMo/RL PR #1649).
const DATASET_KEYS: &[&str] = &["data.train.dataset_name", "data.dataset_name"];
/// The most releases the table's per-key release masks (`u16`) hold.
const MOST_RELEASES: usize = 16;

/// One release, read from its fixtures.
pub struct Release {
    tag: String,
    ray: String,
    launcher: String,
    launchers: Vec<String>,
    dataset_key: &'static str,
    /// Every key of the merged, resolved recipe: (key, type, value), in the recipe's order.
    keys: Vec<(String, &'static str, String)>,
    /// Every recipe it ships, under `examples/configs/`, without that prefix.
    recipes: Vec<String>,
}

/// Every release under `dir` (`tests/fixtures/upstream/nemo-rl`), oldest first.
pub fn releases(dir: &Path) -> anyhow::Result<Vec<Release>> {
    let mut tags: Vec<([u64; 3], String)> = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if !name.starts_with('v') {
            continue;
        }
        // A release folder is named by its exact tag, as the SDK reads image tags.
        match gke_rl::knowledge::release_version(&name) {
            Some(v) if name == format!("v{}.{}.{}", v[0], v[1], v[2]) => tags.push((v, name)),
            _ => bail!("{}/{name}: a release folder is named by its tag, vX.Y.Z", dir.display()),
        }
    }
    tags.sort();
    anyhow::ensure!(!tags.is_empty(), "{}: no release folder (vX.Y.Z)", dir.display());
    anyhow::ensure!(tags.len() <= MOST_RELEASES, "more than {MOST_RELEASES} NeMo-RL releases: widen the table's release mask");
    tags.into_iter().map(|(_, tag)| read(&dir.join(&tag), tag)).collect()
}

fn read(dir: &Path, tag: String) -> anyhow::Result<Release> {
    let text = |relative: &str| {
        let path = dir.join(relative);
        fs::read_to_string(&path).with_context(|| format!("cannot read {} (copy it from NeMo-RL {tag}, verbatim)", path.display()))
    };
    let configs = dir.join("examples/configs");
    let merged = crate::recipes::load_chain(&configs, RECIPE)?;
    let resolved = crate::recipes::resolve(&merged).with_context(|| format!("cannot resolve {}/{RECIPE}", configs.display()))?;
    let mut keys = Vec::new();
    flatten("", &resolved, &mut keys);
    let dataset_key = DATASET_KEYS
        .iter()
        .copied()
        .find(|k| keys.iter().any(|(key, _, _)| key == k))
        .with_context(|| format!("{tag}'s recipe names its data set by none of {DATASET_KEYS:?}"))?;
    let launchers: Vec<String> = text("examples-run_grpo.txt")?.lines().map(str::to_owned).collect();
    let launcher =
        guide_launcher(&text("docs/guides/grpo.md")?).with_context(|| format!("{tag}'s docs/guides/grpo.md runs no launcher"))?;
    anyhow::ensure!(launchers.contains(&launcher), "{tag}: the guide runs {launcher}, which examples-run_grpo.txt does not list");
    let ray = ray_version(&text("pyproject.toml")?, || text("uv-lock-ray.txt")).with_context(|| format!("{tag}: which Ray"))?;
    let listed = text("examples-configs.txt")?;
    let recipes = listed
        .lines()
        .map(|path| path.strip_prefix(RECIPES_DIR).map(str::to_owned).with_context(|| format!("{tag}: examples-configs.txt lists {path}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(recipes.iter().any(|r| r == RECIPE), "{tag}: examples-configs.txt does not list {RECIPE}");
    Ok(Release { tag, ray, launcher, launchers, dataset_key, keys, recipes })
}

/// The launcher the GRPO guide runs: `uv run examples/run_grpo.py --config …`.
fn guide_launcher(guide: &str) -> Option<String> {
    guide.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("uv run ")?;
        let script = rest.split_whitespace().next()?;
        (script.starts_with("examples/") && script.ends_with(".py")).then(|| script.to_owned())
    })
}

/// The Ray the image ships: `pyproject.toml`'s exact pin, else what the lock file resolves
/// (`uv-lock-ray.txt`: the image runs `uv sync --locked`).
fn ray_version(pyproject: &str, lock: impl FnOnce() -> anyhow::Result<String>) -> anyhow::Result<String> {
    if let Some(pin) = pyproject.split("\"ray[default]==").nth(1).and_then(|rest| rest.split('"').next()) {
        return Ok(pin.to_owned());
    }
    let lock = lock()?;
    match lock.trim().strip_prefix("ray \"").and_then(|rest| rest.strip_suffix('"')) {
        Some(version) => Ok(version.to_owned()),
        None => bail!("uv-lock-ray.txt is not `ray \"X.Y.Z\"`"),
    }
}

fn flatten(prefix: &str, value: &Value, keys: &mut Vec<(String, &'static str, String)>) {
    let (kind, text) = match value {
        Value::Object(_) => ("Map", String::new()),
        Value::Array(_) => ("List", value.to_string()),
        Value::Null => ("Null", "null".to_owned()),
        Value::Bool(b) => ("Bool", b.to_string()),
        Value::Number(n) if n.is_f64() => ("Float", n.to_string()),
        Value::Number(n) => ("Int", n.to_string()),
        Value::String(s) => ("Str", s.clone()),
    };
    if !prefix.is_empty() {
        keys.push((prefix.to_owned(), kind, text));
    }
    if let Value::Object(map) = value {
        for (key, child) in map {
            let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
            flatten(&path, child, keys);
        }
    }
}

/// The generated table: the releases, and one list of every recipe key with each distinct
/// (type, value) once, marked with the releases that have it. A key most releases share costs
/// one row, not one per release: the web page's size grows by what a release changes.
pub fn table(releases: &[Release], image_repository: &str) -> anyhow::Result<String> {
    use std::collections::BTreeMap;
    let mut rows: BTreeMap<(&str, &str, &str), u16> = BTreeMap::new();
    for (index, release) in releases.iter().enumerate() {
        for (key, kind, value) in &release.keys {
            *rows.entry((key, kind, value)).or_default() |= 1 << index;
        }
    }
    let mut out = String::from(
        "//! @generated by `cargo xtask codegen` from `tests/fixtures/upstream/nemo-rl/<tag>/`: each release's\n\
         //! Ray (its `pyproject.toml` pin, else its `uv.lock`), launchers, its GRPO guide's launcher, and\n\
         //! its recipe `examples/configs/grpo_math_70B_megatron.yaml` merged with its `defaults:` parents\n\
         //! and its interpolations resolved, and every recipe it ships (`examples-configs.txt`). Do not edit.\n\n\
         use super::NemoRlRelease;\n\n\
         /// The releases, oldest first.\n\
         #[rustfmt::skip]\n\
         pub const NEMO_RL_RELEASES: &[NemoRlRelease] = &[\n",
    );
    for r in releases {
        let launchers: Vec<String> = r.launchers.iter().map(|l| format!("{l:?}")).collect();
        out.push_str(&format!(
            "    NemoRlRelease {{\n        tag: {:?},\n        image: {:?},\n        ray: {:?},\n        launcher: {:?},\n        \
             launchers: &[{}],\n        dataset_key: {:?},\n    }},\n",
            r.tag,
            format!("{image_repository}:{}", r.tag),
            r.ray,
            r.launcher,
            launchers.join(", "),
            r.dataset_key
        ));
    }
    // Text, not a slice of tuples: the page pays for each tuple's pointers, and gzip squeezes
    // sorted lines of text three times better.
    out.push_str(
        "];\n\n\
         /// Every key of any release's merged recipe, sorted, with each distinct type and value once:\n\
         /// one line `key type releases value`, where bit i of the hexadecimal `releases` is\n\
         /// `NEMO_RL_RELEASES[i]` and the value, the rest of the line, may be empty.\n\
         pub(super) const RECIPE_KEYS: &str = r#\"\n",
    );
    for ((key, kind, value), mask) in rows {
        anyhow::ensure!(
            !key.is_empty()
                && !key.contains(char::is_whitespace)
                && !value.contains(['\n', '\r'])
                && value.trim_end() == value
                && !format!("{key}{value}").contains("\"#"),
            "recipe key {key:?} = {value:?}: a key with whitespace, or a value with a line break or trailing whitespace, or `\"#` anywhere, does not fit the table's lines; give it an escape"
        );
        let line = format!("{key} {kind} {mask:x} {value}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("\"#;\n");
    let mut recipes: BTreeMap<&str, u16> = BTreeMap::new();
    for (index, release) in releases.iter().enumerate() {
        for recipe in &release.recipes {
            *recipes.entry(recipe).or_default() |= 1 << index;
        }
    }
    out.push_str(
        "\n/// Every recipe of any release, under `examples/configs/` and sorted: one line `path releases`, where\n\
         /// bit i of the hexadecimal `releases` is `NEMO_RL_RELEASES[i]`.\n\
         pub(super) const RECIPES: &str = r#\"\n",
    );
    for (recipe, mask) in recipes {
        anyhow::ensure!(
            !recipe.contains(char::is_whitespace) && !recipe.contains("\"#"),
            "recipe {recipe:?} does not fit the table's lines"
        );
        out.push_str(&format!("{recipe} {mask:x}\n"));
    }
    out.push_str("\"#;\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_launcher_and_the_ray_pin_are_read_as_upstream_writes_them() {
        assert_eq!(guide_launcher("```sh\nuv run examples/run_grpo.py --config <PATH>\n```"), Some("examples/run_grpo.py".to_owned()));
        assert_eq!(guide_launcher("uv run python -m x"), None);
        let pinned = ray_version("  \"ray[default]==2.46.0\",\n", || bail!("not read")).unwrap();
        assert_eq!(pinned, "2.46.0");
        let locked = ray_version("  \"ray[default]>=2.55.1\",\n", || Ok("ray \"2.55.1\"\n".to_owned())).unwrap();
        assert_eq!(locked, "2.55.1");
        assert!(ray_version("\"ray[default]>=2.55.1\"", || Ok("ray = 2".to_owned())).is_err());
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("v0.8.0-rc1")).unwrap();
        let refused = releases(dir.path()).err().unwrap().to_string();
        assert!(refused.contains("v0.8.0-rc1: a release folder is named by its tag, vX.Y.Z"), "{refused}");
    }
}
