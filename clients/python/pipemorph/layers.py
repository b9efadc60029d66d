"""Moving layers between pipeline stages at a re-balance (docs/protocol.md sec. 5.7).

A layered model builds stage pp from a contiguous range [first, last) of the model's movable
layers (pipemorph.integration.PipelineModel with `layers`); the rest of a stage (embeddings on the
first, the head on the last) never moves. When the agreed schedule brings a new split
(`layers.perStage`), every rank, at the boundary before the agreed iteration k (the state after
k - 1's optimizer step):

1. sends, to the rank of the same replica that holds each of its layers under the new split, those
   layers' weights and optimizer state (point-to-point over the job's gloo group: one message of
   the serialized state per peer, its length first);
2. receives the layers it gains the same way;
3. builds its stage from its new range with the user's factory, loads the layers it kept (its own
   weights and optimizer state) and the ones it received, and drops the ones it gave away.

A rank whose range does not change does nothing. Moves are derived from the two splits (the
schedule's `moves` says the same for humans): layer L goes from the stage holding it under the old
split to the stage holding it under the new one, neighbours or not.
"""
import io
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

_SIZE_TAG, _DATA_TAG = 1 << 20, (1 << 20) + 1


def bounds(split: Sequence[int]) -> List[Tuple[int, int]]:
    """[first, last) of every stage under `split` (layers per stage, in stage order)."""
    out, at = [], 0
    for n in split:
        out.append((at, at + n))
        at += n
    return out


def transfers(old: Sequence[int], new: Sequence[int], pp: int) -> Tuple[Dict[int, List[int]], Dict[int, List[int]]]:
    """(to send, to receive) by stage of the other end: the layers stage pp gives to each stage and
    the layers it gets from each, going from split `old` to `new`."""
    ob, nb = bounds(old), bounds(new)
    give = {t: [l for l in range(*ob[pp]) if nb[t][0] <= l < nb[t][1]] for t in range(len(new)) if t != pp}
    take = {t: [l for l in range(*nb[pp]) if ob[t][0] <= l < ob[t][1]] for t in range(len(new)) if t != pp}
    return {t: ls for t, ls in give.items() if ls}, {t: ls for t, ls in take.items() if ls}


def _split_keys(module: torch.nn.Module, count: int, prefix: Callable[[int], str]) -> Tuple[Dict[int, Dict[str, Any]], Dict[str, Any]]:
    """The module's state dict cut into its layers (local index -> {suffix: tensor}) and the rest."""
    layers: Dict[int, Dict[str, Any]] = {j: {} for j in range(count)}
    rest: Dict[str, Any] = {}
    prefixes = [(prefix(j), j) for j in range(count)]
    for name, value in module.state_dict().items():
        owner = next(((p, j) for p, j in prefixes if name.startswith(p)), None)
        if owner is None:
            rest[name] = value
        else:
            layers[owner[1]][name[len(owner[0]):]] = value
    return layers, rest


def _optimizer_state(module: torch.nn.Module, optimizer: torch.optim.Optimizer) -> Dict[str, Dict[str, Any]]:
    """Per-parameter optimizer state (momentum, Adam moments, step) by parameter name."""
    return {name: dict(optimizer.state[p]) for name, p in module.named_parameters() if p in optimizer.state}


def _clone(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def pack_layers(module: torch.nn.Module, optimizer: torch.optim.Optimizer, first: int, count: int,
                prefix: Callable[[int], str], layers: Sequence[int], with_optimizer: bool = True) -> Dict[int, Dict[str, Any]]:
    """{global layer: {"weights": {suffix: tensor}, "optimizer": {suffix: {key: value}}}} of the
    stage's layers `layers` (global indices, held by this stage whose first layer is `first`)."""
    weights, _ = _split_keys(module, count, prefix)
    state = _optimizer_state(module, optimizer)
    out = {}
    for layer in layers:
        p = prefix(layer - first)
        opt = {name[len(p):]: {k: _clone(v) for k, v in s.items()} for name, s in state.items() if name.startswith(p)}
        out[layer] = {"weights": {k: _clone(v) for k, v in weights[layer - first].items()},
                      "optimizer": opt if with_optimizer else {}}
    return out


def rebuild(module: torch.nn.Module, optimizer: torch.optim.Optimizer, old: Tuple[int, int], new: Tuple[int, int],
            build: Callable[[int, int], Tuple[torch.nn.Module, torch.optim.Optimizer]], prefix: Callable[[int], str],
            received: Dict[int, Dict[str, Any]], keep_received_weights: bool = True) -> Tuple[torch.nn.Module, torch.optim.Optimizer]:
    """The stage built from layers [new) with the user's factory, holding the kept layers' and the
    non-layer parts' weights and optimizer state from (module, optimizer) and the received layers'
    from `received`. keep_received_weights=False (tests only, the stale-layers fault) leaves the
    received layers at the freshly built (initial) weights: a stale copy."""
    weights, rest = _split_keys(module, old[1] - old[0], prefix)
    state = _optimizer_state(module, optimizer)
    new_module, new_optimizer = build(*new)
    target: Dict[str, Any] = dict(new_module.state_dict())
    optim_by_name: Dict[str, Dict[str, Any]] = {}
    for name, value in rest.items():
        target[name] = value
        if name in state:
            optim_by_name[name] = state[name]
    for layer in range(*new):
        p_new = prefix(layer - new[0])
        if old[0] <= layer < old[1]:
            p_old = prefix(layer - old[0])
            for suffix, value in weights[layer - old[0]].items():
                target[p_new + suffix] = value
            for name, s in state.items():
                if name.startswith(p_old):
                    optim_by_name[p_new + name[len(p_old):]] = s
        else:
            got = received[layer]
            if keep_received_weights:
                for suffix, value in got["weights"].items():
                    target[p_new + suffix] = value
            for suffix, s in got["optimizer"].items():
                optim_by_name[p_new + suffix] = s
    new_module.load_state_dict(target, strict=True)
    for name, p in new_module.named_parameters():
        if name in optim_by_name:
            new_optimizer.state[p] = {k: _clone(v) for k, v in optim_by_name[name].items()}
    return new_module, new_optimizer


def _to_bytes(payload: Any) -> Tuple[bytearray, torch.Tensor]:
    stream = io.BytesIO()
    torch.save(payload, stream)
    buffer = bytearray(stream.getvalue())
    return buffer, torch.frombuffer(buffer, dtype=torch.uint8)


def exchange(outgoing: Dict[int, Any], incoming: List[int], group: Optional[Any]) -> Dict[int, Any]:
    """Sends each payload of `outgoing` (peer rank -> object) and receives one object from every
    rank of `incoming`, point to point in `group`. Sends are posted first (non-blocking), so ranks
    that both give and take cannot deadlock."""
    pending = []
    for peer, payload in sorted(outgoing.items()):
        buffer, data = _to_bytes(payload)
        size = torch.tensor([data.numel()], dtype=torch.int64)
        pending.append((size, dist.isend(size, peer, group=group, tag=_SIZE_TAG)))
        pending.append(((buffer, data), dist.isend(data, peer, group=group, tag=_DATA_TAG)))  # kept alive until sent
    got = {}
    for peer in sorted(incoming):
        size = torch.zeros(1, dtype=torch.int64)
        dist.recv(size, peer, group=group, tag=_SIZE_TAG)
        data = torch.empty(int(size.item()), dtype=torch.uint8)
        dist.recv(data, peer, group=group, tag=_DATA_TAG)
        got[peer] = torch.load(io.BytesIO(data.numpy().tobytes()))
    for _, work in pending:
        work.wait()
    return got


class LayerMover:
    """One rank's side of a split change: who it sends to, who it receives from, and the rebuild.

    rank_at(stage) -> rank of that stage in this rank's replica; build(first, last) -> (module,
    optimizer) of this rank's stage over those layers; prefix(j) -> state-dict prefix of the stage's
    j-th layer. fault: None, "layer-optim-lost" (the moved layers' optimizer state is not sent) or
    "layer-stale" (the receiver keeps its own initial copy of a moved layer), tests only."""

    def __init__(self, prefix: Callable[[int], str], fault: Optional[str] = None) -> None:
        self.prefix, self.fault = prefix, fault

    def move(self, pp: int, old: Sequence[int], new: Sequence[int], module: torch.nn.Module,
             optimizer: torch.optim.Optimizer, rank_at: Callable[[int], int],
             build: Callable[[int, int], Tuple[torch.nn.Module, torch.optim.Optimizer]], group: Optional[Any]
             ) -> Tuple[Optional[Tuple[torch.nn.Module, torch.optim.Optimizer]], Dict[str, Any]]:
        """Returns (the new (module, optimizer), or None when this stage's range is unchanged;
        what it did: layers sent and received, bytes, ms)."""
        started = time.perf_counter()
        give, take = transfers(old, new, pp)
        ob, nb = bounds(old)[pp], bounds(new)[pp]
        outgoing = {rank_at(t): pack_layers(module, optimizer, ob[0], ob[1] - ob[0], self.prefix, layers,
                                            with_optimizer=self.fault != "layer-optim-lost")
                    for t, layers in give.items()}
        got = exchange(outgoing, [rank_at(t) for t in take], group)
        received: Dict[int, Dict[str, Any]] = {}
        for payload in got.values():
            received.update(payload)
        rebuilt = None
        if ob != nb:
            rebuilt = rebuild(module, optimizer, ob, nb, build, self.prefix, received,
                              keep_received_weights=self.fault != "layer-stale")
        return rebuilt, {"sent": sorted(l for ls in give.values() for l in ls),
                         "received": sorted(received), "ms": (time.perf_counter() - started) * 1000.0}
