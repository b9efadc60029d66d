import fc from 'fast-check';
import { WPlacement } from '../engine/engine';
import { generateSchedule } from '../engine/generator';
import { arbProfile, exactlyOnceProblems } from '../engine/run-checks.spec';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { adaptiveWarmup } from './adaptive-planner';
import { iterationLowerBoundMs } from './lower-bound';
import { searchPlan } from './search-planner';

/** Reproducible: a cap on evaluations and no wall-clock budget. */
const DETERMINISTIC = { maxEvaluations: 40, timeBudgetMs: Infinity };

const arbCase = arbProfile({ maxStages: 5, maxMicrobatches: 12 }).chain((profile) =>
  fc.record({
    profile: fc.constant(profile),
    caps: fc.option(fc.array(fc.integer({ min: 1, max: 14 }), { minLength: profile.stages, maxLength: profile.stages }), { nil: undefined }),
    seed: fc.integer({ min: 0, max: 1000 }),
  }),
);

describe('searchPlan', () => {
  it('is deterministic with maxEvaluations and no time budget', () => {
    fc.assert(
      fc.property(arbCase, ({ profile, caps, seed }) => {
        const model = toPipelineModel(profile);
        const a = searchPlan(model, { ...DETERMINISTIC, inflightCaps: caps, seed });
        const b = searchPlan(model, { ...DETERMINISTIC, inflightCaps: caps, seed });
        expect(b.warmup).toEqual(a.warmup);
        expect(b.wPlacement).toEqual(a.wPlacement);
        expect(b.run.iterationMs).toBe(a.run.iterationMs);
        expect(b.evaluations).toBe(a.evaluations);
        expect(a.evaluations).toBeLessThanOrEqual(DETERMINISTIC.maxEvaluations);
      }),
      { numRuns: 40 },
    );
  });

  it('returns a valid warm-up within the caps, never worse than Alg. 2 under the same caps', () => {
    fc.assert(
      fc.property(arbCase, ({ profile, caps, seed }) => {
        const model = toPipelineModel(profile);
        const S = profile.stages;
        const N = profile.microbatches;
        const result = searchPlan(model, { ...DETERMINISTIC, inflightCaps: caps, seed });
        const effectiveCaps = (caps ?? Array(S).fill(N)).map((c) => Math.max(1, Math.min(N, c)));
        result.warmup.forEach((x, i) => {
          expect(Number.isInteger(x)).toBe(true);
          expect(x).toBeGreaterThanOrEqual(1);
          expect(x).toBeLessThanOrEqual(effectiveCaps[i]);
          if (i > 0) expect(x).toBeLessThanOrEqual(result.warmup[i - 1]);
        });
        // adaptiveIterationMs really is Alg. 2's plan under these caps.
        const adaptive = generateSchedule(model, { warmup: adaptiveWarmup(model, effectiveCaps) });
        expect(result.adaptiveIterationMs).toBe(adaptive.iterationMs);
        expect(result.run.iterationMs).toBeLessThanOrEqual(result.adaptiveIterationMs * (1 + 1e-6) + 1e-9);
        expect(result.run.iterationMs).toBeGreaterThanOrEqual(iterationLowerBoundMs(model) - 1e-6);
      }),
      { numRuns: 60 },
    );
  });

  it('is never worse than Alg. 2 at any evaluation budget, even one that stops among the seeds', () => {
    fc.assert(
      fc.property(arbCase, fc.integer({ min: 1, max: 8 }), ({ profile, caps, seed }, maxEvaluations) => {
        const result = searchPlan(toPipelineModel(profile), { maxEvaluations, timeBudgetMs: Infinity, inflightCaps: caps, seed });
        expect(result.evaluations).toBeLessThanOrEqual(maxEvaluations);
        expect(result.run.iterationMs).toBeLessThanOrEqual(result.adaptiveIterationMs * (1 + 1e-6) + 1e-9);
      }),
      { numRuns: 100 },
    );
  });

  it('returns the run of its own plan', () => {
    fc.assert(
      fc.property(arbCase, ({ profile, caps, seed }) => {
        const model = toPipelineModel(profile);
        const result = searchPlan(model, { ...DETERMINISTIC, inflightCaps: caps, seed });
        const again = generateSchedule(model, { warmup: result.warmup, inflightCap: result.warmup, wPlacement: result.wPlacement });
        expect(result.run.iterationMs).toBe(again.iterationMs);
        expect(result.run.order).toEqual(again.order);
        expect(exactlyOnceProblems(result.run.order, profile.stages, profile.microbatches)).toEqual([]);
        expect(result.wPlacement).toHaveLength(profile.stages);
        result.wPlacement.forEach((p) => expect([WPlacement.Lazy, WPlacement.Eager]).toContain(p));
      }),
      { numRuns: 40 },
    );
  });

  it('beats Alg. 2 where it leaves room (S = 3, N = 3, t = 10, 35 ms on link 1) and reaches the lower bound', () => {
    // Alg. 2 keeps Δ >= 1 on link 0 ([3, 2, 1]); giving link 1 all the slack ([3, 3, 1]) is better.
    const model = toPipelineModel(validateProfile({ stages: 3, microbatches: 3, fMs: [10, 10, 10], bMs: [10, 10, 10], wMs: [10, 10, 10], linkMs: [0, 35] }));
    const result = searchPlan(model, { maxEvaluations: 100, timeBudgetMs: Infinity });
    expect(result.run.iterationMs).toBeLessThan(result.adaptiveIterationMs);
    expect(result.run.iterationMs).toBe(iterationLowerBoundMs(model));
    expect(result.warmup).toEqual([3, 3, 1]);
  });

  it('stops at once when the injected clock says the budget is spent, returning Alg. 2\'s plan', () => {
    const model = toPipelineModel(validateProfile({ stages: 4, microbatches: 8, fMs: [10, 10, 10, 10], bMs: [10, 10, 10, 10], wMs: [10, 10, 10, 10], linkMs: [0, 30, 0] }));
    let clock = 100;
    const result = searchPlan(model, { timeBudgetMs: 0, now: () => clock++ });
    expect(result.evaluations).toBe(1);
    expect(result.warmup).toEqual(adaptiveWarmup(model));
    expect(result.run.iterationMs).toBe(result.adaptiveIterationMs);
    expect(result.elapsedMs).toBeGreaterThan(0); // measured with the injected clock
  });
});
