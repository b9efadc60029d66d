"""Your own training loop under pipemorph: a GPT-style model cut into pipeline stages, trained with
pipeline parallelism x data parallelism, the schedule of every iteration chosen by pipemorph.

One process per rank, started by torchrun (or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR
and MASTER_PORT); world size = stages x dp. Without RANK in the environment the script starts the
stages x dp processes itself on 127.0.0.1 (Debian 12's torch 1.13 torchrun fails on Python 3.11
with "'NoneType' object has no attribute 'get'" in to_map):

    # no daemon: a fixed 1F1B schedule (or --schedule FILE with schedule.v1 JSON, a list for switches)
    python3 examples/train_gpt.py --stages 4 --dp 2 --iterations 20
    torchrun --nproc_per_node 8 examples/train_gpt.py --stages 4 --dp 2 --iterations 20

    # under the daemon: register the job from rank 0, follow its schedules, report every iteration
    torchrun --nproc_per_node 8 examples/train_gpt.py --stages 4 --dp 2 --iterations 200 \
        --redis redis://127.0.0.1:6379 --job gpt-1 --register

Everything model-specific is in the first half (what you would have anyway); the pipemorph part is
building a PipelineModel and calling trainer.step(iteration) where a Megatron-style loop calls
forward_backward_func(...) and optimizer.step(). See docs/integration.md.
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys

import torch
import torch.distributed as dist

try:
    import pipemorph  # noqa: F401 - installed (pip install "./clients/python[runtime]")
except ImportError:  # run from the source tree: clients/python beside this folder
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pipemorph import gpt  # noqa: E402 - the model: replace with yours
from pipemorph.integration import PipelineModel, PipelineTrainer, connect, one_f_one_b, scripted  # noqa: E402


def registration(job: str, stages: int, dp: int, microbatches: int, activation_bytes: int) -> dict:
    """What the daemon needs to plan for this job (docs/protocol.md sec. 3.1). computeMs is a first
    guess the daemon replaces with the op times the ranks report; `node` names the host of a rank."""
    host = os.uname().nodename
    return {"type": "register", "protocol": 1, "jobId": job, "stages": stages, "microbatches": microbatches, "dp": dp, "tp": 1,
            "ranks": [{"rank": d * stages + p, "dp": d, "pp": p, "tp": 0, "node": host} for d in range(dp) for p in range(stages)],
            "memory": {"deviceBytes": [4e9] * stages, "activationBytes": [float(activation_bytes)] * stages, "hostBytes": 16e9},
            "computeMs": {"fMs": [5.0] * stages, "bMs": [5.0] * stages, "wMs": [3.0] * stages}}


def spawn(stages: int, dp: int) -> int:
    """What torchrun would do on one host: one process per rank with the rendezvous variables."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(stages * dp), OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable] + sys.argv, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
             for r in range(stages * dp)]
    codes = [p.wait() for p in procs]
    return max(codes, key=abs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stages", type=int, default=4)
    p.add_argument("--dp", type=int, default=1)
    p.add_argument("--microbatches", type=int, default=4, help="per replica and iteration")
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--schedule", help="schedule.v1 JSON (or a list of them): no daemon")
    p.add_argument("--redis", help="follow the daemon at this Redis URL")
    p.add_argument("--job", default="gpt-example")
    p.add_argument("--register", action="store_true", help="rank 0 registers the job with the daemon first")
    p.add_argument("--checkpoint-dir", default="pipemorph-checkpoints", help="shared by every rank: re-maps hand stage state over here")
    a = p.parse_args()
    if "RANK" not in os.environ:
        return spawn(a.stages, a.dp)

    # --- your setup: process group, model, loss, optimizer, data --------------------------------
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))  # "nccl" on GPUs
    rank, world = dist.get_rank(), dist.get_world_size()
    if world != a.stages * a.dp:
        raise SystemExit("world size %d is not --stages %d x --dp %d" % (world, a.stages, a.dp))
    config = gpt.GPTConfig(vocab=64, seq=16, d_model=32, heads=2, layers=2, rows=4)

    model = PipelineModel(
        stages=a.stages,
        stage=lambda pp: gpt.stage_module(config, pp, a.stages, a.seed),     # a torch.nn.Module per stage
        loss_fn=gpt.loss_fn,                                                   # (last stage's output, target)
        optimizer=lambda params: torch.optim.SGD(params, lr=a.lr, momentum=0.9),
        microbatch=lambda iteration, index: gpt.microbatch(config, iteration, index, a.seed),  # (tokens, targets)
        microbatches=a.microbatches,
        activation_shape=gpt.activation_shape(config),                        # what flows between stages
    )

    # --- pipemorph: where schedules come from ---------------------------------------------------
    if a.redis:
        shape = gpt.activation_shape(config)
        reg = registration(a.job, a.stages, a.dp, a.microbatches, 4 * shape[0] * shape[1] * shape[2]) if a.register and rank == 0 else None
        control = connect(a.redis, a.job, rank, a.stages, a.dp, registration=reg)
    elif a.schedule:
        with open(a.schedule, "r", encoding="utf-8") as f:
            schedules = json.load(f)
        control = scripted(schedules if isinstance(schedules, list) else [schedules], rank, a.stages, a.dp)
    else:
        control = scripted([one_f_one_b(a.stages, a.microbatches, a.dp)], rank, a.stages, a.dp)
    trainer = PipelineTrainer(model, control, dp=a.dp, checkpoint_dir=os.path.abspath(a.checkpoint_dir))

    # --- the training loop ----------------------------------------------------------------------
    for iteration in range(a.iterations):
        record = trainer.step(iteration)  # the schedule in force: F/B/W, sends, dp all-reduce, step, report
        if "loss" in record:  # last stage: this replica's mean loss over its microbatches
            print("iteration %d rank %d (dp %d, pp %d) schedule v%d: loss %.4f, %.1f ms"
                  % (iteration, rank, record["dp"], record["pp"], record["version"], record["loss"], record["ms"]), flush=True)
    trainer.close()
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
