# The run's records, in its folder on the shared file system: run.json (what resubmits the run),
# progress.json, and events.jsonl (one JSON object a line): the supervisor's and the keeper's
# one reader and one writer (gke-rl puts this text into both programs).
#
# Anyone who can write that file system (any pod that mounts the PVC, another cluster that shares
# the instance) can write there, so nothing read there is acted on unless it proves it is the
# supervisor's or the keeper's: each record carries an HMAC-SHA256 of the run's id, the file it
# belongs in and its content, keyed with the cluster's run key (GKE_RL_RUN_KEY, from the
# cluster's Secret; else the Ray token). So a record cannot be forged, nor moved to another run
# or file; events are read in the order of their signed times, so reordering the lines changes
# nothing. A process without a key makes one of its own, so no other process can vouch for its
# records. Files are opened from their folder's descriptor, only when they are regular files
# (never through a link, never a FIFO or a device), and read within bounds. A package is used only through a private copy whose
# digest was taken as it was copied, so a file replaced after the check is never what runs.

import hashlib
import hmac
import stat
import tempfile

RUN_KEY_VARIABLE = TABLES["run_key_variable"]
# The most read of one record file: a run restarts a few times, and run.json is a request.
MAX_RECORDS_BYTES = 4 * 1024 * 1024
# Bound on a package read and copied: the Ray upload limit.
MAX_PACKAGE_BYTES = 500 * 1024 * 1024
RUN_KEY = []


def run_key():
    if not RUN_KEY:
        key = os.environ.get(RUN_KEY_VARIABLE, "").strip() or os.environ.get("RAY_AUTH_TOKEN", "").strip()
        RUN_KEY.append(key.encode() if key else os.urandom(32))
    return RUN_KEY[0]


def mac(run, kind, value):
    body = json.dumps({k: v for k, v in value.items() if k != "mac"}, sort_keys=True, separators=(",", ":"))
    return hmac.new(run_key(), f"{run}\n{kind}\n{body}".encode(), hashlib.sha256).hexdigest()


def signed(run, kind, value):
    return dict(value, mac=mac(run, kind, value))


def genuine(run, kind, value):
    """Whether `value` is the record of kind `kind` (its file's name) of the run `run` that the
    supervisor or the keeper wrote."""
    return isinstance(value, dict) and isinstance(value.get("mac"), str) and hmac.compare_digest(value["mac"], mac(run, kind, value))


def open_regular(folder, name, flags=os.O_RDONLY, mode=0o600):
    """A descriptor of the regular file `name` in the folder descriptor `folder` (created with
    `os.O_CREAT` in `flags` if it is missing), never through a link, never a FIFO or a device:
    what `name` names is looked at through an O_PATH descriptor, which opens nothing, and only a
    regular file is then opened, through that descriptor, so it cannot be swapped in between.
    OSError for anything else."""
    if flags & os.O_CREAT:
        try:
            return os.open(name, flags | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder)
        except FileExistsError:
            flags &= ~os.O_CREAT
    if not hasattr(os, "O_PATH") or not os.path.isdir("/proc/self/fd"):
        # Not Linux (a local head on macOS): looked at first, then opened without blocking.
        if not stat.S_ISREG(os.lstat(name, dir_fd=folder).st_mode):
            raise OSError(f"{name} is not a regular file")
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{name} is not a regular file")
        return fd
    held = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=folder)
    try:
        if not stat.S_ISREG(os.fstat(held).st_mode):
            raise OSError(f"{name} is not a regular file")
        return os.open(f"/proc/self/fd/{held}", flags)
    finally:
        os.close(held)


def verified_copy(folder, name, digest, limit):
    """A private copy (an unnamed temporary file, at its start) of the regular file `name` in
    the folder descriptor `folder`, if the bytes copied are `digest`'s, within `limit` bytes;
    None otherwise. Hashing while copying means what was checked is what is used."""
    try:
        fd = open_regular(folder, name)
    except OSError:
        return None
    copy = tempfile.TemporaryFile()
    sha, total = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            total += len(block)
            if total > limit:
                copy.close()
                return None
            sha.update(block)
            copy.write(block)
    if not hmac.compare_digest(sha.hexdigest(), str(digest)):
        copy.close()
        return None
    copy.seek(0)
    return copy


def read_bounded(folder, name, limit=MAX_RECORDS_BYTES):
    """The text of the regular file `name` in the folder descriptor `folder`; None when it is
    missing, or not a regular file (a link, a FIFO: nobody's record). OSError when it holds
    more than `limit` bytes: a part is never taken for the whole."""
    try:
        fd = open_regular(folder, name)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"{name} holds more than {limit} bytes, more than a run writes: not read in part")
    return data.decode("utf-8", "replace")


def decoded(text, run, kind):
    """The genuine record in `text`, or None (a line a lost node left torn, one nobody vouches
    for, or JSON nested past the parser's depth)."""
    try:
        value = json.loads(text) if text else None
        # Writing the value again for its MAC recurses a little deeper than reading it did.
        return value if genuine(run, kind, value) else None
    except (ValueError, RecursionError):
        return None


def read_record(folder, name, run):
    """A JSON record file of the run (run.json, progress.json) in the folder descriptor
    `folder`, if it is genuine."""
    return decoded(read_bounded(folder, name), run, name)


def write_record(folder, name, run, value):
    """Writes a record file whole in the folder descriptor `folder`: a new file (never through
    a link), then renamed over the old."""
    temp = f"{name}.{os.urandom(6).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(signed(run, name, value), f)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=folder)
        except OSError:
            pass
        raise


EVENTS = "events.jsonl"


def read_events(folder, run):
    """The run's genuine events, in the order of their signed times (`folder`: the run's
    folder's descriptor)."""
    text = read_bounded(folder, EVENTS)
    events = [event for event in (decoded(line, run, EVENTS) for line in (text or "").splitlines()) if event is not None]
    return sorted(events, key=lambda e: e["at"] if isinstance(e.get("at"), (int, float)) else 0)


def append_event(folder, run, event):
    """Appends `event`, stamped with the time and signed; the file is the owner's alone."""
    event = signed(run, EVENTS, dict(event, at=round(time.time(), 3)))
    fd = open_regular(folder, EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with os.fdopen(fd, "a") as f:
        # On a line of its own even after a line a lost node left torn (an empty line is none).
        f.write("\n" + json.dumps(event) + "\n")
    return event
