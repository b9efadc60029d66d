"""Acknowledge only when ready (docs/protocol.md sec. 5.5): a rank the re-map moves acks its prepare
once the runtime's readiness hook says its new stage is built; until then the ack waits, and at
effectiveIteration it is refused with "weights not ready". No Redis: a fake holding the pending
schedule and the control stream. Run from clients/python: /usr/bin/python3 -m pytest -q tests/test_readiness.py"""
import json
import os
import sys
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from pipemorph.control import ScriptedControl  # noqa: E402
from pipemorph.protocol import PipemorphRank  # noqa: E402
from schedules import schedule, swap_topology  # noqa: E402

JOB, E = "job-a", 5
PREPARED = dict(schedule(2, 2, version=2, effective=E, dp=2, topology=swap_topology(2, 2, 1, 2)), jobId=JOB, state="prepared")


class FakeRedis:
    """GET of the pending key, XREAD of the control stream (one prepare), XADD of acks."""

    def __init__(self) -> None:
        self.control = [(b"1-1", {b"m": json.dumps({"type": "prepare", "protocol": 1, "jobId": JOB, "epoch": 1, "version": 2,
                                                     "effectiveIteration": E}).encode()})]
        self.acks: List[Dict[str, Any]] = []

    def get(self, key: str):
        return json.dumps(PREPARED).encode() if key.endswith(":pending") else None

    def xread(self, streams: Dict[str, str], count: int = 1000):
        (key, cursor), = streams.items()
        entries = [e for e in self.control if e[0].decode() > cursor]
        return [(key.encode(), entries)] if entries else []

    def xadd(self, key: str, fields: Dict[str, str], **_: Any) -> bytes:
        self.acks.append(json.loads(fields["m"]))
        return b"2-1"


def rank_with(ready_from: int):
    """Rank 1 (moved by the re-map) whose readiness hook says ready from iteration `ready_from` on."""
    redis = FakeRedis()
    rank = PipemorphRank(redis, JOB, 1, 0, 1)
    asked: List[int] = []
    rank.readiness = lambda s, i: asked.append(i) or i >= ready_from
    return rank, redis, asked


def test_the_ack_waits_until_the_rank_is_ready_then_accepts():
    rank, redis, asked = rank_with(3)
    for i in (1, 2):
        rank.poll_control(i)
        assert redis.acks == [] and rank.to_answer == [2]
    rank.poll_control(3)
    assert [(a["version"], a["accepted"], a["iteration"]) for a in redis.acks] == [(2, True, 3)]
    assert rank.to_answer == [] and asked == [1, 2, 3]
    rank.poll_control(4)
    assert len(redis.acks) == 1  # answered once


def test_not_ready_by_the_effective_iteration_is_refused_as_weights_not_ready():
    rank, redis, _ = rank_with(99)
    for i in range(1, E + 1):
        rank.poll_control(i)
    assert [(a["accepted"], a.get("reason"), a["iteration"]) for a in redis.acks] == [(False, "weights not ready", E)]
    assert rank.to_answer == []


def test_without_a_hook_the_prepare_is_acked_at_once():
    redis = FakeRedis()
    rank = PipemorphRank(redis, JOB, 1, 0, 1)
    rank.poll_control(1)
    assert [a["accepted"] for a in redis.acks] == [True]


def test_a_scripted_control_asks_the_hook_from_hearing_until_ready():
    committed = dict(PREPARED, state="committed", heardAt={"1": 2})
    control = ScriptedControl([schedule(2, 2, dp=2), committed], 1, 0, 1)
    asked: List[int] = []
    control.readiness = lambda s, i: asked.append(i) or i >= 3
    for i in range(6):
        control.poll_control(i)
    assert asked == [2, 3]
