import { readFileSync } from 'fs';
import { join } from 'path';
import fc from 'fast-check';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { deviceInflightCaps, initialWarmup, uniformSlacknessWarmup } from './initial-planner';

const MEGATRON_PROFILE = join(__dirname, '../../../bench/profiles/megatron-gpt-8stage-32mb.json');

function minSlackness(warmup: readonly number[]): number {
  let min = Infinity;
  for (let i = 0; i + 1 < warmup.length; i++) min = Math.min(min, warmup[i] - warmup[i + 1]);
  return min;
}

/** Brute force: the largest min slackness of any non-increasing vector with 1 <= x_i <= min(N, caps[i]). */
function bestMinSlackness(microbatches: number, caps: readonly number[]): number {
  const S = caps.length;
  let best = -Infinity;
  const x = new Array<number>(S);
  const visit = (i: number, upper: number): void => {
    if (i === S) {
      best = Math.max(best, minSlackness(x));
      return;
    }
    for (let v = 1; v <= Math.min(upper, caps[i], microbatches); v++) {
      x[i] = v;
      visit(i + 1, v);
    }
  };
  visit(0, Infinity);
  return best;
}

describe('uniformSlacknessWarmup (Alg. 1 for a given x_0)', () => {
  it('spreads x_0 - 1 as evenly as possible, larger shares upstream', () => {
    expect(uniformSlacknessWarmup(4, 7)).toEqual([7, 5, 3, 1]);
    expect(uniformSlacknessWarmup(4, 9)).toEqual([9, 6, 3, 1]); // 8 = 3 + 3 + 2
    expect(uniformSlacknessWarmup(3, 1)).toEqual([1, 1, 1]);
    expect(uniformSlacknessWarmup(1, 5)).toEqual([5]);
  });

  it('always ends at 1, with slackness values differing by at most one and non-increasing downstream', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 16 }), fc.integer({ min: 1, max: 200 }), (S, x0) => {
        const w = uniformSlacknessWarmup(S, x0);
        expect(w).toHaveLength(S);
        expect(w[0]).toBe(x0);
        expect(w[S - 1]).toBe(1);
        const deltas = w.slice(1).map((x, i) => w[i] - x);
        expect(Math.max(...deltas) - Math.min(...deltas)).toBeLessThanOrEqual(1);
        deltas.forEach((d, i) => i > 0 && expect(d).toBeLessThanOrEqual(deltas[i - 1]));
      }),
      { numRuns: 150 },
    );
  });
});

describe('deviceInflightCaps', () => {
  it('is floor(limit / afterF) per stage for the Megatron profile', () => {
    const model = toPipelineModel(validateProfile(JSON.parse(readFileSync(MEGATRON_PROFILE, 'utf8'))));
    expect(deviceInflightCaps(model)).toEqual([21, 16, 16, 16, 16, 16, 16, 18]);
  });

  it('is N without a memory profile and never exceeds N', () => {
    const shape = { stages: 2, microbatches: 5, fMs: [1, 1], bMs: [1, 1], wMs: [1, 1], linkMs: [0] };
    expect(deviceInflightCaps(toPipelineModel(validateProfile(shape)))).toEqual([5, 5]);
    const roomy = { ...shape, memory: { afterF: [1, 3], afterB: [-1, -1], afterW: [0, -2], limit: [100, 9] } };
    expect(deviceInflightCaps(toPipelineModel(validateProfile(roomy)))).toEqual([5, 3]);
  });

  it('counts an exact fit despite rounding (0.3 / 0.1 is 2.9999999999999996)', () => {
    const shape = { stages: 1, microbatches: 8, fMs: [1], bMs: [1], wMs: [1], linkMs: [], memory: { afterF: [0.1], afterB: [-0.05], afterW: [-0.05], limit: [0.3] } };
    expect(deviceInflightCaps(toPipelineModel(validateProfile(shape)))).toEqual([3]);
  });
});

describe('initialWarmup (Alg. 1 under per-stage caps)', () => {
  it('gives the Megatron profile [19,16,13,10,7,5,3,1]', () => {
    expect(initialWarmup(8, 32, [21, 16, 16, 16, 16, 16, 16, 18])).toEqual([19, 16, 13, 10, 7, 5, 3, 1]);
  });

  it('gives a single stage one warm-up forward', () => {
    expect(initialWarmup(1, 10, [10])).toEqual([1]);
  });

  it('is [7,5,3,1] for S = 4 with room for 7 microbatches everywhere', () => {
    expect(initialWarmup(4, 24, [7, 7, 7, 7])).toEqual([7, 5, 3, 1]);
    expect(initialWarmup(4, 6, [24, 24, 24, 24])).toEqual([6, 4, 2, 1]); // N binds first: 5 = 2 + 2 + 1
  });

  const arbCaps = fc.tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 12 })).chain(([S, N]) =>
    fc.array(fc.integer({ min: 1, max: 12 }), { minLength: S, maxLength: S }).map((caps) => ({ S, N, caps })),
  );

  it('ends at 1, never increases, and stays within caps and N', () => {
    fc.assert(
      fc.property(arbCaps, ({ S, N, caps }) => {
        const w = initialWarmup(S, N, caps);
        expect(w).toHaveLength(S);
        expect(w[S - 1]).toBe(1);
        w.forEach((x, i) => {
          expect(Number.isInteger(x)).toBe(true);
          expect(x).toBeGreaterThanOrEqual(1);
          expect(x).toBeLessThanOrEqual(Math.min(N, caps[i]));
          if (i > 0) expect(x).toBeLessThanOrEqual(w[i - 1]);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('takes the largest x_0 whose Alg. 1 plan fits every cap', () => {
    // x_0 = 7 would need x_1 = 4 > 3; x_0 = 6 gives [6, 3, 1] (and not [5, 3, 1], which has the same min Δ).
    expect(initialWarmup(3, 12, [7, 3, 12])).toEqual([6, 3, 1]);
    fc.assert(
      // S = 1 is the documented exception: x_0 = 1, the least memory.
      fc.property(arbCaps.filter(({ S }) => S > 1), ({ S, N, caps }) => {
        const x0 = initialWarmup(S, N, caps)[0];
        for (let larger = x0 + 1; larger <= Math.min(N, caps[0]); larger++) {
          expect(uniformSlacknessWarmup(S, larger).every((x, i) => x <= caps[i])).toBe(false);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('maximises the minimum slackness: brute force finds no better vector (S <= 5, caps <= 12)', () => {
    fc.assert(
      fc.property(
        arbCaps.filter(({ S }) => S > 1),
        ({ S, N, caps }) => {
          expect(minSlackness(initialWarmup(S, N, caps))).toBe(bestMinSlackness(N, caps));
        },
      ),
      { numRuns: 150 },
    );
  });
});
