import fc from 'fast-check';
import { InputError } from '../../core/input-error';
import { DelayModel } from './delay-model.type';
import { dynamicDelay, DynamicDelayOptions, MAX_SEGMENTS_PER_LINK, PAPER_TRACES } from './dynamic-delay';

const paper = (trace: 'A' | 'B' | 'C', extra: Partial<DynamicDelayOptions> = {}): DynamicDelayOptions => ({
  links: [0, 1, 2, 3, 4, 5, 6],
  meanMs: 30,
  stdMs: 10,
  intervalMs: PAPER_TRACES[trace],
  seed: 1,
  ...extra,
});

interface Segment {
  start: number;
  end: number;
  value: number;
}

/**
 * Recovers a link's segments from the outside: a scan finer than the shortest interval sees every
 * change, and bisection then pins each change down to 1e-6 ms.
 */
function segments(model: DelayModel, link: number, untilMs: number, stepMs: number): Segment[] {
  const found: Segment[] = [];
  let start = 0;
  let value = model.delayMs(link, 0, 0);
  for (let t = stepMs; t <= untilMs; t += stepMs) {
    const v = model.delayMs(link, t, 0);
    if (v === value) continue;
    let a = t - stepMs;
    let b = t;
    while (b - a > 1e-6) {
      const mid = (a + b) / 2;
      if (model.delayMs(link, mid, 0) === value) a = mid;
      else b = mid;
    }
    found.push({ start, end: b, value });
    start = b;
    value = v;
  }
  return found;
}

function mean(xs: number[]): number {
  return xs.reduce((a, x) => a + x, 0) / xs.length;
}

describe('PAPER_TRACES', () => {
  it('holds the re-draw intervals of traces A, B and C from the paper (sec. 7.3)', () => {
    expect(PAPER_TRACES).toEqual({ A: [50, 100], B: [100, 200], C: [200, 400] });
  });
});

describe('dynamicDelay', () => {
  it('gives the same values for the same options and seed', () => {
    const a = dynamicDelay(paper('A', { seed: 7 }));
    const b = dynamicDelay(paper('A', { seed: 7 }));
    const c = dynamicDelay(paper('A', { seed: 8 }));
    let differs = 0;
    for (let t = 0; t < 20000; t += 37) {
      for (let link = 0; link < 7; link++) {
        expect(b.delayMs(link, t, 0)).toBe(a.delayMs(link, t, 0));
        if (c.delayMs(link, t, 0) !== a.delayMs(link, t, 0)) differs++;
      }
    }
    // Another seed is another trace.
    expect(differs).toBeGreaterThan(3000);
  });

  it('is a pure function of (link, time), whatever order calls come in (property)', () => {
    const query = fc.tuple(fc.integer({ min: 0, max: 3 }), fc.double({ min: -10, max: 60000, noNaN: true }));
    const queries = fc.array(query, { minLength: 1, maxLength: 40 });
    const arbitrary = queries.chain((qs) => fc.tuple(fc.constant(qs), fc.shuffledSubarray(qs, { minLength: qs.length, maxLength: qs.length }), fc.integer({ min: 0, max: 1000 })));
    fc.assert(
      fc.property(arbitrary, ([inOrder, shuffled, seed]) => {
        const options = paper('A', { links: [0, 1, 2, 3], seed });
        const first = dynamicDelay(options);
        const second = dynamicDelay(options);
        const answers = new Map<string, number>();
        for (const [link, t] of inOrder) answers.set(`${link}@${t}`, first.delayMs(link, t, 0));
        for (const [link, t] of shuffled) {
          expect(second.delayMs(link, t, 123)).toBe(answers.get(`${link}@${t}`));
          // A model that never saw another call agrees too.
          expect(dynamicDelay(options).delayMs(link, t, 0)).toBe(answers.get(`${link}@${t}`));
        }
        // Asking again after everything else changes nothing.
        for (const [link, t] of inOrder) expect(first.delayMs(link, t, 5)).toBe(answers.get(`${link}@${t}`));
      }),
      { numRuns: 150 },
    );
  });

  it.each(['A', 'B', 'C'] as const)('trace %s is piecewise constant with intervals within [lo, hi]', (trace) => {
    const [lo, hi] = PAPER_TRACES[trace];
    const model = dynamicDelay(paper(trace, { seed: 3 }));
    const found = segments(model, 2, 200 * hi, 5);
    expect(found.length).toBeGreaterThan(100);
    for (const s of found) {
      expect(s.end - s.start).toBeGreaterThanOrEqual(lo - 1e-5);
      expect(s.end - s.start).toBeLessThanOrEqual(hi + 1e-5);
      // Constant inside: probe a few points of the open segment.
      for (const f of [0.01, 0.5, 0.99]) expect(model.delayMs(2, s.start + f * (s.end - s.start), 0)).toBe(s.value);
    }
    // U(lo, hi) spreads over the whole range rather than sitting at one end.
    const lengths = found.map((s) => s.end - s.start);
    expect(Math.min(...lengths)).toBeLessThan(lo + 0.2 * (hi - lo));
    expect(Math.max(...lengths)).toBeGreaterThan(hi - 0.2 * (hi - lo));
    expect(mean(lengths)).toBeGreaterThan(lo + 0.4 * (hi - lo));
    expect(mean(lengths)).toBeLessThan(lo + 0.6 * (hi - lo));
  });

  it('draws values around N(30, 10): mean and spread over many segments', () => {
    const model = dynamicDelay(paper('A', { seed: 11 }));
    const values = segments(model, 0, 2500 * 75, 20).map((s) => s.value);
    expect(values.length).toBeGreaterThan(2000);
    const m = mean(values);
    const sd = Math.sqrt(mean(values.map((v) => (v - m) ** 2)));
    expect(m).toBeGreaterThan(28.5);
    expect(m).toBeLessThan(31.5);
    expect(sd).toBeGreaterThan(8.5);
    expect(sd).toBeLessThan(11.5);
  });

  it('never gives a negative delay, clipping negative draws to 0 (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1 << 30 }), fc.double({ min: -50, max: 50, noNaN: true }), (seed, meanMs) => {
        const model = dynamicDelay({ links: [0], meanMs, stdMs: 20, intervalMs: [50, 100], seed });
        for (let t = 0; t < 5000; t += 40) expect(model.delayMs(0, t, 0)).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 60 },
    );
    // Half the draws of N(0, 10) are negative: they become exactly 0, not |x|.
    const centred = dynamicDelay({ links: [0], meanMs: 0, stdMs: 10, intervalMs: [50, 100], seed: 4 });
    const values = segments(centred, 0, 200 * 75, 20).map((s) => s.value);
    const zeros = values.filter((v) => v === 0).length;
    expect(zeros).toBeGreaterThan(0.3 * values.length);
    expect(zeros).toBeLessThan(0.7 * values.length);
  });

  it('gives each link its own independent trace', () => {
    const model = dynamicDelay(paper('A', { seed: 5 }));
    const a = segments(model, 0, 2000 * 75, 20);
    const b = segments(model, 1, 2000 * 75, 20);
    // Different change times...
    const endsA = new Set(a.map((s) => s.end.toFixed(3)));
    expect(b.filter((s) => endsA.has(s.end.toFixed(3))).length).toBeLessThan(5);
    // ...and values uncorrelated at the same times.
    const xs: number[] = [];
    const ys: number[] = [];
    for (let t = 0; t < 2000 * 75; t += 75) {
      xs.push(model.delayMs(0, t, 0));
      ys.push(model.delayMs(1, t, 0));
    }
    const mx = mean(xs);
    const my = mean(ys);
    const cov = mean(xs.map((x, k) => (x - mx) * (ys[k] - my)));
    const r = cov / Math.sqrt(mean(xs.map((x) => (x - mx) ** 2)) * mean(ys.map((y) => (y - my) ** 2)));
    expect(Math.abs(r)).toBeLessThan(0.1);
    // A link's trace does not depend on which other links are listed.
    const alone = dynamicDelay(paper('A', { seed: 5, links: [1] }));
    for (let t = 0; t < 10000; t += 13) expect(alone.delayMs(1, t, 0)).toBe(model.delayMs(1, t, 0));
  });

  it('leaves unlisted links at 0, ignores the iteration and never fails the NIC', () => {
    const model = dynamicDelay(paper('B', { links: [0, 3] }));
    let positive = 0;
    for (let t = 0; t < 5000; t += 10) {
      expect(model.delayMs(1, t, 0)).toBe(0);
      expect(model.delayMs(7, t, 0)).toBe(0);
      expect(model.delayMs(3, t, 99)).toBe(model.delayMs(3, t, 0));
      if (model.delayMs(3, t, 0) > 0) positive++;
      expect(model.nicFailed(0, t)).toBe(false);
    }
    expect(positive).toBeGreaterThan(400);
    expect(model.suggestedIterations).toBeUndefined();
  });

  it('treats times before 0 as the first segment and rejects non-finite times', () => {
    const model = dynamicDelay(paper('A'));
    expect(model.delayMs(0, -5, 0)).toBe(model.delayMs(0, 0, 0));
    expect(() => model.delayMs(0, NaN, 0)).toThrow(RangeError);
    expect(() => model.delayMs(0, Infinity, 0)).toThrow(RangeError);
  });

  it('caps the segments a link keeps instead of growing without bound', () => {
    expect(MAX_SEGMENTS_PER_LINK).toBeGreaterThanOrEqual(1_000_000);
    const options = paper('C', { links: [0], maxSegmentsPerLink: 1000 });
    const model = dynamicDelay(options);
    // Trace C averages 300 ms a segment: 1e7 ms would need over 30000 segments.
    expect(() => model.delayMs(0, 1e7, 0)).toThrow(/more than 1000 segments/);
    // 1000 segments last at least 200 s: times within them still work after the refusal, and agree with an uncapped model.
    expect(model.delayMs(0, 150000, 0)).toBe(dynamicDelay(paper('C', { links: [0] })).delayMs(0, 150000, 0));
  });

  it('rejects bad options', () => {
    expect(() => dynamicDelay(paper('A', { intervalMs: [0, 100] }))).toThrow(InputError);
    expect(() => dynamicDelay(paper('A', { intervalMs: [100, 50] }))).toThrow(/interval/);
    expect(() => dynamicDelay(paper('A', { stdMs: -1 }))).toThrow(/standard deviation/);
    expect(() => dynamicDelay(paper('A', { meanMs: NaN }))).toThrow(/mean/);
    expect(() => dynamicDelay(paper('A', { seed: 1.5 }))).toThrow(/seed/);
    expect(() => dynamicDelay(paper('A', { links: [0, -1] }))).toThrow(/link -1/);
    expect(() => dynamicDelay(paper('A', { maxSegmentsPerLink: 0 }))).toThrow(/segment cap/);
  });
});
