"""One training rank's main loop (docs/protocol.md sec. 4): read control, agree on the version with
the job's own collective, apply a re-map if the agreed schedule brings one (sec. 5.5), run that
schedule's ops and delegation toggle, all-reduce the stage's gradients over its replicas, report,
record. A schedule that brings a new layer split (sec. 5.7) moves layers between the stages of each
replica first (pipemorph.layers), when the model is layered. `step(i)` is one iteration of that loop; pipemorph.integration.PipelineTrainer builds a
RankRuntime from a user's stage modules, loss, optimizer factory and microbatch source."""
import copy
import hashlib
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from .dataparallel import RingAllReduce
from .delays import DelayFile
from .executor import StageExecutor, StageTimes
from .layers import LayerMover, bounds, exchange
from .layout import Layout
from .noise import Noise, draw, link_tail_ms, pause
from .transport import LinkSender, Receiver, summarize


HANDOFFS = ("stream", "load", "skip", "early")  # skip and early: broken on purpose (tests only)


def _ring_key(layout: Layout) -> Tuple[Tuple[int, ...], ...]:
    """The data-parallel groups a layout needs: each stage's ring members, sorted, in stage order."""
    return tuple(tuple(sorted(layout.ring(pp))) for pp in range(layout.stages))


def layout_key(layout: Layout) -> int:
    """A 56-bit key of a layout's rings (never 0: 0 means none prepared), for the agreement."""
    digest = hashlib.sha256(repr(_ring_key(layout)).encode()).digest()
    return int.from_bytes(digest[:7], "big") + 1


@dataclass
class _Prefetch:
    """What a moving rank built for its new stage during the lead iterations (sec. 5.5)."""
    key: Tuple[Tuple[int, ...], ...]
    topology: int
    pp: int
    split: Optional[Tuple[int, ...]]
    module: torch.nn.Module
    optimizer: torch.optim.Optimizer


class _Phases:
    """Wall-clock ms of consecutive phases (perf_counter), for the re-map log."""

    def __init__(self) -> None:
        self.started = self._last = time.perf_counter()
        self.phases: Dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] = round(self.phases.get(name, 0.0) + (now - self._last) * 1000.0, 3)
        self._last = now

    def total(self) -> float:
        return round((time.perf_counter() - self.started) * 1000.0, 3)


class RankRuntime:
    def __init__(self, rank: int, stages: int, executor: StageExecutor, control: Any, delays: DelayFile,
                 agreement: str = "min", control_group: Optional[Any] = None, start_time: float = 0.0,
                 report: bool = False, layout: Optional[Layout] = None, checkpoint_dir: Optional[str] = None,
                 handoff: str = "stream", dp_reduce: str = "ring",
                 times_for: Optional[Callable[[int], Optional[StageTimes]]] = None, noise: Optional[Noise] = None,
                 build_stage: Optional[Callable[[int], Tuple[torch.nn.Module, torch.optim.Optimizer]]] = None,
                 split: Optional[List[int]] = None,
                 build_range: Optional[Callable[[int, int, int], Tuple[torch.nn.Module, torch.optim.Optimizer]]] = None,
                 mover: Optional[LayerMover] = None, compute_slow: Optional[Dict[int, Tuple[float, int]]] = None) -> None:
        if agreement not in ("min", "skip"):
            raise ValueError("agreement must be min or skip")
        if handoff not in HANDOFFS or dp_reduce not in ("ring", "skip"):
            raise ValueError("handoff must be one of %s, dp_reduce ring or skip" % ", ".join(HANDOFFS))
        self.rank, self.stages, self.executor, self.control = rank, stages, executor, control
        self.delays, self.agreement, self.group = delays, agreement, control_group
        self.start_time = start_time or time.time()
        self.report = report
        self.layout = layout or Layout.initial(stages, 1)
        self.checkpoint_dir, self.handoff, self.dp_reduce, self.times_for = checkpoint_dir, handoff, dp_reduce, times_for
        self.noise = noise or Noise()
        # A re-map that moves this rank builds its new stage's module and optimizer with build_stage(pp)
        # (stages may differ: embeddings first, the head last); without it the module is kept and
        # loads the new stage's weights (stages of one shape).
        self.build_stage = build_stage
        # A layered model (sec. 5.7): `split` the layers per stage in force, build_range(pp, first,
        # last) builds stage pp over layers [first, last), mover moves layers at a split change.
        # Without them a schedule's `layers` is ignored (the job stays correct, only not re-balanced).
        self.split = list(split) if split is not None else None
        self.split_version = 0
        self.build_range, self.mover = build_range, mover
        self.remap_log: List[Dict[str, Any]] = []  # per re-map: iteration, topology, ms by phase (sec. 5.5)
        self.move_log: List[Dict[str, Any]] = []  # per split change: iteration, split, layers sent / received, ms
        # Emulation: {rank: (factor, from iteration)}: that rank's ops take factor x their compute time
        # from that iteration on (a slow device, a compute straggler for the daemon to re-balance).
        self.compute_slow = compute_slow or {}
        self.noise_log: List[Dict[str, Any]] = []  # the noise this rank played, per iteration it played any
        self.records: List[Dict[str, Any]] = []
        self.link_log: List[Dict[str, Any]] = []
        self.iteration = 0
        self._toggle: Optional[Dict[str, int]] = None
        self._senders: Dict[int, LinkSender] = {}
        self._ring: Optional[RingAllReduce] = None
        self._closed = False
        # Sec. 5.5 between the prepare and k (handoffs other than "load"): the layout this rank has
        # prepared, its key in the agreement (0: none), the groups of every layout created so far (by
        # ring membership), and what a moving rank built for its new stage.
        self._prepared: Optional[Layout] = None
        self._prepared_key = 0  # what this rank puts in the agreement for it (layout_key), kept: read every iteration
        self._groups: Dict[Tuple[Tuple[int, ...], ...], List[Any]] = {}
        self._prefetch: Optional[_Prefetch] = None
        self._early_state: Optional[Tuple[int, Dict[str, Any]]] = None  # handoff="early" (the fault): (topology, state)
        self.prefetch_log: List[Dict[str, Any]] = []  # per lead-time step: iteration, topology, what, ms
        if hasattr(control, "readiness"):
            control.readiness = self._ready_for
        executor.before_step = self._all_reduce
        self._enter(self.layout)

    @property
    def dp(self) -> int:
        return self.layout.coords[self.rank][0]

    @property
    def pp(self) -> int:
        return self.layout.coords[self.rank][1]

    # ------------------------------------------------------------------ layout: neighbours and groups
    def _enter(self, layout: Layout, clock: Optional["_Phases"] = None) -> None:
        """Takes this rank's place in `layout`: pipeline neighbours, stage, data, data-parallel ring.

        dist.new_group is collective over the whole job and must be called in the same order
        everywhere: every rank enters the same layouts at the same agreed iteration and creates one
        group per stage in stage order, whether it belongs to it or not."""
        self.layout = layout
        ring = None
        if layout.dp > 1:
            group = self._groups_of(layout)[self.pp]
            ring = RingAllReduce(self.rank, layout.ring(self.pp), group, lambda peer: self.delays.model.pair_ms(self.rank, peer))
        self._ring = ring
        if clock is not None:
            clock.mark("groupsMs")
        e = self.executor
        e.stage = self.pp
        e.prev_rank = layout.rank_at(self.dp, self.pp - 1) if self.pp > 0 else None
        e.next_rank = layout.rank_at(self.dp, self.pp + 1) if self.pp < self.stages - 1 else None
        e.data_offset = self.dp * e.microbatches
        if self.times_for is not None:
            e.times = self.times_for(self.pp)
        self._build_senders(self._toggle)
        if clock is not None:
            clock.mark("sendersMs")

    def _groups_of(self, layout: Layout) -> List[Any]:
        """One data-parallel group per stage of `layout`, created (collectively, in stage order) the
        first time a layout with these rings is seen: at construction, at the boundary where the
        agreement says every rank has prepared it, or at k when it was not prepared. Every rank
        makes the same calls at the same boundary, so the cache is the same everywhere."""
        key = _ring_key(layout)
        if key not in self._groups:
            self._groups[key] = [dist.new_group(list(members), backend="gloo") for members in key]
        return self._groups[key]

    def _remap(self, topology: Dict[str, Any]) -> None:
        """Sec. 5.5 at the agreed iteration k, before its ops: every stage's state (after k - 1's
        optimizer step) goes from the rank that held it (first of its old ring) to the ranks that
        move onto that stage, then everyone takes its place in the new layout. handoff "stream":
        point to point into the module and optimizer the moving rank built during the lead
        iterations (no disk, no barrier); "load": through a checkpoint file and a barrier of the
        whole job, building at k. What each part took goes to remap_log."""
        clock = _Phases()
        new = Layout.of_topology(self.stages, self.layout.dp, topology)
        old_pp, new_pp = self.pp, new.coords[self.rank][1]
        if self.handoff == "load":
            self._hand_over_by_checkpoint(new, old_pp, new_pp, clock)
        else:
            self._hand_over_by_stream(new, old_pp, new_pp, clock)
        self._prefetch, self._early_state = None, None
        self._enter(new, clock)
        self.remap_log.append(dict(clock.phases, iteration=self.iteration, topology=new.version, moved=new_pp != old_pp,
                                   handoff=self.handoff, ms=clock.total()))

    def _hand_over_by_checkpoint(self, new: Layout, old_pp: int, new_pp: int, clock: "_Phases") -> None:
        """The holder writes the stage's state to a file (then renames it), a barrier of the whole
        job, and a moving rank builds its new stage and loads the file."""
        directory = os.path.join(self.checkpoint_dir or ".", "topology%d" % new.version)
        if self.layout.ring(old_pp)[0] == self.rank:
            os.makedirs(directory, exist_ok=True)
            state = {"module": self.executor.module.state_dict(), "optimizer": self.executor.optimizer.state_dict()}
            torch.save(state, os.path.join(directory, "stage%d.pt.tmp" % old_pp))
            os.replace(os.path.join(directory, "stage%d.pt.tmp" % old_pp), os.path.join(directory, "stage%d.pt" % old_pp))
        clock.mark("saveMs")
        dist.barrier(group=self.group)  # every stage's checkpoint is written before anyone reads
        clock.mark("barrierMs")
        if new_pp != old_pp and self.build_stage is not None:
            self.executor.set_module(*self.build_stage(new_pp))
        clock.mark("buildMs")
        if new_pp != old_pp:
            state = torch.load(os.path.join(directory, "stage%d.pt" % new_pp))
            self.executor.module.load_state_dict(state["module"])
            self.executor.optimizer.load_state_dict(state["optimizer"])
        clock.mark("loadMs")

    def _hand_over_by_stream(self, new: Layout, old_pp: int, new_pp: int, clock: "_Phases") -> None:
        """The holder of each stage sends its state to every rank moving onto it (sends posted
        first, so a holder that itself moves cannot deadlock); a moving rank receives from its new
        stage's holder and loads it into the module it prefetched (built now if it did not).
        handoff="skip" (tests only, the stale-weight fault): nothing is sent, a moving rank trains
        with its new stage's initial weights (or, without build_stage, its old stage's)."""
        takers = [r for r, (_, pp) in new.coords.items() if pp == old_pp and self.layout.coords[r][1] != old_pp]
        holder = self.layout.ring(new_pp)[0] if new_pp != old_pp else None
        outgoing: Dict[int, Any] = {}
        if self.handoff != "skip" and self.layout.ring(old_pp)[0] == self.rank and takers:
            state = self._state_to_hand(new.version)
            outgoing = {taker: state for taker in takers}
        got = exchange(outgoing, [holder] if holder is not None and self.handoff != "skip" else [], self.group)
        clock.mark("streamMs")
        if new_pp == old_pp:
            return
        built = self._take_prefetch(new, new_pp)
        if built is None and self.build_stage is not None:
            built = self.build_stage(new_pp)
        clock.mark("buildMs")
        if built is not None:
            self.executor.set_module(*built)
        if holder in got:
            self.executor.module.load_state_dict(got[holder]["module"])
            self.executor.optimizer.load_state_dict(got[holder]["optimizer"])
        clock.mark("loadMs")

    def _state_to_hand(self, topology_version: int) -> Dict[str, Any]:
        """The stage's weights and optimizer state as they are now (after k - 1's step); with
        handoff="early" (tests only, the fault) the copy taken at the prepare instead: stale."""
        if self.handoff == "early" and self._early_state is not None and self._early_state[0] == topology_version:
            return self._early_state[1]
        return {"module": self.executor.module.state_dict(), "optimizer": self.executor.optimizer.state_dict()}

    # ------------------------------------------------------------------ lead iterations: prefetch
    def _ready_for(self, schedule: Dict[str, Any], iteration: int) -> bool:
        """The control's readiness hook (sec. 5.5): called before acking a prepared schedule. A rank
        that the schedule's re-map moves builds its new stage's module and optimizer now (their
        state arrives at k); every rank notes the layout, so the agreement can create its groups
        early. Returns True once ready; the build runs synchronously, so that is at once."""
        topology = schedule.get("topology")
        if not topology or topology.get("version") == self.layout.version or self.handoff == "load":
            return True
        new = Layout.of_topology(self.stages, self.layout.dp, topology)
        self._prepared, self._prepared_key = new, layout_key(new)
        new_pp = new.coords[self.rank][1]
        if self.handoff == "early" and self.layout.ring(self.pp)[0] == self.rank and self._early_state is None:
            state = {"module": self.executor.module.state_dict(), "optimizer": self.executor.optimizer.state_dict()}
            self._early_state = (new.version, copy.deepcopy(state))
        if new_pp == self.pp or self.build_stage is None or self._prefetch_matches(new, new_pp):
            return True
        began = time.perf_counter()
        module, optimizer = self.build_stage(new_pp)
        self._prefetch = _Prefetch(_ring_key(new), new.version, new_pp, self._split_key(), module, optimizer)
        self.prefetch_log.append({"iteration": iteration, "topology": new.version, "what": "build",
                                  "ms": round((time.perf_counter() - began) * 1000.0, 3)})
        return True

    def _split_key(self) -> Optional[Tuple[int, ...]]:
        return tuple(self.split) if self.split is not None else None

    def _prefetch_matches(self, layout: Layout, pp: int) -> bool:
        p = self._prefetch
        return (p is not None and p.topology == layout.version and p.key == _ring_key(layout) and p.pp == pp
                and p.split == self._split_key())

    def _take_prefetch(self, layout: Layout, pp: int) -> Optional[Tuple[torch.nn.Module, torch.optim.Optimizer]]:
        """The module and optimizer built during the lead iterations for stage pp of `layout`, if
        they still fit (same layout, same layer split), else None."""
        if not self._prefetch_matches(layout, pp):
            return None
        return self._prefetch.module, self._prefetch.optimizer

    def _create_agreed_groups(self, agreed: int) -> None:
        """Every rank has prepared the same layout (the agreement's MIN and MAX of the key match):
        create its groups now, at this same boundary everywhere, instead of at k."""
        if agreed == 0 or self._prepared is None or self._prepared_key != agreed or self.layout.dp < 2:
            return
        if _ring_key(self._prepared) in self._groups:
            return
        began = time.perf_counter()
        self._groups_of(self._prepared)
        self.prefetch_log.append({"iteration": self.iteration, "topology": self._prepared.version, "what": "groups",
                                  "ms": round((time.perf_counter() - began) * 1000.0, 3)})

    # ------------------------------------------------------------------ layer split changes
    def _move_layers(self, layers: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """Sec. 5.7 at the agreed iteration k, before its ops (after a re-map of the same schedule):
        within this rank's replica, the layers whose stage changes go with their weights and
        optimizer state from the rank that held them to the rank that holds them now; every rank
        whose range changed rebuilds its stage (pipemorph.layers)."""
        self.split_version = int(layers.get("version", self.split_version + 1))
        new = [int(n) for n in layers["perStage"]]
        if self.split is None or self.mover is None or self.build_range is None:
            return None  # not a layered model: keep the layers
        if len(new) != self.stages or sum(new) != sum(self.split) or min(new) < 1:
            raise ValueError("layers v%d: perStage %s does not split the model's %d layers into %d stages"
                             % (self.split_version, new, sum(self.split), self.stages))
        pp, dp = self.pp, self.dp
        rebuilt, done = self.mover.move(pp, self.split, new, self.executor.module, self.executor.optimizer,
                                        lambda stage: self.layout.rank_at(dp, stage),
                                        lambda first, last: self.build_range(pp, first, last), self.group)
        if rebuilt is not None:
            self.executor.set_module(*rebuilt)
        self.split = new
        done.update({"iteration": self.iteration, "version": self.split_version, "perStage": new})
        self.move_log.append(done)
        return done

    @property
    def layer_range(self) -> Optional[Tuple[int, int]]:
        """[first, last) of the layers this rank's stage holds now (a layered model), else None."""
        return bounds(self.split)[self.pp] if self.split is not None else None

    # ------------------------------------------------------------------ senders and delays
    def _delay_for(self, link: int, peer: int):
        return lambda: (self.delays.model.delay_ms(link, (time.time() - self.start_time) * 1000.0, self.iteration)
                        + self.delays.model.pair_ms(self.rank, peer)
                        + link_tail_ms(self.noise, self.rank, peer, self.iteration))

    def _build_senders(self, toggle: Optional[Dict[str, int]]) -> None:
        for sender in self._senders.values():
            sender.drain()
            sender.close()
        queues = toggle["sendQueues"] if toggle else 0
        self._senders = {}
        prev, nxt = self.executor.prev_rank, self.executor.next_rank
        if prev is not None:
            self._senders[prev] = LinkSender(prev, None, self._delay_for(self.pp - 1, prev), queues)
        if nxt is not None:
            self._senders[nxt] = LinkSender(nxt, None, self._delay_for(self.pp, nxt), queues)
        self._toggle = toggle

    def _all_reduce(self) -> None:
        if self._ring is not None:
            self._ring.mean(self.executor.params, broken=self.dp_reduce == "skip")

    # ------------------------------------------------------------------ agreement
    def _agree(self, local: int, first: bool) -> int:
        """k (sec. 5.2): MIN of the local versions, MAX at the first iteration, in one all-reduce MIN
        (MAX as -MIN of -v) that also carries the key of the layout each rank has prepared and its
        negation: where MIN(key) == -MIN(-key) every rank has prepared that layout, and all create
        its groups at this boundary."""
        if self.agreement == "skip":
            return local  # deliberately broken: each rank runs what it alone knows (tests only)
        key = self._prepared_key
        value = torch.tensor([-local if first else local, key, -key], dtype=torch.int64)
        dist.all_reduce(value, op=dist.ReduceOp.MIN, group=self.group)
        low, high = int(value[1].item()), -int(value[2].item())
        if low == high:
            self._create_agreed_groups(low)
        k = int(value[0].item())
        return -k if first else k

    # ------------------------------------------------------------------ the loop
    def run(self, iterations: int, start: int = 0) -> None:
        for i in range(start, start + iterations):
            self.step(i)
        self.close()

    def step(self, i: int) -> Dict[str, Any]:
        """Iteration i (protocol sec. 4): control, agreement, re-map, the schedule's ops with its
        toggle, gradient all-reduce and optimizer step, report. Returns what it recorded:
        iteration, version, ms, topology, dp, pp, layers (the split version), moveMs at a split
        change, and loss on the last stage."""
        first = not self.records
        self.iteration = i
        began = time.perf_counter()
        self.delays.refresh()
        try:
            self.control.poll_control(i)
        except Exception:  # noqa: BLE001 - Redis unreachable: the local k does not advance (sec. 4)
            pass
        k = self._agree(self.control.startup_version() if first else self.control.committed_version_for(i), first)
        ops, toggle = self.control.schedule_for(k)
        topology = getattr(self.control, "topology_change", None)
        if topology is not None:
            self.control.topology_change = None
            self._toggle = toggle  # _enter builds the senders with it
            self._remap(topology)
        elif toggle != self._toggle or self._closed:
            self._build_senders(toggle)
        self._closed = False
        layers = getattr(self.control, "layers_change", None)
        moved = None
        if layers is not None:
            self.control.layers_change = None
            moved = self._move_layers(layers)
        e = self.executor
        factor, since = self.compute_slow.get(self.rank, (1.0, 0))
        e.slowdown = factor if i >= since else 1.0
        played = draw(self.noise, self.rank, self.pp, i, len(ops))
        if played.pause_op is not None:
            e.before_op = lambda index, p=played: pause(p.pause_ms, p.collect) if index == p.pause_op else None
        if played.stall_ms > 0:
            pause(played.stall_ms)  # stage 0's dataloader: before the first forward
        stats = e.run(ops, i, self._senders.get(e.prev_rank), self._senders.get(e.next_rank), Receiver(None))
        e.before_op = None
        if played.checkpoint_ms > 0:
            pause(played.checkpoint_ms)  # every rank, at the iteration end
        # The link tail this rank's sends were held this iteration, by peer (the senders draw the same).
        tails = {str(peer): link_tail_ms(self.noise, self.rank, peer, i) for peer in self._senders}
        tails = {peer: ms for peer, ms in tails.items() if ms > 0}
        if played.pause_op is not None or played.stall_ms > 0 or played.checkpoint_ms > 0 or tails:
            self.noise_log.append({"iteration": i, "pauseMs": played.pause_ms if played.pause_op is not None else 0.0,
                                   "stallMs": played.stall_ms, "checkpointMs": played.checkpoint_ms, "linkTailMs": tails})
        ms = (time.perf_counter() - began) * 1000.0
        record = {"iteration": i, "version": k, "ms": ms, "topology": self.layout.version, "dp": self.dp, "pp": self.pp,
                  "layers": self.split_version}
        if moved is not None:
            record["moveMs"] = moved["ms"]
        if stats.loss is not None:
            record["loss"] = stats.loss
        self.records.append(record)
        links, peaks = [], {}
        for peer, sender in sorted(self._senders.items()):
            peaks[str(peer)] = sender.take_peak()
            times, size = sender.stats.take()
            if times:
                links.append(dict({"peer": peer, "kind": "pipeline", "bytes": size, "delegated": sender.delegated,
                                   "error": None}, **summarize(times)))
        if self._ring is not None:
            times, size = self._ring.stats.take()
            if times:
                links.append(dict({"peer": self._ring.next, "kind": "data-parallel", "bytes": size, "delegated": False,
                                   "error": None}, **summarize(times)))
        # links: what the report carries; inFlight: most sends on the wire at once per peer (HoL evidence).
        self.link_log.append({"iteration": i, "links": links, "inFlight": peaks})
        if self.report:
            try:
                self.control.report(i, k, stats.compute_ms["F"], stats.compute_ms["B"], stats.compute_ms["W"], links,
                                    delegation={"enabled": bool(toggle), "sendQueues": (toggle or {}).get("sendQueues", 0),
                                                "recvQueues": (toggle or {}).get("recvQueues", 0)},
                                    iteration_ms=ms)
            except Exception:  # noqa: BLE001 - a lost report is harmless; the data plane goes on
                pass
        return self.records[-1]

    def close(self) -> None:
        """Waits for the last sends and stops the send workers."""
        for sender in self._senders.values():
            sender.drain()
            sender.close()
        self._senders = {}
        self._closed = True

    def params_digest(self) -> str:
        h = hashlib.sha256()
        for p in self.executor.module.parameters():
            h.update(p.detach().contiguous().numpy().tobytes())
        return h.hexdigest()
