"""Reference client of pipemorph wire protocol v1 for one reporting rank (tp = 0).

Needs only the ``redis`` package (redis-py 4.x). The protocol is specified in docs/protocol.md;
the section names in the comments below refer to it. Python 3.9+.

Per iteration i (see README.md)::

    pm.poll_control(i)                                   # prepare -> ack, commit, abort
    k = all_reduce_min(pm.committed_version_for(i))      # job's own collective, all ranks
    ops, delegation = pm.schedule_for(k)
    ... run ops ...
    pm.report(i, k, f_ms, b_ms, w_ms, links)

The first iteration after wait_for_schedule() uses all_reduce_max(pm.startup_version())
instead (section "Start and restart").
"""
import json
import re
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import schemas

PROTOCOL = 1
REGISTRATIONS_STREAM = "pipemorph:registrations"
REPORTS_MAXLEN = 100000
MESSAGE_FIELD = "m"


def _job_id_pattern() -> str:
    """The job id rule of the registration schema (schemas/registration.v1.schema.json)."""
    return schemas.load("registration.v1")["definitions"]["jobId"]["pattern"]


def _text(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _dumps(message: Dict[str, Any]) -> str:
    # allow_nan=False: NaN/Infinity are not JSON; fail here rather than be rejected by the daemon.
    return json.dumps(message, separators=(",", ":"), allow_nan=False)


def _message(fields: Dict[Any, Any]) -> Optional[Dict[str, Any]]:
    """The JSON object in field `m` of a stream entry, or None when it is missing or malformed."""
    raw = {_text(k): v for k, v in fields.items()}.get(MESSAGE_FIELD)
    try:
        value = json.loads(_text(raw)) if raw is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class PipemorphRank:
    """Protocol v1 state of one reporting rank: schedules known, epoch fence, control cursor.

    Not thread-safe: call it from the training loop only.
    """

    def __init__(self, redis_client: Any, job_id: str, rank: int, dp: int, pp: int) -> None:
        if not re.search(_job_id_pattern(), job_id):
            raise ValueError("job id must match %s: %r" % (_job_id_pattern(), job_id))
        self.redis, self.job_id, self.rank, self.dp, self.pp = redis_client, job_id, rank, dp, pp
        prefix = "pipemorph:{%s}:" % job_id  # hash tag: one Redis Cluster slot per job
        self.reports_key, self.rejected_key, self.schedule_key, self.pending_key, self.control_key = (
            prefix + name for name in ("reports", "rejected", "schedule", "pending", "control"))
        self._reset()

    def _reset(self) -> None:
        self.epoch = 0  # highest fencing epoch seen
        self.cursor = "0-0"  # id of the last control entry read
        self.schedules: Dict[int, Dict[str, Any]] = {}  # version -> schedule (prepared or committed)
        self.committed: Dict[int, int] = {}  # committed version -> effectiveIteration
        self.floor = 0  # in force whatever its effectiveIteration: the connect-time schedule, then the last agreed k
        self.to_answer: List[int] = []  # prepared versions awaiting an ack decision
        self.topology_version = 0  # layout in force: 0 = the registration's (protocol sec. 5.5)
        self.topology_change: Optional[Dict[str, Any]] = None  # set when schedule_for switched layouts
        self.layers_version = 0  # layer split in force: 0 = the registration's (protocol sec. 5.7)
        self.layers_change: Optional[Dict[str, Any]] = None  # set when schedule_for switched splits
        # Set by the runtime (sec. 5.5): readiness(schedule, iteration) -> True when this rank can run a
        # prepared schedule at its effectiveIteration (a rank that moves holds its new stage's module
        # and optimizer), False when not yet. Called before each ack decision; it may start the work.
        self.readiness: Optional[Callable[[Dict[str, Any], int], bool]] = None

    # ----------------------------------------------------------------- registration
    @staticmethod
    def register(redis_client: Any, registration: Dict[str, Any]) -> str:
        """XADD pipemorph:registrations * m <registration>; returns the entry id.

        `type` and `protocol` are filled in when missing. The daemon answers with the committed
        initial schedule; a refusal lands on `pipemorph:rejected` with its reason.
        """
        message = dict({"type": "register", "protocol": PROTOCOL}, **registration)
        schemas.check(message, "registration.v1")
        return _text(redis_client.xadd(REGISTRATIONS_STREAM, {MESSAGE_FIELD: _dumps(message)}))

    # ----------------------------------------------------------------- start and restart
    def wait_for_schedule(self, timeout_s: float = 300.0) -> Dict[str, Any]:
        """Connects (or reconnects) and returns the committed schedule, polling GET every 100 ms.

        Order matters (no event is missed): last control id, then GET schedule, then GET pending;
        poll_control() later reads the control stream from that id. A pending schedule found
        here is answered by the first poll_control(), which knows the current iteration.
        """
        self._reset()
        last = self.redis.xrevrange(self.control_key, "+", "-", count=1)
        if last:
            self.cursor = _text(last[0][0])
            event = _message(last[0][1])
            if event and event.get("protocol") == PROTOCOL and isinstance(event.get("epoch"), int):
                self.epoch = event["epoch"]
        deadline = time.monotonic() + timeout_s
        schedule = self._get(self.schedule_key)
        while schedule is None:
            if time.monotonic() >= deadline:
                raise TimeoutError("no schedule at %s after %.1f s: is the job registered?" % (self.schedule_key, timeout_s))
            time.sleep(0.1)
            schedule = self._get(self.schedule_key)
        # The committed schedule is in force whatever its epoch or effectiveIteration.
        self.epoch = max(self.epoch, schedule["epoch"])
        self._keep(schedule)
        self.committed[schedule["version"]] = schedule["effectiveIteration"]
        self.floor = schedule["version"]
        pending = self._get(self.pending_key)
        if pending is not None and pending["epoch"] >= self.epoch and pending["version"] > self.floor:
            self.epoch = pending["epoch"]
            self._keep(pending)
            self.to_answer.append(pending["version"])
        return schedule

    def startup_version(self) -> int:
        """Value for the all-reduce MAX of the first iteration after connecting: the highest
        committed version known, whatever its effectiveIteration (nothing has run yet)."""
        return max(self.committed) if self.committed else 0

    # ----------------------------------------------------------------- reports
    @staticmethod
    def link(peer: int, kind: str, size_bytes: float, median_ms: float, max_ms: float, delegated: bool = False,
             error: Optional[str] = None, count: Optional[int] = None) -> Dict[str, Any]:
        """One entry of a report's `links` (kind "pipeline" | "data-parallel"; error None | "nic-failure" | "timeout")."""
        entry = {"peer": peer, "kind": kind, "bytes": size_bytes, "medianMs": median_ms, "maxMs": max_ms,
                 "delegated": delegated, "error": error, "count": count}
        return {k: v for k, v in entry.items() if v is not None or k == "error"}

    def report(self, iteration: int, schedule_version: int, f_ms: float, b_ms: float, w_ms: float,
               links: List[Dict[str, Any]], memory: Optional[Dict[str, float]] = None,
               delegation: Optional[Dict[str, Any]] = None, iteration_ms: Optional[float] = None) -> str:
        """XADD <reports> MAXLEN ~ 100000 * m <report>; returns the entry id.

        f/b/w: median op times of this iteration (ms). links: see link(). memory:
        {"devicePeakBytes", "hostPeakBytes"}; delegation: {"enabled", "sendQueues", "recvQueues"};
        iteration_ms: the iteration's duration (lets the daemon pick how far ahead to switch).
        """
        message: Dict[str, Any] = {
            "type": "report", "protocol": PROTOCOL, "jobId": self.job_id, "rank": self.rank,
            "iteration": iteration, "scheduleVersion": schedule_version,
            "computeMs": {"f": f_ms, "b": b_ms, "w": w_ms}, "links": list(links),
        }
        if self.epoch > 0:
            message["epoch"] = self.epoch  # lets the daemon keep epochs monotonic if Redis loses them (sec. 5.6)
        extra = (("memory", memory), ("delegation", delegation), ("iterationMs", iteration_ms))
        message.update({k: v for k, v in extra if v is not None})
        message["sentAt"] = round(time.time() * 1000, 3)
        schemas.check(message, "rank-report.v1")
        return _text(self.redis.xadd(self.reports_key, {MESSAGE_FIELD: _dumps(message)},
                                     maxlen=REPORTS_MAXLEN, approximate=True))

    # ----------------------------------------------------------------- control events
    def poll_control(self, current_iteration: int) -> List[Dict[str, Any]]:
        """Reads new control events without blocking and acts on them. Call at the start of
        every iteration with the iteration about to run. Returns the events acted upon."""
        seen: List[Dict[str, Any]] = []
        while True:
            reply = self.redis.xread({self.control_key: self.cursor}, count=1000) or []
            entries = [entry for _, stream_entries in reply for entry in stream_entries]
            for entry_id, fields in entries:
                self.cursor = _text(entry_id)
                event = _message(fields)
                if self._on_event(event):
                    seen.append(event)  # type: ignore[arg-type]
            if len(entries) < 1000:
                break
        # A prepare this rank is not ready for yet stays to be answered at a later poll (sec. 5.5).
        self.to_answer = [version for version in self.to_answer if not self._answer(version, current_iteration)]
        return seen

    def _on_event(self, event: Optional[Dict[str, Any]]) -> bool:
        if not event or event.get("protocol") != PROTOCOL or event.get("jobId") != self.job_id:
            return False  # not for us (or a future protocol): ignore
        epoch, version, kind = event.get("epoch"), event.get("version"), event.get("type")
        if not isinstance(epoch, int) or not isinstance(version, int) or epoch < self.epoch:
            return False  # fenced: written under an older epoch than one already seen
        self.epoch = epoch
        if kind == "prepare":
            if version > self.floor and version not in self.committed and version not in self.to_answer:
                self.to_answer.append(version)
        elif kind == "commit":
            if version <= self.floor:
                return True  # already in force (the connect-time schedule) or superseded
            self.committed[version] = event["effectiveIteration"]
            if version not in self.schedules:  # normally fetched with the prepare
                schedule = self._get(self.schedule_key)
                if schedule is not None and schedule["version"] == version:
                    self._keep(schedule)
        elif kind == "abort":
            self.to_answer = [v for v in self.to_answer if v != version]
            if version not in self.committed:
                self.schedules.pop(version, None)
        else:
            return False  # unknown type: ignore
        return True

    def _answer(self, version: int, iteration: int) -> bool:
        """GET pending; if it still holds `version` under a current epoch, acknowledge it. Returns
        False when the answer waits: the rank is not ready yet and effectiveIteration is still ahead
        (sec. 5.5: acknowledge only when ready; refuse with "weights not ready" once it is reached)."""
        pending = self._get(self.pending_key)
        if pending is None or pending.get("version") != version or pending.get("epoch", 0) < self.epoch:
            return True  # aborted or superseded meanwhile: nothing to answer
        self._keep(pending)
        problem = self._problem(pending)
        early = iteration < pending["effectiveIteration"]
        if problem is None and self.readiness is not None and not self.readiness(pending, iteration):
            if early:
                return False
            problem = "weights not ready"
        accepted = problem is None and early
        ack: Dict[str, Any] = {
            "type": "ack", "protocol": PROTOCOL, "jobId": self.job_id, "rank": self.rank,
            "version": version, "epoch": pending["epoch"], "iteration": iteration, "accepted": accepted,
        }
        if not accepted:
            ack["reason"] = (problem or "late")[:500]  # "late": already at or past effectiveIteration
        schemas.check(ack, "ack.v1")
        self.redis.xadd(self.reports_key, {MESSAGE_FIELD: _dumps(ack)})
        return True

    # ----------------------------------------------------------------- agreement and schedules
    def committed_version_for(self, iteration: int) -> int:
        """k for the all-reduce MIN at the start of `iteration`: the highest committed version
        received whose effectiveIteration <= iteration (never below the version in force)."""
        return max([self.floor] + [v for v, effective in self.committed.items() if effective <= iteration])

    def schedule_for(self, version: int) -> Tuple[List[str], Optional[Dict[str, int]]]:
        """This rank's op list ("F<j>", "B<j>", "W<j>") and delegation toggle (None: GPU-direct,
        else {"sendQueues", "recvQueues"}) in committed schedule `version`, the agreed k.

        Versions below `version` are forgotten: the agreed k never decreases.
        """
        schedule = self.schedules.get(version) if version in self.committed else None
        if schedule is None:
            fetched = self._get(self.schedule_key)
            if fetched is None or fetched["version"] != version:
                raise KeyError("schedule version %d is unknown to rank %d" % (version, self.rank))
            schedule = self._keep(fetched)
            self.committed.setdefault(version, fetched["effectiveIteration"])
        problem = self._problem(schedule)
        if problem:
            raise ValueError("schedule version %d: %s" % (version, problem))
        topology = schedule.get("topology")
        if topology and topology["version"] != self.topology_version:
            # Re-mapped: rebuild communicators for the new (dp, pp) before this iteration; a rank in
            # topology["moved"] must already hold its new stage's weights (it acked the prepare).
            self.dp, self.pp = self.coordinates(schedule)
            self.topology_version = topology["version"]
            self.topology_change = topology
        layers = schedule.get("layers")
        if layers and layers["version"] != self.layers_version:
            # A new split: move layers (weights and optimizer state) before this iteration (sec. 5.7).
            self.layers_version = layers["version"]
            self.layers_change = layers
        pipeline = next(p for p in schedule["pipelines"] if self.dp in p["dpReplicas"])
        toggle = next(({"sendQueues": d["sendQueues"], "recvQueues": d["recvQueues"]}
                       for d in schedule.get("delegation", []) if d.get("rank") == self.rank), None)
        self.floor = max(self.floor, version)
        self.schedules = {v: s for v, s in self.schedules.items() if v >= self.floor}
        self.committed = {v: e for v, e in self.committed.items() if v >= self.floor}
        return list(pipeline["stages"][self.pp]), toggle

    def rejections(self, count: int = 10) -> List[Dict[str, Any]]:
        """Latest entries of this job's rejected stream (newest first): {"id", "reason", "at", "m"}."""
        rows = self.redis.xrevrange(self.rejected_key, "+", "-", count=count)
        return [dict({_text(k): _text(v) for k, v in fields.items()}, id=_text(entry_id)) for entry_id, fields in rows]

    # ----------------------------------------------------------------- helpers
    def _get(self, key: str) -> Optional[Dict[str, Any]]:
        raw = self.redis.get(key)
        value = json.loads(_text(raw)) if raw is not None else None
        return value if isinstance(value, dict) and value.get("protocol") == PROTOCOL else None

    def _keep(self, schedule: Dict[str, Any]) -> Dict[str, Any]:
        self.schedules[schedule["version"]] = schedule
        return schedule

    def coordinates(self, schedule: Dict[str, Any]) -> Tuple[int, int]:
        """(dp, pp) of this rank under `schedule`: from its topology when it has one."""
        for entry in (schedule.get("topology") or {}).get("ranks", []):
            if entry.get("rank") == self.rank:
                return entry["dp"], entry["pp"]
        return self.dp, self.pp

    def _problem(self, schedule: Dict[str, Any]) -> Optional[str]:
        """Why this rank cannot run `schedule`, or None."""
        dp, pp = self.coordinates(schedule)
        pipeline = next((p for p in schedule.get("pipelines", []) if dp in p.get("dpReplicas", [])), None)
        if pipeline is None:
            return "no pipeline entry for dp %d" % dp
        if pp >= len(pipeline.get("stages", [])):
            return "no op list for stage %d" % pp
        layers = schedule.get("layers")
        if layers and len(layers.get("perStage", [])) != len(pipeline["stages"]):
            return "layers.perStage lists %d stages, the schedule %d" % (len(layers.get("perStage", [])), len(pipeline["stages"]))
        return None
