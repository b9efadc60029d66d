/**
 * Shared test kit for the engine and planner specs: fast-check arbitraries for random pipelines
 * and independent checkers that re-derive every scheduling rule from an EngineRun.
 *
 * The checkers are written from the paper's dependency rules (sec. 3.1), not from engine.ts, so a
 * bug in the engine cannot hide behind the same bug in the check. They return a list of problems
 * (empty when all is well) so a failing property prints what went wrong.
 *
 * This file is also imported by other specs for its helpers; its own tests (which show that each
 * checker really rejects a broken run) are registered only when Jest runs this file itself.
 */
import fc from 'fast-check';
import { InputError } from '../input-error';
import { LookAhead, WPlacement } from './engine';
import { EngineRun } from './engine-run.type';
import { generateSchedule } from './generator';
import { encodeOp, formatOp, OP_B, OP_F, OP_W, opKind } from '../pipeline/op';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { MemoryProfile, PipelineProfile } from '../pipeline/pipeline-profile.type';
import { Schedule } from '../pipeline/schedule.type';

/** Relative tolerance for recomputed sums (the engine adds link latency and transfer time in its own order). */
export const EPS = 1e-9;

function slack(value: number): number {
  return EPS * Math.max(1, Math.abs(value));
}

// ---------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------

/** A compute time or delay in [0, max]: exact zeros, integers and arbitrary doubles. */
export function arbMs(max: number): fc.Arbitrary<number> {
  return fc.oneof(fc.constant(0), fc.integer({ min: 0, max }), fc.double({ min: 0, max, noNaN: true, noDefaultInfinity: true }));
}

function fixedArray<T>(arb: fc.Arbitrary<T>, length: number): fc.Arbitrary<T[]> {
  return fc.array(arb, { minLength: length, maxLength: length });
}

/**
 * ZeroBubble memory for S stages: F allocates a in [0.5, 100], B frees a share (sometimes it even
 * allocates, which validation allows), W frees the rest exactly; the limit holds 1 to N+1
 * microbatches, or (for half the profiles, so that many runs are feasible) at least N.
 */
export function arbMemory(stages: number, microbatches: number): fc.Arbitrary<MemoryProfile> {
  const stage = (roomy: boolean) =>
    fc.record({
      afterF: fc.double({ min: 0.5, max: 100, noNaN: true }),
      share: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: -0.5, max: 0, noNaN: true })),
      fits: fc.double({ min: roomy ? microbatches : 1, max: microbatches + 1, noNaN: true }),
    });
  return fc.boolean().chain((roomy) => fixedArray(stage(roomy), stages)).map((list) => {
    const afterF = list.map((s) => s.afterF);
    const afterB = list.map((s) => -s.afterF * s.share);
    // (afterF + afterB) + afterW is exactly 0, the order validateProfile sums in.
    const afterW = afterF.map((f, i) => -(f + afterB[i]));
    const limit = list.map((s) => s.afterF * s.fits);
    return { afterF, afterB, afterW, limit };
  });
}

export interface ProfileShape {
  maxStages?: number;
  maxMicrobatches?: number;
  /** Whether to sometimes add link bandwidth (messages then queue per link direction). Default true. */
  bandwidth?: boolean;
  /** Whether to add a ZeroBubble memory profile: never (default), sometimes (true) or always. */
  memory?: boolean | 'always';
}

/** Random heterogeneous pipeline profiles: S stages, N microbatches, times 0..50, link delays 0..80. */
export function arbProfile(shape: ProfileShape = {}): fc.Arbitrary<PipelineProfile> {
  const maxStages = shape.maxStages ?? 8;
  const maxMicrobatches = shape.maxMicrobatches ?? 24;
  return fc
    .tuple(fc.integer({ min: 1, max: maxStages }), fc.integer({ min: 1, max: maxMicrobatches }))
    .chain(([S, N]) =>
      fc.record({
        fMs: fixedArray(arbMs(50), S),
        bMs: fixedArray(arbMs(50), S),
        wMs: fixedArray(arbMs(50), S),
        linkMs: fixedArray(arbMs(80), S - 1),
        bandwidth: shape.bandwidth === false
          ? fc.constant(undefined)
          : fc.option(fc.record({ bytes: fixedArray(fc.integer({ min: 0, max: 4e7 }), S - 1), gbps: fixedArray(fc.double({ min: 1, max: 50, noNaN: true }), S - 1) }), { nil: undefined }),
        memory:
          shape.memory === 'always' ? arbMemory(S, N) : shape.memory ? fc.option(arbMemory(S, N), { nil: undefined }) : fc.constant(undefined),
      }).map(({ fMs, bMs, wMs, linkMs, bandwidth, memory }) => {
        const profile: PipelineProfile = { stages: S, microbatches: N, fMs, bMs, wMs, linkMs };
        if (bandwidth) {
          profile.linkBytes = bandwidth.bytes;
          profile.linkGBps = bandwidth.gbps;
        }
        if (memory) profile.memory = memory;
        // Every generated profile must itself be valid input; validateProfile throws otherwise.
        return validateProfile(profile);
      }),
    );
}

/** Valid warm-up counts for S stages and N microbatches: non-increasing integers in 1..N (Lemma 1). */
export function arbWarmup(stages: number, microbatches: number): fc.Arbitrary<number[]> {
  return fixedArray(fc.integer({ min: 1, max: microbatches }), stages).map((xs) => xs.sort((a, b) => b - a));
}

export const W_PLACEMENTS: readonly WPlacement[] = [WPlacement.Lazy, WPlacement.Eager, WPlacement.Fused];

/** One W placement for all stages, or one per stage. */
export function arbWPlacement(stages: number): fc.Arbitrary<WPlacement | WPlacement[]> {
  const one = fc.constantFrom(...W_PLACEMENTS);
  return fc.oneof(one, fixedArray(one, stages));
}

export interface GeneratorCase {
  profile: PipelineProfile;
  model: PipelineModel;
  warmup: number[];
  /** Undefined means "use the default" (the warm-up counts). */
  inflightCap: number[] | undefined;
  wPlacement: WPlacement | WPlacement[];
  lookAhead: LookAhead | LookAhead[] | undefined;
}

/** A random profile with random valid generator options (warm-up, optional larger in-flight caps, W placement). */
export function arbGeneratorCase(shape: ProfileShape = {}): fc.Arbitrary<GeneratorCase> {
  return arbProfile(shape).chain((profile) => {
    const { stages: S, microbatches: N } = profile;
    return fc
      .record({
        warmup: arbWarmup(S, N),
        extraCap: fc.option(fixedArray(fc.integer({ min: 0, max: N }), S), { nil: undefined }),
        wPlacement: arbWPlacement(S),
        lookAhead: fc.option(fc.oneof(arbLookAhead(), fixedArray(arbLookAhead(), S)), { nil: undefined }),
      })
      .map(({ warmup, extraCap, wPlacement, lookAhead }) => ({
        profile,
        model: toPipelineModel(profile),
        warmup,
        inflightCap: extraCap ? warmup.map((x, i) => x + extraCap[i]) : undefined,
        wPlacement,
        lookAhead,
      }));
  });
}

export function arbLookAhead(): fc.Arbitrary<LookAhead> {
  return fc.integer({ min: LookAhead.None, max: LookAhead.All }).map((l) => l as LookAhead);
}

export function generateCase(c: GeneratorCase): EngineRun {
  return generateSchedule(c.model, { warmup: c.warmup, inflightCap: c.inflightCap, wPlacement: c.wPlacement, lookAhead: c.lookAhead });
}

// ---------------------------------------------------------------------------------------------
// Checkers
// ---------------------------------------------------------------------------------------------

/** Every stage lists every F, B and W of every microbatch exactly once. */
export function exactlyOnceProblems(order: Schedule, stages: number, microbatches: number): string[] {
  const problems: string[] = [];
  if (order.length !== stages) return [`order has ${order.length} stages, expected ${stages}`];
  order.forEach((ops, s) => {
    if (ops.length !== 3 * microbatches) problems.push(`stage ${s} lists ${ops.length} ops, expected ${3 * microbatches}`);
    const seen = new Map<number, number>();
    for (const code of ops) seen.set(code, (seen.get(code) ?? 0) + 1);
    for (let j = 0; j < microbatches; j++) {
      for (const kind of [OP_F, OP_B, OP_W]) {
        const n = seen.get(encodeOp(kind, j)) ?? 0;
        if (n !== 1) problems.push(`stage ${s} lists ${formatOp(encodeOp(kind, j))} ${n} times`);
      }
    }
    for (const code of seen.keys()) {
      if (!(code >= 0 && code < 3 * microbatches)) problems.push(`stage ${s} lists an unknown op code ${code}`);
    }
  });
  return problems;
}

/** Looks up op times of a run by stage, kind and microbatch. */
export function opTimes(run: EngineRun): { start: (s: number, kind: number, j: number) => number; end: (s: number, kind: number, j: number) => number } {
  const M = 3 * run.microbatches;
  return {
    start: (s, kind, j) => run.start[s * M + encodeOp(kind, j)],
    end: (s, kind, j) => run.end[s * M + encodeOp(kind, j)],
  };
}

/**
 * Re-derives every timing rule of a run from scratch:
 * - each op lasts its stage's duration; ops of one stage never overlap and run in `order` sequence;
 * - F_j@s starts after F_j@(s-1) ends plus the link's latency and transfer time;
 * - B_j@s starts after F_j@s, and (s < S-1) after B_j@(s+1) ends plus latency and transfer;
 * - W_j@s starts after B_j@s;
 * - the message log has one message per (link, direction, microbatch), sent when its producer
 *   ends, arriving before its consumer starts, and per link direction FIFO without overlap;
 * - iterationMs is the last end.
 */
export function timelineProblems(model: PipelineModel, run: EngineRun): string[] {
  const S = model.stages;
  const N = model.microbatches;
  const d = model.durations;
  const problems = exactlyOnceProblems(run.order, S, N);
  if (problems.length > 0) return problems;
  const { start, end } = opTimes(run);
  const M = 3 * N;
  const name = (s: number, kind: number, j: number): string => `${formatOp(encodeOp(kind, j))}@${s}`;
  const delay = (link: number): number => model.linkMs[link] + model.transferMs[link];

  let lastEnd = 0;
  for (let s = 0; s < S; s++) {
    let previousEnd = 0;
    for (const code of run.order[s]) {
      const k = s * M + code;
      const kind = opKind(code);
      if (!Number.isFinite(run.start[k]) || run.start[k] < 0) problems.push(`${formatOp(code)}@${s} has start ${run.start[k]}`);
      if (Math.abs(run.end[k] - (run.start[k] + d[s * 3 + kind])) > slack(run.end[k])) {
        problems.push(`${formatOp(code)}@${s} lasts ${run.end[k] - run.start[k]}, expected ${d[s * 3 + kind]}`);
      }
      if (run.start[k] < previousEnd) problems.push(`${formatOp(code)}@${s} starts at ${run.start[k]} before the previous op of its stage ends (${previousEnd})`);
      previousEnd = run.end[k];
      lastEnd = Math.max(lastEnd, run.end[k]);
    }
  }
  if (run.iterationMs !== lastEnd) problems.push(`iterationMs ${run.iterationMs} is not the last end ${lastEnd}`);

  const after = (s: number, kind: number, j: number, earliest: number, why: string): void => {
    if (start(s, kind, j) < earliest - slack(earliest)) problems.push(`${name(s, kind, j)} starts at ${start(s, kind, j)} before ${why} (${earliest})`);
  };
  for (let s = 0; s < S; s++) {
    for (let j = 0; j < N; j++) {
      if (s > 0) after(s, OP_F, j, end(s - 1, OP_F, j) + delay(s - 1), `${name(s - 1, OP_F, j)} ends plus the link delay`);
      after(s, OP_B, j, end(s, OP_F, j), `its own F ends`);
      if (s < S - 1) after(s, OP_B, j, end(s + 1, OP_B, j) + delay(s), `${name(s + 1, OP_B, j)} ends plus the link delay`);
      after(s, OP_W, j, end(s, OP_B, j), `its own B ends`);
    }
  }

  const m = run.messages;
  const expected = 2 * N * Math.max(0, S - 1);
  if (m.count !== expected) problems.push(`message log has ${m.count} messages, expected ${expected}`);
  const seen = new Set<string>();
  const lastOnSlot = new Map<number, { sent: number; txStart: number }>();
  for (let k = 0; k < m.count; k++) {
    const link = m.link[k];
    const dir = m.direction[k];
    const j = m.microbatch[k];
    const key = `${link}/${dir}/${j}`;
    if (seen.has(key)) problems.push(`message ${key} logged twice`);
    seen.add(key);
    const producer = dir === 0 ? end(link, OP_F, j) : end(link + 1, OP_B, j);
    const consumerStart = dir === 0 ? start(link + 1, OP_F, j) : start(link, OP_B, j);
    const transfer = model.transferMs[link];
    if (m.sentMs[k] !== producer) problems.push(`message ${key} sent at ${m.sentMs[k]}, its producer ends at ${producer}`);
    if (m.transferStartMs[k] < m.sentMs[k]) problems.push(`message ${key} starts its transfer before it is sent`);
    if (transfer === 0 && m.transferStartMs[k] !== m.sentMs[k]) problems.push(`message ${key} queued on a link without bandwidth limit`);
    const arrive = m.transferStartMs[k] + transfer + model.linkMs[link];
    if (Math.abs(m.arriveMs[k] - arrive) > slack(arrive)) problems.push(`message ${key} arrives at ${m.arriveMs[k]}, expected ${arrive}`);
    if (consumerStart < m.arriveMs[k] - slack(m.arriveMs[k])) problems.push(`message ${key} arrives at ${m.arriveMs[k]} after its consumer starts (${consumerStart})`);
    const slot = 2 * link + dir;
    const previous = lastOnSlot.get(slot);
    if (previous) {
      if (m.sentMs[k] < previous.sent) problems.push(`message ${key} logged out of send order on link ${link} direction ${dir}`);
      if (m.transferStartMs[k] < previous.txStart + transfer - slack(previous.txStart + transfer)) {
        problems.push(`message ${key} overlaps the previous transfer on link ${link} direction ${dir}`);
      }
    }
    lastOnSlot.set(slot, { sent: m.sentMs[k], txStart: m.transferStartMs[k] });
  }
  return problems;
}

/** Recomputes the peak number of microbatches in flight (F started, B not) per stage from the order. */
export function peakInflightOf(order: Schedule): number[] {
  return order.map((ops) => {
    let inflight = 0;
    let peak = 0;
    for (const code of ops) {
      if (opKind(code) === OP_F) peak = Math.max(peak, ++inflight);
      else if (opKind(code) === OP_B) inflight--;
    }
    return peak;
  });
}

/** Recomputes peak ZeroBubble memory per stage (deltas apply at op start, running total starts at 0). */
export function peakMemoryOf(order: Schedule, memory: MemoryProfile): number[] {
  return order.map((ops, s) => {
    const delta = [memory.afterF[s], memory.afterB[s], memory.afterW[s]];
    let total = 0;
    let peak = 0;
    for (const code of ops) {
      total += delta[opKind(code)];
      peak = Math.max(peak, total);
    }
    return peak;
  });
}

/** The op names of a stage in order, for readable expectations. */
export function namesOf(ops: ArrayLike<number>): string[] {
  return Array.from(ops, formatOp);
}

/** Builds a schedule from op names (no validation: tests use it to build broken schedules too). */
export function scheduleOf(stages: string[][]): Schedule {
  return stages.map((ops) =>
    Int32Array.from(ops, (token) => encodeOp('FBW'.indexOf(token[0]), Number(token.slice(1)))),
  );
}

/** Runs `fn` and returns the InputError it throws; fails the test if it throws nothing or another error. */
export function inputErrorOf(fn: () => unknown): InputError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return error as InputError;
  }
  throw new Error('expected an InputError, but nothing was thrown');
}

// ---------------------------------------------------------------------------------------------
// Self-tests: each checker must be able to fail.
// ---------------------------------------------------------------------------------------------

if ((expect.getState().testPath ?? '').endsWith('run-checks.spec.ts')) {
  const uniform = (S: number, N: number, link = 0): PipelineModel =>
    toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs: Array(S).fill(1), bMs: Array(S).fill(2), wMs: Array(S).fill(3), linkMs: Array(S - 1).fill(link) }));

  /** A writable copy of a run so a test can corrupt one field. */
  const copyRun = (run: EngineRun): EngineRun & { start: Float64Array; end: Float64Array } => ({
    ...run,
    order: run.order.map((ops) => ops.slice()),
    start: run.start.slice(),
    end: run.end.slice(),
  });

  describe('test kit: exactlyOnceProblems', () => {
    it('accepts a complete schedule', () => {
      expect(exactlyOnceProblems(scheduleOf([['F0', 'B0', 'W0', 'F1', 'B1', 'W1']]), 1, 2)).toEqual([]);
    });

    it('reports a duplicated and a missing op', () => {
      const problems = exactlyOnceProblems(scheduleOf([['F0', 'B0', 'W0', 'F1', 'B1', 'B1']]), 1, 2);
      expect(problems).toEqual(expect.arrayContaining(['stage 0 lists B1 2 times', 'stage 0 lists W1 0 times']));
    });

    it('reports a wrong stage count', () => {
      expect(exactlyOnceProblems(scheduleOf([['F0', 'B0', 'W0']]), 2, 1)).toEqual(['order has 1 stages, expected 2']);
    });
  });

  describe('test kit: timelineProblems', () => {
    const model = uniform(2, 3, 0.5);
    const good = generateSchedule(model, { warmup: [2, 1] });

    it('accepts a generated run', () => {
      expect(timelineProblems(model, good)).toEqual([]);
    });

    it('rejects an F that starts before its activation arrives', () => {
      const bad = copyRun(good);
      const k = 3 * 3 + encodeOp(OP_F, 0); // F0 on stage 1
      bad.start[k] -= 0.25;
      bad.end[k] -= 0.25;
      expect(timelineProblems(model, bad).join('\n')).toMatch(/F0@1 starts .* before F0@0 ends plus the link delay/);
    });

    it('rejects a W that starts before its own B ends', () => {
      const bad = copyRun(good);
      const k = encodeOp(OP_W, 2); // W2 on stage 0
      bad.start[k] = bad.end[encodeOp(OP_B, 2)] - 1;
      bad.end[k] = bad.start[k] + 3;
      expect(timelineProblems(model, bad).join('\n')).toMatch(/W2@0 starts .* before its own B ends/);
    });

    it('rejects overlapping ops on one stage and a wrong duration', () => {
      const bad = copyRun(good);
      bad.end[encodeOp(OP_F, 0)] += 5;
      const text = timelineProblems(model, bad).join('\n');
      expect(text).toMatch(/F0@0 lasts 6, expected 1/);
      expect(text).toMatch(/starts at .* before the previous op of its stage ends/);
    });

    it('rejects overlapping transfers on one link direction', () => {
      // 1 MB over 1 GB/s occupies the link for 1 ms; F1 leaves stage 0 while F0 still occupies the link, so it queues.
      const profile = validateProfile({ stages: 2, microbatches: 2, fMs: [0.5, 1], bMs: [1, 1], wMs: [1, 1], linkMs: [0], linkBytes: [1e6], linkGBps: [1] });
      const bw = toPipelineModel(profile);
      const run = generateSchedule(bw, { warmup: [2, 1] });
      expect(timelineProblems(bw, run)).toEqual([]);
      const txStart = run.messages.transferStartMs.slice();
      txStart[1] = txStart[0]; // the second forward message pretends to start with the first
      const bad = { ...run, messages: { ...run.messages, transferStartMs: txStart } };
      expect(timelineProblems(bw, bad).join('\n')).toMatch(/overlaps the previous transfer on link 0 direction 0/);
    });
  });

  describe('test kit: peaks', () => {
    it('counts in-flight microbatches and memory from an order', () => {
      const order = scheduleOf([['F0', 'F1', 'B0', 'W0', 'F2', 'B1', 'B2', 'W1', 'W2']]);
      expect(peakInflightOf(order)).toEqual([2]);
      expect(peakMemoryOf(order, { afterF: [4], afterB: [-1], afterW: [-3], limit: [100] })).toEqual([8]); // 4, 8, 7, 4, 8, 7, 6, 3, 0
    });
  });

  describe('test kit: arbitraries', () => {
    it('produce valid, non-increasing warm-up counts within 1..N', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 8 }).chain((S) => fc.integer({ min: 1, max: 24 }).chain((N) => arbWarmup(S, N).map((w) => ({ S, N, w })))),
          ({ S, N, w }) => {
            expect(w).toHaveLength(S);
            w.forEach((x, i) => {
              expect(x).toBeGreaterThanOrEqual(1);
              expect(x).toBeLessThanOrEqual(N);
              if (i > 0) expect(x).toBeLessThanOrEqual(w[i - 1]);
            });
          },
        ),
        { numRuns: 100 },
      );
    });
  });
}
