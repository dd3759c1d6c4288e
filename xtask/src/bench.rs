//! `cargo xtask bench <target>`: criterion benchmarks, reported against their targets.

use anyhow::Context;
use xshell::{Shell, cmd};

use crate::project_root;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Target {
    /// Render the full default artifact set in process (target: under 200 µs)
    Render,
}

pub fn run(sh: &Shell, target: Target) -> anyhow::Result<()> {
    let _root = sh.push_dir(project_root());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let (bench, id, target_ns) = match target {
        Target::Render => ("render", "render the default artifact set", 200_000.0),
    };
    cmd!(sh, "{cargo} bench --package gke-rl --bench {bench}").run()?;
    let estimates = project_root().join("target/criterion").join(id).join("new/estimates.json");
    let json: serde_json::Value =
        serde_json::from_str(&sh.read_file(&estimates)?).with_context(|| format!("cannot parse {}", estimates.display()))?;
    let median = json["median"]["point_estimate"].as_f64().context("no median in criterion's estimates")?;
    eprintln!("{id}: median {:.1} µs; target {:.0} µs; {:.1}x under the target", median / 1000.0, target_ns / 1000.0, target_ns / median);
    Ok(())
}
