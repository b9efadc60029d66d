import fc from 'fast-check';
import { bestSplit } from './best-split.planner';
import { bruteForceSplit } from './brute-force-split.util';
import { RebalanceProblem } from './rebalance-problem.type';

/** The least objective over all fitting splits, by enumeration (null: none fits). */
const bruteForce = (problem: RebalanceProblem): number | null => bruteForceSplit(problem)?.objectiveMs ?? null;

function uniform(stages: number, perStage: number, overrides: Partial<RebalanceProblem> = {}): RebalanceProblem {
  const L = stages * perStage;
  return {
    layers: { fMs: new Array(L).fill(1), bMs: new Array(L).fill(1), wMs: new Array(L).fill(1), stateBytes: new Array(L).fill(1e9), activationBytes: new Array(L).fill(1e8) },
    current: new Array(stages).fill(perStage),
    speed: new Array(stages).fill(1),
    microbatches: 32,
    deviceBytes: new Array(stages).fill(Infinity),
    minInflight: new Array(stages).fill(1),
    handoffBytesPerMs: 1e7, // 10 GB/s
    amortizeIterations: 1000,
    ...overrides,
  };
}

const problems = fc
  .record({ stages: fc.integer({ min: 1, max: 5 }), extra: fc.integer({ min: 0, max: 6 }) })
  .chain(({ stages, extra }) => {
    const L = stages + extra;
    const perLayer = (min: number, max: number) => fc.array(fc.double({ min, max, noNaN: true }), { minLength: L, maxLength: L });
    return fc.record({
      fMs: perLayer(0, 5),
      bMs: perLayer(0.1, 5),
      wMs: perLayer(0, 5),
      stateBytes: perLayer(0, 4e9),
      activationBytes: perLayer(0, 1e9),
      current: fc.constant(Array.from({ length: stages }, (_, s) => Math.floor(L / stages) + (s < L % stages ? 1 : 0))),
      speed: fc.array(fc.oneof(fc.constant(1), fc.double({ min: 0.5, max: 3, noNaN: true })), { minLength: stages, maxLength: stages }),
      microbatches: fc.integer({ min: 1, max: 64 }),
      deviceBytes: fc.array(fc.oneof(fc.constant(Infinity), fc.double({ min: 1e9, max: 2e10, noNaN: true })), { minLength: stages, maxLength: stages }),
      minInflight: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: stages, maxLength: stages }),
      handoffBytesPerMs: fc.oneof(fc.constant(Infinity), fc.double({ min: 1e5, max: 1e8, noNaN: true })),
      amortizeIterations: fc.oneof(fc.constant(Infinity), fc.integer({ min: 1, max: 10000 })),
    });
  })
  .map((r): RebalanceProblem => ({ ...r, layers: { fMs: r.fMs, bMs: r.bMs, wMs: r.wMs, stateBytes: r.stateBytes, activationBytes: r.activationBytes } }));

describe('bestSplit', () => {
  it('finds the least objective of all splits, or none when none fits (brute force, 1-5 stages, up to 11 layers)', () => {
    fc.assert(
      fc.property(problems, (problem) => {
        const found = bestSplit(problem);
        const expected = bruteForce(problem);
        if (expected === null) return found === null;
        return found !== null && found.exact && found.best.fits && Math.abs(found.best.objectiveMs - expected) <= 1e-9 * expected;
      }),
      { numRuns: 400, seed: 24 },
    );
  });

  it.each([
    // [what, problem, expected split]
    ['a healthy uniform job keeps its split', uniform(4, 3), [3, 3, 3, 3]],
    ['a stage 1.5x slower gives layers to its neighbours', uniform(4, 6, { speed: [1, 1.5, 1, 1] }), [7, 3, 7, 7]],
    ['free moves and no memory limit: the least bottleneck', uniform(4, 6, { speed: [1, 1.5, 1, 1], handoffBytesPerMs: Infinity }), [7, 3, 7, 7]],
    ['a move that does not pay back within the straggler stays put', uniform(4, 6, { speed: [1, 1.5, 1, 1], handoffBytesPerMs: 1e5, amortizeIterations: 10 }), [6, 6, 6, 6]],
    ['memory caps the neighbours: the slow stage keeps its layers', uniform(4, 6, { speed: [1, 1.5, 1, 1], deviceBytes: [6.7e9, Infinity, 6.7e9, 6.7e9] }), [6, 6, 6, 6]],
    ['memory caps one neighbour: the others take the layers', uniform(4, 6, { speed: [1, 1.5, 1, 1], deviceBytes: [6.7e9, Infinity, Infinity, Infinity] }), [6, 4, 7, 7]],
  ])('%s', (_what, problem, expected) => {
    const found = bestSplit(problem)!;
    expect(found.exact).toBe(true);
    expect(found.best.split).toEqual(expected);
    expect(found.best.objectiveMs).toBeCloseTo(bruteForce(problem)!, 9);
  });

  // How fast is bench:rebalance's to say (64 stages: 6-17 ms); no test asserts a duration.
  it('plans 64 stages of 4 layers with one slow rank exactly', () => {
    const problem = uniform(64, 4, { speed: Array.from({ length: 64 }, (_, s) => (s === 20 ? 1.5 : 1)), microbatches: 256 });
    const found = bestSplit(problem)!;
    expect(found.exact).toBe(true);
    expect(found.best.split[20]).toBeLessThan(4);
    expect(found.best.split.reduce((a, b) => a + b, 0)).toBe(256);
    expect(found.best.bottleneckMs).toBeLessThanOrEqual(15);
  });
});
