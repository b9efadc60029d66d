"""Seeded rank-side noise: the pauses and stalls of a real training job that are NOT slow links
(docs/detection.md's noise models, played by real processes). Off by default (`--noise none`).

Spec: comma-separated key=value, e.g.
  "seed=7,gc=0.02,stall=0.05,checkpointEvery=40,checkpointMs=300"

  seed=N            the seed (default 0); every (seed, rank, iteration) draws its own stream, so a run
                    is reproducible and no rank's draws depend on another's
  gc=P              GC-like pause: with probability P per rank and iteration the rank's main thread
                    stops for a log-uniform gcMinMs..gcMaxMs (default 20..500) before a random op
                    of the iteration (its sends already on the wire go on, as under a real collection)
  gcCollect=1       the pause is a real gc.collect() of a freshly generated heap of reference cycles
                    (then sleeps the rest of the drawn duration, if any)
  stall=P           dataloader stall: with probability P per iteration stage 0 waits a log-uniform
                    stallMinMs..stallMaxMs (default 50..300) before its first forward
  checkpointEvery=N every N iterations (iterations N-1, 2N-1, ...) every rank waits checkpointMs
  checkpointMs=S    (default 300) at the iteration end, after its ops and before its report
  linkTail=P        heavy-tailed link jitter (the corpus's link-jitter tail, on real sockets): with
                    probability P per (rank, peer, iteration) every pipeline message the rank sends
                    that peer that iteration is held a Pareto(linkTailAlpha) excess of linkTailMs
                    (defaults 3 ms, alpha 1.2): a congested iteration on one link, enough to move
                    its median, now and then tens of ms. It is what the detector's severe path
                    must not take for a straggler.
"""
import gc
import math
import random
import time
from dataclasses import dataclass
from typing import Dict, List, Optional

_KEYS = {"seed": int, "gc": float, "gcMinMs": float, "gcMaxMs": float, "gcCollect": int, "stall": float,
         "stallMinMs": float, "stallMaxMs": float, "checkpointEvery": int, "checkpointMs": float,
         "linkTail": float, "linkTailMs": float, "linkTailAlpha": float}


@dataclass
class Noise:
    seed: int = 0
    gc: float = 0.0
    gcMinMs: float = 20.0
    gcMaxMs: float = 500.0
    gcCollect: int = 0
    stall: float = 0.0
    stallMinMs: float = 50.0
    stallMaxMs: float = 300.0
    checkpointEvery: int = 0
    checkpointMs: float = 300.0
    linkTail: float = 0.0
    linkTailMs: float = 3.0
    linkTailAlpha: float = 1.2

    @property
    def active(self) -> bool:
        return self.gc > 0 or self.stall > 0 or self.checkpointEvery > 0


@dataclass
class IterationNoise:
    """What one rank does in one iteration: pause `pause_ms` before op `pause_op` (None: no pause),
    stall `stall_ms` before the first op, wait `checkpoint_ms` at the end."""
    pause_op: Optional[int] = None
    pause_ms: float = 0.0
    collect: bool = False
    stall_ms: float = 0.0
    checkpoint_ms: float = 0.0


def parse_noise(spec: Optional[str]) -> Noise:
    """Parses a noise spec; "none", "" and None give no noise. ValueError names the bad item."""
    n = Noise()
    if spec is None or spec.strip() in ("", "none"):
        return n
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or key not in _KEYS:
            raise ValueError("noise: unknown item %r (keys: %s)" % (item, ", ".join(_KEYS)))
        try:
            setattr(n, key, _KEYS[key](value))
        except ValueError:
            raise ValueError("noise: %s needs a number, not %r" % (key, value))
    for key in ("gc", "stall", "linkTail"):
        if not 0.0 <= getattr(n, key) <= 1.0:
            raise ValueError("noise: %s is a probability in [0, 1]" % key)
    if not (0 < n.gcMinMs <= n.gcMaxMs) or not (0 < n.stallMinMs <= n.stallMaxMs):
        raise ValueError("noise: need 0 < min <= max for gc and stall durations")
    if n.checkpointEvery < 0 or n.checkpointMs < 0:
        raise ValueError("noise: checkpointEvery and checkpointMs must be >= 0")
    if not (n.linkTailMs > 0 and n.linkTailAlpha > 0):
        raise ValueError("noise: linkTailMs and linkTailAlpha must be > 0")
    return n


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def draw(noise: Noise, rank: int, stage: int, iteration: int, ops: int) -> IterationNoise:
    """The noise of (rank, iteration), the same for the same seed whatever else happened."""
    out = IterationNoise()
    if not noise.active:
        return out
    rng = random.Random("pipemorph-noise:%d:%d:%d" % (noise.seed, rank, iteration))
    u_gc, u_stall = rng.random(), rng.random()  # drawn always: one stream layout for every spec
    gc_ms, gc_op = _log_uniform(rng, noise.gcMinMs, noise.gcMaxMs), rng.randrange(max(1, ops))
    stall_ms = _log_uniform(rng, noise.stallMinMs, noise.stallMaxMs)
    if u_gc < noise.gc:
        out.pause_op, out.pause_ms, out.collect = gc_op, gc_ms, bool(noise.gcCollect)
    if stage == 0 and u_stall < noise.stall:
        out.stall_ms = stall_ms
    if noise.checkpointEvery > 0 and (iteration + 1) % noise.checkpointEvery == 0:
        out.checkpoint_ms = noise.checkpointMs
    return out


def link_tail_ms(noise: Noise, rank: int, peer: int, iteration: int) -> float:
    """The tail excess of the messages `rank` sends `peer` in `iteration`, ms (0 most of the time);
    its own stream per (seed, rank, peer, iteration), apart from draw()'s."""
    if noise.linkTail <= 0:
        return 0.0
    rng = random.Random("pipemorph-link-tail:%d:%d:%d:%d" % (noise.seed, rank, peer, iteration))
    if rng.random() >= noise.linkTail:
        return 0.0
    return noise.linkTailMs * ((1.0 - rng.random()) ** (-1.0 / noise.linkTailAlpha) - 1.0)


def pause(ms: float, collect: bool = False) -> None:
    """Stops this thread for `ms`: a real collection of generated reference cycles first if `collect`,
    then sleep for what remains."""
    until = time.perf_counter() + ms / 1000.0
    if collect:
        heap: List[Dict] = []
        half = time.perf_counter() + ms / 2000.0
        while time.perf_counter() < half and len(heap) < 2_000_000:  # build garbage for half the pause
            for _ in range(1000):
                a: Dict = {}
                b = {"a": a}
                a["b"] = b  # a reference cycle: only the cycle collector frees it
                heap.append(a)
        del heap
        gc.collect()  # the real collection of those cycles
    left = until - time.perf_counter()
    if left > 0:
        time.sleep(left)
