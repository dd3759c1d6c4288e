"""gke-rl fabric-check: one all-reduce across every GPU of every GPU node of this Ray cluster.

One Ray task per node (node affinity) starts one process per GPU; rank 0 times a sweep of
message sizes. NCCL's INFO log names the network transport each rank chose; the driver prints
those lines and the sweep for gke-rl to read. Without GPU nodes the same collective runs on CPU
with gloo, one process per node. `--local` runs this machine's part alone, without Ray. Every
wait is bounded.
"""
import argparse
import datetime
import json
import os
import socket
import sys
import tempfile
import time

PREFIX = "fabric-check"
# NCCL's lines that say which transport it chose; the rest of its INFO log is left out.
NCCL_KEYS = ("Using network", "NET/", " via ")
MAX_LINES_PER_RANK = 200


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def collective(rank, world, local, init, backend, sizes, iters, out_dir):
    import torch
    import torch.distributed as dist

    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(local)
        device = "cuda"
    # Every rank starts within seconds of the others; a shorter wait frees a stopped check's GPUs sooner.
    dist.init_process_group(backend, init_method=init, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    dtype = torch.bfloat16 if backend == "nccl" else torch.float32
    element = torch.tensor([], dtype=dtype).element_size()
    samples = []
    for size in sizes:
        x = torch.ones(max(1, size // element), dtype=dtype, device=device)
        for _ in range(2):
            dist.all_reduce(x)
        if device == "cuda":
            torch.cuda.synchronize()
        dist.barrier(device_ids=[local] if device == "cuda" else None)
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        if device == "cuda":
            torch.cuda.synchronize()
        samples.append((size, (time.perf_counter() - start) / iters))
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(samples, f)


def spawned(local, base, world, init, sizes, iters, out_dir):
    collective(base + local, world, local, init, "nccl", sizes, iters, out_dir)


def node_part(index, nodes, gpus, init, sizes, iters):
    """This node's ranks: one process per GPU (NCCL), or this one process (gloo)."""
    # Removed on return: a pod (or a test machine) runs many checks.
    with tempfile.TemporaryDirectory(prefix="gke-rl-fabric-check-") as out_dir:
        os.environ.update(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,NET", NCCL_DEBUG_FILE=os.path.join(out_dir, "nccl.%p.log"))
        ranks = max(gpus, 1)
        base = index * ranks
        if gpus:
            import torch.multiprocessing as mp

            # By module, not by `__main__`: a Ray worker's main module is Ray's own.
            from fabric_check import spawned

            mp.spawn(spawned, args=(base, nodes * ranks, init, sizes, iters, out_dir), nprocs=gpus)
        else:
            collective(base, nodes, 0, init, "gloo", sizes, iters, out_dir)
        lines = []
        for name in sorted(os.listdir(out_dir)):
            if name.startswith("nccl."):
                with open(os.path.join(out_dir, name), errors="replace") as f:
                    kept = [line.rstrip("\n") for line in f if "NCCL INFO" in line and any(k in line for k in NCCL_KEYS)]
                lines.extend(kept[:MAX_LINES_PER_RANK])
        samples = None
        if base == 0:
            with open(os.path.join(out_dir, "rank0.json")) as f:
                samples = json.load(f)
        return {"ranks": [base, base + ranks - 1], "backend": "nccl" if gpus else "gloo", "lines": lines, "samples": samples}


def report(results, world):
    for result in results:
        first, last = result["ranks"]
        print(f"{PREFIX} node={result['node']} ip={result['ip']} ranks={first}-{last} backend={result['backend']}", flush=True)
        for line in result["lines"]:
            print(f"{PREFIX} node={result['node']}: {line}", flush=True)
    samples = next(r["samples"] for r in results if r["samples"] is not None)
    for size, seconds in samples:
        algbw = size / seconds / 1e9
        busbw = algbw * 2 * (world - 1) / world
        print(f"size={size} bytes time={seconds * 1e6:.1f}us algbw={algbw:.2f}GB/s busbw={busbw:.2f}GB/s", flush=True)


def on_ray(args, sizes):
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    def here():
        return ray.util.get_node_ip_address(), free_port()

    def run(*part):
        return dict(node_part(*part), node=ray.get_runtime_context().get_node_id()[:8], ip=ray.util.get_node_ip_address())

    ray.init()
    alive = [n for n in ray.nodes() if n["Alive"]]
    gpu_nodes = [n for n in alive if n["Resources"].get("GPU", 0) >= 1]
    nodes = gpu_nodes or alive
    gpus = min(int(n["Resources"]["GPU"]) for n in gpu_nodes) if gpu_nodes else 0
    print(f"{PREFIX} nodes={len(nodes)} gpus_per_node={gpus} backend={'nccl' if gpus else 'gloo'}", flush=True)
    if len(nodes) < 2:
        print(f"{PREFIX} error: {len(nodes)} node; an inter-node collective needs at least two", flush=True)
        sys.exit(1)
    def pin(node):
        return NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)

    deadline = time.monotonic() + args.timeout
    try:
        rendezvous = ray.remote(num_cpus=0, max_retries=0)(here)
        ip, port = ray.get(rendezvous.options(scheduling_strategy=pin(nodes[0])).remote(), timeout=args.timeout)
        task = ray.remote(max_retries=0)(run)
        init = f"tcp://{ip}:{port}"
        runs = [
            task.options(num_cpus=1, num_gpus=gpus, scheduling_strategy=pin(node)).remote(i, len(nodes), gpus, init, sizes, args.iters)
            for i, node in enumerate(nodes)
        ]
        results = ray.get(runs, timeout=max(1.0, deadline - time.monotonic()))
    except ray.exceptions.GetTimeoutError:
        print(f"{PREFIX} error: the collective did not finish within {args.timeout:.0f} s", flush=True)
        sys.exit(1)
    report(results, len(nodes) * max(gpus, 1))


def local(args, sizes):
    import torch

    gpus = torch.cuda.device_count()
    print(f"{PREFIX} nodes=1 gpus_per_node={gpus} backend={'nccl' if gpus else 'gloo'}", flush=True)
    result = node_part(0, 1, gpus, f"tcp://127.0.0.1:{free_port()}", sizes, args.iters)
    report([dict(result, node=socket.gethostname(), ip="127.0.0.1")], max(gpus, 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", required=True, help="message sizes in bytes, comma-separated")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=900, help="seconds the whole check may take")
    parser.add_argument("--local", action="store_true", help="this machine's GPUs only, without Ray")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    (local if args.local else on_ray)(args, sizes)


if __name__ == "__main__":
    main()
