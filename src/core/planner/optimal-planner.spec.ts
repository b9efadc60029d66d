import loadHighs from 'highs';
import { simulateSchedule } from '../engine/simulator';
import { encodeOp, OP_B, OP_F, OP_W, opKind, opMicrobatch } from '../pipeline/op';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { iterationLowerBoundMs } from './lower-bound';
import { MilpSolver, optimalPlan } from './optimal-planner';
import { planPipeline } from './plan';
import { seededRandom } from './seeded-random';

let highs: MilpSolver;
beforeAll(async () => {
  highs = await loadHighs();
});

function randomModel(seed: number, stages: number, microbatches: number, lo = 1, hi = 9): PipelineModel {
  const random = seededRandom(seed);
  const int = (a: number, b: number) => a + Math.floor(random() * (b - a + 1));
  const ms = () => Array.from({ length: stages }, () => int(lo, hi));
  const linkMs = Array.from({ length: stages - 1 }, () => (random() < 0.5 ? int(5, 4 * hi) : 0));
  return toPipelineModel(validateProfile({ stages, microbatches, fMs: ms(), bMs: ms(), wMs: ms(), linkMs }));
}

/** Every order of one stage's ops that keeps F_j < B_j < W_j (any other order deadlocks); optionally ops of one kind in microbatch order. */
function stageOrders(N: number, kindOrdered: boolean): Int32Array[] {
  const out: Int32Array[] = [];
  const ops = Array.from({ length: 3 * N }, (_, c) => c);
  const used = new Uint8Array(3 * N);
  const seq: number[] = [];
  const ready = (c: number) => {
    const k = opKind(c);
    const j = opMicrobatch(c);
    if (k > 0 && !used[encodeOp(k - 1, j)]) return false;
    return !kindOrdered || j === 0 || used[encodeOp(k, j - 1)] === 1;
  };
  const walk = () => {
    if (seq.length === 3 * N) return void out.push(Int32Array.from(seq));
    for (const c of ops) {
      if (used[c] || !ready(c)) continue;
      used[c] = 1;
      seq.push(c);
      walk();
      seq.pop();
      used[c] = 0;
    }
  };
  walk();
  return out;
}

/** The best iteration time over every combination of per-stage orders (deadlocks skipped). */
function bruteForceMs(model: PipelineModel, kindOrdered: boolean): number {
  const orders = stageOrders(model.microbatches, kindOrdered);
  const pick = new Array<number>(model.stages).fill(0);
  let best = Number.POSITIVE_INFINITY;
  for (;;) {
    try {
      best = Math.min(best, simulateSchedule(model, pick.map((o) => orders[o])).iterationMs);
    } catch {
      // deadlock: not a schedule
    }
    let s = 0;
    while (s < model.stages && ++pick[s] === orders.length) pick[s++] = 0;
    if (s === model.stages) return best;
  }
}

describe('optimalPlan', () => {
  it.each([
    [2, 2, false, 1],
    [2, 2, false, 2],
    [3, 2, false, 3],
    [2, 3, true, 4],
    [2, 3, true, 5],
  ])('equals brute force over every per-stage order (S = %d, N = %d, kind order fixed: %s, seed %d), with and without the depth-first search', (S, N, kindOrdered, seed) => {
    const model = randomModel(seed, S, N);
    // A deliberately poor warm start (GPipe) so the MILP has work to do.
    const warm = planPipeline(model, { policy: 'gpipe' }).run;
    const best = bruteForceMs(model, kindOrdered);
    for (const depthFirst of [true, false]) {
      const exact = optimalPlan(model, highs, warm, { timeLimitMs: 5000, depthFirst });
      expect(exact.proven).toBe(true);
      expect(exact.run.iterationMs).toBeCloseTo(best, 6);
    }
  });

  it.each([[true], [false]])('equals brute force on 30 more tiny instances (S x N = 2 x 2, 2 x 3, 3 x 2; slow links), most of them needing the exact search (depth-first search: %s)', (depthFirst) => {
    let solved = 0;
    for (let seed = 100; seed < 130; seed++) {
      const [S, N] = [[2, 2], [2, 3], [3, 2]][seed % 3];
      const model = randomModel(seed, S, N, 1, 12);
      const exact = optimalPlan(model, highs, planPipeline(model, { policy: 'gpipe' }).run, { timeLimitMs: 5000, depthFirst });
      expect(exact.proven).toBe(true);
      expect(exact.run.iterationMs).toBeCloseTo(bruteForceMs(model, true), 6);
      // The MILP stops within its relative gap (1e-6): its value may sit that far above the replay.
      if (!depthFirst && exact.milpObjectiveMs !== null) expect(Math.abs(exact.milpObjectiveMs - exact.run.iterationMs)).toBeLessThanOrEqual(2e-6 * exact.run.iterationMs);
      if (!exact.warmStartKept) solved++;
    }
    expect(solved).toBeGreaterThan(15);
  });

  it('can fail: the brute-force check catches an MILP solved for a slightly different model (one op 1 ms longer)', () => {
    const model = randomModel(2, 2, 2);
    const d = Float64Array.from(model.durations);
    d[3 + OP_B] += 1; // stage 1's B, which every microbatch's critical path crosses
    const perturbed = { ...model, durations: d };
    const wrong = optimalPlan(perturbed, highs, planPipeline(perturbed, { policy: 'gpipe' }).run, { timeLimitMs: 5000 });
    expect(wrong.proven).toBe(true);
    expect(Math.abs(wrong.run.iterationMs - bruteForceMs(model, false))).toBeGreaterThan(0.5);
  });

  it('replays to the MILP objective through the simulator and never returns worse than its warm start (S = 4-5, N = 6-8)', () => {
    for (let seed = 10; seed < 13; seed++) {
      const model = randomModel(seed, 4 + (seed % 2), 6 + (seed % 3), 5, 20);
      const warm = planPipeline(model, { policy: 'adaptive' }).run;
      const exact = optimalPlan(model, highs, warm, { timeLimitMs: 3000 });
      expect(exact.run.iterationMs).toBeLessThanOrEqual(warm.iterationMs);
      expect(simulateSchedule(model, exact.run.order).iterationMs).toBe(exact.run.iterationMs);
      if (exact.milpObjectiveMs !== null) expect(exact.run.iterationMs).toBeCloseTo(exact.milpObjectiveMs, 6);
      expect(exact.boundMs).toBeGreaterThanOrEqual(iterationLowerBoundMs(model) - 1e-9);
      expect(exact.boundMs).toBeLessThanOrEqual(exact.run.iterationMs + 1e-9);
      if (exact.proven) expect(exact.gap).toBeLessThan(1e-5);
    }
  });

  it('can fail: a schedule solved for links faster than the real ones replays slower than its value', () => {
    const model = randomModel(21, 3, 4, 5, 20);
    const fast = { ...model, linkMs: model.linkMs.map(() => 0) };
    const wrong = optimalPlan(fast, highs, planPipeline(fast, { policy: 'gpipe' }).run, { timeLimitMs: 3000 });
    expect(wrong.proven).toBe(true);
    expect(simulateSchedule(model, wrong.run.order).iterationMs).toBeGreaterThan(wrong.run.iterationMs + 1);
  });

  it('the optimal policy: search warm start, gap and bound reported, never worse than search', () => {
    const model = randomModel(31, 4, 8, 5, 20);
    const search = planPipeline(model, { policy: 'search', search: { timeBudgetMs: 60_000, maxEvaluations: 200 } });
    const plan = planPipeline(model, { policy: 'optimal', search: { timeBudgetMs: 60_000, maxEvaluations: 200 }, optimal: { solver: highs, timeLimitMs: 3000 } });
    expect(plan.policy).toBe('optimal');
    expect(plan.run.iterationMs).toBeLessThanOrEqual(search.run.iterationMs);
    expect(plan.optimal!.searchIterationMs).toBe(search.run.iterationMs);
    expect(plan.warmup).toHaveLength(4);
    plan.warmup.forEach((x, i) => expect(plan.run.order[i].slice(0, x).every((c) => opKind(c) === OP_F)).toBe(true));
    expect(() => planPipeline(model, { policy: 'optimal' })).toThrow(/highs/);
  });

  it('keeps the ops of one kind in microbatch order (the fact that keeps the binaries few)', () => {
    const model = randomModel(41, 3, 5, 5, 20);
    const exact = optimalPlan(model, highs, planPipeline(model, { policy: 'gpipe' }).run, { timeLimitMs: 3000 });
    for (const stage of exact.run.order) {
      for (const kind of [OP_F, OP_B, OP_W]) {
        const js = Array.from(stage).filter((c) => opKind(c) === kind).map(opMicrobatch);
        expect(js).toEqual([...js].sort((a, b) => a - b));
      }
    }
  });
});

describe('optimalPlan under a transport (head-of-line blocking, delegate queues)', () => {
  // 4 stages x 8 microbatches, a 60 ms straggler on link 1: the daemon's refinement instance in bench:scale-out.
  const plain = toPipelineModel(validateProfile({ stages: 4, microbatches: 8, fMs: [10, 10, 10, 10], bMs: [10, 10, 10, 10], wMs: [10, 10, 10, 10], linkMs: [1, 61, 1], linkBytes: [1 << 24, 1 << 24, 1 << 24], linkGBps: [25, 25, 25] }));
  const withQueues = (queues: number): PipelineModel => ({
    ...plain,
    transport: { gpuSlots: Int32Array.from([1, 1, 1]), delegateQueues: Int32Array.from([0, queues, 0]), copyOverhead: Float64Array.from([0, queues ? 0.02 : 0, queues ? 0.02 : 0, 0]) },
  });

  it.each([0, 2, 8])('stops once the relaxed problem is settled, never at its time limit, and is never worse than its warm start (%d delegate queues)', (queues) => {
    const model = withQueues(queues);
    const warm = planPipeline(model, { policy: 'adaptive' }).run;
    // A clock that only moves when read: the call ends by settling long before 1e6 readings.
    let t = 0;
    const result = optimalPlan(model, highs, warm, { timeLimitMs: 1_000_000, now: () => t++ });
    expect(result.settled).toBe(true);
    expect(t).toBeLessThan(1_000_000);
    expect(result.run.iterationMs).toBeLessThanOrEqual(warm.iterationMs);
    expect(simulateSchedule(model, result.run.order).iterationMs).toBeCloseTo(result.run.iterationMs, 6);
    // Its twin: under the transport no schedule is proven optimal, so a call that stopped only on
    // a proof (the rule before) could never end before its time limit.
    expect(result.proven).toBe(false);
  });

  it('on a model without a transport, settled and proven are the same', () => {
    const warm = planPipeline(plain, { policy: 'adaptive' }).run;
    const result = optimalPlan(plain, highs, warm, { timeLimitMs: 10_000 });
    expect(result.settled).toBe(result.proven);
    expect(result.proven).toBe(true);
  });
});
