import { seededRandom } from '../planner/seeded-random';
import { DEFAULT_DETECTOR_CONFIG } from './detector-config.type';
import { EmulatedRanks } from './emulated-ranks.fixture';
import { JobDetector } from './job-detector';
import { SlidingWindow } from './sliding-window';

// How a straggler older than K is sized (PipelineLinkTracker's Direction: spell, trackSpell):
// the upper quartile of its spell, restarted by a level shift only when its levels last.

const K = DEFAULT_DETECTOR_CONFIG.enterAfter;
const WINDOW = DEFAULT_DETECTOR_CONFIG.windowSize;

function job(): EmulatedRanks {
  const S = 4;
  const dp = 2;
  const ranks = Array.from({ length: S * dp }, (_, rank) => ({ rank, dp: Math.floor(rank / S), pp: rank % S }));
  return new EmulatedRanks(new JobDetector({ stages: S, dpSize: dp, ranks }, { ...DEFAULT_DETECTOR_CONFIG }), S, dp);
}

/** Runs `extra(k)` ms on link 2 of replica 1 for each k in [0, n); returns the link's size after each. */
function drive(r: EmulatedRanks, n: number, extra: (k: number) => number): number[] {
  const sizes: number[] = [];
  for (let k = 0; k < n; k++) {
    r.pipelineMs = (d, link) => 10 + (d === 1 && link === 2 ? extra(k) : 0);
    r.iterate();
    const l = r.detector.snapshot().pipelineLinks.find((x) => x.dp === 1 && x.link === 2)!;
    expect(l.straggler || k < K).toBe(true);
    sizes.push(l.extraMs);
  }
  return sizes;
}

/** The median of the newest K of `samples` after each one (the sizing before spells). */
function newestKSizes(samples: number[]): number[] {
  const w = new SlidingWindow(WINDOW);
  return samples.map((x) => {
    w.add(x);
    return w.recentMedian(K);
  });
}

const spread = (xs: number[]) => Math.max(...xs) - Math.min(...xs);

describe('straggler sizing over its spell', () => {
  // A new delay drawn every 1-2 iterations (the paper's dynamic traces at iteration granularity).
  const random = seededRandom(7);
  const draws: number[] = [];
  while (draws.length < 60) {
    const ms = 20 + 20 * random();
    for (let n = 1 + Math.floor(2 * random()); n > 0; n--) draws.push(ms);
  }
  draws.length = 60;

  it('a link whose delay moves every iteration or two is sized by the spell: one plan, not one per draw', () => {
    const r = job();
    r.run(20);
    const all = drive(r, draws.length, (k) => draws[k]);
    const sizes = all.slice(WINDOW + K);
    expect(spread(sizes)).toBeLessThan(8);
    // Sized in the upper half of the window's draws: slack for the spell's slower ones.
    const w = new SlidingWindow(WINDOW);
    draws.forEach((x, k) => {
      w.add(x);
      if (k >= WINDOW + K) expect(all[k]).toBeGreaterThanOrEqual(w.median() - 1e-9);
    });
  });

  it('can fail: the newest K draws, which sized it before, move by more than that over the same iterations', () => {
    expect(spread(newestKSizes(draws).slice(WINDOW + K))).toBeGreaterThan(8);
  });

  const steady = WINDOW + 10;
  const step = (k: number) => (k < steady ? 30 : 60);

  it('a level that lasted a window restarts the spell at a step: 30 ms then 60 ms is sized 60 K samples after the step', () => {
    const r = job();
    r.run(20);
    const sizes = drive(r, steady + K, step);
    expect(sizes[steady - 1]).toBeCloseTo(30, 6);
    expect(sizes[steady + K - 1]).toBeCloseTo(60, 6);
  });

  it('can fail: without the restart the spell (the upper quartile of the window) would still say 30 ms', () => {
    const w = new SlidingWindow(WINDOW);
    for (let k = 0; k < steady + K; k++) w.add(10 + step(k));
    expect(w.recentQuantile(WINDOW, 0.75) - 10).toBeCloseTo(30, 6);
  });

  it('a step down after a lasting level is sized within K samples too', () => {
    const r = job();
    r.run(20);
    const sizes = drive(r, steady + K, (k) => (k < steady ? 60 : 30));
    expect(sizes[steady + K - 1]).toBeCloseTo(30, 6);
  });
});
