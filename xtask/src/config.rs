//! Finding and loading the deployment model for a command.

use std::path::Path;

use anyhow::{Context, bail};
use gke_rl::{Deployment, Diagnostic, envsh};

use crate::report::{Report, Reported};

/// The config file picked up from the working directory when no flag names one.
pub const DEFAULT_CONFIG: &str = "gke-rl.yaml";
/// Inputs larger than this are refused rather than parsed.
pub const MAX_INPUT_BYTES: u64 = 10 * 1024 * 1024;

/// A loaded model and where it came from.
pub struct Loaded {
    pub deployment: Deployment,
    /// For generated files' headers: a path as the user gave it, or "the embedded default".
    pub source: String,
}

/// `--config FILE`, else `--env-file FILE`, else `./gke-rl.yaml` if present, else the
/// embedded default. Warnings go to stderr; errors come back already rendered.
pub fn load(config: Option<&Path>, env_file: Option<&Path>) -> anyhow::Result<Loaded> {
    let implicit = Path::new(DEFAULT_CONFIG);
    let (path, from_env_sh) = match (config, env_file) {
        (Some(path), _) => (path, false),
        (None, Some(path)) => (path, true),
        (None, None) if implicit.is_file() => (implicit, false),
        (None, None) => return Ok(Loaded { deployment: Deployment::default(), source: "the embedded default".into() }),
    };
    let text = read_input(path)?;
    let reported = |d: &Diagnostic| Reported(Report { file: path, source: &text, diagnostic: d }.to_string());
    let deployment = if from_env_sh {
        let imported = envsh::import(&text).map_err(|d| reported(&d))?;
        for warning in &imported.warnings {
            eprintln!("{}\n", reported(warning));
        }
        imported.deployment
    } else {
        gke_rl::config::from_yaml(&text).map_err(|d| reported(&d))?
    };
    Ok(Loaded { deployment, source: path.display().to_string() })
}

/// Reads a user-supplied text file, refusing huge or non-UTF-8 ones.
pub fn read_input(path: &Path) -> anyhow::Result<String> {
    let size = std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?.len();
    if size > MAX_INPUT_BYTES {
        bail!("{} is {:.1} MiB; gke-rl reads files of at most 10 MiB", path.display(), size as f64 / 1048576.0);
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", path.display()))
}
