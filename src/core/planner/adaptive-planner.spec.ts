import fc from 'fast-check';
import { arbProfile } from '../engine/run-checks.spec';
import { generateSchedule } from '../engine/generator';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { adaptiveWarmup, MIN_ADAPTIVE_SLACKNESS } from './adaptive-planner';
import { linkTolerance, requiredSlackness } from './link-tolerance';

function uniformModel(S: number, N: number, t: number, linkMs: number[] = Array(S - 1).fill(0)): PipelineModel {
  return toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs: Array(S).fill(t), bMs: Array(S).fill(t), wMs: Array(S).fill(t), linkMs }));
}

/** Valid for the generator: S integers in 1..N, non-increasing, last one 1 (when N allows), within caps. */
function expectValid(warmup: number[], S: number, N: number, caps?: readonly number[]): void {
  expect(warmup).toHaveLength(S);
  warmup.forEach((x, i) => {
    expect(Number.isInteger(x)).toBe(true);
    expect(x).toBeGreaterThanOrEqual(1);
    expect(x).toBeLessThanOrEqual(N);
    if (caps) expect(x).toBeLessThanOrEqual(caps[i]);
    if (i > 0) expect(x).toBeLessThanOrEqual(warmup[i - 1]);
  });
  expect(warmup[S - 1]).toBe(1);
}

describe('adaptiveWarmup (Alg. 2)', () => {
  it('gives the link with a 35 ms straggler slackness 5 and the others the minimum 2 (S = 4, N = 24, t = 10)', () => {
    // Eq. 1: 20 + 2 * 35 <= Δ * 20  =>  Δ >= 4.5  =>  5.
    expect(adaptiveWarmup(uniformModel(4, 24, 10, [0, 0, 35]))).toEqual([10, 8, 6, 1]);
  });

  it('without stragglers, keeps slackness 2 on every link', () => {
    expect(adaptiveWarmup(uniformModel(4, 24, 10))).toEqual([7, 5, 3, 1]);
    expect(MIN_ADAPTIVE_SLACKNESS).toBe(2);
  });

  it('when the wanted slackness does not fit N, keeps Δ >= 1 everywhere and gives the rest of the budget to the neediest link', () => {
    // A 1 s straggler on link 0 wants Δ = 101; the budget is N - 1 = 23: links 1 and 2 keep 1, link 0 gets 21.
    expect(adaptiveWarmup(uniformModel(4, 24, 10, [1000, 0, 0]))).toEqual([24, 3, 2, 1]);
  });

  it('shares a tight budget between equally needy links, upstream first', () => {
    // Every link wants Δ = 6 (20 + 100 <= 6 * 20) but N = 7 leaves 6: 1 each, then one more each.
    expect(adaptiveWarmup(uniformModel(4, 7, 10, [50, 50, 50]))).toEqual([7, 5, 3, 1]);
    expect(adaptiveWarmup(uniformModel(4, 6, 10, [50, 50, 50]))).toEqual([6, 4, 2, 1]);
  });

  it('falls back to Δ = 1 when N is below 2S, and clips to N when N < S', () => {
    expect(adaptiveWarmup(uniformModel(4, 4, 10, [50, 50, 50]))).toEqual([4, 3, 2, 1]);
    expect(adaptiveWarmup(uniformModel(4, 2, 10, [50, 50, 50]))).toEqual([2, 2, 2, 1]);
    expect(adaptiveWarmup(uniformModel(4, 1, 10))).toEqual([1, 1, 1, 1]);
    expect(adaptiveWarmup(uniformModel(1, 5, 10, []))).toEqual([1]);
  });

  it('respects host caps, keeping the counts non-increasing', () => {
    expect(adaptiveWarmup(uniformModel(4, 24, 10, [0, 0, 35]), [24, 4, 24, 24])).toEqual([10, 4, 4, 1]);
    expect(adaptiveWarmup(uniformModel(4, 24, 10, [0, 0, 35]), [1, 24, 24, 24])).toEqual([1, 1, 1, 1]);
  });

  it('produces finite counts when a downstream stage takes no time (Eq. 1 cannot hold there)', () => {
    const profile = validateProfile({ stages: 3, microbatches: 12, fMs: [5, 0, 5], bMs: [5, 0, 5], wMs: [1, 1, 1], linkMs: [3, 3] });
    const warmup = adaptiveWarmup(toPipelineModel(profile));
    expectValid(warmup, 3, 12);
    // Link 0 wants infinite slack, so the whole budget is used: x_0 = N, and link 1 still gets its 2.
    expect(warmup).toEqual([12, 3, 1]);
  });

  const arbCase = arbProfile({ maxStages: 8, maxMicrobatches: 24 }).chain((profile) =>
    fc.record({
      profile: fc.constant(profile),
      caps: fc.option(fc.array(fc.integer({ min: 1, max: 30 }), { minLength: profile.stages, maxLength: profile.stages }), { nil: undefined }),
    }),
  );

  it('is always a valid warm-up (1..N, non-increasing, last stage 1, within caps), also for zero-time stages', () => {
    fc.assert(
      fc.property(arbCase, ({ profile, caps }) => {
        const model = toPipelineModel(profile);
        const warmup = adaptiveWarmup(model, caps);
        expectValid(warmup, profile.stages, profile.microbatches, caps);
        // The generator accepts it.
        expect(() => generateSchedule(model, { warmup })).not.toThrow();
      }),
      { numRuns: 200 },
    );
  });

  it('absorbs every delay (Eq. 1) when N leaves enough room and no cap binds', () => {
    fc.assert(
      fc.property(
        arbProfile({ maxStages: 6, maxMicrobatches: 24 }).filter((p) => [...p.fMs, ...p.bMs].every((t) => t === 0 || t >= 1e-3)),
        (profile) => {
          const model = toPipelineModel(profile);
          const S = profile.stages;
          const needs = Array.from({ length: S - 1 }, (_, i) => Math.max(MIN_ADAPTIVE_SLACKNESS, requiredSlackness(model, i)));
          // Give Alg. 2 enough microbatches that neither N - 2S nor N clips any link.
          if (!needs.every((n) => Number.isFinite(n) && n <= 40)) return;
          const N = 2 * S + Math.max(1, ...needs) + needs.reduce((a, b) => a + b, 1);
          const roomy = toPipelineModel({ ...profile, microbatches: N });
          const warmup = adaptiveWarmup(roomy);
          warmup.slice(1).forEach((x, i) => expect(warmup[i] - x).toBe(needs[i]));
          linkTolerance(roomy, warmup).forEach((l) => expect(l.absorbed).toBe(true));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('spends exactly the budget min(N, caps[0]) - 1 when the wanted slackness does not fit, never giving a link more than it wants', () => {
    fc.assert(
      fc.property(
        arbProfile({ maxStages: 8, maxMicrobatches: 24 }).filter((p) => p.stages > 1 && [...p.fMs, ...p.bMs].every((t) => t === 0 || t >= 1e-3)),
        (profile) => {
          const model = toPipelineModel(profile);
          const S = profile.stages;
          const N = profile.microbatches;
          const want = Array.from({ length: S - 1 }, (_, i) => Math.max(MIN_ADAPTIVE_SLACKNESS, requiredSlackness(model, i)));
          const warmup = adaptiveWarmup(model);
          const delta = warmup.slice(1).map((x, i) => warmup[i] - x);
          if (want.reduce((a, b) => a + b, 0) <= N - 1) {
            expect(delta).toEqual(want);
          } else if (N >= S) {
            expect(warmup[0]).toBe(N); // the whole budget is spent
            delta.forEach((d, i) => {
              expect(d).toBeGreaterThanOrEqual(1);
              expect(d).toBeLessThanOrEqual(Math.max(1, want[i]));
            });
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
