import { paceOf } from './rebalance-for-job';

/** Declared work 10 ms per stage; measured per stage as given. */
const declared = [10, 10, 10, 10];

describe('paceOf: the per-stage speeds a re-balance prices', () => {
  it('a stage with a slow rank at its own speed, the others at their common pace whatever their noise', () => {
    const speeds = paceOf([10.4, 9.7, 15, 10.1], declared, new Set([2]), 1.15);
    [1.01, 1.01, 1.5, 1.01].forEach((x, s) => expect(speeds[s]).toBeCloseTo(x, 12));
  });

  it('twin: the measured speeds as they are would rank splits by the healthy stages\' noise', () => {
    const speeds = paceOf([10.4, 9.7, 15, 10.1], declared, new Set([2]), 1.15);
    const asMeasured = [10.4, 9.7, 15, 10.1].map((m, s) => m / declared[s]);
    expect(new Set(asMeasured.filter((_, s) => s !== 2)).size).toBe(3);
    expect(new Set(speeds.filter((_, s) => s !== 2)).size).toBe(1);
  });

  it('a stage still standing out by computeSlowRatio keeps its own speed when its rank\'s flag let go', () => {
    expect(paceOf([10, 10, 14.5, 10], declared, new Set(), 1.15)).toEqual([1, 1, 1.45, 1]);
    // Within computeSlowRatio of the others it is noise: the common pace.
    expect(paceOf([10, 10, 11, 10], declared, new Set(), 1.15)).toEqual([1, 1, 1, 1]);
  });

  it('what every stage shares (a slower GPU than profiled) is kept; no measurement reads 1', () => {
    expect(paceOf([12, 12, 12, 12], declared, new Set(), 1.15)).toEqual([1.2, 1.2, 1.2, 1.2]);
    expect(paceOf([Number.NaN, Number.NaN, Number.NaN, Number.NaN], declared, new Set(), 1.15)).toEqual([1, 1, 1, 1]);
  });
});
