//! `validate --fix`: the edits the validator computes, made in the files they are for, as
//! `cargo fix` makes the compiler's. A file is written only where git can undo it (tracked and
//! unchanged since the last commit), or where the caller allows it; otherwise the edits are a
//! dry run, shown and not made.

use std::path::{Path, PathBuf};

use gke_rl::diagnostic::Fix;
use gke_rl::lifecycle::Command;
use gke_rl_validate::Finding;

use crate::{CommonError, Env};

/// A file read from disk: the name its findings carry, its path, its text as read.
#[derive(Debug, Clone, Copy)]
pub struct OnDisk<'a> {
    /// The name it is shown by, which its findings carry.
    pub name: &'a str,
    /// Where it is: a path of any bytes, never rebuilt from the name.
    pub path: &'a Path,
    /// Its text.
    pub text: &'a str,
}

/// One file's edits.
#[derive(Debug)]
pub struct Edited {
    /// The name it is shown by.
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// Its text as read.
    pub before: String,
    /// Its text with the edits made.
    pub after: String,
    /// What each edit made does, in the order of the file.
    pub made: Vec<String>,
    /// Why the file is not written without leave (`--allow-dirty`), if it is not clean in git.
    pub unsaved: Option<String>,
}

/// The edits of `findings` for `files`: the files that change. A finding in a file not in
/// `files` (a render's, never written) has nothing to edit.
pub fn edits(env: &Env, files: &[OnDisk<'_>], findings: &[Finding]) -> Vec<Edited> {
    files
        .iter()
        .filter_map(|file| {
            let fixes = findings.iter().filter(|f| f.file == file.name).filter_map(|f| f.diagnostic.fix.as_deref());
            let (after, made) = Fix::apply_all(file.text, fixes);
            (!made.is_empty()).then(|| Edited {
                name: file.name.to_owned(),
                path: file.path.to_owned(),
                before: file.text.to_owned(),
                made: made.iter().map(|f| f.title.clone()).collect(),
                after,
                unsaved: unsaved(env, file.path),
            })
        })
        .collect()
}

/// Writes each edited file in place, atomically (a reader sees the old file or the new one) and
/// with its permissions. Only a regular file is written: a link's target is not the file named.
pub fn write(edited: &[Edited]) -> Result<(), CommonError> {
    use std::os::unix::fs::PermissionsExt as _;
    for file in edited {
        let write = |source| CommonError::Write { path: file.path.clone(), source };
        let metadata = std::fs::symlink_metadata(&file.path).map_err(write)?;
        if !metadata.file_type().is_file() {
            return Err(write(std::io::Error::other("not a regular file (a link or another kind): not edited")));
        }
        // Git may take seconds: an edit saved since the file was read is never written over.
        crate::files::replace_unchanged(&file.path, file.before.as_bytes(), file.after.as_bytes(), metadata.permissions().mode() & 0o7777)?;
    }
    Ok(())
}

/// Why git could not undo an edit of `path`: not in a git work tree, not tracked, ignored, or
/// changed since the last commit. `None` when it is clean.
fn unsaved(env: &Env, path: &Path) -> Option<String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // git is asked by name, and a name that is not UTF-8 cannot be passed on unchanged.
    let (Some(name), Some(dir)) = (path.file_name().and_then(|n| n.to_str()), dir.to_str()) else {
        return Some("its path is not UTF-8, so git cannot be asked about it".to_owned());
    };
    let status = Command {
        program: "git".to_owned(),
        // No hook of the repository's runs (fsmonitor), the name is a name and not a pattern,
        // and an untracked file is listed whatever the repository's settings.
        args: ["-c", "core.fsmonitor=", "--literal-pathspecs", "status", "--porcelain", "--ignored", "--untracked-files=all", "--", name]
            .map(str::to_owned)
            .to_vec(),
        dir: Some(dir.to_owned()),
    };
    match env.runner.read(&status, &[]) {
        Ok(out) if out.trim().is_empty() => None,
        Ok(out) if out.starts_with("??") => Some("it is not in git".to_owned()),
        Ok(out) if out.starts_with("!!") => Some("git ignores it".to_owned()),
        Ok(_) => Some("it has changes that are not committed".to_owned()),
        Err(crate::RunError::Failed { stderr, .. }) if stderr.contains("not a git repository") => {
            Some("it is not in a git work tree".to_owned())
        }
        Err(e) => Some(format!("git cannot say whether it is committed ({e})")),
    }
}
