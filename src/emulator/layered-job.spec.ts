import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { formatSchedule, warmupOf } from '../core/pipeline/schedule';
import { planPipeline } from '../core/planner/plan';
import { ControlEvent, PublishedSchedule } from '../protocol/protocol-v1.type';
import { constantDelay } from './delay/constant-delay';
import { DeclaredLayers, DEFAULT_EMULATION, EmulatedJob, IterationResult, ScheduleLayers } from './emulated-job';
import { RankSet } from './rank-set.model';
import { layeredStragglerJob, layeredStragglerScenario } from './scenarios';

/** 4 stages of 3 layers (1 ms F, B and W each, 1 GB of state each), 12 microbatches. */
const declared: DeclaredLayers = {
  fMs: new Array(12).fill(1),
  bMs: new Array(12).fill(1),
  wMs: new Array(12).fill(1),
  stateBytes: new Array(12).fill(1e9),
  activationBytes: new Array(12).fill(1e8),
  perStage: [3, 3, 3, 3],
};
const profile = (perStage: number[]) => ({ stages: 4, microbatches: 12, fMs: perStage.slice(), bMs: perStage.slice(), wMs: perStage.slice(), linkMs: [0.1, 0.1, 0.1] });
const noJitter = { ...DEFAULT_EMULATION, jitter: 0 };
/** Rank 1 1.5x slower in compute from the start. */
const slow = [{ rank: 1, factor: 1.5, fromIteration: 0 }];
const layeredJob = (perStage = [3, 3, 3, 3], dp = 1) => new EmulatedJob('j', profile(perStage), dp, constantDelay({}), noJitter, { layers: { declared: { ...declared, perStage } }, computeSlowdowns: slow });
const zb = planPipeline(toPipelineModel(profile([3, 3, 3, 3])), { policy: 'initial' }).run.order;
/** Layer 3 moves from stage 1 to stage 0: stage 1 (the slow rank) keeps 2 layers. */
const split: ScheduleLayers = { version: 1, sinceVersion: 2, perStage: [4, 2, 3, 3], moves: [{ firstLayer: 3, lastLayer: 3, fromStage: 1, toStage: 0, bytes: 1e9 }] };

function schedule(version: number, effectiveIteration: number, layers?: ScheduleLayers, dp = 1): PublishedSchedule {
  return {
    protocol: 1, jobId: 'j', version, epoch: 1, state: 'committed', effectiveIteration, createdAt: 0,
    pipelines: [{ dpReplicas: Array.from({ length: dp }, (_, d) => d), warmup: warmupOf(zb), stages: formatSchedule(zb) }],
    delegation: [],
    reason: { kind: layers && layers.moves.length > 0 ? 'rebalance' : 'initial', links: [], detail: '' },
    prediction: { previousMs: null, newMs: 1 },
    ...(layers ? { layers } : {}),
  };
}

/** The ranks of `job` run v1, then v2 (carrying the split) from iteration 2, then v3 (the same split, nothing to move) from 4: 6 iterations. */
function runWithSplit(job: EmulatedJob): { set: RankSet; results: IterationResult[] } {
  const set = new RankSet(job);
  const results: IterationResult[] = [];
  const dp = job.dp;
  set.views.forEach((v) => set.connect(v, '0-0', 1, schedule(1, 0, undefined, dp)));
  results.push(set.run());
  const event = (type: 'prepare' | 'commit', version: number, k: number) => ({ type, protocol: 1, jobId: 'j', version, epoch: 1, effectiveIteration: k }) as ControlEvent;
  const steps: Array<[number, number, ScheduleLayers]> = [[2, 2, split], [3, 4, { ...split, moves: [] }]];
  for (const [version, k, layers] of steps) {
    for (const v of set.views) {
      set.onEvent(v, `${version}-0`, event('prepare', version, k));
      expect(set.answer(v, v.toAnswer.splice(0)[0], { ...schedule(version, k, layers, dp), state: 'prepared' })?.accepted).toBe(true);
      set.onEvent(v, `${version}-1`, event('commit', version, k));
    }
    while (set.iteration < k) results.push(set.run());
  }
  while (set.iteration < 6) results.push(set.run());
  return { set, results };
}

/**
 * What a published split must do in the model, as problems (none: it did): every rank's reported
 * op times are the registered split's sums times its slowdown before the switch iteration (2) and
 * the new split's from it on; the switch iteration pays the handoff of the moved layer (1 GB at
 * 10 GB/s: 100 ms) and no other does; and the iterations after it take what a job registered with
 * the new split takes.
 */
function splitProblems(results: IterationResult[], dp = 1): string[] {
  const problems: string[] = [];
  // Rank r holds stage r % 4 of replica floor(r / 4); only rank 1 (stage 1 of replica 0) is slow.
  const expectedF = (iteration: number, rank: number) => (iteration < 2 ? 3 : split.perStage[rank % 4]) * (rank === 1 ? 1.5 : 1);
  for (const r of results) {
    for (const report of r.reports) {
      const want = expectedF(r.iteration, report.rank);
      if (Math.abs(report.computeMs.f - want) > 1e-9) problems.push(`iteration ${r.iteration}: rank ${report.rank} F ${report.computeMs.f} ms, expected ${want}`);
    }
    const handoff = r.iteration === 2 ? 100 : 0;
    if (Math.abs(r.handoffMs - handoff) > 1e-9) problems.push(`iteration ${r.iteration}: handoff ${r.handoffMs} ms, expected ${handoff}`);
  }
  const registered = layeredJob(split.perStage, dp).runIteration(0, Array.from({ length: dp }, () => ({ schedule: zb, delegation: new Map() })), new Array(4 * dp).fill(0)).iterationMs;
  for (const i of [2, 3, 4, 5]) {
    const ms = results[i].iterationMs - results[i].handoffMs;
    if (Math.abs(ms - registered) > 1e-9) problems.push(`iteration ${i}: ${ms} ms of pipeline, a job registered with [${split.perStage}] takes ${registered}`);
  }
  return problems;
}

describe('EmulatedJob with layers (re-balancing under the model)', () => {
  it("a published split changes the stage times at the switch iteration, which pays the moved layers' handoff", () => {
    const { set, results } = runWithSplit(layeredJob());
    expect(splitProblems(results)).toEqual([]);
    expect(set.history.map((h) => h.layersVersion)).toEqual([0, 0, 1, 1, 1, 1]);
    expect(set.history.map((h) => h.versions[0])).toEqual([1, 1, 2, 2, 3, 3]);
    expect(set.job.perStage).toEqual([4, 2, 3, 3]);
    // Before: the slow stage's 3 layers at 1.5x (4.5 ms ops) pace the pipeline; after, stage 0's 4 (4 ms).
    expect(results[3].iterationMs).toBeLessThan(0.95 * results[1].iterationMs);
    expect(results[2].iterationMs).toBeCloseTo(results[3].iterationMs + 100, 9);
  });

  it('with two replicas, both move the same layers at the same iteration (one handoff: they move in parallel)', () => {
    const { set, results } = runWithSplit(layeredJob([3, 3, 3, 3], 2));
    expect(splitProblems(results, 2)).toEqual([]);
    expect(results[3].reports.filter((r) => r.rank >= 4).map((r) => r.computeMs.f)).toEqual([4, 2, 3, 3]);
    expect(set.mixedIterations()).toEqual([]);
  });

  it('twin: ranks that ignore the split (a job without layers) fail the same check', () => {
    const ignoring = new EmulatedJob('j', profile([3, 3, 3, 3]), 1, constantDelay({}), noJitter, { computeSlowdowns: slow });
    const { set, results } = runWithSplit(ignoring);
    const problems = splitProblems(results);
    expect(problems).toEqual(expect.arrayContaining(['iteration 2: handoff 0 ms, expected 100', 'iteration 2: rank 0 F 3 ms, expected 4', 'iteration 3: rank 1 F 4.5 ms, expected 3']));
    expect(set.history.map((h) => h.layersVersion)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('the registration declares the layers; a split that does not share them out, or stage times that are not their sums, are refused', () => {
    const job = layeredJob();
    expect(new RankSet(job).registration([12, 12, 12, 12], 64).layers).toEqual(declared);
    expect(() => job.applyLayers({ ...split, version: 2, perStage: [4, 2, 3, 2] })).toThrow('layers version 2: perStage shares out 11 layers, the job declared 12');
    expect(job.perStage).toEqual([3, 3, 3, 3]);
    expect(() => new EmulatedJob('j', profile([4, 2, 3, 3]), 1, constantDelay({}), noJitter, { layers: { declared } })).toThrow("stage 0's profile times 4 / 4 / 4 ms are not its layers' sums 3 / 3 / 3 ms");
  });

  it('the bench scenario: 8 stages of 8 layers, rank 3 1.5x slower from iteration 20 (op times 12 ms, not 8)', () => {
    const scenario = layeredStragglerScenario();
    const job = layeredStragglerJob(scenario, 'x');
    expect(job.computeFactor(3, 19)).toBe(1);
    expect(job.computeFactor(3, 20)).toBe(1.5);
    expect(layeredStragglerJob(scenario, 'x', true).computeFactor(3, 20)).toBe(1);
    expect(scenario.profile.fMs).toEqual(new Array(8).fill(8));
  });
});
