import fc from 'fast-check';
import { arbProfile, arbWarmup } from '../engine/run-checks.spec';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { linkTolerance, requiredSlackness } from './link-tolerance';

/** S stages with t^F = t^B = t^W = t and one-way delays `linkMs`. */
function uniformModel(S: number, N: number, t: number, linkMs: number[] = Array(S - 1).fill(0)): PipelineModel {
  return toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs: Array(S).fill(t), bMs: Array(S).fill(t), wMs: Array(S).fill(t), linkMs }));
}

/** Eq. 1 written out: t^F_i + t^B_i + 2 c_i <= Δ_i (t^F_{i+1} + t^B_{i+1}). */
function eq1(model: PipelineModel, link: number, slackness: number, delay: number): number {
  const fb = (s: number): number => model.durations[s * 3] + model.durations[s * 3 + 1];
  return slackness * fb(link + 1) - (fb(link) + 2 * delay);
}

describe('linkTolerance with uniform times (Theorem 1)', () => {
  it('tolerates exactly (Δ - 1) t', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 100 }), (delta, t) => {
        const model = uniformModel(2, 24, t);
        const [link] = linkTolerance(model, [1 + delta, 1]);
        expect(link.slackness).toBe(delta);
        expect(link.toleranceMs).toBe((delta - 1) * t);
      }),
      { numRuns: 100 },
    );
  });

  it('flips `absorbed` exactly at the threshold c = (Δ - 1) t', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 100 }), (delta, t) => {
        const threshold = (delta - 1) * t;
        const at = (c: number): boolean => linkTolerance(uniformModel(2, 24, t, [c]), [1 + delta, 1])[0].absorbed;
        expect(at(threshold)).toBe(true);
        expect(at(threshold + 1e-6)).toBe(false);
        if (threshold > 0) expect(at(threshold - 1e-6)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('reports the paper\'s Fig. 5 numbers: Δ = 2, t = 10 absorbs 10 ms but not 20 ms', () => {
    const warmup = [7, 5, 3, 1];
    expect(linkTolerance(uniformModel(4, 12, 10, [10, 0, 0]), warmup)[0]).toEqual({ link: 0, slackness: 2, toleranceMs: 10, delayMs: 10, absorbed: true });
    expect(linkTolerance(uniformModel(4, 12, 10, [20, 0, 0]), warmup)[0]).toEqual({ link: 0, slackness: 2, toleranceMs: 10, delayMs: 20, absorbed: false });
  });

  it('gives zero tolerance for zero slackness, and does not absorb even a zero delay then', () => {
    const [link] = linkTolerance(uniformModel(2, 4, 10), [2, 2]);
    expect(link.toleranceMs).toBe(0);
    expect(link.absorbed).toBe(false);
  });
});

describe('linkTolerance on heterogeneous pipelines (Eq. 1)', () => {
  const arbCase = arbProfile({ maxStages: 6 })
    .filter((p) => p.stages > 1)
    .chain((p) => arbWarmup(p.stages, p.microbatches).map((warmup) => ({ model: toPipelineModel(p), warmup })));

  it('says absorbed iff Eq. 1 holds (within 1e-9), with the link\'s effective delay', () => {
    fc.assert(
      fc.property(arbCase, ({ model, warmup }) => {
        const links = linkTolerance(model, warmup);
        expect(links).toHaveLength(model.stages - 1);
        links.forEach((l, i) => {
          expect(l.link).toBe(i);
          expect(l.slackness).toBe(warmup[i] - warmup[i + 1]);
          expect(l.delayMs).toBe(model.linkMs[i] + model.transferMs[i]);
          const margin = eq1(model, i, l.slackness, l.delayMs);
          if (Math.abs(margin) > 1e-6) expect(l.absorbed).toBe(margin > 0);
        });
      }),
      { numRuns: 150 },
    );
  });

  it('reports as tolerance the largest delay that Eq. 1 absorbs', () => {
    fc.assert(
      fc.property(arbCase, ({ model, warmup }) => {
        linkTolerance(model, warmup).forEach((l, i) => {
          expect(l.toleranceMs).toBeGreaterThanOrEqual(0);
          if (l.toleranceMs > 0) {
            expect(eq1(model, i, l.slackness, l.toleranceMs)).toBeCloseTo(0, 6);
            expect(eq1(model, i, l.slackness, l.toleranceMs + 1e-3)).toBeLessThan(0);
          }
        });
      }),
      { numRuns: 150 },
    );
  });
});

describe('requiredSlackness', () => {
  it('is the smallest slackness that linkTolerance reports as absorbed', () => {
    fc.assert(
      fc.property(
        // Times are 0 or at least a microsecond: with denormal-sized times the 1e-9 ms slack of
        // linkTolerance dominates and "smallest" loses its meaning.
        arbProfile({ maxStages: 6 }).filter((p) => p.stages > 1 && [...p.fMs, ...p.bMs].every((t) => t === 0 || t >= 1e-3)),
        fc.nat(),
        (profile, seed) => {
          const model = toPipelineModel(profile);
          const link = seed % (profile.stages - 1);
          const need = requiredSlackness(model, link);
          if (!Number.isFinite(need)) return; // checked separately below
          expect(Number.isInteger(need)).toBe(true);
          const absorbedAt = (delta: number): boolean => {
            const warmup = Array(profile.stages).fill(1);
            for (let i = 0; i <= link; i++) warmup[i] = 1 + delta;
            return linkTolerance(model, warmup)[link].absorbed;
          };
          expect(absorbedAt(need)).toBe(true);
          if (need >= 1) expect(absorbedAt(need - 1)).toBe(false);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('uses the ceiling: t = 10 and c = 15 need Δ = 3 (floor 2.5 = 2 would tolerate only 10 ms)', () => {
    expect(requiredSlackness(uniformModel(2, 24, 10, [15]), 0)).toBe(3);
    expect(requiredSlackness(uniformModel(2, 24, 10, [10]), 0)).toBe(2);
    expect(requiredSlackness(uniformModel(2, 24, 10, [0]), 0)).toBe(1);
  });

  it('counts transfer time as delay', () => {
    // 10 ms latency + 5 ms transfer = 15 ms effective: Δ = 3 as above.
    const profile = validateProfile({ stages: 2, microbatches: 4, fMs: [10, 10], bMs: [10, 10], wMs: [10, 10], linkMs: [10], linkBytes: [5e6], linkGBps: [1] });
    expect(requiredSlackness(toPipelineModel(profile), 0)).toBe(3);
  });

  it('is Infinity when the downstream stage takes no time but the link needs slack, and 0 when nothing does', () => {
    const zeroDown = validateProfile({ stages: 2, microbatches: 4, fMs: [1, 0], bMs: [1, 0], wMs: [1, 1], linkMs: [0] });
    expect(requiredSlackness(toPipelineModel(zeroDown), 0)).toBe(Infinity);
    const allZero = validateProfile({ stages: 2, microbatches: 4, fMs: [0, 0], bMs: [0, 0], wMs: [1, 1], linkMs: [0] });
    expect(requiredSlackness(toPipelineModel(allZero), 0)).toBe(0);
  });
});
