"""The per-stage data-parallel gradient all-reduce (mean over the stage's replicas), as a ring of
point-to-point messages inside the stage's own gloo group.

A ring of sends rather than one dist.all_reduce call, because the runtime must see each message:
injected extra latency sits inside the send (as on pipeline links) and the send times of the ring
link to the successor go into the report as a `data-parallel` link (docs/protocol.md sec. 3.2),
which is what lets the daemon find a slow ring link and re-map (sec. 5.5). Reduce-scatter then
all-gather: every chunk is summed once and copied to the others, so the replicas end bit-identical.

The ring starts with a barrier of the stage's replicas (the daemon's model: a stage's all-reduce
starts when all its replicas finished their last op). Without it the first send's time would
include waiting for a replica still busy with its last W, which is skew between replicas, not the
link: on a loaded 2-core box that read as a 1-2 ms "slow" ring link and made the daemon re-map again.
"""
import time
from typing import Callable, List, Optional

import torch
import torch.distributed as dist

from .transport import LinkStats

_TAG = 1 << 16  # apart from pipeline tags (they use the default group anyway)


class RingAllReduce:
    def __init__(self, rank: int, ring: List[int], group: Optional[dist.ProcessGroup], delay_ms: Callable[[int], float]) -> None:
        self.rank, self.ring, self.group, self.delay_ms = rank, ring, group, delay_ms
        self.index = ring.index(rank)
        self.next = ring[(self.index + 1) % len(ring)]
        self.prev = ring[(self.index - 1) % len(ring)]
        self.stats = LinkStats()  # send times to self.next

    def mean(self, params: List[torch.nn.Parameter], broken: bool = False) -> None:
        """Replaces each parameter's gradient by its mean over the ring. A parameter without a
        gradient (compute="sleep") contributes zeros, so the messages keep their real size.
        broken=True skips the exchange (tests: replicas then drift apart)."""
        n = len(self.ring)
        if n < 2 or broken:
            return
        dist.barrier(group=self.group)
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])
        chunks = list(torch.tensor_split(flat, n))
        step = 0
        for s in range(n - 1):  # reduce-scatter: after it, chunk (index + 1) % n holds the full sum here
            send, recv = (self.index - s) % n, (self.index - s - 1) % n
            incoming = torch.empty_like(chunks[recv])
            self._exchange(chunks[send], incoming, step)
            chunks[recv].add_(incoming)
            step += 1
        for s in range(n - 1):  # all-gather the summed chunks
            send, recv = (self.index - s + 1) % n, (self.index - s) % n
            self._exchange(chunks[send], chunks[recv], step)
            step += 1
        flat = torch.cat(chunks) / n
        at = 0
        for p in params:
            if p.grad is not None:
                p.grad.copy_(flat[at:at + p.numel()].view_as(p))
            at += p.numel()

    def _exchange(self, out: torch.Tensor, into: torch.Tensor, step: int) -> None:
        pending = dist.irecv(into, self.prev, group=self.group, tag=_TAG + step)  # posted first: the ring cannot deadlock
        started = time.perf_counter()
        extra = self.delay_ms(self.next)
        if extra > 0:
            time.sleep(extra / 1000.0)
        dist.send(out.contiguous(), self.next, group=self.group, tag=_TAG + step)
        self.stats.add((time.perf_counter() - started) * 1000.0, out.numel() * out.element_size())
        pending.wait()
