import fc from 'fast-check';
import { simulateSchedule } from '../engine/simulator';
import { arbProfile, exactlyOnceProblems } from '../engine/run-checks.spec';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { warmupOf } from '../pipeline/schedule';
import { iterationLowerBoundMs } from './lower-bound';
import { planPipeline } from './plan';
import { polishNodesFor, polishPlan } from './polish-plan';

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

  it('scales the node budget with the job: as given up to 6 x 12, shrunk above, none where it cannot reach a complete schedule', () => {
    const shape = (stages: number, microbatches: number) => ({ stages, microbatches }) as PipelineModel;
    expect(polishNodesFor(shape(6, 12), 5000)).toBe(5000);
    expect(polishNodesFor(shape(8, 16), 5000)).toBe(Math.floor((5000 * 216) / 384));
    expect(polishNodesFor(shape(16, 64), 5000)).toBe(0);
    expect(polishNodesFor(shape(4, 8), 0)).toBe(0);
    // A job the budget cannot reach is returned as given without a round, whatever the clock.
    const model = toPipelineModel(validateProfile({ stages: 16, microbatches: 64, fMs: Array(16).fill(10), bMs: Array(16).fill(12), wMs: Array(16).fill(8), linkMs: [...Array(7).fill(0.5), 50, ...Array(7).fill(0.5)] }));
    const start = planPipeline(model, { policy: '1f1b' }).run;
    const result = polishPlan(model, start, { now: () => 0, deadline: Number.POSITIVE_INFINITY });
    expect(result.rounds).toBe(0);
    expect(result.run).toBe(start);
  });
});
