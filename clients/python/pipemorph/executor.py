"""Runs one stage's op list for one iteration: F<j>, B<j> (input gradient), W<j> (weight gradient).

B and W split the backward pass as ZeroBubble does: B computes the gradient for the stage's input
with torch.autograd.grad(..., retain_graph=True) and sends it upstream at once; W later computes the
weight gradients from the same graph and accumulates them. The optimizer steps at the iteration end.

compute="sleep" keeps the real processes, sends and receives but holds each op for its profiled
time instead of running matmuls, so timing runs on a small CPU box are not distorted by contention.
"""
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .ops import parse_ops
from .transport import ACT, GRAD, LinkSender, Receiver, tag_of


@dataclass
class StageTimes:
    """Profiled op times of this stage (ms), for compute="sleep"."""
    f: float
    b: float
    w: float


@dataclass
class IterationStats:
    ms: float
    compute_ms: Dict[str, float]  # median per op kind
    peak_inflight: int
    ops_run: List[str] = field(default_factory=list)
    loss: Optional[float] = None  # last stage: the iteration's loss (mean over its microbatches)


class StageExecutor:
    """One stage's ops over any torch.nn.Module: stage 0 feeds `data(iteration, index)[0]` to it (any
    input, e.g. token ids), other stages the float tensor of `shape` received from upstream; the
    last stage's output goes to `loss_fn(output, data(iteration, index)[1])`. Every tensor between
    stages, and its gradient, has `shape`."""

    def __init__(self, stage: int, stages: int, microbatches: int, module: torch.nn.Module,
                 optimizer: torch.optim.Optimizer, loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                 data: Callable[[int, int], Tuple[torch.Tensor, torch.Tensor]], shape: Tuple[int, ...],
                 compute: str = "torch", times: Optional[StageTimes] = None) -> None:
        if compute not in ("torch", "sleep"):
            raise ValueError("compute must be torch or sleep, not %r" % compute)
        if compute == "sleep" and times is None:
            raise ValueError('compute="sleep" needs the stage\'s profiled op times')
        self.stage, self.stages, self.microbatches = stage, stages, microbatches
        self.module, self.optimizer, self.loss_fn, self.data = module, optimizer, loss_fn, data
        self.shape, self.compute, self.times = shape, compute, times
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.skip_w: Optional[int] = None  # fault injection (tests): this stage skips W0 of every iteration
        self.slowdown = 1.0  # emulation: every op of this rank held `slowdown` times its compute time
        # Where the stage sits; the runtime moves them when a re-map changes this rank's (dp, pp).
        self.prev_rank, self.next_rank = stage - 1, stage + 1  # pipeline neighbours
        self.data_offset = 0  # replica d trains on microbatches d * microbatches + j of each iteration
        self.before_step: Optional[Callable[[], None]] = None  # the data-parallel gradient all-reduce
        self.before_op: Optional[Callable[[int], None]] = None  # noise (noise.py): called with each op's index

    def set_module(self, module: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
        """Runs another stage's module from now on (a re-map rebuilt it)."""
        self.module, self.optimizer = module, optimizer
        self.params = [p for p in module.parameters() if p.requires_grad]

    @property
    def first(self) -> bool:
        return self.stage == 0

    @property
    def last(self) -> bool:
        return self.stage == self.stages - 1

    def run(self, ops: Sequence[str], iteration: int, prev: Optional[LinkSender], nxt: Optional[LinkSender],
            receiver: Receiver) -> IterationStats:
        plan = parse_ops(ops, self.microbatches)  # refuse a broken order before any message moves
        started = time.perf_counter()
        if not self.first:
            receiver.post(self.prev_rank, ACT, iteration, self.microbatches, self.shape)
        if not self.last:
            receiver.post(self.next_rank, GRAD, iteration, self.microbatches, self.shape)
        saved: Dict[int, Tuple[Optional[torch.Tensor], torch.Tensor]] = {}  # j -> (stage input, output or loss)
        out_grads: Dict[int, Optional[torch.Tensor]] = {}
        op_ms: Dict[str, List[float]] = {"F": [], "B": [], "W": []}
        inflight = peak = 0
        self._loss = 0.0
        self.optimizer.zero_grad(set_to_none=True)
        for index, (kind, j) in enumerate(plan):
            if self.before_op is not None:
                self.before_op(index)  # a pause is not an op's time: outside the op's clock
            t0 = time.perf_counter()
            if kind == "F":
                x = receiver.take(ACT, j) if not self.first else None
                t0 = time.perf_counter()  # an op's time is its compute: not the wait for its input
                out = self._forward(iteration, j, x, saved)
                self._slow(t0)
                inflight += 1
                peak = max(peak, inflight)
                if nxt is not None:
                    nxt.send(out, tag_of(ACT, iteration, j))
            elif kind == "B":
                grad_out = receiver.take(GRAD, j) if not self.last else None
                t0 = time.perf_counter()
                out_grads[j] = grad_out
                grad_in = self._backward_input(j, saved, grad_out)
                self._slow(t0)
                if prev is not None:
                    prev.send(grad_in, tag_of(GRAD, iteration, j))
            else:
                if self.skip_w == self.stage and j == 0:
                    saved.pop(j), out_grads.pop(j)  # the fault: this microbatch's weight gradient is lost
                else:
                    self._backward_weights(j, saved.pop(j), out_grads.pop(j))
                self._slow(t0)
                inflight -= 1
            op_ms[kind].append((time.perf_counter() - t0) * 1000.0)
        for sender in (prev, nxt):
            if sender is not None:
                sender.drain()
        if self.before_step is not None:
            self.before_step()  # after the last W, before the step: every replica steps with the mean gradient
        if self.compute == "torch":
            self.optimizer.step()
        return IterationStats(ms=(time.perf_counter() - started) * 1000.0,
                              compute_ms={k: statistics.median(v) for k, v in op_ms.items()},
                              peak_inflight=peak, ops_run=list(ops),
                              loss=self._loss if self.last and self.compute == "torch" else None)

    def _slow(self, t0: float) -> None:
        """An emulated slow device: the op computes `slowdown` times as long (before it sends)."""
        if self.slowdown > 1.0:
            time.sleep((time.perf_counter() - t0) * (self.slowdown - 1.0))

    # ---------------------------------------------------------------- the three ops
    def _forward(self, iteration: int, j: int, x: Optional[torch.Tensor], saved: Dict) -> torch.Tensor:
        if self.compute == "sleep":
            time.sleep(self.times.f / 1000.0)
            saved[j] = (None, torch.zeros(()))
            return x if x is not None else torch.zeros(self.shape)
        if x is None:
            x = self.data(iteration, self.data_offset + j)[0]
        else:
            x.requires_grad_(True)
        out = self.module(x)
        if self.last:
            loss = self.loss_fn(out, self.data(iteration, self.data_offset + j)[1]) / self.microbatches
            self._loss += float(loss.detach())
            saved[j] = (x, loss)
            return out.detach()
        saved[j] = (x, out)
        return out.detach()

    def _backward_input(self, j: int, saved: Dict, grad_out: Optional[torch.Tensor]) -> torch.Tensor:
        if self.compute == "sleep":
            time.sleep(self.times.b / 1000.0)
            return grad_out if grad_out is not None else torch.zeros(self.shape)
        x, out = saved[j]
        if self.first:
            return torch.zeros(0)  # no input gradient to send; W computes everything of stage 0
        (grad_in,) = torch.autograd.grad(out, x, grad_outputs=grad_out, retain_graph=True)
        return grad_in

    def _backward_weights(self, j: int, saved: Tuple, grad_out: Optional[torch.Tensor]) -> None:
        if self.compute == "sleep":
            time.sleep(self.times.w / 1000.0)
            return
        _, out = saved
        grads = torch.autograd.grad(out, self.params, grad_outputs=grad_out, allow_unused=True)
        for p, g in zip(self.params, grads):
            if g is not None:
                p.grad = g.clone() if p.grad is None else p.grad.add_(g)
