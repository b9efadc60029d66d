"""Seeded rank noise (pipemorph/noise.py). Run from clients/python:
/usr/bin/python3 -m unittest discover -s tests -t ."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipemorph.noise import draw, link_tail_ms, parse_noise, pause  # noqa: E402


class NoiseTest(unittest.TestCase):
    def test_off_by_default(self):
        for spec in (None, "", "none"):
            n = parse_noise(spec)
            self.assertFalse(n.active)
            d = draw(n, 0, 0, 5, 10)
            self.assertIsNone(d.pause_op)
            self.assertEqual((d.stall_ms, d.checkpoint_ms), (0.0, 0.0))

    def test_link_tail_seeded_heavy_and_off_by_default(self):
        self.assertEqual(link_tail_ms(parse_noise("seed=1,gc=0.5"), 0, 1, 3), 0.0)
        n = parse_noise("seed=3,linkTail=0.05,linkTailMs=3,linkTailAlpha=1.2")
        tails = [link_tail_ms(n, r, r + 1, i) for r in range(4) for i in range(5000)]
        self.assertEqual(tails, [link_tail_ms(n, r, r + 1, i) for r in range(4) for i in range(5000)])
        hit = [t for t in tails if t > 0]
        self.assertAlmostEqual(len(hit) / len(tails), 0.05, delta=0.01)
        # Pareto(1.2) over 3 ms: P(excess > 20 ms) = (3 / 23)^1.2, about 8.7% of the hits.
        self.assertAlmostEqual(sum(t > 20 for t in hit) / len(hit), (3 / 23) ** 1.2, delta=0.03)

    def test_refuses_bad_specs(self):
        for spec in ("gc", "gc=2", "bogus=1", "gc=x", "gcMinMs=600", "checkpointEvery=-1", "linkTail=1.5", "linkTailMs=0"):
            with self.assertRaises(ValueError):
                parse_noise(spec)

    def test_seeded_rates_ranges_and_stage_zero_stalls(self):
        n = parse_noise("seed=7,gc=0.1,stall=0.2,checkpointEvery=10,checkpointMs=250")
        draws = [[draw(n, r, r, i, 24) for i in range(2000)] for r in range(4)]
        again = [[draw(n, r, r, i, 24) for i in range(2000)] for r in range(4)]
        self.assertEqual([[vars(d) for d in row] for row in draws], [[vars(d) for d in row] for row in again])
        pauses = [d for row in draws for d in row if d.pause_op is not None]
        self.assertAlmostEqual(len(pauses) / 8000, 0.1, delta=0.02)
        self.assertTrue(all(20 <= d.pause_ms <= 500 and 0 <= d.pause_op < 24 for d in pauses))
        self.assertTrue(all(d.stall_ms == 0 for row in draws[1:] for d in row))
        stalls = [d for d in draws[0] if d.stall_ms > 0]
        self.assertAlmostEqual(len(stalls) / 2000, 0.2, delta=0.04)
        self.assertEqual([i for i, d in enumerate(draws[2]) if d.checkpoint_ms == 250], list(range(9, 2000, 10)))
        other = parse_noise("seed=8,gc=0.1")
        self.assertNotEqual([draw(other, 0, 0, i, 24).pause_op for i in range(200)], [d.pause_op for d in draws[0][:200]])

    def test_a_pause_lasts_its_time_with_a_real_collection(self):
        t0 = time.perf_counter()
        pause(60, collect=True)
        self.assertGreaterEqual((time.perf_counter() - t0) * 1000, 59)
        self.assertLess((time.perf_counter() - t0) * 1000, 400)


if __name__ == "__main__":
    unittest.main()
