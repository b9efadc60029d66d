/**
 * The paper's delay analysis (sec. 3.1 Fig. 4/5, sec. 4.1 Theorem 1 and Eq. 1, sec. 4.2 Alg. 2),
 * checked on the exact engine with uniform times t^F = t^B = t^W = t.
 */
import fc from 'fast-check';
import { generateSchedule } from '../engine/generator';
import { summarizeRun } from '../engine/simulation-report';
import { simulateSchedule } from '../engine/simulator';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { linkTolerance } from './link-tolerance';
import { planPipeline } from './plan';

const T = 10;

/** S stages, N microbatches, all ops t ms, a delay of `delayMs` on one link (0 elsewhere), optional device memory for `fits` activations. */
function uniformModel(S: number, N: number, delay: { link: number; ms: number } = { link: 0, ms: 0 }, fits?: number): PipelineModel {
  const linkMs = Array(S - 1).fill(0);
  if (S > 1) linkMs[delay.link] = delay.ms;
  const t = Array(S).fill(T);
  const memory = fits ? { afterF: Array(S).fill(2), afterB: Array(S).fill(-1), afterW: Array(S).fill(-1), limit: Array(S).fill(2 * fits) } : undefined;
  return toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs: t, bMs: t, wMs: t, linkMs, memory }));
}

/** Uniform slackness Δ on every link: x_i = 1 + (S - 1 - i) Δ. */
function uniformWarmup(S: number, delta: number): number[] {
  return Array.from({ length: S }, (_, i) => 1 + (S - 1 - i) * delta);
}

/** Extra iteration time when the healthy schedule (planned without delay) is replayed under `delay`. */
function replayCost(S: number, N: number, warmup: number[], delay: { link: number; ms: number }): number {
  const healthy = generateSchedule(uniformModel(S, N), { warmup });
  return simulateSchedule(uniformModel(S, N, delay), healthy.order).iterationMs - healthy.iterationMs;
}

describe('Fig. 4 and Fig. 5: S = 4, N = 12, t = 10, warm-up [7, 5, 3, 1]', () => {
  const warmup = [7, 5, 3, 1];
  const healthy = generateSchedule(uniformModel(4, 12), { warmup });

  it('the healthy ZeroBubble schedule takes 390 ms', () => {
    expect(healthy.iterationMs).toBe(390);
    // Only the unavoidable ramp: 4 stages x 30 ms of fill/drain idle time each.
    expect(summarizeRun(healthy, uniformModel(4, 12).durations).stageIdleMs).toEqual([30, 30, 30, 30]);
  });

  it('replayed under 10 ms on link 0 takes 400 ms (delay absorbed)', () => {
    expect(simulateSchedule(uniformModel(4, 12, { link: 0, ms: 10 }), healthy.order).iterationMs).toBe(400);
  });

  it('replayed under 20 ms on link 0 takes 440 ms (cascading bubbles)', () => {
    expect(simulateSchedule(uniformModel(4, 12, { link: 0, ms: 20 }), healthy.order).iterationMs).toBe(440);
  });
});

describe('Theorem 1: delay resilience of slackness Δ', () => {
  it('case 1, replaying the healthy Δ = 2 schedule: a delay c <= (Δ - 1) t on any link costs at most c', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 5 }).chain((S) =>
          fc.record({
            S: fc.constant(S),
            N: fc.integer({ min: 1 + 2 * (S - 1), max: 30 }),
            link: fc.integer({ min: 0, max: S - 2 }),
            c: fc.oneof(fc.constant(T), fc.double({ min: 0, max: T, noNaN: true })),
          }),
        ),
        ({ S, N, link, c }) => {
          const cost = replayCost(S, N, uniformWarmup(S, 2), { link, ms: c });
          expect(cost).toBeGreaterThanOrEqual(-1e-9);
          expect(cost).toBeLessThanOrEqual(c + 1e-6);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('case 2, replaying the healthy Δ = 2 schedule: a delay c > (Δ - 1) t costs more than c, growing with N', () => {
    for (const c of [15, 20, 30]) {
      const costs = [12, 24, 48].map((N) => replayCost(4, N, [7, 5, 3, 1], { link: 0, ms: c }));
      expect(costs[0]).toBeGreaterThan(c);
      expect(costs[1]).toBeGreaterThan(costs[0]);
      expect(costs[2]).toBeGreaterThan(costs[1]);
    }
  });

  it('re-generating with the delay known keeps the cost at c for c <= (Δ - 1) t, for Δ = 2..4', () => {
    fc.assert(
      fc.property(
        fc.record({ S: fc.integer({ min: 2, max: 5 }), delta: fc.integer({ min: 2, max: 4 }) }).chain(({ S, delta }) =>
          fc.record({
            S: fc.constant(S),
            delta: fc.constant(delta),
            N: fc.integer({ min: 1 + delta * (S - 1), max: 30 }),
            link: fc.integer({ min: 0, max: S - 2 }),
            c: fc.oneof(fc.constant((delta - 1) * T), fc.double({ min: 0, max: (delta - 1) * T, noNaN: true })),
          }),
        ),
        ({ S, delta, N, link, c }) => {
          const warmup = uniformWarmup(S, delta);
          const healthy = generateSchedule(uniformModel(S, N), { warmup }).iterationMs;
          const slow = generateSchedule(uniformModel(S, N, { link, ms: c }), { warmup }).iterationMs;
          expect(slow - healthy).toBeLessThanOrEqual(c + 1e-6);
          // And linkTolerance agrees that Eq. 1 holds on that link.
          expect(linkTolerance(uniformModel(S, N, { link, ms: c }), warmup)[link].absorbed).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('linkTolerance gives (Δ - 1) t for uniform times and flips `absorbed` exactly there', () => {
    for (const delta of [1, 2, 3, 4]) {
      const warmup = uniformWarmup(4, delta);
      const threshold = (delta - 1) * T;
      const at = (c: number) => linkTolerance(uniformModel(4, 24, { link: 1, ms: c }), warmup)[1];
      expect(at(0).toleranceMs).toBe(threshold);
      expect(at(threshold).absorbed).toBe(true);
      expect(at(threshold + 1e-6).absorbed).toBe(false);
    }
  });
});

describe('Alg. 2 absorbs what the uniform initial plan cannot (S = 4, N = 24, t = 10, 35 ms on link 2)', () => {
  const delay = { link: 2, ms: 35 };
  // Device memory for 7 activations per stage: Alg. 1 gives [7, 5, 3, 1], Δ = 2, tolerating only 10 ms.
  const healthyDevice = uniformModel(4, 24, undefined, 7);
  const slowDevice = uniformModel(4, 24, delay, 7);

  it('the initial plan has Δ = 2 and does not absorb 35 ms', () => {
    const initial = planPipeline(slowDevice, { policy: 'initial' });
    expect(initial.warmup).toEqual([7, 5, 3, 1]);
    expect(linkTolerance(slowDevice, initial.warmup)[2]).toMatchObject({ slackness: 2, toleranceMs: 10, absorbed: false });
  });

  it('the adaptive plan absorbs it on link 2 and runs faster than the initial plan, re-generated or replayed', () => {
    const adaptive = planPipeline(slowDevice, { policy: 'adaptive' });
    expect(linkTolerance(slowDevice, adaptive.warmup)[2].absorbed).toBe(true);
    const regenerated = planPipeline(slowDevice, { policy: 'initial' }).run.iterationMs;
    const replayed = simulateSchedule(slowDevice, planPipeline(healthyDevice, { policy: 'initial' }).run.order).iterationMs;
    expect(adaptive.run.iterationMs).toBeLessThan(regenerated);
    expect(adaptive.run.iterationMs).toBeLessThan(replayed);
    // Absorbed means the straggler costs only its own 35 ms over the healthy 750 ms.
    const healthy = planPipeline(uniformModel(4, 24), { policy: 'adaptive' }).run.iterationMs;
    expect(healthy).toBe(750);
    expect(adaptive.run.iterationMs).toBe(750 + 35);
  });
});
