import fc from 'fast-check';
import { seededRandom } from './seeded-random';

describe('seededRandom', () => {
  it('repeats its sequence for the same seed and stays in [0, 1)', () => {
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const a = seededRandom(seed);
        const b = seededRandom(seed);
        for (let k = 0; k < 50; k++) {
          const x = a();
          expect(b()).toBe(x);
          expect(x).toBeGreaterThanOrEqual(0);
          expect(x).toBeLessThan(1);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('gives different sequences for different seeds', () => {
    const first = (seed: number): number[] => {
      const r = seededRandom(seed);
      return [r(), r(), r()];
    };
    expect(first(1)).not.toEqual(first(2));
  });

  it('looks uniform enough for random kicks (mean near 1/2)', () => {
    const r = seededRandom(42);
    let sum = 0;
    for (let k = 0; k < 10000; k++) sum += r();
    expect(sum / 10000).toBeGreaterThan(0.45);
    expect(sum / 10000).toBeLessThan(0.55);
  });
});
