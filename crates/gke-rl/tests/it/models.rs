//! The model catalogue against the `config.json` facts in `tests/fixtures/upstream/models`, and
//! the checks it enables on a job.

use gke_rl::knowledge::{MODELS, model};
use gke_rl_test_support::configs::render;
use gke_rl_test_support::upstream;
use gke_rl_validate::{SourceFile, validate};

/// Every row of both fact files: column name → value.
fn rows() -> Vec<std::collections::BTreeMap<String, String>> {
    let mut out = Vec::new();
    for file in ["models/config-facts.tsv", "models/config-facts-base-substitutes.tsv"] {
        let text = std::fs::read_to_string(upstream(file)).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
        for line in lines.filter(|l| !l.is_empty()) {
            out.push(header.iter().map(|h| (*h).to_owned()).zip(line.split('\t').map(str::to_owned)).collect());
        }
    }
    out
}

#[test]
fn the_catalogue_states_what_each_config_json_states() {
    let rows = rows();
    assert_eq!(rows.len(), 15, "9 models' own configs and 6 base configs");
    for row in &rows {
        let repo = &row["hf_repo"];
        let m = MODELS.iter().find(|m| m.name == repo).unwrap_or_else(|| panic!("{repo} is not in the catalogue"));
        let number = |key: &str| row[key].parse::<u64>().unwrap();
        assert_eq!(m.layers, number("num_hidden_layers"), "{repo}");
        assert_eq!(m.attention_heads, number("num_attention_heads"), "{repo}");
        assert_eq!(m.kv_heads, number("num_key_value_heads"), "{repo}");
        assert_eq!(m.hidden, number("hidden_size"), "{repo}");
        assert_eq!(m.intermediate, number("intermediate_size"), "{repo}");
        assert_eq!(m.vocab, number("vocab_size"), "{repo}");
        assert_eq!(m.max_positions, number("max_position_embeddings"), "{repo}");
        assert_eq!(m.dtype, row["torch_dtype"], "{repo}");
        assert_eq!(m.tied_embeddings, row["tie_word_embeddings"] == "true", "{repo}");
        assert_eq!(m.experts, row["num_experts"].parse().unwrap_or(0), "{repo}");
        let table = include_str!("../../src/knowledge/models.rs");
        let entry = table.lines().position(|l| l.contains(&format!("ModelFacts {{ name: {repo:?},"))).unwrap();
        assert!(table.lines().nth(entry - 1).unwrap().contains(&row["source"]), "{repo} cites its row");
    }
}

#[test]
fn instruct_models_borrow_only_their_bases_architecture() {
    let instruct = model("Qwen/Qwen2.5-72B-Instruct").unwrap();
    let base = model("Qwen/Qwen2.5-72B").unwrap();
    assert_eq!((instruct.config_of, instruct.layers, instruct.parameters), (base.name, base.layers, base.parameters));
    assert_eq!(instruct.parameters, 72_706_203_648, "Qwen/Qwen2.5-72B-Instruct config.json: 72.7B");
    assert_eq!(model("Qwen/Qwen2.5-3B-Instruct"), None, "no citable config: not in the catalogue");
}

fn check_with(edit: impl Fn(&mut gke_rl::Deployment)) -> Vec<(&'static str, String)> {
    let mut d = gke_rl::Deployment::default();
    edit(&mut d);
    let artifacts = render(&d);
    let sources: Vec<SourceFile<'_>> = artifacts.iter().map(|a| SourceFile { name: a.name, text: &a.contents }).collect();
    validate(&sources).into_iter().map(|f| (f.diagnostic.code, f.diagnostic.message)).collect()
}

#[test]
fn a_smaller_model_whose_heads_vllm_cannot_split_is_caught() {
    let findings = check_with(|d| d.job.model = gke_rl::model::Word::new("Qwen/Qwen2.5-7B-Instruct").unwrap());
    let vllm: Vec<_> = findings.iter().filter(|(code, _)| *code == "vllm-tp-heads").collect();
    assert_eq!(vllm.len(), 1, "{findings:#?}");
    assert!(vllm[0].1.contains("28 attention heads and 4 KV heads"), "{}", vllm[0].1);
}

#[test]
fn another_70b_model_keeping_every_checkpoint_is_sized() {
    let findings = check_with(|d| {
        d.job.model = gke_rl::model::Word::new("meta-llama/Llama-3.3-70B-Instruct").unwrap();
        d.job.checkpointing.keep_top_k = None;
        d.job.max_num_steps = std::num::NonZeroU32::new(1000).unwrap();
    });
    let small: Vec<_> = findings.iter().filter(|(code, _)| *code == "lustre-too-small").collect();
    assert_eq!(small.len(), 1, "{findings:#?}");
    assert!(small[0].1.contains("500 checkpoints") && small[0].1.contains("meta-llama/Llama-3.3-70B-Instruct"), "{}", small[0].1);
    let unknown = check_with(|d| d.job.model = gke_rl::model::Word::new("acme/house-model-70B").unwrap());
    let note: Vec<_> = unknown.iter().filter(|(code, _)| *code == "model-unknown").collect();
    assert!(note[0].1.contains("lustre-too-small"), "an unknown model says which checks it skipped: {}", note[0].1);
}
