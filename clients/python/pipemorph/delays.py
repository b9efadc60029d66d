"""Extra one-way latency per pipeline link, injected on the sending side (tests, demos, benchmarks).

The spec syntax is the emulator's (src/emulator/delay/delay-spec.ts), so one scenario string drives
both: "none", "const:2=30", "step:15@2=30,85@2=0" (iteration@link=ms), "dynamic:A[:seed=N][:links=L,...]
[:mean=MS][:std=MS]" (the paper's traces: every link redrawn from N(mean, std) every U(lo, hi) ms; the
same seeded streams as the emulator), and "trace:PATH" (the PipeMorph artifact's iteration-indexed
superpod trace; its NIC-failure line is ignored: a real socket cannot lose its NIC here).
Link l joins stages l and l+1; the delay applies to both directions.

"pair:A-B=MS,..." slows every message between ranks A and B instead (both directions, pipeline and
data-parallel ring sends alike): a slow path between two nodes, which moves with the ranks when the
daemon re-maps them, where link l is a pipeline position.
"""
import math
import os
import re
from typing import Callable, Dict, List, Optional, Tuple

TRACES = {"A": (50.0, 100.0), "B": (100.0, 200.0), "C": (200.0, 400.0)}
M32 = 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return (a * b) & M32


def mulberry32(seed: int) -> Callable[[], float]:
    """The core's seededRandom (src/core/planner/seeded-random.ts), bit for bit."""
    state = [seed & M32]

    def draw() -> float:
        state[0] = (state[0] + 0x6D2B79F5) & M32
        t = state[0]
        t = _imul(t ^ (t >> 15), t | 1)
        t = (t ^ ((t + _imul(t ^ (t >> 7), t | 61)) & M32)) & M32
        return ((t ^ (t >> 14)) & M32) / 4294967296.0
    return draw


def link_seed(seed: int, link: int) -> int:
    """dynamic-delay.ts linkSeed: a 32-bit seed per (seed, link)."""
    h = _imul((seed & M32) ^ 0x9E3779B9, 0x85EBCA6B) ^ _imul(link + 1, 0xC2B2AE35)
    h = _imul(h ^ (h >> 16), 0x7FEB352D)
    h = _imul(h ^ (h >> 15), 0x846CA68B)
    return (h ^ (h >> 16)) & M32


class DelayModel:
    """delay_ms(link, time_ms since the job's start, iteration) -> extra one-way ms on pipeline link
    `link`; pair_ms(a, b) -> extra one-way ms on every message between ranks a and b."""

    def __init__(self, name: str, fn: Callable[[int, float, int], float], pairs: Optional[Dict[Tuple[int, int], float]] = None) -> None:
        self.name, self._fn, self._pairs = name, fn, pairs or {}

    def delay_ms(self, link: int, time_ms: float, iteration: int) -> float:
        return max(0.0, float(self._fn(link, time_ms, iteration)))

    def pair_ms(self, a: int, b: int) -> float:
        return self._pairs.get((min(a, b), max(a, b)), 0.0)


def _items(body: str, where: str) -> List[str]:
    parts = [p.strip() for p in body.split(",")]
    if any(p == "" for p in parts):
        raise ValueError("%s: empty item in %r" % (where, body))
    return parts


def _link(text: str, links: int, where: str) -> int:
    if not re.match(r"^\d+$", text) or int(text) >= links:
        raise ValueError("%s: link %r is not one of 0..%d" % (where, text, links - 1))
    return int(text)


def _ms(text: str, where: str) -> float:
    if not re.match(r"^\d+(\.\d+)?$", text):
        raise ValueError("%s: delay %r is not a number of ms >= 0" % (where, text))
    return float(text)


def _dynamic(body: str, links: int) -> DelayModel:
    name, *options = [p.strip() for p in body.split(":")]
    if name not in TRACES:
        raise ValueError("dynamic: trace %r is not A, B or C" % name)
    seed, mean, std, chosen = 1, 30.0, 10.0, list(range(links))
    for option in options:
        m = re.match(r"^([a-z]+)=(.*)$", option)
        if not m:
            raise ValueError("dynamic: option %r is not KEY=VALUE" % option)
        key, value = m.groups()
        if key == "seed":
            seed = int(value)
        elif key == "links":
            chosen = [_link(v, links, "dynamic") for v in _items(value, "dynamic")]
        elif key == "mean":
            mean = _ms(value, "dynamic")
        elif key == "std":
            std = _ms(value, "dynamic")
        else:
            raise ValueError("dynamic: unknown option %r (seed, links, mean, std)" % key)
    lo, hi = TRACES[name]
    timelines: Dict[int, Tuple[Callable[[], float], List[float], List[float]]] = {}

    def delay(link: int, time_ms: float, _iteration: int) -> float:
        if link not in chosen:
            return 0.0
        if link not in timelines:
            timelines[link] = (mulberry32(link_seed(seed, link)), [], [])
        draw, ends, values = timelines[link]
        while not ends or ends[-1] <= time_ms:
            start = ends[-1] if ends else 0.0
            # Draw order (interval, then value) as in the emulator: it makes the streams identical.
            ends.append(start + lo + (hi - lo) * draw())
            u, v = 1 - draw(), draw()
            values.append(max(0.0, mean + std * math.sqrt(-2 * math.log(u)) * math.cos(2 * math.pi * v)))
        lo_i, hi_i = 0, len(ends) - 1
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            if ends[mid] > time_ms:
                hi_i = mid
            else:
                lo_i = mid + 1
        return values[lo_i]
    return DelayModel("dynamic:%s seed %d" % (name, seed), delay)


def parse_trace(text: str, links: int) -> DelayModel:
    """ITERATION;LINKS;DELAY_S lines, LINKS "i_j" with j = i + 1; each event holds from its iteration on."""
    events: List[Tuple[int, List[int], float]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(";")
        if len(parts) != 3:
            raise ValueError("trace line %d: expected ITERATION;LINKS;DELAY_S" % number)
        if parts[2].strip() == "inf":
            continue  # NIC failure: not reproducible with sockets; see the module comment
        chosen = [int(p.split("_")[0]) for p in parts[1].split(",") if p.strip()]
        events.append((int(parts[0]), [c for c in chosen if c < links], float(parts[2]) * 1000.0))

    def delay(link: int, _time_ms: float, iteration: int) -> float:
        current = 0.0
        for at, chosen, ms in events:
            if at > iteration:
                break
            if link in chosen:
                current = ms
        return current
    return DelayModel("trace", delay)


def parse_delay_spec(spec: str, links: int, base_dir: str = ".") -> DelayModel:
    text = spec.strip()
    if text in ("", "none"):
        return DelayModel("none", lambda *_: 0.0)
    kind, _, body = text.partition(":")
    body = body.strip()
    if kind == "const":
        delays = {}
        for item in _items(body, "const"):
            link, _, ms = item.partition("=")
            delays[_link(link.strip(), links, "const")] = _ms(ms.strip(), "const")
        return DelayModel(text, lambda link, _t, _i: delays.get(link, 0.0))
    if kind == "step":
        steps = []
        for item in _items(body, "step"):
            m = re.match(r"^(\d+)@(\d+)=(.*)$", item)
            if not m:
                raise ValueError("step %r: expected ITERATION@LINK=MS" % item)
            steps.append((int(m.group(1)), _link(m.group(2), links, "step"), _ms(m.group(3), "step")))
        steps.sort(key=lambda s: s[0])

        def step(link: int, _t: float, iteration: int) -> float:
            current = 0.0
            for at, l, ms in steps:
                if at <= iteration and l == link:
                    current = ms
            return current
        return DelayModel(text, step)
    if kind == "pair":
        pairs = {}
        for item in _items(body, "pair"):
            m = re.match(r"^(\d+)-(\d+)=(.*)$", item)
            if not m or m.group(1) == m.group(2):
                raise ValueError("pair %r: expected RANK-RANK=MS between two ranks" % item)
            a, b = int(m.group(1)), int(m.group(2))
            pairs[(min(a, b), max(a, b))] = _ms(m.group(3).strip(), "pair")
        return DelayModel(text, lambda *_: 0.0, pairs)
    if kind == "dynamic":
        return _dynamic(body, links)
    if kind == "trace":
        path = body if os.path.isabs(body) else os.path.join(base_dir, body)
        with open(path, "r", encoding="utf-8") as f:
            return parse_trace(f.read(), links)
    raise ValueError("delay spec %r is not none | const: | step: | pair: | dynamic: | trace:" % text)


class DelayFile:
    """A delay spec kept in a file and re-read at iteration boundaries when it changes, so a running
    job's links can be slowed or healed from outside (`echo const:1=60 > delays.txt`)."""

    def __init__(self, path: Optional[str], links: int) -> None:
        self.path, self.links, self._mtime = path, links, None
        self.model = parse_delay_spec("none", links)
        self.refresh()

    def refresh(self) -> DelayModel:
        if self.path:
            try:
                stamp = os.stat(self.path).st_mtime_ns
            except OSError:
                return self.model
            if stamp != self._mtime:
                with open(self.path, "r", encoding="utf-8") as f:
                    text = f.read()
                self.model = parse_delay_spec(text, self.links, os.path.dirname(os.path.abspath(self.path)))
                self._mtime = stamp
        return self.model
