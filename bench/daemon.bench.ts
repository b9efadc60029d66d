/**
 * npm run bench:daemon (needs Redis at REDIS_URL, default 127.0.0.1:6379; scripts/ensure-redis.sh)
 *
 * Last output line: {"ingestSamplesPerSec", "controlLoopP50Ms", "controlLoopP99Ms", "heapBytesPer10kLinks"}
 * - ingest: a backlog of rank reports (4 link samples each) written to one job's stream, then
 *   drained by one daemon process; link samples per second of drain time;
 * - control loop: S=8, N=32, 64 reporting ranks (8 replicas); time from writing the iteration's
 *   reports that reveal a straggler (the K-th bad sample) to the prepared schedule's control event;
 * - memory: retained heap and typed-array bytes of the per-job detector state per 10k links (node --expose-gc).
 */
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_DETECTOR_CONFIG } from '../src/core/detect/detector-config.type';
import { JobDetector, LinkObservation } from '../src/core/detect/job-detector';
import { AppModule } from '../src/daemon/app.module';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { JobRegistry } from '../src/daemon/jobs/job-registry.service';
import { jobKeys, REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = new Redis(REDIS_URL);
const run = Date.now().toString(36);

function config(): PipemorphConfig {
  const c = JSON.parse(readFileSync(join(__dirname, '../../config/default.json'), 'utf8')) as PipemorphConfig;
  c.redis.url = REDIS_URL;
  c.http.port = 0;
  c.ingest.blockMs = 20;
  c.jobs.discoveryIntervalMs = 20;
  c.control.minReplanIntervalMs = 0;
  c.handshake.retryBackoffMs = 10;
  return c;
}

async function startDaemon(): Promise<INestApplication> {
  const app = await NestFactory.create(AppModule.forRoot(config()), { logger: process.env.PIPEMORPH_BENCH_LOGS ? ['log', 'warn', 'error'] : false });
  await app.listen(0, '127.0.0.1');
  return app;
}

function registration(jobId: string, stages: number, dp: number) {
  return {
    type: 'register', protocol: 1, jobId, stages, microbatches: 4 * stages, dp, tp: 1,
    ranks: Array.from({ length: stages * dp }, (_, rank) => ({ rank, dp: Math.floor(rank / stages), pp: rank % stages, tp: 0, node: `n${rank}` })),
    memory: { deviceBytes: new Array(stages).fill(2 * stages), activationBytes: new Array(stages).fill(1), hostBytes: 1e6 },
    computeMs: { fMs: new Array(stages).fill(10), bMs: new Array(stages).fill(10), wMs: new Array(stages).fill(10) },
  };
}

/** One report per rank: its pipeline links (up to 2) and its two data-parallel ring neighbours. */
function report(jobId: string, rank: number, stages: number, dp: number, iteration: number, slow: Set<string>): string {
  const d = Math.floor(rank / stages);
  const pp = rank % stages;
  const links = [];
  for (const [peerPp, link] of [[pp + 1, pp], [pp - 1, pp - 1]]) {
    if (peerPp < 0 || peerPp >= stages) continue;
    const ms = 1 + (slow.has(`${d}:${link}`) ? 40 : 0);
    links.push({ peer: d * stages + peerPp, kind: 'pipeline', bytes: 16777216, medianMs: ms, maxMs: ms, delegated: false, error: null });
  }
  if (dp > 1) {
    for (const peerDp of [(d + 1) % dp, (d + dp - 1) % dp]) {
      links.push({ peer: peerDp * stages + pp, kind: 'data-parallel', bytes: 67108864, medianMs: 5, maxMs: 6, delegated: false, error: null });
    }
  }
  return JSON.stringify({ type: 'report', protocol: 1, jobId, rank, iteration, scheduleVersion: 1, computeMs: { f: 10, b: 10, w: 10 }, links: links.slice(0, 4) });
}

async function waitFor<T>(check: () => Promise<T | null | undefined | false>, timeoutMs = 60000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('bench: timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function cleanup(jobId: string): Promise<void> {
  await redis.del(...Object.values(jobKeys(jobId)));
  await redis.srem('pipemorph:jobs', jobId);
}

async function ingestThroughput(): Promise<number> {
  const jobId = `bench-ingest-${run}`;
  const stages = 8;
  const dp = 64; // 512 reporting ranks
  const iterations = 100; // 51,200 reports, about 200k link samples
  await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(jobId, stages, dp)));
  const app = await startDaemon();
  const registry = app.get(JobRegistry);
  const job = await waitFor(async () => registry.get(jobId));
  await waitFor(async () => (await redis.get(jobKeys(jobId).schedule)) !== null);
  // Write the backlog faster than the daemon drains it; timed from the first write to the last
  // processed report (the writes are inside the time, so this under-states ingest speed a little).
  let samples = 0;
  const reports: string[] = [];
  for (let it = 0; it < iterations; it++) {
    for (let rank = 0; rank < stages * dp; rank++) {
      const m = report(jobId, rank, stages, dp, it, new Set());
      samples += (m.match(/"peer"/g) ?? []).length;
      reports.push(m);
    }
  }
  const start = job.counters.reports;
  const t0 = performance.now();
  for (let k = 0; k < reports.length; k += 2000) {
    const p = redis.pipeline();
    for (const m of reports.slice(k, k + 2000)) p.xadd(jobKeys(jobId).reports, '*', 'm', m);
    await p.exec();
  }
  await waitFor(async () => registry.get(jobId)!.counters.reports - start >= reports.length, 120000);
  const seconds = (performance.now() - t0) / 1000;
  await app.close();
  await cleanup(jobId);
  console.log(JSON.stringify({ ingest: { reports: reports.length, linkSamples: samples, seconds: Math.round(seconds * 1000) / 1000 } }));
  return samples / seconds;
}

async function controlLoopLatency(trials: number): Promise<number[]> {
  const jobId = `bench-loop-${run}`;
  const stages = 8;
  const dp = 8;
  await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(jobId, stages, dp)));
  const app = await startDaemon();
  const keys = jobKeys(jobId);
  await waitFor(async () => (await redis.get(keys.schedule)) !== null);
  const last = (await redis.xrevrange(keys.control, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
  let cursor = last.length > 0 ? last[0][0] : '0-0';
  let iteration = 0;
  const slow = new Set<string>();
  const latencies: number[] = [];
  const control = new Redis(REDIS_URL);
  const writeIteration = async () => {
    const p = redis.pipeline();
    for (let rank = 0; rank < stages * dp; rank++) p.xadd(keys.reports, '*', 'm', report(jobId, rank, stages, dp, iteration, slow));
    await p.exec();
    iteration++;
  };
  const ackAll = async (version: number, epoch: number) => {
    const p = redis.pipeline();
    for (let rank = 0; rank < stages * dp; rank++) {
      p.xadd(keys.reports, '*', 'm', JSON.stringify({ type: 'ack', protocol: 1, jobId, rank, version, epoch, iteration, accepted: true }));
    }
    await p.exec();
  };
  /**
   * Writes iterations until a prepare arrives; returns ms from the start of the first write (the
   * iteration that reveals the straggler) to the moment the prepare is read, whatever happens in
   * between: a prepare that comes after the read window, or after more iterations, is timed in full.
   */
  const untilPrepare = async (): Promise<number> => {
    const t0 = performance.now();
    for (let k = 0; k < 100; k++) {
      await writeIteration();
      const reply = (await control.xread('BLOCK', 200, 'STREAMS', keys.control, cursor)) as Array<[string, Array<[string, string[]]>]> | null;
      const t1 = performance.now();
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          cursor = id;
          const event = JSON.parse(fields[1]);
          if (event.type === 'prepare') {
            await ackAll(event.version, event.epoch);
            await waitFor(async () => JSON.parse((await redis.get(keys.schedule))!).version === event.version);
            return t1 - t0;
          }
        }
      }
    }
    throw new Error('bench: no prepare');
  };
  for (let k = 0; k < 12; k++) await writeIteration(); // learn baselines
  for (let trial = 0; trial < trials; trial++) {
    slow.clear();
    slow.add(`${trial % dp}:${trial % (stages - 1)}`);
    // Two bad iterations are not enough (enterAfter = 3); the third reveals the straggler.
    for (let k = 0; k < 2; k++) await writeIteration();
    latencies.push(await untilPrepare());
    slow.clear();
    await untilPrepare(); // recovery back to the initial plan
  }
  await control.quit();
  await app.close();
  await cleanup(jobId);
  return latencies;
}

function heapPer10kLinks(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  const stages = 8;
  const dp = 320; // 2560 ranks: 4480 pipeline directions + 5120 data-parallel links
  const ranks = Array.from({ length: stages * dp }, (_, rank) => ({ rank, dp: Math.floor(rank / stages), pp: rank % stages }));
  gc();
  // Typed arrays keep their storage outside the JS heap: count both.
  const used = () => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const before = used();
  const detector = new JobDetector({ stages, dpSize: dp, ranks }, DEFAULT_DETECTOR_CONFIG);
  for (let it = 0; it < 32; it++) {
    for (const { rank, dp: d, pp } of ranks) {
      const links: LinkObservation[] = [];
      if (pp + 1 < stages) links.push({ peer: rank + 1, kind: 'pipeline', bytes: 1, medianMs: 1, maxMs: 1, delegated: false, error: null });
      if (pp > 0) links.push({ peer: rank - 1, kind: 'pipeline', bytes: 1, medianMs: 1, maxMs: 1, delegated: false, error: null });
      links.push({ peer: ((d + 1) % dp) * stages + pp, kind: 'data-parallel', bytes: 1, medianMs: 5, maxMs: 5, delegated: false, error: null });
      links.push({ peer: ((d + dp - 1) % dp) * stages + pp, kind: 'data-parallel', bytes: 1, medianMs: 5, maxMs: 5, delegated: false, error: null });
      detector.observe(rank, it, { f: 1, b: 1, w: 1 }, links);
    }
  }
  gc();
  const bytes = used() - before;
  const links = detector.linkCount();
  console.log(JSON.stringify({ memory: { links, ranks: ranks.length, heapBytes: bytes } }));
  return (bytes / links) * 10000;
}

function percentile(values: number[], p: number): number {
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Jobs left behind by an interrupted bench run would be adopted and slow this one down. */
async function removeLeftovers(): Promise<void> {
  for (const jobId of await redis.smembers('pipemorph:jobs')) if (jobId.startsWith('bench-')) await cleanup(jobId);
}

async function main(): Promise<void> {
  await removeLeftovers();
  const heap = heapPer10kLinks();
  const ingest = await ingestThroughput();
  const latencies = await controlLoopLatency(100);
  await redis.quit();
  const r = (x: number) => Math.round(x * 1000) / 1000;
  console.log(JSON.stringify({ controlLoop: { trials: latencies.length, p50Ms: r(percentile(latencies, 50)), p90Ms: r(percentile(latencies, 90)), p99Ms: r(percentile(latencies, 99)), maxMs: r(Math.max(...latencies)) } }));
  console.log(JSON.stringify({ ingestSamplesPerSec: Math.round(ingest), controlLoopP50Ms: r(percentile(latencies, 50)), controlLoopP99Ms: r(percentile(latencies, 99)), heapBytesPer10kLinks: Math.round(heap) }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
