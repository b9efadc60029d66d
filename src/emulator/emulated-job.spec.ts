import { InputError } from '../core/input-error';
import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { deviceInflightCaps } from '../core/planner/initial-planner';
import { planPipeline } from '../core/planner/plan';
import { chunkMs, iterationWithAllReduceMs, ringAllReduceMs } from '../core/topology/all-reduce';
import { fixedScheduleFinish } from '../core/topology/stage-finish';
import { AllReduceModel } from '../core/topology/topology.type';
import { TopologyAssignment } from '../protocol/protocol-v1.type';
import { constantDelay } from './delay/constant-delay';
import { stepDelay } from './delay/step-delay';
import { AllReduceConfig, DEFAULT_EMULATION, EmulatedJob, ReplicaPlan } from './emulated-job';
import { rackLocalities, staticFabric } from './fabric/static-fabric';
import { megatron8, uniform4 } from './scenarios';
import { runStaticPolicy } from './static-policy';

const u4 = uniform4();
const noJitter = { ...DEFAULT_EMULATION, jitter: 0 };
const allReduce: AllReduceConfig = { gradientBytes: [3.5e9, 3.5e9, 3.5e9, 3.5e9], chunkBytes: 4 * 1024 * 1024, inflightChunks: 8, ringLatencyMs: 0.01, ringGBps: 50 };
/** The same all-reduce written out independently of the emulator's defaults. */
const model: AllReduceModel = { gradientBytes: [3.5e9, 3.5e9, 3.5e9, 3.5e9], chunkBytes: 4194304, inflight: 8, latencyMs: 0.01, gbps: 50 };
const racks = rackLocalities(8, 4, ['rack-a', 'rack-b']);
const slowRacks = (extraMs: number, from = 0) => staticFabric({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-b'], extraMs, from }] });
const zb = planPipeline(toPipelineModel(u4), { policy: 'initial' }).run.order;
const plans = (dp = 2): ReplicaPlan[] => Array.from({ length: dp }, () => ({ schedule: zb, delegation: new Map() }));
const versions = new Array(8).fill(0);

/** Stages 0-1 of both replicas on rack A, 2-3 on rack B: every ring in one rack, the rack link on pipeline link 1. */
const inRack: TopologyAssignment = {
  version: 1,
  sinceVersion: 2,
  ranks: [
    { rank: 0, dp: 0, pp: 0 },
    { rank: 1, dp: 0, pp: 1 },
    { rank: 6, dp: 0, pp: 2 },
    { rank: 7, dp: 0, pp: 3 },
    { rank: 2, dp: 1, pp: 0 },
    { rank: 3, dp: 1, pp: 1 },
    { rank: 4, dp: 1, pp: 2 },
    { rank: 5, dp: 1, pp: 3 },
  ],
  rings: [[0, 1], [0, 1], [0, 1], [0, 1]],
  moved: [2, 3, 4, 5],
};


/** One ring chunk from send to arrival: latency, the link's extra delay, transfer. */
function messageMs(m: AllReduceModel, extraMs: number): number {
  return m.latencyMs + extraMs + m.chunkBytes / (m.gbps * 1e6);
}

describe('EmulatedJob without fabric or all-reduce', () => {
  it('produces exactly the numbers it did before topologies existed', () => {
    // Pinned from the emulator before fabric, all-reduce and placements were added.
    const job = () => new EmulatedJob('x', u4, 2, stepDelay([{ fromIteration: 3, links: [2], delayMs: 30 }]), { ...DEFAULT_EMULATION, seed: 3 });
    // The plan and the delegation the baselines used then, written out: this pins the emulator, not the baselines.
    const queues = new Map([2, 3, 6, 7].map((rank) => [rank, { rank, sendQueues: 4, recvQueues: 4 }]));
    const run = (delegate: boolean) => {
      const j = job();
      return Array.from({ length: 8 }, (_, i) => j.runIteration(i, Array.from({ length: 2 }, () => ({ schedule: zb, delegation: delegate && i >= 3 ? queues : new Map() })), versions));
    };
    const zbRun = run(false);
    expect(zbRun.map((r) => r.iterationMs)).toEqual([392.6906907835819, 394.2127267096662, 390.74312320846605, 542.6764254257499, 541.2592451776374, 541.4260752390907, 541.3012147526844, 540.5084770713993]);
    expect(zbRun[6].reports[2].links.map((l) => [l.peer, l.kind, l.medianMs, l.count])).toEqual([[3, 'pipeline', 30.1, 12], [1, 'pipeline', 0.10000000000002274, 12]]);
    expect(zbRun.every((r) => r.allReduceMs.length === 0 && r.migrationMs === 0 && r.topologyVersion === 0)).toBe(true);
    const deleg = run(true);
    expect(deleg.map((r) => r.iterationMs)).toEqual([392.6906907835819, 394.2127267096662, 390.74312320846605, 478.53848830349204, 475.97295444947105, 476.9453514812017, 476.47281877872535, 475.1793712600453]);
    const m8 = runStaticPolicy(new EmulatedJob('y', megatron8(), 1, constantDelay({ 6: 60 }), DEFAULT_EMULATION), 'zb-static', 5, { deviceActivations: deviceInflightCaps(toPipelineModel(megatron8())) });
    expect(m8.map((r) => r.iterationMs)).toEqual([2192.927582032585, 2191.334268179009, 2194.264517735455, 2195.4867947826556, 2189.3810464725443]);
  });

  it('places rank dp * stages + pp at (dp, pp) and reports no data-parallel links', () => {
    const job = new EmulatedJob('x', u4, 2, constantDelay({}), noJitter);
    expect(job.rankOf(1, 2)).toBe(6);
    expect(job.coordinatesOf(5)).toEqual({ dp: 1, pp: 1 });
    expect(job.topologyVersion).toBe(0);
    expect(job.dataParallelSpec()).toBeUndefined();
    const r = job.runIteration(0, plans(), versions);
    expect(r.reports.flatMap((x) => x.links).every((l) => l.kind === 'pipeline')).toBe(true);
  });
});

describe('EmulatedJob with the data-parallel all-reduce', () => {
  it('healthy: the pipelines, then each stage all-reduces once its replicas are done (only partly overlapped)', () => {
    const job = new EmulatedJob('x', u4, 2, constantDelay({}), noJitter, { fabric: slowRacks(0), allReduce });
    const r = job.runIteration(0, plans(), versions);
    const finish = fixedScheduleFinish(toPipelineModel(u4), zb)(new Float64Array(3));
    const expected = iterationWithAllReduceMs(model, [finish, finish], [0, 0, 0, 0]);
    expect(r.iterationMs).toBeCloseTo(expected, 6);
    const ringMs = 835 * (4194304 / 5e7) + 0.01; // 3.5e9 / 4 MiB chunks, one way around a 2-ring
    expect(r.allReduceMs).toEqual(new Array(4).fill(ringAllReduceMs(model, 0, 2, 0)));
    expect(r.allReduceMs[0]).toBeCloseTo(ringMs, 9);
    expect(Math.max(...r.replicaMs)).toBeCloseTo(390, 0);
    expect(r.iterationMs).toBeGreaterThan(Math.max(...r.replicaMs) + 0.5 * ringMs);
    expect(r.iterationMs).toBeLessThan(Math.max(...r.replicaMs) + ringMs + 1e-6);
    expect(job.clockMs).toBe(r.iterationMs);
    expect(r.reports.every((x) => x.iterationMs === r.iterationMs)).toBe(true);
    expect(job.dataParallelSpec()).toEqual({ gradientBytes: allReduce.gradientBytes, chunkBytes: 4194304, inflightChunks: 8, gbps: 50, latencyMs: 0.01 });
  });

  it('defaults: 4 MiB chunks, 8 in flight, 10 us, 50 GB/s; not modelled for a single replica', () => {
    const job = new EmulatedJob('x', u4, 2, constantDelay({}), noJitter, { allReduce: { gradientBytes: allReduce.gradientBytes } });
    expect(job.allReduce).toEqual(model);
    const single = new EmulatedJob('x', u4, 1, constantDelay({}), noJitter, { allReduce });
    expect(single.allReduce).toBeNull();
    expect(single.dataParallelSpec()).toBeUndefined();
    expect(single.runIteration(0, plans(1), versions).allReduceMs).toEqual([]);
  });

  it('a slow rack link under every ring makes the all-reduce latency bound and the iteration many times slower', () => {
    const healthy = new EmulatedJob('h', u4, 2, constantDelay({}), noJitter, { fabric: slowRacks(0), allReduce }).runIteration(0, plans(), versions);
    const job = new EmulatedJob('x', u4, 2, constantDelay({}), noJitter, { fabric: slowRacks(30), allReduce });
    const r = job.runIteration(0, plans(), versions);
    expect(r.allReduceMs[0]).toBeCloseTo(835 * (30.01 / 8) + 0.01, 6);
    expect(r.iterationMs).toBeGreaterThan(6 * healthy.iterationMs);
    // The pipelines themselves are untouched: each replica sits in one rack.
    expect(r.replicaMs).toEqual(healthy.replicaMs);
  });

  it('reports each rank\'s outgoing ring link: the successor in its stage, one chunk\'s send-to-arrival time on that link, chunks per iteration', () => {
    const job = new EmulatedJob('x', u4, 2, constantDelay({}), noJitter, { fabric: slowRacks(30), allReduce });
    const r = job.runIteration(0, plans(), versions);
    for (const report of r.reports) {
      const dpLinks = report.links.filter((l) => l.kind === 'data-parallel');
      expect(dpLinks).toHaveLength(1);
      const peer = report.rank < 4 ? report.rank + 4 : report.rank - 4;
      expect(dpLinks[0]).toEqual({ peer, kind: 'data-parallel', bytes: 4194304, medianMs: messageMs(model, 30), maxMs: messageMs(model, 30), count: 835, delegated: false, error: null });
    }
    expect(chunkMs(model, 30)).toBeCloseTo(30.01 / 8, 9);
    // With jitter, the per-chunk time follows the rank's op-time factor (no extra random draws).
    const jittery = new EmulatedJob('j', u4, 2, constantDelay({}), { ...DEFAULT_EMULATION, seed: 9 }, { fabric: slowRacks(30), allReduce }).runIteration(0, plans(), versions);
    for (const report of jittery.reports) {
      const l = report.links.find((x) => x.kind === 'data-parallel')!;
      expect(l.medianMs).toBeCloseTo(messageMs(model, 30) * (report.computeMs.f / 10), 9);
      expect(l.maxMs).toBeGreaterThan(l.medianMs);
    }
  });

  it('re-mapping the rack boundary onto a pipeline edge removes the all-reduce slowdown and leaves a pipeline straggler', () => {
    const job = new EmulatedJob('x', u4, 2, constantDelay({}), noJitter, { fabric: slowRacks(30), allReduce, migrationMs: 2500 });
    const before = job.runIteration(0, plans(), versions);
    job.applyTopology(inRack);
    expect(job.topologyVersion).toBe(1);
    expect(job.rankOf(0, 2)).toBe(6);
    expect(job.rankOf(1, 0)).toBe(2);
    expect(job.coordinatesOf(4)).toEqual({ dp: 1, pp: 2 });
    const switching = job.runIteration(1, plans(), versions);
    const after = job.runIteration(2, plans(), versions);
    expect(switching.migrationMs).toBe(2500);
    expect(switching.iterationMs).toBeCloseTo(2500 + after.iterationMs, 6);
    expect(after.migrationMs).toBe(0);
    expect(after.topologyVersion).toBe(1);
    expect(after.allReduceMs.every((ms) => Math.abs(ms - ringAllReduceMs(model, 0, 2, 0)) < 1e-9)).toBe(true);
    expect(after.iterationMs).toBeLessThan(before.iterationMs / 4);
    // The residual pipeline straggler: link 1 of both replicas crosses the racks now.
    const finish = fixedScheduleFinish(toPipelineModel(u4), zb);
    expect(Math.max(...after.replicaMs)).toBeGreaterThan(Math.max(...finish(new Float64Array(3))) + 20);
    // At least what the plain engine predicts for 30 ms on link 1 (the emulator adds head-of-line blocking).
    expect(after.iterationMs).toBeGreaterThan(iterationWithAllReduceMs(model, [0, 1].map(() => finish(Float64Array.from([0, 30, 0]))), [0, 0, 0, 0]) - 1e-6);
    const rank1 = after.reports.find((x) => x.rank === 1)!;
    expect(rank1.links.find((l) => l.kind === 'pipeline' && l.peer === 6)!.medianMs).toBeCloseTo(30.1, 6);
    expect(rank1.links.find((l) => l.kind === 'data-parallel')).toMatchObject({ peer: 3, medianMs: messageMs(model, 0) });
    const rank4 = after.reports.find((x) => x.rank === 4)!;
    expect(rank4.links.map((l) => l.peer).sort()).toEqual([3, 5, 6]);
  });

  it('orders each stage\'s ring by its rings: a slow pair costs only when adjacent on the ring', () => {
    // 4 replicas x 2 stages; nodes 0 (dp 0) and 4 (dp 2) of stage 0 have a slow link.
    const profile = { stages: 2, microbatches: 4, fMs: [10, 10], bMs: [10, 10], wMs: [10, 10], linkMs: [0.1] };
    const fabric = staticFabric({ pairLinks: [{ nodes: [0, 4], extraMs: 20 }] });
    const sched = planPipeline(toPipelineModel(profile), { policy: 'initial' }).run.order;
    const p4 = Array.from({ length: 4 }, () => ({ schedule: sched, delegation: new Map() }));
    const job = new EmulatedJob('x', profile, 4, constantDelay({}), noJitter, { fabric, allReduce: { gradientBytes: [1e9, 1e9] } });
    const m = job.allReduce!;
    const r0 = job.runIteration(0, p4, versions);
    expect(r0.allReduceMs[0]).toBeCloseTo(ringAllReduceMs(m, 0, 4, 0), 9); // ring 0-1-2-3: 0 and 2 not adjacent
    expect(job.ringSuccessor(0, 0)).toBe(1);
    const ranks = Array.from({ length: 8 }, (_, rank) => ({ rank, dp: Math.floor(rank / 2), pp: rank % 2 }));
    job.applyTopology({ version: 1, sinceVersion: 1, ranks, rings: [[0, 2, 1, 3], [0, 1, 2, 3]], moved: [] });
    expect(job.ringSuccessor(0, 0)).toBe(2);
    expect(job.ringSuccessor(3, 0)).toBe(0);
    const r1 = job.runIteration(1, p4, versions);
    expect(r1.migrationMs).toBe(0); // only rings changed: nobody loads weights
    // Ranks the assignment lists as moved load their state even if the stage they end up at is theirs.
    job.applyTopology({ version: 2, sinceVersion: 2, ranks, rings: [[0, 2, 1, 3], [0, 1, 2, 3]], moved: [3] });
    expect(job.runIteration(2, p4, versions).migrationMs).toBe(job.migrationMs);
    expect(job.migrationMs).toBe(3000);
    expect(r1.allReduceMs[0]).toBeCloseTo(ringAllReduceMs(m, 0, 4, 20), 9);
    expect(r1.allReduceMs[1]).toBeCloseTo(ringAllReduceMs(m, 1, 4, 0), 9);
    expect(r1.reports.find((x) => x.rank === 0)!.links.find((l) => l.kind === 'data-parallel')).toMatchObject({ peer: 4, medianMs: messageMs(m, 20) });
    expect(r1.reports.find((x) => x.rank === 4)!.links.find((l) => l.kind === 'data-parallel')).toMatchObject({ peer: 2, medianMs: messageMs(m, 0) });
  });

  it('rejects an inconsistent topology and keeps the one in force', () => {
    const job = new EmulatedJob('x', u4, 2, constantDelay({}), noJitter, { fabric: slowRacks(30), allReduce });
    const with_ = (patch: Partial<TopologyAssignment>) => () => job.applyTopology({ ...inRack, ...patch });
    const ranks = inRack.ranks;
    expect(with_({ version: 0 })).toThrow(/version 0/);
    expect(with_({ ranks: ranks.slice(1) })).toThrow(/all 8 ranks/);
    expect(with_({ ranks: [...ranks.slice(1), { rank: 1, dp: 1, pp: 3 }] })).toThrow(/rank 1 is placed twice/);
    expect(with_({ ranks: [...ranks.slice(1), { rank: 8, dp: 0, pp: 0 }] })).toThrow(/rank 8 is not a rank/);
    expect(with_({ ranks: [...ranks.slice(1), { rank: 0, dp: 2, pp: 0 }] })).toThrow(/outside the 2 x 4 grid/);
    expect(with_({ ranks: [...ranks.slice(1), { rank: 0, dp: 0, pp: 1 }] })).toThrow(/ranks 1 and 0 both at \(dp 0, pp 1\)/);
    expect(with_({ rings: [[0, 1], [0, 1], [0, 1]] })).toThrow(/one ring per stage/);
    expect(with_({ rings: [[0, 1], [0, 0], [0, 1], [0, 1]] })).toThrow(/ring of stage 1/);
    expect(with_({ rings: [[0, 1], [0, 1], [0, 2], [0, 1]] })).toThrow(/ring of stage 2/);
    expect(with_({ moved: [9] })).toThrow(/moved/);
    expect(with_({ ranks: [...ranks.slice(1), { rank: 0, dp: 0.5, pp: 0 }] })).toThrow(InputError);
    expect(job.topologyVersion).toBe(0);
    expect(job.rankOf(0, 2)).toBe(2);
    expect(job.runIteration(0, plans(), versions).migrationMs).toBe(0);
  });

  it('rejects a bad all-reduce or migration cost', () => {
    const make = (cluster: ConstructorParameters<typeof EmulatedJob>[5]) => () => new EmulatedJob('x', u4, 2, constantDelay({}), noJitter, cluster);
    expect(make({ allReduce: { gradientBytes: [1, 2, 3] } })).toThrow(/gradientBytes must list 4/);
    expect(make({ allReduce: { gradientBytes: [1, 2, 3, 4], ringGBps: 0 } })).toThrow(/gbps/);
    expect(make({ allReduce: { gradientBytes: [1, 2, 3, 4], inflightChunks: 1.5 } })).toThrow(/inflight/);
    expect(make({ migrationMs: -1 })).toThrow(/migrationMs/);
  });
});

describe('EmulatedJob when a NIC fails', () => {
  /** Every link's GPU-direct path dead from iteration `from` to `until` (exclusive), no extra delay. */
  const deadNics = (from: number, until = Infinity) => ({
    name: 'dead NICs',
    delayMs: () => 0,
    nicFailed: (_link: number, iteration: number) => iteration >= from && iteration < until,
  });
  const run = (nicFailover: boolean, until = Infinity) => {
    const job = new EmulatedJob('nic', u4, 1, deadNics(2, until), { ...noJitter, nicFailover });
    return Array.from({ length: 8 }, (_, i) => job.runIteration(i, plans(1), versions.slice(0, 4)));
  };
  /** Only the first failure iteration pays timeouts (at most one per link), later ones run about as fast as healthy. */
  const timesOutOnce = (results: ReturnType<typeof run>, failedAt: number): boolean => {
    const healthy = results[0].iterationMs;
    const first = results[failedAt].iterationMs;
    const links = results[0].reports.length - 1;
    return first >= DEFAULT_EMULATION.nicTimeoutMs && first <= healthy * 1.1 + links * DEFAULT_EMULATION.nicTimeoutMs && results.slice(failedAt + 1).every((r) => r.iterationMs < healthy * 1.1);
  };

  it('ranks that fail over pay one timeout per link, then carry the traffic on the host path and report it delegated', () => {
    const results = run(true);
    expect(timesOutOnce(results, 2)).toBe(true);
    const later = results[5].reports.flatMap((r) => r.links);
    expect(later.length).toBeGreaterThan(0);
    expect(later.every((l) => l.delegated && l.error === 'nic-failure')).toBe(true);
    // The host path costs the copy overhead on the ranks that use it.
    expect(results[5].iterationMs).toBeGreaterThan(results[0].iterationMs);
  });

  it('plain ranks (no failover) pay the timeout on every message while the NIC is down: the check above fails', () => {
    const results = run(false);
    expect(timesOutOnce(results, 2)).toBe(false);
    expect(results[5].iterationMs).toBeGreaterThan(10 * DEFAULT_EMULATION.nicTimeoutMs);
  });

  it('a NIC that comes back and fails again times out again', () => {
    const job = new EmulatedJob('nic', u4, 1, { name: 'flapping', delayMs: () => 0, nicFailed: (_l: number, i: number) => i === 1 || i === 3 }, { ...noJitter, nicFailover: true });
    const results = Array.from({ length: 5 }, (_, i) => job.runIteration(i, plans(1), versions.slice(0, 4)));
    expect(results[1].iterationMs).toBeGreaterThanOrEqual(DEFAULT_EMULATION.nicTimeoutMs);
    expect(results[2].iterationMs).toBeLessThan(results[0].iterationMs * 1.1);
    expect(results[3].iterationMs).toBeGreaterThanOrEqual(DEFAULT_EMULATION.nicTimeoutMs);
  });
});
