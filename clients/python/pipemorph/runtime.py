"""One training rank's main loop (docs/protocol.md sec. 4): read control, agree on the version with
the job's own collective, run that schedule's ops and delegation toggle, report, record."""
import hashlib
import time
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

from .delays import DelayFile
from .executor import StageExecutor
from .transport import LinkSender, Receiver, summarize


class RankRuntime:
    def __init__(self, rank: int, stages: int, executor: StageExecutor, control: Any, delays: DelayFile,
                 agreement: str = "min", control_group: Optional[Any] = None, start_time: float = 0.0,
                 report: bool = False) -> None:
        if agreement not in ("min", "skip"):
            raise ValueError("agreement must be min or skip")
        self.rank, self.stages, self.executor, self.control = rank, stages, executor, control
        self.delays, self.agreement, self.group = delays, agreement, control_group
        self.start_time = start_time or time.time()
        self.report = report
        self.records: List[Dict[str, Any]] = []
        self.link_log: List[Dict[str, Any]] = []
        self.iteration = 0
        self._toggle: Optional[Dict[str, int]] = None
        self._senders: Dict[int, LinkSender] = {}
        self._build_senders(None)

    # ------------------------------------------------------------------ senders and delays
    def _delay_for(self, link: int):
        return lambda: self.delays.model.delay_ms(link, (time.time() - self.start_time) * 1000.0, self.iteration)

    def _build_senders(self, toggle: Optional[Dict[str, int]]) -> None:
        for sender in self._senders.values():
            sender.drain()
            sender.close()
        queues = toggle["sendQueues"] if toggle else 0
        self._senders = {}
        if self.rank > 0:
            self._senders[self.rank - 1] = LinkSender(self.rank - 1, None, self._delay_for(self.rank - 1), queues)
        if self.rank < self.stages - 1:
            self._senders[self.rank + 1] = LinkSender(self.rank + 1, None, self._delay_for(self.rank), queues)
        self._toggle = toggle

    # ------------------------------------------------------------------ agreement
    def _agree(self, local: int, first: bool) -> int:
        if self.agreement == "skip":
            return local  # deliberately broken: each rank runs what it alone knows (tests only)
        value = torch.tensor([local], dtype=torch.int64)
        dist.all_reduce(value, op=dist.ReduceOp.MAX if first else dist.ReduceOp.MIN, group=self.group)
        return int(value.item())

    # ------------------------------------------------------------------ the loop
    def run(self, iterations: int) -> None:
        for i in range(iterations):
            self.iteration = i
            began = time.perf_counter()
            self.delays.refresh()
            try:
                self.control.poll_control(i)
            except Exception:  # noqa: BLE001 - Redis unreachable: the local k does not advance (sec. 4)
                pass
            first = i == 0
            k = self._agree(self.control.startup_version() if first else self.control.committed_version_for(i), first)
            ops, toggle = self.control.schedule_for(k)
            if toggle != self._toggle:
                self._build_senders(toggle)
            stats = self.executor.run(ops, i, self._senders.get(self.rank - 1), self._senders.get(self.rank + 1), Receiver(None))
            ms = (time.perf_counter() - began) * 1000.0
            self.records.append({"iteration": i, "version": k, "ms": ms})
            links, peaks = [], {}
            for peer, sender in sorted(self._senders.items()):
                peaks[str(peer)] = sender.take_peak()
                times, size = sender.stats.take()
                if times:
                    links.append(dict({"peer": peer, "kind": "pipeline", "bytes": size, "delegated": sender.delegated,
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
        for sender in self._senders.values():
            sender.drain()
            sender.close()

    def params_digest(self) -> str:
        h = hashlib.sha256()
        for p in self.executor.module.parameters():
            h.update(p.detach().contiguous().numpy().tobytes())
        return h.hexdigest()
