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
import { LookAhead, runGreedy, WPlacement } from './engine';
import { EngineRun } from './engine-run.type';
import { generateSchedule } from './generator';
import {
  arbGeneratorCase,
  arbMemory,
  exactlyOnceProblems,
  GeneratorCase,
  generateCase,
  inputErrorOf,
  namesOf,
  opTimes,
  peakInflightOf,
  peakMemoryOf,
  timelineProblems,
} from './run-checks.spec';
import { simulateSchedule } from './simulator';

const RUNS = { numRuns: 150 };

/** The greedy's own run, with its own timing (generateSchedule returns the order's replay when a stage looks ahead). */
function greedy(c: GeneratorCase): EngineRun {
  const S = c.model.stages;
  const perStage = <T,>(x: T | readonly T[] | undefined, fallback: T): T[] => (x === undefined ? new Array<T>(S).fill(fallback) : Array.isArray(x) ? (x as T[]).slice() : new Array<T>(S).fill(x as T));
  return runGreedy(c.model, { warmup: c.warmup, inflightCap: c.inflightCap ?? c.warmup, wPlacement: perStage(c.wPlacement, WPlacement.Lazy), lookAhead: perStage(c.lookAhead, LookAhead.None) });
}

/** A case fast-check found where the greedy with look-ahead idled, then started an op that had been ready before (replay earlier). */
const FOUND_PROFILE = {
  stages: 8,
  microbatches: 18,
  fMs: [8.4e-323, 0, 1.0550530361515282e-150, 0, 2.5e-323, 0, 1.3516186083858962e-50, 0],
  bMs: [0, 46, 1.2200453066549705e-164, 0, 0, 0, 49.99999999999996, 7.282995048989709e-157],
  wMs: [7e-323, 9.622455121091669e-77, 0, 0, 0, 36, 48, 32],
  linkMs: [0, 79.99999999999991, 26, 1.563577645109238e-160, 0, 21, 33],
  linkBytes: [21, 16908764, 4896392, 28641183, 20, 19659792, 13164870],
  linkGBps: [3.1725726213419434, 50, 3.034613403028153, 3.4141399532180547, 1.5372783976137034, 1.032564428931449, 1.3022646924017287],
};
const FOUND: GeneratorCase = {
  profile: FOUND_PROFILE,
  model: toPipelineModel(validateProfile(FOUND_PROFILE)),
  warmup: [1, 1, 1, 1, 1, 1, 1, 1],
  inflightCap: [2, 2, 2, 2, 2, 2, 2, 1],
  wPlacement: 1,
  lookAhead: 4,
} as unknown as GeneratorCase;

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

  it('with look-ahead, the greedy\'s own timing is never earlier than its order\'s replay, which is why the run it returns is the replay', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const own = greedy(c);
        const replay = simulateSchedule(c.model, own.order);
        replay.start.forEach((t, k) => expect(t).toBeLessThanOrEqual(own.start[k] + 1e-9));
      }),
      RUNS,
    );
    // The counterexample fast-check found (near-zero op times): the greedy idled, then ran an op that was ready before.
    const found = simulateSchedule(FOUND.model, greedy(FOUND).order);
    expect(Math.min(...found.start.map((t, k) => greedy(FOUND).start[k] - t))).toBeGreaterThanOrEqual(-1e-9);
    expect(found.start.some((t, k) => t < greedy(FOUND).start[k] - 1e-9)).toBe(true);
    expect(generateCase(FOUND).start).toEqual(found.start);
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

/** Ws on stage s that start while a gradient to s is on its way and would still run when it arrives. */
function wsDelayingAKnownB(run: EngineRun, s: number): string[] {
  const times = opTimes(run);
  const found: string[] = [];
  for (let j = 0; j < run.microbatches; j++) {
    const start = times.start(s, OP_W, j);
    const end = times.end(s, OP_W, j);
    for (let k = 0; k < run.messages.count; k++) {
      if (run.messages.direction[k] !== 1 || run.messages.link[k] !== s) continue;
      const arrive = run.messages.arriveMs[k];
      // Sent strictly before the W starts: a send at the same instant is a simultaneous event the greedy need not have seen.
      if (run.messages.sentMs[k] < start && arrive > start && arrive < end) found.push(`W${j} on stage ${s} runs ${start}..${end} past B${run.messages.microbatch[k]}'s gradient at ${arrive}`);
    }
  }
  return found;
}

describe('generateSchedule with look-ahead', () => {
  const arbLookAheadCase = arbGeneratorCase().chain((c) => fc.constantFrom(LookAhead.W, LookAhead.W | LookAhead.F, LookAhead.All).map((lookAhead) => ({ ...c, lookAhead })));

  it('never starts a W that would still run when an already sent gradient arrives', () => {
    fc.assert(
      fc.property(arbLookAheadCase, (c) => {
        const run = greedy(c); // the greedy's decisions, at the times it made them
        const placement = (s: number) => (typeof c.wPlacement === 'number' ? c.wPlacement : c.wPlacement[s]);
        // A fused W is part of its B; a memory limit turns look-ahead off.
        for (let s = 0; s < c.model.stages; s++) if (placement(s) !== WPlacement.Fused) expect(wsDelayingAKnownB(run, s)).toEqual([]);
      }),
      RUNS,
    );
  });

  it('the check finds such Ws in greedy B > F > W schedules (so the property above can fail)', () => {
    const cases = fc.sample(arbGeneratorCase().map((c) => ({ ...c, lookAhead: LookAhead.None, wPlacement: WPlacement.Lazy })), { numRuns: 300, seed: 7 });
    const violations = cases.filter((c) => {
      const run = generateCase(c);
      return Array.from({ length: c.model.stages }, (_, s) => wsDelayingAKnownB(run, s).length).some((n) => n > 0);
    });
    expect(violations.length).toBeGreaterThan(0);
  });

  it('holds every W until the last B of its stage has started under WAfterLastB', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const run = generateSchedule(c.model, { warmup: c.warmup, inflightCap: c.inflightCap, wPlacement: WPlacement.Lazy, lookAhead: LookAhead.WAfterLastB });
        run.order.forEach((ops) => {
          const names = namesOf(ops);
          const lastB = names.map((op) => op.startsWith('B')).lastIndexOf(true);
          expect(names.findIndex((op) => op.startsWith('W'))).toBe(lastB + 1);
        });
      }),
      RUNS,
    );
  });

  it('waits for an imminent B instead of a W on a hand-checked pipeline', () => {
    // Stage 1 ends B0 at 9 ms; B1's gradient left stage 2 at 8 and arrives at 10. B > F > W starts
    // W0 (3 ms) at 9 and B1 waits until 12; looking ahead, stage 1 idles 1 ms and runs B1 at 10.
    const model = toPipelineModel(validateProfile({ stages: 3, microbatches: 3, fMs: [1, 1, 1], bMs: [1, 1, 1], wMs: [1, 3, 1], linkMs: [0, 2] }));
    const greedy = generateSchedule(model, { warmup: [2, 2, 1] });
    const looking = generateSchedule(model, { warmup: [2, 2, 1], lookAhead: [LookAhead.None, LookAhead.W, LookAhead.None] });
    expect(namesOf(greedy.order[1])).toEqual(['F0', 'F1', 'B0', 'W0', 'B1', 'F2', 'W1', 'B2', 'W2']);
    expect(namesOf(looking.order[1])).toEqual(['F0', 'F1', 'B0', 'B1', 'F2', 'W0', 'W1', 'B2', 'W2']);
    expect(wsDelayingAKnownB(greedy, 1).length).toBeGreaterThan(0);
    expect(wsDelayingAKnownB(looking, 1)).toEqual([]);
    expect([greedy.iterationMs, looking.iterationMs]).toEqual([24, 22]);
    expect(looking.iterationMs).toBeLessThan(greedy.iterationMs);
  });

  it('changes nothing when no stage looks ahead (the default)', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        const plain = generateSchedule(c.model, { warmup: c.warmup, inflightCap: c.inflightCap, wPlacement: c.wPlacement });
        const none = generateSchedule(c.model, { warmup: c.warmup, inflightCap: c.inflightCap, wPlacement: c.wPlacement, lookAhead: LookAhead.None });
        expect(none.order).toEqual(plain.order);
        expect(none.iterationMs).toBe(plain.iterationMs);
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
