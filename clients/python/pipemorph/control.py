"""Where a rank learns which schedules exist: the daemon over Redis, or a fixed script (no daemon).

Both expose the calls of the protocol client (pipemorph.protocol.PipemorphRank) the runtime uses:
poll_control(i), startup_version(), committed_version_for(i), schedule_for(k), report(...).
"""
from typing import Any, Callable, Dict, List, Optional, Set, Tuple


def toggle_of(schedule: Dict[str, Any], rank: int) -> Optional[Dict[str, int]]:
    return next(({"sendQueues": d["sendQueues"], "recvQueues": d["recvQueues"]}
                 for d in schedule.get("delegation", []) if d.get("rank") == rank), None)


class ScriptedControl:
    """Committed schedules given up front (schedule.v1 objects). Each may carry `heardAt`:
    {rank: iteration at which that rank learns of the commit}; by default every rank knows it from
    the start. The first schedule is in force from iteration 0. Lets tests make one rank hear a
    commit late, as a slow Redis read would, without a daemon."""

    def __init__(self, schedules: List[Dict[str, Any]], rank: int, dp: int = 0, pp: int = 0) -> None:
        if not schedules:
            raise ValueError("a scripted control needs at least one schedule")
        self.schedules = {s["version"]: s for s in schedules}
        self.rank, self.dp, self.pp = rank, dp, pp
        self.first = schedules[0]["version"]
        self.known: Dict[int, int] = {}  # version -> effectiveIteration, once heard
        self.topology_version = 0  # as PipemorphRank: the layout in force, and a change to apply
        self.topology_change: Optional[Dict[str, Any]] = None
        self.layers_version = 0  # as PipemorphRank: the layer split in force (0 = registered), and a change
        self.layers_change: Optional[Dict[str, Any]] = None
        # As PipemorphRank: the runtime's readiness(schedule, iteration) hook, asked at every poll from
        # the one at which a schedule is heard until it says ready (where the daemon's prepare would
        # be acked). A scripted commit cannot be refused: a rank not ready by then catches up at k.
        self.readiness: Optional[Callable[[Dict[str, Any], int], bool]] = None
        self.ready: Set[int] = set()

    def _heard_at(self, schedule: Dict[str, Any]) -> int:
        return int((schedule.get("heardAt") or {}).get(str(self.rank), 0))

    def poll_control(self, iteration: int) -> List[Dict[str, Any]]:
        heard = []
        for version, schedule in self.schedules.items():
            if version not in self.known and (version == self.first or self._heard_at(schedule) <= iteration):
                self.known[version] = 0 if version == self.first else schedule.get("effectiveIteration", 0)
                heard.append({"type": "commit", "version": version})
        for version in sorted(self.known):
            if version != self.first and version not in self.ready and self.readiness is not None:
                if self.readiness(self.schedules[version], iteration):
                    self.ready.add(version)
        return heard

    def startup_version(self) -> int:
        return self.first

    def committed_version_for(self, iteration: int) -> int:
        return max(v for v, e in self.known.items() if e <= iteration)

    def schedule_for(self, version: int) -> Tuple[List[str], Optional[Dict[str, int]]]:
        schedule = self.schedules[version]
        topology = schedule.get("topology")
        if topology and topology["version"] != self.topology_version:
            self.dp, self.pp = next((e["dp"], e["pp"]) for e in topology["ranks"] if e["rank"] == self.rank)
            self.topology_version, self.topology_change = topology["version"], topology
        layers = schedule.get("layers")
        if layers and layers["version"] != self.layers_version:
            self.layers_version, self.layers_change = layers["version"], layers
        pipeline = next(p for p in schedule["pipelines"] if self.dp in p["dpReplicas"])
        return list(pipeline["stages"][self.pp]), toggle_of(schedule, self.rank)

    def report(self, *_args: Any, **_kwargs: Any) -> None:
        return None
