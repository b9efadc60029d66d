"""Live layer moves (docs/protocol.md sec. 5.7, docs/rebalancing.md "On real ranks"): the tiny GPT
with movable blocks (`pipemorph.launch --model gpt --split 2,2,2,2`), 4 real rank processes, 1F1B;
from iteration 3 the schedule carries a new split, 3,2,1,2 blocks: stage 1 gives block 2 to stage 0,
stage 2 gives block 4 to stage 1, weights and SGD momentum, at the boundary before iteration 3.
From iteration 5 another schedule carries the same split (moves: []): nothing moves again. The final
parameters equal the single-process reference's by model-wide name; the same run with the moved
blocks' momentum left behind (`--fault layer-optim-lost`) does not. In the test process: which
layers go where, and a rebuilt stage's state (`pipemorph.layers`), with a stale copy caught.
Run from clients/python: /usr/bin/python3 -m pytest tests/test_layer_moves.py"""
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

from pipemorph import gpt, layers  # noqa: E402
from schedules import layer_split, schedule  # noqa: E402

S, M, ITERATIONS, SEED, LR, MOMENTUM = 4, 4, 6, 3, 0.3, 0.9
BEFORE, AFTER = [2, 2, 2, 2], [3, 2, 1, 2]
CONFIG = gpt.GPTConfig(vocab=64, seq=16, d_model=32, heads=2, layers=2, rows=4)
ATOL, RTOL = 1e-5, 1e-4
SPLIT = layer_split(BEFORE, AFTER, since=2, state_bytes=1e5)
PLAN = [schedule(S, M),
        schedule(S, M, version=2, effective=3, layers=SPLIT),
        schedule(S, M, version=3, effective=5, defer_w=True, layers=dict(SPLIT, moves=[]))]


def train(*extra):
    """Runs the launcher on PLAN; returns (result, {model-wide name: final tensor} over the ranks)."""
    with tempfile.TemporaryDirectory() as tmp:
        path, out, params = os.path.join(tmp, "plan.json"), os.path.join(tmp, "out.json"), os.path.join(tmp, "params")
        os.mkdir(params)
        with open(path, "w") as f:
            json.dump(PLAN, f)
        args = [sys.executable, "-m", "pipemorph.launch", "--model", "gpt", "--stages", str(S), "--microbatches", str(M),
                "--iterations", str(ITERATIONS), "--schedule", path, "--hidden", str(CONFIG.d_model), "--rows", str(CONFIG.rows),
                "--seq", str(CONFIG.seq), "--vocab", str(CONFIG.vocab), "--heads", str(CONFIG.heads),
                "--split", ",".join(map(str, BEFORE)), "--seed", str(SEED), "--lr", str(LR), "--momentum", str(MOMENTUM),
                "--timeout-s", "60", "--save-params", params, "--out", out, *extra]
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        with open(out) as f:
            result = json.load(f)
        final = {}
        for r in range(S):
            final.update(torch.load(os.path.join(params, "rank%d.pt" % r)))
        return result, final


def max_diff(final, reference):
    assert set(final) == set(reference)
    return max(float((final[k] - reference[k]).abs().max()) for k in reference)


def allclose(final, reference):
    return set(final) == set(reference) and all(torch.allclose(final[k], reference[k], rtol=RTOL, atol=ATOL) for k in reference)


@pytest.fixture(scope="module")
def reference():
    return gpt.reference_train_layered(CONFIG, BEFORE, M, ITERATIONS, SEED, LR, MOMENTUM)


def test_the_gpt_trains_like_the_reference_across_a_live_layer_move(reference):
    params, losses = reference
    result, final = train()
    assert [it["versions"] for it in result["iterations"]] == [[1] * 4] * 3 + [[2] * 4] * 2 + [[3] * 4]
    assert [it["splits"] for it in result["iterations"]] == [[0] * 4] * 3 + [[1] * 4] * 3
    ranks = result["ranks"]
    assert [r["split"] for r in ranks] == [AFTER] * 4
    assert [(m["sent"], m["received"]) for r in ranks for m in r["moves"]] == [([], [2]), ([2], [4]), ([4], []), ([], [])]
    assert all(len(r["moves"]) == 1 and r["moves"][0]["iteration"] == 3 for r in ranks)  # v3's carried split moves nothing
    assert result["loss"][-1] < result["loss"][0] - 0.5
    assert result["loss"] == pytest.approx(losses, abs=1e-4)
    assert allclose(final, params), "max diff %g" % max_diff(final, params)
    move = [r["iterations"][3]["moveMs"] for r in ranks]
    steady = sorted(it["ms"] for it in result["iterations"] if it["iteration"] in (2, 4, 5))
    print("\nlayer move 2,2,2,2 -> 3,2,1,2 at iteration 3: max |param - reference| %.3g; move %s ms per rank; "
          "iteration 3 %.1f ms, steady (median of 2, 4, 5) %.1f ms"
          % (max_diff(final, params), " ".join("%.1f" % m for m in move), result["iterations"][3]["ms"], steady[1]))


def test_moved_layers_without_their_optimizer_state_break_the_reference_check(reference):
    params, losses = reference
    result, final = train("--fault", "layer-optim-lost")
    assert result["loss"][:4] == pytest.approx(losses[:4], abs=1e-4)  # the same run until the first step after the move
    assert not allclose(final, params)
    off = sorted({k.split(".")[1] for k in params if k.startswith("blocks.") and not torch.allclose(final[k], params[k], rtol=RTOL, atol=ATOL)})
    assert {"2", "4"} <= set(off)  # the moved blocks restarted their momentum
    assert max_diff(final, params) > 1e-3
    print("\nmoved layers without momentum: max |param - reference| %.3g" % max_diff(final, params))


# ---------------------------------------------------------------- in the test process, no ranks
def test_which_layers_go_where():
    assert layers.transfers(BEFORE, AFTER, 0) == ({}, {1: [2]})
    assert layers.transfers(BEFORE, AFTER, 1) == ({0: [2]}, {2: [4]})
    assert layers.transfers(BEFORE, AFTER, 2) == ({1: [4]}, {})
    assert layers.transfers(BEFORE, AFTER, 3) == ({}, {})
    # Not only neighbours: stage 0 takes blocks 2-4 from stages 1 and 2.
    assert layers.transfers(BEFORE, [5, 1, 1, 1], 0) == ({}, {1: [2, 3], 2: [4]})
    assert layers.transfers(BEFORE, [5, 1, 1, 1], 3) == ({2: [6]}, {})
    assert layers.transfers(BEFORE, [5, 1, 1, 1], 2) == ({0: [4], 1: [5]}, {3: [6]})
    assert SPLIT["moves"] == [{"firstLayer": 2, "lastLayer": 2, "fromStage": 1, "toStage": 0, "bytes": 1e5},
                              {"firstLayer": 4, "lastLayer": 4, "fromStage": 2, "toStage": 1, "bytes": 1e5}]


def _stage(pp, first, last, stages=2):
    module = gpt.layered_stage(CONFIG, pp, stages, first, last, SEED)
    return module, torch.optim.SGD(module.parameters(), lr=LR, momentum=MOMENTUM)


def _trained(pp, first, last):
    """A stage after one SGD step with momentum (every parameter has a momentum buffer)."""
    module, optimizer = _stage(pp, first, last)
    x = torch.randn(CONFIG.rows, CONFIG.seq, CONFIG.d_model) if pp else gpt.microbatch(CONFIG, 0, 0, SEED)[0]
    module(x).pow(2).mean().backward()
    optimizer.step()
    return module, optimizer


@pytest.mark.parametrize("fault", [None, "layer-stale", "layer-optim-lost"])
def test_a_rebuilt_stage_holds_its_kept_and_received_layers_weights_and_momentum(fault):
    # Two stages of 2 blocks -> 3 and 1: stage 1 gives block 2 to stage 0.
    (m0, o0), (m1, o1) = _trained(0, 0, 2), _trained(1, 2, 4)
    payload = layers.pack_layers(m1, o1, 2, 2, gpt.layer_prefix, [2], with_optimizer=fault != "layer-optim-lost")
    new0, opt0 = layers.rebuild(m0, o0, (0, 2), (0, 3), lambda a, b: _stage(0, a, b), gpt.layer_prefix, payload,
                                keep_received_weights=fault != "layer-stale")
    new1, opt1 = layers.rebuild(m1, o1, (2, 4), (3, 4), lambda a, b: _stage(1, a, b), gpt.layer_prefix, {})
    want = dict(gpt.global_state(m0, 0), **gpt.global_state(m1, 2))
    got = dict(gpt.global_state(new0, 0), **gpt.global_state(new1, 3))
    assert set(got) == set(want) and len(new0.blocks) == 3 and len(new1.blocks) == 1
    momentum = {}
    for module, optimizer, first in ((m0, o0, 0), (m1, o1, 2), (new0, opt0, 0), (new1, opt1, 3)):
        for name, value in gpt.global_state(module, first).items():
            p = dict(module.named_parameters())[name if not name.startswith("blocks.") else
                                                "blocks.%d.%s" % (int(name.split(".")[1]) - first, name.split(".", 2)[2])]
            buf = optimizer.state.get(p, {}).get("momentum_buffer")
            momentum.setdefault(name, []).append(buf)
    moved = [k for k in want if k.startswith("blocks.2.")]
    same_weights = all(torch.equal(got[k], want[k]) for k in want)
    same_momentum = all(v[1] is not None and torch.equal(v[0], v[1]) for v in momentum.values())
    kept_momentum = all(v[1] is not None and torch.equal(v[0], v[1]) for k, v in momentum.items() if k not in moved)
    assert kept_momentum  # what did not move keeps its own state in every case
    if fault is None:
        assert same_weights and same_momentum
    elif fault == "layer-stale":
        assert not all(torch.equal(got[k], want[k]) for k in moved) and same_momentum
    else:
        assert same_weights and all(momentum[k][1] is None for k in moved)
