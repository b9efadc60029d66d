import fc from 'fast-check';
import { medianInPlace } from './median-select';

// x + 0 turns -0 into 0: the two compare equal, so their order after sorting is arbitrary.
describe('medianInPlace', () => {
  it('equals the median of the sorted prefix and only permutes it', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.double({ min: -1e9, max: 1e9, noNaN: true }), fc.integer({ min: 0, max: 4 })).map((x) => x + 0), { maxLength: 200 }), fc.nat(5), (xs, tail) => {
        const values = Float64Array.from([...xs, ...new Array(tail).fill(-1e12)]);
        const sorted = xs.slice().sort((a, b) => a - b);
        const mid = sorted.length >> 1;
        const expected = sorted.length === 0 ? Number.NaN : sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
        expect(medianInPlace(values, xs.length)).toBe(expected);
        expect(Array.from(values.subarray(0, xs.length)).sort((a, b) => a - b)).toEqual(sorted);
        expect(Array.from(values.subarray(xs.length))).toEqual(new Array(tail).fill(-1e12)); // beyond count untouched
      }),
      { numRuns: 500 },
    );
  });
});
