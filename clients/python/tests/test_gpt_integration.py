"""A tiny GPT (pipemorph/gpt.py) trained by real rank processes through the integration API
(pipemorph.integration.PipelineTrainer, driven by `pipemorph.launch --model gpt`): 4 stages x dp 2,
a schedule switch with a delegation toggle at iteration 2, a re-map at iteration 4 that moves two
ranks onto other stages (with their SGD momentum). The loss falls, and the final parameters equal a
single-process reference; a skipped W op and stale weights after the re-map each break that check.
Run from clients/python: /usr/bin/python3 -m pytest tests/test_gpt_integration.py"""
import json
import os
import subprocess
import sys
import tempfile

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from pipemorph import gpt  # noqa: E402
from schedules import schedule, swap_topology  # noqa: E402

S, DP, M, ITERATIONS, SEED, LR, MOMENTUM = 4, 2, 4, 6, 3, 0.3, 0.9
CONFIG = gpt.GPTConfig(vocab=64, seq=16, d_model=32, heads=2, layers=2, rows=4)
ATOL, RTOL = 1e-5, 1e-4
# v1 1F1B; v2 from iteration 2: deferred W, more warm-up, delegation on ranks 1, 2 and 5;
# v3 from iteration 4: delegation off, ranks 1 (dp 0, pp 1) and 6 (dp 1, pp 2) swap places.
PLAN = [schedule(S, M, dp=DP),
        schedule(S, M, version=2, effective=2, dp=DP, defer_w=True, warmup=[4, 3, 2, 1], delegation=[1, 2, 5], queues=2),
        schedule(S, M, version=3, effective=4, dp=DP, topology=swap_topology(S, DP, 1, 6, since=3))]


def train(schedules, iterations=ITERATIONS, dp=DP, *extra):
    """Runs the launcher; returns (result, final parameters per rank)."""
    with tempfile.TemporaryDirectory() as tmp:
        path, out, params = os.path.join(tmp, "plan.json"), os.path.join(tmp, "out.json"), os.path.join(tmp, "params")
        os.mkdir(params)
        with open(path, "w") as f:
            json.dump(schedules, f)
        args = [sys.executable, "-m", "pipemorph.launch", "--model", "gpt", "--stages", str(S), "--dp", str(dp),
                "--microbatches", str(M), "--iterations", str(iterations), "--schedule", path, "--hidden", str(CONFIG.d_model),
                "--rows", str(CONFIG.rows), "--seq", str(CONFIG.seq), "--vocab", str(CONFIG.vocab), "--layers", str(CONFIG.layers),
                "--heads", str(CONFIG.heads), "--seed", str(SEED), "--lr", str(LR), "--momentum", str(MOMENTUM),
                "--timeout-s", "60", "--save-params", params, "--out", out, *extra]
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        with open(out) as f:
            result = json.load(f)
        return result, [torch.load(os.path.join(params, "rank%d.pt" % r)) for r in range(S * dp)]


def max_diff(result, params, reference):
    """Largest |pipeline - reference| over every rank's parameters (each rank against the stage it ends on)."""
    return max(float((g - w.detach()).abs().max()) for r in result["ranks"]
               for g, w in zip(params[r["rank"]], reference[r["pp"]].parameters()))


def matches(result, params, reference):
    return [all(torch.allclose(g, w.detach(), rtol=RTOL, atol=ATOL) for g, w in zip(params[r["rank"]], reference[r["pp"]].parameters()))
            for r in result["ranks"]]


@pytest.fixture(scope="module")
def reference():
    return gpt.reference_train(CONFIG, S, DP * M, ITERATIONS, SEED, LR, MOMENTUM)


@pytest.fixture(scope="module")
def correct(reference):
    return train(PLAN)


def test_the_gpt_trains_like_the_single_process_reference_across_a_switch_a_toggle_and_a_remap(correct, reference):
    result, params = correct
    modules, losses = reference
    assert [it["versions"] for it in result["iterations"]] == [[1] * 8] * 2 + [[2] * 8] * 2 + [[3] * 8] * 2
    assert [it["topologies"] for it in result["iterations"]] == [[0] * 8] * 4 + [[1] * 8] * 2
    assert [(r["dp"], r["pp"]) for r in result["ranks"]][1] == (1, 2) and result["ranks"][6]["pp"] == 1
    delegated = {l["peer"]: l["delegated"] for l in result["ranks"][1]["links"][2]["links"] if l["kind"] == "pipeline"}
    assert delegated == {0: True, 2: True}
    assert all(l["kind"] != "pipeline" or not l["delegated"] for l in result["ranks"][1]["links"][4]["links"])
    # The loss falls (ln 64 = 4.16 is chance), as the reference's does, iteration by iteration.
    assert result["loss"][-1] < result["loss"][0] - 0.5
    assert result["loss"] == pytest.approx(losses, abs=1e-4)
    assert matches(result, params, modules) == [True] * 8, "max diff %g" % max_diff(result, params, modules)
    print("\nloss %s; max |param - reference| %.3g" % (" ".join("%.3f" % l for l in result["loss"]), max_diff(result, params, modules)))


def test_a_skipped_w_op_breaks_the_reference_check():
    # One pipeline, one iteration: stage 2 drops W0 (microbatch 0's weight gradient); only stage 2
    # differs from the reference, the others (whose input gradients do not depend on it) match.
    result, params = train(PLAN[:1], 1, 1, "--fault", "skip-w=2")
    modules, _ = gpt.reference_train(CONFIG, S, M, 1, SEED, LR, MOMENTUM)
    assert matches(result, params, modules) == [True, True, False, True]
    print("\nskipped W0 on stage 2: max |param - reference| %.3g" % max_diff(result, params, modules))


def test_stale_weights_after_a_remap_break_the_reference_check(reference):
    # The correct run's plan, but the moved ranks 1 and 6 build their new stage without loading its
    # checkpoint (they train on from its initial weights).
    modules, _ = reference
    result, params = train(PLAN, ITERATIONS, DP, "--fault", "stale-remap")
    assert [(r["dp"], r["pp"]) for r in result["ranks"]][1] == (1, 2)
    assert result["loss"][:4] == pytest.approx(reference[1][:4], abs=1e-4)  # the same run until the re-map
    got = matches(result, params, modules)
    assert [got[1], got[6]] == [False, False]
    assert max_diff(result, params, modules) > 1e-3
    print("\nstale weights after the re-map: max |param - reference| %.3g" % max_diff(result, params, modules))


def test_the_moved_ranks_built_their_stage_before_the_remap_and_got_only_the_state_at_it(correct):
    # The correct run's re-map (heard at iteration 0, k = 4): ranks 1 and 6 built their new stage in
    # the lead iterations, every rank created the new rings' groups at the same earlier boundary,
    # and at k only the state moved, point to point (the parameters match the reference above).
    result, _ = correct
    for r in result["ranks"]:
        assert [p["iteration"] for p in r["prefetches"] if p["what"] == "build"] == ([0] if r["rank"] in (1, 6) else [])
        assert [p["iteration"] < 4 for p in r["prefetches"] if p["what"] == "groups"] == [True]
        assert [(m["iteration"], m["handoff"]) for m in r["remaps"]] == [(4, "stream")]


def test_a_handoff_of_the_state_copied_at_the_prepare_breaks_the_reference_check(reference):
    # The re-map heard at iteration 2; the holders hand over the state they had then (a prefetch that
    # copied the weights at the prepare), not the state after iteration 3's step.
    modules, losses = reference
    late = PLAN[:2] + [dict(PLAN[2], heardAt={str(r): 2 for r in range(S * DP)})]
    result, params = train(late, ITERATIONS, DP, "--handoff", "early")
    assert result["loss"][:4] == pytest.approx(losses[:4], abs=1e-4)  # the same run until the re-map
    got = matches(result, params, modules)
    assert [got[1], got[6]] == [False, False]
    print("\nstate copied at the prepare: max |param - reference| %.3g" % max_diff(result, params, modules))
