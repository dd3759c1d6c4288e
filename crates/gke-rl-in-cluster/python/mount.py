# (Carried by each program in place of its `# mount.py` line; it imports errno, os, re and stat.)
#
# The rules for folders below a mount that others write (any pod with the PVC can), the same in
# every in-cluster program: the mount itself is resolved once, up front (a link the user made
# there is theirs, and said); below it, every folder is opened from its parent's descriptor
# without following a link, and every file is reached from its folder's, so that nothing
# checked once is later used by a name someone swapped. A folder gke-rl writes in that another
# user owns is not gke-rl's, and is refused. Step folders are named as NeMo-RL names them.


class Refused(Exception):
    """A path below the mount that is not used, in words for gke-rl."""


class Missing(Refused):
    """A folder below the mount that is not there: a place nothing was written yet, unlike one
    that cannot be read (a link on the way, no permission), which is refused."""


def resolved_mount(mount):
    """(the mount's real path, a note for people when the mount is a link, else None)."""
    real = os.path.realpath(mount)
    if real == os.path.normpath(mount):
        return real, None
    return real, f"{mount} is a link to {real}: using {real}"


def below(mount, path):
    """The folders of `path` below `mount`; Missing for a path outside it (nothing of it is on
    this file system)."""
    mount = os.path.normpath(mount)
    path = os.path.normpath(path)
    if path != mount and not path.startswith(mount.rstrip("/") + "/"):
        raise Missing(f"{path} is not below the mount {mount}: nothing of it is on this file system")
    rest = path[len(mount) :].strip("/")
    parts = [part for part in rest.split("/") if part]
    if ".." in parts:
        raise Refused(f"{path} leaves {mount}")
    return parts


def open_mount(mount):
    """A descriptor of the mount: a link the user made there is resolved here, once. Missing
    where it is not there: nothing below it is on this node (whoever needs it says so)."""
    real, _ = resolved_mount(mount)
    try:
        return os.open(real, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError as e:
        raise Missing(f"{mount} is not there: the file system is not mounted on this node") from e
    except OSError as e:
        raise Refused(f"{mount} cannot be opened ({e.strerror}): the file system is not mounted on this node") from e


def top_of(path):
    """The folder at the file system's root that `path` is in (/lustre): the mount, where no
    other is known."""
    return os.path.join(os.sep, os.path.abspath(path).split(os.sep)[1])


def owned(fd, path):
    """Refuses the folder `fd` (at `path`) when someone but this user (or root) can change what
    it holds: its names would be theirs to swap. A folder others may write is theirs too, unless
    it is sticky (each removes and renames only their own)."""
    st = os.fstat(fd)
    if st.st_uid not in (os.getuid(), 0):
        owner = f"belongs to user {st.st_uid}, not to this one ({os.getuid()})"
    elif st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        owner = "can be written by other users"
    else:
        return
    raise Refused(f"{path} {owner}: a folder another user can change is not gke-rl's to write in; remove it, or use another folder")


def open_folder(mount, path, make=False, own=False):
    """A descriptor of the folder `path`, opened from the mount down without following a link;
    with `make`, the folders missing on the way are made; with `own` (where gke-rl writes),
    each folder below the mount must be this user's."""
    fd = open_mount(mount)
    at = os.path.normpath(mount)
    try:
        for part in below(mount, path):
            at = os.path.join(at, part)
            if make:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError as e:
                raise Missing(f"{path} is not there ({part} is missing)") from e
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Refused(f"{at} is a link or not a folder: not using it") from e
                raise Refused(f"{path}: cannot open {part} ({e.strerror})") from e
            os.close(fd)
            fd = child
            if own:
                owned(fd, at)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_child(fd, name, make=False):
    """The folder `name` in the folder `fd`, not through a link; with `make`, made first (for
    this user alone)."""
    if make:
        try:
            os.mkdir(name, 0o700, dir_fd=fd)
        except FileExistsError:
            pass
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)


# The deepest tree removed or measured: a checkpoint is a few folders deep.
MOST_DEPTH = 64


def remove_in(folder, name, depth=0):
    """Removes `name` in the folder descriptor `folder`, its contents first, never through a
    link (a link is removed, not followed). OSError when something stays."""
    try:
        st = os.lstat(name, dir_fd=folder)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(name, dir_fd=folder)
        except FileNotFoundError:
            pass
        return
    if depth >= MOST_DEPTH:
        raise OSError(errno.ELOOP, f"{name} is deeper than {MOST_DEPTH} folders: not removed")
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
    try:
        for entry in list(os.scandir(fd)):
            remove_in(fd, entry.name, depth + 1)
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=folder)
    except FileNotFoundError:
        pass


def size_in(folder, name, depth=0):
    """The bytes of the files below `name` in the folder descriptor `folder`, never through a
    link (what cannot be read counts nothing)."""
    try:
        st = os.lstat(name, dir_fd=folder)
        if not stat.S_ISDIR(st.st_mode) or depth >= MOST_DEPTH:
            return st.st_size if stat.S_ISREG(st.st_mode) else 0
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
    except OSError:
        return 0
    try:
        return sum(size_in(fd, entry.name, depth + 1) for entry in list(os.scandir(fd)))
    except OSError:
        return 0
    finally:
        os.close(fd)


def path_of(fd):
    """Where the folder `fd` is, as the kernel knows it (for the mount table only)."""
    return os.readlink(f"/proc/self/fd/{fd}")


# NeMo-RL names a step `step_{n}`: ASCII digits without a leading zero. Any other name that
# NeMo-RL's `step_\d+` would still take (Unicode digits, `step_007`) is refused by name.
STEP = re.compile(r"step_([0-9]+)")
PARTIAL = re.compile(r"tmp_step_([0-9]+)")
OLD = re.compile(r"old_step_([0-9]+)")
LOOSE_STEP = re.compile(r"(?:tmp_|old_)?step_\d+")
# A step number gke-rl can name: one that fits 64 bits.
MOST_STEP = 2**64 - 1
NOT_A_STEP = "not a step NeMo-RL names: its number is past 64 bits, has a leading zero or a digit that is not ASCII"


def step_of(pattern, name):
    """The step number `name` carries, None when it is not one of `pattern`'s, or -1 when it is
    one NeMo-RL would glob but gke-rl cannot name: past 64 bits, a leading zero, a digit that is
    not ASCII (refused by name, never read as another step)."""
    found = pattern.fullmatch(name)
    if found is None:
        loose = LOOSE_STEP.fullmatch(name)
        same_kind = loose is not None and name.startswith(pattern.pattern.split("(")[0])
        return -1 if same_kind else None
    digits = found.group(1)
    if len(digits) > 20 or digits != str(int(digits)):
        return -1
    return int(digits) if int(digits) <= MOST_STEP else -1
