"""The storage check held to a real distributed checkpoint written from GPUs (issues 55 and 66).

On a machine with GPUs, in one run:
1. the storage check's own per-node program (--check: the program `gke-rl storage-check` submits,
   crates/gke-rl-in-cluster/python/storage_check.py with mount.py spliced in, as
   `gke_rl_in_cluster::storage::program()` writes it; run with --local) measures a folder on the
   machine's disk, one file per GPU, then saves the same bytes as a distributed checkpoint in its
   save pass, as the run's release does (--threads, --save-async);
2. one process per GPU (torch.multiprocessing, NCCL for CUDA and gloo for CPU work, the device's
   variables left as set) saves a sharded model and optimizer state with
   torch.distributed.checkpoint into the same folder: bf16 weights, fp32 master weights and
   Adam's two fp32 moments, the 14 bytes per parameter gke-rl's rules assume. It times the save
   to save() returning and to the data being on disk (each file fsync'ed);
3. it saves again with dcp.async_save and times what blocks and when the data has landed;
4. it compares the storage check's predicted save time for those bytes with the measured one:
   from its save pass (what gke_rl::checkpoint_plan::Basis::Saved predicts) and from its raw
   write rate alone; and the bytes on disk with 14 per parameter;
5. it writes every figure to OUT/dcp-save.json.

    python3 xtask/device/dcp_save.py --check storage_check.py --out "$OUT" [--parameters 1.5e9] [--dir PATH]

The JSON is committed under tests/fixtures/storage-check/, and tests hold gke-rl's planner to it.
`cargo xtask ci` runs it with --cpu on a small model, so that it keeps working. Every wait is
bounded by --timeout.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# gke_rl::knowledge::CHECKPOINT_BYTES_PER_PARAMETER: bf16 weights, fp32 master weights, two fp32 moments.
BYTES_PER_PARAMETER = 14
# Each layer is a square matrix of this side: 16.8 M parameters.
SIDE = 4096


def storage_check(check, folder, ranks, rank_bytes, args):
    """The per-node program `check` on `folder`: its output lines and its node's figures."""
    timeout = int(args.timeout)
    writer = ["--save-threads", str(args.threads)] + (["--save-async"] if args.save_async else [])
    out = subprocess.run(
        [sys.executable, check, "--local", "--dir", folder, "--ranks", str(ranks), "--rank-bytes", str(rank_bytes), "--timeout", str(timeout), *writer],
        capture_output=True,
        text=True,
        timeout=timeout + 60,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("storage-check ")]
    node = next((json.loads(line[len("storage-check node ") :]) for line in lines if line.startswith("storage-check node ")), None)
    if out.returncode != 0 or node is None:
        raise SystemExit(f"the storage check failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return lines, node


def tree_bytes(path):
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)


def fsync_files(paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def layers_of(rank, world, layers):
    """This rank's layers: an even split, the first ranks taking one more."""
    share, extra = divmod(layers, world)
    return share + (1 if rank < extra else 0)


def worker(rank, world, store, args, result_path):
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemWriter

    device = "cpu" if args.cpu else "cuda"
    if not args.cpu:
        torch.cuda.set_device(rank)
    # async_save stages on CPU and needs a CPU collective beside NCCL.
    backend = "gloo" if args.cpu else "cpu:gloo,cuda:nccl"
    dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world)
    count = layers_of(rank, world, args.layers)
    generator = torch.Generator(device=device).manual_seed(rank)
    side = args.side
    weights = {f"rank{rank}.layer{i}.weight": torch.randn(side, side, device=device, dtype=torch.bfloat16, generator=generator) for i in range(count)}
    master = {name: w.float().requires_grad_() for name, w in weights.items()}
    optimizer = torch.optim.Adam(master.values(), lr=1e-4)
    for p in master.values():
        p.grad = torch.randn_like(p) * 1e-3
    optimizer.step()
    for p in master.values():
        p.grad = None
    state = {
        "model": weights,
        "optimizer": {
            name: {"master": p.detach(), "exp_avg": optimizer.state[p]["exp_avg"], "exp_avg_sq": optimizer.state[p]["exp_avg_sq"]}
            for name, p in master.items()
        },
    }
    parameters = count * side * side
    if not args.cpu:
        torch.cuda.synchronize()
    dist.barrier()

    # A synchronous save: to save() returning (the files written, maybe still in the page cache),
    # then to every file of this rank on disk.
    sync_dir = os.path.join(args.dir, "dcp-sync")
    start = time.perf_counter()
    dcp.save(state, storage_writer=FileSystemWriter(sync_dir, sync_files=False, thread_count=args.threads))
    returned = time.perf_counter()
    mine = [os.path.join(sync_dir, n) for n in os.listdir(sync_dir) if n.startswith(f"__{rank}_") or (rank == 0 and n == ".metadata")]
    fsync_files(mine)
    dist.barrier()
    durable = time.perf_counter()
    sync_bytes = tree_bytes(sync_dir) if rank == 0 else 0
    dist.barrier()
    if rank == 0:
        import shutil

        shutil.rmtree(sync_dir)
    dist.barrier()

    # An async save: what blocks (staging off the GPUs), and when it has landed (written and
    # fsync'ed by the writer).
    async_dir = os.path.join(args.dir, "dcp-async")
    start_async = time.perf_counter()
    pending = dcp.async_save(state, storage_writer=FileSystemWriter(async_dir, sync_files=True, thread_count=args.threads))
    blocked = time.perf_counter()
    # A concurrent.futures.Future (or, with a stager, a response holding one).
    getattr(pending, "upload_completion", pending).result(timeout=args.timeout)
    dist.barrier()
    landed = time.perf_counter()
    async_bytes = tree_bytes(async_dir) if rank == 0 else 0
    dist.barrier()
    if rank == 0:
        import shutil

        shutil.rmtree(async_dir)
        with open(result_path, "w") as f:
            json.dump(
                {
                    "torch": torch.__version__,
                    "gpu": "cpu" if args.cpu else torch.cuda.get_device_name(0),
                    "parameters_rank0": parameters,
                    "sync": {"bytes": sync_bytes, "returned_s": returned - start, "durable_s": durable - start},
                    "async": {"bytes": async_bytes, "blocking_s": blocked - start_async, "landed_s": landed - start_async},
                },
                f,
            )
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="where dcp-save.json goes")
    parser.add_argument("--check", required=True, help="the storage check's program, as gke-rl submits it")
    parser.add_argument("--threads", type=int, default=1, help="writer threads a rank, in both saves")
    parser.add_argument("--save-async", action="store_true", help="the check's save pass also saves asynchronously")
    parser.add_argument("--dir", default=os.path.join(HERE, "..", "..", "target", "device-storage"), help="the folder on the disk under test")
    parser.add_argument("--parameters", type=float, default=1.5e9, help="the model's parameters, all ranks together")
    parser.add_argument("--timeout", type=float, default=480, help="seconds each part may take")
    parser.add_argument("--cpu", action="store_true", help="check this script on a machine without GPUs (one process; its figures mean nothing)")
    parser.add_argument("--side", type=int, default=SIDE, help="each layer a square matrix of this side")
    args = parser.parse_args()
    import torch
    import torch.multiprocessing as mp

    gpus = 1 if args.cpu else torch.cuda.device_count()
    if gpus < 1:
        raise SystemExit("no GPU: this run is for a machine with GPUs (--cpu checks the script)")
    args.dir = os.path.abspath(args.dir)
    os.makedirs(args.dir, exist_ok=True)
    args.layers = max(gpus, round(args.parameters / (args.side * args.side)))
    parameters = args.layers * args.side * args.side
    rule_bytes = BYTES_PER_PARAMETER * parameters
    started = time.perf_counter()

    lines, node = storage_check(os.path.abspath(args.check), args.dir, gpus, rule_bytes // gpus, args)
    write_rate = node["write"]["bytes"] / (node["write"]["end"] - node["write"]["start"])
    check_save = node.get("save") or {}
    if "durable" not in check_save:
        raise SystemExit(f"the storage check saved no checkpoint: {check_save.get('skipped', 'no save pass')}")
    save_rate = check_save["bytes"] / (check_save["durable"] - check_save["start"])

    result_path = os.path.join(args.dir, "worker.json")
    # A file store, not a port that another process may take first; every wait bounded.
    store = tempfile.mkdtemp(prefix="dcp-save-")
    try:
        context = mp.spawn(worker, args=(gpus, os.path.join(store, "store"), args, result_path), nprocs=gpus, join=False)
        deadline = time.monotonic() + 3 * args.timeout
        while not context.join(timeout=5):
            if time.monotonic() > deadline:
                for process in context.processes:
                    process.kill()
                raise SystemExit(f"the saves did not end within {3 * args.timeout:.0f} s")
    finally:
        shutil.rmtree(store, ignore_errors=True)
    with open(result_path) as f:
        saved = json.load(f)
    os.unlink(result_path)

    measured = saved["sync"]["bytes"]
    predicted_s = measured / save_rate
    figures = {
        "gpus": gpus,
        "torch": saved["torch"],
        "gpu": saved["gpu"],
        "parameters": parameters,
        "rule_bytes": rule_bytes,
        "storage_check": {"lines": lines, "write_rate": write_rate, "save_rate": save_rate, "device": check_save["device"]},
        "sync": saved["sync"],
        "async": saved["async"],
        "threads": args.threads,
        "predicted_s": predicted_s,
        "predicted_over_measured": predicted_s / saved["sync"]["durable_s"],
        "raw_predicted_s": measured / write_rate,
        "raw_predicted_over_measured": measured / write_rate / saved["sync"]["durable_s"],
        "bytes_per_parameter": measured / parameters,
        "wall_s": time.perf_counter() - started,
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "dcp-save.json"), "w") as f:
        json.dump(figures, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(figures, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
