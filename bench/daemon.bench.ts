/**
 * npm run bench:daemon (needs Redis at REDIS_URL, default 127.0.0.1:6379; scripts/ensure-redis.sh)
 *
 * Last output line: {"ingestSamplesPerSec", "controlLoopP50Ms", "controlLoopP99Ms", "heapBytesPer10kLinks", ...},
 * also written to bench/results/daemon.json (the README's daemon table is rendered from it).
 * - ingest: a backlog of rank reports (4 link samples each) written to one job's stream, then
 *   drained by one daemon process; link samples per second of drain time (drained: the daemon's
 *   consumer group has read and acknowledged everything, as any Redis client sees it);
 * - control loop: S=8, N=32, 64 reporting ranks (8 replicas); time from writing the iteration's
 *   reports that reveal a straggler (the K-th bad sample) to the prepared schedule's control event;
 * - where the control loop's time goes: the same trials again with an in-memory tracer (the
 *   daemon's own spans: ingest, planning, publish), garbage collections (perf_hooks) and the
 *   event-loop delay, per trial; the slowest 5% against the median half;
 * - memory: retained heap and typed-array bytes of the per-job detector state per 10k links (node --expose-gc).
 * The bench reaches the daemon only as a client does: Redis and its HTTP API.
 */
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import Redis from 'ioredis';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { DEFAULT_DETECTOR_CONFIG } from '../src/core/detect/detector-config.type';
import { JobDetector, LinkObservation } from '../src/core/detect/job-detector';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { startDaemon, StartedDaemon } from '../src/daemon/start-daemon.util';
import { streamDrained } from '../src/emulator/stream-drained.util';
import { JOBS_INDEX, jobKeys, REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = new Redis(REDIS_URL);
const run = Date.now().toString(36);

function config(): PipemorphConfig {
  const c = JSON.parse(readFileSync(join(__dirname, '../../config/default.json'), 'utf8')) as PipemorphConfig;
  c.redis.url = REDIS_URL;
  c.http.port = 0;
  c.http.host = '127.0.0.1';
  c.ingest.blockMs = 20;
  c.jobs.discoveryIntervalMs = 20;
  c.control.minReplanIntervalMs = 0;
  c.handshake.retryBackoffMs = 10;
  return c;
}

async function startBenchDaemon(): Promise<StartedDaemon> {
  return startDaemon(config(), { logs: Boolean(process.env.PIPEMORPH_BENCH_LOGS) });
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
  await redis.srem(JOBS_INDEX, jobId);
}

async function ingestThroughput(): Promise<number> {
  const jobId = `bench-ingest-${run}`;
  const stages = 8;
  const dp = 64; // 512 reporting ranks
  const iterations = 100; // 51,200 reports, about 200k link samples
  await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(jobId, stages, dp)));
  const daemon = await startBenchDaemon();
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
  const t0 = performance.now();
  for (let k = 0; k < reports.length; k += 2000) {
    const p = redis.pipeline();
    for (const m of reports.slice(k, k + 2000)) p.xadd(jobKeys(jobId).reports, '*', 'm', m);
    await p.exec();
  }
  await streamDrained(redis, jobKeys(jobId).reports, config().ingest.consumerGroup, 120000, 2);
  const accepted = await acceptedReports(daemon, jobId);
  if (accepted < reports.length) throw new Error(`bench: the daemon accepted ${accepted} of ${reports.length} reports`);
  const seconds = (performance.now() - t0) / 1000;
  await daemon.app.close();
  await cleanup(jobId);
  console.log(JSON.stringify({ ingest: { reports: reports.length, linkSamples: samples, seconds: Math.round(seconds * 1000) / 1000 } }));
  return samples / seconds;
}

/** The job's accepted-report counter, from GET /jobs/:id. */
async function acceptedReports(daemon: StartedDaemon, jobId: string): Promise<number> {
  const response = await fetch(`${daemon.url}/jobs/${encodeURIComponent(jobId)}`);
  if (!response.ok) throw new Error(`bench: GET /jobs/${jobId} answered ${response.status}`);
  return ((await response.json()) as { counters: { reports: number } }).counters.reports;
}

/** One control-loop trial: [start, end] in performance.now() ms and its latency. */
interface Trial {
  startMs: number;
  endMs: number;
  latencyMs: number;
}

async function controlLoopLatency(trials: number): Promise<Trial[]> {
  const jobId = `bench-loop-${run}`;
  const stages = 8;
  const dp = 8;
  await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(jobId, stages, dp)));
  const daemon = await startBenchDaemon();
  const keys = jobKeys(jobId);
  await waitFor(async () => (await redis.get(keys.schedule)) !== null);
  const last = (await redis.xrevrange(keys.control, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
  let cursor = last.length > 0 ? last[0][0] : '0-0';
  let iteration = 0;
  const slow = new Set<string>();
  const latencies: Trial[] = [];
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
  const untilPrepare = async (): Promise<Trial> => {
    const t0 = performance.now();
    for (let k = 0; k < 100; k++) {
      await writeIteration();
      const reply = (await control.xread('BLOCK', 50, 'STREAMS', keys.control, cursor)) as Array<[string, Array<[string, string[]]>]> | null;
      const t1 = performance.now();
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          cursor = id;
          const event = JSON.parse(fields[1]);
          if (event.type === 'prepare') {
            await ackAll(event.version, event.epoch);
            await waitFor(async () => JSON.parse((await redis.get(keys.schedule))!).version === event.version);
            return { startMs: t0, endMs: t1, latencyMs: t1 - t0 };
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
  await daemon.app.close();
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
  for (const jobId of await redis.smembers(JOBS_INDEX)) if (jobId.startsWith('bench-')) await cleanup(jobId);
}

/** What the daemon and the process did during one trial, ms. */
interface Breakdown {
  latencyMs: number;
  /** Control passes (daemon span control_pass): ingest + detection and planning + publish. */
  passMs: number;
  ingestMs: number;
  /** Detection snapshot and planning (detect_plan without its publish). */
  planMs: number;
  /** Publishing the prepare: Redis writes (fenced script) and their round trips. */
  publishMs: number;
  /** Garbage collections overlapping the trial. */
  gcMs: number;
  /** The rest: the bench's own writes and read, the daemon waiting in XREADGROUP, Redis, timers. */
  otherMs: number;
}

const hrMs = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6 - performance.timeOrigin;

/**
 * The control-loop trials again with an in-memory tracer registered (the daemon's own spans) and a
 * GC observer, each trial's latency broken down by what overlapped it.
 */
async function controlLoopBreakdown(trials: number): Promise<{ trials: Breakdown[]; eventLoopDelayP99Ms: number; eventLoopDelayMaxMs: number }> {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register();
  const gcs: Array<{ start: number; end: number }> = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: e.startTime, end: e.startTime + e.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let timed: Trial[];
  let spans: Array<{ name: string; start: number; end: number }>;
  try {
    timed = await controlLoopLatency(trials);
    await provider.forceFlush();
    // Read before shutdown, which empties the exporter.
    spans = exporter.getFinishedSpans().map((sp) => ({ name: sp.name, start: hrMs(sp.startTime), end: hrMs(sp.endTime) }));
  } finally {
    loop.disable();
    observer.disconnect();
    await provider.shutdown();
  }
  const overlap = (a: number, b: number, s: number, e: number) => Math.max(0, Math.min(b, e) - Math.max(a, s));
  const sum = (name: string, t: Trial) => spans.filter((sp) => sp.name === name).reduce((acc, sp) => acc + overlap(t.startMs, t.endMs, sp.start, sp.end), 0);
  const out = timed.map((t) => {
    const passMs = sum('pipemorph.control_pass', t);
    const publishMs = sum('pipemorph.publish', t);
    const gcMs = gcs.reduce((acc, g) => acc + overlap(t.startMs, t.endMs, g.start, g.end), 0);
    return { latencyMs: t.latencyMs, passMs, ingestMs: sum('pipemorph.ingest', t), planMs: sum('pipemorph.detect_plan', t) - publishMs, publishMs, gcMs, otherMs: Math.max(0, t.latencyMs - passMs - gcMs) };
  });
  return { trials: out, eventLoopDelayP99Ms: loop.percentile(99) / 1e6, eventLoopDelayMaxMs: loop.max / 1e6 };
}

/** Mean of each part over the trials. */
function meanBreakdown(trials: Breakdown[]): Breakdown {
  const keys = Object.keys(trials[0]) as Array<keyof Breakdown>;
  return Object.fromEntries(keys.map((k) => [k, r3(trials.reduce((a, t) => a + t[k], 0) / trials.length)])) as unknown as Breakdown;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

async function main(): Promise<void> {
  await removeLeftovers();
  const heap = heapPer10kLinks();
  const ingest = await ingestThroughput();
  const latencies = (await controlLoopLatency(100)).map((t) => t.latencyMs);
  const breakdown = await controlLoopBreakdown(100);
  await redis.quit();
  const sorted = breakdown.trials.slice().sort((a, b) => a.latencyMs - b.latencyMs);
  const tail = sorted.slice(Math.floor(sorted.length * 0.95));
  const body = sorted.slice(0, Math.ceil(sorted.length / 2));
  const where = { trials: sorted.length, p50Ms: r3(percentile(sorted.map((t) => t.latencyMs), 50)), p99Ms: r3(percentile(sorted.map((t) => t.latencyMs), 99)), fastestHalf: meanBreakdown(body), slowest5Pct: meanBreakdown(tail), eventLoopDelayP99Ms: r3(breakdown.eventLoopDelayP99Ms), eventLoopDelayMaxMs: r3(breakdown.eventLoopDelayMaxMs) };
  const controlLoop = { trials: latencies.length, p50Ms: r3(percentile(latencies, 50)), p90Ms: r3(percentile(latencies, 90)), p99Ms: r3(percentile(latencies, 99)), maxMs: r3(Math.max(...latencies)) };
  console.log(JSON.stringify({ controlLoop }));
  console.log(JSON.stringify({ controlLoopWhere: where }));
  const machine = { cpus: cpus().length, loadAverage1m: r3(loadavg()[0]), node: process.version };
  const result = { bench: 'daemon', ingestSamplesPerSec: Math.round(ingest), controlLoopP50Ms: controlLoop.p50Ms, controlLoopP99Ms: controlLoop.p99Ms, heapBytesPer10kLinks: Math.round(heap), controlLoop, controlLoopWhere: where, machine };
  const dir = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'daemon.json'), `${JSON.stringify(result)}\n`);
  console.log(JSON.stringify(result));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
