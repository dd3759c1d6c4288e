"""gke-rl's idle guard: suspends a RayCluster that has run no job for a while.

Run by a CronJob in the RayCluster's namespace, under a service account that may only read and
patch that one RayCluster. It asks the Ray dashboard for jobs; when none is PENDING or RUNNING
and the newest one ended (or the RayCluster was created) GKE_RL_IDLE_SECONDS ago or more, it
sets the RayCluster's spec.suspend (KubeRay then deletes its pods). When it cannot tell (the
dashboard does not answer, say while the head restarts), it does nothing: a guard must never
stop a cluster on a guess. Standard library only, so any Python 3 image runs it.
"""

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime

ACTIVE = {"PENDING", "RUNNING"}

AUTH = None  # generated


def env(name, default=None):
    value = os.environ.get(name, default)
    if value is None:
        sys.exit(f"idle guard: {name} is not set")
    return value


def kube(api, sa_dir, method, path, body=None):
    """One call to the Kubernetes API with the pod's service account."""
    with open(os.path.join(sa_dir, "token")) as f:
        token = f.read().strip()
    context = ssl.create_default_context(cafile=os.path.join(sa_dir, "ca.crt"))
    request = urllib.request.Request(api + path, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/json")
    if body is not None:
        request.add_header("Content-Type", "application/merge-patch+json")
    with urllib.request.urlopen(request, context=context, timeout=30) as answer:
        return json.load(answer)


def main():
    api = env("GKE_RL_API", "https://kubernetes.default.svc")
    sa_dir = env("GKE_RL_SERVICE_ACCOUNT_DIR", "/var/run/secrets/kubernetes.io/serviceaccount")
    namespace, cluster = env("GKE_RL_NAMESPACE"), env("GKE_RL_CLUSTER")
    dashboard = env("GKE_RL_DASHBOARD").rstrip("/")
    idle_limit = float(env("GKE_RL_IDLE_SECONDS"))
    path = f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{cluster}"

    raycluster = kube(api, sa_dir, "GET", path)
    if raycluster.get("spec", {}).get("suspend"):
        print(f"RayCluster {cluster} is suspended already")
        return 0
    try:
        request = authorized(urllib.request.Request(dashboard + "/api/jobs/"))
        with urllib.request.urlopen(request, timeout=30) as answer:
            jobs = json.load(answer)
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            # Not a guess either: a guard that cannot read the jobs must say so, loudly.
            print(f"the dashboard refused the guard ({e.code}): give it the cluster's Ray token as RAY_AUTH_TOKEN")
            return 1
        print(f"the dashboard answered {e.code}: not deciding")
        return 0
    except (OSError, ValueError) as e:
        print(f"the dashboard does not answer ({e}): not deciding")
        return 0
    active = [j.get("submission_id") or j.get("job_id") for j in jobs if j.get("status") in ACTIVE]
    if active:
        print(f"busy: {', '.join(map(str, active))}")
        return 0
    def seconds(stamp):
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

    # A head that restarted forgot its jobs: idle time counts from when it was Ready again
    # (KubeRay's HeadPodReady condition), so the run keeper can resubmit the run first.
    since = [seconds(raycluster["metadata"]["creationTimestamp"])]
    conditions = raycluster.get("status", {}).get("conditions") or []
    since += [seconds(c["lastTransitionTime"]) for c in conditions if c.get("type") == "HeadPodReady" and c.get("lastTransitionTime")]
    # Ray's times are milliseconds since the epoch.
    last = max(since + [(j.get("end_time") or j.get("start_time") or 0) / 1000 for j in jobs])
    idle = time.time() - last
    if idle < idle_limit:
        print(f"idle for {idle:.0f}s of {idle_limit:.0f}s")
        return 0
    kube(api, sa_dir, "PATCH", path, {"spec": {"suspend": True}})
    print(f"suspended RayCluster {cluster} after {idle:.0f}s without a job")
    return 0


if __name__ == "__main__":
    sys.exit(main())
