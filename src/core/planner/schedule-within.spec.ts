import loadHighs from 'highs';
import { simulateSchedule } from '../engine/simulator';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { opHeadsAndTails } from './lower-bound';
import { propagatedWindows } from './op-windows';
import { MilpSolver, optimalPlan } from './optimal-planner';
import { planPipeline } from './plan';
import { scheduleWithin } from './schedule-within';
import { seededRandom } from './seeded-random';

let highs: MilpSolver;
beforeAll(async () => {
  highs = await loadHighs();
});

function randomModel(seed: number, stages: number, microbatches: number) {
  const random = seededRandom(seed);
  const int = (a: number, b: number) => a + Math.floor(random() * (b - a + 1));
  const ms = () => Array.from({ length: stages }, () => int(2, 12));
  const linkMs = Array.from({ length: stages - 1 }, () => (random() < 0.5 ? int(5, 30) : 0));
  return toPipelineModel(validateProfile({ stages, microbatches, fMs: ms(), bMs: ms(), wMs: ms(), linkMs }));
}

const unlimited = { maxNodes: 10_000_000, deadline: Number.POSITIVE_INFINITY, now: () => 0 };

describe('scheduleWithin', () => {
  it('finds a schedule at the MILP-only optimum and proves none exists just below it (S = 3-4, N = 4-5)', () => {
    for (let seed = 1; seed <= 8; seed++) {
      const model = randomModel(seed, 3 + (seed % 2), 4 + (seed % 2));
      const optimum = optimalPlan(model, highs, planPipeline(model, { policy: 'gpipe' }).run, { timeLimitMs: 10_000, depthFirst: false });
      expect(optimum.proven).toBe(true);
      const at = optimum.run.iterationMs * (1 + 1e-9);
      const found = scheduleWithin(model, propagatedWindows(model, opHeadsAndTails(model), at)!, at, unlimited);
      expect(typeof found).toBe('object');
      expect(simulateSchedule(model, found as Int32Array[]).iterationMs).toBeLessThanOrEqual(at);
      const below = optimum.run.iterationMs * (1 - 1e-4);
      const windows = propagatedWindows(model, opHeadsAndTails(model), below);
      if (windows) expect(scheduleWithin(model, windows, below, unlimited)).toBe('infeasible');
    }
  });

  it('can fail: with too small a node budget it answers unknown, never a wrong infeasible', () => {
    const model = randomModel(3, 4, 8);
    const optimum = optimalPlan(model, highs, planPipeline(model, { policy: 'gpipe' }).run, { timeLimitMs: 10_000 });
    const below = optimum.boundMs * (1 - 1e-4);
    const windows = propagatedWindows(model, opHeadsAndTails(model), below);
    // Below the optimum one node may already prove it (the heads at the root); none is 'unknown'.
    if (windows) expect(['unknown', 'infeasible']).toContain(scheduleWithin(model, windows, below, { ...unlimited, maxNodes: 1 }));
    if (windows) expect(scheduleWithin(model, windows, below, { ...unlimited, maxNodes: 0 })).toBe('unknown');
    const at = optimum.run.iterationMs * (1 + 1e-9);
    expect(scheduleWithin(model, propagatedWindows(model, opHeadsAndTails(model), at)!, at, { ...unlimited, maxNodes: 1 })).toBe('unknown');
  });

  it('searches a pipeline deeper than the call stack (16 x 64: 3,072 levels) to a schedule, and replays it', () => {
    const model = randomModel(16, 16, 64);
    const start = planPipeline(model, { policy: '1f1b' }).run;
    // A loose target: the first dive finds a schedule. A search recursing once per level overflows
    // the stack here (it answered 'unknown').
    const target = start.iterationMs * 1.5;
    const found = scheduleWithin(model, propagatedWindows(model, opHeadsAndTails(model), target)!, target, { ...unlimited, maxNodes: 20_000 });
    expect(found).not.toBe('unknown');
    expect(found).not.toBe('infeasible');
    expect(simulateSchedule(model, found as Int32Array[]).iterationMs).toBeLessThanOrEqual(target + 1e-6);
  });
});
