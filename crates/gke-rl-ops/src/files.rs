//! Reading inputs and writing outputs: every read bounded, every write atomic.

use std::io::{Read as _, Write as _};
use std::path::Path;

use crate::Error;

/// Reads a text file a user named, refusing more than [`gke_rl::validate::MAX_FILE_BYTES`]
/// (whatever the file is: a pipe or a device is bounded the same way) and non-UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, Error> {
    let read = |source| Error::Read { path: path.to_owned(), source };
    let limit = gke_rl::validate::MAX_FILE_BYTES as u64;
    let file = std::fs::File::open(path).map_err(read)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(read)?;
    if bytes.len() as u64 > limit {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0).max(bytes.len() as u64);
        return Err(Error::TooLarge { path: path.to_owned(), bytes: size });
    }
    String::from_utf8(bytes).map_err(|_| Error::NotText { path: path.to_owned() })
}

/// Writes `contents` to `path` so that readers see the old file or the new one, never a
/// partial one: a temporary file created exclusively (never through a symlink) in the same
/// folder, then renamed over `path`.
pub fn write_atomically(path: &Path, contents: &[u8], executable: bool) -> Result<(), Error> {
    let write = |source| Error::Write { path: path.to_owned(), source };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new().prefix(".gke-rl-").suffix(".tmp").tempfile_in(dir).map_err(write)?;
    temp.write_all(contents).map_err(write)?;
    temp.as_file().sync_all().map_err(write)?;
    let mode = if executable { 0o755 } else { 0o644 };
    use std::os::unix::fs::PermissionsExt as _;
    temp.as_file().set_permissions(std::fs::Permissions::from_mode(mode)).map_err(write)?;
    temp.persist(path).map_err(|e| write(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_whole_files_and_leave_no_temp_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.yaml");
        write_atomically(&path, b"one\n", false).unwrap();
        write_atomically(&path, b"two\n", true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o755);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left");
    }

    #[test]
    fn reads_are_bounded_whatever_the_file_is() {
        let error = read_text(Path::new("/dev/zero")).unwrap_err();
        assert!(matches!(error, Error::TooLarge { .. }), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("x.yaml");
        std::fs::write(&binary, [0xff, 0xfe]).unwrap();
        assert!(matches!(read_text(&binary), Err(Error::NotText { .. })));
        assert!(matches!(read_text(&dir.path().join("missing")), Err(Error::Read { .. })));
    }
}
