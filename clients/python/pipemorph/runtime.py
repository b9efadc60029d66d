"""One training rank's main loop (docs/protocol.md sec. 4): read control, agree on the version with
the job's own collective, apply a re-map if the agreed schedule brings one (sec. 5.5), run that
schedule's ops and delegation toggle, all-reduce the stage's gradients over its replicas, report,
record. A schedule that brings a new layer split (sec. 5.7) moves layers between the stages of each
replica first (pipemorph.layers), when the model is layered. `step(i)` is one iteration of that loop; pipemorph.integration.PipelineTrainer builds a
RankRuntime from a user's stage modules, loss, optimizer factory and microbatch source."""
import hashlib
import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from .dataparallel import RingAllReduce
from .delays import DelayFile
from .executor import StageExecutor, StageTimes
from .layers import LayerMover, bounds
from .layout import Layout
from .noise import Noise, draw, link_tail_ms, pause
from .transport import LinkSender, Receiver, summarize


class RankRuntime:
    def __init__(self, rank: int, stages: int, executor: StageExecutor, control: Any, delays: DelayFile,
                 agreement: str = "min", control_group: Optional[Any] = None, start_time: float = 0.0,
                 report: bool = False, layout: Optional[Layout] = None, checkpoint_dir: Optional[str] = None,
                 handoff: str = "load", dp_reduce: str = "ring",
                 times_for: Optional[Callable[[int], Optional[StageTimes]]] = None, noise: Optional[Noise] = None,
                 build_stage: Optional[Callable[[int], Tuple[torch.nn.Module, torch.optim.Optimizer]]] = None,
                 split: Optional[List[int]] = None,
                 build_range: Optional[Callable[[int, int, int], Tuple[torch.nn.Module, torch.optim.Optimizer]]] = None,
                 mover: Optional[LayerMover] = None, compute_slow: Optional[Dict[int, Tuple[float, int]]] = None) -> None:
        if agreement not in ("min", "skip"):
            raise ValueError("agreement must be min or skip")
        if handoff not in ("load", "skip") or dp_reduce not in ("ring", "skip"):
            raise ValueError("handoff must be load or skip, dp_reduce ring or skip")
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
        executor.before_step = self._all_reduce
        self._enter(self.layout)

    @property
    def dp(self) -> int:
        return self.layout.coords[self.rank][0]

    @property
    def pp(self) -> int:
        return self.layout.coords[self.rank][1]

    # ------------------------------------------------------------------ layout: neighbours and groups
    def _enter(self, layout: Layout) -> None:
        """Takes this rank's place in `layout`: pipeline neighbours, stage, data, data-parallel ring.

        dist.new_group is collective over the whole job and must be called in the same order
        everywhere: every rank enters the same layouts at the same agreed iteration and creates one
        group per stage in stage order, whether it belongs to it or not."""
        self.layout = layout
        ring = None
        if layout.dp > 1:
            for pp in range(layout.stages):
                members = layout.ring(pp)
                group = dist.new_group(sorted(members), backend="gloo")
                if pp == self.pp:
                    ring = RingAllReduce(self.rank, members, group, lambda peer: self.delays.model.pair_ms(self.rank, peer))
        self._ring = ring
        e = self.executor
        e.stage = self.pp
        e.prev_rank = layout.rank_at(self.dp, self.pp - 1) if self.pp > 0 else None
        e.next_rank = layout.rank_at(self.dp, self.pp + 1) if self.pp < self.stages - 1 else None
        e.data_offset = self.dp * e.microbatches
        if self.times_for is not None:
            e.times = self.times_for(self.pp)
        self._build_senders(self._toggle)

    def _remap(self, topology: Dict[str, Any]) -> None:
        """Sec. 5.5 at the agreed iteration k, before its ops: every stage's state is handed from the
        rank that held it (first of its old ring) through a checkpoint to the ranks that move onto
        that stage; then everyone re-forms its communicators for the new layout."""
        new = Layout.of_topology(self.stages, self.layout.dp, topology)
        old_pp, new_pp = self.pp, new.coords[self.rank][1]
        directory = os.path.join(self.checkpoint_dir or ".", "topology%d" % new.version)
        if self.layout.ring(old_pp)[0] == self.rank:
            os.makedirs(directory, exist_ok=True)
            state = {"module": self.executor.module.state_dict(), "optimizer": self.executor.optimizer.state_dict()}
            torch.save(state, os.path.join(directory, "stage%d.pt.tmp" % old_pp))
            os.replace(os.path.join(directory, "stage%d.pt.tmp" % old_pp), os.path.join(directory, "stage%d.pt" % old_pp))
        dist.barrier(group=self.group)  # every stage's checkpoint is written before anyone reads
        if new_pp != old_pp and self.build_stage is not None:
            self.executor.set_module(*self.build_stage(new_pp))
        if new_pp != old_pp and self.handoff == "load":
            state = torch.load(os.path.join(directory, "stage%d.pt" % new_pp))
            self.executor.module.load_state_dict(state["module"])
            self.executor.optimizer.load_state_dict(state["optimizer"])
        # handoff="skip" (tests only, the stale-weight fault): a moved rank keeps its old stage's
        # weights, or with build_stage its new stage's initial ones, and trains wrong.
        self._enter(new)

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
        if self.agreement == "skip":
            return local  # deliberately broken: each rank runs what it alone knows (tests only)
        value = torch.tensor([local], dtype=torch.int64)
        dist.all_reduce(value, op=dist.ReduceOp.MAX if first else dist.ReduceOp.MIN, group=self.group)
        return int(value.item())

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
