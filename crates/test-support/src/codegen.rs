//! Generated files that are committed, as rust-analyzer's sourcegen keeps them: each is compared
//! with what the code makes now, and written instead when asked (`cargo xtask codegen` asks, by
//! [`WRITE`]). Every file says it is `@generated` near its top, but JSON, which has no comments.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// The variable and value that make a codegen test write its files instead of failing.
pub const WRITE: (&str, &str) = ("GKE_RL_CODEGEN", "write");

/// The generated files of one run: written, or compared and the stale ones listed.
pub struct Generated {
    root: PathBuf,
    write: bool,
    stale: Vec<String>,
}

impl Generated {
    /// Files under `root`; `write` writes them, else they are compared.
    pub fn new(root: &Path, write: bool) -> Self {
        Generated { root: root.to_owned(), write, stale: Vec::new() }
    }

    /// Files under the repository's root, written when the environment says [`WRITE`].
    pub fn from_env() -> Self {
        let write = std::env::var(WRITE.0).is_ok_and(|value| value == WRITE.1);
        Generated::new(&crate::project_root(), write)
    }

    /// `relative` holds `contents`, or is written to (through an exclusive temp file beside it,
    /// then a rename), or is listed as stale.
    pub fn file(&mut self, relative: &str, contents: &str) -> Result<(), String> {
        let marked = contents.lines().take(4).any(|l| l.contains("@generated") || l.contains(gke_rl::render::GENERATED_MARKER));
        if !marked && !relative.ends_with(".json") {
            return Err(format!("{relative} would not say it is @generated near its top"));
        }
        let path = self.root.join(relative);
        if std::fs::read_to_string(&path).is_ok_and(|existing| existing == contents) {
            return Ok(());
        }
        if !self.write {
            self.stale.push(relative.to_owned());
            return Ok(());
        }
        let written = (|| {
            let folder = path.parent().expect("relative paths have a parent");
            std::fs::create_dir_all(folder)?;
            // Readable by all, as a checkout's files are, and on disk before it takes the name.
            let mut temp = tempfile::Builder::new().permissions(std::fs::Permissions::from_mode(0o644)).tempfile_in(folder)?;
            temp.write_all(contents.as_bytes())?;
            temp.as_file().sync_all()?;
            temp.persist(&path).map_err(|e| e.error)?;
            Ok::<_, std::io::Error>(())
        })();
        written.map_err(|e| format!("cannot write {relative}: {e}"))?;
        eprintln!("updated {relative}");
        Ok(())
    }

    /// `relative` is no longer generated: removed, or listed as stale.
    pub fn gone(&mut self, relative: &str) -> Result<(), String> {
        if !self.write {
            self.stale.push(format!("{relative} (no longer generated)"));
            return Ok(());
        }
        std::fs::remove_file(self.root.join(relative)).map_err(|e| format!("cannot remove {relative}: {e}"))?;
        eprintln!("removed {relative}");
        Ok(())
    }

    /// Ok when nothing is stale; else which files, and the command that refreshes them.
    pub fn finish(self) -> Result<(), String> {
        match self.stale.is_empty() {
            true => Ok(()),
            false => Err(format!(
                "generated files are not up to date: {}\nhelp: run `cargo xtask codegen` and commit the result",
                self.stale.join(", ")
            )),
        }
    }
}
