//! Reading inputs and writing outputs: every read bounded, every write atomic.

use std::io::{Read as _, Write as _};
use std::path::Path;

use crate::CommonError;

/// Reads a text file a user named, refusing more than [`gke_rl_validate::MAX_FILE_BYTES`]
/// and non-UTF-8 text (see [`read_bytes`]).
pub fn read_text(path: &Path) -> Result<String, CommonError> {
    let bytes = read_bytes(path)?;
    if let Err(diagnostic) = gke_rl::diagnostic::utf8(&bytes) {
        return Err(CommonError::NotText { path: path.to_owned(), at: (diagnostic.line, diagnostic.column) });
    }
    Ok(String::from_utf8(bytes).expect("checked"))
}

/// Reads a file a user named ([`open_input`]), refusing more than
/// [`gke_rl_validate::MAX_FILE_BYTES`].
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, CommonError> {
    let read = |source| CommonError::Read { path: path.to_owned(), source };
    let (file, metadata) = open_input(path)?;
    let limit = gke_rl_validate::MAX_FILE_BYTES as u64;
    // Sized by the file's length up front: a `Take` gives `read_to_end` no size hint, so it
    // would start small and grow the buffer, reading again, several times per file.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len().min(limit) + 1).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes).map_err(read)?;
    if bytes.len() as u64 > limit {
        return Err(CommonError::TooLarge { path: path.to_owned(), bytes: metadata.len().max(bytes.len() as u64) });
    }
    Ok(bytes)
}

/// A file a user named, opened for reading: regular files, and the pipes of `<(command)` and
/// `/dev/stdin`. Named pipes elsewhere (opening one waits for a writer forever), sockets and
/// devices are refused before they are opened.
fn open_input(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), CommonError> {
    let read = |source| CommonError::Read { path: path.to_owned(), source };
    let metadata = std::fs::metadata(path).map_err(read)?;
    let passed_by_the_shell = path == Path::new("/dev/stdin") || path.starts_with("/dev/fd") || is_proc_fd(path);
    if let Some(kind) = special_kind(&metadata.file_type()).filter(|_| !passed_by_the_shell) {
        return Err(CommonError::NotAFile { path: path.to_owned(), kind });
    }
    Ok((std::fs::File::open(path).map_err(read)?, metadata))
}

/// The most of a saved job log read: far beyond any run's, short of an endless pipe.
pub const MAX_LOG_BYTES: u64 = 16 << 30;

/// Reads a log file a user named in chunks of text, for readers that keep only what they need:
/// memory stays one chunk whatever the size. Bytes that are not UTF-8 read as U+FFFD. The same
/// files as [`open_input`] are refused, and more than [`MAX_LOG_BYTES`].
pub fn read_log(path: &Path, mut chunk: impl FnMut(&str)) -> Result<(), CommonError> {
    let read = |source| CommonError::Read { path: path.to_owned(), source };
    let (file, metadata) = open_input(path)?;
    let mut file = file.take(MAX_LOG_BYTES + 1);
    let (mut buffer, mut kept, mut total) = (vec![0u8; 64 * 1024], 0, 0u64);
    loop {
        let n = file.read(&mut buffer[kept..]).map_err(read)?;
        total += n as u64;
        if total > MAX_LOG_BYTES {
            return Err(CommonError::TooLarge { path: path.to_owned(), bytes: metadata.len().max(total) });
        }
        let filled = kept + n;
        // A character cut by the chunk's end waits for the next read (at most 3 bytes), even
        // where invalid bytes come before it; at the end of the file it is what it is.
        let complete = if n > 0 { filled - incomplete_tail(&buffer[..filled]) } else { filled };
        chunk(&String::from_utf8_lossy(&buffer[..complete]));
        buffer.copy_within(complete..filled, 0);
        kept = filled - complete;
        if n == 0 {
            return Ok(());
        }
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 character that the next bytes may end.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: its lead is further back
        }
        let length = match byte {
            0b1100_0000..=0b1101_1111 => 2,
            0b1110_0000..=0b1110_1111 => 3,
            0b1111_0000..=0b1111_0111 => 4,
            _ => 1,
        };
        return if length > back { back } else { 0 };
    }
    0
}

/// `/proc/self/fd/N` or `/proc/<pid>/fd/N`: how some shells pass `<(command)`. Any other path
/// under /proc (`/proc/self/root/tmp/fifo`) is a path like any other.
fn is_proc_fd(path: &Path) -> bool {
    let parts: Vec<_> = path.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    matches!(parts.as_slice(), [root, proc, process, fd, n] if root == "/" && proc == "proc" && (process == "self" || number(process)) && fd == "fd" && number(n))
}

/// What a file that is neither a regular file nor a folder is.
fn special_kind(file_type: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    [
        (file_type.is_fifo(), "a named pipe"),
        (file_type.is_socket(), "a socket"),
        (file_type.is_char_device(), "a character device"),
        (file_type.is_block_device(), "a block device"),
    ]
    .into_iter()
    .find_map(|(is, kind)| is.then_some(kind))
}

/// Writes `contents` to `path` so that readers see the old file or the new one, never a
/// partial one: a temporary file created exclusively (never through a symlink) in the same
/// folder, then renamed over `path`.
pub fn write_atomically(path: &Path, contents: &[u8], executable: bool) -> Result<(), CommonError> {
    write_atomically_as(path, contents, mode(executable))
}

/// The permission bits of a file gke-rl writes.
pub fn mode(executable: bool) -> u32 {
    if executable { 0o755 } else { 0o644 }
}

/// [`write_atomically`] with the permission bits `mode`, which the temporary file has before
/// any byte is in it.
pub fn write_atomically_as(path: &Path, contents: &[u8], mode: u32) -> Result<(), CommonError> {
    write_checked(path, contents, mode, Over::Anything)
}

/// [`write_atomically_as`] over a file that must still hold `expected`: looked at once the new
/// contents are on disk beside it, just before the rename, so that an edit saved meanwhile is
/// never written over ([`CommonError::Changed`]).
pub fn replace_unchanged(path: &Path, expected: &[u8], contents: &[u8], mode: u32) -> Result<(), CommonError> {
    write_checked(path, contents, mode, Over::Text(expected))
}

/// [`write_atomically_as`] where no file is: one made meanwhile is never written over
/// ([`CommonError::Changed`]).
pub fn create_atomically(path: &Path, contents: &[u8], mode: u32) -> Result<(), CommonError> {
    write_checked(path, contents, mode, Over::Nothing)
}

/// What a write may rename its file over.
enum Over<'a> {
    Anything,
    Text(&'a [u8]),
    Nothing,
}

fn write_checked(path: &Path, contents: &[u8], mode: u32, over: Over<'_>) -> Result<(), CommonError> {
    let write = |source| CommonError::Write { path: path.to_owned(), source };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // Made and listed under the list's lock: the signal handler, which takes it too, sees every
    // temporary file that exists.
    let (mut temp, pending) = {
        let mut listed = pending_temporaries();
        let temp = tempfile::Builder::new().prefix(TEMP_PREFIX).suffix(TEMP_SUFFIX).tempfile_in(dir).map_err(write)?;
        listed.push(temp.path().to_owned());
        let pending = temp.path().to_owned();
        (temp, pending)
    };
    let written = (|| {
        use std::os::unix::fs::PermissionsExt as _;
        temp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
        temp.write_all(contents)?;
        temp.as_file().sync_all()
    })();
    // A temporary file not renamed is removed as it drops.
    let changed = || CommonError::Changed { path: path.to_owned() };
    let done = written.map_err(write).and_then(|()| match over {
        Over::Anything => temp.persist(path).map(drop).map_err(|e| write(e.error)),
        Over::Text(expected) if read_bytes(path)? != expected => Err(changed()),
        Over::Text(_) => temp.persist(path).map(drop).map_err(|e| write(e.error)),
        Over::Nothing => temp.persist_noclobber(path).map(drop).map_err(|e| match e.error.kind() {
            std::io::ErrorKind::AlreadyExists => changed(),
            _ => write(e.error),
        }),
    });
    pending_temporaries().retain(|p| *p != pending);
    done
}

const TEMP_PREFIX: &str = ".gke-rl-";
const TEMP_SUFFIX: &str = ".tmp";

/// The temporary files [`write_atomically`] has made and not yet renamed.
fn pending_temporaries() -> std::sync::MutexGuard<'static, Vec<std::path::PathBuf>> {
    static PENDING: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
    PENDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// For a command without signal handling of its own (`render`): a SIGINT, SIGTERM or SIGHUP
/// from now on removes [`write_atomically`]'s unrenamed temporary files, then ends the process
/// with 128 + the signal's number, as the default action would have.
pub fn remove_temporaries_on_signals() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    let listening = {
        let _inside = runtime.enter();
        (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?, signal(SignalKind::hangup())?)
    };
    std::thread::spawn(move || {
        let (mut interrupt, mut terminate, mut hangup) = listening;
        let number = runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => 2,
                _ = terminate.recv() => 15,
                _ = hangup.recv() => 1,
            }
        });
        // The list stays locked until the process is gone: no new temporary file is made after.
        let mut pending = pending_temporaries();
        for path in pending.drain(..) {
            let _ = std::fs::remove_file(path);
        }
        std::process::exit(128 + number);
    });
    Ok(())
}

/// Removes temporary files of [`write_atomically`] in `dir` older than a minute: what a process
/// killed mid-write (SIGKILL, a power cut) left. A younger one may be another run's, mid-write.
pub fn sweep_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten().take(100_000) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let stale = entry.metadata().ok().filter(std::fs::Metadata::is_file).and_then(|m| m.modified().ok()).and_then(|m| m.elapsed().ok());
        if name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX) && stale.is_some_and(|age| age > std::time::Duration::from_secs(60))
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character whole, wherever the 64 KiB reads cut it, even after invalid bytes;
    /// the invalid bytes as U+FFFD, and a character cut by the end of the file too.
    #[test]
    fn a_log_is_read_in_chunks_without_breaking_a_character() {
        let dir = tempfile::tempdir().unwrap();
        for pad in 0..4 {
            let mut bytes = vec![b'x'; 64 * 1024 - 2 - pad];
            bytes.extend(b"\xff\n");
            bytes.extend("• ⏱️ step\n".repeat(3).as_bytes());
            bytes.extend(b"\xe2\x80");
            std::fs::write(dir.path().join("log"), &bytes).unwrap();
            let mut text = String::new();
            read_log(&dir.path().join("log"), |chunk| text.push_str(chunk)).unwrap();
            assert_eq!(text, String::from_utf8_lossy(&bytes), "pad {pad}");
        }
        let error = read_log(Path::new("/dev/zero"), |_| {}).unwrap_err();
        assert!(matches!(error, CommonError::NotAFile { kind: "a character device", .. }), "{error}");
    }

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
        for device in ["/dev/zero", "/dev/null"] {
            let error = read_text(Path::new(device)).unwrap_err();
            assert!(matches!(error, CommonError::NotAFile { kind: "a character device", .. }), "{error}");
        }
        // `<(yes)`: an endless pipe, passed the way the shell passes it.
        let (reader, mut writer) = std::io::pipe().unwrap();
        let endless = std::thread::spawn(move || while writer.write_all(&[b'y'; 65536]).is_ok() {});
        use std::os::fd::AsRawFd as _;
        let error = read_text(Path::new(&format!("/dev/fd/{}", reader.as_raw_fd()))).unwrap_err();
        assert!(matches!(error, CommonError::TooLarge { .. }), "{error}");
        drop(reader);
        endless.join().unwrap();
        // Named pipes: crates/gke-rl-cli/tests/it/hostile.rs (`inputs_that_never_end_are_bounded_or_refused`).
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("x.yaml");
        std::fs::write(&binary, [0xff, 0xfe]).unwrap();
        assert!(matches!(read_text(&binary), Err(CommonError::NotText { .. })));
        assert!(matches!(read_text(&dir.path().join("missing")), Err(CommonError::Read { .. })));
    }
}
