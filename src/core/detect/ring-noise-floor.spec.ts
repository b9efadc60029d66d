import { seededRandom } from '../planner/seeded-random';
import { DataParallelLinkTracker } from './data-parallel-link-tracker';
import { DEFAULT_DETECTOR_CONFIG } from './detector-config.type';

/**
 * The ring noise floor (DataParallelLinkTracker.noiseFloorMs; held out in bench:outside: on
 * lognormal ring medians of sigma 0.5, one healthy ring ran six samples in a row 1.6x its level and
 * a young job was re-mapped). 12 rings of 10 ms, dp 2 x 6 stages; after 300 healthy iterations ring
 * 0 -> 6 runs `run` samples of `ms`. The same run is judged on a noisy job and on a quiet one.
 */
function judge(sigma: number, ms: number, run: number): boolean {
  const random = seededRandom(7);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const ranks = 12;
  const tracker = new DataParallelLinkTracker(
    DEFAULT_DETECTOR_CONFIG,
    Array.from({ length: ranks }, (_, r) => r),
    Array.from({ length: ranks }, (_, r) => r % 6),
  );
  let flagged = false;
  for (let t = 0; t < 300 + run; t++) {
    for (let from = 0; from < ranks; from++) {
      const to = (from + 6) % ranks;
      const injected = from === 0 && t >= 300;
      const medianMs = injected ? ms : 10 * Math.exp(sigma * gauss());
      tracker.observe(from, to, { peer: to, kind: 'data-parallel', bytes: 2 ** 22, medianMs, maxMs: medianMs, delegated: false, error: null });
    }
    if (t >= 300) flagged ||= tracker.states(Array.from({ length: ranks }, (_, r) => r)).some((l) => l.straggler && l.fromRank === 0);
  }
  return flagged;
}

describe('DataParallelLinkTracker: the ring noise floor', () => {
  it('does not take six samples 1.65x a ring\'s level for a straggler on rings whose medians spread with sigma 0.5', () => {
    expect(judge(0.5, 16.5, 6)).toBe(false);
  });

  it('twin: the same six samples on quiet rings (sigma 0.05) are a straggler', () => {
    expect(judge(0.05, 16.5, 6)).toBe(true);
  });

  it('never hides a severe ring straggler: +25 ms on the noisy rings is flagged within 2 x enterAfter samples', () => {
    expect(judge(0.5, 35, 2 * DEFAULT_DETECTOR_CONFIG.enterAfter)).toBe(true);
  });
});
