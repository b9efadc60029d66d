import fc from 'fast-check';
import loadHighs from 'highs';
import { simulateSchedule } from '../engine/simulator';
import { EngineRun } from '../engine/engine-run.type';
import { encodeOp } from '../pipeline/op';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { iterationLowerBoundMs, opHeadsAndTails } from './lower-bound';
import { propagatedWindows } from './op-windows';
import { OpWindows } from './op-windows.type';
import { MilpSolver, optimalPlan } from './optimal-planner';
import { planPipeline } from './plan';
import { scheduleWithin } from './schedule-within';

// Soundness of everything the exact planner proves with: the combinatorial bound, the op windows
// propagated from a target and the depth-first search's pruning (heads from the partial schedule
// against the deadlines, a preemptive single machine per stage, dead ends remembered) must never
// rule out a schedule that exists. Real schedules: random per-stage orders (ops of one kind
// in microbatch order, F_j < B_j < W_j, as the planner assumes), replayed by the simulator.

const instance = fc.record({
  S: fc.integer({ min: 2, max: 3 }),
  N: fc.integer({ min: 2, max: 4 }),
  ms: fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 9, maxLength: 9 }),
  links: fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 2, maxLength: 2 }),
  // Per stage, a choice per position of which ready kind runs next.
  picks: fc.array(fc.array(fc.nat(), { minLength: 12, maxLength: 12 }), { minLength: 3, maxLength: 3 }),
});

function modelOf(c: { S: number; N: number; ms: number[]; links: number[] }): PipelineModel {
  const ms = (k: number) => Array.from({ length: c.S }, (_, i) => c.ms[i * 3 + k]);
  return toPipelineModel(validateProfile({ stages: c.S, microbatches: c.N, fMs: ms(0), bMs: ms(1), wMs: ms(2), linkMs: c.links.slice(0, c.S - 1) }));
}

/** A per-stage order from the picks, or null when it deadlocks. */
function realSchedule(model: PipelineModel, picks: number[][]): EngineRun | null {
  const { stages: S, microbatches: N } = model;
  const schedule = Array.from({ length: S }, (_, i) => {
    const next = [0, 0, 0];
    const out: number[] = [];
    for (let t = 0; t < 3 * N; t++) {
      const ready = [0, 1, 2].filter((k) => next[k] < N && (k === 0 || next[k] < next[k - 1]));
      const k = ready[picks[i][t] % ready.length];
      out.push(encodeOp(k, next[k]++));
    }
    return Int32Array.from(out);
  });
  try {
    return simulateSchedule(model, schedule);
  } catch {
    return null;
  }
}

/** Ops of the run outside the windows (index as in OpWindows). */
function outside(model: PipelineModel, run: EngineRun, windows: OpWindows): number[] {
  const { stages: S, microbatches: N } = model;
  const bad: number[] = [];
  for (let i = 0; i < S; i++) {
    for (let k = 0; k < 3; k++) {
      for (let j = 0; j < N; j++) {
        const x = (i * 3 + k) * N + j;
        const code = i * 3 * N + encodeOp(k, j);
        if (run.start[code] < windows.est[x] - 1e-6 || run.end[code] > windows.lct[x] + 1e-6) bad.push(x);
      }
    }
  }
  return bad;
}

const unlimited = { maxNodes: 10_000_000, deadline: Number.POSITIVE_INFINITY, now: () => 0 };

describe('bounds and propagation are sound (never above a real schedule)', () => {
  it('the bound, the windows at its iteration time and the depth-first search all admit every real schedule', () => {
    let checked = 0;
    fc.assert(
      fc.property(instance, (c) => {
        const model = modelOf(c);
        const run = realSchedule(model, c.picks);
        if (!run) return;
        checked++;
        const target = run.iterationMs * (1 + 1e-9);
        expect(iterationLowerBoundMs(model)).toBeLessThanOrEqual(target);
        const windows = propagatedWindows(model, opHeadsAndTails(model), target);
        expect(windows).not.toBeNull();
        expect(outside(model, run, windows!)).toEqual([]);
        expect(scheduleWithin(model, windows!, target, unlimited)).not.toBe('infeasible');
      }),
      { numRuns: 300, seed: 20261123 },
    );
    expect(checked).toBeGreaterThan(100);
  });

  it('can fail: windows tightened by 0.5 ms too much are caught by the same check', () => {
    expect(() =>
      fc.assert(
        fc.property(instance, (c) => {
          const model = modelOf(c);
          const run = realSchedule(model, c.picks);
          if (!run) return;
          const target = run.iterationMs * (1 + 1e-9);
          const windows = propagatedWindows(model, opHeadsAndTails(model), target)!;
          const tight = { est: windows.est, lct: windows.lct.map((t) => t - 0.5) };
          expect(outside(model, run, tight)).toEqual([]);
          expect(scheduleWithin(model, tight, target, unlimited)).not.toBe('infeasible');
        }),
        { numRuns: 300, seed: 20261123 },
      ),
    ).toThrow();
  });

  // At a real schedule's time the pruning rarely bites; at the optimum (proven by HiGHS alone,
  // without the search) every op is tight and the remembered dead ends are many.
  const tight = fc.record({
    S: fc.integer({ min: 2, max: 4 }),
    N: fc.integer({ min: 3, max: 6 }),
    ms: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 12, maxLength: 12 }),
    links: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 3, maxLength: 3 }),
  });
  let highs: MilpSolver;
  beforeAll(async () => {
    highs = await loadHighs();
  });
  const optimum = (model: PipelineModel): number | null => {
    const result = optimalPlan(model, highs, planPipeline(model, { policy: 'gpipe' }).run, { timeLimitMs: 20_000, depthFirst: false });
    return result.proven ? result.run.iterationMs : null;
  };

  it('at the proven optimum the depth-first search finds a schedule, and just below it none', () => {
    let checked = 0;
    fc.assert(
      fc.property(tight, (c) => {
        const model = modelOf(c);
        const best = optimum(model);
        if (best === null) return;
        checked++;
        const at = best * (1 + 1e-9);
        const windows = propagatedWindows(model, opHeadsAndTails(model), at);
        expect(windows).not.toBeNull();
        const found = scheduleWithin(model, windows!, at, unlimited);
        expect(found).not.toBe('infeasible');
        expect(found).not.toBe('unknown');
        expect(simulateSchedule(model, found as Int32Array[]).iterationMs).toBeLessThanOrEqual(at + 1e-6);
        const below = best * (1 - 1e-4);
        const under = propagatedWindows(model, opHeadsAndTails(model), below);
        if (under) expect(scheduleWithin(model, under, below, unlimited)).toBe('infeasible');
      }),
      { numRuns: 40, seed: 20261123 },
    );
    expect(checked).toBeGreaterThan(30);
  });

  it('can fail: deadlines 0.5 ms too tight at the optimum are caught by the same check', () => {
    expect(() =>
      fc.assert(
        fc.property(tight, (c) => {
          const model = modelOf(c);
          const best = optimum(model);
          if (best === null) return;
          const at = best * (1 + 1e-9);
          const windows = propagatedWindows(model, opHeadsAndTails(model), at)!;
          const shrunk = { est: windows.est, lct: windows.lct.map((t) => t - 0.5) };
          expect(scheduleWithin(model, shrunk, at, unlimited)).not.toBe('infeasible');
        }),
        { numRuns: 40, seed: 20261123 },
      ),
    ).toThrow();
  });
});
