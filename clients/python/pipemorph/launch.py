"""Starts one real rank process per (dp, pp) slot on 127.0.0.1 (gloo) and collects what they measured.
Rank dp * S + pp starts at (dp, pp), as the registration numbers them.

  python3 -m pipemorph.launch --stages S [--dp D] --microbatches N --iterations K --compute torch|sleep
      [--profile P.json] (--schedule SCHEDULE.json | --redis URL --job ID) [--register REGISTRATION.json]
      [--delays DELAYS.txt] [--agreement min|skip] [--hidden 64] [--rows 8] [--seed 0] [--lr 0.05]
      [--time-scale 1.0] [--master-port PORT] [--timeout-s 120] [--save-params DIR] [--out RESULT.json]
      [--momentum 0] [--checkpoint-dir DIR] [--handoff stream|load|skip|early] [--dp-reduce ring|skip] [--noise SPEC]
      [--model mlp|gpt] [--seq 16] [--vocab 64] [--layers 2] [--heads 2] [--split 2,2,2,2]
      [--fault skip-w=PP,stale-remap,layer-optim-lost,layer-stale] [--compute-slow RANK=FACTOR@FROM,...]

Installed with pip, the same launcher is the console script `pipemorph-launch`.

See clients/python/README.md for the result's shape. Exit 2 on bad input, 1 when a rank fails
(the others are killed; collectives and receives time out rather than hang).
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="pipemorph.launch", description="Run a pipeline job of real rank processes.")
    p.add_argument("--stages", type=int, required=True)
    p.add_argument("--dp", type=int, default=1, help="data-parallel replicas (one pipeline of --stages ranks each)")
    p.add_argument("--microbatches", type=int, required=True, help="per replica and iteration")
    p.add_argument("--iterations", type=int, required=True)
    p.add_argument("--compute", choices=["torch", "sleep"], default="torch")
    p.add_argument("--profile", help="profile JSON with fMs/bMs/wMs per stage (needed by --compute sleep)")
    p.add_argument("--schedule", help="schedule.v1 JSON, or a JSON list of them (switches; optional heardAt per rank)")
    p.add_argument("--redis", help="Redis URL: follow the daemon's schedules for --job")
    p.add_argument("--job", help="job id (with --redis)")
    p.add_argument("--register", help="registration JSON to XADD before the ranks start (with --redis)")
    p.add_argument("--delays", help="file holding a delay spec (const:/step:/dynamic:/trace:), re-read when it changes")
    p.add_argument("--agreement", choices=["min", "skip"], default="min")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--time-scale", type=float, default=1.0, help="multiplies the profile's op times (sleep compute)")
    p.add_argument("--master-port", type=int, default=0)
    p.add_argument("--timeout-s", type=float, default=120.0)
    p.add_argument("--save-params", help="folder where each rank saves its final parameters (rankR.pt)")
    p.add_argument("--out", help="result JSON (default: stdout)")
    p.add_argument("--momentum", type=float, default=0.0, help="SGD momentum (optimizer state a re-map must hand over)")
    p.add_argument("--checkpoint-dir", help="where ranks hand stage state to re-mapped ranks (default: a temporary folder)")
    p.add_argument("--handoff", choices=["stream", "load", "skip", "early"], default="stream",
                   help="re-map state handoff: stream (moving ranks build their new stage during the lead iterations, "
                   "the state is sent point to point at k), load (checkpoint file and a barrier at k); skip (moved "
                   "ranks get no state) and early (the state as it was at the prepare) are faults, tests only")
    p.add_argument("--dp-reduce", choices=["ring", "skip"], default="ring", help="skip: no gradient all-reduce (tests only)")
    p.add_argument("--model", choices=["mlp", "gpt"], default="mlp",
                   help="mlp: a Linear-Tanh-Linear block per stage (width --hidden, --rows rows); gpt: a tiny GPT "
                   "(d_model --hidden, --rows sequences of --seq tokens, --vocab, --layers blocks per stage, --heads)")
    p.add_argument("--seq", type=int, default=16, help="gpt: tokens per sequence")
    p.add_argument("--vocab", type=int, default=64, help="gpt: vocabulary size")
    p.add_argument("--layers", type=int, default=2, help="gpt: transformer blocks per stage")
    p.add_argument("--heads", type=int, default=2, help="gpt: attention heads (must divide --hidden)")
    p.add_argument("--split", help="gpt: blocks per stage at the start, e.g. 2,2,2,2 (instead of --layers): the blocks "
                   "are movable layers and a schedule's `layers` moves them between stages (protocol sec. 5.7)")
    p.add_argument("--fault", default="none", help="inject a fault (tests only): skip-w=PP (stage PP skips W0 every "
                   "iteration), stale-remap (moved ranks keep stale weights), layer-optim-lost (moved layers go "
                   "without their optimizer state), layer-stale (a rank gaining layers keeps its initial copy)")
    p.add_argument("--compute-slow", help="emulate slow devices: RANK=FACTOR@FROM,... (rank RANK's ops take FACTOR "
                   "times their time from iteration FROM), e.g. 1=3@20")
    p.add_argument("--noise", default="none", help="seeded GC pauses, dataloader stalls, checkpoints (pipemorph/noise.py), "
                   "e.g. seed=7,gc=0.02,stall=0.05,checkpointEvery=40,checkpointMs=300; default none")
    a = p.parse_args(argv)
    problems = []
    if a.stages < 2 or a.microbatches < 1 or a.iterations < 1 or a.dp < 1:
        problems.append("--stages must be >= 2, --dp, --microbatches and --iterations >= 1")
    if (a.schedule is None) == (a.redis is None):
        problems.append("give exactly one of --schedule and --redis")
    if a.redis is not None and not a.job:
        problems.append("--redis needs --job")
    if a.compute == "sleep" and not a.profile:
        problems.append("--compute sleep needs --profile")
    if a.model == "gpt" and (a.heads < 1 or a.hidden % a.heads or a.seq < 1 or a.vocab < 2 or a.layers < 1):
        problems.append("--model gpt needs --hidden divisible by --heads, --seq, --layers >= 1, --vocab >= 2")
    if a.split is not None:
        try:
            a.split = [int(x) for x in a.split.split(",")]
        except ValueError:
            a.split = []
        if a.model != "gpt" or len(a.split) != a.stages or min(a.split or [0]) < 1:
            problems.append("--split needs --model gpt and one block count >= 1 per stage")
    try:
        from .noise import parse_noise
        parse_noise(a.noise)
        from .integration import parse_compute_slow, parse_faults
        parse_faults(a.fault)
        parse_compute_slow(a.compute_slow)
    except ValueError as error:
        problems.append(str(error))
    if problems:
        p.error("; ".join(problems))
    return a


def _load(path: str, what: str) -> Any:
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise SystemExit("pipemorph.launch: cannot read %s %s: %s" % (what, path, error))


def build_config(a: argparse.Namespace, work_dir: str) -> Dict[str, Any]:
    config: Dict[str, Any] = {
        "stages": a.stages, "microbatches": a.microbatches, "iterations": a.iterations, "compute": a.compute,
        "agreement": a.agreement, "hidden": a.hidden, "rows": a.rows, "seed": a.seed, "lr": a.lr,
        "timeScale": a.time_scale, "masterPort": a.master_port or _free_port(), "timeoutS": a.timeout_s,
        "delays": os.path.abspath(a.delays) if a.delays else None, "startTime": time.time(),
        "saveParams": os.path.abspath(a.save_params) if a.save_params else None, "workDir": work_dir,
        "redis": a.redis, "job": a.job, "schedules": None, "dp": a.dp, "momentum": a.momentum,
        "checkpointDir": os.path.abspath(a.checkpoint_dir) if a.checkpoint_dir else os.path.join(work_dir, "checkpoints"),
        "handoff": a.handoff, "dpReduce": a.dp_reduce, "noise": a.noise, "model": a.model, "seq": a.seq,
        "vocab": a.vocab, "layers": a.layers, "heads": a.heads, "faults": a.fault, "split": a.split,
        "computeSlow": a.compute_slow,
    }
    if a.profile:
        profile = _load(a.profile, "profile")
        for key in ("fMs", "bMs", "wMs"):
            if not isinstance(profile.get(key), list) or len(profile[key]) != a.stages:
                raise SystemExit("pipemorph.launch: profile %s needs %s with %d entries" % (a.profile, key, a.stages))
        config["profile"] = profile
    if a.schedule:
        schedules = _load(a.schedule, "schedule")
        config["schedules"] = schedules if isinstance(schedules, list) else [schedules]
        from .ops import parse_ops  # refuse a malformed schedule before starting processes
        for s in config["schedules"]:
            for entry in s.get("pipelines", []):
                if len(entry.get("stages", [])) != a.stages:
                    raise SystemExit("pipemorph.launch: schedule v%s has %d stages, not %d" % (s.get("version"), len(entry.get("stages", [])), a.stages))
    return config


def summarize(ranks: List[Dict[str, Any]], warmup: int = 1) -> Dict[str, Any]:
    count = min(len(r["iterations"]) for r in ranks)
    iterations = []
    for i in range(count):
        versions = [r["iterations"][i]["version"] for r in ranks]
        iterations.append({"iteration": i, "versions": versions, "ms": max(r["iterations"][i]["ms"] for r in ranks),
                           "topologies": [r["iterations"][i].get("topology", 0) for r in ranks],
                           "splits": [r["iterations"][i].get("layers", 0) for r in ranks]})
    steady = [it["ms"] for it in iterations[warmup:]] or [it["ms"] for it in iterations]
    # The iteration's training loss: the mean over the replicas of what their last stages computed.
    losses = [[r["iterations"][i]["loss"] for r in ranks if "loss" in r["iterations"][i]] for i in range(count)]
    return {"ranks": ranks, "iterations": iterations, "meanIterationMs": statistics.mean(steady) if steady else None,
            "loss": [statistics.mean(l) if l else None for l in losses],
            "mixedIterations": mixed_iterations(iterations),
            "paramsDigest": [r["paramsDigest"] for r in ranks]}


def _cause(lines: List[str]) -> Optional[str]:
    """The exception line of the last Python traceback in a rank's log, else its last line: native
    teardown noise (gloo's threads aborting with "terminate called ...") can follow the traceback."""
    for k in range(len(lines) - 1, -1, -1):
        if lines[k].startswith("Traceback (most recent call last):"):
            for line in lines[k + 1:]:
                if not line.startswith((" ", "\t")):
                    return line
    return lines[-1] if lines else None


def _has_traceback(lines: List[str]) -> bool:
    return any(line.startswith("Traceback (most recent call last):") for line in lines)


def mixed_iterations(iterations: List[Dict[str, Any]]) -> List[int]:
    """Iterations in which the ranks did not all run the same schedule version (must be empty)."""
    return [it["iteration"] for it in iterations if len(set(it["versions"])) > 1]


def main(argv: List[str]) -> int:
    a = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pipemorph-launch-") as work_dir:
        config = build_config(a, work_dir)
        if a.register:
            import redis
            from .protocol import PipemorphRank
            PipemorphRank.register(redis.Redis.from_url(a.redis), _load(a.register, "registration"))
        config_path = os.path.join(work_dir, "config.json")
        with open(config_path, "w", encoding="utf-8") as f:
            json.dump(config, f)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.environ.get("PYTHONPATH")])),
                   OMP_NUM_THREADS="1")
        world = a.stages * a.dp
        logs = [open(os.path.join(work_dir, "rank%d.log" % r), "w+", encoding="utf-8") for r in range(world)]
        procs = [subprocess.Popen([sys.executable, "-m", "pipemorph.worker", config_path, str(r)], env=env,
                                  stdout=logs[r], stderr=subprocess.STDOUT) for r in range(world)]
        deadline = time.monotonic() + a.timeout_s + 30 + a.iterations * 60
        failed = None
        while any(p.poll() is None for p in procs):
            bad = next((r for r, p in enumerate(procs) if p.poll() not in (None, 0)), None)
            if bad is not None or time.monotonic() > deadline:
                failed = bad
                # A rank that refuses a schedule exits while its peers' sends to it fail; whichever
                # exits first, give the others a moment to exit with their own cause before killing.
                grace = time.monotonic() + (2.0 if bad is not None else 0.0)
                while time.monotonic() < grace and any(p.poll() is None for p in procs):
                    time.sleep(0.05)
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                break
            time.sleep(0.05)
        codes = [p.wait() for p in procs]
        if failed is not None or any(codes):
            # Every rank that failed on its own, not only the first one seen: a rank that refuses a
            # schedule makes its peers' sends fail too, and the cause is in the refusing rank's log.
            # A killed rank counts too when its log holds a Python traceback (killed while tearing down).
            errs = []
            for rank in range(world):
                logs[rank].seek(0)
                errs.append([line for line in logs[rank].read().strip().splitlines() if line.strip()])
            own = [r for r, c in enumerate(codes) if c not in (0, -signal.SIGKILL) or (c == -signal.SIGKILL and _has_traceback(errs[r]))]
            own = own or [failed if failed is not None else 0]
            for rank in own:
                err = errs[rank]
                cause = _cause(err)
                print("pipemorph.launch: rank %d failed: %s" % (rank, cause if cause else "exit %s" % codes[rank]), file=sys.stderr)
            return 1
        ranks = [_load(os.path.join(work_dir, "rank%d.json" % r), "rank result") for r in range(world)]
    result = summarize(ranks)
    text = json.dumps(result)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        print(text)
    return 0


def cli() -> None:
    """The `pipemorph-launch` console script."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    cli()
