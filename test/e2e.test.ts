/**
 * End to end: the real daemon, emulated ranks speaking protocol v1 over a real Redis, virtual time
 * (lockstep) and, in one case, a paced wall clock.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { stepDelay } from '../src/emulator/delay/step-delay';
import { DEFAULT_EMULATION, EmulatedJob, IterationResult } from '../src/emulator/emulated-job';
import { RankGroup } from '../src/emulator/rank-group';
import { uniform4 } from '../src/emulator/scenarios';
import { runStaticPolicy } from '../src/emulator/static-policy';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { redisUrlFor, startDaemon, testConfig } from './support/test-daemon';

const REDIS_URL = redisUrlFor(13);
const redis = new Redis(REDIS_URL);
const config = (overrides?: (c: PipemorphConfig) => void) => testConfig(overrides, REDIS_URL);
let daemon: { app: INestApplication; url: string } | null = null;
const groups: RankGroup[] = [];

afterEach(async () => {
  await daemon?.app.close();
  daemon = null;
  for (const g of groups.splice(0)) await g.cleanup();
});

afterAll(async () => {
  await redis.quit();
});

const mean = (xs: IterationResult[]) => xs.reduce((a, r) => a + r.iterationMs, 0) / xs.length;
/** 30 ms on link 2-3 of the paper's 4-stage pipeline from iteration 10 to 50. */
const straggler = () => stepDelay([{ fromIteration: 10, links: [2], delayMs: 30 }, { fromIteration: 50, links: [2], delayMs: 0 }]);

async function runJob(name: string, options: { slowRanks?: number[]; slowEvery?: number; agreement?: 'min' | 'skip'; lockstep?: boolean; pace?: number } = {}): Promise<RankGroup> {
  const job = new EmulatedJob(`test-e2e-${name}-${process.pid}-${Date.now().toString(36)}`, uniform4(), 2, straggler(), { ...DEFAULT_EMULATION, seed: 3 });
  const group = new RankGroup(redis, job, { lockstep: true, deviceActivations: [8, 8, 8, 8], hostActivations: 64, ...options });
  groups.push(group);
  await group.register();
  await group.connect();
  for (let i = 0; i < 80; i++) await group.step();
  return group;
}

describe('daemon + emulated job', () => {
  it('beats static ZeroBubble under a 30 ms straggler, returns to the initial plan, never mixes versions', async () => {
    daemon = await startDaemon(config((c) => (c.handshake.leadMs = 2000)));
    const group = await runJob('main');
    const h = group.history;
    expect(h.filter((x) => new Set(x.versions).size > 1)).toEqual([]);
    const versions = [...new Set(h.map((x) => x.versions[0]))];
    expect(versions.length).toBeGreaterThanOrEqual(3); // initial -> adapted -> initial again

    const adaptedFrom = h.findIndex((x) => x.iteration >= 10 && x.versions[0] !== h[0].versions[0]);
    expect(adaptedFrom).toBeGreaterThan(10);
    expect(adaptedFrom).toBeLessThan(30);
    const adapted = h.slice(adaptedFrom, 50);
    const staticZb = runStaticPolicy(new EmulatedJob('static', uniform4(), 2, straggler(), { ...DEFAULT_EMULATION, seed: 3 }), 'zb-static', 50).slice(adaptedFrom, 50);
    const pipemorphMs = adapted.reduce((a, x) => a + x.iterationMs, 0) / adapted.length;
    expect(pipemorphMs).toBeLessThan(mean(staticZb) * 0.9);

    const final = JSON.parse((await redis.get(group.keys.schedule))!);
    expect(final.reason.kind).toBe('recovery');
    expect(final.delegation).toEqual([]);
    const first = group.agreedVersion(0);
    expect(final.pipelines[0].warmup).toEqual(first.pipelines[0].warmup);
    expect(h[h.length - 1].versions[0]).toBe(final.version);
  });

  it('switches every rank at the same iteration even when one rank hears of schedules late', async () => {
    // No wall-clock back-off after the late rank's refusal: lockstep iterations run in virtual time,
    // and a fast machine would otherwise finish the straggler phase before the retry (flaky).
    // The shortest lead (3 iterations, none from leadMs): the slow rank, polling every 3rd
    // iteration, hears each commit after the others and after its effective iteration.
    daemon = await startDaemon(config((c) => {
      c.handshake.leadMs = 0;
      c.handshake.retryBackoffMs = 0;
    }));
    const group = await runJob('slow-rank', { slowRanks: [5], slowEvery: 3 });
    // The slow rank really knew less: in some iterations its own k_local was behind the others'.
    const lagging = group.history.filter((x) => new Set(x.local).size > 1).map((x) => x.iteration);
    expect(lagging.length).toBeGreaterThan(0);
    // Yet every rank's own record says it ran the same version as every other rank.
    expect(group.mixedIterations()).toEqual([]);
    expect(new Set(group.history.map((x) => x.versions[0])).size).toBeGreaterThanOrEqual(2);
  });

  it('catches a broken agreement: without the MIN, the ranks\' own records show mixed versions', async () => {
    daemon = await startDaemon(config((c) => {
      c.handshake.leadMs = 0;
      c.handshake.retryBackoffMs = 0;
    }));
    const group = await runJob('skip-min', { slowRanks: [5], slowEvery: 3, agreement: 'skip' });
    const mixed = group.mixedIterations();
    expect(mixed.length).toBeGreaterThan(0);
    // Exactly the iterations in which the ranks' knowledge differed.
    expect(mixed).toEqual(group.history.filter((x) => new Set(x.local).size > 1).map((x) => x.iteration));
  });

  it('on a paced wall clock (ranks read control once per iteration boundary, the daemon reacts in real time) still switches every rank together', async () => {
    daemon = await startDaemon(config((c) => (c.handshake.leadMs = 100)));
    // 390 ms iterations at 1/20: about 20 ms of wall clock each, for the daemon's reaction to cost.
    const group = await runJob('paced', { lockstep: false, pace: 0.05 });
    expect(group.mixedIterations()).toEqual([]);
    const h = group.history;
    const adaptedFrom = h.findIndex((x) => x.iteration >= 10 && x.versions[0] !== h[0].versions[0]);
    // 30 ms is severe (detection.severeExtraMs 20): detected from the report of iteration 11 at the earliest (severeEnterAfter 2), effective at the earliest 11 + 1 + minLeadIterations (3).
    expect(adaptedFrom).toBeGreaterThanOrEqual(11 + 1 + 3);
    expect(adaptedFrom).toBeLessThan(50);
    // Every rank learned each schedule it ran through the protocol, at its own boundary.
    expect(group.learned().map((s) => s.version)).toEqual(expect.arrayContaining([...new Set(h.map((x) => x.versions[0]))]));
  });
});
