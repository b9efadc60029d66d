/**
 * Property tests of the greedy generator (paper Alg. 3 and 4) over random heterogeneous pipelines:
 * structure, dependencies, warm-up, in-flight caps, memory, and agreement with the simulator.
 */
import fc from 'fast-check';
import { InputError } from '../input-error';
import { OP_B, OP_W, opKind, opMicrobatch } from '../pipeline/op';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { warmupOf } from '../pipeline/schedule';
import { iterationLowerBoundMs } from '../planner/lower-bound';
import { WPlacement } from './engine';
import { generateSchedule } from './generator';
import {
  arbGeneratorCase,
  arbMemory,
  exactlyOnceProblems,
  GeneratorCase,
  generateCase,
  inputErrorOf,
  namesOf,
  peakInflightOf,
  peakMemoryOf,
  timelineProblems,
} from './run-checks.spec';
import { simulateSchedule } from './simulator';

const RUNS = { numRuns: 150 };

describe('generateSchedule on random pipelines', () => {
  it('lists every F, B and W of every microbatch exactly once on every stage', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const run = generateCase(c);
        expect(exactlyOnceProblems(run.order, c.model.stages, c.model.microbatches)).toEqual([]);
      }),
      RUNS,
    );
  });

  it('respects every dependency, link delay, transfer queue and stage exclusivity', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        expect(timelineProblems(c.model, generateCase(c))).toEqual([]);
      }),
      RUNS,
    );
  });

  it('starts each stage with its x_i warm-up forwards', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const run = generateCase(c);
        run.order.forEach((ops, i) => {
          // The first x_i ops are all Fs; more Fs may follow before the first B.
          expect(namesOf(ops.slice(0, c.warmup[i])).every((op) => op.startsWith('F'))).toBe(true);
        });
        warmupOf(run.order).forEach((x, i) => expect(x).toBeGreaterThanOrEqual(c.warmup[i]));
      }),
      RUNS,
    );
  });

  it('keeps in-flight microbatches within the cap (default: the warm-up count) and reports the true peak', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const run = generateCase(c);
        const cap = c.inflightCap ?? c.warmup;
        expect(Array.from(run.peakInflight)).toEqual(peakInflightOf(run.order));
        run.peakInflight.forEach((peak, i) => expect(peak).toBeLessThanOrEqual(cap[i]));
      }),
      RUNS,
    );
  });

  it('runs each kind of op in increasing microbatch order on every stage', () => {
    // Ready ops of one kind are taken lowest microbatch first, and they become ready in order.
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const run = generateCase(c);
        for (const ops of run.order) {
          const last = [-1, -1, -1];
          for (const code of ops) {
            expect(opMicrobatch(code)).toBe(last[opKind(code)] + 1);
            last[opKind(code)]++;
          }
        }
      }),
      RUNS,
    );
  });

  it('puts W_j right after B_j on stages whose W placement is Fused', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const run = generateCase(c);
        run.order.forEach((ops, s) => {
          const placement = typeof c.wPlacement === 'number' ? c.wPlacement : c.wPlacement[s];
          if (placement !== WPlacement.Fused) return;
          for (let k = 0; k < ops.length; k++) {
            if (opKind(ops[k]) === OP_B) expect(ops[k + 1]).toBe(ops[k] + (OP_W - OP_B));
          }
        });
      }),
      RUNS,
    );
  });

  it('is reproduced exactly when the simulator replays its order (same times, messages and peaks)', () => {
    fc.assert(
      fc.property(arbGeneratorCase({ memory: true }), (c) => {
        let run;
        try {
          run = generateCase(c);
        } catch (error) {
          expect(error).toBeInstanceOf(InputError); // memory-infeasible: covered below
          return;
        }
        const replay = simulateSchedule(c.model, run.order);
        expect(replay.iterationMs).toBe(run.iterationMs);
        expect(replay.start).toEqual(run.start);
        expect(replay.end).toEqual(run.end);
        expect(replay.order.map(namesOf)).toEqual(run.order.map(namesOf));
        expect(replay.messages).toEqual(run.messages);
        expect(replay.peakInflight).toEqual(run.peakInflight);
        expect(replay.peakMemory).toEqual(run.peakMemory);
      }),
      RUNS,
    );
  });

  it('never beats the iteration lower bound, generated or replayed', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const bound = iterationLowerBoundMs(c.model);
        const run = generateCase(c);
        expect(run.iterationMs).toBeGreaterThanOrEqual(bound - 1e-6);
        expect(simulateSchedule(c.model, run.order).iterationMs).toBeGreaterThanOrEqual(bound - 1e-6);
      }),
      RUNS,
    );
  });

  it('is deterministic', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const a = generateCase(c);
        const b = generateCase(c);
        expect(b.order).toEqual(a.order);
        expect(b.start).toEqual(a.start);
      }),
      { numRuns: 50 },
    );
  });
});

describe('generateSchedule with ZeroBubble memory limits', () => {
  it('either stays within every stage limit or throws InputError (infeasible), never another error', () => {
    fc.assert(
      fc.property(arbGeneratorCase({ memory: 'always' }), (c) => {
        let run;
        try {
          run = generateCase(c);
        } catch (error) {
          expect(error).toBeInstanceOf(InputError);
          expect((error as Error).message).toMatch(/no op can run/);
          return;
        }
        const memory = c.profile.memory!;
        expect(timelineProblems(c.model, run)).toEqual([]);
        expect(Array.from(run.peakMemory!)).toEqual(peakMemoryOf(run.order, memory));
        run.peakMemory!.forEach((peak, i) => expect(peak).toBeLessThanOrEqual(memory.limit[i] + 1e-6));
      }),
      { numRuns: 200 },
    );
  });

  /**
   * With B and W freeing memory and room for `cap` activations, a stage that cannot run an F
   * holds only in-flight activations, so the memory limit never blocks more than the cap does:
   * generation must succeed.
   */
  const arbFeasible: fc.Arbitrary<GeneratorCase> = arbGeneratorCase().chain((c) =>
    arbMemory(c.profile.stages, c.profile.microbatches).map((random) => {
      const cap = c.inflightCap ?? c.warmup;
      const afterB = random.afterB.map((b) => Math.min(0, b));
      const afterW = random.afterF.map((f, i) => -(f + afterB[i]));
      const limit = random.afterF.map((f, i) => cap[i] * f + 1e-6);
      const profile = validateProfile({ ...c.profile, memory: { afterF: random.afterF, afterB, afterW, limit } });
      return { ...c, profile, model: toPipelineModel(profile) };
    }),
  );

  it('always completes when every stage has room for its in-flight cap', () => {
    fc.assert(
      fc.property(arbFeasible, (c) => {
        const run = generateCase(c);
        expect(exactlyOnceProblems(run.order, c.model.stages, c.model.microbatches)).toEqual([]);
        run.peakMemory!.forEach((peak, i) => expect(peak).toBeLessThanOrEqual(c.profile.memory!.limit[i] + 1e-6));
      }),
      RUNS,
    );
  });

  it('delays F (running W to free memory) when memory, not the cap, is the limit', () => {
    // One stage, cap 3 but room for 2 activations, and W frees most of it: F2 must wait for W0.
    const shape = { stages: 1, microbatches: 3, fMs: [1], bMs: [1], wMs: [1], linkMs: [] };
    const free = generateSchedule(toPipelineModel(validateProfile(shape)), { warmup: [2], inflightCap: [3] });
    expect(namesOf(free.order[0])).toEqual(['F0', 'F1', 'B0', 'B1', 'F2', 'B2', 'W0', 'W1', 'W2']);
    const profile = validateProfile({
      stages: 1,
      microbatches: 3,
      fMs: [1],
      bMs: [1],
      wMs: [1],
      linkMs: [],
      memory: { afterF: [2], afterB: [-0.5], afterW: [-1.5], limit: [4] },
    });
    const run = generateSchedule(toPipelineModel(profile), { warmup: [2], inflightCap: [3] });
    // Memory: F0 2, F1 4, B0 3.5, B1 3, (F2 would need 5 > 4) W0 1.5, F2 3.5, B2 3, W1 1.5, W2 0.
    expect(namesOf(run.order[0])).toEqual(['F0', 'F1', 'B0', 'B1', 'W0', 'F2', 'B2', 'W1', 'W2']);
    expect(Array.from(run.peakMemory!)).toEqual([4]);
  });

  it('throws InputError naming the stuck stage when a warm-up does not fit in memory', () => {
    const profile = validateProfile({
      stages: 2,
      microbatches: 4,
      fMs: [1, 1],
      bMs: [1, 1],
      wMs: [1, 1],
      linkMs: [0],
      memory: { afterF: [2, 2], afterB: [-1, -1], afterW: [-1, -1], limit: [5, 8] },
    });
    const message = inputErrorOf(() => generateSchedule(toPipelineModel(profile), { warmup: [3, 1] })).message;
    expect(message).toMatch(/^no op can run \(warm-up counts or memory limits are infeasible\)/);
    expect(message).toContain('stage 0 (warm-up left 1, in flight 2/3, memory 4/5)');
  });
});

describe('generateSchedule rejects bad options', () => {
  const model = toPipelineModel(validateProfile({ stages: 3, microbatches: 5, fMs: [1, 1, 1], bMs: [1, 1, 1], wMs: [1, 1, 1], linkMs: [0, 0] }));

  it.each([
    [[3, 4, 1], 'warm-up counts must not increase from stage to stage (Lemma 1), but stage 1 has 4 > 3'],
    [[3, 2, 0], 'warm-up count of stage 2 must be an integer from 1 to 5 (the microbatches), got 0'],
    [[6, 2, 1], 'warm-up count of stage 0 must be an integer from 1 to 5 (the microbatches), got 6'],
    [[3, 2.5, 1], 'warm-up count of stage 1 must be an integer from 1 to 5 (the microbatches), got 2.5'],
    [[3, 1], 'warm-up counts must have 3 entries (one per stage), got 2'],
    [[3, 2, 1, 1], 'warm-up counts must have 3 entries (one per stage), got 4'],
  ])('warm-up %j', (warmup, message) => {
    expect(inputErrorOf(() => generateSchedule(model, { warmup })).message).toBe(message);
  });

  it('rejects in-flight caps of the wrong length or below the warm-up', () => {
    expect(inputErrorOf(() => generateSchedule(model, { warmup: [3, 2, 1], inflightCap: [3, 2] })).message).toBe('in-flight caps must have 3 entries, got 2');
    expect(inputErrorOf(() => generateSchedule(model, { warmup: [3, 2, 1], inflightCap: [3, 1, 1] })).message).toBe(
      'in-flight cap of stage 1 (1) is below its warm-up count (2)',
    );
  });

  it('accepts warm-up counts that are equal on all stages (zero slackness)', () => {
    const run = generateSchedule(model, { warmup: [2, 2, 2] });
    expect(warmupOf(run.order)).toEqual([2, 2, 2]);
  });
});

describe('generateSchedule on small hand-checked pipelines', () => {
  it('runs 1F1B for warm-up S - i with W fused, uniform times, no delay', () => {
    const model = toPipelineModel(validateProfile({ stages: 2, microbatches: 3, fMs: [1, 1], bMs: [1, 1], wMs: [1, 1], linkMs: [0] }));
    const run = generateSchedule(model, { warmup: [2, 1], wPlacement: WPlacement.Fused });
    expect(run.order.map(namesOf)).toEqual([
      ['F0', 'F1', 'B0', 'W0', 'F2', 'B1', 'W1', 'B2', 'W2'],
      ['F0', 'B0', 'W0', 'F1', 'B1', 'W1', 'F2', 'B2', 'W2'],
    ]);
    // Stage 0 stalls at t=2 (2 in flight, cap 2) until B0 arrives at 3; stage 1 runs F2 at 7,
    // B2 ends at 9, so stage 0 runs B2 and W2 from 9 to 11.
    expect(run.iterationMs).toBe(11);
  });

  it('fills bubbles with W under Lazy placement and runs W early under Eager placement', () => {
    const model = toPipelineModel(validateProfile({ stages: 2, microbatches: 3, fMs: [1, 1], bMs: [1, 1], wMs: [1, 1], linkMs: [0] }));
    const lazy = generateSchedule(model, { warmup: [2, 1], wPlacement: WPlacement.Lazy });
    const eager = generateSchedule(model, { warmup: [2, 1], wPlacement: WPlacement.Eager });
    // Lazy: on stage 1, F beats W after B; Eager: W beats F.
    expect(namesOf(lazy.order[1])).toEqual(['F0', 'B0', 'F1', 'B1', 'F2', 'B2', 'W0', 'W1', 'W2']);
    expect(namesOf(eager.order[1])).toEqual(['F0', 'B0', 'W0', 'F1', 'B1', 'W1', 'F2', 'B2', 'W2']);
  });

  it('with a single stage, never idles: iteration = N (f + b + w)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 24 }), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 50 }), (N, f, b, w) => {
        const model = toPipelineModel(validateProfile({ stages: 1, microbatches: N, fMs: [f], bMs: [b], wMs: [w], linkMs: [] }));
        expect(generateSchedule(model, { warmup: [1] }).iterationMs).toBe(N * (f + b + w));
      }),
      { numRuns: 100 },
    );
  });
});
