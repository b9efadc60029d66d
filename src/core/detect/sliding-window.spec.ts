import fc from 'fast-check';
import { SlidingWindow } from './sliding-window';

function referenceMedian(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = values.slice().sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const sample = fc.oneof(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: -3, max: 3 })).map((x) => x + 0); // integers make ties; + 0 folds -0 into 0 for toBe

describe('SlidingWindow', () => {
  it('matches the median of the last `capacity` samples, sorted from scratch, after every add', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(sample, { maxLength: 120 }), (capacity, xs) => {
        const window = new SlidingWindow(capacity);
        expect(window.median()).toBeNaN();
        xs.forEach((x, n) => {
          window.add(x);
          const kept = xs.slice(Math.max(0, n + 1 - capacity), n + 1);
          expect(window.size).toBe(kept.length);
          expect(window.median()).toBe(referenceMedian(kept));
        });
      }),
      { numRuns: 300 },
    );
  });

  it('gives the median of the newest k samples', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(sample, { maxLength: 60 }), fc.integer({ min: 0, max: 15 }), (capacity, xs, k) => {
        const window = new SlidingWindow(capacity);
        xs.forEach((x) => window.add(x));
        const kept = xs.slice(Math.max(0, xs.length - capacity));
        expect(window.recentMedian(k)).toBe(referenceMedian(kept.slice(Math.max(0, kept.length - k))));
        expect(window.median()).toBe(referenceMedian(kept)); // reading the recent median leaves the window alone
      }),
      { numRuns: 300 },
    );
  });

  it('resizes in place keeping the newest samples: then it goes on exactly as a window of the new size fed them', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 16 }), fc.array(sample, { maxLength: 60 }), fc.array(sample, { maxLength: 40 }), (from, to, before, after) => {
        const window = new SlidingWindow(from);
        before.forEach((x) => window.add(x));
        const held = window.samples();
        expect(held).toEqual(before.slice(Math.max(0, before.length - from)));
        window.resize(to);
        // Nothing newer than what it held is lost, nothing is made up: the newest min(held, to).
        const kept = held.slice(Math.max(0, held.length - to));
        expect(window.samples()).toEqual(kept);
        expect(window.capacity).toBe(to);
        const fresh = new SlidingWindow(to);
        kept.forEach((x) => fresh.add(x));
        expect(window.median()).toBe(fresh.median());
        for (const x of after) {
          window.add(x);
          fresh.add(x);
          expect(window.samples()).toEqual(fresh.samples());
          expect(window.median()).toBe(fresh.median());
          expect(window.recentMedian(3)).toBe(fresh.recentMedian(3));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('can fail: the resize check tells a window that kept its oldest samples', () => {
    const window = new SlidingWindow(4);
    [1, 2, 3, 4].forEach((x) => window.add(x));
    window.resize(2);
    expect(window.samples()).toEqual([3, 4]);
    expect(window.samples()).not.toEqual([1, 2]);
    expect(() => window.resize(0)).toThrow(RangeError);
  });

  it('evicts oldest first: a burst older than the window no longer counts', () => {
    const window = new SlidingWindow(3);
    for (const x of [100, 100, 100, 1, 2, 3]) window.add(x);
    expect(window.median()).toBe(2);
    expect(window.size).toBe(3);
  });

  it('drops NaN instead of corrupting the order', () => {
    const window = new SlidingWindow(4);
    window.add(3);
    window.add(Number.NaN);
    window.add(1);
    expect(window.size).toBe(2);
    expect(window.median()).toBe(2);
  });

  it('recentQuantile and shifted match a sort of the newest samples from scratch, after every add', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(sample, { maxLength: 60 }), fc.integer({ min: 1, max: 25 }), fc.integer({ min: 0, max: 25 }), fc.double({ min: 0, max: 1, noNaN: true }), (capacity, xs, k, m, q) => {
        const window = new SlidingWindow(capacity);
        xs.forEach((x, n) => {
          window.add(x);
          const kept = xs.slice(Math.max(0, n + 1 - capacity), n + 1);
          const newest = kept.slice(Math.max(0, kept.length - k)).sort((a, b) => a - b);
          expect(window.recentQuantile(k, q)).toBe(newest[Math.floor(q * (newest.length - 1))]);
          const older = kept.slice(Math.max(0, kept.length - newest.length - m), kept.length - newest.length);
          const moved = older.length > 0 && (Math.min(...newest) > Math.max(...older) || Math.max(...newest) < Math.min(...older));
          expect(window.shifted(k, m)).toBe(moved);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('shifted: a step is a shift once every newest sample is past the older ones, and one sample inside their range is not', () => {
    const window = new SlidingWindow(16);
    for (const x of [30, 22, 41, 35, 28, 39, 33]) window.add(x);
    for (const x of [60, 62]) window.add(x);
    expect(window.shifted(3, 7)).toBe(false); // 39 is among the newest three
    window.add(61);
    expect(window.shifted(3, 7)).toBe(true);
    window.add(40);
    expect(window.shifted(3, 7)).toBe(false);
  });

  it('rejects a capacity that is not a positive integer', () => {
    expect(() => new SlidingWindow(0)).toThrow(RangeError);
    expect(() => new SlidingWindow(2.5)).toThrow(RangeError);
  });
});
