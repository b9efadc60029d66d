/**
 * The simulator replays a fixed per-stage order: every op starts as soon as its stage is free
 * and its inputs have arrived, and an order that waits on itself is reported as a deadlock.
 */
import fc from 'fast-check';
import { InputError } from '../input-error';
import { encodeOp, OP_B, OP_F, OP_W, opKind, opMicrobatch } from '../pipeline/op';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { Schedule } from '../pipeline/schedule.type';
import { iterationLowerBoundMs } from '../planner/lower-bound';
import { EngineRun } from './engine-run.type';
import { generateSchedule } from './generator';
import { arbGeneratorCase, arbProfile, generateCase, inputErrorOf, opTimes, scheduleOf, timelineProblems } from './run-checks.spec';
import { simulateSchedule } from './simulator';

/** Untimed reference: does some stage wait forever for an op that only runs after it? */
function deadlocks(schedule: Schedule, stages: number, microbatches: number): boolean {
  const M = 3 * microbatches;
  const done = new Uint8Array(stages * M);
  const next = new Array<number>(stages).fill(0);
  const isDone = (s: number, kind: number, j: number): boolean => done[s * M + encodeOp(kind, j)] === 1;
  let remaining = stages * M;
  for (let progress = true; progress; ) {
    progress = false;
    for (let s = 0; s < stages; s++) {
      while (next[s] < M) {
        const code = schedule[s][next[s]];
        const j = opMicrobatch(code);
        const kind = opKind(code);
        const ready =
          kind === OP_F ? s === 0 || isDone(s - 1, OP_F, j)
          : kind === OP_B ? isDone(s, OP_F, j) && (s === stages - 1 || isDone(s + 1, OP_B, j))
          : isDone(s, OP_B, j);
        if (!ready) break;
        done[s * M + code] = 1;
        next[s]++;
        remaining--;
        progress = true;
      }
    }
  }
  return remaining > 0;
}

/** Every op starts exactly when the later of "its stage is free" and "its inputs are there" happens. */
function asapProblems(model: PipelineModel, run: EngineRun): string[] {
  const S = model.stages;
  const { end } = opTimes(run);
  const M = 3 * model.microbatches;
  const arrival = new Map<string, number>();
  for (let k = 0; k < run.messages.count; k++) {
    arrival.set(`${run.messages.link[k]}/${run.messages.direction[k]}/${run.messages.microbatch[k]}`, run.messages.arriveMs[k]);
  }
  const problems: string[] = [];
  for (let s = 0; s < S; s++) {
    let free = 0;
    for (const code of run.order[s]) {
      const j = opMicrobatch(code);
      const kind = opKind(code);
      let ready = 0;
      if (kind === OP_F && s > 0) ready = arrival.get(`${s - 1}/0/${j}`)!;
      if (kind === OP_B) ready = Math.max(end(s, OP_F, j), s < S - 1 ? arrival.get(`${s}/1/${j}`)! : 0);
      if (kind === OP_W) ready = end(s, OP_B, j);
      const expected = Math.max(free, ready);
      if (run.start[s * M + code] !== expected) problems.push(`stage ${s} op ${code} starts at ${run.start[s * M + code]}, expected ${expected}`);
      free = run.end[s * M + code];
    }
  }
  return problems;
}

describe('simulateSchedule on a hand-written 1F1B schedule', () => {
  // S = 2, N = 2; stage 0: f=1 b=2 w=1, stage 1: f=2 b=3 w=1; 0.5 ms link.
  const model = toPipelineModel(validateProfile({ stages: 2, microbatches: 2, fMs: [1, 2], bMs: [2, 3], wMs: [1, 1], linkMs: [0.5] }));
  const schedule = scheduleOf([
    ['F0', 'F1', 'B0', 'W0', 'B1', 'W1'],
    ['F0', 'B0', 'W0', 'F1', 'B1', 'W1'],
  ]);

  it('gives the hand-computed times', () => {
    const run = simulateSchedule(model, schedule);
    const { start } = opTimes(run);
    // Stage 1: F0 1.5-3.5, B0 3.5-6.5, W0 6.5-7.5, F1 7.5-9.5, B1 9.5-12.5, W1 12.5-13.5.
    expect([start(1, OP_F, 0), start(1, OP_B, 0), start(1, OP_W, 0), start(1, OP_F, 1), start(1, OP_B, 1), start(1, OP_W, 1)]).toEqual([1.5, 3.5, 6.5, 7.5, 9.5, 12.5]);
    // Stage 0: F0 0-1, F1 1-2, B0 7-9 (gradient arrives 6.5 + 0.5), W0 9-10, B1 13-15, W1 15-16.
    expect([start(0, OP_F, 0), start(0, OP_F, 1), start(0, OP_B, 0), start(0, OP_W, 0), start(0, OP_B, 1), start(0, OP_W, 1)]).toEqual([0, 1, 7, 9, 13, 15]);
    expect(run.iterationMs).toBe(16);
    expect(Array.from(run.peakInflight)).toEqual([2, 1]);
    expect(run.peakMemory).toBeNull();
  });

  it('logs the four messages with send and arrival times', () => {
    const m = simulateSchedule(model, schedule).messages;
    expect(m.count).toBe(4);
    expect(Array.from(m.direction)).toEqual([0, 0, 1, 1]);
    expect(Array.from(m.sentMs)).toEqual([1, 2, 6.5, 12.5]);
    expect(Array.from(m.arriveMs)).toEqual([1.5, 2.5, 7, 13]);
  });

  it('measures memory without enforcing it', () => {
    const tight = toPipelineModel(
      validateProfile({ stages: 2, microbatches: 2, fMs: [1, 2], bMs: [2, 3], wMs: [1, 1], linkMs: [0.5], memory: { afterF: [3, 3], afterB: [-1, -1], afterW: [-2, -2], limit: [3, 3] } }),
    );
    const run = simulateSchedule(tight, schedule);
    expect(run.iterationMs).toBe(16);
    expect(Array.from(run.peakMemory!)).toEqual([6, 3]); // stage 0 holds two activations, over its limit of 3
  });
});

describe('simulateSchedule deadlocks', () => {
  const model = toPipelineModel(validateProfile({ stages: 2, microbatches: 2, fMs: [1, 1], bMs: [1, 1], wMs: [1, 1], linkMs: [0] }));

  it('rejects B0 before F0 on a stage', () => {
    const message = inputErrorOf(() =>
      simulateSchedule(model, scheduleOf([['F0', 'F1', 'B0', 'W0', 'B1', 'W1'], ['B0', 'F0', 'W0', 'F1', 'B1', 'W1']])),
    ).message;
    expect(message).toMatch(/^schedule deadlocks \(an op waits for one that runs later\)/);
    expect(message).toContain('stage 1 waits for B0');
  });

  it('rejects W before its B', () => {
    expect(inputErrorOf(() => simulateSchedule(model, scheduleOf([['F0', 'F1', 'B0', 'W1', 'W0', 'B1'], ['F0', 'B0', 'W0', 'F1', 'B1', 'W1']]))).message).toContain(
      'stage 0 waits for W1',
    );
  });

  it('rejects a cross-stage cycle: stage 0 waits for B0 before sending F1, which stage 1 runs before B0', () => {
    const message = inputErrorOf(() => simulateSchedule(model, scheduleOf([['F0', 'B0', 'F1', 'W0', 'B1', 'W1'], ['F0', 'F1', 'B0', 'B1', 'W0', 'W1']]))).message;
    expect(message).toContain('deadlock');
    expect(message).toContain('stage 0 waits for B0');
    expect(message).toContain('stage 1 waits for F1');
    expect(message).toContain('after 2 of 12 ops'); // only F0 ran, on both stages
  });

  /** Random per-stage shuffles (mostly broken) and valid generated orders with a few adjacent swaps (sometimes broken). */
  const arbOrder = fc.oneof(
    fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 })).chain(([S, N]) => {
      const all = Array.from({ length: 3 * N }, (_, code) => code);
      const model = toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs: Array(S).fill(1), bMs: Array(S).fill(2), wMs: Array(S).fill(1), linkMs: Array(S - 1).fill(0.5) }));
      return fc.array(fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }), { minLength: S, maxLength: S }).map((lists) => ({ model, schedule: lists.map((l) => Int32Array.from(l)) }));
    }),
    arbGeneratorCase({ maxStages: 4, maxMicrobatches: 6 }).chain((c) => {
      const order = generateCase(c).order;
      const swap = fc.tuple(fc.integer({ min: 0, max: c.model.stages - 1 }), fc.integer({ min: 0, max: 3 * c.model.microbatches - 2 }));
      return fc.array(swap, { maxLength: 3 }).map((swaps) => {
        const schedule = order.map((ops) => ops.slice());
        for (const [s, k] of swaps) [schedule[s][k], schedule[s][k + 1]] = [schedule[s][k + 1], schedule[s][k]];
        return { model: c.model, schedule };
      });
    }),
  );

  it('deadlocks exactly when an untimed dependency check gets stuck, and otherwise respects all dependencies and the lower bound', () => {
    fc.assert(
      fc.property(arbOrder, ({ model: m, schedule }) => {
        if (deadlocks(schedule, m.stages, m.microbatches)) {
          expect(inputErrorOf(() => simulateSchedule(m, schedule)).message).toMatch(/deadlock/);
        } else {
          const run = simulateSchedule(m, schedule);
          expect(timelineProblems(m, run)).toEqual([]);
          expect(asapProblems(m, run)).toEqual([]);
          // The lower bound holds for any valid order, not only generated ones.
          expect(run.iterationMs).toBeGreaterThanOrEqual(iterationLowerBoundMs(m) - 1e-6);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('always deadlocks when some B_j is moved before F_j on a stage', () => {
    fc.assert(
      fc.property(
        arbGeneratorCase({ maxStages: 5, maxMicrobatches: 8 }).chain((c) => fc.tuple(fc.constant(c), fc.integer({ min: 0, max: c.model.stages - 1 }), fc.integer({ min: 0, max: c.model.microbatches - 1 }))),
        ([c, s, j]) => {
          const schedule = generateCase(c).order.map((ops) => ops.slice());
          const ops = Array.from(schedule[s]).filter((code) => code !== encodeOp(OP_B, j));
          ops.splice(ops.indexOf(encodeOp(OP_F, j)), 0, encodeOp(OP_B, j));
          schedule[s] = Int32Array.from(ops);
          expect(inputErrorOf(() => simulateSchedule(c.model, schedule)).message).toMatch(/^schedule deadlocks/);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('simulateSchedule timing', () => {
  it('starts every op as early as its stage and inputs allow (generated orders)', () => {
    fc.assert(
      fc.property(arbGeneratorCase(), (c) => {
        expect(asapProblems(c.model, simulateSchedule(c.model, generateCase(c).order))).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  it('never gets faster when a link gets slower (fixed order)', () => {
    fc.assert(
      fc.property(
        arbProfile({ maxStages: 6, maxMicrobatches: 12 }).filter((p) => p.stages > 1),
        fc.nat(),
        fc.double({ min: 0, max: 100, noNaN: true }),
        (profile, linkSeed, extra) => {
          const model = toPipelineModel(profile);
          const order = generateSchedule(model, { warmup: profile.fMs.map((_, i) => Math.min(profile.microbatches, profile.stages - i)) }).order;
          const link = linkSeed % (profile.stages - 1);
          const slower = profile.linkMs.slice();
          slower[link] += extra;
          const before = simulateSchedule(model, order).iterationMs;
          const after = simulateSchedule(toPipelineModel(profile, slower), order).iterationMs;
          expect(after).toBeGreaterThanOrEqual(before);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('throws InputError, not a crash, when stages x microbatches is too large', () => {
    const S = 32; // 32 x 65536 = 2^21 ops per kind, over the limit of 2^20
    const ones = Array(S).fill(1);
    const model = toPipelineModel(validateProfile({ stages: S, microbatches: 65536, fMs: ones, bMs: ones, wMs: ones, linkMs: Array(S - 1).fill(0) }));
    expect(inputErrorOf(() => simulateSchedule(model, [])).message).toContain("exceeds the engine's limit of 1048576");
  });

  it('reports InputError (not another error) for any deadlock', () => {
    expect(() => simulateSchedule(toPipelineModel(validateProfile({ stages: 1, microbatches: 1, fMs: [1], bMs: [1], wMs: [1], linkMs: [] })), scheduleOf([['W0', 'B0', 'F0']]))).toThrow(InputError);
  });
});
