//! Ray's working-dir packaging: which paths go in, the stored zip, and the package URI,
//! computed as `ray._private.runtime_env.packaging` computes them (Ray 2.54), so a package
//! uploaded here is found by Python clients and the other way round.
//!
//! Walk: depth first from the root; at every directory its `.gitignore` (unless disabled)
//! and `.rayignore` apply to its subtree, relative to it; a matched path is skipped with
//! everything under it; symlinks are followed. Hash: eight ASCII `0` bytes, XORed with the
//! first 8 bytes of `sha1(relative path + file bytes)` for every visited path, the root `.`
//! and directories included. Zip: stored, files and empty directories only, ZIP64 past 65,535
//! entries as Python's `zipfile` writes it.
//!
//! Where Ray would upload what the user never meant to, gke-rl does not, and says so: a
//! symlink to outside the working dir is refused unless [`Options::follow_links_out`] (Ray
//! would upload `/etc/shadow` through it), [`gke_rl::secrets::CREDENTIAL_FILES`] are left out
//! unless [`Options::credential_files`], and a path whose name holds a secret is refused. A
//! folder with none of these gets Ray's URI exactly. The walk is bounded in paths, depth and
//! visits to one directory, and an ignore file in size.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gke_rl_gitwildmatch::PatternSet;

use crate::Error;
use sha1::{Digest, Sha1};

/// The dashboard refuses request bodies over 100 MiB (aiohttp `client_max_size`).
pub const MAX_UPLOAD_BYTES: u64 = 100 * 1024 * 1024;
/// Ray warns about every file at least this large.
pub const LARGE_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// The most paths a walk visits: a zip entry takes at least 76 bytes, so no more than about
/// 1.4 million fit in an upload.
pub const MAX_PATHS: usize = 1 << 20;
/// The deepest a walk goes (Ray's recursive walk fails at Python's recursion limit, 1,000).
pub const MAX_DEPTH: usize = 256;
/// The most times a walk enters one directory through symlinks: a few links to one folder
/// are fine, a maze of them (2^40 paths through 40 folders) is not.
pub const MAX_DIRECTORY_VISITS: usize = 16;
/// The largest `.gitignore` or `.rayignore` read.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;
/// The most bytes of ignore files read in one walk: each is parsed and matched against every
/// path under it.
pub const MAX_IGNORE_BYTES: u64 = 4 * MAX_IGNORE_FILE_BYTES;
/// `RAY_RUNTIME_ENV_DEFAULT_EXCLUDES` (Ray 2.54; 2.46 has none).
pub const DEFAULT_EXCLUDES: &[&str] = &[".git", ".venv", "venv", "__pycache__"];

/// How a directory is walked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Patterns applied from the root before `excludes`.
    pub default_excludes: Vec<String>,
    /// The runtime env's `excludes`.
    pub excludes: Vec<String>,
    /// Read `.gitignore` files (Ray does unless `RAY_RUNTIME_ENV_IGNORE_GITIGNORE=1`).
    pub gitignore: bool,
    /// Follow symlinks that lead out of the working dir, as Ray does, instead of refusing them.
    pub follow_links_out: bool,
    /// Upload [`gke_rl::secrets::CREDENTIAL_FILES`], as Ray does, instead of leaving them out.
    pub credential_files: bool,
}

impl Options {
    /// The options Ray's packager uses for `runtime_env`: its `excludes`, and the variables
    /// Ray reads (`var` looks one up): `RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES` and
    /// `RAY_RUNTIME_ENV_IGNORE_GITIGNORE`.
    pub fn for_runtime_env(
        runtime_env: &serde_json::Map<String, serde_json::Value>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Options, Error> {
        let mut options = Options::default();
        if let Some(defaults) = var("RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES") {
            options.default_excludes = defaults.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
        }
        options.gitignore = var("RAY_RUNTIME_ENV_IGNORE_GITIGNORE").as_deref() != Some("1");
        if let Some(excludes) = runtime_env.get("excludes") {
            let not_strings = || Error::RuntimeEnv { field: "excludes", reason: "must be a list of strings" };
            for item in excludes.as_array().ok_or_else(not_strings)? {
                options.excludes.push(item.as_str().ok_or_else(not_strings)?.to_owned());
            }
        }
        Ok(options)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            default_excludes: DEFAULT_EXCLUDES.iter().map(|s| (*s).to_owned()).collect(),
            excludes: Vec::new(),
            gitignore: true,
            follow_links_out: false,
            credential_files: false,
        }
    }
}

fn too_large_message(total: u64, largest: &[(String, u64)]) -> String {
    let mut message = format!(
        "the working dir holds {} of files, over the {} the Ray dashboard accepts; nothing was uploaded. Largest files:",
        mib(total),
        mib(MAX_UPLOAD_BYTES)
    );
    for (path, size) in largest {
        message.push_str(&format!("\n  {:>10}  {path}", mib(*size)));
    }
    message.push_str("\nhelp: add lines like these to .rayignore:");
    for (path, _) in largest {
        message.push_str(&format!("\n  /{}", gitwildmatch_escape(path)));
    }
    message
}

/// `GitWildMatchPattern.escape`: a path as a pattern that matches only itself.
fn gitwildmatch_escape(path: &str) -> String {
    path.chars().fold(String::new(), |mut out, c| {
        if "[]!*#?".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

/// Sizes for people: `12.3 MiB`.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1048576.0)
}

/// A value that must not appear in any packaged file, with the name to report.
#[derive(Clone, Copy)]
pub struct Secret<'a> {
    /// The environment variable it came from.
    pub name: &'a str,
    /// The value to look for.
    pub value: &'a str,
}

#[derive(Debug)]
enum Content {
    Disk(Disk),
    Memory(Vec<u8>),
    /// A broken symlink or an unreadable special file: Ray hashes its path and zips nothing.
    Unreadable,
}

/// A file the walk saw: where, which file it was, and where it must still be when read.
#[derive(Debug)]
struct Disk {
    path: PathBuf,
    /// Its device and inode when the walk saw it.
    identity: (u64, u64),
    /// Where what is read must be, when links out of the working dir are refused.
    confine: Option<Arc<Confine>>,
}

/// The working dir, canonical, and the credential files that must not be read in it.
#[derive(Debug)]
struct Confine {
    root: PathBuf,
    credentials: Option<PatternSet>,
}

impl Disk {
    /// The file, opened and checked to be the one the walk saw: a file swapped (for a link out
    /// of the working dir, or for a credential file the walk left out) is not read.
    fn open(&self) -> Result<fs::File, Error> {
        use std::os::unix::fs::MetadataExt as _;
        let file = open_nonblocking(&self.path, false).map_err(|source| Error::Io { path: self.path.clone(), source })?;
        let meta = file.metadata().map_err(|source| Error::Io { path: self.path.clone(), source })?;
        if !meta.is_file() || (meta.dev(), meta.ino()) != self.identity {
            return Err(Error::Changed { path: self.path.clone() });
        }
        confined(&file, &self.path, self.confine.as_deref())?;
        Ok(file)
    }
}

/// Opens `path` to read, without blocking on a named pipe.
fn open_nonblocking(path: &Path, directory: bool) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut flags = rustix::fs::OFlags::NONBLOCK;
    if directory {
        flags |= rustix::fs::OFlags::DIRECTORY;
    }
    fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path)
}

/// Refuses an open file or folder that is not inside the working dir, or is a credential file
/// there, by where the open file really is (Linux names it in /proc; elsewhere the path is
/// resolved again): a folder swapped for a link after the walk passed it leads nowhere.
fn confined(file: &fs::File, path: &Path, confine: Option<&Confine>) -> Result<(), Error> {
    let Some(Confine { root, credentials }) = confine else { return Ok(()) };
    #[cfg(target_os = "linux")]
    let real = {
        use std::os::fd::AsRawFd as _;
        let _ = path;
        fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
    };
    #[cfg(not(target_os = "linux"))]
    let real = {
        let _ = file;
        fs::canonicalize(path)
    };
    match real {
        Ok(real) => match real.strip_prefix(root) {
            Ok(inside) if credentials.as_ref().is_some_and(|set| set.is_match(&inside.to_string_lossy())) => {
                Err(Error::Changed { path: path.to_owned() })
            }
            Ok(_) => Ok(()),
            Err(_) => Err(Error::LinkOut { link: path.to_owned(), target: real }),
        },
        Err(source) => Err(Error::Io { path: path.to_owned(), source }),
    }
}

#[derive(Debug)]
enum Entry {
    Dir { empty: bool },
    File { content: Content, size: u64, executable: bool },
}

/// The paths a package will hold, before any file is read: sizes are known, so an
/// over-limit folder is refused before reading or uploading anything.
#[derive(Debug)]
pub struct Plan {
    /// Relative, `/`-separated paths in walk order; the root is `.`.
    entries: Vec<(String, Entry)>,
    /// The `.gitignore` and `.rayignore` files that applied, relative to the root.
    pub ignore_files: Vec<String>,
    /// Credential files Ray would have uploaded and gke-rl left out, relative to the root
    /// (a folder with a trailing `/`).
    pub credentials_left_out: Vec<String>,
}

/// A built package: its URI and zip bytes.
#[derive(Debug)]
pub struct Package {
    /// `gcs://_ray_pkg_<16 hex>.zip`.
    pub uri: String,
    /// The stored (uncompressed) zip.
    pub zip: Vec<u8>,
    /// Files (not directories) in the zip.
    pub file_count: usize,
}

impl Package {
    /// Whether the zip's bytes hold `value` (its files are stored as they are, so a file that
    /// holds it does).
    pub fn holds(&self, value: &str) -> bool {
        memchr::memmem::find(&self.zip, value.as_bytes()).is_some()
    }
}

impl Plan {
    /// Walks `dir` with Ray's exclusion rules, refusing a path whose name holds one of
    /// `secrets` before anything names what is under it.
    pub fn for_dir(dir: &Path, options: &Options, secrets: &[Secret<'_>]) -> Result<Plan, Error> {
        Plan::walk(dir, options, secrets).map_err(|error| hiding(error, secrets))
    }

    fn walk(dir: &Path, options: &Options, secrets: &[Secret<'_>]) -> Result<Plan, Error> {
        if !dir.is_dir() {
            return Err(Error::NotADirectory { path: dir.to_owned() });
        }
        let root_patterns = options.default_excludes.iter().chain(&options.excludes).map(String::as_str);
        let root_set = PatternSet::from_lines(root_patterns).map_err(|error| Error::Pattern { file: "excludes".into(), error })?;
        let credentials = match options.credential_files {
            true => None,
            false => {
                Some(PatternSet::from_lines(gke_rl::secrets::CREDENTIAL_FILES.iter().copied()).expect("the credential patterns parse"))
            }
        };
        let root = fs::canonicalize(dir).map_err(|source| Error::Io { path: dir.to_owned(), source })?;
        if let Some(pattern) = credentials.as_ref().and(credential_folder(&root)) {
            return Err(Error::CredentialFolder { path: dir.to_owned(), pattern });
        }
        let confine = (!options.follow_links_out).then(|| Arc::new(Confine { root: root.clone(), credentials: credentials.clone() }));
        let mut walk = Walk {
            plan: Plan { entries: Vec::new(), ignore_files: Vec::new(), credentials_left_out: Vec::new() },
            gitignore: options.gitignore,
            root,
            confine,
            credentials,
            secrets,
            ancestors: Vec::new(),
            visits: std::collections::HashMap::new(),
            paths: 0,
            ignore_bytes: 0,
        };
        let mut active = vec![(".".to_owned(), root_set)];
        walk.travel(dir, ".", None, &mut active)?;
        Ok(walk.plan)
    }

    /// A job folder made of the given files (name, contents, executable), nothing else.
    pub fn for_files(files: Vec<(String, Vec<u8>, bool)>) -> Plan {
        let mut entries = vec![(".".to_owned(), Entry::Dir { empty: files.is_empty() })];
        for (name, bytes, executable) in files {
            let size = bytes.len() as u64;
            entries.push((name, Entry::File { content: Content::Memory(bytes), size, executable }));
        }
        Plan { entries, ignore_files: Vec::new(), credentials_left_out: Vec::new() }
    }

    /// Total bytes of file contents.
    pub fn total_size(&self) -> u64 {
        self.files().map(|(_, size)| size).sum()
    }

    /// Files at least [`LARGE_FILE_BYTES`] large, largest first.
    pub fn large_files(&self) -> Vec<(String, u64)> {
        self.largest_first().into_iter().take_while(|(_, size)| *size >= LARGE_FILE_BYTES).collect()
    }

    fn files(&self) -> impl Iterator<Item = (&str, u64)> {
        self.entries.iter().filter_map(|(path, entry)| match entry {
            Entry::File { size, .. } => Some((path.as_str(), *size)),
            Entry::Dir { .. } => None,
        })
    }

    /// Every file with its size, largest first (ties by path).
    fn largest_first(&self) -> Vec<(String, u64)> {
        let mut files: Vec<_> = self.files().map(|(p, s)| (p.to_owned(), s)).collect();
        files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        files
    }

    /// Refuses a plan whose files exceed the upload limit, naming the largest five, or whose
    /// zip would: names and headers count too, and many files with long names add up.
    pub fn check_size(&self) -> Result<(), Error> {
        let total = self.total_size();
        if total > MAX_UPLOAD_BYTES {
            let mut largest = self.largest_first();
            largest.truncate(5);
            let message = too_large_message(total, &largest);
            return Err(Error::TooLarge { total, largest, message });
        }
        let layout = ZipLayout::of(&self.entries);
        match layout.local + layout.central {
            bytes if bytes > MAX_UPLOAD_BYTES => Err(Error::ZipTooLarge {
                bytes,
                files: layout.count,
                message: format!(
                    "the working dir's {} files and folders zip to {}, over the {} the Ray dashboard accepts; exclude some in .rayignore",
                    layout.count,
                    mib(bytes),
                    mib(MAX_UPLOAD_BYTES)
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Reads and hashes every file on all cores, refusing the package if a file holds one of
    /// `secrets`. `submit` zips (reading the files again) only if the cluster lacks the package.
    pub fn hash(self, secrets: &[Secret<'_>]) -> Result<Hashed, Error> {
        self.hash_unhidden(secrets).map_err(|error| hiding(error, secrets))
    }

    fn hash_unhidden(self, secrets: &[Secret<'_>]) -> Result<Hashed, Error> {
        self.check_size()?;
        let digests = parallel_map(self.entries.iter().collect(), Vec::new, |buffer: &mut Vec<u8>, (path, entry)| {
            buffer.clear();
            match entry {
                Entry::File { content: Content::Disk(disk), size, .. } => {
                    let io = |source| Error::Io { path: disk.path.clone(), source };
                    disk.open()?.take(size + 1).read_to_end(buffer).map_err(io)?;
                    if buffer.len() as u64 != *size {
                        return Err(Error::Changed { path: disk.path.clone() });
                    }
                }
                Entry::File { content: Content::Memory(bytes), .. } => buffer.extend_from_slice(bytes),
                Entry::File { content: Content::Unreadable, .. } | Entry::Dir { .. } => {}
            }
            digest(path, buffer, secrets)
        })?;
        Ok(Hashed { uri: uri(&digests), contents: Contents::Entries(self.entries) })
    }

    /// Hash and zip in one pass: each file is read straight into its place in the zip and
    /// hashed there.
    pub fn build(self, secrets: &[Secret<'_>]) -> Result<Package, Error> {
        self.check_size().map_err(|error| hiding(error, secrets))?;
        let (zip, digests) =
            write_zip(&self.entries, |path, bytes| digest(path, bytes, secrets)).map_err(|error| hiding(error, secrets))?;
        let file_count = file_count(&self.entries);
        Ok(Package { uri: uri(&digests), zip, file_count })
    }
}

/// A package whose URI is known; its files are read again only if it is zipped.
#[derive(Debug)]
pub struct Hashed {
    /// `gcs://_ray_pkg_<16 hex>.zip` as Ray computes it for a directory, or
    /// `gcs://_ray_pkg_<sha1 of the file>.zip` for a ready-made zip.
    pub uri: String,
    contents: Contents,
}

#[derive(Debug)]
enum Contents {
    Entries(Vec<(String, Entry)>),
    /// A local `.zip` given as the working dir: Ray uploads it as it is.
    Zip {
        bytes: Vec<u8>,
        file_count: usize,
    },
}

impl Hashed {
    /// A local `.zip` file as the working dir, named by the SHA-1 of its bytes, as Ray does.
    /// Every entry is unpacked (within [`MAX_UNPACKED_ZIP_BYTES`]) and refused if it holds one
    /// of `secrets`, as a folder's files are.
    pub fn for_zip_file(path: &Path, secrets: &[Secret<'_>]) -> Result<Hashed, Error> {
        let io = |source| Error::Io { path: path.to_owned(), source };
        let name = path.display().to_string();
        let mut bytes = Vec::new();
        fs::File::open(path).map_err(io)?.take(MAX_UPLOAD_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > MAX_UPLOAD_BYTES {
            let size = fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
            let largest = vec![(name, size)];
            return Err(Error::TooLarge { total: size, message: too_large_message(size, &largest), largest });
        }
        let file_count = scan_zip(&name, &bytes, secrets).map_err(|error| hiding(error, secrets))?;
        let hex: String = Sha1::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        Ok(Hashed { uri: format!("gcs://_ray_pkg_{hex}.zip"), contents: Contents::Zip { bytes, file_count } })
    }

    /// Files (not directories) the zip will hold.
    pub fn file_count(&self) -> usize {
        match &self.contents {
            Contents::Entries(entries) => file_count(entries),
            Contents::Zip { file_count, .. } => *file_count,
        }
    }

    /// The stored zip: files and empty directories, with their modes, read again. Refused
    /// when they no longer hash to the URI: they changed since they were hashed (and checked
    /// for secrets), and the zip would not be the package the URI names.
    pub fn zip(&self) -> Result<Package, Error> {
        let file_count = self.file_count();
        let zip = match &self.contents {
            Contents::Entries(entries) => {
                let (zip, digests) = write_zip(entries, |path, bytes| digest(path, bytes, &[]))?;
                if uri(&digests) != self.uri {
                    return Err(Error::PackageChanged { uri: self.uri.clone() });
                }
                zip
            }
            Contents::Zip { bytes, .. } => bytes.clone(),
        };
        Ok(Package { uri: self.uri.clone(), zip, file_count })
    }
}

/// The most bytes a `.zip` working dir may unpack to while it is scanned: Ray unpacks it on
/// every node, and a zip bomb must not take this machine's memory or time first.
pub const MAX_UNPACKED_ZIP_BYTES: u64 = 4 * MAX_UPLOAD_BYTES;

/// Unpacks every entry of the zip `name` in 1 MiB pieces and refuses one that holds a secret;
/// the number of files.
fn scan_zip(name: &str, bytes: &[u8], secrets: &[Secret<'_>]) -> Result<usize, Error> {
    let unreadable = |reason: String| Error::BadZip { path: name.to_owned(), reason };
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| unreadable(e.to_string()))?;
    let secrets: Vec<Secret<'_>> = secrets.iter().copied().filter(|s| !s.value.is_empty()).collect();
    // A secret may straddle two pieces: each piece is scanned with the tail of the one before.
    let overlap = secrets.iter().map(|s| s.value.len()).max().unwrap_or(1) - 1;
    let mut budget = MAX_UNPACKED_ZIP_BYTES;
    let mut files = 0;
    let mut window = Vec::with_capacity(overlap + (1 << 20));
    let mut piece = vec![0u8; 1 << 20];
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|e| unreadable(e.to_string()))?;
        if entry.is_dir() {
            continue;
        }
        files += 1;
        let entry_name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        refuse_secret_name(&entry_name, &secrets)?;
        window.clear();
        loop {
            let read = entry.read(&mut piece).map_err(|e| unreadable(format!("{entry_name}: {e}")))?;
            if read == 0 {
                break;
            }
            budget = budget.checked_sub(read as u64).ok_or_else(|| {
                unreadable(format!("it unpacks to more than {} MiB; gke-rl stopped reading it", MAX_UNPACKED_ZIP_BYTES >> 20))
            })?;
            window.extend_from_slice(&piece[..read]);
            if let Some(secret) = secrets.iter().find(|s| memchr::memmem::find(&window, s.value.as_bytes()).is_some()) {
                return Err(Error::SecretInZip { zip: name.to_owned(), entry: entry_name, name: secret.name.to_owned() });
            }
            let keep = window.len().min(overlap);
            window.drain(..window.len() - keep);
        }
    }
    // Names of folders, comments and extra fields are the zip's own records.
    if let Some(secret) = secrets.iter().find(|s| memchr::memmem::find(bytes, s.value.as_bytes()).is_some()) {
        let entry = "its own records (a folder's name, a comment or an extra field)".to_owned();
        return Err(Error::SecretInZip { zip: name.to_owned(), entry, name: secret.name.to_owned() });
    }
    Ok(files)
}

fn file_count(entries: &[(String, Entry)]) -> usize {
    entries.iter().filter(|(_, e)| matches!(e, Entry::File { content: Content::Disk(_) | Content::Memory(_), .. })).count()
}

/// An entry's share of the package hash: the first 8 bytes of `sha1(path + bytes)`. Refuses
/// bytes holding a secret's value.
fn digest(path: &str, bytes: &[u8], secrets: &[Secret<'_>]) -> Result<[u8; 8], Error> {
    refuse_secret_name(path, secrets)?;
    if let Some(secret) = secrets.iter().find(|s| !s.value.is_empty() && memchr::memmem::find(bytes, s.value.as_bytes()).is_some()) {
        return Err(Error::SecretInFile { path: path.to_owned(), name: secret.name.to_owned() });
    }
    let mut sha = Sha1::new();
    sha.update(path.as_bytes());
    sha.update(bytes);
    let digest = sha.finalize();
    let mut first = [0; 8];
    first.copy_from_slice(&digest[..8]);
    Ok(first)
}

/// `gcs://_ray_pkg_<hex>.zip` from eight ASCII `0` bytes XORed with every entry's digest.
fn uri(digests: &[[u8; 8]]) -> String {
    let mut acc = *b"00000000";
    for digest in digests {
        for (a, d) in acc.iter_mut().zip(digest) {
            *a ^= d;
        }
    }
    let hex: String = acc.iter().map(|b| format!("{b:02x}")).collect();
    format!("gcs://_ray_pkg_{hex}.zip")
}

/// Runs `f` over `items` on all cores, each worker with its own `init()` state, taking the
/// next item as it frees up (a few large files do not leave a core idle); results in order.
fn parallel_map<T: Send, S, R: Send>(
    items: Vec<T>,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, T) -> Result<R, Error> + Sync,
) -> Result<Vec<R>, Error> {
    let count = items.len();
    let workers = std::thread::available_parallelism().map_or(1, usize::from).min(count.max(1));
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let mut indexed = std::thread::scope(|scope| {
        let worker = || -> Result<Vec<(usize, R)>, Error> {
            let mut state = init();
            let mut done = Vec::new();
            loop {
                let next = queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner).next();
                let Some((i, item)) = next else { return Ok(done) };
                done.push((i, f(&mut state, item)?));
            }
        };
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(worker)).collect();
        let mut all = Vec::with_capacity(count);
        for handle in handles {
            all.extend(handle.join().expect("a packaging thread panicked")?);
        }
        Ok::<_, Error>(all)
    })?;
    indexed.sort_unstable_by_key(|(i, _)| *i);
    Ok(indexed.into_iter().map(|(_, r)| r).collect())
}

/// Version 2.0 made by Unix (3), so readers restore the mode in the external attributes.
const MADE_BY_UNIX: u16 = (3 << 8) | 20;
/// General-purpose flag bit 11: the name is UTF-8.
const UTF8_NAME: u16 = 1 << 11;
/// 1980-01-01 00:00: fixed, so the same files always give the same zip.
const DOS_DATE: u16 = (1 << 5) | 1;
const LOCAL_HEADER: usize = 30;
const CENTRAL_HEADER: usize = 46;
const END_OF_CENTRAL_DIRECTORY: usize = 22;
/// The ZIP64 end of central directory record and its locator.
const ZIP64_END_OF_CENTRAL_DIRECTORY: usize = 56;
const ZIP64_LOCATOR: usize = 20;

/// Where a plan's zip puts its bytes, known before any file is read.
struct ZipLayout {
    /// Local headers, names and file data.
    local: u64,
    /// The central directory and the records that end it.
    central: u64,
    /// Entries in the zip.
    count: usize,
}

impl ZipLayout {
    fn of(entries: &[(String, Entry)]) -> ZipLayout {
        let mut layout = ZipLayout { local: 0, central: END_OF_CENTRAL_DIRECTORY as u64, count: 0 };
        for (path, entry) in entries {
            if let Some((name, _)) = zip_name(path, entry) {
                let data = if let Entry::File { size, .. } = entry { *size } else { 0 };
                layout.local += (LOCAL_HEADER + name.len()) as u64 + data;
                layout.central += (CENTRAL_HEADER + name.len()) as u64;
                layout.count += 1;
            }
        }
        if layout.count > usize::from(u16::MAX) {
            layout.central += (ZIP64_END_OF_CENTRAL_DIRECTORY + ZIP64_LOCATOR) as u64;
        }
        layout
    }
}

/// What a zip entry is called and its Unix mode; `None` for what Ray leaves out of the zip
/// (the root, non-empty directories, unreadable paths).
fn zip_name(path: &str, entry: &Entry) -> Option<(String, u32)> {
    match entry {
        Entry::Dir { empty: true } if path != "." => Some((format!("{path}/"), 0o040_755)),
        Entry::File { content: Content::Disk(_) | Content::Memory(_), executable, .. } => {
            Some((path.to_owned(), if *executable { 0o100_755 } else { 0o100_644 }))
        }
        _ => None,
    }
}

/// The fields local and central headers share, from "version needed" to "extra length".
fn common_fields(out: &mut Vec<u8>, name: &str, crc: u32, length: u32) {
    let flags = if name.is_ascii() { 0 } else { UTF8_NAME };
    for half in [20u16, flags, 0 /* stored */, 0 /* time */, DOS_DATE] {
        out.extend_from_slice(&half.to_le_bytes());
    }
    for word in [crc, length, length] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(&[0; 2]);
}

/// A stored (uncompressed) zip written on all cores: sizes are known from the walk, so every
/// entry's place in the output is computed first and each file is read straight into it, then
/// CRC'd and passed to `visit` there. Written by hand because a zip library copies and buffers
/// every file; Python's `zipfile.testzip` checks the result in the tests. Returns the zip and
/// `visit`'s result for every entry (zipped or not), in order.
fn write_zip(
    entries: &[(String, Entry)],
    visit: impl Fn(&str, &[u8]) -> Result<[u8; 8], Error> + Sync,
) -> Result<(Vec<u8>, Vec<[u8; 8]>), Error> {
    let names: Vec<Option<(String, u32)>> = entries.iter().map(|(path, entry)| zip_name(path, entry)).collect();
    let layout = ZipLayout::of(entries);
    let (local_size, central_size) = (layout.local as usize, layout.central as usize);
    // Zeroed pages come from the kernel on first touch, so the workers fault them in in parallel.
    let mut out = vec![0u8; local_size + central_size];
    let (mut rest, central) = out.split_at_mut(local_size);
    let mut tasks = Vec::with_capacity(entries.len());
    let mut offset = 0usize;
    for ((path, entry), name) in entries.iter().zip(&names) {
        let slot = match name {
            Some((name, _)) => {
                let data = if let Entry::File { size, .. } = entry { *size as usize } else { 0 };
                let (slot, tail) = std::mem::take(&mut rest).split_at_mut(LOCAL_HEADER + name.len() + data);
                rest = tail;
                let start = offset;
                offset += slot.len();
                Some((slot, name.as_str(), start))
            }
            None => None,
        };
        tasks.push((path.as_str(), entry, slot));
    }
    let results = parallel_map(
        tasks,
        || (),
        |(), (path, entry, slot)| {
            let Some((slot, name, offset)) = slot else { return Ok((visit(path, &[])?, 0, 0, 0)) };
            let (header, data) = slot.split_at_mut(LOCAL_HEADER + name.len());
            match entry {
                Entry::File { content: Content::Disk(disk), .. } => {
                    let mut file = disk.open()?;
                    let changed = || Error::Changed { path: disk.path.clone() };
                    file.read_exact(data).map_err(|_| changed())?;
                    if file.read(&mut [0u8]).map_err(|_| changed())? != 0 {
                        return Err(changed());
                    }
                }
                Entry::File { content: Content::Memory(bytes), .. } => data.copy_from_slice(bytes),
                _ => {}
            }
            let crc = crc32fast::hash(data);
            let length = data.len() as u32;
            let mut fields = Vec::with_capacity(LOCAL_HEADER + name.len());
            fields.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
            common_fields(&mut fields, name, crc, length);
            fields.extend_from_slice(name.as_bytes());
            header.copy_from_slice(&fields);
            Ok((visit(path, data)?, crc, length, offset as u32))
        },
    )?;
    let mut directory = Vec::with_capacity(central.len());
    for ((name, (_, crc, length, offset)), _) in names.iter().zip(&results).zip(entries) {
        let Some((name, mode)) = name else { continue };
        directory.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        directory.extend_from_slice(&MADE_BY_UNIX.to_le_bytes());
        common_fields(&mut directory, name, *crc, *length);
        directory.extend_from_slice(&[0; 6]); // comment length, disk number, internal attributes
        directory.extend_from_slice(&(mode << 16).to_le_bytes());
        directory.extend_from_slice(&offset.to_le_bytes());
        directory.extend_from_slice(name.as_bytes());
    }
    let directory_size = directory.len() as u64;
    let count = layout.count as u64;
    if count > u64::from(u16::MAX) {
        // ZIP64 end of central directory record, then its locator (APPNOTE 4.3.14, 4.3.15).
        let record_at = local_size as u64 + directory_size;
        directory.extend_from_slice(&0x0606_4b50u32.to_le_bytes());
        directory.extend_from_slice(&(ZIP64_END_OF_CENTRAL_DIRECTORY as u64 - 12).to_le_bytes());
        directory.extend_from_slice(&MADE_BY_UNIX.to_le_bytes());
        directory.extend_from_slice(&45u16.to_le_bytes());
        directory.extend_from_slice(&[0; 8]); // this disk, the directory's disk
        for word in [count, count, directory_size, local_size as u64] {
            directory.extend_from_slice(&word.to_le_bytes());
        }
        directory.extend_from_slice(&0x0706_4b50u32.to_le_bytes());
        directory.extend_from_slice(&[0; 4]);
        directory.extend_from_slice(&record_at.to_le_bytes());
        directory.extend_from_slice(&1u32.to_le_bytes()); // disks in all
    }
    // The classic record: counts past 65,535 say "see the ZIP64 record", as Python writes them.
    let short_count = u16::try_from(count).unwrap_or(u16::MAX);
    directory.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    directory.extend_from_slice(&[0; 4]);
    directory.extend_from_slice(&short_count.to_le_bytes());
    directory.extend_from_slice(&short_count.to_le_bytes());
    directory.extend_from_slice(&(directory_size as u32).to_le_bytes());
    directory.extend_from_slice(&(local_size as u32).to_le_bytes());
    directory.extend_from_slice(&[0; 2]);
    central.copy_from_slice(&directory);
    Ok((out, results.into_iter().map(|(digest, ..)| digest).collect()))
}

struct Walk<'a> {
    plan: Plan,
    gitignore: bool,
    /// The working dir, canonical.
    root: PathBuf,
    /// Where what is read must be, when symlinks out of the working dir are refused.
    confine: Option<Arc<Confine>>,
    /// [`gke_rl::secrets::CREDENTIAL_FILES`], when they are left out.
    credentials: Option<PatternSet>,
    secrets: &'a [Secret<'a>],
    /// Canonical paths of the directories being walked, to stop at a symlink loop.
    ancestors: Vec<PathBuf>,
    /// How many times each directory (device, inode) was entered.
    visits: std::collections::HashMap<(u64, u64), usize>,
    /// Paths visited or listed so far.
    paths: usize,
    /// Bytes of ignore files read so far.
    ignore_bytes: u64,
}

impl Walk<'_> {
    /// `_dir_travel`: a directory's ignore files are read before the directory itself is
    /// matched, so its own patterns can exclude it (`*` in a `.rayignore`). Unlike Ray, a path
    /// excluded from above is not looked into at all: neither its name nor its ignore files.
    /// `real` is where the path really is, absolute without its leading `/`, where that differs
    /// from the working dir's own path to it (through a link, or in a credential folder), so
    /// credential files are known wherever a link leads.
    fn travel(&mut self, fs_path: &Path, rel: &str, real: Option<&str>, active: &mut Vec<(String, PatternSet)>) -> Result<(), Error> {
        use std::os::unix::fs::MetadataExt as _;
        let io = |source| Error::Io { path: fs_path.to_owned(), source };
        self.paths += 1;
        if self.paths > MAX_PATHS {
            return Err(Error::TooManyPaths { limit: MAX_PATHS });
        }
        let meta = fs::metadata(fs_path).ok();
        let is_dir = meta.as_ref().is_some_and(fs::Metadata::is_dir);
        let before = active.len();
        let excluded = |active: &[(String, PatternSet)]| active.iter().any(|(base, set)| set.is_match(relative_to(rel, base)));
        let mut skip = excluded(active);
        let mut real = real.map(str::to_owned);
        let mut credential = false;
        if !skip {
            refuse_secret_name(rel, self.secrets)?;
            if rel.split('/').count() > MAX_DEPTH {
                return Err(Error::TooDeep { path: fs_path.to_owned(), limit: MAX_DEPTH });
            }
            // Where a link leads, before anything behind it is read.
            if fs::symlink_metadata(fs_path).is_ok_and(|m| m.file_type().is_symlink()) {
                match fs::canonicalize(fs_path) {
                    Ok(target) => {
                        real = match (&self.confine, target.strip_prefix(&self.root)) {
                            (_, Ok(inside)) => Some(inside.to_string_lossy().into_owned()),
                            (Some(_), Err(_)) => return Err(Error::LinkOut { link: fs_path.to_owned(), target }),
                            // Followed out: a credential folder as a whole, else matched from
                            // its own name down, never by the folders above it.
                            (None, Err(_)) => {
                                credential = self.credentials.is_some() && credential_folder(&target).is_some();
                                target.file_name().map(|name| name.to_string_lossy().into_owned())
                            }
                        };
                    }
                    // Ray hashes a broken link's path; one that opens but does not resolve (a
                    // deleted file's /proc/PID/fd entry) leads nowhere gke-rl can check.
                    Err(_) if meta.is_some() && self.confine.is_some() => {
                        let target = fs::read_link(fs_path).unwrap_or_default();
                        return Err(Error::LinkOut { link: fs_path.to_owned(), target });
                    }
                    Err(_) => {}
                }
            }
            credential |=
                self.credentials.as_ref().is_some_and(|set| set.is_match(rel) || real.as_deref().is_some_and(|real| set.is_match(real)));
            if credential {
                self.plan.credentials_left_out.push(if is_dir { format!("{rel}/") } else { rel.to_owned() });
            } else if is_dir {
                for name in [".gitignore", gke_rl::ArtifactKind::RayIgnore.file()] {
                    if name == ".gitignore" && !self.gitignore {
                        continue;
                    }
                    if let Some(text) = self.read_ignore_file(&fs_path.join(name))? {
                        let shown = if rel == "." { name.to_owned() } else { format!("{rel}/{name}") };
                        let set = PatternSet::parse(&text).map_err(|error| Error::Pattern { file: shown.clone(), error })?;
                        active.push((rel.to_owned(), set));
                        self.plan.ignore_files.push(shown);
                    }
                }
                skip = excluded(&active[before..]);
            }
        }
        if !skip && !credential {
            if let (true, Some(meta)) = (is_dir, &meta) {
                let canonical = fs::canonicalize(fs_path).map_err(io)?;
                if let Some(target) = self.ancestors.iter().find(|a| **a == canonical) {
                    return Err(Error::SymlinkLoop { path: fs_path.to_owned(), target: target.clone() });
                }
                let visits = self.visits.entry((meta.dev(), meta.ino())).or_default();
                *visits += 1;
                if *visits > MAX_DIRECTORY_VISITS {
                    return Err(Error::LinkMaze { path: fs_path.to_owned(), target: canonical, limit: MAX_DIRECTORY_VISITS });
                }
                let children = self.list(fs_path, (meta.dev(), meta.ino()))?;
                self.plan.entries.push((rel.to_owned(), Entry::Dir { empty: children.is_empty() }));
                self.ancestors.push(canonical);
                for name in children {
                    let child_rel = if rel == "." { name.clone() } else { format!("{rel}/{name}") };
                    let child_real = real.as_ref().map(|real| format!("{real}/{name}"));
                    self.travel(&fs_path.join(&name), &child_rel, child_real.as_deref(), active)?;
                }
                self.ancestors.pop();
            } else {
                let entry = match &meta {
                    Some(m) if m.is_file() => {
                        use std::os::unix::fs::PermissionsExt as _;
                        let disk = Disk { path: fs_path.to_owned(), identity: (m.dev(), m.ino()), confine: self.confine.clone() };
                        Entry::File { content: Content::Disk(disk), size: m.len(), executable: m.permissions().mode() & 0o111 != 0 }
                    }
                    _ => Entry::File { content: Content::Unreadable, size: 0, executable: false },
                };
                self.plan.entries.push((rel.to_owned(), entry));
            }
        }
        active.truncate(before);
        Ok(())
    }

    /// A folder's entries, sorted, read from the folder the walk checked (not one swapped in
    /// since), each counted towards [`MAX_PATHS`] as it is read.
    fn list(&mut self, fs_path: &Path, identity: (u64, u64)) -> Result<Vec<String>, Error> {
        use std::os::unix::fs::MetadataExt as _;
        let io = |source: std::io::Error| Error::Io { path: fs_path.to_owned(), source };
        let folder = open_nonblocking(fs_path, true).map_err(io)?;
        let meta = folder.metadata().map_err(io)?;
        if (meta.dev(), meta.ino()) != identity {
            return Err(Error::Changed { path: fs_path.to_owned() });
        }
        confined(&folder, fs_path, self.confine.as_deref())?;
        let mut children = Vec::new();
        for child in rustix::fs::Dir::read_from(&folder).map_err(|e| io(e.into()))? {
            let child = child.map_err(|e| io(e.into()))?;
            let name = child.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            self.paths += 1;
            if self.paths > MAX_PATHS {
                return Err(Error::TooManyPaths { limit: MAX_PATHS });
            }
            let name =
                String::from_utf8(name.to_vec()).map_err(|_| Error::NonUtf8Name { path: fs_path.join(&*String::from_utf8_lossy(name)) })?;
            children.push(name);
        }
        // Each child is counted again when it is walked.
        self.paths -= children.len();
        children.sort();
        Ok(children)
    }

    /// An ignore file's text, or `None` where Ray reads none (no regular file there): opened
    /// without blocking (a named pipe swapped in after the check does not hang the walk), inside
    /// the working dir unless links out are followed, and read to at most
    /// [`MAX_IGNORE_FILE_BYTES`], and [`MAX_IGNORE_BYTES`] over the whole walk.
    fn read_ignore_file(&mut self, path: &Path) -> Result<Option<String>, Error> {
        let io = |source| Error::Io { path: path.to_owned(), source };
        if !path.is_file() {
            return Ok(None);
        }
        let file = open_nonblocking(path, false).map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(Error::Changed { path: path.to_owned() });
        }
        confined(&file, path, self.confine.as_deref())?;
        let mut bytes = Vec::new();
        file.take(MAX_IGNORE_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > MAX_IGNORE_FILE_BYTES {
            return Err(Error::IgnoreFileTooLarge { path: path.to_owned(), limit: MAX_IGNORE_FILE_BYTES });
        }
        self.ignore_bytes += bytes.len() as u64;
        if self.ignore_bytes > MAX_IGNORE_BYTES {
            return Err(Error::IgnoreFilesTooLarge { path: path.to_owned(), limit: MAX_IGNORE_BYTES });
        }
        let text = String::from_utf8(bytes).map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error())))?;
        Ok(Some(text))
    }
}

/// The credential folder pattern (`.ssh/`, `**/.config/gcloud/`) that `path` is, if any.
fn credential_folder(path: &Path) -> Option<&'static str> {
    gke_rl::secrets::CREDENTIAL_FILES
        .iter()
        .copied()
        .filter(|pattern| pattern.ends_with('/'))
        .find(|pattern| path.ends_with(pattern.trim_start_matches("**/").trim_end_matches('/')))
}

/// Refuses a path whose name holds a secret's value, naming it with every secret hidden.
fn refuse_secret_name(path: &str, secrets: &[Secret<'_>]) -> Result<(), Error> {
    let held = |s: &&Secret<'_>| !s.value.is_empty() && path.contains(s.value);
    let Some(secret) = secrets.iter().find(held) else { return Ok(()) };
    let shown = secrets.iter().filter(held).fold(path.to_owned(), |shown, s| shown.replace(s.value, &format!("<{}>", s.name)));
    Err(Error::SecretInName { path: shown, name: secret.name.to_owned() })
}

/// `rel` relative to `base` (both relative to the root; `.` is the root), as Ray computes
/// `path.relative_to(ignore_file_dir)`.
fn relative_to<'a>(rel: &'a str, base: &str) -> &'a str {
    if base == "." {
        rel
    } else if rel == base {
        "."
    } else {
        rel.strip_prefix(base).and_then(|r| r.strip_prefix('/')).unwrap_or(rel)
    }
}

/// `error`, or, when its text (with its sources) holds one of `secrets`, that text
/// with each shown as `<NAME>`: a path or pattern the packager names may hold a value no
/// shape gives away.
fn hiding(error: Error, secrets: &[Secret<'_>]) -> Error {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    let held: Vec<_> = secrets.iter().filter(|s| !s.value.is_empty() && text.contains(s.value)).collect();
    if held.is_empty() {
        return error;
    }
    Error::Hidden { message: held.iter().fold(text, |text, s| text.replace(s.value, &format!("<{}>", s.name))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_follow_pathlib() {
        assert_eq!(relative_to("a/b", "."), "a/b");
        assert_eq!(relative_to("a", "a"), ".");
        assert_eq!(relative_to("a/b/c", "a"), "b/c");
    }

    #[test]
    fn escape_makes_a_path_match_only_itself() {
        assert_eq!(gitwildmatch_escape("data/big[1]*.bin"), "data/big\\[1\\]\\*.bin");
    }

    #[test]
    fn in_memory_job_folder_hashes_root_and_files() {
        let package = Plan::for_files(vec![("run.sh".into(), b"echo hi\n".to_vec(), true)]).build(&[]).unwrap();
        assert!(package.uri.starts_with("gcs://_ray_pkg_") && package.uri.len() == "gcs://_ray_pkg_.zip".len() + 16);
        assert_eq!(package.file_count, 1);
    }

    #[test]
    fn a_folder_that_changed_after_hashing_is_not_zipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("train.py"), "print('step')\n").unwrap();
        let hashed = Plan::for_dir(dir.path(), &Options::default(), &[]).unwrap().hash(&[]).unwrap();
        let built = Plan::for_dir(dir.path(), &Options::default(), &[]).unwrap().build(&[]).unwrap();
        assert_eq!((hashed.zip().unwrap().uri, hashed.zip().unwrap().zip), (built.uri.clone(), built.zip), "zipped twice, the same");
        // Hours later, before a restart's upload: the folder is not what was hashed (and
        // scanned for secrets), at the same size or another.
        std::fs::write(dir.path().join("train.py"), "print('STEP')\n").unwrap();
        let changed = hashed.zip();
        assert!(matches!(&changed, Err(Error::PackageChanged { uri }) if *uri == built.uri), "{changed:?}");
        std::fs::write(dir.path().join("train.py"), "print('hf_0123456789abcdef0123456789')\n").unwrap();
        assert!(matches!(hashed.zip(), Err(Error::Changed { .. })));
    }

    #[test]
    fn a_missing_working_dir_is_an_error() {
        let error = Plan::for_dir(Path::new("/nonexistent/gke-rl"), &Options::default(), &[]).unwrap_err();
        assert_eq!(error.to_string(), "/nonexistent/gke-rl is not a directory (nor a .zip file): pass the folder to upload");
    }

    #[test]
    fn secrets_are_refused_with_the_file_named() {
        let files = vec![("env.sh".into(), b"export HF_TOKEN=hf_abcdefgh\n".to_vec(), false)];
        let error = Plan::for_files(files).build(&[Secret { name: "HF_TOKEN", value: "hf_abcdefgh" }]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "env.sh contains the value of HF_TOKEN; a secret must never be uploaded: exclude the file in .rayignore"
        );
    }

    /// A zip with `entries`, deflated.
    fn deflated_zip(dir: &Path, entries: &[(&str, &[u8])]) -> std::path::PathBuf {
        let path = dir.join("job.zip");
        let mut writer = zip::ZipWriter::new(fs::File::create(&path).unwrap());
        let options =
            zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).compression_level(Some(1));
        for (name, bytes) in entries {
            writer.start_file(*name, options).unwrap();
            std::io::Write::write_all(&mut writer, bytes).unwrap();
        }
        writer.finish().unwrap();
        path
    }

    #[test]
    fn a_zip_working_dir_is_scanned_for_secrets_like_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let secret = [Secret { name: "MY_HF", value: "hf_secret_value_1234" }];
        // The value straddles the 1 MiB pieces the scan reads.
        let mut big = vec![b'x'; (1 << 20) - 5];
        big.extend_from_slice(b"hf_secret_value_1234 and more");
        let zip = deflated_zip(dir.path(), &[("run.sh", b"echo hi\n"), ("data/big.txt", &big)]);
        let error = Hashed::for_zip_file(&zip, &secret).unwrap_err();
        assert!(matches!(&error, Error::SecretInZip { entry, name, .. } if entry == "data/big.txt" && name == "MY_HF"), "{error}");
        let clean = deflated_zip(dir.path(), &[("run.sh", b"echo hi\n"), ("data/", b"")]);
        assert_eq!(Hashed::for_zip_file(&clean, &secret).unwrap().file_count(), 1, "a folder is not a file");
        fs::write(&clean, b"PK\x03\x04 not really").unwrap();
        assert!(matches!(Hashed::for_zip_file(&clean, &secret), Err(Error::BadZip { .. })));
    }

    #[test]
    fn a_zip_bomb_is_refused_within_the_unpacked_bound() {
        let dir = tempfile::tempdir().unwrap();
        let zeros = vec![0u8; 64 << 20];
        let names: Vec<String> = (0..7).map(|i| format!("zeros{i}")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), zeros.as_slice())).collect();
        let bomb = deflated_zip(dir.path(), &entries);
        assert!(fs::metadata(&bomb).unwrap().len() < MAX_UPLOAD_BYTES, "within the upload limit, far past it unpacked");
        let error = Hashed::for_zip_file(&bomb, &[]).unwrap_err();
        assert!(error.to_string().contains("unpacks to more than 400 MiB"), "{error}");
    }

    fn plan(dir: &Path, options: &Options) -> Result<Plan, Error> {
        Plan::for_dir(dir, options, &[])
    }

    fn paths(plan: &Plan) -> Vec<&str> {
        plan.entries.iter().map(|(path, _)| path.as_str()).collect()
    }

    /// Issue 31, item 7: a link out of the working dir is refused by name (Ray would upload
    /// what it points at); one inside is followed as Ray follows it; the flag follows both.
    #[test]
    fn links_out_of_the_working_dir_are_refused_unless_asked_for() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("shadow"), "root:$6$hash\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        fs::create_dir_all(work.join("data")).unwrap();
        fs::write(work.join("data/a.txt"), "a\n").unwrap();
        symlink("data", work.join("inside")).unwrap();
        assert_eq!(paths(&plan(&work, &Options::default()).unwrap()), [".", "data", "data/a.txt", "inside", "inside/a.txt"]);
        symlink(outside.path().join("shadow"), work.join("data/shadow")).unwrap();
        symlink(outside.path(), work.join("home")).unwrap();
        let error = plan(&work, &Options::default()).unwrap_err();
        assert!(matches!(&error, Error::LinkOut { link, .. } if link.ends_with("data/shadow")), "{error}");
        assert!(error.to_string().contains("--follow-links-out"), "{error}");
        // Excluded, it is never looked at.
        fs::write(work.join(".rayignore"), "shadow\nhome\n").unwrap();
        assert!(plan(&work, &Options::default()).is_ok());
        fs::remove_file(work.join(".rayignore")).unwrap();
        let followed = plan(&work, &Options { follow_links_out: true, ..Options::default() }).unwrap();
        assert!(paths(&followed).contains(&"home/shadow") && paths(&followed).contains(&"data/shadow"));
    }

    /// Issue 31, item 7: credential files are left out and listed, wherever they are; the
    /// flag uploads them.
    #[test]
    fn credential_files_are_left_out_and_listed() {
        let dir = tempfile::tempdir().unwrap();
        for path in [".ssh/id_ed25519", ".aws/credentials", "sub/.docker/config.json", "sub/.npmrc", "train.py", "sub/keep.json"] {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x\n").unwrap();
        }
        let kept = plan(dir.path(), &Options::default()).unwrap();
        assert_eq!(kept.credentials_left_out, [".aws/credentials", ".ssh/id_ed25519", "sub/.docker/config.json", "sub/.npmrc"]);
        assert!(paths(&kept).contains(&"sub/keep.json") && paths(&kept).contains(&"train.py"));
        assert!(!paths(&kept).iter().any(|p| p.contains("id_ed25519") || p.contains("npmrc") || p.ends_with("config.json")));
        let all = plan(dir.path(), &Options { credential_files: true, ..Options::default() }).unwrap();
        assert!(all.credentials_left_out.is_empty() && paths(&all).contains(&"sub/.npmrc"));
    }

    /// Issue 31, item 7: a name holding a secret is refused, and the error shows the name
    /// with the secret hidden; an excluded one is not looked at.
    #[test]
    fn a_name_holding_a_secret_is_refused_without_showing_it() {
        let dir = tempfile::tempdir().unwrap();
        let token = "hf_AbCdEfGhIjKlMnOpQrSt";
        fs::create_dir(dir.path().join(format!("run-{token}"))).unwrap();
        fs::write(dir.path().join(format!("run-{token}/notes.txt")), "x\n").unwrap();
        let secrets = [Secret { name: "HF_TOKEN", value: token }];
        let error = Plan::for_dir(dir.path(), &Options::default(), &secrets).unwrap_err();
        assert_eq!(
            error.to_string(),
            "run-<HF_TOKEN>: the name holds the value of HF_TOKEN (shown as <HF_TOKEN>); a secret must never be uploaded: rename it or exclude it in .rayignore"
        );
        fs::write(dir.path().join(".rayignore"), "run-*/\nrun-*\n").unwrap();
        assert!(Plan::for_dir(dir.path(), &Options::default(), &secrets).is_ok());
        let files = vec![(format!("{token}.txt"), b"x".to_vec(), false)];
        assert!(matches!(Plan::for_files(files).build(&secrets), Err(Error::SecretInName { path, .. }) if path == "<HF_TOKEN>.txt"));
    }

    /// Issue 31, item 9: 40 folders each linking twice to the next (2^40 paths, no loop) end
    /// at the visit bound at once; so do depth and a huge ignore file.
    #[test]
    fn walks_are_bounded_in_visits_depth_and_ignore_file_size() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        for level in 0..40 {
            let folder = dir.path().join(format!("l{level}"));
            fs::create_dir(&folder).unwrap();
            if level < 39 {
                symlink(format!("../l{}", level + 1), folder.join("a")).unwrap();
                symlink(format!("../l{}", level + 1), folder.join("b")).unwrap();
            }
        }
        let error = plan(dir.path(), &Options::default()).unwrap_err();
        assert!(matches!(error, Error::LinkMaze { limit: MAX_DIRECTORY_VISITS, .. }), "{error}");

        let deep = tempfile::tempdir().unwrap();
        let mut path = deep.path().to_path_buf();
        for _ in 0..MAX_DEPTH + 1 {
            path.push("d");
        }
        fs::create_dir_all(&path).unwrap();
        assert!(matches!(plan(deep.path(), &Options::default()), Err(Error::TooDeep { limit: MAX_DEPTH, .. })));

        // A sparse 3 GB ignore file: refused after reading its first MiB.
        let huge = tempfile::tempdir().unwrap();
        fs::File::create(huge.path().join(".rayignore")).unwrap().set_len(3 << 30).unwrap();
        let error = plan(huge.path(), &Options::default()).unwrap_err();
        assert!(matches!(error, Error::IgnoreFileTooLarge { .. }), "{error}");
    }

    /// Issue 31, item 15: more than 65,535 entries make a ZIP64 archive, as Python's zipfile
    /// writes one (Ray's packager does), instead of a refusal.
    #[test]
    fn past_65535_entries_the_zip_is_zip64() {
        let files: Vec<(String, Vec<u8>, bool)> = (0..70_000).map(|i| (format!("f{i}"), i.to_string().into_bytes(), false)).collect();
        let package = Plan::for_files(files).build(&[]).unwrap();
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(&package.zip)).unwrap();
        assert_eq!(archive.len(), 70_000);
        let mut last = String::new();
        archive.by_name("f69999").unwrap().read_to_string(&mut last).unwrap();
        assert_eq!(last, "69999");
    }

    /// Names count towards the upload limit: a million long names zip past it.
    #[test]
    fn a_zip_over_the_limit_for_its_names_is_refused_before_reading() {
        let name = "n".repeat(200);
        let files: Vec<(String, Vec<u8>, bool)> = (0..300_000).map(|i| (format!("{name}{i}"), Vec::new(), false)).collect();
        let error = Plan::for_files(files).check_size().unwrap_err();
        assert!(matches!(error, Error::ZipTooLarge { files: 300_000, .. }), "{error}");
    }

    /// Review of issue 31, item 7: what is read is what the walk saw. A file swapped after the
    /// walk (for another of the same size, or a link out) is refused, and so is a link that
    /// opens but does not resolve (a deleted file's /proc/self/fd entry).
    #[test]
    fn files_swapped_after_the_walk_and_unresolvable_links_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("id_rsa"), "PRIVATE\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("train.py"), "print()\n").unwrap();
        let walked = plan(dir.path(), &Options::default()).unwrap();
        fs::remove_file(dir.path().join("train.py")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("id_rsa"), dir.path().join("train.py")).unwrap();
        assert!(matches!(walked.hash(&[]), Err(Error::Changed { .. })));

        let deleted = fs::File::create(outside.path().join("key")).unwrap();
        fs::remove_file(outside.path().join("key")).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&deleted);
        let work = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(format!("/proc/self/fd/{fd}"), work.path().join("key")).unwrap();
        let error = plan(work.path(), &Options::default()).unwrap_err();
        assert!(matches!(error, Error::LinkOut { .. }), "{error}");
    }

    /// Review of issue 31, item 7: credential files are known where a link leads, and in a
    /// working dir that is itself a credential folder.
    #[test]
    fn credential_files_are_known_through_links_and_as_the_working_dir() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(".ssh")).unwrap();
        fs::write(dir.path().join(".ssh/id_ed25519"), "x\n").unwrap();
        std::os::unix::fs::symlink(".ssh", dir.path().join("keys")).unwrap();
        let walked = plan(dir.path(), &Options::default()).unwrap();
        assert_eq!(walked.credentials_left_out, [".ssh/id_ed25519", "keys/id_ed25519"]);
        let aws = dir.path().join("home/.aws");
        fs::create_dir_all(&aws).unwrap();
        fs::write(aws.join("config"), "x\n").unwrap();
        let error = plan(&aws, &Options::default()).unwrap_err();
        assert!(matches!(error, Error::CredentialFolder { pattern: ".aws/", .. }), "{error}");
        assert_eq!(paths(&plan(&aws, &Options { credential_files: true, ..Options::default() }).unwrap()), [".", "config"]);

        // Folders above the working dir, or above a link's target, are not matched: `*.env`
        // names files, and a project in `rl.env/` is uploaded whole.
        let project = dir.path().join("rl.env");
        fs::create_dir(&project).unwrap();
        fs::write(project.join("train.py"), "x\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(outside.path().join("shared.env/.ssh")).unwrap();
        fs::write(outside.path().join("shared.env/data.txt"), "x\n").unwrap();
        fs::write(outside.path().join("shared.env/.ssh/id_rsa"), "x\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("shared.env/data.txt"), project.join("data.txt")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("shared.env/.ssh"), project.join("keys")).unwrap();
        let followed = plan(&project, &Options { follow_links_out: true, ..Options::default() }).unwrap();
        assert_eq!(paths(&followed), [".", "data.txt", "train.py"]);
        assert_eq!(followed.credentials_left_out, ["keys/"]);
    }

    /// Review of issue 31, item 7: a file reached through a folder swapped for a link after the
    /// walk passed it is refused where it really is: a credential file, though its inode is the
    /// one the walk saw.
    #[test]
    fn a_credential_file_reached_through_a_swapped_folder_is_refused() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(".ssh")).unwrap();
        fs::write(dir.path().join(".ssh/config"), "Host x\n").unwrap();
        std::os::unix::fs::symlink(".ssh", dir.path().join("data")).unwrap();
        let meta = fs::metadata(dir.path().join(".ssh/config")).unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let credentials = Some(PatternSet::from_lines(gke_rl::secrets::CREDENTIAL_FILES.iter().copied()).unwrap());
        let disk = Disk {
            path: dir.path().join("data/config"),
            identity: (meta.dev(), meta.ino()),
            confine: Some(Arc::new(Confine { root, credentials })),
        };
        assert!(matches!(disk.open(), Err(Error::Changed { .. })));
    }

    /// Review of issue 31, item 7: a secret with no known shape is hidden in every error the
    /// packager gives, and a zip's entry names and own records are scanned too.
    #[test]
    fn secrets_are_hidden_in_every_packager_error_and_found_in_zip_names() {
        let secret = "wandbkey0123456789";
        let secrets = [Secret { name: "WANDB_API_KEY", value: secret }];
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(outside.path().join(secret)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join(secret), dir.path().join("data")).unwrap();
        let error = Plan::for_dir(dir.path(), &Options::default(), &secrets).map(|_| ()).unwrap_err().to_string();
        assert!(!error.contains(secret) && error.contains("<WANDB_API_KEY>"), "{error}");

        let zip = deflated_zip(dir.path(), &[(&format!("{secret}.txt"), b"x")]);
        let error = Hashed::for_zip_file(&zip, &secrets).unwrap_err().to_string();
        assert!(error.starts_with("<WANDB_API_KEY>.txt: the name holds the value"), "{error}");
        let path = dir.path().join("commented.zip");
        let mut writer = zip::ZipWriter::new(fs::File::create(&path).unwrap());
        writer.set_comment(secret).unwrap();
        writer.start_file("a.txt", zip::write::SimpleFileOptions::default()).unwrap();
        writer.finish().unwrap();
        let error = Hashed::for_zip_file(&path, &secrets).unwrap_err().to_string();
        assert!(error.contains("its own records") && !error.contains(secret), "{error}");
    }
}
