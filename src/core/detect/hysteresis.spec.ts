import fc from 'fast-check';
import { Hysteresis } from './hysteresis';

/** Length of the run of equal values at the end of `xs` that equal `value`. */
function trailing(xs: boolean[], value: boolean): number {
  let n = 0;
  for (let i = xs.length - 1; i >= 0 && xs[i] === value; i--) n++;
  return n;
}

describe('Hysteresis', () => {
  it('flips exactly when K bad (or M good) observations in a row have been seen since the last flip', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }), fc.array(fc.boolean(), { maxLength: 200 }), (K, M, observations) => {
        const h = new Hysteresis(K, M);
        let sinceFlip: boolean[] = [];
        for (const bad of observations) {
          const wasActive = h.active;
          sinceFlip.push(bad);
          const flipped = h.update(bad);
          const need = wasActive ? M : K;
          const run = trailing(sinceFlip, !wasActive);
          // Never before the run is long enough, always as soon as it is.
          expect(flipped).toBe(run >= need);
          expect(h.active).toBe(flipped ? !wasActive : wasActive);
          if (flipped) sinceFlip = [];
        }
      }),
      { numRuns: 300 },
    );
  });

  it('reconfigured, keeps its state and streak: it flips as soon as the streak so far reaches the new threshold', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }), fc.array(fc.boolean(), { maxLength: 60 }), fc.array(fc.boolean(), { maxLength: 60 }), (K, M, K2, M2, first, then) => {
        const h = new Hysteresis(K, M);
        let sinceFlip: boolean[] = [];
        for (const bad of first) {
          sinceFlip.push(bad);
          if (h.update(bad)) sinceFlip = [];
        }
        const active = h.active;
        h.reconfigure(K2, M2);
        expect(h.active).toBe(active); // no flip at the reconfiguration itself
        for (const bad of then) {
          const wasActive = h.active;
          sinceFlip.push(bad);
          const flipped = h.update(bad);
          expect(flipped).toBe(trailing(sinceFlip, !wasActive) >= (wasActive ? M2 : K2));
          if (flipped) sinceFlip = [];
        }
      }),
      { numRuns: 300 },
    );
  });

  it('can fail: a fresh debouncer (the streak lost) flips later than the reconfigured one', () => {
    const h = new Hysteresis(5, 5);
    for (let k = 0; k < 3; k++) h.update(true);
    h.reconfigure(4, 5);
    const fresh = new Hysteresis(4, 5);
    expect([h.update(true), fresh.update(true)]).toEqual([true, false]);
    expect(() => h.reconfigure(0, 5)).toThrow(RangeError);
  });

  it('never flips on alternating bad/good noise when K, M >= 2', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 10 }), fc.integer({ min: 2, max: 10 }), fc.boolean(), fc.boolean(), fc.integer({ min: 1, max: 300 }), (K, M, startActive, firstBad, n) => {
        const h = new Hysteresis(K, M);
        h.force(startActive);
        for (let k = 0; k < n; k++) {
          expect(h.update(k % 2 === 0 ? firstBad : !firstBad)).toBe(false);
          expect(h.active).toBe(startActive);
        }
      }),
    );
  });

  it('force sets the state at once, reports a flip only on change, and restarts the count', () => {
    const h = new Hysteresis(3, 2);
    expect(h.update(true)).toBe(false);
    expect(h.update(true)).toBe(false);
    expect(h.force(true)).toBe(true);
    expect(h.active).toBe(true);
    expect(h.force(true)).toBe(false);
    expect(h.update(false)).toBe(false);
    expect(h.force(true)).toBe(false); // a new failure restarts the M count
    expect(h.update(false)).toBe(false);
    expect(h.update(false)).toBe(true);
    expect(h.active).toBe(false);
  });

  it('rejects counts that are not positive integers', () => {
    expect(() => new Hysteresis(0, 1)).toThrow(RangeError);
    expect(() => new Hysteresis(1, 1.5)).toThrow(RangeError);
  });

  it('enters after J severe observations in a row as well as after K bad ones; leaving ignores severity', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.constantFrom('good', 'bad', 'severe'), { maxLength: 200 }),
        (K, M, J, observations) => {
          const h = new Hysteresis(K, M, J);
          let sinceFlip: string[] = [];
          for (const o of observations) {
            const wasActive = h.active;
            sinceFlip.push(o);
            const flipped = h.update(o !== 'good', o === 'severe');
            const bad = sinceFlip.map((x) => x !== 'good');
            const expected = wasActive ? trailing(bad, false) >= M : trailing(bad, true) >= K || trailing(sinceFlip.map((x) => x === 'severe'), true) >= J;
            expect(flipped).toBe(expected);
            if (flipped) sinceFlip = [];
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is recovering while active with good observations counting towards leaveAfter, and not once a bad one comes back', () => {
    const h = new Hysteresis(1, 3);
    h.update(true);
    expect(h.recovering).toBe(false);
    h.update(false);
    expect(h.recovering).toBe(true);
    h.update(true);
    expect(h.recovering).toBe(false);
    h.update(false);
    h.update(false);
    h.update(false);
    expect(h.active).toBe(false);
    expect(h.recovering).toBe(false);
  });

  it('without the severe rule (J = K) one severe observation is not enough: the rule is what makes it enter', () => {
    const off = new Hysteresis(3, 5);
    const on = new Hysteresis(3, 5, 1);
    expect(off.update(true, true)).toBe(false);
    expect(on.update(true, true)).toBe(true);
    expect(() => new Hysteresis(3, 5, 0)).toThrow(RangeError);
  });
});
