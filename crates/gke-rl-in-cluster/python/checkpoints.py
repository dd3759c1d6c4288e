"""gke-rl's checkpoint lister: what a run left on the shared file system, read on a node that
mounts it, for `gke-rl export`, `destroy` and `deploy --resume-from`.

`python3 checkpoints.py REQUEST.json`, as a Ray job whose working dir holds both files: the
request names what to do, so that no path of the user's passes through a shell. It does one of:

- `survey`: the runs in the runs folder (each by its genuine run.json) and every checkpoint
  folder they or the request name: their complete `step_N` folders, the half-written
  `tmp_step_N`, the `old_step_N` of a save's swap, what is refused by name (a link named as a
  step, a step number past 64 bits), whether a live run's writer claim holds the folder, and
  the newest step's files and bytes;
- `files`: every file of one folder below a checkpoint folder (a step, its Hugging Face model, a
  run's records), with its size, and the format of a step's weights;
- `prepare`: makes a checkpoint folder and the `tmp_step_N` an import writes into, refusing a
  folder that holds a newer step;
- `commit`: renames a folder an import or a conversion filled (`tmp_step_N`) to its name, never
  over one that exists.

Anything that can write the file system can plant links: nothing below the mount is reached
through one. The mount itself is resolved once (a link the user made there is theirs); below
it, every folder is opened from its parent's descriptor without following a link, and every
file is looked at from its folder's. Each line it prints starts with PREFIX and holds one JSON
object; each answer ends with a line that says it is whole, so that a log cut short is never
taken for an empty folder. Standard library only: the job's Python needs no Ray.
"""

import errno
import json
import os
import re
import sys
import time

# `stat`, and the records' reader (`decoded`, `genuine`, EVENTS), come with records.py below.
TABLES = None  # generated

PREFIX = TABLES["checkpoints_prefix"]
# Bounds: a checkpoint of a 72B model on 64 ranks has some thousands of files.
MOST_FILES = 50000
MOST_DEPTH = 64
MOST_ENTRIES = 100000
MOST_NAMES = 1000
# mount.py  # generated


def say(value):
    print(PREFIX + json.dumps(value, sort_keys=True), flush=True)


def read_in(fd, name, limit):
    """The text of the regular file `name` in the folder `fd`, within `limit` bytes; None when
    it is missing or not a regular file (a link, a FIFO: nobody's record)."""
    try:
        held = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None  # a link: nobody's record
        # There, but not to be read (no permission): never taken for absent.
        raise Refused(f"{name} cannot be read ({e.strerror})") from e
    try:
        if not stat.S_ISREG(os.fstat(held).st_mode):
            return None
        with os.fdopen(held, "rb", closefd=False) as f:
            return f.read(limit).decode("utf-8", "replace")
    finally:
        os.close(held)


def entries(fd):
    """The entries of the folder `fd`, at most MOST_ENTRIES."""
    found = []
    with os.scandir(fd) as listing:
        for entry in listing:
            found.append(entry)
            if len(found) > MOST_ENTRIES:
                raise Refused(f"a folder holds more than {MOST_ENTRIES} entries")
    return found


def utf8(name):
    """`name` as UTF-8 text, or None: a bucket's object names are UTF-8 without line ends."""
    try:
        text = os.fsencode(name).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\n" in text or "\r" in text else text


def walk(fd, relative="", depth=0, out=None):
    """Every regular file below the folder `fd`: (files as (path, size), refusals as (path,
    why)). No link is followed, nothing but folders and regular files is taken."""
    out = out if out is not None else ([], [])
    files, refused = out
    if depth > MOST_DEPTH:
        refused.append((relative, f"deeper than {MOST_DEPTH} folders"))
        return out
    for entry in sorted(entries(fd), key=lambda e: e.name):
        shown = utf8(entry.name)
        path = f"{relative}{shown if shown is not None else repr(entry.name)}"
        if shown is None:
            refused.append((path, "its name is not UTF-8 text without line ends, which a bucket's object names must be"))
            continue
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            refused.append((path, "a link"))
        elif stat.S_ISDIR(st.st_mode):
            try:
                child = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                refused.append((path, f"cannot be opened ({e.strerror})"))
                continue
            try:
                walk(child, f"{path}/", depth + 1, out)
            finally:
                os.close(child)
        elif stat.S_ISREG(st.st_mode):
            files.append((path, st.st_size))
            if len(files) > MOST_FILES:
                raise Refused(f"more than {MOST_FILES} files")
        else:
            refused.append((path, "neither a file nor a folder"))
    return out


def claim_of(fd, folder):
    """The writer claim of a live run on the checkpoint folder (supervise.py's WriterLease):
    genuine, for this folder, and fresh; else None."""
    writer = TABLES["writer"]
    text = read_in(fd, writer["name"], 64 * 1024)
    try:
        claim = json.loads(text) if text else None
    except (ValueError, RecursionError):
        return None
    if not (isinstance(claim, dict) and genuine(str(claim.get("run")), writer["name"], claim)):
        return None
    at = claim.get("at")
    fresh = isinstance(at, (int, float)) and abs(time.time() - at) <= writer["stale_s"]
    if claim.get("folder") != os.path.normpath(folder) or not fresh:
        return None
    return {"run": claim.get("run"), "submission": claim.get("submission"), "host": claim.get("host"), "age_s": round(time.time() - at, 1)}


def weights_of(fd):
    """The format of a step's weights (policy/weights): Megatron's `iter_N` folders, or
    DCP's `.metadata`; None when neither."""
    try:
        weights = open_in(open_in(fd, "policy"), "weights")
    except OSError:
        return None
    try:
        names = sorted(e.name for e in entries(weights) if e.is_dir(follow_symlinks=False) and re.fullmatch(r"iter_\d+", e.name))
        if names:
            return {"format": "megatron", "path": f"policy/weights/{names[-1]}"}
        if read_in(weights, ".metadata", 1) is not None:
            return {"format": "dcp", "path": "policy/weights"}
        return None
    finally:
        os.close(weights)


def open_in(fd, name):
    """The folder `name` in the folder `fd`, not through a link; the parent is closed."""
    try:
        return open_child(fd, name)
    finally:
        os.close(fd)


def survey_folder(mount, folder, runs):
    found = {"dir": folder, "runs": runs, "steps": [], "partial": [], "old": [], "refused": [], "claim": None, "newest": None}
    try:
        fd = open_folder(mount, folder)
    except Missing as e:
        found["missing"] = str(e)
        return found
    except Refused as e:
        found["unreadable"] = str(e)
        return found
    try:
        for entry in entries(fd):
            name = utf8(entry.name) or repr(entry.name)
            for pattern, key in ((STEP, "steps"), (PARTIAL, "partial"), (OLD, "old")):
                number = step_of(pattern, entry.name)
                if number is None:
                    continue
                if number < 0:
                    found["refused"].append({"name": name[:200], "why": NOT_A_STEP})
                elif not entry.is_dir(follow_symlinks=False):
                    found["refused"].append({"name": name, "why": "a link or a file, not a folder"})
                else:
                    found[key].append(number)
        for key in ("steps", "partial", "old"):
            found[key] = sorted(found[key])[-MOST_NAMES:]
        found["refused"] = found["refused"][:MOST_NAMES]
        found["claim"] = claim_of(fd, folder)
        # The newest step that holds anything: an empty step_N is no checkpoint to keep.
        for newest in reversed(found["steps"]):
            step = os.open(f"step_{newest}", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                files, refused = walk(step)
            finally:
                os.close(step)
            if files or refused:
                found["newest"] = {
                    "step": newest,
                    "files": len(files),
                    "bytes": sum(size for _, size in files),
                    "refused": [{"path": p, "why": w} for p, w in refused[:MOST_NAMES]],
                }
                break
    finally:
        os.close(fd)
    return found


def runs_in(mount, runs_folder):
    """The runs of the runs folder: ({run: (its checkpoint folder, its last event's time)} of
    the genuine ones, {run: its checkpoint folder} of those nobody vouches for, why the folder
    could not be read). A runs folder that is not there holds no run; one that cannot be read
    is said, never taken for empty; a mount that is not there refuses the whole survey. A run
    whose run.json nobody signed names a folder all the same: it is looked at, never trusted
    for anything else."""
    try:
        fd = open_folder(mount, runs_folder)
    except Missing:
        return {}, {}, None
    except Refused as e:
        if not os.path.isdir(os.path.realpath(mount)):
            raise
        return {}, {}, str(e)
    found, unsigned, unread = {}, {}, []
    try:
        for entry in entries(fd):
            if not entry.is_dir(follow_symlinks=False) or utf8(entry.name) is None:
                continue
            # A run folder that cannot be read may name checkpoints nobody else does: said,
            # never skipped.
            try:
                run_fd = open_child(fd, entry.name)
            except OSError as e:
                unread.append(f"run folder {entry.name} cannot be opened ({e.strerror})")
                continue
            try:
                text = read_in(run_fd, "run.json", MAX_RECORDS_BYTES)
                info = decoded(text, entry.name, "run.json")
                if info is None:
                    try:
                        claimed = json.loads(text) if text else None
                    except (ValueError, RecursionError):
                        claimed = None
                    folder = claimed.get("checkpoints") if isinstance(claimed, dict) else None
                    unsigned[entry.name] = folder if isinstance(folder, str) and folder.startswith("/") else None
                    continue
                events = [decoded(line, entry.name, EVENTS) for line in (read_in(run_fd, EVENTS, MAX_RECORDS_BYTES) or "").splitlines()]
                times = [e["at"] for e in events if e is not None and isinstance(e.get("at"), (int, float))]
                checkpoints = info.get("checkpoints")
                found[entry.name] = (checkpoints if isinstance(checkpoints, str) and checkpoints else None, max(times, default=0))
            except Refused as e:
                unread.append(f"run folder {entry.name}: {e}")
            finally:
                os.close(run_fd)
    finally:
        os.close(fd)
    return found, unsigned, "; ".join(unread[:5]) if unread else None


def survey(request):
    mount = request["mount"]
    # A mount that is not there refuses the whole survey: its absence proves no run absent.
    os.close(open_mount(mount))
    runs, unsigned, unread = runs_in(mount, request["runs"])
    folders = {}
    for folder in request.get("dirs", []):
        folders.setdefault(os.path.normpath(folder), ([], []))
    for run, (folder, last) in runs.items():
        if folder:
            folders.setdefault(os.path.normpath(folder), ([], []))[0].append({"run": run, "last": last})
    for run, folder in unsigned.items():
        if folder:
            folders.setdefault(os.path.normpath(folder), ([], []))[1].append(run[:200])
    if len(folders) > MOST_NAMES:
        raise Refused(f"the runs name more than {MOST_NAMES} checkpoint folders")
    for folder, (named, unvouched) in sorted(folders.items()):
        found = survey_folder(mount, folder, sorted(named, key=lambda r: r["last"]))
        found["unsigned"] = sorted(unvouched)
        say({"folder": found})
    say({"done": "survey", "folders": len(folders), "runs": len(runs), "unsigned_runs": len(unsigned), "runs_unread": unread})


def files(request):
    """The files of the folder `name` of `dir`: a `name` that is not there is said so (the
    answer's last line says `missing`), never listed as an empty folder."""
    parent = open_folder(request["mount"], request["dir"])
    try:
        fd = os.open(request["name"], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        say({"done": "files", "files": 0, "bytes": 0, "refused": 0, "weights": None, "missing": True})
        return
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused(f"{request['dir']}/{request['name']} is a link or not a folder: not reading through it") from e
        raise Refused(f"{request['dir']}/{request['name']}: {e.strerror}") from e
    finally:
        os.close(parent)
    try:
        listed, refused = walk(fd)
        for path, size in listed:
            say({"file": path, "size": size})
        for path, why in refused[:MOST_NAMES]:
            say({"refused": path, "why": why})
        weights = weights_of(os.dup(fd))
    finally:
        os.close(fd)
    say({"done": "files", "files": len(listed), "bytes": sum(s for _, s in listed), "refused": len(refused), "weights": weights})


def prepare(request):
    step = int(request["step"])
    fd = open_folder(request["mount"], request["dir"], make=True, own=True)
    try:
        claim = claim_of(fd, request["dir"])
        if claim is not None:
            raise Refused(f"run {claim['run']} is writing {request['dir']} (submission {claim['submission']}): an import never writes beside a live run; stop it first")
        newer, existing = [], False
        for entry in entries(fd):
            number = step_of(STEP, entry.name)
            if number is not None and (number > step or number < 0) and entry.is_dir(follow_symlinks=False):
                newer.append(entry.name if number >= 0 else entry.name[:200])
            existing = existing or (number == step and entry.is_dir(follow_symlinks=False))
        if newer:
            raise Refused(f"{request['dir']} holds a newer step than {step} ({', '.join(sorted(newer)[:5])}): an import never writes over one")
        target = f"tmp_step_{step}"
        made = False
        if not existing:
            try:
                os.mkdir(target, 0o755, dir_fd=fd)
                made = True
            except FileExistsError:
                pass
            try:
                held = open_child(fd, target)
            except OSError as e:
                raise Refused(f"{request['dir']}/{target} is a link or a file: remove it") from e
            try:
                # One left by someone else is theirs to fill: the import never writes into it.
                owned(held, f"{request['dir']}/{target}")
            finally:
                os.close(held)
    finally:
        os.close(fd)
    say({"done": "prepare", "existing": existing, "made": made})


def commit(request):
    fd = open_folder(request["mount"], request["dir"], own=True)
    try:
        source, target = request["from"], request["to"]
        claim = claim_of(fd, request["dir"])
        if claim is not None:
            raise Refused(f"run {claim['run']} is writing {request['dir']} (submission {claim['submission']}) since the transfer began: not renaming {source}; stop it, then run the command again")
        try:
            os.stat(target, dir_fd=fd, follow_symlinks=False)
            raise Refused(f"{request['dir']}/{target} exists: not renaming {source} over it")
        except FileNotFoundError:
            pass
        step = request.get("step")
        if step is not None:
            newer = [e.name for e in entries(fd) if (step_of(STEP, e.name) or 0) > step or step_of(STEP, e.name) == -1]
            if newer:
                raise Refused(f"{request['dir']} holds a newer step than {step} ({', '.join(sorted(newer)[:5])}) since the import began: not renaming {source}")
        st = os.stat(source, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{request['dir']}/{source} is a link or a file, not the folder that was filled")
        os.rename(source, target, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
    say({"done": "commit"})


def main(argv):
    if len(argv) != 1:
        say({"refused": "usage: checkpoints.py REQUEST.json"})
        return 2
    with open(argv[0]) as f:
        request = json.load(f)
    actions = {"survey": survey, "files": files, "prepare": prepare, "commit": commit}
    try:
        actions[request["do"]](request)
    except Refused as e:
        say({"refused": str(e)})
        return 1
    except OSError as e:
        say({"refused": f"{e.filename or ''}: {e.strerror or e}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
