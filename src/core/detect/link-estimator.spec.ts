import fc from 'fast-check';
import { LinkEstimator } from './link-estimator';

const options = { windowSize: 5, ewmaAlpha: 0.5, baselineWarmup: 3 };

function feed(e: LinkEstimator, xs: number[]): LinkEstimator {
  for (const x of xs) e.add(x);
  return e;
}

describe('LinkEstimator', () => {
  it('has no baseline (and no extra) before warm-up without a nominal time', () => {
    const e = feed(new LinkEstimator(options), [10, 40]);
    expect(e.samples).toBe(2);
    expect(e.baselineMs()).toBeNaN();
    expect(e.extraMs()).toBe(0);
    expect(e.fastExtraMs()).toBe(0);
    expect(e.lastExtraMs()).toBe(0);
    expect(e.medianMs()).toBe(25);
  });

  it('reports NaN levels when empty', () => {
    const e = new LinkEstimator(options);
    expect(e.medianMs()).toBeNaN();
    expect(e.ewmaMs()).toBeNaN();
    expect(e.baselineMs()).toBeNaN();
    expect(e.lastExtraMs()).toBe(0);
  });

  it('learns its healthy level once warm, and keeps it through a long straggler', () => {
    const e = feed(new LinkEstimator({ ...options, stragglerMs: 5 }), [12, 10, 11]);
    expect(e.baselineMs()).toBe(11); // median of 12, 10, 11
    feed(e, new Array(40).fill(10));
    expect(e.baselineMs()).toBe(10); // stepped down to the healthy windows
    feed(e, new Array(200).fill(40)); // the window fills with the slow level: no evidence of the healthy one
    expect(e.medianMs()).toBe(40);
    expect(e.baselineMs()).toBe(10);
    expect(e.extraMs()).toBe(30);
    expect(e.lastExtraMs()).toBe(30);
  });

  it('ignores a single fast outlier when learning (a median, not a minimum)', () => {
    const e = feed(new LinkEstimator(options), [10, 10, 10, 0.1, 10]);
    expect(e.baselineMs()).toBe(10);
  });

  it('uses the nominal time before warm-up, and after it the learned baseline unless that sits more than learnedSlackMs above the nominal', () => {
    const slowLink = feed(new LinkEstimator({ ...options, nominalMs: 4, learnedSlackMs: 3 }), [9]);
    expect(slowLink.baselineMs()).toBe(4);
    expect(slowLink.lastExtraMs()).toBe(5);
    feed(slowLink, [9, 9]);
    expect(slowLink.baselineMs()).toBe(4); // learned 9 > 4 + 3: slow since its first sample
    const fastLink = feed(new LinkEstimator({ ...options, nominalMs: 4, learnedSlackMs: 3 }), [3, 3, 3]);
    expect(fastLink.baselineMs()).toBe(3);
  });

  it('leaves no standing extra on a link that runs a little above an optimistic nominal (issue 29)', () => {
    // Registered 0.69 ms, the link runs 1.7 ms healthy: once learned it reads 0 extra, not +1 ms forever.
    const e = feed(new LinkEstimator({ ...options, nominalMs: 0.69, learnedSlackMs: 5 }), [1.7, 1.7, 1.7, 1.7]);
    expect(e.baselineMs()).toBe(1.7);
    expect(e.lastExtraMs()).toBe(0);
    // The rule it replaces (the lower of nominal and learned) reads the standing offset: the twin fails the check.
    const lowerOf = Math.min(0.69, e.learnedMs);
    expect(1.7 - lowerOf).toBeGreaterThan(1);
  });

  it('stands the calibrated nominal in for a link learned too slow (nominal + the job offset)', () => {
    const e = feed(new LinkEstimator({ ...options, nominalMs: 4, learnedSlackMs: 3 }), [20, 20, 20]);
    e.calibrate(1);
    expect(e.baselineMs()).toBe(5);
    expect(e.lastExtraMs()).toBe(15);
  });

  it('computes extras against the baseline: median, EWMA and last sample, never negative', () => {
    const e = feed(new LinkEstimator(options), [10, 10, 10]);
    e.add(20);
    // EWMA: 10, 10, 10, then 10 + 0.5 * (20 - 10).
    expect(e.ewmaMs()).toBe(15);
    expect(e.fastExtraMs()).toBe(5);
    expect(e.lastExtraMs()).toBe(10);
    expect(e.extraMs()).toBe(0); // median of 10 10 10 20
    expect(e.recentExtraMs(1)).toBe(10);
    expect(e.recentExtraMs(2)).toBe(5);
    e.add(5);
    expect(e.lastExtraMs()).toBe(0);
  });

  it('keeps the EWMA and window median consistent with their definitions on any input', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 60 }), fc.double({ min: 0.01, max: 1, noNaN: true }), (xs, alpha) => {
        const e = new LinkEstimator({ windowSize: 4, ewmaAlpha: alpha, baselineWarmup: 2 });
        let ewma = Number.NaN;
        let lowest = Infinity;
        let highest = -Infinity;
        xs.forEach((x, n) => {
          e.add(x);
          ewma = n === 0 ? x : ewma + alpha * (x - ewma);
          const w = xs.slice(Math.max(0, n - 3), n + 1).sort((a, b) => a - b);
          const m = w.length % 2 ? w[w.length >> 1] : (w[w.length / 2 - 1] + w[w.length / 2]) / 2;
          if (n + 1 >= 2) lowest = Math.min(lowest, m);
          if (n + 1 >= 2) highest = Math.max(highest, m);
          expect(e.medianMs()).toBe(m);
          expect(e.ewmaMs()).toBeCloseTo(ewma, 9);
          // The learned level is one of the levels the windows ran at or between them, never outside.
          if (n + 1 < 2) expect(e.baselineMs()).toBeNaN();
          else {
            expect(e.baselineMs()).toBeGreaterThanOrEqual(lowest);
            expect(e.baselineMs()).toBeLessThanOrEqual(highest);
          }
          expect(e.extraMs()).toBe(n + 1 >= 2 ? Math.max(0, m - e.baselineMs()) : 0);
        });
        expect(e.samples).toBe(xs.length);
      }),
      { numRuns: 200 },
    );
  });
});
