"""Example training loop of one reporting rank using PipemorphRank (see README.md).

Runs as-is in one process (world size 1) to smoke-test a pipemorph deployment:

    python3 example_rank.py --job demo-1 --register --iterations 200

Under torch.distributed (e.g. torchrun) the agreement uses the world group. Replace run_ops()
with your pipeline executor and fill `links` with real measurements.
"""
import argparse
import random
import time

import redis

from pipemorph_rank import PipemorphRank

INT64_MAX = 2 ** 63 - 1  # neutral value for MIN (what TP peers contribute)


def make_agree():
    """all_reduce(value, MIN or MAX) over the world group; identity in a single process."""
    try:
        import torch
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            device = "cuda" if torch.cuda.is_available() else "cpu"

            def agree(value, op):
                t = torch.tensor([value], dtype=torch.int64, device=device)
                dist.all_reduce(t, op=dist.ReduceOp.MIN if op == "min" else dist.ReduceOp.MAX)
                return int(t.item())
            return agree
    except ImportError:
        pass
    return lambda value, op: value


def run_ops(ops, toggle, op_ms):
    """Stand-in for the pipeline executor: 'runs' each op, returns median F, B, W ms."""
    times = {"F": [], "B": [], "W": []}
    for op in ops:
        t = op_ms * random.uniform(0.9, 1.1)
        time.sleep(t / 1000.0)
        times[op[0]].append(t)
    return tuple(sorted(times[kind])[len(times[kind]) // 2] for kind in "FBW")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--job", required=True)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--dp", type=int, default=0)
    ap.add_argument("--pp", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first iteration (e.g. from a checkpoint)")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--op-ms", type=float, default=1.0)
    ap.add_argument("--register", action="store_true", help="register a one-stage, one-rank job first")
    args = ap.parse_args()

    r = redis.Redis(host=args.host, port=args.port, socket_timeout=2, socket_connect_timeout=2)
    if args.register:
        PipemorphRank.register(r, {
            "jobId": args.job, "stages": 1, "microbatches": args.microbatches, "dp": 1, "tp": 1,
            "ranks": [{"rank": 0, "dp": 0, "pp": 0, "tp": 0, "node": "localhost"}],
            "memory": {"deviceBytes": [8e9], "activationBytes": [1e9], "hostBytes": 64e9},
        })
    pm = PipemorphRank(r, args.job, args.rank, args.dp, args.pp)
    schedule = pm.wait_for_schedule(timeout_s=60)
    print("connected: schedule version %d (epoch %d)" % (schedule["version"], schedule["epoch"]))
    agree = make_agree()
    version = None
    for i in range(args.start, args.start + args.iterations):
        try:
            for event in pm.poll_control(i):
                print("iteration %d: %s v%d (E=%d)" % (i, event["type"], event["version"], event["effectiveIteration"]))
        except redis.RedisError as error:  # control plane unreachable: keep the agreed schedule
            print("iteration %d: control poll failed: %s" % (i, error))
        if i == args.start:
            k = agree(pm.startup_version(), "max")  # first iteration after connecting
        else:
            k = agree(pm.committed_version_for(i), "min")
        ops, toggle = pm.schedule_for(k)
        if k != version:
            print("iteration %d: running version %d, delegation %s" % (i, k, toggle or "off"))
            version = k
        f_ms, b_ms, w_ms = run_ops(ops, toggle, args.op_ms)
        try:
            pm.report(i, k, f_ms, b_ms, w_ms, links=[])
        except redis.RedisError as error:
            print("iteration %d: report failed: %s" % (i, error))


if __name__ == "__main__":
    main()
