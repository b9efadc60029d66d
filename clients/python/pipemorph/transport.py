"""Point-to-point pipeline messages over torch.distributed, with the two send paths of the paper.

GPU-direct (PipeMorph sec. 3.2): one send in flight per link direction. Issuing a send while the
previous one is still in flight stalls the caller (the compute stream) until it lands: a slow link
blocks the kernels behind it (head-of-line blocking).

Delegated (sec. 5.2): the message is copied out and handed to a pool of `queues` delegate workers
that send in parallel; the caller never stalls, so a slow link's latency is pipelined over the pool.

Extra latency is injected on the sending side, inside the send (sleep, then the real wire send),
so it occupies the sender's slot or delegate exactly as a slow link would.

A link's *send time* (what reports carry as medianMs / maxMs, docs/protocol.md sec. 3.2) is the
one-way time of one message from the moment it starts on the wire (after any queueing behind earlier
sends of the same direction) to the completion of the send: injected delay plus real transfer.
Queueing is excluded: it depends on the schedule, not on the link.
"""
import queue
import statistics
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

ACT, GRAD = 0, 1
_TAG_SPAN = 1 << 12


def tag_of(kind: int, iteration: int, microbatch: int) -> int:
    """Unique among the messages that can be in flight at once (two consecutive iterations)."""
    return ((iteration % 2) * 2 + kind) * _TAG_SPAN + microbatch


class LinkStats:
    """Send times of one link direction in the current iteration (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.times_ms: List[float] = []
        self.bytes = 0

    def add(self, ms: float, size: int) -> None:
        with self._lock:
            self.times_ms.append(ms)
            self.bytes = size

    def take(self) -> Tuple[List[float], int]:
        with self._lock:
            times, self.times_ms = self.times_ms, []
            return times, self.bytes


class LinkSender:
    """Sends to one peer: GPU-direct (queues == 0) or through `queues` delegate workers."""

    def __init__(self, peer: int, group: Optional[dist.ProcessGroup], delay_ms: Callable[[], float], queues: int = 0) -> None:
        self.peer, self.group, self.delay_ms, self.queues = peer, group, delay_ms, queues
        self.stats = LinkStats()
        self._slot = threading.Semaphore(1)  # GPU-direct: one send in flight
        self._work: "queue.Queue[Optional[Tuple[torch.Tensor, int]]]" = queue.Queue()
        self._pending = 0
        self._flying = 0
        self.peak_flying = 0  # most sends on the wire at once since the last take_peak()
        self._idle = threading.Condition()
        self._error: Optional[BaseException] = None
        workers = max(1, queues)
        self._threads = [threading.Thread(target=self._serve, daemon=True, name="send-%d-%d" % (peer, n)) for n in range(workers)]
        for t in self._threads:
            t.start()

    @property
    def delegated(self) -> bool:
        return self.queues > 0

    def send(self, tensor: torch.Tensor, tag: int) -> None:
        self._raise()
        if self.delegated:
            payload = tensor.detach().clone()  # the device-to-host copy a delegate makes
        else:
            self._slot.acquire()  # head-of-line blocking: wait for the send in flight to land
            payload = tensor.detach()
        with self._idle:
            self._pending += 1
        self._work.put((payload, tag))

    def _serve(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            payload, tag = item
            with self._idle:
                self._flying += 1
                self.peak_flying = max(self.peak_flying, self._flying)
            try:
                started = time.perf_counter()
                extra = self.delay_ms()
                if extra > 0:
                    time.sleep(extra / 1000.0)
                dist.send(payload, self.peer, group=self.group, tag=tag)
                self.stats.add((time.perf_counter() - started) * 1000.0, payload.numel() * payload.element_size())
            except BaseException as error:  # noqa: BLE001 - surfaced to the compute thread
                self._error = error
            finally:
                if not self.delegated:
                    self._slot.release()
                with self._idle:
                    self._flying -= 1
                    self._pending -= 1
                    self._idle.notify_all()

    def drain(self, timeout_s: float = 120.0) -> None:
        """Waits until every send issued so far has completed."""
        with self._idle:
            if not self._idle.wait_for(lambda: self._pending == 0, timeout=timeout_s):
                raise TimeoutError("sends to rank %d still in flight after %.0f s" % (self.peer, timeout_s))
        self._raise()

    def take_peak(self) -> int:
        with self._idle:
            peak, self.peak_flying = self.peak_flying, self._flying
            return peak

    def close(self) -> None:
        for _ in self._threads:
            self._work.put(None)

    def _raise(self) -> None:
        if self._error is not None:
            raise RuntimeError("send to rank %d failed: %s" % (self.peer, self._error))


class Receiver:
    """Receives of one iteration, all posted at its start so a send never waits for the receiver's
    compute (the receive buffers a real executor or the delegates' receive queues provide)."""

    def __init__(self, group: Optional[dist.ProcessGroup]) -> None:
        self.group = group
        self._posted: Dict[Tuple[int, int], Tuple[torch.Tensor, object]] = {}

    def post(self, peer: int, kind: int, iteration: int, microbatches: int, shape: Tuple[int, ...]) -> None:
        for j in range(microbatches):
            buf = torch.empty(shape)
            self._posted[(kind, j)] = (buf, dist.irecv(buf, peer, group=self.group, tag=tag_of(kind, iteration, j)))

    def take(self, kind: int, microbatch: int, timeout_s: float = 120.0) -> torch.Tensor:
        buf, work = self._posted.pop((kind, microbatch))
        work.wait()  # torch 1.13 gloo: the process group's timeout bounds this wait
        return buf


def summarize(times: List[float]) -> Dict[str, float]:
    return {"medianMs": statistics.median(times), "maxMs": max(times), "count": len(times)} if times else {}
