"""End-to-end driver of test/python-client.test.ts: one job of 4 stages x 1 replica whose four
reporting ranks all run in this process, each through its own PipemorphRank (redis-py only).

    python3 e2e_driver.py --url redis://127.0.0.1:6379 --job test-py-1

Phases: `healthy` (every pipeline send ~1 ms) for --healthy iterations; `slow` (+--slow-ms on
link --slow-link, both directions) until the job runs a schedule with CPU delegation and then
--linger iterations more; `recover` (healthy) until the job runs a later schedule without any
delegation, then --linger iterations more. Per iteration the ranks follow protocol section 4:
poll control, agree on k (MAX of startup_version() first, then MIN of committed_version_for()),
run schedule k, report. Prints one JSON line per iteration and a last line {"summary": ...};
exit status 1 if the phases did not complete within --max-iterations.
"""
import argparse
import json
import time

import redis

from pipemorph_rank import PipemorphRank

STAGES, MICROBATCHES, OP_MS, BASE_MS, MESSAGE_BYTES = 4, 16, 10.0, 1.0, 1 << 24


def registration(job_id):
    return {
        "jobId": job_id, "stages": STAGES, "microbatches": MICROBATCHES, "dp": 1, "tp": 1,
        "ranks": [{"rank": pp, "dp": 0, "pp": pp, "tp": 0, "node": "node-%d" % pp} for pp in range(STAGES)],
        # 8 microbatches of activations fit on each device: room for more warm-up than 1F1B's.
        "memory": {"deviceBytes": [8e9] * STAGES, "activationBytes": [1e9] * STAGES, "hostBytes": 64e9},
        "computeMs": {"fMs": [OP_MS] * STAGES, "bMs": [OP_MS] * STAGES, "wMs": [OP_MS] * STAGES},
    }


def links_of(pp, extra_ms, delegated):
    """Pipeline sends of stage pp: activations to pp+1 (link pp), gradients to pp-1 (link pp-1)."""
    links = []
    for peer, link in ((pp + 1, pp), (pp - 1, pp - 1)):
        if 0 <= peer < STAGES:
            ms = BASE_MS + extra_ms.get(link, 0.0)
            links.append(PipemorphRank.link(peer, "pipeline", MESSAGE_BYTES, ms, ms * 1.2,
                                            delegated=delegated, count=MICROBATCHES))
    return links


def warmup(ops):
    """Forwards before the first backward of an op list."""
    return next((n for n, op in enumerate(ops) if op.startswith("B")), len(ops))


def emit(line):
    print(json.dumps(line, separators=(",", ":")), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="redis://127.0.0.1:6379")
    ap.add_argument("--job", required=True)
    ap.add_argument("--healthy", type=int, default=12)
    ap.add_argument("--slow-link", type=int, default=2)
    ap.add_argument("--slow-ms", type=float, default=40.0)
    ap.add_argument("--linger", type=int, default=3)
    ap.add_argument("--max-iterations", type=int, default=300)
    ap.add_argument("--pace-ms", type=float, default=20.0, help="sleep per iteration (the daemon reads reports meanwhile)")
    args = ap.parse_args()

    r = redis.Redis.from_url(args.url, socket_timeout=2, socket_connect_timeout=2)
    PipemorphRank.register(r, registration(args.job))
    ranks = [PipemorphRank(r, args.job, rank=pp, dp=0, pp=pp) for pp in range(STAGES)]
    connected = [pm.wait_for_schedule(timeout_s=20)["version"] for pm in ranks]

    phase, phase_left, adapted = "healthy", args.healthy, None
    switches, events, running = [], [], None
    for i in range(args.max_iterations):
        # 1. every reporting rank reads its control events (prepare -> ack, commit, abort)
        for pm in ranks:
            for event in pm.poll_control(i):
                events.append({"iteration": i, "rank": pm.rank, "type": event["type"], "version": event["version"],
                               "epoch": event["epoch"], "effectiveIteration": event["effectiveIteration"]})
        # 2-3. the agreement: MAX of startup_version() at the first iteration, then MIN of k_local
        local = [pm.startup_version() if i == 0 else pm.committed_version_for(i) for pm in ranks]
        k = max(local) if i == 0 else min(local)
        # 4. every rank runs schedule k: its own op list and delegation toggle
        plans = [pm.schedule_for(k) for pm in ranks]
        toggles = [toggle for _, toggle in plans]
        if k != running:
            switches.append({"version": k, "iteration": i, "warmup": [warmup(ops) for ops, _ in plans],
                             "delegation": {str(pm.rank): t for pm, t in zip(ranks, toggles) if t is not None}})
            running = k
        # 5. reports of iteration i, scheduleVersion k
        extra = {args.slow_link: args.slow_ms} if phase == "slow" else {}
        for pm, (ops, toggle) in zip(ranks, plans):
            pm.report(i, k, OP_MS, OP_MS, OP_MS, links_of(pm.pp, extra, toggle is not None),
                      delegation={"enabled": toggle is not None, "sendQueues": (toggle or {}).get("sendQueues", 0),
                                  "recvQueues": (toggle or {}).get("recvQueues", 0)},
                      iteration_ms=12 * 3 * OP_MS)
        # versions: what each rank holds in force after schedule_for(k) (its floor), i.e. what it ran
        emit({"iteration": i, "phase": phase, "local": local, "versions": [pm.floor for pm in ranks],
              "delegation": [t is not None for t in toggles]})

        phase_left -= 1
        if phase == "healthy" and phase_left <= 0:
            phase = "slow"
        elif phase == "slow" and adapted is None and any(toggles):
            adapted, phase_left = k, args.linger
        elif phase == "slow" and adapted is not None and phase_left <= 0:
            phase = "recover"
        elif phase == "recover" and k > adapted and not any(toggles):
            phase, phase_left = "done", args.linger
        elif phase == "done" and phase_left <= 0:
            break
        time.sleep(args.pace_ms / 1000.0)

    ok = phase == "done"
    emit({"summary": {"ok": ok, "phase": phase, "iterations": i + 1, "connectedVersions": connected,
                      "adaptedVersion": adapted, "switches": switches, "events": events,
                      "rejections": ranks[0].rejections()}})
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
