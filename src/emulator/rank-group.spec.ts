import type Redis from 'ioredis';
import { PublishedSchedule, TopologyAssignment } from '../protocol/protocol-v1.type';
import { constantDelay } from './delay/constant-delay';
import { DEFAULT_EMULATION, EmulatedJob } from './emulated-job';
import { rackLocalities, staticFabric } from './fabric/static-fabric';
import { RankGroup } from './rank-group';
import { uniform4 } from './scenarios';
import { uniform4Schedule } from './uniform4-schedule.fixture';

/** Just enough of Redis for RankGroup without lockstep: a schedule key, a control stream, written reports. */
class FakeRedis {
  schedule: string | null = null;
  readonly control: Array<[string, string[]]> = [];
  readonly written: unknown[][] = [];
  /** Called after each entry written through a pipeline (a paced rank's report). */
  onWrite: (args: unknown[]) => void = () => undefined;
  private seq = 0;
  async xadd(...args: unknown[]): Promise<string> {
    this.written.push(args);
    return `${++this.seq}-0`;
  }
  async xrevrange(): Promise<Array<[string, string[]]>> {
    return this.control.slice(-1);
  }
  async get(): Promise<string | null> {
    return this.schedule;
  }
  pipeline() {
    const reads: Array<Promise<unknown>> = [];
    const p = {
      xadd: (...args: unknown[]) => (this.written.push(args), this.onWrite(args), p),
      xread: (count: string, n: number, streams: string, key: string, cursor: string) => (reads.push(this.xread(count, n, streams, key, cursor)), p),
      exec: async () => (await Promise.all(reads)).map((r) => [null, r]),
    };
    return p;
  }
  async xread(_count: string, _n: number, _streams: string, key: string, cursor: string): Promise<Array<[string, Array<[string, string[]]>]> | null> {
    const after = this.control.filter(([id]) => Number(id.split('-')[0]) > Number(cursor.split('-')[0]));
    return after.length > 0 ? [[key, after]] : null;
  }
  event(type: 'prepare' | 'commit', version: number, effectiveIteration: number): void {
    this.control.push([`${++this.seq}-0`, ['m', JSON.stringify({ type, protocol: 1, jobId: 'j', version, epoch: 1, effectiveIteration })]]);
  }
}

const u4 = uniform4();
const schedule = (version: number, effectiveIteration: number, topology?: TopologyAssignment): PublishedSchedule => uniform4Schedule(version, effectiveIteration, [0, 1], topology);
const inRack: TopologyAssignment = {
  version: 1,
  sinceVersion: 2,
  ranks: [0, 1, 6, 7, 2, 3, 4, 5].map((rank, slot) => ({ rank, dp: slot >> 2, pp: slot & 3 })),
  rings: [[0, 1], [0, 1], [0, 1], [0, 1]],
  moved: [2, 3, 4, 5],
};
const racks = rackLocalities(8, 4, ['rack-a', 'rack-b']);
const allReduce = { gradientBytes: [3.5e9, 3.5e9, 3.5e9, 3.5e9] };

describe('RankGroup and topologies', () => {
  it('registers each rank where it sits, with its locality and the all-reduce when modelled', () => {
    const job = new EmulatedJob('j', u4, 2, constantDelay({}), DEFAULT_EMULATION, { fabric: staticFabric({ localities: racks }), allReduce, migrationMs: 100 });
    const reg = new RankGroup(new FakeRedis() as unknown as Redis, job, { lockstep: false, deviceActivations: [8, 8, 8, 8], hostActivations: 64 }).registration();
    expect(reg.ranks[5]).toEqual({ rank: 5, dp: 1, pp: 1, tp: 0, node: 'emulated-5', locality: 'rack-b' });
    expect(reg.dataParallel).toEqual({ gradientBytes: allReduce.gradientBytes, chunkBytes: 4194304, inflightChunks: 8, gbps: 50, latencyMs: 0.01 });
    expect(reg.network).toEqual({ latencyMs: 0.1, nominalGBps: 1000 });
    const plain = new RankGroup(new FakeRedis() as unknown as Redis, new EmulatedJob('j', u4, 2, constantDelay({}), DEFAULT_EMULATION), { lockstep: false, deviceActivations: [8, 8, 8, 8], hostActivations: 64 }).registration();
    expect(plain.ranks[5]).toEqual({ rank: 5, dp: 1, pp: 1, tp: 0, node: 'emulated-5' });
    expect(plain).not.toHaveProperty('dataParallel');
  });

  it('every rank switches to a committed topology at the schedule\'s effective iteration, once, paying the migration', async () => {
    const redis = new FakeRedis();
    const fabric = staticFabric({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-b'], extraMs: 30 }] });
    const job = new EmulatedJob('j', u4, 2, constantDelay({}), { ...DEFAULT_EMULATION, jitter: 0 }, { fabric, allReduce, migrationMs: 100 });
    const group = new RankGroup(redis as unknown as Redis, job, { lockstep: false, deviceActivations: [8, 8, 8, 8], hostActivations: 64 });
    redis.schedule = JSON.stringify(schedule(1, 0));
    await group.connect();
    for (let i = 0; i < 3; i++) await group.step();
    redis.schedule = JSON.stringify(schedule(2, 5, inRack));
    redis.event('prepare', 2, 5);
    redis.event('commit', 2, 5);
    const results = [];
    for (let i = 3; i < 9; i++) results.push(await group.step());
    // A later schedule carrying the same topology version does not move anyone again.
    redis.schedule = JSON.stringify(schedule(3, 10, inRack));
    redis.event('prepare', 3, 10);
    redis.event('commit', 3, 10);
    for (let i = 9; i < 12; i++) results.push(await group.step());

    expect(group.history.map((h) => h.topologyVersion)).toEqual([0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]);
    expect(group.history.map((h) => h.versions[0])).toEqual([1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3]);
    expect(results.map((r) => r.migrationMs)).toEqual([0, 0, 100, 0, 0, 0, 0, 0, 0]);
    expect(job.rankOf(0, 2)).toBe(6);
    const before = results[0];
    const after = results[4];
    expect(after.iterationMs).toBeLessThan(before.iterationMs / 4);
    // Reports after the switch name the new neighbours.
    const rank2 = after.reports.find((r) => r.rank === 2)!;
    expect(rank2.links.map((l) => [l.kind, l.peer])).toEqual([['pipeline', 3], ['data-parallel', 0]]);
  });
});

describe('RankGroup on a paced clock', () => {
  const reportOf = (args: unknown[]) => JSON.parse(args[args.length - 1] as string) as { type: string; rank: number; iteration: number };

  it('each rank reports and reads control at its own boundary, in the order its last op finishes', async () => {
    const redis = new FakeRedis();
    const job = new EmulatedJob('j', u4, 1, constantDelay({ 1: 5 }), { ...DEFAULT_EMULATION, jitter: 0 });
    const group = new RankGroup(redis as unknown as Redis, job, { lockstep: false, pace: 0.01, deviceActivations: [8, 8, 8, 8], hostActivations: 64 });
    redis.schedule = JSON.stringify(schedule(1, 0));
    await group.connect();
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await group.step());
    // A commit lands between two ranks' boundaries of iteration 3: after the second rank's report.
    const seen: number[] = [];
    redis.onWrite = (args) => {
      const r = reportOf(args);
      if (r.type !== 'report' || r.iteration !== 3) return;
      seen.push(r.rank);
      if (seen.length === 2) {
        redis.schedule = JSON.stringify(schedule(2, 4));
        redis.event('prepare', 2, 4);
        redis.event('commit', 2, 4);
      }
    };
    results.push(await group.step());
    await group.step();
    const done = results[3].rankDoneMs;
    expect(seen).toEqual([0, 1, 2, 3].sort((a, b) => done[a] - done[b]));
    expect(new Set(done).size).toBe(4);
    // The first rank had read before the commit: at iteration 4 it alone still knows only version 1
    // (all ranks reading at one instant would all know version 2). The MIN keeps the job on 1.
    const local = group.history[4].local;
    expect(local[seen[0]]).toBe(1);
    expect(seen.slice(1).map((r) => local[r])).toEqual([2, 2, 2]);
    expect(group.history[4].versions).toEqual([1, 1, 1, 1]);
  });

  it('refuses a pace with lockstep, or a pace that is not a finite number > 0', () => {
    const job = new EmulatedJob('j', u4, 1, constantDelay({}), DEFAULT_EMULATION);
    const make = (lockstep: boolean, pace: number) => () => new RankGroup(new FakeRedis() as unknown as Redis, job, { lockstep, pace, deviceActivations: [8, 8, 8, 8], hostActivations: 64 });
    expect(make(true, 1)).toThrow(/lockstep false/);
    expect(make(false, 0)).toThrow(/finite number > 0/);
    expect(make(false, Number.POSITIVE_INFINITY)).toThrow(/finite number > 0/);
    expect(make(false, 0.5)).not.toThrow();
  });
});
