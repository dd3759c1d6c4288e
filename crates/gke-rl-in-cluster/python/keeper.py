"""gke-rl's run keeper: resubmits a run whose supervisor is gone.

Run by a CronJob beside the RayCluster, with the shared file system mounted: for each run in
GKE_RL_RUNS that has not ended, it asks the Ray dashboard (GKE_RL_DASHBOARD) for the run's
newest submission. When the Jobs API no longer knows it (the head restarted: Ray forgets its
jobs and packages) or it ended without its supervisor's final record (the supervisor was
killed), it uploads the run's packages again from the run's folder and resubmits the recorded
request as `<run>-rN`, within the run's restart budget. When the dashboard does not answer it
does nothing: a keeper must never act on a guess. It acts only on genuine records (signed with
the cluster's run key: see the records' part below), uploads only the packages whose digests
they hold, and tells an id taken by an earlier keeper from one another job took by asking the
Jobs API. Standard library only.
"""

import errno
import json
import os
import re
import shlex
import sys
import time
import urllib.error
import urllib.request

TABLES = None  # generated

# mount.py  # generated
MAX_BODY = 16 * 1024 * 1024


def env(name, default=None):
    value = os.environ.get(name, default)
    if value is None:
        sys.exit(f"keeper: {name} is not set")
    return value


class Dashboard:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def call(self, method, path, body=None, content_type="application/json", length=None):
        """(status, parsed JSON or None); an HTTP error is a status, no answer raises OSError."""
        request = authorized(urllib.request.Request(self.url + path, method=method, data=body))
        if body is not None:
            request.add_header("Content-Type", content_type)
        if length is not None:
            request.add_header("Content-Length", str(length))
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                text = answer.read(MAX_BODY)
                return answer.status, (json.loads(text) if text.strip() else None)
        except urllib.error.HTTPError as e:
            return e.code, None

    def job(self, submission):
        status, job = self.call("GET", f"/api/jobs/{submission}")
        if status == 404:
            return None
        if status != 200 or not isinstance(job, dict):
            raise OSError(f"the dashboard answered {status} for job {submission}")
        return job


# Restart ids tried past the first free one that another job has taken.
MOST_IDS_TRIED = 10


def run_of(entrypoint):
    """The run a supervisor's entrypoint names (gke_rl_in_cluster::supervisor::run_of)."""
    try:
        words = shlex.split(entrypoint or "")
    except ValueError:
        return None
    shaped = len(words) > 4 and words[0] in TABLES["interpreters"] and words[1:4] == ["-m", TABLES["module"], "--run"]
    return words[4] if shaped else None


def upload_packages(dashboard, folder, packages):
    # `folder`: the run's folder's descriptor.
    """Uploads again the run's packages a restarted head forgot: only plain files of the run's
    folder, opened without following a link, whose digest is the one recorded."""
    for uri, saved in (packages or {}).items():
        if not (isinstance(saved, list) and len(saved) == 2 and all(isinstance(v, str) for v in saved)):
            raise ValueError(f"the record of package {uri} is not a file and a digest")
        name, digest = saved
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"package {uri} names {name!r}, not a file of the run's folder")
        package = "/api/packages/" + uri.replace("://", "/", 1)
        status, _ = dashboard.call("GET", package)
        if status != 404:
            continue
        copy = verified_copy(folder, name, digest, MAX_PACKAGE_BYTES)
        if copy is None:
            raise ValueError(f"{name} is not the package recorded at the run's start: not uploading it (replaced, or not a plain file)")
        with copy:
            status, _ = dashboard.call("PUT", package, copy, "application/octet-stream", os.fstat(copy.fileno()).st_size)
        if status != 200:
            raise OSError(f"uploading {uri} was answered {status}")


def resubmit(dashboard, name, request, number):
    """Submits the run's request as its restart `number`, or the next id free of other jobs: the
    id it submitted. An id that exists and is this run's (an earlier keeper submitted it and
    stopped before recording) is taken as submitted; the Jobs API's word decides, not its status
    code (Ray 2.54 answers a duplicate with 500)."""
    for tried in range(number, number + MOST_IDS_TRIED):
        submission = f"{name}{TABLES['restart_suffix']}{tried}"
        status, _ = dashboard.call("POST", "/api/jobs/", json.dumps(dict(request, submission_id=submission)).encode())
        if status == 200:
            return submission
        existing = dashboard.job(submission)
        if existing is None:
            raise OSError(f"resubmitting {submission} was answered {status}")
        if run_of(existing.get("entrypoint")) == name:
            return submission
    raise OSError(f"the ids {name}{TABLES['restart_suffix']}{number} to {tried} are all other jobs'")


def newest(run, events):
    """The newest submission of the run: the last one a supervisor started or the keeper
    resubmitted (a restart's `resubmitted` says only whether it was one)."""
    latest = run
    for event in events:
        named = {"started": event.get("submission"), "pending": event.get("resubmitted")}.get(event.get("event"))
        latest = named if isinstance(named, str) else latest
    return latest


def keep(dashboard, cluster, folder, name, now):
    """What the keeper did for the run `name`, whose folder's descriptor is `folder`, in a
    line."""
    info = read_record(folder, "run.json", name)
    # Another cluster's run (the file system may be shared), or none the supervisor wrote: this
    # keeper does nothing with it.
    if info is None or info.get("cluster", "") != cluster or info.get("run") != name:
        return None
    events = read_events(folder, name)
    if any(e.get("event") == "ended" for e in events):
        return None
    latest = newest(name, events)
    job = dashboard.job(latest)
    if job is None:
        kind, detail = "driver-lost", f"the Jobs API no longer knows job {latest}: the Ray head restarted"
    elif job.get("status") in ("PENDING", "RUNNING"):
        return f"{name}: {latest} is {job['status']}"
    elif job.get("status") in ("STOPPED", "SUCCEEDED"):
        # Stopped by someone, or a supervisor that ended before its last record.
        status = job["status"]
        append_event(folder, name, {"event": "ended", "status": status, "reason": f"job {latest} {status.lower()}"})
        return f"{name}: {latest} {status.lower()}"
    else:
        message = (job.get("message") or "").split("\n")[0]
        kind, detail = "driver-lost", f"the supervisor of {latest} ended without its record: {job.get('status')}: {message}"
    # The supervisor may have ended the run between the first read and the job's answer.
    events = read_events(folder, name)
    if any(e.get("event") == "ended" for e in events):
        return None
    # As the supervisor counts: its own restarts, and each resubmission once.
    done = sum(1 for e in events if e.get("event") == "restart" and not e.get("resubmitted"))
    done += sum(1 for e in events if e.get("event") == "pending")
    lost = sum(e.get("lost_s", 0) for e in events if e.get("event") == "restart")
    if done >= info["max_restarts"] or (info.get("max_lost_s") and lost >= info["max_lost_s"]):
        reason = f"{detail}: not resubmitted: no restart left"
        append_event(folder, name, {"event": "ended", "status": "FAILED", "kind": kind, "cause": detail, "reason": reason})
        return f"{name}: {reason}"
    upload_packages(dashboard, folder, info.get("packages"))
    resubmissions = sum(1 for e in events if e.get("event") == "pending")
    submission = resubmit(dashboard, name, info["request"], resubmissions + 1)
    progress = read_record(folder, "progress.json", name) or {}
    append_event(folder, name, {
        "event": "pending",
        "kind": kind,
        "detail": detail,
        "failed": latest,
        "failed_at": now,
        "noticed_at": now,
        "steps_reached": progress.get("steps_reached") if progress.get("submission") == latest else None,
        "resubmitted": submission,
    })
    return f"{name}: {detail}; resubmitted as {submission}"


def main():
    dashboard = Dashboard(env("GKE_RL_DASHBOARD"))
    runs = env("GKE_RL_RUNS")
    cluster = env("GKE_RL_CLUSTER", "")
    # Opened from the mount down, never through a link; each run's folder from the runs
    # folder's descriptor (a link named as a run is no run).
    try:
        folder = open_folder(top_of(runs), runs)
    except Missing:
        if not os.path.isdir(top_of(runs)):
            print(f"cannot read the runs in {runs}: {top_of(runs)} is not mounted in this pod")
            return 1
        print(f"no runs in {runs}")
        return 0
    except (OSError, Refused) as e:
        print(f"cannot read the runs in {runs}: {e}")
        return 1
    try:
        names = sorted(os.listdir(folder))
        for name in names:
            try:
                fd = open_child(folder, name)
            except OSError:
                continue
            try:
                said = keep(dashboard, cluster, fd, name, time.time())
            except OSError as e:
                said = f"{name}: not deciding ({e})"
            except Exception as e:  # one broken run folder must not leave the others unkept
                said = f"{name}: cannot keep this run ({type(e).__name__}: {e})"
            finally:
                os.close(fd)
            if said:
                print(said, flush=True)
    finally:
        os.close(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
