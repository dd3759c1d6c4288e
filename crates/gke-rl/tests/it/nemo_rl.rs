//! The NeMo-RL release table against the releases' own files in `tests/fixtures/upstream`.

use gke_rl::knowledge::{NEMO_RL_RELEASES, ray_version_of_image};
use gke_rl_test_support::upstream;
use gke_rl_validate::{SourceFile, validate};

fn read(relative: &str) -> String {
    std::fs::read_to_string(upstream(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

#[test]
fn each_release_runs_the_ray_it_pins_and_ships_the_launchers_listed() {
    for release in NEMO_RL_RELEASES {
        let pyproject = read(&format!("nemo-rl/{}/pyproject.toml", release.tag));
        let ray = ray_version_of_image(release.image).unwrap();
        // Pinned exactly, or (from v0.7.0) required as a minimum that the image's lock resolves.
        let pinned = pyproject.contains(&format!("\"ray[default]=={ray}\""));
        let locked = pyproject.contains(&format!("\"ray[default]>={ray}\""))
            && read(&format!("nemo-rl/{}/uv-lock-ray.txt", release.tag)) == format!("ray \"{ray}\"\n");
        assert!(pinned || locked, "{}: Ray {ray} is neither the pin nor the locked version", release.tag);
        let guide = read(&format!("nemo-rl/{}/docs/guides/grpo.md", release.tag));
        assert!(
            guide.contains(&format!("uv run {} --config", release.launcher)),
            "{}: the guide does not run {}",
            release.tag,
            release.launcher
        );
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
        let artifacts = gke_rl_test_support::configs::render(&with_image(release.image));
        insta::assert_snapshot!(
            format!("run_nemo_rl_{}", release.tag),
            gke_rl_test_support::configs::artifact(&artifacts, "run_nemo_rl.sh")
        );
    }
}

fn findings(files: &[(&str, &str)]) -> Vec<(&'static str, String, String)> {
    let sources: Vec<SourceFile<'_>> = files.iter().map(|(name, text)| SourceFile { name, text }).collect();
    validate(&sources).into_iter().map(|f| (f.diagnostic.code, f.file, f.diagnostic.message)).collect()
}

#[test]
fn a_newer_image_renders_its_launcher_and_keys_and_catches_the_old_script() {
    let v6 = gke_rl_test_support::configs::render(&with_image("nvcr.io/nvidia/nemo-rl:v0.6.0"));
    let script = gke_rl_test_support::configs::artifact(&v6, "run_nemo_rl.sh");
    assert!(script.contains("python examples/run_grpo.py") && script.contains("data.train.dataset_name=DeepScaler"), "{script}");
    assert!(!script.contains("data.dataset_name"));
    let cluster = gke_rl_test_support::configs::artifact(&v6, "ray-cluster.yaml");
    assert!(cluster.contains("rayVersion: \"2.54.0\""));
    let clean: Vec<_> = findings(&[("ray-cluster.yaml", cluster), ("run_nemo_rl.sh", script)])
        .into_iter()
        .filter(|(code, _, _)| !matches!(*code, "checkpoint-save-time"))
        .collect();
    assert!(clean.is_empty(), "{clean:#?}");

    // The codelab's v0.4.0 script under the v0.6.0 image.
    let old = gke_rl_test_support::configs::render(&gke_rl::Deployment::default());
    let caught =
        findings(&[("ray-cluster.yaml", cluster), ("run_nemo_rl.sh", gke_rl_test_support::configs::artifact(&old, "run_nemo_rl.sh"))]);
    let launcher: Vec<_> = caught.iter().filter(|(code, _, _)| *code == "launcher-missing").collect();
    assert_eq!(launcher.len(), 1, "{caught:#?}");
    assert!(launcher[0].2.contains("NeMo-RL v0.6.0 does not ship `examples/run_grpo_math.py`"), "{}", launcher[0].2);
    let moved: Vec<_> = caught.iter().filter(|(code, _, m)| *code == "override-unknown-key" && m.contains("data.dataset_name")).collect();
    assert_eq!(moved.len(), 1, "{caught:#?}");
    assert!(moved[0].2.contains("moved `data.dataset_name` to `data.train.dataset_name`"), "{}", moved[0].2);
}

#[test]
fn a_v0_7_0_config_renders_its_ray_launcher_and_dataset_key_and_validates_clean() {
    let artifacts = gke_rl_test_support::configs::render(&with_image("nvcr.io/nvidia/nemo-rl:v0.7.0"));
    let cluster = gke_rl_test_support::configs::artifact(&artifacts, "ray-cluster.yaml");
    let script = gke_rl_test_support::configs::artifact(&artifacts, "run_nemo_rl.sh");
    assert!(cluster.contains("rayVersion: \"2.55.1\""), "{cluster}");
    assert!(script.contains("python examples/run_grpo.py") && script.contains("data.train.dataset_name=DeepScaler"), "{script}");
    // v0.7.0's recipe dropped `converter_type`: the render never passes it.
    assert!(!script.contains("converter_type"));
    let all = findings(&[("ray-cluster.yaml", cluster), ("run_nemo_rl.sh", script)]);
    let clean: Vec<_> = all.iter().filter(|(code, _, _)| *code != "checkpoint-save-time").collect();
    assert!(clean.is_empty(), "{clean:#?}");

    // The codelab's script, with its `converter_type` override, under the v0.7.0 image.
    let old = gke_rl_test_support::configs::render(&gke_rl::Deployment::default());
    let old_script = gke_rl_test_support::configs::artifact(&old, "run_nemo_rl.sh").replace(
        "policy.model_name=Qwen/Qwen2.5-72B-Instruct \\",
        "policy.model_name=Qwen/Qwen2.5-72B-Instruct policy.megatron_cfg.converter_type=Qwen2ForCausalLM \\",
    );
    let caught = findings(&[("ray-cluster.yaml", cluster), ("run_nemo_rl.sh", &old_script)]);
    let dropped: Vec<_> = caught.iter().filter(|(code, _, m)| *code == "override-unknown-key" && m.contains("converter_type")).collect();
    assert_eq!(dropped.len(), 1, "{caught:#?}");
    assert!(dropped[0].2.contains("is in NeMo-RL v0.4.0 and v0.5.0 and v0.6.0's recipe, not v0.7.0's"), "{}", dropped[0].2);
}

#[test]
fn a_nemo_rl_version_gke_rl_does_not_know_gets_the_newest_layout_at_or_before_it_and_a_warning() {
    let newest = gke_rl::knowledge::newest_nemo_rl();
    let mut d = with_image("nvcr.io/nvidia/nemo-rl:v9.1.0");
    // Its Ray is not known: the config must say it, as for any image without a known Ray.
    let refused = gke_rl::render(&d, &gke_rl_test_support::configs::OPTIONS).unwrap_err();
    assert!(refused.to_string().contains("set `ray.ray_version`"), "{refused}");
    d.ray.ray_version = Some(gke_rl::model::Word::new("2.61.0").unwrap());
    let artifacts = gke_rl_test_support::configs::render(&d);
    let script = gke_rl_test_support::configs::artifact(&artifacts, "run_nemo_rl.sh");
    assert!(script.contains(&format!("python {} ", newest.launcher)) && script.contains(&format!("{}=", newest.dataset_key)), "{script}");
    assert!(!script.contains("run_grpo_math.py") && !script.contains(" data.dataset_name="), "never the oldest layout: {script}");
    let all = findings(&[
        ("ray-cluster.yaml", gke_rl_test_support::configs::artifact(&artifacts, "ray-cluster.yaml")),
        ("run_nemo_rl.sh", script),
    ]);
    let warning: Vec<_> = all.iter().filter(|(code, _, _)| *code == "nemo-rl-assumed-layout").collect();
    assert_eq!(warning.len(), 1, "{all:#?}");
    let expected = format!(
        "NeMo-RL v9.1.0 is not a release gke-rl knows: its layout is assumed to be {}'s, the newest known at or before it (launcher `{}`, dataset key `{}`",
        newest.tag, newest.launcher, newest.dataset_key
    );
    assert!(warning[0].2.contains(&expected), "{}", warning[0].2);
    assert!(warning[0].2.contains("the launcher, the override keys and the dataset are not checked"));
    // An assumed layout fails nothing: a key new in v9.1.0 is not an error.
    let with_new_key = script.replace(&format!("{}=", newest.dataset_key), &format!("grpo.some_new_key=1 {}=", newest.dataset_key));
    let errors: Vec<_> = findings(&[
        ("ray-cluster.yaml", gke_rl_test_support::configs::artifact(&artifacts, "ray-cluster.yaml")),
        ("run_nemo_rl.sh", &with_new_key),
    ])
    .into_iter()
    .filter(|(code, _, _)| matches!(*code, "override-unknown-key" | "launcher-missing" | "dataset-unknown"))
    .collect();
    assert!(errors.is_empty(), "{errors:#?}");

    // Patches, candidates, short tags and digests take the newest release at or before them.
    use gke_rl::knowledge::{NEMO_RL_RELEASES, NemoRlImage};
    let layout = |image: &str| NemoRlImage::of(image).layout().map(|r| r.tag);
    let v6 = NEMO_RL_RELEASES.iter().find(|r| r.tag == "v0.6.0").unwrap();
    assert_eq!(NemoRlImage::of("nvcr.io/nvidia/nemo-rl:v0.6.1"), NemoRlImage::Assumed { tag: "v0.6.1", assumed: v6 });
    assert_eq!(layout("nvcr.io/nvidia/nemo-rl:v0.7.0-rc1"), Some("v0.7.0"));
    assert_eq!(layout("nvcr.io/nvidia/nemo-rl:v0.6"), Some("v0.6.0"));
    assert_eq!(layout("nvcr.io/nvidia/nemo-rl:v0.10.0"), Some(newest.tag));
    assert_eq!(layout("nvcr.io/nvidia/nemo-rl:v1.0"), Some(newest.tag));
    assert_eq!(NemoRlImage::of("nvcr.io/nvidia/nemo-rl:v0.6.0@sha256:0123abcd"), NemoRlImage::Known(v6));
    assert_eq!(gke_rl::knowledge::ray_version_of_image("nvcr.io/nvidia/nemo-rl:v0.6.0@sha256:0123abcd"), Some(v6.ray));
    assert_eq!(layout("nvcr.io/nvidia/nemo-rl:v0.8.0@sha256:0123abcd"), Some(newest.tag));
    // Older than every known release, no version, another repository: unknown.
    for image in
        ["nvcr.io/nvidia/nemo-rl:v0.3.9", "nvcr.io/nvidia/nemo-rl:latest", "nvcr.io/nvidia/nemo-rl:v0.x.0", "example.com/nemo-rl:v9.0.0"]
    {
        assert_eq!(NemoRlImage::of(image), NemoRlImage::Unknown, "{image}");
    }
}

#[test]
fn an_unknown_image_says_what_was_not_checked() {
    let mut d = with_image("example.com/my/trainer:3");
    d.ray.ray_version = Some(gke_rl::model::Word::new("2.46.0").unwrap());
    let artifacts = gke_rl_test_support::configs::render(&d);
    let all = findings(&[
        ("ray-cluster.yaml", gke_rl_test_support::configs::artifact(&artifacts, "ray-cluster.yaml")),
        ("run_nemo_rl.sh", gke_rl_test_support::configs::artifact(&artifacts, "run_nemo_rl.sh")),
    ]);
    let note: Vec<_> = all.iter().filter(|(code, _, _)| *code == "nemo-rl-unknown-image").collect();
    assert_eq!(note.len(), 1, "{all:#?}");
    assert!(note[0].2.contains("the launcher, the override keys and the dataset are not checked"));
}

/// Issue 64: `export --hf` runs each release's own converter, with flags its script takes. Each
/// script's `add_argument("--flag"` is read from the release's copy: a flag a release drops, or a
/// script it moves, fails here.
#[test]
fn each_release_ships_the_converters_export_runs_with_the_flags_it_passes() {
    use gke_rl::knowledge::{HF_CONVERTER_FLAGS, HF_CONVERTERS};
    for release in NEMO_RL_RELEASES {
        for converter in HF_CONVERTERS {
            let script = read(&format!("nemo-rl/{}/{}", release.tag, converter.script));
            let flags = [converter.weights_flag].into_iter().chain(HF_CONVERTER_FLAGS);
            for flag in flags {
                assert!(script.contains(&format!("\"{flag}\",")), "{} {}: no add_argument(\"{flag}\"", release.tag, converter.script);
            }
            if let Some(extra) = converter.extra {
                assert!(
                    script.contains(&format!("uv run --extra {extra} python {}", converter.script)),
                    "{} {}",
                    release.tag,
                    converter.script
                );
            }
        }
    }
    let megatron = gke_rl::knowledge::hf_converter("megatron").unwrap();
    assert_eq!(
        megatron.command("/lustre/ckpt/step_4", "policy/weights/iter_0000004", "/lustre/ckpt/tmp_step_4-hf"),
        "cd /opt/nemo-rl && exec uv run --extra mcore python examples/converters/convert_megatron_to_hf.py --config /lustre/ckpt/step_4/config.yaml \
         --megatron-ckpt-path /lustre/ckpt/step_4/policy/weights/iter_0000004 --hf-ckpt-path /lustre/ckpt/tmp_step_4-hf"
    );
    let dcp = gke_rl::knowledge::hf_converter("dcp").unwrap().command("/data/a b/step_1", "policy/weights", "/data/$(x)");
    assert!(dcp.contains("--dcp-ckpt-path '/data/a b/step_1/policy/weights' --hf-ckpt-path '/data/$(x)'"), "{dcp}");
}
