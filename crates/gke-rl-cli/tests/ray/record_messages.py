"""Records what real Ray says when a job fails, for tests/fixtures/ray-messages/corpus.json.

    PYTHON_OF_A_RAY_VENV crates/gke-rl-cli/tests/ray/record_messages.py OUT.json

starts a head and a second node (`ray start --address`, with a `trainer` resource) of the venv's
Ray, each in its own process group under a temp dir, and runs one job per case: an actor on the
second node when that node is killed, an exception in the program, and a job whose
supervisor actor is killed. It writes each job's status message and log tail, as
`gke_rl_in_cluster::recovery::classify` is given them, and stops only the processes it started.
"""

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request

import ray
import requests
from ray.job_submission import JobStatus, JobSubmissionClient

BIN = os.path.dirname(sys.executable)

CASES = {
    "an actor whose node is killed": ("node-lost", True, """
        @ray.remote(resources={"trainer": 1}, num_cpus=0)
        class Trainer:
            def step(self):
                time.sleep(1)
        trainer = Trainer.remote()
        while True:
            ray.get(trainer.step.remote())
            print("stepped", flush=True)
    """),
    "an exception in an actor": ("program", False, """
        @ray.remote(num_cpus=0)
        class Trainer:
            def step(self, n):
                if n == 2:
                    raise ValueError(f"step {n} went wrong")
        trainer = Trainer.remote()
        for n in range(1, 4):
            ray.get(trainer.step.remote(n))
    """),
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, log):
    return subprocess.Popen([os.path.join(BIN, "ray"), "start", "--block", *args], stdout=log, stderr=log, start_new_session=True)


def stop(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def wait_for(condition, seconds, what):
    deadline = time.time() + seconds
    while not condition():
        if time.time() > deadline:
            raise SystemExit(f"{what} did not happen within {seconds}s")
        time.sleep(0.5)


def answers(url):
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except OSError:
        return False


def submit_when_ready(client, entrypoint):
    """Submits once the job agent takes jobs: the dashboard answers before the agent listens."""
    deadline = time.time() + 120
    while True:
        try:
            return client.submit_job(entrypoint=entrypoint)
        except (requests.exceptions.ConnectionError, RuntimeError):
            if time.time() > deadline:
                raise
            time.sleep(1)


def alive(address):
    """Ray's count of alive nodes, from the dashboard's state API (no driver of our own)."""
    with urllib.request.urlopen(address + "/api/v0/nodes?limit=1000&detail=false", timeout=30) as answer:
        nodes = json.load(answer)["data"]["result"]["result"]
    return len([n for n in nodes if n["state"] == "ALIVE"])


def main(out):
    temp = tempfile.mkdtemp(prefix="rec-", dir="/tmp")
    log = open(os.path.join(temp, "ray.log"), "w")
    gcs, dashboard = free_port(), free_port()
    head = start(["--head", "--node-ip-address=127.0.0.1", f"--port={gcs}", f"--dashboard-port={dashboard}", "--dashboard-host=127.0.0.1",
                  "--include-dashboard=true", "--num-cpus=2", f"--temp-dir={temp}"], log)
    node = None
    records = []
    try:
        address = f"http://127.0.0.1:{dashboard}"
        wait_for(lambda: answers(address + "/api/version"), 120, "the head")
        client = JobSubmissionClient(address)
        # The job manager attaches to the raylet of its first job: the head's, before any other
        # node exists (attached to the second node, Ray 2.46 fails every job once it is gone).
        first = submit_when_ready(client, "true")
        wait_for(lambda: client.get_job_status(first).is_terminal(), 120, "a first job")
        for name, (verdict, kills_node, body) in CASES.items():
            node = start([f"--address=127.0.0.1:{gcs}", "--node-ip-address=127.0.0.2", "--num-cpus=1", '--resources={"trainer": 1}'], log)
            wait_for(lambda: alive(address) >= 2, 120, "the second node")
            script = "import time, ray\nray.init()\n" + textwrap.dedent(body)
            job = client.submit_job(entrypoint=f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}")
            wait_for(lambda: client.get_job_status(job).is_terminal() or "stepped" in client.get_job_logs(job), 120, "a first step")  # noqa: B023
            if kills_node:
                stop(node)
            wait_for(lambda: client.get_job_status(job).is_terminal(), 180, f"the end of {name}")  # noqa: B023
            if not kills_node:
                stop(node)
            wait_for(lambda: alive(address) == 1, 120, "the second node's death")
            info = client.get_job_info(job)
            tail = "\n".join(client.get_job_logs(job).splitlines()[-200:])
            records.append({"ray": ray.__version__, "source": f"ray {ray.__version__}: {name}", "verdict": verdict,
                            "message": info.message or "", "log_tail": tail})
        # A job whose supervisor actor is killed.
        job = client.submit_job(entrypoint="sleep 600")
        wait_for(lambda: client.get_job_status(job) == JobStatus.RUNNING, 120, "the sleeping job")
        from ray.util.state import list_actors

        actors = list_actors(address=address, filters=[("state", "=", "ALIVE")], limit=1000)
        supervisor = [a for a in actors if job in (a.name or "")]
        os.kill(supervisor[0].pid, signal.SIGKILL)
        wait_for(lambda: client.get_job_status(job).is_terminal(), 180, "the end of the job whose supervisor was killed")
        info = client.get_job_info(job)
        records.append({"ray": ray.__version__, "source": f"ray {ray.__version__}: a killed job supervisor actor", "verdict": "driver-lost",
                        "message": info.message or "", "log_tail": ""})
    finally:
        if node is not None:
            stop(node)
        stop(head)
    with open(out, "w") as f:
        json.dump(records, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
