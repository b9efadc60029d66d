/**
 * npm run bench:daemon (needs Redis at REDIS_URL, default 127.0.0.1:6379; scripts/ensure-redis.sh)
 *
 * Last output line: {"ingestSamplesPerSec", "controlLoopP50Ms", "controlLoopP99Ms", "heapBytesPer10kLinks"}
 * - ingest: a backlog of rank reports (4 link samples each) written to one job's stream, then
 *   drained by one daemon process; link samples per second of drain time;
 * - control loop: S=8, N=32, 64 reporting ranks (8 replicas); time from writing the iteration's
 *   reports that reveal a straggler (the K-th bad sample) to the prepared schedule's control event;
 * - memory: retained heap and typed-array bytes of the per-job detector state per 10k links (node --expose-gc).
 * The daemon runs as its own process (dist/src/daemon/main.js), as in production, and is observed
 * like any client: through Redis, GET /jobs/:id and GET /metrics (its planning-duration histogram,
 * its event-loop lag and GC time per trial), never through its internals. Results also go to
 * bench/results/daemon.json, from which the README's table is rendered.
 */
import Redis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { DEFAULT_DETECTOR_CONFIG } from '../src/core/detect/detector-config.type';
import { JobDetector, LinkObservation } from '../src/core/detect/job-detector';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
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

/** A daemon process on a free port; `url` for its HTTP API, `stop` ends it. */
interface Daemon {
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

async function startDaemon(): Promise<Daemon> {
  const port = await freePort();
  const path = join(mkdtempSync(join(tmpdir(), 'pipemorph-bench-')), 'config.json');
  writeFileSync(path, JSON.stringify({ ...config(), http: { host: '127.0.0.1', port } }));
  const env: NodeJS.ProcessEnv = { ...process.env, PIPEMORPH_CONFIG: path };
  delete env.REDIS_URL;
  delete env.PORT;
  const child: ChildProcess = spawn(process.execPath, [join(__dirname, '..', 'src', 'daemon', 'main.js')], { env, stdio: ['ignore', 'ignore', process.env.PIPEMORPH_BENCH_LOGS ? 'inherit' : 'ignore'] });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/health/ready`).catch(() => null))?.ok ?? false, 30000);
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** One daemon metric from its /metrics text (summed over label sets), NaN when absent. */
async function scrape(daemon: Daemon): Promise<(name: string, labels?: string) => number> {
  const text = await (await fetch(`${daemon.url}/metrics`)).text();
  return (name, labels = '') => {
    let sum = Number.NaN;
    for (const line of text.split('\n')) {
      if (!line.startsWith(name) || line.startsWith('#')) continue;
      const rest = line.slice(name.length);
      if (!(rest.startsWith(' ') || (rest.startsWith('{') && rest.includes(labels)))) continue;
      const value = Number(rest.slice(rest.lastIndexOf(' ') + 1));
      sum = Number.isNaN(sum) ? value : sum + value;
    }
    return sum;
  };
}

async function reportsCounted(daemon: Daemon, jobId: string): Promise<number> {
  const response = await fetch(`${daemon.url}/jobs/${jobId}`);
  return response.ok ? ((await response.json()) as { counters: { reports: number } }).counters.reports : -1;
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
  const daemon = await startDaemon();
  await waitFor(async () => (await reportsCounted(daemon, jobId)) >= 0);
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
  const start = await reportsCounted(daemon, jobId);
  const t0 = performance.now();
  for (let k = 0; k < reports.length; k += 2000) {
    const p = redis.pipeline();
    for (const m of reports.slice(k, k + 2000)) p.xadd(jobKeys(jobId).reports, '*', 'm', m);
    await p.exec();
  }
  // Polled over HTTP every 5 ms: the drain is timed to within a poll.
  await waitFor(async () => (await reportsCounted(daemon, jobId)) - start >= reports.length, 120000);
  const seconds = (performance.now() - t0) / 1000;
  await daemon.stop();
  await cleanup(jobId);
  console.log(JSON.stringify({ ingest: { reports: reports.length, linkSamples: samples, seconds: Math.round(seconds * 1000) / 1000 } }));
  return samples / seconds;
}

/** What one control-loop trial spent where: the evidence for where the tail comes from. */
interface Trial {
  ms: number;
  /** Writing the reveal iteration's 64 reports (a pipelined XADD). */
  writeMs: number;
  /** Longest event-loop stall of the daemon during the trial (its nodejs_eventloop_lag_max_seconds), ms. */
  loopStallMs: number;
  /** The daemon's garbage-collection time during the trial (nodejs_gc_duration_seconds), ms. */
  gcMs: number;
  /** Longest event-loop stall of this bench process (its reads are late by that much), ms. */
  benchStallMs: number;
  /** Iterations written before the prepare came (1: the reveal iteration itself). */
  writes: number;
}

async function controlLoopLatency(trials: number): Promise<Trial[]> {
  const jobId = `bench-loop-${run}`;
  const stages = 8;
  const dp = 8;
  await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(jobId, stages, dp)));
  const daemon = await startDaemon();
  const keys = jobKeys(jobId);
  await waitFor(async () => (await redis.get(keys.schedule)) !== null);
  const last = (await redis.xrevrange(keys.control, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
  let cursor = last.length > 0 ? last[0][0] : '0-0';
  let iteration = 0;
  const slow = new Set<string>();
  const latencies: Trial[] = [];
  const control = new Redis(REDIS_URL);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
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
   * Reads the control stream up to the commit of `version`, so the next trial's first read does not
   * return this commit (which would make every trial write one more iteration than it needs).
   */
  const untilCommit = async (version: number): Promise<void> => {
    for (;;) {
      const reply = (await control.xread('BLOCK', 5000, 'STREAMS', keys.control, cursor)) as Array<[string, Array<[string, string[]]>]> | null;
      if (!reply) throw new Error(`bench: no commit of version ${version}`);
      for (const [, entries] of reply) {
        for (const [id, fields] of entries) {
          cursor = id;
          const event = JSON.parse(fields[1]);
          if (event.version === version && (event.type === 'commit' || event.type === 'abort')) return;
        }
      }
    }
  };
  /**
   * Writes iterations until a prepare arrives; returns ms from the start of the first write (the
   * iteration that reveals the straggler) to the moment the prepare is read, whatever happens in
   * between: a prepare that comes after the read window, or after more iterations, is timed in full.
   */
  const untilPrepare = async (): Promise<Trial> => {
    // Scraping resets the daemon's event-loop lag window; the GC sum is read before and after.
    const gc0 = (await scrape(daemon))('nodejs_gc_duration_seconds_sum');
    loop.reset();
    const t0 = performance.now();
    let writeMs = 0;
    for (let k = 0; k < 100; k++) {
      const w0 = performance.now();
      await writeIteration();
      if (k === 0) writeMs = performance.now() - w0;
      const reply = (await control.xread('BLOCK', 200, 'STREAMS', keys.control, cursor)) as Array<[string, Array<[string, string[]]>]> | null;
      const t1 = performance.now();
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          cursor = id;
          const event = JSON.parse(fields[1]);
          if (event.type === 'prepare') {
            const benchStallMs = loop.max / 1e6;
            const after = await scrape(daemon);
            const trial = { ms: t1 - t0, writeMs, loopStallMs: after('nodejs_eventloop_lag_max_seconds') * 1000, gcMs: (after('nodejs_gc_duration_seconds_sum') - gc0) * 1000, benchStallMs, writes: k + 1 };
            await ackAll(event.version, event.epoch);
            await untilCommit(event.version);
            return trial;
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
  loop.disable();
  await control.quit();
  planning = await planningSeconds(daemon);
  await daemon.stop();
  await cleanup(jobId);
  return latencies;
}

let planning: { count: number; meanMs: number; over10Ms: number } = { count: 0, meanMs: 0, over10Ms: 0 };

/** The daemon's own planning-duration histogram, read from /metrics like any scraper. */
async function planningSeconds(daemon: Daemon): Promise<typeof planning> {
  const m = await scrape(daemon);
  const count = m('pipemorph_planning_duration_seconds_count');
  const sum = m('pipemorph_planning_duration_seconds_sum');
  const le10 = m('pipemorph_planning_duration_seconds_bucket', 'le="0.01"');
  return { count, meanMs: (sum / count) * 1000, over10Ms: count - le10 };
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
  const trials = await controlLoopLatency(100);
  await redis.quit();
  const r = (x: number) => Math.round(x * 1000) / 1000;
  const latencies = trials.map((t) => t.ms);
  // The slowest tenth of trials against the rest: which component grows with the latency.
  const sorted = trials.slice().sort((a, b) => a.ms - b.ms);
  const tail = sorted.slice(Math.floor(sorted.length * 0.9));
  const body = sorted.slice(0, Math.floor(sorted.length * 0.9));
  const avg = (ts: Trial[], f: (t: Trial) => number) => r(ts.reduce((a, t) => a + f(t), 0) / Math.max(1, ts.length));
  const breakdown = Object.fromEntries(
    (['ms', 'writeMs', 'loopStallMs', 'gcMs', 'benchStallMs', 'writes'] as const).map((k) => [k, { slowestTenth: avg(tail, (t) => t[k]), rest: avg(body, (t) => t[k]) }]),
  );
  const controlLoop = { trials: latencies.length, p50Ms: r(percentile(latencies, 50)), p90Ms: r(percentile(latencies, 90)), p99Ms: r(percentile(latencies, 99)), maxMs: r(Math.max(...latencies)), breakdown, planning };
  console.log(JSON.stringify({ controlLoop }));
  const summary = { ingestSamplesPerSec: Math.round(ingest), controlLoopP50Ms: r(percentile(latencies, 50)), controlLoopP99Ms: r(percentile(latencies, 99)), heapBytesPer10kLinks: Math.round(heap) };
  const results = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'daemon.json'), `${JSON.stringify({ bench: 'daemon', ...summary, controlLoop, loadAverage: loadavg().map((x) => r(x)) })}\n`);
  console.log(JSON.stringify(summary));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
