"""Schedules for the runtime tests, built here so the Python tests need no Node."""
from typing import Any, Dict, List, Optional


def stage_ops(stages: int, microbatches: int, stage: int, warmup: Optional[int] = None, defer_w: bool = False) -> List[str]:
    """1F1B order of F and B with `warmup` forwards first; W right after its B, or one op later (ZB-style)."""
    w = min(microbatches, stages - stage if warmup is None else warmup)
    ops = ["F%d" % j for j in range(w)]
    next_f, pending_w = w, []
    for j in range(microbatches):
        ops.append("B%d" % j)
        pending_w.append(j)
        if not defer_w:
            ops.append("W%d" % pending_w.pop(0))
        if next_f < microbatches:
            ops.append("F%d" % next_f)
            next_f += 1
        if defer_w and len(pending_w) > 1:
            ops.append("W%d" % pending_w.pop(0))
    ops += ["W%d" % j for j in pending_w]
    return ops


def schedule(stages: int, microbatches: int, version: int = 1, effective: int = 0, warmup: Optional[List[int]] = None,
             defer_w: bool = False, delegation: Optional[List[int]] = None, queues: int = 2,
             heard_at: Optional[Dict[int, int]] = None, dp: int = 1, topology: Optional[Dict[str, Any]] = None,
             layers: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    warm = warmup or [stages - s for s in range(stages)]
    s: Dict[str, Any] = {
        "protocol": 1, "jobId": "test", "version": version, "epoch": 1, "state": "committed", "effectiveIteration": effective,
        "pipelines": [{"dpReplicas": list(range(dp)), "warmup": warm,
                       "stages": [stage_ops(stages, microbatches, p, warm[p], defer_w) for p in range(stages)]}],
        "delegation": [{"rank": r, "sendQueues": queues, "recvQueues": queues} for r in (delegation or [])],
    }
    if topology:
        s["topology"] = topology
    if layers:
        s["layers"] = layers
    if heard_at:
        s["heardAt"] = {str(r): i for r, i in heard_at.items()}
    return s


def swap_topology(stages: int, dp: int, a: int, b: int, version: int = 1, since: int = 2) -> Dict[str, Any]:
    """The layout of rank r at (r // stages, r % stages) with ranks a and b swapped (sec. 5.5)."""
    coords = {r: (r // stages, r % stages) for r in range(stages * dp)}
    coords[a], coords[b] = coords[b], coords[a]
    return {"version": version, "sinceVersion": since, "rings": [list(range(dp)) for _ in range(stages)],
            "ranks": [{"rank": r, "dp": d, "pp": p, "tp": 0} for r, (d, p) in sorted(coords.items())],
            "moved": sorted(r for r in (a, b) if coords[r][1] != r % stages)}


def layer_split(old: List[int], new: List[int], version: int = 1, since: int = 2, state_bytes: float = 0.0) -> Dict[str, Any]:
    """The schedule's `layers` (sec. 5.7) going from split `old` to `new`: perStage and the runs of
    layers whose stage changes, as the daemon writes them."""
    def owner(split: List[int]) -> List[int]:
        return [s for s, n in enumerate(split) for _ in range(n)]
    before, after = owner(old), owner(new)
    moves: List[Dict[str, Any]] = []
    for layer, (a, b) in enumerate(zip(before, after)):
        if a == b:
            continue
        last = moves[-1] if moves else None
        if last and last["lastLayer"] == layer - 1 and (last["fromStage"], last["toStage"]) == (a, b):
            last["lastLayer"] = layer
            last["bytes"] += state_bytes
        else:
            moves.append({"firstLayer": layer, "lastLayer": layer, "fromStage": a, "toStage": b, "bytes": state_bytes})
    return {"version": version, "sinceVersion": since, "perStage": list(new), "moves": moves}
