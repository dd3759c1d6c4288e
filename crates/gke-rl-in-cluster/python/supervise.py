"""gke-rl's run supervisor: the Ray job's entrypoint, on the Ray head, running the training.

`python3 -m gke_rl_supervise --run ID --runs DIR [options] -- 'ENTRYPOINT'` runs ENTRYPOINT with
/bin/sh and keeps the Ray job RUNNING through preemptions: when a Ray node is lost (Ray counts
fewer alive nodes than the run had, or the training fails with Ray's words for a lost node or
driver) it stops what is left of the training, waits until Ray counts the run's nodes again,
puts back a checkpoint a save's swap left as `old_step_N`, removes half-written ones
(`tmp_step_N`) and runs ENTRYPOINT again, which resumes from the newest complete `step_N`. A
program failure is never retried. Each save's durability is timed: from NeMo-RL's "Saving
checkpoint" line to its `step_N` appearing, which an async save renames later.

Every restart is recorded in DIR/ID/events.jsonl (on the shared file system, for the keeper and
the next supervisor) and printed as a `gke-rl-record:` line into the job's log, where
`gke-rl status` reads it. The patterns that tell a lost node from a program failure, and
NeMo-RL's log markers, are generated into TABLES from gke-rl's own tables (crates/gke-rl).
"""

import argparse
import collections
import errno
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile

TABLES = None  # generated

# mount.py  # generated

# The environment variable that marks every process of one attempt, so that a later attempt
# can end processes an earlier one left behind (a killed supervisor's training).
MARK = "GKE_RL_ATTEMPT"
POLL_S = 1.0
# How long a training that failed is taken for the program's only once Ray still counts its
# nodes: a training that dies with its node often ends before Ray marks the node dead.
NODE_LOSS_SETTLE_S = 10.0


def lines_of(text):
    """Rust's str::lines: split on \\n, drop one trailing \\r per line, no final empty line."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def classify(message, log_tail):
    """Why a run failed: ("node-lost" | "driver-lost" | "program", detail). gke_rl_in_cluster::recovery::classify."""
    patterns = TABLES["recovery"]
    lines = lines_of(message) + lines_of(log_tail)

    def find(markers):
        for line in lines:
            if any(m in line for m in markers):
                return line.strip()
        return None

    for kind, key in (("program", "out_of_memory"), ("node-lost", "node_lost"), ("driver-lost", "driver_lost")):
        line = find(patterns[key])
        if line is not None:
            return kind, line
    return "program", exception(log_tail, patterns) or exception(message, patterns) or "no reason given"


def exception(text, patterns):
    main = text.split(patterns["thread_separator"])[0]

    def is_exception(line):
        name = re.split(r"[:(]", line)[0]
        return name != "" and " " not in name and ": " in line and any(name.endswith(e) for e in patterns["exception_ends"])

    stripped = [line.strip() for line in reversed(lines_of(main))]
    for line in stripped:
        if is_exception(line):
            return line
    for line in stripped:
        if line:
            return line
    return None


def is_infrastructure(kind):
    return kind in ("node-lost", "driver-lost")


def describe(kind, detail):
    words = {"node-lost": "a Ray node was lost", "driver-lost": "the job's driver was lost", "program": "the program failed"}
    return f"{words[kind]} ({detail})"


# One writer at a time: the reader thread echoes the training while the main thread says and
# records, and a record must have its line to itself to be read.
STDOUT = threading.Lock()
# Whether the last byte echoed from the training ended its line.
AT_LINE_START = [True]


def emit(text):
    """`text` as a line of its own, in one write: a line end in it (a detail taken from the
    training's output) is written as an escape, so it can start no line of its own."""
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    with STDOUT:
        sys.stdout.write(("" if AT_LINE_START[0] else "\n") + text + "\n")
        sys.stdout.flush()
        AT_LINE_START[0] = True


def echo(raw, final=False):
    """The training's bytes, as they came, except that a line of the training's that would read
    as a record (a prompt or a generation can print one) is marked as the training's: only the
    supervisor's own lines start with the record prefix. A line start that could still become
    the prefix when the next bytes come is held back until they do (`final`: no more come)."""
    prefix = TABLES["record_prefix"].encode()
    with STDOUT:
        raw, HELD[0] = HELD[0] + raw, b""
        # gke-rl reads a lone \r as a line end too (a progress bar redrawing itself).
        if AT_LINE_START[0] and raw.startswith(prefix):
            raw = TRAINING_MARK + raw
        raw = raw.replace(b"\r" + prefix, b"\r" + TRAINING_MARK + prefix)
        if not final:
            cut = raw.rfind(b"\r") + 1 if b"\r" in raw else (0 if AT_LINE_START[0] else None)
            if cut is not None and len(raw) - cut < len(prefix) and prefix.startswith(raw[cut:]) and cut < len(raw):
                raw, HELD[0] = raw[:cut], raw[cut:]
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        if raw:
            AT_LINE_START[0] = raw.endswith((b"\n", b"\r"))


# The start of a line of the training's that may yet be a record's prefix.
HELD = [b""]


# What starts a line of the training's that looked like a record.
TRAINING_MARK = b"(training) "


def say(text):
    emit(f"gke-rl: {text}")


class Run:
    """The run's folder on the shared file system: run.json (what resubmits it) and
    events.jsonl (what happened), appended to, one JSON object a line."""

    def __init__(self, runs, run):
        self.run = run
        self.dir = os.path.join(runs, run)
        # Never a mount point: a folder at the file system's root that is not there is storage
        # that is not mounted on this node (a local head has no /lustre).
        top = top_of(runs)
        if not os.path.isdir(top):
            raise SystemExit(
                f"gke-rl: {top} is not there, so the runs folder {runs} is on storage this node does not have: "
                f"submit with --runs-dir DIR (a folder every node of the cluster shares), or mount {top}"
            )
        # Every folder from the mount down is this user's and no link: the run's records are
        # read and written through the descriptor of its folder, whatever its path names later.
        try:
            folder = open_folder(top, runs, make=True, own=True)
            try:
                self.fd = open_child(folder, run, make=True)
            finally:
                os.close(folder)
            owned(self.fd, self.dir)
        except FileNotFoundError as e:
            raise SystemExit(f"gke-rl: {self.dir} is not there ({e.strerror}): not writing there") from e
        except OSError as e:
            raise SystemExit(f"gke-rl: {self.dir} is not a folder of the run's own (a link, or a file): not writing there") from e
        except Refused as e:
            raise SystemExit(f"gke-rl: {e}: not writing there") from e

    def read(self, name):
        return read_record(self.fd, name, self.run)

    def write(self, name, value):
        write_record(self.fd, name, self.run, value)

    def events(self):
        try:
            return read_events(self.fd, self.run)
        except OSError as e:  # a padded events.jsonl: a part is never the run's story
            raise SystemExit(f"gke-rl: the run's events in {self.dir} cannot be read whole ({e})") from e

    def record(self, event, show=True):
        try:
            event = append_event(self.fd, self.run, event)
        except OSError as e:  # a full or flaky file system must not end the supervision
            say(f"cannot record {event.get('event')} in {self.dir} ({e})")
        if show:
            show_record(event)
        return event


def show_record(event):
    emit(TABLES["record_prefix"] + json.dumps(event))


def restarts_counted(events):
    """Restarts the budget has paid for: the supervisors' own, and the keeper's resubmissions
    (each counted once, when the keeper made it)."""
    own = [e for e in events if e.get("event") == "restart" and not e.get("resubmitted")]
    return len(own) + len([e for e in events if e.get("event") == "pending"])


def dashboard_of_this_cluster():
    """The dashboard of the Ray cluster this job runs on. GKE_RL_DASHBOARD, where set; else the
    one the head's own processes name: the dashboard started with this job's GCS address
    (RAY_ADDRESS, which Ray sets for every job), or the only one on the node; else Ray's
    default port. Read from /proc, not asked of Ray: the job's python need not have Ray."""
    given = os.environ.get("GKE_RL_DASHBOARD")
    if given:
        return given if "://" in given else f"http://{given}"
    gcs = os.environ.get("RAY_ADDRESS", "")
    found = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        pids = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                words = [w.decode(errors="replace") for w in f.read(1 << 16).split(b"\0")]
        except OSError:
            continue
        if not any(w.endswith("/dashboard/dashboard.py") for w in words):
            continue
        # Only this user's: another's process could name this cluster's GCS and get its token.
        try:
            if os.stat(f"/proc/{pid}").st_uid != os.getuid():
                continue
        except OSError:
            continue
        flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--") and "=" in w)
        host = flags.get("host", "127.0.0.1")
        host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else (f"[{host}]" if ":" in host else host)
        url = f"http://{host}:{flags.get('port', '8265')}"
        if gcs and flags.get("gcs-address") == gcs:
            return url
        found.append(url)
    return found[0] if len(found) == 1 else "http://127.0.0.1:8265"


def ray_nodes(dashboard):
    """Ray's nodes as its state API lists them (GET /api/v0/nodes, which every Ray gke-rl
    supports has): (node id, alive, address, why it died)."""
    request = authorized(urllib.request.Request(f"{dashboard.rstrip('/')}/api/v0/nodes?limit=10000&detail=true"))
    with urllib.request.urlopen(request, timeout=10) as answer:
        listed = json.loads(answer.read(16 * 1024 * 1024))
    rows = listed["data"]["result"]["result"]
    return [(n.get("node_id"), n.get("state") == "ALIVE", n.get("node_ip"), n.get("state_message")) for n in rows]


def nodes_now(dashboard):
    """(alive, dead) as the dashboard says them now, or None when it does not answer."""
    try:
        nodes = ray_nodes(dashboard)
    except Exception:  # the dashboard restarts with its head; its answer may be cut
        return None
    return [n for n in nodes if n[1]], [n for n in nodes if not n[1]]


def alive_nodes(dashboard):
    """Ray's alive and dead nodes; a dashboard that does not answer for a minute ends the
    supervisor, saying how to run without it."""
    deadline = time.time() + 60
    while True:
        try:
            nodes = ray_nodes(dashboard)
            return [n for n in nodes if n[1]], [n for n in nodes if not n[1]]
        except Exception as e:  # the dashboard restarts with its head; its answer may be cut
            if time.time() >= deadline:
                raise SystemExit(
                    f"Ray's dashboard at {dashboard} does not say its nodes ({e}): set GKE_RL_DASHBOARD in the job's env "
                    "to the address the head reaches it at, or submit with --no-supervisor"
                ) from e
            say(f"Ray's dashboard does not say its nodes ({e}); asking again")
            time.sleep(1)


def dead_node_words(dead, known_alive):
    """Ray's words for the nodes that died during the run."""
    for node_id, _, address, why in dead:
        if node_id in known_alive:
            return f"node {(node_id or '?')[:12]} ({address or '?'}) was marked dead: {why or 'no reason given'}"
    return "a node of the run was marked dead"


def checkpoint_folder(folder):
    """The checkpoint folder's descriptor, opened from the mount down (never through a link),
    each folder this user's; None where it is not there yet. Refused where it cannot be used
    safely: never taken for an empty folder."""
    if not folder:
        return None
    try:
        return open_folder(top_of(folder), folder, own=True)
    except Missing:
        return None
    except OSError as e:
        raise Refused(f"{folder}: {e.strerror or e}") from e


def checkpoints(folder):
    """(newest complete step or None, half-written tmp_step folders, old_step folders of a swap,
    the names NeMo-RL would glob as steps that gke-rl cannot name). Only folders count: a file or
    a link named step_N is no checkpoint (NeMo-RL's glob would list it, and fail to load it)."""
    steps, partial, old, refused = [], [], [], []
    fd = checkpoint_folder(folder)
    if fd is None:
        return None, [], [], []
    try:
        entries = list(os.scandir(fd))
    except OSError as e:
        raise Refused(f"{folder} cannot be listed ({e.strerror or e})") from e
    finally:
        os.close(fd)
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        for pattern, found in ((STEP, steps), (PARTIAL, partial), (OLD, old)):
            number = step_of(pattern, entry.name)
            if number is not None and number < 0:
                refused.append(entry.name)
            elif number is not None:
                found.append(number if pattern is STEP else entry.name)
    return (max(steps) if steps else None), sorted(partial), sorted(old), sorted(refused)


def restore_swapped(folder):
    """NeMo-RL replaces an existing step_N in three steps (nemo_rl/utils/checkpoint.py
    `_rename_checkpoint`, v0.7.0 and main at 7ea279a): step_N becomes old_step_N, tmp_step_N
    becomes step_N, old_step_N is deleted. A preemption between the renames leaves old_step_N and
    tmp_step_N and no step_N: old_step_N is the newest complete checkpoint, which NeMo-RL never
    looks at, and is put back as step_N (tmp_step_N then goes as any half-written one). An
    old_step_N beside a complete step_N (a preemption before the delete), or older than a
    complete step, is an orphan, removed; any other is left, as nothing says it is whole.
    What was restored, what was removed and its bytes, and what could not be done."""
    restored, removed, freed, failed = [], [], 0, []
    newest, partial, old, _ = checkpoints(folder)
    fd = checkpoint_folder(folder) if old else None
    if fd is None:
        return restored, removed, freed, failed
    try:
        for name in old:
            step = name[len("old_") :]
            try:
                complete = os.lstat(step, dir_fd=fd)
            except FileNotFoundError:
                complete = None
            if complete is not None and not stat.S_ISDIR(complete.st_mode):
                continue
            if complete is not None or (newest is not None and newest > step_of(STEP, step)):
                size, problem = remove_folder(fd, name)
                if problem:
                    failed.append(f"cannot remove the orphan {name}: {problem}")
                else:
                    removed.append(name)
                    freed += size
            elif f"tmp_{step}" in partial:
                # Called at once, in this turn of the loop.
                problem = settled(lambda: os.rename(name, step, src_dir_fd=fd, dst_dir_fd=fd))  # noqa: B023
                if problem:
                    failed.append(f"cannot put back {name} as {step}: {problem}")
                else:
                    restored.append(step)
    finally:
        os.close(fd)
    return restored, removed, freed, failed


def settled(action, seconds=30):
    """Runs `action`, again each second for `seconds` while the file system refuses (the writers
    of a lost attempt may still be finishing on the nodes that are left): None, or why not."""
    deadline = time.time() + seconds
    while True:
        try:
            action()
            return None
        except OSError as e:
            if time.time() >= deadline:
                return e.strerror or str(e)
            time.sleep(1)


def remove_folder(fd, name):
    """Removes the folder `name` in the folder descriptor `fd`, as `settled` retries: (the bytes
    it held, None), or (0, why not)."""
    size = size_in(fd, name)
    problem = settled(lambda: remove_in(fd, name))
    return (0, problem) if problem else (size, None)


def remove_partial(folder):
    """Removes the half-written checkpoints a lost node left: NeMo-RL reuses tmp_step_N for its
    next save of step N, which would mix the old shards into it. What was removed, its bytes,
    and what could not be."""
    removed, freed, failed = [], 0, []
    partial = checkpoints(folder)[1]
    fd = checkpoint_folder(folder) if partial else None
    if fd is None:
        return removed, freed, failed
    try:
        for name in partial:
            size, problem = remove_folder(fd, name)
            if problem:
                failed.append(f"cannot remove the half-written checkpoint {name}: {problem}")
            else:
                removed.append(name)
                freed += size
    finally:
        os.close(fd)
    return removed, freed, failed


def processes():
    """The pids of this host's processes, from /proc (the standard library has no process list,
    and the job's python need not have Ray's psutil)."""
    try:
        return [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []


def proc_stat(pid):
    """(state, parent pid, start time in clock ticks) of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read(4096)
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces and parentheses itself.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return (fields[0].decode(), int(fields[1]), int(fields[19])) if len(fields) > 19 else None


def end_processes(mark_prefix):
    """Kills processes on this host whose environment carries an earlier attempt's mark."""
    ended = 0
    wanted = f"{MARK}={mark_prefix}".encode()
    for pid in processes():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read(1 << 20).split(b"\0")
        except OSError:
            continue
        if any(v.startswith(wanted) for v in environ):
            try:
                os.kill(pid, signal.SIGKILL)
                ended += 1
            except OSError:
                pass
    return ended


def kill_tree(child, grace):
    """SIGTERM to the training and its descendants, SIGKILL after `grace` seconds to those
    still there. Each process is known by its pid and start time, so a pid the kernel has
    given to another process meanwhile is left alone. Without /proc, the training's own
    process alone (its process group goes when the supervisor ends)."""
    parents = {}
    for pid in processes():
        found = proc_stat(pid)
        if found is not None:
            parents.setdefault(found[1], []).append((pid, found[2]))
    root = proc_stat(child.pid)
    tree, queue = [], [(child.pid, root[2] if root else None)]
    while queue:
        pid, started = queue.pop()
        tree.append((pid, started))
        queue.extend(parents.get(pid, []))

    def still_there(pid, started):
        now = proc_stat(pid)
        return now is not None and now[0] != "Z" and now[2] == started

    def signal_all(number):
        for pid, started in tree:
            # The training's own process is not reaped until polled: its pid is still its.
            if still_there(pid, started) or (pid == child.pid and child.poll() is None):
                try:
                    os.kill(pid, number)
                except OSError:
                    pass

    signal_all(signal.SIGTERM)
    deadline = time.time() + grace
    while time.time() < deadline:
        if child.poll() is not None and not any(still_there(pid, started) for pid, started in tree):
            return
        time.sleep(0.1)
    signal_all(signal.SIGKILL)


def parent_death_signal():
    """The training gets SIGKILL if the supervisor dies (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


class Attempt:
    """One run of the training: its output echoed, its tail kept, its steps counted."""

    def __init__(self, entrypoint, mark, run, submission, started_from, checkpoint_dir):
        self.run, self.submission, self.started_from = run, submission, started_from
        self.saves = Durability(checkpoint_dir)
        # The run key is not passed on: the training needs none (with tokens on, it holds the Ray
        # token, the same secret, for Ray's own use).
        env = {k: v for k, v in os.environ.items() if k != RUN_KEY_VARIABLE}
        env[MARK] = mark
        self.child = subprocess.Popen(
            ["/bin/sh", "-c", entrypoint],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=parent_death_signal,
            # Its own group, which the supervisor ends whatever way it exits.
            start_new_session=True,
        )
        self.tail = collections.deque(maxlen=200)
        self.steps = 0
        self.first_output = None
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        step_done, saving = TABLES["checkpoints"]["step_done"], TABLES["checkpoints"]["saving"]
        # Bounded: a progress bar redraws with \r and no \n.
        for raw in iter(lambda: self.child.stdout.readline(65536), b""):
            if self.first_output is None:
                self.first_output = time.time()
            echo(raw)
            line = raw.decode("utf-8", "replace")
            self.tail.append(line.rstrip("\n"))
            # The save's time, for the report's time axis (the log has none): in the log only.
            if saving in line and raw.endswith(b"\n"):
                step = line.split(saving, 1)[1].strip().removesuffix("...")
                # A u64, as gke-rl reads it: a longer number is not a step (and int() refuses it).
                if step.isascii() and step.isdigit() and len(step) <= 19:
                    at = time.time()
                    show_record({"event": "checkpoint", "step": int(step), "at": round(at, 3)})
                    self.saves.begun(int(step), at)
            if step_done in line:
                self.steps += 1
                # What a head lost mid-step would have reached, for the keeper's record.
                progress = {"submission": self.submission, "steps_reached": self.started_from + self.steps}
                try:
                    self.run.write("progress.json", progress)
                except OSError as e:  # the training must not block on a full or flaky file system
                    say(f"cannot record progress ({e})")
        echo(b"", final=True)

    def wait(self, timeout):
        try:
            return self.child.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def finish(self):
        self.reader.join(timeout=10)
        self.saves.poll()
        return "\n".join(self.tail)


class Durability:
    """When each save is durable: its step_N appears, which NeMo-RL renames from tmp_step_N once
    every writer has finished (at once after a synchronous save; later, from a background
    thread, with Megatron's async_save: NVIDIA-NeMo/RL #2828). A step_N that was there before
    the save (its swap replaces it) counts only once it is another folder."""

    # Saves waited for at once, at most: NeMo-RL finishes one before it begins the next.
    MOST = 16

    def __init__(self, folder):
        self.folder = folder
        self.pending = {}  # step: (begun at, the identity of step_N then)
        self.lock = threading.Lock()

    def identity(self, step):
        try:
            st = os.lstat(os.path.join(self.folder, f"step_{step}"))
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None

    def begun(self, step, at):
        if not self.folder:
            return
        with self.lock:
            if len(self.pending) < self.MOST:
                self.pending[step] = (at, self.identity(step))

    def poll(self):
        with self.lock:
            pending = list(self.pending.items())
        for step, (begun, before) in pending:
            now_there = self.identity(step)
            if now_there is not None and now_there != before:
                now = time.time()
                show_record({"event": "durable", "step": step, "at": round(now, 3), "after_s": round(now - begun, 3)})
                with self.lock:
                    self.pending.pop(step, None)


def ask_job(dashboard, submission):
    """(HTTP status, the job as the Jobs API has it); (None, None) when it does not answer."""
    if not dashboard:
        return None, None
    url = dashboard if "://" in dashboard else f"http://{dashboard}"
    try:
        request = authorized(urllib.request.Request(f"{url.rstrip('/')}/api/jobs/{submission}"))
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read(16 * 1024 * 1024))
    except urllib.error.HTTPError as e:
        return e.code, None
    except (OSError, ValueError):
        return None, None


def job_details(dashboard, submission):
    """The job as the Jobs API has it: what the keeper resubmits after a head loss."""
    status, job = ask_job(dashboard, submission)
    return job if status == 200 and isinstance(job, dict) else None


def job_over(dashboard, submission):
    """Whether the Jobs API says `submission` has ended, or knows it no more (its head restarted
    and forgot it); not when it does not answer."""
    status, job = ask_job(dashboard, submission)
    return status == 404 or (status == 200 and isinstance(job, dict) and job.get("status") in ("STOPPED", "SUCCEEDED", "FAILED"))


def save_packages(run, runtime_env):
    """Copies of this job's gcs:// packages, which a restarted head forgets, for the keeper."""
    saved = {}
    working_dir = runtime_env.get("working_dir")
    if isinstance(working_dir, str) and working_dir.startswith("gcs://"):
        saved[working_dir] = zip_folder(os.getcwd(), run.fd, "working_dir.zip")
    module = os.path.dirname(os.path.abspath(__file__))
    for uri in runtime_env.get("py_modules") or []:
        if isinstance(uri, str) and uri.startswith("gcs://") and module.endswith(uri.rsplit("/", 1)[-1].removesuffix(".zip")):
            saved[uri] = zip_folder(module, run.fd, "supervisor.zip")
    # Each with its digest: a package replaced on the shared file system is never used.
    return {uri: list(saved_as) for uri, saved_as in saved.items() if saved_as}


def zip_folder(folder, into, target):
    """Zips `folder` into a private file, takes its digest there, then copies it to `target` in
    the folder descriptor `into`: the digest is of the bytes this process wrote, whatever happens
    to `target` after."""
    total = 0
    with tempfile.TemporaryFile() as private:
        with zipfile.ZipFile(private, "w", zipfile.ZIP_DEFLATED) as z:
            for root, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    path = os.path.join(root, name)
                    if os.path.islink(path) or not os.path.isfile(path):
                        continue
                    total += os.path.getsize(path)
                    if total > MAX_PACKAGE_BYTES:
                        return None
                    z.write(path, os.path.relpath(path, folder))
        private.seek(0)
        digest = hashlib.sha256()
        temp = f"{target}.{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=into)
            with os.fdopen(fd, "wb") as shared:
                for block in iter(lambda: private.read(1 << 20), b""):
                    digest.update(block)
                    shared.write(block)
            os.replace(temp, target, src_dir_fd=into, dst_dir_fd=into)
        except OSError as e:
            try:
                os.unlink(temp, dir_fd=into)
            except OSError:
                pass
            say(f"cannot save the working dir for restarts after a head loss ({e})")
            return None
    return target, digest.hexdigest()


def snapshot(folder, limit=10000):
    """The files of a folder, up to `limit` of them."""
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            path = os.path.join(root, name)
            try:
                if os.path.lexists(path):
                    files.append(os.path.relpath(path, folder))
            except OSError:
                pass
            if limit is not None and len(files) >= limit:
                return files
    return files


def same_folder(folder, files, seconds=60):
    """Whether `folder` holds `files` again (the training may have added some): a node that joins
    sets the job up again, and on a shared file system its copy replaces the one the training
    ran in (waits `seconds`)."""
    deadline = time.time() + seconds
    while not set(files) <= set(snapshot(folder, limit=None)):
        if time.time() > deadline:
            return False
        time.sleep(0.2)
    return True


# The copies of the working dir made for restarts, removed when the supervisor ends.
COPIES = []


def private_copy(run, info):
    """A fresh copy of the working dir, from the package saved at the run's first start, if it
    is still the one recorded (its digest in the genuine run.json)."""
    recorded = [saved for saved in (info.get("packages") or {}).values() if saved and saved[0] == "working_dir.zip"]
    if not recorded:
        return None
    package = verified_copy(run.fd, "working_dir.zip", recorded[0][1], MAX_PACKAGE_BYTES)
    if package is None:
        say("the saved working dir is not the one recorded at the run's start: not using it")
        return None
    with package:
        return unpacked_copy(package)


def unpacked_copy(package):
    folder = tempfile.mkdtemp(prefix="gke-rl-restart-")
    COPIES.append(folder)
    GUARDIAN.watch_copy(folder)
    with zipfile.ZipFile(package) as z:
        for member in z.infolist():
            path = z.extract(member, folder)  # names made safe by zipfile
            mode = (member.external_attr >> 16) & 0o777
            if mode:
                os.chmod(path, mode)
    return folder


def without_secrets(runtime_env, secrets):
    env_vars = runtime_env.get("env_vars")
    if isinstance(env_vars, dict):
        runtime_env = dict(runtime_env, env_vars={k: v for k, v in env_vars.items() if k not in secrets})
    return runtime_env


def first_start(run, args, submission, dashboard, packages):
    """Records what resubmits the run: its request (no secret values), its size, its budgets."""
    job = job_details(dashboard, submission)
    if job is None:  # the request as this process has it (the entrypoint's resources aside)
        config = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}"))
        job = {"entrypoint": f"{TABLES['interpreters'][0]} -m {TABLES['module']} " + shlex.join(sys.argv[1:]), "runtime_env": config.get("runtime_env")}
    runtime_env = job.get("runtime_env") or {}
    alive, _ = alive_nodes(dashboard)
    request = {key: job.get(key) for key in TABLES["request_keys"] if job.get(key) is not None}
    request["runtime_env"] = without_secrets(runtime_env, set(args.secret))
    info = {
        "run": args.run,
        "cluster": args.cluster,
        "nodes": max(args.nodes or 0, len(alive)),
        "max_restarts": args.max_restarts,
        "max_lost_s": args.max_lost,
        "wait_s": args.wait,
        "checkpoints": args.checkpoints,
        "request": request,
        "packages": packages,
    }
    run.write("run.json", info)
    return info


def lost_so_far(events):
    return sum(e.get("lost_s", 0) for e in events if e.get("event") == "restart")


def wait_whole(dashboard, wanted, seconds):
    """Waits until Ray counts `wanted` alive nodes; (alive, the time it did) or (alive, None)."""
    deadline = time.time() + seconds
    last = None
    while True:
        alive = len(alive_nodes(dashboard)[0])
        if alive >= wanted:
            return alive, time.time()
        if alive != last:
            say(f"waiting for Ray nodes: {alive} of {wanted} alive")
            last = alive
        if time.time() >= deadline:
            return alive, None
        time.sleep(POLL_S)


def parse(argv):
    parser = argparse.ArgumentParser(prog="gke_rl_supervise")
    parser.add_argument("--run", required=True, help="the run's first submission id")
    parser.add_argument("--runs", required=True, help="the folder of runs on the shared file system")
    parser.add_argument("--cluster", default="", help="the RayCluster (namespace/name) whose keeper may resubmit the run")
    parser.add_argument("--nodes", type=int, default=0, help="Ray nodes the run has when whole")
    parser.add_argument("--max-restarts", type=int, default=3)
    parser.add_argument("--max-lost", type=float, default=0, help="seconds of wall time restarts may lose (0: no bound)")
    parser.add_argument("--wait", type=float, default=1800, help="seconds to wait for the nodes before each restart")
    parser.add_argument("--grace", type=float, default=10, help="seconds a training has to end after its node is lost")
    parser.add_argument("--checkpoints", default="", help="NeMo-RL's checkpoint_dir")
    parser.add_argument("--secret", action="append", default=[], help="an env var whose value is never written down")
    parser.add_argument("entrypoint", help="the training command, for /bin/sh")
    return parser.parse_args(argv)


# The guardian: a process of its own session (out of the group Ray ends with the job's driver)
# that reads what the supervisor tells it until its pipe ends, which the kernel does however the
# supervisor ends, SIGKILL included. Then it ends the trainings' process groups and every
# process marked as this submission's, and removes the restart copies. A process that leaves
# both on purpose (a new session and an emptied environment) escapes it: the training is the
# user's own code, and this guards against accidents, not against it. Standard library only.
GUARDIAN_PROGRAM = r"""
import os, shutil, signal, sys
groups, copies, marks = [], [], []
for line in sys.stdin:
    kind, _, value = line.rstrip("\n").partition(" ")
    {"group": groups, "copy": copies, "mark": marks}.get(kind, []).append(value)
for group in groups:
    try:
        os.killpg(int(group), signal.SIGKILL)
    except (OSError, ValueError):
        pass
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read(1 << 20).split(b"\0")
    except OSError:
        continue
    if int(pid) != os.getpid() and any(v.startswith(b"MARK=" + m.encode()) for v in environ for m in marks):
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
for copy in copies:
    shutil.rmtree(copy, ignore_errors=True)
""".replace("MARK=", MARK + "=")


class Guardian:
    """The supervisor's side of the guardian: what it must end and remove if the supervisor
    goes."""

    def __init__(self):
        self.pipe = None

    def start(self, mark):
        self.pipe = subprocess.Popen(
            [sys.executable, "-c", GUARDIAN_PROGRAM],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.tell(f"mark {mark}")

    def tell(self, line):
        if self.pipe is not None:
            try:
                self.pipe.stdin.write(line.encode() + b"\n")
                self.pipe.stdin.flush()
            except OSError:
                pass

    def watch_group(self, group):
        self.tell(f"group {group}")

    def watch_copy(self, folder):
        self.tell(f"copy {folder}")

    def close(self):
        """The supervisor ends as it should: the guardian does its part now and ends."""
        if self.pipe is not None:
            try:
                self.pipe.stdin.close()
                self.pipe.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass


GUARDIAN = Guardian()


class WriterLease:
    """This run's claim on the checkpoint folder, `.gke-rl-writer` in it: created exclusively
    (of two supervisors that start together, one holds it), signed with the folder it claims,
    and kept fresh while the supervisor lives. Another submission of the same cluster (the same
    run key) whose claim is fresh still writes there: no second training writes beside it. An
    earlier submission of this run (a supervisor just killed) is waited for until its claim goes
    stale. A claim nobody here vouches for (forged, copied from another folder, or another
    cluster's) is no claim."""

    NAME = TABLES["writer"]["name"]
    EVERY_S = TABLES["writer"]["every_s"]
    STALE_S = TABLES["writer"]["stale_s"]
    # Two supervisors that both found the claim stale: each looks again after this, and the one
    # whose claim is there holds it.
    SETTLE_S = 1

    def __init__(self, folder, run, submission, cluster, ended=lambda submission: False):
        # Whether the Jobs API says a submission has ended, or knows it no more: its claim is
        # then no claim.
        self.ended = ended
        self.folder = os.path.abspath(folder) if folder else None
        self.claim = {
            "run": run,
            "submission": submission,
            "cluster": cluster,
            "folder": self.folder,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        self.stop = threading.Event()

    def opened(self):
        """The folder's descriptor, opened from the mount down (never through a link)."""
        return open_folder(top_of(self.folder), self.folder, own=True)

    def read(self):
        try:
            fd = self.opened()
            try:
                text = read_bounded(fd, self.NAME, 64 * 1024)
            finally:
                os.close(fd)
            claim = json.loads(text) if text else None
            genuine_claim = isinstance(claim, dict) and genuine(str(claim.get("run")), self.NAME, claim)
        except (OSError, Refused, ValueError, RecursionError):
            return None
        return claim if genuine_claim and claim.get("folder") == self.folder else None

    def holder(self):
        """Another live submission's claim, if the folder has one."""
        claim = self.read() if self.folder else None
        if claim is None or claim.get("submission") == self.claim["submission"]:
            return None
        age = time.time() - claim["at"] if isinstance(claim.get("at"), (int, float)) else self.STALE_S + 1
        fresh = -self.STALE_S <= age <= self.STALE_S
        return claim if fresh and not self.ended(str(claim.get("submission"))) else None

    def take(self):
        """Claims the folder: None, or the live run that holds it. The folder is made when its
        parent is there (never a mount point); else the claim is taken once the training makes
        it."""
        if self.folder is None:
            return None
        try:
            parent = open_folder(top_of(self.folder), os.path.dirname(self.folder), own=True)
            try:
                os.mkdir(os.path.basename(self.folder), 0o700, dir_fd=parent)
            finally:
                os.close(parent)
        except (OSError, Missing):
            pass  # no parent yet (never a mount point made), or the folder is there
        deadline = time.time() + self.STALE_S + self.EVERY_S
        for _ in range(3):
            holder = self.holder()
            if holder is not None and holder.get("run") == self.claim["run"]:
                say(f"waiting for submission {holder.get('submission')} of this run to let go of {self.folder}")
            while holder is not None and holder.get("run") == self.claim["run"] and time.time() < deadline:
                time.sleep(self.EVERY_S / 4)
                holder = self.holder()
            if holder is not None:
                return holder
            try:
                folder = self.opened()
            except (OSError, Missing):
                break  # no folder yet: kept trying below
            try:
                fd = os.open(self.NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
            except FileExistsError:
                # A stale claim, or one nobody here vouches for.
                try:
                    os.unlink(self.NAME, dir_fd=folder)
                except OSError:
                    pass
                continue
            except OSError:
                break  # no folder yet: kept trying below
            finally:
                os.close(folder)
            with os.fdopen(fd, "w") as f:
                json.dump(signed(self.claim["run"], self.NAME, dict(self.claim, at=round(time.time(), 3))), f)
            time.sleep(self.SETTLE_S)
            mine = self.read()
            if mine is None or mine.get("submission") != self.claim["submission"]:
                return self.holder() or {"run": "another run", "at": time.time()}
            break
        else:
            # The claim could not be replaced (a folder in its place, another user's file).
            return {"run": f"whoever made {os.path.join(self.folder, self.NAME)}", "at": time.time()}
        threading.Thread(target=self.keep, daemon=True).start()
        return None

    def write(self):
        fd = self.opened()
        try:
            write_record(fd, self.NAME, self.claim["run"], dict(self.claim, at=round(time.time(), 3)))
        finally:
            os.close(fd)

    def keep(self):
        while not self.stop.wait(self.EVERY_S):
            if self.holder() is not None:
                continue  # another run took a claim this one let go stale: never written over
            try:
                self.write()
            except (OSError, Refused):
                pass

    def release(self):
        self.stop.set()
        mine = self.read() if self.folder else None
        if mine is not None and mine.get("submission") == self.claim["submission"]:
            try:
                fd = self.opened()
                try:
                    os.unlink(self.NAME, dir_fd=fd)
                finally:
                    os.close(fd)
            except (OSError, Refused):
                pass


def main(argv):
    args = parse(argv)
    config = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}"))
    submission = (config.get("metadata") or {}).get("job_submission_id") or args.run
    run = Run(args.runs, args.run)
    events = run.events()
    # The packages are copied first, while the working dir is the one Ray unpacked.
    workdir = os.getcwd()
    unpacked = snapshot(workdir)
    info = run.read("run.json")
    packages = None if info else save_packages(run, config.get("runtime_env") or {})
    # The supervisor is no Ray driver: it watches the nodes through the dashboard, so the job's
    # python needs no Ray, and no output of another process reaches the log through it.
    dashboard = dashboard_of_this_cluster()
    for event in events:  # this submission's log tells the whole story
        show_record(event)
    ended = end_processes(f"{args.run}:")
    if ended:
        say(f"ended {ended} processes an earlier attempt left behind")
    info = info or first_start(run, args, submission, dashboard, packages)
    started = {"event": "started", "submission": submission, "host": socket.gethostname(), "pid": os.getpid(), "at": time.time()}
    # Ray's start of the job, so that a saved log's wall time is the Jobs API's.
    ray_start = (job_details(dashboard, submission) or {}).get("start_time")
    if isinstance(ray_start, (int, float)) and ray_start > 0:
        started["job_started_at"] = round(ray_start / 1000, 3)
    run.record(started)
    # A resubmission by the keeper carries the failure that caused it.
    failure = next((e for e in reversed(events) if e.get("event") == "pending" and e.get("resubmitted") == submission), None)
    if any(e.get("event") == "ended" for e in events) and failure is None:
        say(f"run {args.run} has ended already; not training again")
        return 1
    lease = WriterLease(args.checkpoints, args.run, submission, args.cluster, lambda other: job_over(dashboard, other))
    try:
        holder = lease.take()
    except Refused as e:
        return refused(run, e, args.checkpoints)
    if holder is not None:
        reason = (
            f"the checkpoint folder {args.checkpoints} is written by run {holder.get('run')} (submission {holder.get('submission')}, "
            f"host {holder.get('host')}, pid {holder.get('pid')}), whose supervisor was alive {time.time() - holder['at']:.0f}s ago: "
            f"stop it (gke-rl stop {holder.get('run')}), or give this run another checkpoint folder"
        )
        run.record({"event": "ended", "status": "FAILED", "reason": reason, "at": time.time()})
        say(reason)
        return 1
    # Nothing of the training outlives its supervisor, however it ends.
    GUARDIAN.start(f"{args.run}:{submission}:")
    try:
        return supervise(args, run, info, dashboard, submission, workdir, unpacked, failure)
    except Refused as e:
        return refused(run, e, args.checkpoints)
    finally:
        for group in TRAINING_GROUPS:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
        for folder in COPIES:
            shutil.rmtree(folder, ignore_errors=True)
        lease.release()
        GUARDIAN.close()


def refused(run, why, folder):
    """Ends the run: its checkpoint folder cannot be used safely (a link on the way, a folder
    another user can change), which taken for empty would train over a half-written save."""
    reason = f"{why}: the checkpoint folder {folder} is not used through it; give the run a folder of its own below the mount"
    run.record({"event": "ended", "status": "FAILED", "reason": reason, "at": time.time()})
    say(reason)
    return 1


# The process groups of the trainings started, each the group of its /bin/sh.
TRAINING_GROUPS = []


def supervise(args, run, info, dashboard, submission, workdir, unpacked, failure):
    attempt = 0
    while True:
        alive, back = wait_whole(dashboard, info["nodes"], args.wait)
        if back is None:
            reason = f"the cluster had {alive} of its {info['nodes']} nodes after {args.wait:.0f}s, so the run was not restarted"
            run.record({"event": "ended", "status": "FAILED", "reason": reason, "at": time.time()})
            say(reason)
            return 1
        # A restart runs in a copy of its own: a node that joins sets the job up again, and on a
        # file system the nodes share, its copy replaces the one the training runs in.
        folder = private_copy(run, info) if failure else None
        if folder is None and not same_folder(workdir, unpacked):
            reason = f"the working dir {workdir} was replaced (a node set the job up again) and is not complete"
            run.record({"event": "ended", "status": "FAILED", "reason": reason, "at": time.time()})
            say(reason)
            return 1
        os.chdir(folder or workdir)
        restored, orphans, orphan_bytes, not_restored = restore_swapped(args.checkpoints)
        for name in restored:
            say(f"put back old_{name} as {name}: a save was stopped between its renames, and it is the newest complete checkpoint")
        for name in orphans:
            say(f"removed {name}: a newer complete checkpoint is there")
        for problem in not_restored:
            say(problem)
        resumed, _, _, unnamed = checkpoints(args.checkpoints)
        for name in unnamed:
            say(f"{name[:100]} is {NOT_A_STEP}: gke-rl resumes from none of it, and NeMo-RL may take it for the newest step; remove it")
        removed, freed, not_removed = remove_partial(args.checkpoints)
        for name in removed:
            say(f"removed the half-written checkpoint {name}")
        if not_removed:
            # NeMo-RL would write its next save of that step into the half-written folder.
            reason = f"{'; '.join(not_removed)}: remove it, then resubmit"
            run.record({"event": "ended", "status": "FAILED", "reason": reason, "at": time.time()})
            say(reason)
            return 1
        removed, freed = orphans + removed, orphan_bytes + freed
        started_from = resumed or 0
        current = Attempt(args.entrypoint, f"{args.run}:{submission}:{attempt}", run, submission, started_from, args.checkpoints)
        TRAINING_GROUPS.append(current.child.pid)
        GUARDIAN.watch_group(current.child.pid)
        restart = None
        if failure:
            reached = failure.get("steps_reached")
            restart = {
                "event": "restart",
                "number": len([e for e in run.events() if e.get("event") == "restart"]) + 1,
                "resubmitted": bool(failure.get("resubmitted")),
                "kind": failure["kind"],
                "cause": failure["detail"],
                "failed": failure.get("failed", submission),
                "failed_at": failure["failed_at"],
                "noticed_at": failure["noticed_at"],
                "node_back_at": back,
                "resumed_from": resumed,
                "steps_redone": None if reached is None else max(0, reached - started_from),
                "removed": removed,
                "freed_bytes": freed,
                "restored": restored,
            }
        # Watch the training and the nodes.
        # A dashboard that does not answer is no news: the training goes on, watched alone,
        # and the nodes it had are those seen alive while it ran.
        whole, unanswered, nodes_due = set(), False, 0.0
        lost_words, lost_at = None, None
        while True:
            code = current.wait(POLL_S)
            current.saves.poll()
            if restart is not None and (current.first_output is not None or code is not None):
                running = current.first_output or time.time()
                restart.update(
                    running_at=running,
                    waited_s=round(back - restart["failed_at"], 3),
                    back_to_running_s=round(running - back, 3),
                    lost_s=round(running - restart["failed_at"], 3),
                )
                run.record(restart)
                say(f"restart {restart['number']}: running again from step {started_from}")
                restart = None
            if code is not None:
                break
            if time.time() >= nodes_due:
                nodes_due = time.time() + POLL_S
                seen = nodes_now(dashboard)
                if seen is None and not unanswered:
                    say(f"Ray's dashboard at {dashboard} does not answer; watching the training alone until it does")
                unanswered = seen is None
                if seen is not None:
                    alive, dead = seen
                    whole |= {n[0] for n in alive}
                    if lost_at is None and len(alive) < info["nodes"]:
                        lost_at = time.time()
                        lost_words = dead_node_words(dead, whole)
                        say(f"{lost_words}; the training has {args.grace:.0f}s to end")
            if lost_at is not None and time.time() - lost_at > args.grace:
                kill_tree(current.child, 10)
        if code != 0 and lost_at is None:
            settled = time.time() + NODE_LOSS_SETTLE_S
            while time.time() < settled:
                seen = nodes_now(dashboard)
                if seen is not None and len(seen[0]) < info["nodes"]:
                    lost_at = time.time()
                    lost_words = dead_node_words(seen[1], whole)
                    say(f"{lost_words}, as the training ended")
                    break
                time.sleep(POLL_S)
        tail = current.finish()
        # A training stopped after its node was lost did not finish, whatever its exit code.
        if code == 0 and lost_at is None:
            run.record({"event": "ended", "status": "SUCCEEDED", "reason": "the training succeeded", "at": time.time()})
            return 0
        now = time.time()
        # A node the supervisor saw lost is the cause, whatever the tail also says.
        kind, detail = ("node-lost", lost_words) if lost_words else classify("", tail)
        events = run.events()
        done = restarts_counted(events)
        over_time = info.get("max_lost_s") and lost_so_far(events) >= info["max_lost_s"]
        if not is_infrastructure(kind):
            reason = f"{describe(kind, detail)}: not restarted: a resubmission would fail the same way"
        elif done >= info["max_restarts"]:
            reason = f"{describe(kind, detail)}: not restarted: no restart left"
        elif over_time:
            reason = f"{describe(kind, detail)}: not restarted: restarts have lost {lost_so_far(events):.0f}s, the bound"
        else:
            say(f"{describe(kind, detail)}: restarting ({done + 1} of {info['max_restarts']})")
            failure = {
                "kind": kind,
                "detail": detail,
                "failed": submission,
                "failed_at": lost_at or now,
                "noticed_at": lost_at or now,
                "steps_reached": started_from + current.steps,
            }
            attempt += 1
            continue
        run.record({"event": "ended", "status": "FAILED", "kind": kind, "cause": detail, "reason": reason, "at": time.time()})
        say(reason)
        return code or 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
