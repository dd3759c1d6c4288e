//! The model catalogue, for codegen: the architecture facts in `tests/fixtures/upstream/models/`
//! (each row read from a model's `config.json`) as the SDK's table, with each model's parameter
//! count derived from them by its architecture's layout.

use anyhow::{Context, bail};

/// The fact files, relative to the upstream fixtures.
pub const FACT_FILES: &[&str] = &["models/config-facts.tsv", "models/config-facts-base-substitutes.tsv"];

/// Instruct models whose own config was not found, and the base model whose config stands in
/// for their architecture (`models/SOURCE.md`).
const INSTRUCT_OF_BASE: &[(&str, &str)] = &[
    ("Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-1.5B"),
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"),
    ("Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-32B"),
    ("Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B"),
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B"),
    ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B"),
];

/// One row of a fact file.
#[derive(Clone, Debug)]
pub struct Row {
    pub repo: String,
    pub layers: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub hidden: u64,
    pub intermediate: u64,
    pub vocab: u64,
    pub max_positions: u64,
    pub dtype: String,
    pub tied: bool,
    pub experts: u64,
    pub head_dim: u64,
    pub moe_intermediate: u64,
    pub experts_per_token: u64,
    pub source: String,
}

/// The rows of a fact file.
pub fn parse(tsv: &str) -> anyhow::Result<Vec<Row>> {
    let mut lines = tsv.lines();
    let header: Vec<&str> = lines.next().context("an empty fact file")?.split('\t').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).with_context(|| format!("no column {name}"));
    let columns = [
        "hf_repo",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "hidden_size",
        "intermediate_size",
        "vocab_size",
        "max_position_embeddings",
        "torch_dtype",
        "tie_word_embeddings",
        "num_experts",
        "source",
        "note",
    ]
    .map(column);
    let [repo, layers, heads, kv, hidden, inter, vocab, maxpos, dtype, tied, experts, source, note] = columns;
    let (repo, layers, heads, kv, hidden, inter, vocab, maxpos, dtype, tied, experts, source, note) =
        (repo?, layers?, heads?, kv?, hidden?, inter?, vocab?, maxpos?, dtype?, tied?, experts?, source?, note?);
    let mut rows = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let cells: Vec<&str> = line.split('\t').collect();
        let cell = |i: usize| cells.get(i).copied().unwrap_or_default();
        let number = |i: usize| cell(i).parse::<u64>().with_context(|| format!("{}: `{}` is not a count", cell(repo), cell(i)));
        // `head_dim=128; …` and friends, from the note.
        let noted = |key: &str| {
            cell(note).split([';', ',']).map(str::trim).find_map(|part| part.strip_prefix(&format!("{key}="))?.parse::<u64>().ok())
        };
        let (hidden_size, head_count) = (number(hidden)?, number(heads)?);
        rows.push(Row {
            repo: cell(repo).to_owned(),
            layers: number(layers)?,
            heads: head_count,
            kv_heads: number(kv)?,
            hidden: hidden_size,
            intermediate: number(inter)?,
            vocab: number(vocab)?,
            max_positions: number(maxpos)?,
            dtype: cell(dtype).to_owned(),
            tied: match cell(tied) {
                "true" => true,
                "false" => false,
                other => bail!("{}: tie_word_embeddings is `{other}`", cell(repo)),
            },
            experts: if cell(experts).is_empty() { 0 } else { number(experts)? },
            head_dim: noted("head_dim").unwrap_or(hidden_size / head_count),
            moe_intermediate: noted("moe_intermediate_size").unwrap_or(0),
            experts_per_token: noted("num_experts_per_tok").unwrap_or(0),
            source: cell(source).to_owned(),
        });
    }
    Ok(rows)
}

/// How a family lays out its attention, which decides its parameter count.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Qwen2 (Qwen2.5, DeepSeek-R1-Distill-Qwen): biases on the q, k and v projections.
    QkvBias,
    /// Qwen3: an RMSNorm of `head_dim` on q and on k, no biases.
    QkNorm,
    /// Llama: no biases, no q/k norms.
    Plain,
}

fn layout(repo: &str) -> anyhow::Result<Layout> {
    Ok(if repo.starts_with("Qwen/Qwen2.5-") || repo.starts_with("deepseek-ai/DeepSeek-R1-Distill-Qwen-") {
        Layout::QkvBias
    } else if repo.starts_with("Qwen/Qwen3-") {
        Layout::QkNorm
    } else if repo.starts_with("meta-llama/") {
        Layout::Plain
    } else {
        bail!("{repo}: gke-rl does not know its architecture's layout")
    })
}

/// The parameter count: embeddings (and the output projection unless tied), per layer the
/// attention projections (with the family's biases or q/k norms), the MLP (gate, up and down;
/// for MoE every expert's and the router), two RMSNorms, and the final norm.
pub fn parameters(row: &Row) -> anyhow::Result<u64> {
    let (h, q, kv) = (row.hidden, row.heads * row.head_dim, row.kv_heads * row.head_dim);
    let attention = h * q
        + 2 * h * kv
        + q * h
        + match layout(&row.repo)? {
            Layout::QkvBias => q + 2 * kv,
            Layout::QkNorm => 2 * row.head_dim,
            Layout::Plain => 0,
        };
    let mlp = if row.experts > 0 { row.experts * 3 * h * row.moe_intermediate + h * row.experts } else { 3 * h * row.intermediate };
    let embeddings = row.vocab * h * if row.tied { 1 } else { 2 };
    Ok(embeddings + row.layers * (attention + mlp + 2 * h) + h)
}

/// The catalogue as a Rust table: every row, then each Instruct model its base stands in for.
pub fn catalogue(files: &[(&str, String)]) -> anyhow::Result<String> {
    let mut rows = Vec::new();
    for (file, text) in files {
        rows.extend(parse(text).with_context(|| format!("cannot read {file}"))?.into_iter().map(|r| (r, (*file).to_owned())));
    }
    let mut entries = Vec::new();
    for (row, file) in &rows {
        entries.push((row.repo.clone(), row, file.clone()));
    }
    for (instruct, base) in INSTRUCT_OF_BASE {
        let (row, file) = rows.iter().find(|(r, _)| r.repo == *base).with_context(|| format!("no row for {base}"))?;
        entries.push(((*instruct).to_owned(), row, file.clone()));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::from(
        "//! @generated by `cargo xtask codegen` from `tests/fixtures/upstream/models/*.tsv`: each model's architecture\n\
         //! as its config.json states it, and the parameter count derived from it. Do not edit.\n\n\
         use super::ModelFacts;\n\n\
         /// Every model gke-rl knows, by the name `policy.model_name` gives.\n\
         #[rustfmt::skip]\n\
         pub const MODELS: &[ModelFacts] = &[\n",
    );
    for (name, row, file) in entries {
        // The citation is for readers of the table: a comment, not data the page would carry.
        out.push_str(&format!("    // {file}: {}\n", row.source));
        out.push_str(&format!(
            "    ModelFacts {{ name: {name:?}, config_of: {:?}, layers: {}, attention_heads: {}, kv_heads: {}, head_dim: {}, hidden: {}, \
             intermediate: {}, vocab: {}, max_positions: {}, dtype: {:?}, tied_embeddings: {}, experts: {}, experts_per_token: {}, \
             moe_intermediate: {}, parameters: {} }},\n",
            row.repo,
            row.layers,
            row.heads,
            row.kv_heads,
            row.head_dim,
            row.hidden,
            row.intermediate,
            row.vocab,
            row.max_positions,
            row.dtype,
            row.tied,
            row.experts,
            row.experts_per_token,
            row.moe_intermediate,
            parameters(row)?,
        ));
    }
    out.push_str("];\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row> {
        let root = crate::project_root().join(crate::codegen::UPSTREAM);
        FACT_FILES.iter().flat_map(|f| parse(&std::fs::read_to_string(root.join(f)).unwrap()).unwrap()).collect()
    }

    fn count(repo: &str) -> u64 {
        parameters(rows().iter().find(|r| r.repo == repo).unwrap()).unwrap()
    }

    #[test]
    fn parameter_counts_follow_each_layout() {
        // Qwen2.5-72B's count from its Hugging Face config.json (Qwen/Qwen2.5-72B-Instruct): 72.7B.
        assert_eq!(count("Qwen/Qwen2.5-72B"), 72_706_203_648);
        // Qwen3-0.6B ties its embeddings: 0.44 B parameters outside them, 0.6 B in all.
        let small = count("Qwen/Qwen3-0.6B");
        assert_eq!(small - 151_936 * 1024, 440_467_456);
        // A MoE counts every expert: Qwen3-30B-A3B is about 30.5 B.
        let moe = count("Qwen/Qwen3-30B-A3B");
        assert!((30_000_000_000..31_000_000_000).contains(&moe), "{moe}");
        assert!((70_000_000_000..71_000_000_000).contains(&count("meta-llama/Llama-3.3-70B-Instruct")));
    }

    #[test]
    fn notes_give_head_dim_and_the_experts() {
        let rows = rows();
        let qwen3 = rows.iter().find(|r| r.repo == "Qwen/Qwen3-0.6B").unwrap();
        assert_eq!(qwen3.head_dim, 128, "Qwen3 sets head_dim apart from hidden / heads (64)");
        let moe = rows.iter().find(|r| r.repo == "Qwen/Qwen3-30B-A3B").unwrap();
        assert_eq!((moe.experts, moe.experts_per_token, moe.moe_intermediate), (128, 8, 768));
        assert!(parse("hf_repo\tnum_hidden_layers\n").is_err(), "a file without the columns is refused");
    }
}
