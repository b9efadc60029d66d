/**
 * Issue 23, item 6: a burst of registrations against one daemon with the shipped settings (only
 * its HTTP port and Redis database are set). 400 small 4-stage jobs register in one burst and
 * their ranks write 5 iterations each (20 reports per job); every job must get its schedule,
 * every report be processed and acknowledged, and each job be taken once (epoch 1). How long the
 * burst takes is a benchmark's to say (bench:scale, 1000 jobs: "burst"), not this test's: the wait
 * below is a guard against a hang, not a budget. Before the fix each registration ran a whole discovery inside the ingest
 * loop (a lease renewal and an overrides read for every job already owned, one round trip after
 * the other), so N registrations cost O(N^2) round trips during which no report was read and no
 * history replayed (so no schedule published), and the periodic discovery racing the loop's took
 * some jobs twice (epoch 2). 400 jobs took about 10 s that way on a 2-core machine, 1000 about 40 s.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { jobKeys, JOBS_INDEX, REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';
import { redisUrlFor, startDaemon } from './support/test-daemon';

const REDIS_URL = redisUrlFor(7);
const redis = new Redis(REDIS_URL);
const JOBS = 400;
const STAGES = 4;
const ITERATIONS = 5;
/** Gives up on a daemon that never gets there (a hang), not a time the test holds it to. */
const HANG_GUARD_MS = 25000;
const run = `${process.pid}-${Date.now().toString(36)}`;
const ids = Array.from({ length: JOBS }, (_, k) => `burst-${run}-${k}`);
let app: INestApplication | null = null;

function registration(jobId: string) {
  return {
    type: 'register', protocol: 1, jobId, stages: STAGES, microbatches: 8, dp: 1, tp: 1,
    ranks: Array.from({ length: STAGES }, (_, rank) => ({ rank, dp: 0, pp: rank, tp: 0, node: `${jobId}-n${rank}` })),
    memory: { deviceBytes: new Array(STAGES).fill(2 * STAGES), activationBytes: new Array(STAGES).fill(1), hostBytes: 1e6 },
    computeMs: { fMs: new Array(STAGES).fill(10), bMs: new Array(STAGES).fill(10), wMs: new Array(STAGES).fill(10) },
  };
}

function report(jobId: string, rank: number, iteration: number): string {
  const links = [];
  for (const peer of [rank + 1, rank - 1]) {
    if (peer >= 0 && peer < STAGES) links.push({ peer, kind: 'pipeline', bytes: 1 << 24, medianMs: 1, maxMs: 1, delegated: false, error: null });
  }
  return JSON.stringify({ type: 'report', protocol: 1, jobId, rank, iteration, scheduleVersion: 0, computeMs: { f: 10, b: 10, w: 10 }, links });
}

/** Jobs with a schedule key, and reports not yet read or not yet acknowledged by the daemon's group. */
async function progress(): Promise<{ scheduled: number; unprocessed: number }> {
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.exists(jobKeys(id).schedule).xinfo('GROUPS', jobKeys(id).reports);
  const replies = (await pipeline.exec())!;
  let scheduled = 0;
  let unprocessed = 0;
  for (let k = 0; k < ids.length; k++) {
    scheduled += Number(replies[2 * k][1]);
    const [error, groups] = replies[2 * k + 1] as [Error | null, Array<Array<string | number | null>>];
    const g = error ? undefined : groups.find((x) => x[x.indexOf('name') + 1] === 'pipemorph');
    // No group yet: the job is not taken, none of its 20 entries read.
    unprocessed += g ? Number(g[g.indexOf('pending') + 1]) + Number(g[g.indexOf('lag') + 1] ?? 1) : STAGES * ITERATIONS;
  }
  return { scheduled, unprocessed };
}

beforeAll(async () => {
  await redis.flushdb();
});

afterAll(async () => {
  await app?.close();
  await redis.flushdb();
  await redis.quit();
});

it(`serves a burst of ${JOBS} registrations with the shipped settings: every job scheduled once, every report processed`, async () => {
  const config = JSON.parse(readFileSync(join(__dirname, '../config/default.json'), 'utf8')) as PipemorphConfig;
  config.redis.url = REDIS_URL;
  config.http = { ...config.http, host: '127.0.0.1', port: 0 };
  app = (await startDaemon(config)).app;
  const started = Date.now();
  const burst = redis.pipeline();
  for (const id of ids) burst.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(id)));
  for (let iteration = 0; iteration < ITERATIONS; iteration++) {
    for (const id of ids) for (let rank = 0; rank < STAGES; rank++) burst.xadd(jobKeys(id).reports, '*', 'm', report(id, rank, iteration));
  }
  await burst.exec();
  let last = await progress();
  while (Date.now() - started < HANG_GUARD_MS && (last.scheduled < JOBS || last.unprocessed > 0)) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    last = await progress();
  }
  expect(last).toEqual({ scheduled: JOBS, unprocessed: 0 });
  expect(await redis.scard(JOBS_INDEX)).toBe(JOBS);
  const epochs = (await redis.mget(...ids.map((id) => jobKeys(id).epoch))).map(Number);
  expect(epochs.filter((e) => e !== 1)).toEqual([]); // each job taken once
}, 60000);
