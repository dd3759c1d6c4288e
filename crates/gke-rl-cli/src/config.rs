//! Finding and loading the deployment model for a command.

use std::path::{Path, PathBuf};

use gke_rl::{Deployment, Diagnostic, envsh};

use crate::diagnostics::{Located, Reported};

/// The config file picked up from the working directory when no flag names one.
pub const DEFAULT_CONFIG: &str = "gke-rl.yaml";

/// Where the model comes from, as flags shared by every command that needs one.
#[derive(clap::Args, Default)]
pub struct Source {
    /// Config file [default: ./gke-rl.yaml if present, else the embedded default]
    #[arg(long, value_name = "FILE", conflicts_with = "env_file")]
    pub config: Option<PathBuf>,
    /// Import an existing codelab env.sh instead of a config file
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
}

impl Source {
    pub fn load(&self) -> anyhow::Result<Loaded> {
        load(self.config.as_deref(), self.env_file.as_deref())
    }

    /// The flags that name the same source to another command, as words.
    pub fn flags(&self) -> Vec<String> {
        let flag = |name: &str, path: &Path| [name.to_owned(), path.display().to_string()];
        self.config
            .as_deref()
            .map(|p| flag("--config", p))
            .into_iter()
            .chain(self.env_file.as_deref().map(|p| flag("--env-file", p)))
            .flatten()
            .collect()
    }

    /// Whether a flag names the model's source (rather than the default lookup).
    pub fn is_explicit(&self) -> bool {
        self.config.is_some() || self.env_file.is_some()
    }
}

/// Where generated files go, as flags shared by every command that writes them.
#[derive(clap::Args)]
pub struct Output {
    /// Output directory
    #[arg(long, value_name = "DIR", default_value = "out")]
    pub out: PathBuf,
    /// Overwrite files in DIR that gke-rl did not generate; render also writes what fails validation
    #[arg(long)]
    pub force: bool,
}

/// A loaded model and where it came from.
pub struct Loaded {
    pub deployment: Deployment,
    /// For generated files' headers: a path as the user gave it, or "the embedded default".
    pub source: String,
    /// An env.sh's variables left as placeholders, for which gke-rl's defaults stand in.
    pub defaulted: Vec<&'static str>,
    /// The YAML config, where one was read: its path and text, where a render's findings are
    /// said.
    pub config: Option<(PathBuf, String)>,
}

impl Loaded {
    /// On a cluster gke-rl did not create, the deployment as deploy fitted it to the cluster,
    /// from what it found there (`.gke-rl/<cluster>/found.json`, the default deployment
    /// folder's), where deploy ran; what the config names itself stays.
    pub fn fitted_to_cluster(mut self) -> anyhow::Result<Self> {
        let d = &mut self.deployment;
        if !d.project.existing_cluster {
            return Ok(self);
        }
        let path = gke_rl_ops::default_folder(d).join(gke_rl::lifecycle::existing::FOUND_FILE);
        let text = match gke_rl_ops::files::read_text(&path) {
            Ok(text) => text,
            Err(gke_rl_ops::CommonError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Ok(self),
            Err(e) => return Err(anyhow::anyhow!("{}", gke_rl_ops::chain(&e))),
        };
        let found: gke_rl::lifecycle::existing::Found = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!("{}:{}:{}: {e}\nhelp: run `gke-rl deploy` again to write it anew", path.display(), e.line(), e.column())
        })?;
        found.apply(d);
        Ok(self)
    }

    /// Every artifact of the model.
    pub fn artifacts(&self) -> anyhow::Result<gke_rl::Artifacts> {
        crate::artifacts(&self.deployment, &self.source)
    }
}

/// `--config FILE`, else `--env-file FILE`, else `./gke-rl.yaml` if present, else the
/// embedded default. Warnings go to stderr; errors come back already rendered.
fn load(config: Option<&Path>, env_file: Option<&Path>) -> anyhow::Result<Loaded> {
    let implicit = Path::new(DEFAULT_CONFIG);
    let (path, from_env_sh) = match (config, env_file) {
        (Some(path), _) => (path, false),
        (None, Some(path)) => (path, true),
        (None, None) if implicit.is_file() => (implicit, false),
        (None, None) => {
            return Ok(Loaded {
                deployment: Deployment::default(),
                source: "the embedded default".into(),
                defaulted: Vec::new(),
                config: None,
            });
        }
    };
    let text = read_input(path)?;
    let reported = |d: &Diagnostic| Reported(Located { file: path, source: &text, diagnostic: d }.to_string());
    let (deployment, defaulted) = if from_env_sh {
        let imported = envsh::import(&text).map_err(|d| reported(&d))?;
        for warning in &imported.warnings {
            crate::terminal::errln!("{}\n", reported(warning));
        }
        (imported.deployment, imported.defaulted)
    } else {
        (gke_rl::config::from_yaml(&text).map_err(|d| reported(&d))?, Vec::new())
    };
    let config = (!from_env_sh).then(|| (path.to_owned(), text));
    Ok(Loaded { deployment, source: path.display().to_string(), defaulted, config })
}

/// Reads a user-supplied text file, refusing huge or non-UTF-8 ones.
pub fn read_input(path: &Path) -> anyhow::Result<String> {
    Ok(gke_rl_ops::files::read_text(path)?)
}
