"""Schedule op lists: "F<j>", "B<j>" (gradient for the input), "W<j>" (gradient for the weights)."""
import re
from typing import List, Sequence, Tuple

OP = re.compile(r"^([FBW])(\d+)$")


class ScheduleError(ValueError):
    """An op list this stage cannot run (unknown op, missing or repeated op, broken dependency)."""


def parse_ops(ops: Sequence[str], microbatches: int) -> List[Tuple[str, int]]:
    """Checks a stage's op list and returns it as (kind, microbatch) pairs.

    Every F, B and W of every microbatch appears exactly once, and on one stage B<j> follows F<j>
    and W<j> follows B<j>: W needs the output gradient B received, B needs the graph F built.
    Cross-stage dependencies are enforced at run time by the receives.
    """
    parsed: List[Tuple[str, int]] = []
    seen = set()
    for position, op in enumerate(ops):
        m = OP.match(op) if isinstance(op, str) else None
        if not m:
            raise ScheduleError("op %d: %r is not F<j>, B<j> or W<j>" % (position, op))
        kind, j = m.group(1), int(m.group(2))
        if j >= microbatches:
            raise ScheduleError("op %d: %s names microbatch %d of %d" % (position, op, j, microbatches))
        if (kind, j) in seen:
            raise ScheduleError("op %d: %s appears twice" % (position, op))
        before = {"B": "F", "W": "B"}.get(kind)
        if before and (before, j) not in seen:
            raise ScheduleError("op %d: %s runs before %s%d" % (position, op, before, j))
        seen.add((kind, j))
        parsed.append((kind, j))
    missing = [k + str(j) for k in "FBW" for j in range(microbatches) if (k, j) not in seen]
    if missing:
        raise ScheduleError("ops missing: %s" % ", ".join(missing[:8]))
    return parsed
