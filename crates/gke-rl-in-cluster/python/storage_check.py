"""gke-rl storage-check: measures the file system every GPU node of this Ray cluster shares, the
way a distributed checkpoint uses it.

One Ray task per node (node affinity), started together behind a barrier. Each node writes one
file per GPU rank into a fresh folder, in parallel, each closed with fsync; then reads back the
files another node wrote; then creates, stats and deletes many small files. Each phase starts
behind a barrier of files in the folder under test, so a folder that is not shared by every
node is found at once. Each node reports its figures, its mount (file system type and source)
and the file system's size; gke-rl judges them.

No read is served from the client's page cache: a node reads only files another node wrote,
which its own kernel never cached, and both the writer (after its fsync) and the reader (before
it reads) ask the kernel to drop the file's cached pages (posix_fadvise DONTNEED), which also
covers nodes that share one kernel, and a single node reading its own files. (The file system's
servers may cache what they hold, as they do for a resume.)

Then, where torch imports in the job's Python (NeMo-RL's image always has it), each node saves
its share again as the run saves it: a real distributed checkpoint (torch.distributed.checkpoint),
one process per rank, from the rank's GPU when the node has one (else from host memory), with the
writer the release's policy sets up. It times the staging off the GPU apart from the writes, the
save's return and when its files are durable, and, where the release saves asynchronously, what
blocks and when it has landed. The raw pass and this one tell the file system from the library.

`--local DIR` runs one node's part alone, without Ray: the same program, for one machine and a
folder. What runs on the nodes uses Python's standard library only (torch in the save's own
processes); the driver imports Ray.
The check removes what it wrote on success, failure, SIGTERM and Ctrl-C, and says so only once
it is gone; a folder a killed check left is removed by the next check once its lease is stale.
Whoever else can write the folders under the mount is not trusted: no link is followed on the
way to the check's folder, nothing is removed through one, and only folders named as a check
names its own, holding a lease, are ever swept. Every wait is bounded.
"""
import argparse
import errno
import json
import os
import re
import signal
import socket
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

PREFIX = "storage-check"
# The size of each write and read: large sequential I/O, as a checkpoint's tensors are written.
CHUNK = 16 << 20
# The small files of the metadata pass, as a tokenizer or a config is saved.
SMALL_FILE = 4096
# The driver touches its folder's lease this often; a folder whose lease is older than STALE_S
# was left by a check that was killed.
LEASE = ".lease"
LEASE_EVERY_S = 5
STALE_S = 120
BARRIERS = ".barrier"
# How long a stopped check waits for its tasks to be killed, or its threads to end, before it
# removes their files.
CANCEL_WAIT_S = 20
# The names a check gives its own folder: the job's submission id, or a local run's.
OWN_NAME = re.compile(r"(gke-rl-storage-check-[A-Za-z0-9]{1,64}|check-[A-Za-z0-9._-]{1,200})")
# Set when the check is stopped: every thread of this process ends at its next step.
STOP = threading.Event()
THREADS = []
# The save pass needs dcp.save and dcp.async_save, as NeMo-RL's policies call them; async_save
# came in torch 2.3 (pytorch/pytorch torch/distributed/checkpoint/__init__.py at v2.3.0).
SAVE_TORCH = (2, 3)
# A parameter's bytes in a checkpoint, in the proportions gke-rl's rules assume
# (gke_rl::knowledge::CHECKPOINT_BYTES_PER_PARAMETER): bf16 weights, fp32 master weights and
# Adam's two fp32 moments.
SAVE_LAYOUT = (("weight", "bfloat16", 2), ("master", "float32", 4), ("exp_avg", "float32", 4), ("exp_avg_sq", "float32", 4))
# Each tensor at most a 4096 x 4096 layer.
SAVE_TENSOR = 4096 * 4096
# The most of a save process's error said, and of its output read.
SAVE_ERROR_CHARS = 2000
SAVE_OUTPUT_BYTES = 64 << 10
# What starts a save process's result line, among whatever else it prints.
RESULT = "storage-check-result "


# mount.py  # generated


class CheckError(Refused):
    """What stops a node's part, in words for the report."""


def say(kind, value):
    print(f"{PREFIX} {kind} {json.dumps(value, sort_keys=True)}", flush=True)


def error(message):
    print(f"{PREFIX} error: {message}", flush=True)


def unescape(field):
    """A mountinfo path: spaces, tabs, newlines and backslashes are written as octal escapes."""
    out, i = [], 0
    while i < len(field):
        octal = field[i + 1 : i + 4]
        if field[i] == "\\" and len(octal) == 3 and all(c in "01234567" for c in octal):
            out.append(chr(int(octal, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_of(path):
    """The mount that holds `path`: its point, file system type and source (for Lustre,
    `<ip>@tcp:/<fsname>`), from /proc/self/mountinfo; None where there is none."""
    real = os.path.realpath(path)
    best = None
    try:
        with open("/proc/self/mountinfo", errors="replace") as f:
            lines = f.read(4 << 20).splitlines()
    except OSError:
        return None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        point = unescape(fields[4])
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best["point"])):
            best = {"point": point, "type": tail[0], "source": unescape(tail[1])}
    return best


def space(fd):
    """The file system's size, used and available bytes."""
    s = os.statvfs(fd)
    return {"total": s.f_blocks * s.f_frsize, "used": (s.f_blocks - s.f_bfree) * s.f_frsize, "available": s.f_bavail * s.f_frsize}


def barrier(folder, phase, index, count, deadline):
    """Waits until `count` nodes have reached `phase`: each creates its own file in a folder of
    the file system under test (below the check's folder, whose descriptor is `folder`) and
    waits until it sees them all."""
    barriers = open_child(folder, BARRIERS, make=True)
    try:
        where = open_child(barriers, phase, make=True)
    finally:
        os.close(barriers)
    try:
        fd = os.open(str(index), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=where)
        os.close(fd)
        pause = 0.005
        while True:
            seen = len(os.listdir(where))
            if seen >= count:
                return
            if time.monotonic() > deadline:
                raise CheckError(
                    f"waited for {count} nodes before the {phase} pass and saw {seen}: "
                    "a node that is gone, or a folder that is not shared by every node"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
    finally:
        os.close(where)


def in_parallel(work, items):
    """Runs work(item) on one thread per item; the first exception is raised again."""
    results, errors = [None] * len(items), []

    def run(i, item):
        try:
            results[i] = work(item)
        except BaseException as e:  # reported by the caller, with the rank's file
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i, item), daemon=True) for i, item in enumerate(items)]
    # A SIGTERM or Ctrl-C inside start() leaves a thread that runs but cannot be joined yet: the
    # signals wait until every thread has started, and only started threads are ended and joined.
    masked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        for t in threads:
            t.start()
            THREADS.append(t)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, masked)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def drop_cache(fd):
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def write_file(folder, name, size, chunk, deadline):
    """One rank's file `name` in the folder descriptor `folder`: written in chunks, fsync'ed,
    its pages dropped. (start, end) times."""
    view = memoryview(chunk)
    start = time.time()
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
    try:
        left = size
        while left > 0:
            n = os.write(fd, view[: min(left, len(view))])
            left -= n
            if time.monotonic() > deadline:
                raise CheckError(f"writing {name} ran past the check's time limit")
            if STOP.is_set():
                raise CheckError("stopped")
        os.fsync(fd)
        drop_cache(fd)
    finally:
        os.close(fd)
    return start, time.time()


def read_file(folder, name, size, deadline):
    """Another node's file `name` in the folder descriptor `folder`, read whole from the file
    system. (start, end) times."""
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    start = time.time()
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder)
    try:
        drop_cache(fd)
        got = 0
        while True:
            n = os.readv(fd, [view])
            if n == 0:
                break
            got += n
            if time.monotonic() > deadline:
                raise CheckError(f"reading {name} ran past the check's time limit")
            if STOP.is_set():
                raise CheckError("stopped")
    finally:
        os.close(fd)
    if got != size:
        raise CheckError(f"{name} holds {got} bytes, not the {size} its node wrote: the file system lost data")
    return start, time.time()


def metadata_pass(parent, threads, files, deadline):
    """Creates (with one small write), stats and deletes `files` small files on `threads`
    threads, in a new folder below the folder descriptor `parent`: seconds for each kind of
    operation."""
    os.mkdir("small", 0o700, dir_fd=parent)
    folder = open_child(parent, "small")
    names = [[f"t{t}-{i}" for i in range(t, files, threads)] for t in range(threads)]
    data = b"\0" * SMALL_FILE

    def create(names):
        for name in names:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
            os.write(fd, data)
            os.close(fd)
            if time.monotonic() > deadline:
                raise CheckError("the metadata pass ran past the check's time limit")
            if STOP.is_set():
                raise CheckError("stopped")

    def stat(names):
        for name in names:
            os.lstat(name, dir_fd=folder)

    def delete(names):
        for name in names:
            os.unlink(name, dir_fd=folder)

    seconds = {}
    try:
        for name, work in (("create", create), ("stat", stat), ("delete", delete)):
            start = time.perf_counter()
            in_parallel(work, names)
            seconds[name] = time.perf_counter() - start
    finally:
        os.close(folder)
    os.rmdir("small", dir_fd=parent)
    return seconds


def torch_probe():
    """What the save pass can use in this Python: {"torch", "gpus", "gpu"}, or {"skipped": why}."""
    try:
        import torch
    except ImportError as e:
        return {"skipped": f"torch does not import in {sys.executable} ({e}): the save pass needs it, NeMo-RL's image has it"}
    version = tuple(int(n) for n in re.findall(r"\d+", torch.__version__)[:2])
    try:
        import torch.distributed.checkpoint as dcp
    except ImportError:
        dcp = None
    if version < SAVE_TORCH or not hasattr(dcp, "async_save"):
        return {
            "skipped": f"torch {torch.__version__} in {sys.executable} is older than "
            f"{'.'.join(map(str, SAVE_TORCH))}: it has no torch.distributed.checkpoint.async_save, which NeMo-RL's saves use"
        }
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return {"torch": torch.__version__, "gpus": gpus, "gpu": torch.cuda.get_device_name(0) if gpus else None}


def wait_for_file(path, deadline, what):
    """Waits until `path` exists (a file the parent makes), within the deadline."""
    pause = 0.005
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"waited past the check's time limit for {what}")
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def save_rank(spec):
    """One rank of the save pass, in its own process: its share saved with
    torch.distributed.checkpoint into spec["folder"], timed; one tagged JSON line on stdout."""
    import datetime

    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemWriter

    deadline = time.monotonic() + spec["timeout"]
    rank, world, gpu = spec["rank"], spec["world"], spec["gpu"]
    if gpu:
        torch.cuda.set_device(rank)
    device = "cuda" if gpu else "cpu"
    # An async save stages on the host and needs a CPU collective beside NCCL.
    backend = "cpu:gloo,cuda:nccl" if gpu else "gloo"
    timeout = datetime.timedelta(seconds=max(1, spec["timeout"]))
    dist.init_process_group(backend, init_method="file://" + os.path.join(spec["store"], "store"), rank=rank, world_size=world, timeout=timeout)
    # This rank's parameters in tensors of at most SAVE_TENSOR, each kind as SAVE_LAYOUT says.
    sizes, left = [], spec["parameters"]
    while left > 0:
        sizes.append(min(left, SAVE_TENSOR))
        left -= sizes[-1]
    generator = torch.Generator(device=device).manual_seed(rank)
    state = {
        kind: {f"rank{rank}.tensor{i}": torch.randn(n, device=device, generator=generator).to(getattr(torch, dtype)) for i, n in enumerate(sizes)}
        for kind, dtype, _ in SAVE_LAYOUT
    }
    tensors = [t for part in state.values() for t in part.values()]
    result = {"rank": rank}
    if gpu:
        # The copy off the GPU, timed apart: most of what an async save blocks for.
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        staged = [t.to("cpu") for t in tensors]
        torch.cuda.synchronize()
        result["staging_s"] = time.perf_counter() - start
        del staged
    # Every node's ranks save together: this node's are ready, and the parent lets them go
    # once every node's are.
    fd = os.open(os.path.join(spec["store"], f"ready-{rank}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    wait_for_file(os.path.join(spec["store"], "go"), deadline, "every node's ranks")
    dist.barrier()
    sync_dir = os.path.join(spec["folder"], "sync")
    result["start"] = time.time()
    # To save() returning, then to this rank's files being on disk.
    dcp.save(state, storage_writer=FileSystemWriter(sync_dir, sync_files=False, thread_count=spec["threads"]))
    result["returned"] = time.time()
    for name in os.listdir(sync_dir):
        if name.startswith(f"__{rank}_") or (rank == 0 and name == ".metadata"):
            fd = os.open(os.path.join(sync_dir, name), os.O_RDONLY | os.O_NOFOLLOW)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    result["durable"] = time.time()
    if spec["asynchronous"]:
        dist.barrier()
        async_dir = os.path.join(spec["folder"], "async")
        result["async_start"] = time.time()
        pending = dcp.async_save(state, storage_writer=FileSystemWriter(async_dir, sync_files=True, thread_count=spec["threads"]))
        result["async_blocked"] = time.time()
        # A concurrent.futures.Future, or (torch 2.9 and later, with a stager) a response holding one.
        getattr(pending, "upload_completion", pending).result(timeout=max(1.0, deadline - time.monotonic()))
        result["async_landed"] = time.time()
    dist.barrier()
    dist.destroy_process_group()
    print(RESULT + json.dumps(result), flush=True)


def host_memory():
    """Bytes of memory the kernel says can be had without swapping; None where it does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f.read(1 << 16).splitlines():
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def save_pass(check, mine, index, nodes, ranks, rank_bytes, writer, deadline):
    """The node's share saved as the run saves it, in a folder below its own (`mine`), removed
    afterwards: the figures, or {"skipped": why}. A save that fails stops the check."""
    barrier(check, "save", index, nodes, deadline)
    # The raw files were read by now: their room is the save's. Their removal is flushed first,
    # so that freeing them does not slow the save (on an H100's disk it took a third longer).
    for r in range(ranks):
        os.unlink(f"rank-{r}.bin", dir_fd=mine)
    os.sync()
    try:
        found = result_of(run_python(["--torch-probe", str(os.getpid())], deadline), "torch's probe")
    except CheckError as e:
        found = {"skipped": f"torch did not start in {sys.executable}: {e}"}
    if "skipped" not in found:
        found["skipped"] = why_not(found, ranks, rank_bytes, writer)
    if found["skipped"] is not None:
        # Every node meets the others once more, at the start of the saves, whether it saves
        # or not: none waits for one that does not.
        barrier(check, "save-go", index, nodes, deadline)
        return {"skipped": found["skipped"]}
    gpu = found["gpus"] > 0
    # What the save writes: SAVE_LAYOUT's bytes a parameter, the node's share of the checkpoint.
    per_parameter = sum(size for _, _, size in SAVE_LAYOUT)
    parameters = max(1, rank_bytes // per_parameter)
    os.mkdir("save", 0o700, dir_fd=mine)
    folder = open_child(mine, "save")
    store = tempfile.mkdtemp(prefix="gke-rl-save-")
    started = []
    try:
        spec = {
            "parent": os.getpid(),
            "world": ranks,
            "gpu": gpu,
            "parameters": parameters,
            "threads": writer["threads"],
            "asynchronous": writer["asynchronous"],
            # The save's folder by its descriptor, held by every rank: no path is looked up again.
            "folder": f"/proc/self/fd/{folder}",
            "store": store,
            "timeout": max(1.0, deadline - time.monotonic()),
        }
        for r in range(ranks):
            started.append(spawn_python(["--save-rank", json.dumps(dict(spec, rank=r))], pass_fds=(folder,)))
        # This node's ranks hold their tensors; then every node's ranks save together.
        wait_ready(started, store, ranks, deadline)
        barrier(check, "save-go", index, nodes, deadline)
        fd = os.open(os.path.join(store, "go"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        ended = finish_all(started, deadline)
        started = []
        # The first to fail says why; the others were ended for it.
        failed = sorted((e for e in ended if e["code"] != 0 or RESULT not in e["out"]), key=lambda e: e["code"] == -signal.SIGKILL)
        if failed:
            # A full file system shows in torch's errors in many ways ("No space left on
            # device", or a serializer's "unexpected pos"): the room left says it plainly.
            raise CheckError(save_failure(failed[0], space(folder)["available"] < CHUNK))
        results = [result_of(e, "a rank of the save") for e in ended]
        saved = size_in(folder, "sync")
    finally:
        end_all(started)
        os.close(folder)
        shutil.rmtree(store, ignore_errors=True)
        remove_in(mine, "save")
    figures = {
        "torch": found["torch"],
        "device": "gpu" if gpu else "cpu",
        "ranks": ranks,
        "threads": writer["threads"],
        "parameters": parameters * ranks,
        "bytes_per_parameter": per_parameter,
        "bytes": saved,
        "start": min(r["start"] for r in results),
        "returned": max(r["returned"] for r in results),
        "durable": max(r["durable"] for r in results),
    }
    if gpu:
        figures["gpu"] = found["gpu"]
        figures["staging_s"] = max(r["staging_s"] for r in results)
    if writer["asynchronous"]:
        figures["async"] = {
            "start": min(r["async_start"] for r in results),
            "blocked": max(r["async_blocked"] for r in results),
            "landed": max(r["async_landed"] for r in results),
        }
    return figures


def why_not(found, ranks, rank_bytes, writer):
    """Why this node cannot save as the run does, or None."""
    gpus = found["gpus"]
    if 0 < gpus < ranks:
        return f"the node shows {gpus} GPU(s) to the check and the run has {ranks} ranks a node: are some taken by a running job?"
    # Each rank's tensors in host memory: from the GPU (staged), or made there; an async save
    # stages them again.
    needed = ranks * rank_bytes * (2 if writer["asynchronous"] else 1)
    available = host_memory()
    if available is not None and needed > available:
        return f"it needs about {needed / 1e9:.1f} GB of host memory and the node has {available / 1e9:.1f} GB available: lower --size"
    return None


def wait_ready(started, store, ranks, deadline):
    """Waits until every rank made its ready file, or one ended, or the deadline passed."""
    while len([n for n in os.listdir(store) if n.startswith("ready-")]) < ranks:
        if any(proc.poll() is not None for proc, _, _ in started) or STOP.is_set() or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def save_failure(ended, full):
    """Why a save process failed, in words: the exception it ended with (its last line), a full
    file system said as such."""
    lines = [re.sub(r"^\[rank\d+\]:\s*", "", line).strip() for line in ended["error"].splitlines()]
    text = next((line for line in reversed(lines) if line), f"it said nothing ({sys.executable})")
    if full or "No space left on device" in text or "Disk quota exceeded" in text:
        return f"the distributed checkpoint ran out of room on the file system under test: {text}"
    return f"the distributed checkpoint failed (exit {ended['code']}): {text}"


def result_of(ended, what):
    """The JSON a save process printed on its tagged line; a CheckError naming `what` when it
    printed none (or one that does not read)."""
    line = next((line[len(RESULT) :] for line in reversed(ended["out"].splitlines()) if line.startswith(RESULT)), None)
    if ended["code"] != 0 or line is None:
        raise CheckError(f"{what} failed (exit {ended['code']}): {ended['error'][-500:] or 'it said nothing'}")
    try:
        value = json.loads(line)
    except ValueError as e:
        raise CheckError(f"{what} printed what does not read: {e}") from None
    if not isinstance(value, dict):
        raise CheckError(f"{what} printed what does not read")
    return value


def die_with(parent):
    """A save process ends with the check that started it, even one killed outright (a Ray task
    cancelled with force): Linux's PR_SET_PDEATHSIG, then a look that the parent is still there."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def spawn_python(args, pass_fds=()):
    """This program in a process group of its own, so that a stop ends all of it; its output
    goes to unnamed files, which never fill as a pipe does."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *args],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            pass_fds=pass_fds,
            start_new_session=True,
        )
    except BaseException:
        out.close()
        err.close()
        raise
    return proc, out, err


def tail(file, limit):
    """The last `limit` bytes of an unnamed file, as text."""
    file.seek(0, os.SEEK_END)
    file.seek(max(0, file.tell() - limit))
    return file.read(limit).decode(errors="replace").strip()


def stop_all(started):
    """Ends the processes of `started` that still run, with their groups, and waits for them
    within CANCEL_WAIT_S: one stuck in the kernel on the file system under test is left, and
    said."""
    stuck = []
    for proc, _, _ in started:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=CANCEL_WAIT_S)
            except subprocess.TimeoutExpired:
                stuck.append(proc.pid)
    if stuck:
        error(f"save process(es) {stuck} did not end when killed: stuck in the kernel on the file system under test?")


def end_all(started):
    """[`stop_all`], then their output files closed."""
    stop_all(started)
    for _, out, err in started:
        out.close()
        err.close()


def finish_all(started, deadline):
    """Waits for every process of `started` within the deadline: each one's exit code, the tail
    of its stdout and of its stderr. When one fails, or past the deadline, or at a stop, the
    others are ended with their groups: a rank waiting at a collective for a dead one would
    wait out the check. Every process is ended and its files closed, whatever happens."""
    try:
        while any(proc.poll() is None for proc, _, _ in started):
            if any(proc.returncode not in (None, 0) for proc, _, _ in started):
                break
            if STOP.is_set() or time.monotonic() > deadline:
                raise CheckError("stopped" if STOP.is_set() else "the save pass ran past the check's time limit")
            time.sleep(0.05)
        stop_all(started)
        return [
            {"code": proc.returncode, "out": tail(out, SAVE_OUTPUT_BYTES), "error": tail(err, SAVE_ERROR_CHARS)} for proc, out, err in started
        ]
    finally:
        end_all(started)


def run_python(args, deadline):
    return finish_all([spawn_python(args)], deadline)[0]


def node_part(root, folder, index, nodes, ranks, rank_bytes, files, max_fill, timeout, writer):
    """This node's part of the check, in `folder` below the mount `root` (shared by every node,
    and resolved by the driver): its figures. Every file is reached from the descriptor of the
    check's folder, opened from the mount down without following a link."""
    deadline = time.monotonic() + timeout
    host = socket.gethostname()
    result = {"index": index, "host": host, "ranks": ranks, "rank_bytes": rank_bytes}
    unshared = f"{folder} is not the folder the check created: the driver and this node do not share it"
    try:
        check = open_folder(root, folder, own=True)
    except Missing as e:
        raise CheckError(unshared) from e
    try:
        try:
            leased = stat.S_ISREG(os.lstat(LEASE, dir_fd=check).st_mode)
        except OSError:
            leased = False
        if not leased:
            raise CheckError(unshared)
        result["mount"] = mount_of(path_of(check))
        return dict(result, **measure(check, index, nodes, ranks, rank_bytes, files, max_fill, deadline, writer))
    finally:
        os.close(check)


def measure(check, index, nodes, ranks, rank_bytes, files, max_fill, deadline, writer):
    """The figures of this node's part in the check's folder `check` (a descriptor)."""
    result = {"space": space(check)}
    # The whole check's bytes must leave the file system below the fill line.
    total = result["space"]["total"]
    # The save pass writes the node's share once more after the raw files are gone, twice when
    # it also saves asynchronously.
    wanted = nodes * ranks * rank_bytes * (2 if writer and writer["asynchronous"] else 1)
    room = max_fill * total - result["space"]["used"]
    if wanted > room:
        raise CheckError(
            f"the check would write {wanted / 1e9:.1f} GB, and the file system has {max(room, 0) / 1e9:.1f} GB "
            f"before it is {max_fill:.0%} full: lower --size"
        )
    os.mkdir(f"node-{index}", 0o700, dir_fd=check)
    mine = open_child(check, f"node-{index}")
    try:
        chunk = os.urandom(min(CHUNK, max(rank_bytes, 1)))
        barrier(check, "write", index, nodes, deadline)
        names = [f"rank-{r}.bin" for r in range(ranks)]
        spans = in_parallel(lambda name: write_file(mine, name, rank_bytes, chunk, deadline), names)
        result["write"] = {"start": min(s for s, _ in spans), "end": max(e for _, e in spans), "bytes": ranks * rank_bytes}
        barrier(check, "read", index, nodes, deadline)
        # Another node's files: never in this node's page cache.
        source = (index + 1) % nodes
        theirs = open_child(check, f"node-{source}")
        try:
            spans = in_parallel(lambda name: read_file(theirs, name, rank_bytes, deadline), names)
        finally:
            os.close(theirs)
        result["read"] = {"start": min(s for s, _ in spans), "end": max(e for _, e in spans), "bytes": ranks * rank_bytes, "from": source}
        barrier(check, "metadata", index, nodes, deadline)
        result["metadata"] = dict(metadata_pass(mine, ranks, files, deadline), files=files)
        if writer and "skipped" in writer:
            result["save"] = {"skipped": writer["skipped"]}
        elif writer:
            result["save"] = save_pass(check, mine, index, nodes, ranks, rank_bytes, writer, deadline)
    finally:
        os.close(mine)
    return result


def sweep(parent_fd, own):
    """Removes the folders of checks that were killed: named as a check names its own, with a
    lease that is a file and older than STALE_S. Nothing else is touched."""
    now = time.time()
    for entry in sorted(os.scandir(parent_fd), key=lambda e: e.name):
        name = entry.name
        if name == own or not OWN_NAME.fullmatch(name) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
            try:
                lease = os.lstat(LEASE, dir_fd=fd)
            finally:
                os.close(fd)
        except OSError:
            continue
        if stat.S_ISREG(lease.st_mode) and now - lease.st_mtime > STALE_S:
            gone = removed(parent_fd, name)
            print(f"{PREFIX} {'removed' if gone else 'cannot remove'} {json.dumps(name)}: left by a check that was killed", flush=True)


def removed(folder, name):
    """Whether `name` in the folder descriptor `folder` is gone once removed (never through a
    link)."""
    try:
        remove_in(folder, name)
        return True
    except OSError:
        return False


class Lease:
    """The check's folder, its lease kept fresh while the check runs, and removed at the end.
    It is made below `root`, the mount, which must exist: a check never makes a mount point.
    Its parent is held open, so whatever happens to the path later, removal stays inside."""

    def __init__(self, root, parent, name):
        if not OWN_NAME.fullmatch(name):
            raise CheckError(f"{name!r} is not a name the check gives its folder")
        if not os.path.isdir(root):
            raise CheckError(f"{root} does not exist here: the file system to check is not mounted there (the Lustre PVC, or --dir)")
        relative = os.path.relpath(parent, root)
        if relative.startswith(".."):
            raise CheckError(f"{parent} is not below {root}")
        # A link the user made at the mount is theirs: resolved here, once, and said; below
        # it, no link is followed, on the driver or on a node.
        self.root, self.link = resolved_mount(root)
        parent = os.path.normpath(os.path.join(self.root, relative))
        self.parent_fd = open_folder(self.root, parent, make=True, own=True)
        self.name = name
        self.folder = os.path.join(parent, name)
        sweep(self.parent_fd, name)
        os.mkdir(name, 0o700, dir_fd=self.parent_fd)
        self.stop = threading.Event()
        self.touch()
        self.thread = threading.Thread(target=self.keep, daemon=True)
        self.thread.start()

    def touch(self):
        fd = os.open(self.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self.parent_fd)
        try:
            lease = os.open(LEASE, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=fd)
            os.close(lease)
            os.utime(LEASE, dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)

    def keep(self):
        while not self.stop.wait(LEASE_EVERY_S):
            try:
                self.touch()
            except OSError:
                pass

    def close(self):
        """Removes the folder; whether it is gone."""
        self.stop.set()
        gone = removed(self.parent_fd, self.name)
        os.close(self.parent_fd)
        return gone


def end_threads():
    """Stops this process's check threads and waits, within CANCEL_WAIT_S, for them to end."""
    STOP.set()
    deadline = time.monotonic() + CANCEL_WAIT_S
    for thread in THREADS:
        thread.join(max(0.0, deadline - time.monotonic()))


def stop_on_signals():
    """SIGTERM (`ray job stop`, a pod's end) ends the check as Ctrl-C does, so it cleans up."""

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)


def setup_line(args, nodes, gpu_nodes, ranks, lease):
    setup = {"nodes": nodes, "gpu_nodes": gpu_nodes, "ranks": ranks, "rank_bytes": args.rank_bytes, "files": args.files, "folder": lease.folder}
    say("setup", dict(setup, mount_link=lease.link) if lease.link else setup)


def on_ray(args):
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray.init(logging_level="warning")
    # Ray's own SIGTERM handler ends the process at once: a stop must clean up first.
    stop_on_signals()
    alive = [n for n in ray.nodes() if n["Alive"]]
    gpu_nodes = [n for n in alive if n["Resources"].get("GPU", 0) >= 1]
    nodes = gpu_nodes or alive
    ranks = args.ranks or (min(int(n["Resources"]["GPU"]) for n in gpu_nodes) if gpu_nodes else 1)
    writer = writer_of(args)
    # The save pass saves from the GPUs: the tasks claim them, so that none is taken from a job
    # that holds it; while a job does, the save pass waits for another time.
    gpus = sum(int(n["Resources"]["GPU"]) for n in gpu_nodes)
    free = ray.available_resources().get("GPU", 0)
    claim = bool(writer and gpu_nodes and free >= gpus)
    if writer and gpu_nodes and not claim:
        writer = {"skipped": f"{free:.0f} of the GPU nodes' {gpus} GPUs are free: the save pass saves from them, so run it while no job holds them"}
    lease = Lease(args.root or args.dir, args.dir, args.name)
    runs = []
    try:
        setup_line(args, len(nodes), len(gpu_nodes), ranks, lease)
        deadline = time.monotonic() + args.timeout

        # What the tasks need, and nothing that holds a lock or a thread (Ray pickles it).
        work = (lease.root, lease.folder, len(nodes), ranks, args.rank_bytes, args.files, args.max_fill, args.timeout, writer)

        def part(index):
            # By module, not by `__main__`: Ray would pickle this file's globals (a lock among
            # them) with the function; the job's working dir is on the workers' path.
            from storage_check import Refused, node_part

            root, folder, count, ranks, rank_bytes, files, max_fill, timeout, writer = work
            where = {"node": ray.get_runtime_context().get_node_id()[:8], "ip": ray.util.get_node_ip_address()}
            try:
                return dict(node_part(root, folder, index, count, ranks, rank_bytes, files, max_fill, timeout, writer), **where)
            except (Refused, OSError) as e:
                return dict(where, error=str(e))

        # No CPU asked: the check must run beside whatever holds the nodes' CPUs.
        task = ray.remote(num_cpus=0, max_retries=0)(part)
        def pin(node):
            return NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)

        def claimed(node):
            return int(node["Resources"].get("GPU", 0)) if claim else 0

        runs = [task.options(scheduling_strategy=pin(node), num_gpus=claimed(node)).remote(i) for i, node in enumerate(nodes)]
        pending = list(runs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=max(0.1, deadline - time.monotonic()))
            if not done:
                error(f"the check did not finish within {args.timeout:.0f} s")
                return 1
            result = ray.get(done[0])
            if "error" in result:
                error(f"node {result['node']} ({result['ip']}): {result['error']}")
                return 1
            say("node", result)
        return 0
    except ray.exceptions.RayError as e:
        error(f"ray: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        return 1
    finally:
        # Tasks still running write no more before the folder goes: their workers are killed,
        # and the cancellations waited for. Finished ones are left alone.
        try:
            _, running = ray.wait(runs, num_returns=len(runs), timeout=0)
            for run in running:
                ray.cancel(run, force=True)
            ray.wait(running, num_returns=len(running), timeout=CANCEL_WAIT_S)
        except Exception:  # Ray is going away: the sweep of the next check has the rest
            pass
        CLOSED.append(lease.close())


def local(args):
    lease = Lease(args.root or args.dir, args.dir, args.name)
    try:
        ranks = args.ranks or 1
        # This machine stands for one GPU node.
        setup_line(args, 1, 1, ranks, lease)
        result = node_part(lease.root, lease.folder, 0, 1, ranks, args.rank_bytes, args.files, args.max_fill, args.timeout, writer_of(args))
        say("node", dict(result, node=socket.gethostname(), ip="127.0.0.1"))
        return 0
    finally:
        end_threads()
        CLOSED.append(lease.close())


def writer_of(args):
    """How the save pass writes, as the release's policy does; None without a save pass."""
    return None if args.raw_only else {"threads": args.save_threads, "asynchronous": args.save_async}


# Whether the check's folder was removed, once it was closed.
CLOSED = []


def main():
    # The save pass's own processes: `--torch-probe PARENT`, `--save-rank SPEC`.
    if sys.argv[1:2] == ["--torch-probe"] and len(sys.argv) == 3:
        die_with(int(sys.argv[2]))
        print(RESULT + json.dumps(torch_probe()), flush=True)
        return 0
    if sys.argv[1:2] == ["--save-rank"] and len(sys.argv) == 3:
        spec = json.loads(sys.argv[2])
        die_with(spec["parent"])
        save_rank(spec)
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="the folder the check's own folder is made in, on the file system under test")
    parser.add_argument("--root", default=None, help="the mount the folder is under, which must exist (default: --dir)")
    parser.add_argument("--name", default=None, help="the check's own folder (default: a new name)")
    parser.add_argument("--rank-bytes", type=int, required=True, help="bytes each rank writes")
    parser.add_argument("--ranks", type=int, default=0, help="files written in parallel per node (default: its GPUs, 1 without)")
    parser.add_argument("--files", type=int, default=2000, help="small files per node in the metadata pass")
    parser.add_argument("--max-fill", type=float, default=0.9, help="the fraction of the file system the check must stay below")
    parser.add_argument("--timeout", type=float, default=900, help="seconds the whole check may take")
    parser.add_argument("--local", action="store_true", help="this machine alone, without Ray")
    parser.add_argument("--save-threads", type=int, default=1, help="the save pass's writer threads a rank, as the release's policy sets them")
    parser.add_argument("--save-async", action="store_true", help="the save pass also saves asynchronously, as the release's policy does")
    parser.add_argument("--raw-only", action="store_true", help="no save pass: the file system alone")
    args = parser.parse_args()
    if args.rank_bytes < 1 or args.files < 1 or args.ranks < 0 or args.save_threads < 1 or not 0 < args.max_fill <= 1:
        parser.error("--rank-bytes, --files and --save-threads must be at least 1, --ranks at least 0, --max-fill in (0, 1]")
    args.name = args.name or f"check-{socket.gethostname()}-{os.getpid()}-{os.urandom(4).hex()}"
    stop_on_signals()
    try:
        return (local if args.local else on_ray)(args)
    except (Refused, OSError) as e:
        error(str(e))
        return 1
    except KeyboardInterrupt:
        if CLOSED == [True]:
            error("stopped; the check's folder was removed")
        else:
            error("stopped before it could remove its folder: the next check removes it once its lease is stale")
        return 130


if __name__ == "__main__":
    sys.exit(main())
