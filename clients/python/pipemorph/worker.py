"""One rank process started by pipemorph.launch: `python -m pipemorph.worker CONFIG.json RANK`."""
import datetime
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

from .delays import DelayFile
from .executor import StageTimes
from .integration import PipelineModel, PipelineTrainer, connect, parse_compute_slow, scripted
from .noise import parse_noise


def build_model(c) -> PipelineModel:
    """The launcher's model as a user of the integration API would hand it over: `mlp` (one
    Linear-Tanh-Linear block per stage, MSE) or `gpt` (pipemorph/gpt.py: a tiny GPT, cross-entropy)."""
    stages, n, seed = c["stages"], c["microbatches"], c["seed"]

    def optimizer(params):
        return torch.optim.SGD(params, lr=c["lr"], momentum=c.get("momentum", 0.0))
    if c.get("model", "mlp") == "gpt":
        from . import gpt
        g = gpt.GPTConfig(vocab=c.get("vocab", 64), seq=c.get("seq", 16), d_model=c["hidden"], heads=c.get("heads", 2),
                          layers=c.get("layers", 2), rows=c["rows"])
        if c.get("split"):  # movable blocks: stage pp over blocks [first, last) (re-balancing, sec. 5.7)
            return PipelineModel(stages, lambda pp, first, last: gpt.layered_stage(g, pp, stages, first, last, seed),
                                 gpt.loss_fn, optimizer, lambda i, j: gpt.microbatch(g, i, j, seed), n,
                                 gpt.activation_shape(g), layers=c["split"], layer_prefix=gpt.layer_prefix)
        return PipelineModel(stages, lambda pp: gpt.stage_module(g, pp, stages, seed), gpt.loss_fn, optimizer,
                             lambda i, j: gpt.microbatch(g, i, j, seed), n, gpt.activation_shape(g))
    from .stage import loss_fn, microbatch, stage_module
    hidden, rows = c["hidden"], c["rows"]
    return PipelineModel(stages, lambda pp: stage_module(pp, hidden, seed), loss_fn, optimizer,
                         lambda i, j: microbatch(i, j, rows, hidden, seed), n, (rows, hidden))


def main(config_path: str, rank: int) -> int:
    with open(config_path, "r", encoding="utf-8") as f:
        c = json.load(f)
    torch.set_num_threads(1)
    stages, dp = c["stages"], c.get("dp", 1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % c["masterPort"], rank=rank, world_size=stages * dp,
                            timeout=datetime.timedelta(seconds=c["timeoutS"]))
    control_group = dist.new_group(backend="gloo")  # the agreement's collective, apart from the p2p traffic

    def times_for(stage: int):
        if c["compute"] != "sleep":
            return None
        p, scale = c["profile"], c.get("timeScale", 1.0)
        return StageTimes(p["fMs"][stage] * scale, p["bMs"][stage] * scale, p["wMs"][stage] * scale)
    if c.get("schedules") is not None:
        control, reporting = scripted(c["schedules"], rank, stages, dp), False
    else:
        control, reporting = connect(c["redis"], c["job"], rank, stages, dp, timeout_s=c["timeoutS"]), True
    runtime = PipelineTrainer(build_model(c), control, dp, rank, c.get("checkpointDir"), reporting, c["agreement"],
                              control_group, c["compute"], times_for, DelayFile(c.get("delays"), stages - 1),
                              parse_noise(c.get("noise")), c.get("handoff", "stream"), c.get("dpReduce", "ring"),
                              c.get("faults"), c["startTime"], compute_slow=parse_compute_slow(c.get("computeSlow")))
    dist.barrier(group=control_group)
    runtime.run(c["iterations"])
    dist.barrier(group=control_group)
    result = {"rank": rank, "dp": runtime.dp, "pp": runtime.pp, "iterations": runtime.records, "links": runtime.link_log, "noise": runtime.noise_log, "paramsDigest": runtime.params_digest(),
              "remaps": runtime.remap_log, "prefetches": runtime.prefetch_log}
    if runtime.split is not None:
        result["split"], result["moves"] = runtime.split, runtime.move_log
    if c.get("saveParams"):
        if runtime.split is not None:  # by model-wide name: the stage's layers depend on the split
            from .gpt import global_state
            params = global_state(runtime.module, runtime.layer_range[0])
        else:
            params = [p.detach() for p in runtime.module.parameters()]
        torch.save(params, os.path.join(c["saveParams"], "rank%d.pt" % rank))
    with open(os.path.join(c["workDir"], "rank%d.json" % rank), "w", encoding="utf-8") as f:
        json.dump(result, f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1], int(sys.argv[2])))
    except Exception as error:  # noqa: BLE001 - one line for the launcher, the trace for humans
        traceback.print_exc()
        print("pipemorph.worker rank %s: %s" % (sys.argv[2] if len(sys.argv) > 2 else "?", error), file=sys.stderr)
        sys.exit(1)
