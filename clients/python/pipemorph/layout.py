"""Which rank sits at which (dp, pp) of the job's grid, and each stage's data-parallel ring.

The registration numbers rank dp * stages + pp at (dp, pp) (the emulator and launcher do the same);
a re-map (docs/protocol.md sec. 5.5) replaces that table with the schedule's `topology`.
"""
from typing import Any, Dict, List, Optional, Tuple


class Layout:
    def __init__(self, stages: int, dp: int, coords: Dict[int, Tuple[int, int]], rings: Optional[List[List[int]]] = None,
                 version: int = 0) -> None:
        self.stages, self.dp, self.coords, self.version = stages, dp, dict(coords), version
        self._at = {c: r for r, c in self.coords.items()}
        if len(self._at) != stages * dp or set(self._at) != {(d, p) for d in range(dp) for p in range(stages)}:
            raise ValueError("layout v%d does not put one rank at every (dp, pp) of %d x %d" % (version, dp, stages))
        self.rings = rings or [list(range(dp)) for _ in range(stages)]  # dp indices, ring order, per stage

    @staticmethod
    def initial(stages: int, dp: int) -> "Layout":
        return Layout(stages, dp, {d * stages + p: (d, p) for d in range(dp) for p in range(stages)})

    @staticmethod
    def of_topology(stages: int, dp: int, topology: Dict[str, Any]) -> "Layout":
        coords = {e["rank"]: (e["dp"], e["pp"]) for e in topology["ranks"] if e.get("tp", 0) == 0}
        return Layout(stages, dp, coords, topology.get("rings"), topology["version"])

    def rank_at(self, dp: int, pp: int) -> Optional[int]:
        return self._at.get((dp, pp))

    def ring(self, pp: int) -> List[int]:
        """Ranks of stage pp's data-parallel ring, in ring order."""
        return [self._at[(d, pp)] for d in self.rings[pp]]
