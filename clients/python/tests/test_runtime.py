"""Real rank processes (gloo on CPU) executing published schedules. Run from clients/python:
/usr/bin/python3 -m unittest discover -s tests -t ."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from pipemorph.launch import _cause, mixed_iterations  # noqa: E402
from pipemorph.ops import ScheduleError, parse_ops  # noqa: E402
from pipemorph.stage import reference_train  # noqa: E402
from schedules import schedule, swap_topology  # noqa: E402

STAGES, MICROBATCHES, HIDDEN, ROWS, SEED, LR = 4, 6, 16, 4, 3, 0.1


def launch(tmp: str, schedules, iterations: int, *extra: str, compute: str = "torch", profile=None, stages: int = STAGES,
           microbatches: int = MICROBATCHES):
    path = os.path.join(tmp, "schedule.json")
    with open(path, "w") as f:
        json.dump(schedules, f)
    out = os.path.join(tmp, "result.json")
    args = [sys.executable, "-m", "pipemorph.launch", "--stages", str(stages), "--microbatches", str(microbatches),
            "--iterations", str(iterations), "--compute", compute, "--schedule", path, "--hidden", str(HIDDEN),
            "--rows", str(ROWS), "--seed", str(SEED), "--lr", str(LR), "--timeout-s", "60", "--out", out, *extra]
    if profile:
        ppath = os.path.join(tmp, "profile.json")
        with open(ppath, "w") as f:
            json.dump(profile, f)
        args += ["--profile", ppath]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=240)
    result = None
    if done.returncode == 0:
        with open(out) as f:
            result = json.load(f)
    return done, result


class OpOrder(unittest.TestCase):
    def test_accepts_a_valid_zero_bubble_order(self):
        ops = schedule(STAGES, MICROBATCHES, defer_w=True)["pipelines"][0]["stages"][1]
        self.assertEqual(len(parse_ops(ops, MICROBATCHES)), 3 * MICROBATCHES)

    def test_refuses_w_before_its_b(self):
        ops = schedule(STAGES, MICROBATCHES)["pipelines"][0]["stages"][1]
        b0, w0 = ops.index("B0"), ops.index("W0")
        ops[b0], ops[w0] = ops[w0], ops[b0]
        with self.assertRaisesRegex(ScheduleError, "W0 runs before B0"):
            parse_ops(ops, MICROBATCHES)

    def test_refuses_missing_and_repeated_ops(self):
        ops = schedule(STAGES, MICROBATCHES)["pipelines"][0]["stages"][0]
        with self.assertRaisesRegex(ScheduleError, "missing"):
            parse_ops(ops[:-1], MICROBATCHES)
        with self.assertRaisesRegex(ScheduleError, "twice"):
            parse_ops(ops + ["F0"], MICROBATCHES)


class Training(unittest.TestCase):
    """Pipeline training equals single-process training of the same microbatches."""

    def test_switches_and_delegation_toggle_give_the_reference_parameters(self):
        iterations = 5
        switches = [
            schedule(STAGES, MICROBATCHES, version=1),
            # From iteration 2: ZeroBubble-style deferred W, more warm-up forwards, delegation on ranks 1 and 2.
            schedule(STAGES, MICROBATCHES, version=2, effective=2, warmup=[6, 5, 2, 1], defer_w=True, delegation=[1, 2], queues=3),
            # From iteration 4: delegation off again.
            schedule(STAGES, MICROBATCHES, version=3, effective=4, warmup=[4, 3, 2, 1], defer_w=True),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            params_dir = os.path.join(tmp, "params")
            os.mkdir(params_dir)
            with open(os.path.join(tmp, "delays.txt"), "w") as f:
                f.write("const:1=5")
            done, result = launch(tmp, switches, iterations, "--save-params", params_dir, "--delays", os.path.join(tmp, "delays.txt"))
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual([it["versions"] for it in result["iterations"]], [[1] * 4, [1] * 4, [2] * 4, [2] * 4, [3] * 4])
            delegated = [l["delegated"] for l in result["ranks"][1]["links"][2]["links"]]
            self.assertEqual(delegated, [True, True])
            reference = reference_train(STAGES, MICROBATCHES, iterations, ROWS, HIDDEN, SEED, LR)
            for stage in range(STAGES):
                got = torch.load(os.path.join(params_dir, "rank%d.pt" % stage))
                want = [p.detach() for p in reference[stage].parameters()]
                for g, w in zip(got, want):
                    self.assertTrue(torch.allclose(g, w, rtol=1e-5, atol=1e-6), "stage %d differs from the reference" % stage)
            # The yardstick can fail: one iteration fewer gives other parameters.
            fewer = reference_train(STAGES, MICROBATCHES, iterations - 1, ROWS, HIDDEN, SEED, LR)
            got = torch.load(os.path.join(params_dir, "rank0.pt"))
            self.assertFalse(all(torch.allclose(g, p.detach(), rtol=1e-5, atol=1e-6) for g, p in zip(got, fewer[0].parameters())))

    def test_a_schedule_with_w_before_its_b_is_refused_by_the_ranks(self):
        bad = schedule(STAGES, MICROBATCHES)
        ops = bad["pipelines"][0]["stages"][2]
        b1, w1 = ops.index("B1"), ops.index("W1")
        ops[b1], ops[w1] = ops[w1], ops[b1]
        with tempfile.TemporaryDirectory() as tmp:
            done, _ = launch(tmp, [bad], 1)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("W1 runs before B1", done.stderr)


class Transport(unittest.TestCase):
    """Head-of-line blocking: one GPU-direct send on the wire per link direction; delegates overlap."""

    SLEEP = {"fMs": [1] * STAGES, "bMs": [1] * STAGES, "wMs": [1] * STAGES}

    def in_flight(self, delegation):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "delays.txt"), "w") as f:
                f.write("const:1=40")
            done, result = launch(tmp, [schedule(STAGES, MICROBATCHES, warmup=[6, 6, 2, 1], delegation=delegation, queues=3)], 2,
                                  "--delays", os.path.join(tmp, "delays.txt"), compute="sleep", profile=self.SLEEP)
        self.assertEqual(done.returncode, 0, done.stderr)
        log = result["ranks"][1]["links"][1]
        send = next(l for l in log["links"] if l["peer"] == 2)
        self.assertGreaterEqual(send["medianMs"], 40)  # the injected delay is inside the measured send time
        return log["inFlight"]["2"], send["delegated"]

    def test_gpu_direct_sends_one_at_a_time(self):
        self.assertEqual(self.in_flight(None), (1, False))

    def test_delegates_send_in_parallel(self):
        peak, delegated = self.in_flight([1, 2])
        self.assertTrue(delegated)
        self.assertGreater(peak, 1)
        self.assertLessEqual(peak, 3)


class Agreement(unittest.TestCase):
    """Every rank records the version it ran; the all-reduce MIN keeps them equal in every iteration."""

    SLEEP = {"fMs": [2] * STAGES, "bMs": [2] * STAGES, "wMs": [1] * STAGES}

    def switches(self):
        # Rank 3 hears the commit of v2 two iterations after the others (a slow control read).
        return [schedule(STAGES, MICROBATCHES, version=1),
                schedule(STAGES, MICROBATCHES, version=2, effective=2, defer_w=True, heard_at={0: 1, 1: 1, 2: 1, 3: 3})]

    def test_min_switches_every_rank_at_the_same_iteration(self):
        with tempfile.TemporaryDirectory() as tmp:
            done, result = launch(tmp, self.switches(), 6, compute="sleep", profile=self.SLEEP)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(mixed_iterations(result["iterations"]), [])
        self.assertEqual([it["versions"][0] for it in result["iterations"]], [1, 1, 1, 2, 2, 2])

    def test_skipping_the_min_is_caught_as_mixed_versions(self):
        with tempfile.TemporaryDirectory() as tmp:
            done, result = launch(tmp, self.switches(), 6, "--agreement", "skip", compute="sleep", profile=self.SLEEP)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(mixed_iterations(result["iterations"]), [2])
        self.assertEqual(result["mixedIterations"], [2])


class DataParallel(unittest.TestCase):
    """dp replicas of a 2-stage pipeline: each stage's gradients are averaged over its replicas (a
    ring in the stage's own group) before the step, so training equals the single-process reference
    on the union of the replicas' microbatches. From iteration 2 a re-map swaps ranks 1 (dp 0, pp 1)
    and 2 (dp 1, pp 0): they take their new stage's weights and optimizer state (SGD momentum) from
    the checkpoint handoff and every rank re-forms its groups. One correct run serves both tests."""

    S, DP, M, ITERATIONS = 2, 2, 2, 3  # stages, replicas, microbatches per replica
    PLAN = [schedule(S, M, dp=DP),
            schedule(S, M, version=2, effective=2, dp=DP, topology=swap_topology(S, DP, 1, 2))]

    @classmethod
    def train(cls, test, schedules, *extra):
        with tempfile.TemporaryDirectory() as tmp:
            params_dir = os.path.join(tmp, "params")
            os.mkdir(params_dir)
            done, result = launch(tmp, schedules, cls.ITERATIONS, "--dp", str(cls.DP), "--save-params", params_dir,
                                  "--momentum", "0.9", *extra, stages=cls.S, microbatches=cls.M)
            test.assertEqual(done.returncode, 0, done.stderr)
            params = [torch.load(os.path.join(params_dir, "rank%d.pt" % r)) for r in range(cls.S * cls.DP)]
        reference = reference_train(cls.S, cls.DP * cls.M, cls.ITERATIONS, ROWS, HIDDEN, SEED, LR, 0.9)
        matches = [all(torch.allclose(g, w.detach(), rtol=1e-5, atol=1e-6) for g, w in zip(params[r["rank"]], reference[r["pp"]].parameters()))
                   for r in result["ranks"]]
        return result, matches

    @classmethod
    def setUpClass(cls):
        cls.correct = None

    def correct_run(self):
        if DataParallel.correct is None:
            DataParallel.correct = self.train(self, self.PLAN)
        return DataParallel.correct

    def test_replicas_train_like_the_reference_on_the_union_and_a_skipped_all_reduce_is_caught(self):
        result, matches = self.correct_run()
        self.assertEqual(matches, [True] * 4)
        self.assertEqual([(it["dp"], it["pp"]) for it in (r["iterations"][0] for r in result["ranks"])], [(0, 0), (0, 1), (1, 0), (1, 1)])
        ring = [l for l in result["ranks"][0]["links"][0]["links"] if l["kind"] == "data-parallel"]
        self.assertEqual([l["peer"] for l in ring], [2])  # reported as a data-parallel link to the ring successor
        _, broken = self.train(self, self.PLAN[:1], "--dp-reduce", "skip")
        self.assertNotEqual(broken, [True] * 4)

    def test_a_remap_hands_the_stage_state_to_moved_ranks_and_training_stays_exact(self):
        result, matches = self.correct_run()
        self.assertEqual([it["topologies"] for it in result["iterations"]], [[0] * 4, [0] * 4, [1] * 4])
        self.assertEqual(mixed_iterations(result["iterations"]), [])
        self.assertEqual([(r["dp"], r["pp"]) for r in result["ranks"]], [(0, 0), (1, 0), (0, 1), (1, 1)])
        self.assertEqual(matches, [True] * 4)
        _, broken = self.train(self, self.PLAN, "--handoff", "skip")  # moved ranks keep their old stage's weights
        self.assertEqual([broken[1], broken[2]], [False, False])

    def test_moved_ranks_prefetch_during_the_lead_iterations_and_only_the_state_moves_at_k(self):
        # The default handoff ("stream"): the moved ranks 1 and 2 built their new stage when they heard
        # the re-map (iteration 0), every rank created the new rings' groups at the same boundary
        # before k = 2, and at k only the state went point to point: no checkpoint, no barrier.
        result, _ = self.correct_run()
        for r in result["ranks"]:
            builds = [p for p in r["prefetches"] if p["what"] == "build"]
            groups = [p for p in r["prefetches"] if p["what"] == "groups"]
            self.assertEqual([p["iteration"] for p in builds], [0] if r["rank"] in (1, 2) else [])
            self.assertEqual([p["iteration"] for p in groups], [0])
            (remap,) = r["remaps"]
            self.assertEqual((remap["iteration"], remap["handoff"], remap["moved"]), (2, "stream", r["rank"] in (1, 2)))
            self.assertNotIn("barrierMs", remap)

    def test_the_checkpoint_handoff_still_trains_exactly(self):
        result, matches = self.train(self, self.PLAN, "--handoff", "load")
        self.assertEqual(matches, [True] * 4)
        self.assertEqual([r["remaps"][0]["handoff"] for r in result["ranks"]], ["load"] * 4)
        self.assertEqual([r["prefetches"] for r in result["ranks"]], [[]] * 4)

    def test_a_handoff_of_the_state_copied_at_the_prepare_is_caught(self):
        # The re-map heard at iteration 1 (between its two steps); the holders send the state they had
        # then instead of the state after k - 1 = 1's step: the moved ranks train on stale weights.
        late = [self.PLAN[0], dict(self.PLAN[1], heardAt={str(r): 1 for r in range(4)})]
        result, good = self.train(self, late)
        self.assertEqual(good, [True] * 4)
        _, broken = self.train(self, late, "--handoff", "early")
        self.assertEqual([broken[1], broken[2]], [False, False])  # (their gradients then skew the replicas' mean too)

class LaunchReport(unittest.TestCase):
    """What the launcher says of a failed rank: its exception, not the native noise after it."""

    def test_the_exception_line_of_the_last_traceback_wins_over_teardown_noise(self):
        log = ["step 1", "Traceback (most recent call last):", '  File "x.py", line 1, in <module>', "    run()",
               "pipemorph.executor.ScheduleError: W1 runs before B1 on stage 1", "terminate called without an active exception"]
        self.assertEqual(_cause(log), "pipemorph.executor.ScheduleError: W1 runs before B1 on stage 1")

    def test_without_a_traceback_the_last_line(self):
        self.assertEqual(_cause(["started", "Killed"]), "Killed")
        self.assertIsNone(_cause([]))


if __name__ == "__main__":
    unittest.main()
