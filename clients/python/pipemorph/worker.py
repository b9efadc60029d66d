"""One rank process started by pipemorph.launch: `python -m pipemorph.worker CONFIG.json RANK`."""
import datetime
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

from .control import ScriptedControl
from .delays import DelayFile
from .executor import StageExecutor, StageTimes
from .layout import Layout
from .noise import parse_noise
from .runtime import RankRuntime
from .stage import loss_fn, microbatch, stage_module


def main(config_path: str, rank: int) -> int:
    with open(config_path, "r", encoding="utf-8") as f:
        c = json.load(f)
    torch.set_num_threads(1)
    stages, n, dp = c["stages"], c["microbatches"], c.get("dp", 1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % c["masterPort"], rank=rank, world_size=stages * dp,
                            timeout=datetime.timedelta(seconds=c["timeoutS"]))
    control_group = dist.new_group(backend="gloo")  # the agreement's collective, apart from the p2p traffic
    layout = Layout.initial(stages, dp)
    my_dp, pp = layout.coords[rank]
    hidden, rows, seed = c["hidden"], c["rows"], c["seed"]
    module = stage_module(pp, hidden, seed)
    optimizer = torch.optim.SGD(module.parameters(), lr=c["lr"], momentum=c.get("momentum", 0.0))

    def times_for(stage: int):
        if c["compute"] != "sleep":
            return None
        p, scale = c["profile"], c.get("timeScale", 1.0)
        return StageTimes(p["fMs"][stage] * scale, p["bMs"][stage] * scale, p["wMs"][stage] * scale)
    executor = StageExecutor(pp, stages, n, module, optimizer, loss_fn,
                             lambda i, j: microbatch(i, j, rows, hidden, seed), (rows, hidden), c["compute"], times_for(pp))
    if c.get("schedules") is not None:
        control = ScriptedControl(c["schedules"], rank, my_dp, pp)
        reporting = False
    else:
        import redis  # only the daemon-driven mode needs redis-py
        from .protocol import PipemorphRank
        client = redis.Redis.from_url(c["redis"], socket_timeout=2, socket_connect_timeout=2)
        control = PipemorphRank(client, c["job"], rank, my_dp, pp)
        control.wait_for_schedule(timeout_s=c["timeoutS"])
        reporting = True
    runtime = RankRuntime(rank, stages, executor, control, DelayFile(c.get("delays"), stages - 1), c["agreement"],
                          control_group, c["startTime"], reporting, layout, c.get("checkpointDir"),
                          c.get("handoff", "load"), c.get("dpReduce", "ring"), times_for,
                          parse_noise(c.get("noise")))
    dist.barrier(group=control_group)
    runtime.run(c["iterations"])
    dist.barrier(group=control_group)
    result = {"rank": rank, "dp": runtime.dp, "pp": runtime.pp, "iterations": runtime.records, "links": runtime.link_log, "noise": runtime.noise_log, "paramsDigest": runtime.params_digest()}
    if c.get("saveParams"):
        torch.save([p.detach() for p in module.parameters()], os.path.join(c["saveParams"], "rank%d.pt" % rank))
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
