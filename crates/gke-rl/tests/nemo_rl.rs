//! The NeMo-RL release table against the releases' own files in `tests/fixtures/upstream`.

#![allow(clippy::disallowed_methods, clippy::disallowed_types, clippy::disallowed_macros)] // tests read fixtures; the library does no I/O

mod common;

use common::upstream;
use gke_rl::knowledge::{NEMO_RL_RELEASES, ray_version_of_image};
use gke_rl::validate::{SourceFile, validate};

fn read(relative: &str) -> String {
    std::fs::read_to_string(upstream(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

#[test]
fn each_release_runs_the_ray_it_pins_and_ships_the_launchers_listed() {
    for release in NEMO_RL_RELEASES {
        let pyproject = read(&format!("nemo-rl/{}/pyproject.toml", release.tag));
        let ray = ray_version_of_image(release.image).unwrap();
        assert!(pyproject.contains(&format!("\"ray[default]=={ray}\"")), "{}: Ray {ray} is not the pin", release.tag);
        let listed: Vec<String> = read(&format!("nemo-rl/{}/examples-run_grpo.txt", release.tag)).lines().map(str::to_owned).collect();
        let mut ours: Vec<String> = release.launchers.iter().map(|l| (*l).to_owned()).collect();
        ours.sort();
        let mut listed_sorted = listed.clone();
        listed_sorted.sort();
        assert_eq!(ours, listed_sorted, "{}", release.tag);
    }
}

#[test]
fn each_release_table_holds_its_recipe_chain_keys() {
    for release in NEMO_RL_RELEASES {
        let recipe = read(&format!("nemo-rl/{}/examples/configs/grpo_math_1B.yaml", release.tag));
        // A top-level section of the base recipe is a key of the merged table.
        for section in recipe.lines().filter(|l| !l.starts_with([' ', '#']) && l.ends_with(':')) {
            let key = section.trim_end_matches(':');
            assert!(release.recipe_key(key).is_some(), "{}: {key}", release.tag);
        }
    }
}

fn with_image(image: &str) -> gke_rl::Deployment {
    let mut d = gke_rl::Deployment::default();
    d.ray.image = gke_rl::model::Word::new(image).unwrap();
    d
}

#[test]
fn the_job_script_of_each_release() {
    for release in NEMO_RL_RELEASES {
        let artifacts = common::render(&with_image(release.image));
        insta::assert_snapshot!(format!("run_nemo_rl_{}", release.tag), common::artifact(&artifacts, "run_nemo_rl.sh"));
    }
}

fn findings(files: &[(&str, &str)]) -> Vec<(&'static str, String, String)> {
    let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
    validate(&sources).into_iter().map(|f| (f.diagnostic.code, f.file, f.diagnostic.message)).collect()
}

#[test]
fn a_newer_image_renders_its_launcher_and_keys_and_catches_the_old_script() {
    let v6 = common::render(&with_image("nvcr.io/nvidia/nemo-rl:v0.6.0"));
    let script = common::artifact(&v6, "run_nemo_rl.sh");
    assert!(script.contains("python examples/run_grpo.py") && script.contains("data.train.dataset_name=DeepScaler"), "{script}");
    assert!(!script.contains("data.dataset_name"));
    let cluster = common::artifact(&v6, "ray-cluster.yaml");
    assert!(cluster.contains("rayVersion: \"2.54.0\""));
    let clean: Vec<_> = findings(&[("ray-cluster.yaml", cluster), ("run_nemo_rl.sh", script)])
        .into_iter()
        .filter(|(code, _, _)| !matches!(*code, "checkpoint-save-time"))
        .collect();
    assert!(clean.is_empty(), "{clean:#?}");

    // The codelab's v0.4.0 script under the v0.6.0 image.
    let old = common::render(&gke_rl::Deployment::default());
    let caught = findings(&[("ray-cluster.yaml", cluster), ("run_nemo_rl.sh", common::artifact(&old, "run_nemo_rl.sh"))]);
    let launcher: Vec<_> = caught.iter().filter(|(code, _, _)| *code == "launcher-missing").collect();
    assert_eq!(launcher.len(), 1, "{caught:#?}");
    assert!(launcher[0].2.contains("NeMo-RL v0.6.0 does not ship `examples/run_grpo_math.py`"), "{}", launcher[0].2);
    let moved: Vec<_> = caught.iter().filter(|(code, _, m)| *code == "override-unknown-key" && m.contains("data.dataset_name")).collect();
    assert_eq!(moved.len(), 1, "{caught:#?}");
    assert!(moved[0].2.contains("moved `data.dataset_name` to `data.train.dataset_name`"), "{}", moved[0].2);
}

#[test]
fn an_unknown_image_says_what_was_not_checked() {
    let mut d = with_image("example.com/my/trainer:3");
    d.ray.ray_version = Some(gke_rl::model::Word::new("2.46.0").unwrap());
    let artifacts = common::render(&d);
    let all = findings(&[
        ("ray-cluster.yaml", common::artifact(&artifacts, "ray-cluster.yaml")),
        ("run_nemo_rl.sh", common::artifact(&artifacts, "run_nemo_rl.sh")),
    ]);
    let note: Vec<_> = all.iter().filter(|(code, _, _)| *code == "nemo-rl-unknown-image").collect();
    assert_eq!(note.len(), 1, "{all:#?}");
    assert!(note[0].2.contains("the launcher, the override keys and the dataset are not checked"));
}
