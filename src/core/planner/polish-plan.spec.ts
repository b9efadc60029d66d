import fc from 'fast-check';
import { simulateSchedule } from '../engine/simulator';
import { arbProfile, exactlyOnceProblems } from '../engine/run-checks.spec';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { warmupOf } from '../pipeline/schedule';
import { iterationLowerBoundMs } from './lower-bound';
import { planPipeline } from './plan';
import { polishPlan } from './polish-plan';

/** Engine bench instance #17 (times rounded to 0.1 ms): the search stops at 493.9 ms, the optimum is lower. */
const BENCH_17 = validateProfile({
  stages: 6,
  microbatches: 8,
  fMs: [14.2, 12.4, 14.9, 7.8, 7.3, 13.7],
  bMs: [14.4, 5.5, 10, 8.7, 5.3, 12.5],
  wMs: [7.5, 14.8, 18.8, 12.5, 19.3, 16.4],
  linkMs: [80.4, 0.5, 0.5, 0.5, 0.5],
});
const SEARCH = { maxEvaluations: 400, timeBudgetMs: Infinity };

describe('polishPlan', () => {
  it('finds below the generator space where the search stops (bench #17: 493.9 ms -> below 490 ms, above the lower bound)', () => {
    const model = toPipelineModel(BENCH_17);
    const searched = planPipeline(model, { policy: 'search', search: { ...SEARCH, polishNodes: 0 } });
    expect(searched.run.iterationMs).toBeCloseTo(493.9, 1);
    const polished = polishPlan(model, searched.run);
    expect(polished.improved).toBe(true);
    expect(polished.run.iterationMs).toBeLessThan(490);
    expect(polished.run.iterationMs).toBeGreaterThanOrEqual(iterationLowerBoundMs(model) - 1e-9);
    // The search policy polishes by default, and its plan is the polished one.
    const plan = planPipeline(model, { policy: 'search', search: SEARCH });
    expect(plan.run.iterationMs).toBe(polished.run.iterationMs);
    expect(plan.warmup).toEqual(warmupOf(plan.run.order));
  });

  it('never returns worse, replays to its own time, holds every op once and stays within the in-flight caps', () => {
    const arb = arbProfile({ maxStages: 4, maxMicrobatches: 8 }).chain((profile) =>
      fc.record({ profile: fc.constant(profile), caps: fc.option(fc.array(fc.integer({ min: 1, max: 8 }), { minLength: profile.stages, maxLength: profile.stages }), { nil: undefined }) }),
    );
    fc.assert(
      fc.property(arb, ({ profile, caps }) => {
        const model = toPipelineModel(profile);
        const start = planPipeline(model, { policy: 'search', hostInflightCaps: caps, search: { maxEvaluations: 20, timeBudgetMs: Infinity, polishNodes: 0 } }).run;
        const { run } = polishPlan(model, start, { maxNodes: 500, inflightCaps: caps });
        expect(run.iterationMs).toBeLessThanOrEqual(start.iterationMs);
        expect(simulateSchedule(model, run.order).iterationMs).toBe(run.iterationMs);
        expect(exactlyOnceProblems(run.order, model.stages, model.microbatches)).toEqual([]);
        if (caps) caps.forEach((cap, s) => expect(run.peakInflight[s]).toBeLessThanOrEqual(Math.max(cap, start.peakInflight[s])));
      }),
      { numRuns: 40 },
    );
  });

  it('the cap check can fail: unbounded, the polish holds more in flight than a tight cap allows', () => {
    const model = toPipelineModel(BENCH_17);
    const searched = planPipeline(model, { policy: 'search', search: { ...SEARCH, polishNodes: 0 } }).run;
    const caps = Array.from(searched.peakInflight);
    const free = polishPlan(model, searched);
    expect(free.run.peakInflight.some((x, s) => x > caps[s])).toBe(true);
    const capped = polishPlan(model, searched, { inflightCaps: caps });
    capped.run.peakInflight.forEach((x, s) => expect(x).toBeLessThanOrEqual(caps[s]));
  });

  it('plans by nodes: the same plan whatever the clock does while the safety cap does not fire; a fired cap says so', () => {
    const model = toPipelineModel(BENCH_17);
    const start = planPipeline(model, { policy: 'search', search: { ...SEARCH, polishNodes: 0 } }).run;
    let slow = 0;
    const a = polishPlan(model, start, { now: () => (slow += 3), deadline: Number.POSITIVE_INFINITY });
    const b = polishPlan(model, start);
    expect(a.run.order).toEqual(b.run.order);
    expect(a.timedOut).toBe(false);
    let clock = 0;
    const cut = polishPlan(model, start, { now: () => clock++, deadline: 0 });
    expect(cut.timedOut).toBe(true);
    expect(cut.run).toBe(start);
    expect(polishPlan(model, start, { maxNodes: 0 }).run).toBe(start);
  });

  it('a pipeline with more ops than the call stack holds (16 x 64) is polished as far as it goes, not crashed', () => {
    const model = toPipelineModel(
      validateProfile({
        stages: 16,
        microbatches: 64,
        fMs: [15.9, 13.2, 16.3, 19.7, 13.4, 17.3, 11.4, 14.6, 16.1, 13.3, 9.7, 8.6, 5.1, 5.4, 19.2, 17.5],
        bMs: [14.5, 5.2, 14.3, 13.9, 15.8, 19.9, 9.2, 19.8, 14.7, 17.1, 14.4, 17.5, 7.1, 19.9, 12.6, 13.5],
        wMs: [7.4, 10.9, 8.2, 17.2, 17.9, 16, 14.9, 19.9, 14.1, 16, 19.3, 12.3, 8.4, 13.8, 16.9, 17.8],
        linkMs: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 49.4, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
      }),
    );
    const start = planPipeline(model, { policy: 'search', search: { maxEvaluations: 20, timeBudgetMs: Infinity, polishNodes: 0 } }).run;
    const { run } = polishPlan(model, start);
    expect(run.iterationMs).toBeLessThanOrEqual(start.iterationMs);
  }, 30000); // under Jest each stack overflow formats a deep stack trace: seconds, not the 0.5 s of a plain process
});
