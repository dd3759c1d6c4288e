"""gke-rl's run keeper: resubmits a run whose supervisor is gone.

Run by a CronJob beside the RayCluster, with the shared file system mounted: for each run in
GKE_RL_RUNS that has not ended, it asks the Ray dashboard (GKE_RL_DASHBOARD) for the run's
newest submission. When the Jobs API no longer knows it (the head restarted: Ray forgets its
jobs and packages) or it ended without its supervisor's final record (the supervisor was
killed), it uploads the run's packages again from the run's folder and resubmits the recorded
request as `<run>-rN`, within the run's restart budget. When the dashboard does not answer it
does nothing: a keeper must never act on a guess. Standard library only.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

TABLES = None  # generated
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


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def newest(run, events):
    """The newest submission of the run: the last one started or resubmitted."""
    latest = run
    for event in events:
        latest = event.get("submission") or event.get("resubmitted") or latest
    return latest


def keep(dashboard, cluster, folder, now):
    """What the keeper did for one run, in a line."""
    info = read_json(os.path.join(folder, "run.json"))
    # Another cluster's run (the file system may be shared): its own keeper keeps it.
    if info is None or info.get("cluster", "") != cluster:
        return None
    events = read_events(folder)
    name = info["run"]
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
        append_event(folder, {"event": "ended", "status": status, "reason": f"job {latest} {status.lower()}"})
        return f"{name}: {latest} {status.lower()}"
    else:
        message = (job.get("message") or "").split("\n")[0]
        kind, detail = "driver-lost", f"the supervisor of {latest} ended without its record: {job.get('status')}: {message}"
    # The supervisor may have ended the run between the first read and the job's answer.
    events = read_events(folder)
    if any(e.get("event") == "ended" for e in events):
        return None
    # As the supervisor counts: its own restarts, and each resubmission once.
    done = sum(1 for e in events if e.get("event") == "restart" and not e.get("resubmitted"))
    done += sum(1 for e in events if e.get("event") == "pending")
    lost = sum(e.get("lost_s", 0) for e in events if e.get("event") == "restart")
    if done >= info["max_restarts"] or (info.get("max_lost_s") and lost >= info["max_lost_s"]):
        reason = f"{detail}: not resubmitted: no restart left"
        append_event(folder, {"event": "ended", "status": "FAILED", "kind": kind, "cause": detail, "reason": reason})
        return f"{name}: {reason}"
    for uri, file in (info.get("packages") or {}).items():
        package = "/api/packages/" + uri.replace("://", "/", 1)
        status, _ = dashboard.call("GET", package)
        if status == 404:
            path = os.path.join(folder, file)
            with open(path, "rb") as f:  # streamed, not read into memory
                status, _ = dashboard.call("PUT", package, f, "application/octet-stream", os.fstat(f.fileno()).st_size)
            if status != 200:
                raise OSError(f"uploading {uri} was answered {status}")
    resubmissions = sum(1 for e in events if e.get("event") == "pending")
    submission = f"{name}{TABLES['restart_suffix']}{resubmissions + 1}"
    request = dict(info["request"], submission_id=submission)
    status, _ = dashboard.call("POST", "/api/jobs/", json.dumps(request).encode())
    # 400 for an id that exists: an earlier keeper submitted it and stopped before recording.
    if status not in (200, 400) or (status == 400 and dashboard.job(submission) is None):
        raise OSError(f"resubmitting {submission} was answered {status}")
    progress = read_json(os.path.join(folder, "progress.json")) or {}
    append_event(folder, {
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
    if not os.path.isdir(runs):
        print(f"no runs in {runs}")
        return 0
    for name in sorted(os.listdir(runs)):
        folder = os.path.join(runs, name)
        try:
            said = keep(dashboard, cluster, folder, time.time())
        except OSError as e:
            said = f"{name}: the dashboard does not answer ({e}): not deciding"
        except Exception as e:  # one broken run folder must not leave the others unkept
            said = f"{name}: cannot keep this run ({type(e).__name__}: {e})"
        if said:
            print(said, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
