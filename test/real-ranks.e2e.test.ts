/**
 * End to end with real rank processes: the daemon (in-process, shrunk timings), a real Redis
 * (database 9 of REDIS_URL) and a 4-stage job of real PyTorch rank processes (clients/python,
 * pipemorph.launch, gloo on CPU, `--compute sleep` so op times are the profile's on a 2-core box)
 * that follow docs/protocol.md in wall-clock time. A link slows from iteration 8; the daemon detects
 * it, prepares a schedule with more slackness and delegation, every rank acknowledges before the
 * effective iteration and all switch together. Evidence comes from each rank's own record of the
 * version it ran, not from the daemon or the emulator. Nothing here asserts how long anything takes.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlEvent, PublishedSchedule, Registration } from '../src/protocol/protocol-v1.type';
import { jobKeys } from '../src/protocol/redis-keys';
import { launchRanks } from './support/launch-ranks';
import { redisUrlFor, startDaemon, testConfig } from './support/test-daemon';

const DB_URL = redisUrlFor(9);
const STAGES = 4;
const MICROBATCHES = 8;
const ITERATIONS = 26;

interface LaunchResult {
  iterations: Array<{ iteration: number; versions: number[]; ms: number }>;
  mixedIterations: number[];
  meanIterationMs: number;
}

function registration(jobId: string): Registration {
  return {
    type: 'register', protocol: 1, jobId, stages: STAGES, microbatches: MICROBATCHES, dp: 1, tp: 1,
    ranks: Array.from({ length: STAGES }, (_, r) => ({ rank: r, dp: 0, pp: r, tp: 0, node: `real-${r}` })),
    // Device memory fits 1F1B's in-flight activations; the host can hold many more (delegation).
    memory: { deviceBytes: [4e9, 3e9, 2e9, 1e9], activationBytes: [1e9, 1e9, 1e9, 1e9], hostBytes: 64e9 },
    computeMs: { fMs: [10, 10, 10, 10], bMs: [10, 10, 10, 10], wMs: [5, 5, 5, 5] },
    network: { nominalGBps: 1000, latencyMs: 0.2 },
  };
}

describe('real rank processes against the daemon', () => {
  let daemon: { app: INestApplication; url: string } | null = null;
  const redis = new Redis(DB_URL);
  const jobId = `real-${process.pid}-${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), 'pipemorph-real-'));

  beforeAll(async () => {
    // Lead as shipped for iterations longer than leadMs: 2 iterations. Ranks read control at the
    // start of each iteration (sec. 4); with the effective iteration counted from the last report
    // they heard every prepare too late and every switch aborted.
    daemon = await startDaemon(testConfig((c) => {
      c.handshake.leadMs = 0;
      c.handshake.minLeadIterations = 2;
      c.handshake.prepareTimeoutMs = 5000;
    }, DB_URL));
  });
  afterAll(async () => {
    await daemon?.app.close();
    redis.disconnect();
  });

  it('switch every real rank at the same iteration, acknowledged in time, no version mixed', async () => {
    const profile = { fMs: [10, 10, 10, 10], bMs: [10, 10, 10, 10], wMs: [5, 5, 5, 5] };
    writeFileSync(join(dir, 'profile.json'), JSON.stringify(profile));
    writeFileSync(join(dir, 'registration.json'), JSON.stringify(registration(jobId)));
    writeFileSync(join(dir, 'delays.txt'), 'step:8@1=40');
    const out = join(dir, 'result.json');
    const run = await launchRanks(['--stages', `${STAGES}`, '--microbatches', `${MICROBATCHES}`, '--iterations', `${ITERATIONS}`,
      '--compute', 'sleep', '--profile', join(dir, 'profile.json'), '--redis', DB_URL, '--job', jobId,
      '--register', join(dir, 'registration.json'), '--delays', join(dir, 'delays.txt'), '--timeout-s', '60', '--out', out]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(readFileSync(out, 'utf8')) as LaunchResult;

    // Every rank recorded the version it ran at every iteration; none differs from another.
    expect(result.iterations).toHaveLength(ITERATIONS);
    const mixed = result.iterations.filter((it) => new Set(it.versions).size > 1).map((it) => it.iteration);
    expect(mixed).toEqual([]);
    expect(result.mixedIterations).toEqual([]);

    // The straggler was answered with a committed schedule the ranks switched to.
    const versions = result.iterations.map((it) => it.versions[0]);
    const switched = versions.findIndex((v) => v > versions[0]);
    expect(switched).toBeGreaterThan(8);
    const keys = jobKeys(jobId);
    const committed = JSON.parse((await redis.get(keys.schedule)) as string) as PublishedSchedule;
    expect(committed.version).toBe(versions[versions.length - 1]);
    expect(committed.reason.kind).toBe('straggler');
    expect(committed.reason.links.map((l) => [l.fromRank, l.toRank])).toEqual([[1, 2]]);
    expect(committed.delegation.map((d) => d.rank).sort()).toEqual([1, 2]);

    // Every prepare was acknowledged in time: no abort, in particular none for a late ack.
    const events = ((await redis.xrange(keys.control, '-', '+')) as Array<[string, string[]]>).map(([, f]) => JSON.parse(f[1]) as ControlEvent);
    expect(events.filter((e) => e.type === 'abort')).toEqual([]);
    // Each switch (the first plan, then the refined one: control.refinePlanner) ran from its
    // effective iteration on, never earlier, and versions only went up.
    // A commit the ranks never ran must have been superseded by a later one that they did run.
    const commits = events.filter((e) => e.type === 'commit' && e.effectiveIteration > 0).map((e) => ({ version: e.version, effective: e.effectiveIteration, first: versions.indexOf(e.version) }));
    expect(commits.filter((c) => c.first >= 0).length).toBeGreaterThanOrEqual(1);
    for (const c of commits) {
      expect({ ...c, early: c.first >= 0 && c.first < c.effective }).toEqual({ ...c, early: false });
      expect({ ...c, neverRunNorSuperseded: c.first < 0 && !commits.some((o) => o.version > c.version && o.first >= 0) }).toEqual({ ...c, neverRunNorSuperseded: false });
    }
    expect(versions.every((v, i) => i === 0 || v >= versions[i - 1])).toBe(true);
    expect(events.filter((e) => e.type === 'commit').length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
