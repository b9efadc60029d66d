/**
 * End to end with the Python reference client: the real daemon (in-process, shrunk timings) and a
 * real Redis (REDIS_URL, default 127.0.0.1:6379; database 11 of it, see redisUrlFor); the four
 * reporting ranks of a 4-stage job run in one /usr/bin/python3 process using only redis-py and
 * clients/python/pipemorph_rank.py (driver: clients/python/e2e_driver.py).
 * scripts/ensure-python-redis.sh (pretest) installs redis-py. Nothing here asserts how long anything takes.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ControlEvent, PublishedSchedule } from '../src/protocol/protocol-v1.type';
import { JOBS_INDEX, jobKeys, REJECTED_REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';
import { waitFor } from './support/fake-job';
import { redisUrlFor, startDaemon, testConfig } from './support/test-daemon';

/** A Redis database of its own (see redisUrlFor): other suites' daemons would take this job. */
const DB_URL = redisUrlFor(11);
const PYTHON = '/usr/bin/python3';
const DRIVER = join(__dirname, '../clients/python/e2e_driver.py');
const jobId = `test-py-${process.pid}-${Date.now().toString(36)}`;
const keys = jobKeys(jobId);
const redis = new Redis(DB_URL);
let daemon: { app: INestApplication; url: string } | null = null;

interface IterationLine {
  iteration: number;
  phase: 'healthy' | 'slow' | 'recover' | 'done';
  local: number[];
  versions: number[];
  delegation: boolean[];
}
interface Switch {
  version: number;
  iteration: number;
  warmup: number[];
  delegation: Record<string, { sendQueues: number; recvQueues: number }>;
}
interface Summary {
  ok: boolean;
  phase: string;
  iterations: number;
  connectedVersions: number[];
  adaptedVersion: number | null;
  switches: Switch[];
  events: Array<{ iteration: number; rank: number; type: string; version: number; epoch: number; effectiveIteration: number }>;
  rejections: unknown[];
}

/** Runs the driver while recording every committed schedule the daemon writes (polled; the
 * in-process daemon keeps running, so the child is awaited asynchronously, never with spawnSync). */
async function runDriver(): Promise<{ code: number | null; stdout: string; stderr: string; committed: Map<number, PublishedSchedule> }> {
  const committed = new Map<number, PublishedSchedule>();
  const child = spawn(PYTHON, [DRIVER, '--url', DB_URL, '--job', jobId], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const killer = setTimeout(() => child.kill('SIGKILL'), 25000);
  let exited = false;
  const exit = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      exited = true;
      resolve(code);
    });
  });
  const watch = (async () => {
    for (;;) {
      const raw = await redis.get(keys.schedule);
      if (raw) {
        const s = JSON.parse(raw) as PublishedSchedule;
        if (!committed.has(s.version)) committed.set(s.version, s);
      }
      if (exited) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  const code = await exit;
  clearTimeout(killer);
  await watch;
  return { code, stdout, stderr, committed };
}

beforeAll(async () => {
  daemon = await startDaemon(testConfig((c) => (c.redis.url = DB_URL)));
});

afterAll(async () => {
  await daemon?.app.close();
  await redis.del(...Object.values(keys));
  await redis.srem(JOBS_INDEX, jobId);
  await redis.quit();
});

describe('Python reference rank (redis-py) against the real daemon', () => {
  it('registers, reports, acknowledges and switches all four ranks together, through a straggler and back', async () => {
    const { code, stdout, stderr, committed } = await runDriver();
    if (process.env.PIPEMORPH_TEST_LOGS) process.stdout.write(stdout + stderr);
    const parse = (l: string) => {
      try {
        return JSON.parse(l);
      } catch {
        return { unparsed: l };
      }
    };
    const lines = stdout.split('\n').filter((l) => l.trim() !== '').map(parse);
    const iterations = lines.filter((l) => 'iteration' in l) as IterationLine[];
    const summary = lines.find((l) => 'summary' in l)?.summary as Summary | undefined;
    if (code !== 0 || !summary?.ok) throw new Error(`driver exited ${code}\n--- stderr\n${stderr}\n--- last stdout\n${stdout.split('\n').slice(-5).join('\n')}`);
    expect(iterations.map((l) => l.iteration)).toEqual(Array.from({ length: summary.iterations }, (_, i) => i));

    // What the daemon committed: initial plan -> straggler re-plan at link 2 -> recovery.
    const schedules = [...committed.values()].sort((a, b) => a.version - b.version);
    const initial = schedules[0];
    expect(initial.reason.kind).toBe('initial');
    expect(initial.delegation).toEqual([]);
    expect(summary.connectedVersions).toEqual([initial.version, initial.version, initial.version, initial.version]);
    const adapted = committed.get(summary.adaptedVersion!)!;
    expect(adapted).toBeDefined();
    expect(adapted.reason.kind).toBe('straggler');
    expect(adapted.reason.links).toEqual([expect.objectContaining({ kind: 'pipeline', dp: 0, link: 2, fromRank: 2, toRank: 3 })]);
    expect(adapted.reason.links[0].extraMs).toBeCloseTo(40, 0);
    const w0 = initial.pipelines[0].warmup;
    const w = adapted.pipelines[0].warmup;
    expect(w[2] - w[3]).toBeGreaterThan(w0[2] - w0[3]); // more slackness in front of the slow link
    expect(adapted.delegation.map((d) => d.rank).sort()).toEqual([2, 3]);
    const final = JSON.parse((await redis.get(keys.schedule))!) as PublishedSchedule;
    expect(final.version).toBeGreaterThan(adapted.version);
    expect(final.reason.kind).toBe('recovery');
    expect(final.delegation).toEqual([]);
    expect(final.pipelines[0].warmup).toEqual(w0);

    // The same handshake seen from the daemon's control stream: every committed version was prepared once and committed once.
    const control = (await redis.xrange(keys.control, '-', '+')).map(([, f]) => JSON.parse(f[1]) as ControlEvent);
    for (const s of [adapted, final]) {
      expect(control.filter((e) => e.type === 'prepare' && e.version === s.version)).toHaveLength(1);
      const commits = control.filter((e) => e.type === 'commit' && e.version === s.version);
      expect(commits).toHaveLength(1);
      expect(commits[0].effectiveIteration).toBe(s.effectiveIteration);
    }

    // Every iteration: the four ranks ran one and the same version, never decreasing.
    for (const l of iterations) expect({ iteration: l.iteration, versions: new Set(l.versions).size }).toEqual({ iteration: l.iteration, versions: 1 });
    const ran = iterations.map((l) => l.versions[0]);
    expect(ran).toEqual([...ran].sort((a, b) => a - b));
    // ... and the daemon saw exactly that on the wire (scheduleVersion of every report).
    const wire = new Map<number, Map<number, number>>();
    const acks: Array<{ rank: number; version: number; epoch: number; accepted: boolean }> = [];
    for (const [, f] of await redis.xrange(keys.reports, '-', '+')) {
      const m = JSON.parse(f[f.indexOf('m') + 1]);
      if (m.type === 'report') {
        if (!wire.has(m.iteration)) wire.set(m.iteration, new Map());
        wire.get(m.iteration)!.set(m.rank, m.scheduleVersion);
      } else if (m.type === 'ack') acks.push(m);
    }
    expect(wire.size).toBe(summary.iterations);
    for (const l of iterations) expect([...wire.get(l.iteration)!.entries()].sort()).toEqual([0, 1, 2, 3].map((rank) => [rank, l.versions[0]]));

    // Each switch happened at or after the schedule's effectiveIteration, all ranks at once, with
    // the op lists and delegation toggles the daemon committed; every committed version was acked by all four.
    expect(summary.switches.map((s) => s.version)).toEqual([initial.version, adapted.version, final.version]);
    for (const s of summary.switches) {
      const schedule = committed.get(s.version)!;
      expect(ran.indexOf(s.version)).toBe(s.iteration);
      expect(s.iteration).toBeGreaterThanOrEqual(schedule.effectiveIteration);
      expect(s.warmup).toEqual(schedule.pipelines[0].warmup);
      expect(s.delegation).toEqual(Object.fromEntries(schedule.delegation.map((d) => [String(d.rank), { sendQueues: d.sendQueues, recvQueues: d.recvQueues }])));
      if (s.version === initial.version) continue;
      const accepted = acks.filter((a) => a.version === s.version && a.accepted && a.epoch === schedule.epoch).map((a) => a.rank);
      expect(accepted.sort()).toEqual([0, 1, 2, 3]);
    }
    const adaptedFrom = summary.switches[1].iteration;
    expect(iterations.slice(adaptedFrom, summary.switches[2].iteration).every((l) => l.delegation.join() === 'false,false,true,true')).toBe(true);
    expect(iterations[iterations.length - 1].delegation).toEqual([false, false, false, false]);

    // Nothing the Python side wrote was refused, and the daemon counted every report.
    expect(await redis.xlen(keys.rejected)).toBe(0);
    expect(summary.rejections).toEqual([]);
    const refusedRegistrations = await redis.xrange(REJECTED_REGISTRATIONS_STREAM, '-', '+');
    expect(refusedRegistrations.filter(([, f]) => f[f.indexOf('m') + 1].includes(jobId))).toEqual([]);
    const detail = await waitFor('every report processed', async () => {
      const d = (await (await fetch(`${daemon!.url}/jobs/${jobId}`)).json()) as { counters?: Record<string, number> };
      return d.counters?.reports === 4 * summary.iterations && d;
    });
    expect(detail.counters!.rejected).toBe(0);
    expect(detail.counters!.duplicates).toBe(0);
  });
});

describe('Python reference rank: topology changes (protocol sec. 5.5)', () => {
  it('moves a rank to its new (dp, pp) when the agreed schedule carries a new topology version, and only then', async () => {
    const topoJob = `test-py-topo-${process.pid}-${Date.now().toString(36)}`;
    const k = jobKeys(topoJob);
    const ops = (n: number) => [...Array.from({ length: n }, (_, j) => `F${j}`), ...Array.from({ length: n }, (_, j) => `B${j}`), ...Array.from({ length: n }, (_, j) => `W${j}`)];
    const schedule: PublishedSchedule = {
      protocol: 1, jobId: topoJob, version: 7, epoch: 1, state: 'committed', effectiveIteration: 40, createdAt: Date.now(),
      pipelines: [{ dpReplicas: [0, 1], warmup: [2, 1], stages: [ops(2), ops(2)] }],
      delegation: [{ rank: 2, sendQueues: 3, recvQueues: 3 }],
      reason: { kind: 'remap', links: [{ kind: 'data-parallel', fromRank: 0, toRank: 2, extraMs: 30, error: null }], detail: 'test' },
      prediction: { previousMs: 900, newMs: 300 },
      // Ranks 1 and 2 swap: rank 2 (was dp 1, pp 0) now runs stage 1 of replica 0.
      topology: { version: 1, sinceVersion: 7, ranks: [{ rank: 0, dp: 0, pp: 0 }, { rank: 2, dp: 0, pp: 1 }, { rank: 1, dp: 1, pp: 0 }, { rank: 3, dp: 1, pp: 1 }], rings: [[0, 1], [0, 1]], moved: [1, 2] },
    };
    await redis.set(k.schedule, JSON.stringify(schedule));
    const script = `
import json, sys, redis
sys.path.insert(0, ${JSON.stringify(join(__dirname, '../clients/python'))})
from pipemorph_rank import PipemorphRank
r = PipemorphRank(redis.Redis.from_url(${JSON.stringify(DB_URL)}), ${JSON.stringify(topoJob)}, rank=2, dp=1, pp=0)
ops, toggle = r.schedule_for(7)
first = r.topology_change
r.topology_change = None
again = r.schedule_for(7)
print(json.dumps({"dp": r.dp, "pp": r.pp, "ops": ops[:2], "toggle": toggle, "change": first, "topologyVersion": r.topology_version, "second": r.topology_change}))`;
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(PYTHON, ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c) => (stdout += c));
      child.stderr.on('data', (c) => (stderr += c));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    await redis.del(...Object.values(k));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(out).toMatchObject({ dp: 0, pp: 1, ops: ['F0', 'F1'], toggle: { sendQueues: 3, recvQueues: 3 }, topologyVersion: 1, second: null });
    expect(out.change.moved).toEqual([1, 2]);
  });
});
