/**
 * npm run bench:daemon (starts a redis-server of its own; leaves the one at REDIS_URL alone)
 *
 * Last output line: {"ingestSamplesPerSec", "controlLoopP50Ms", "controlLoopP99Ms", "heapBytesPer10kLinks"}
 * - ingest: a backlog of rank reports (4 link samples each) written to one job's stream, then
 *   drained by one daemon process; link samples per second of drain time;
 * - control loop: S=8, N=32, 64 reporting ranks (8 replicas); the daemon's loop on Redis's clock,
 *   from the last stored report of the iteration that reveals a straggler (the K-th bad sample) to
 *   the prepared schedule's control event, both stream entry ids (whole ms: what the daemon owns;
 *   in production 64 ranks write their reports in parallel, not one client in one pipeline); and
 *   the same trials as this bench sees them, from starting to write that iteration to reading the prepare;
 *   quick decisions (Alg. 2 for a small job) inline as shipped, and every decision on the planning
 *   worker (control.inlinePlanMaxCells 0), in alternating rounds;
 * - planning isolation: another job's reports, XADD -> acknowledged, while an 8 x 32 job is
 *   planned by the MILP for seconds, with planning on the event loop and on a worker;
 * - memory: retained heap and typed-array bytes of the per-job detector state per 10k links (node --expose-gc).
 * The daemon runs as its own process (dist/src/daemon/main.js), as in production, and is observed
 * like any client: through Redis, GET /jobs/:id and GET /metrics (its planning-duration histogram,
 * its event-loop lag and GC time per trial), never through its internals. Results also go to
 * bench/results/daemon.json, from which the table in docs/benchmarks.md is rendered.
 *
 * Quick runs that leave the results file alone:
 *   node dist/bench/daemon.bench.js loop [TRIALS] [own-core]   control-loop trials only
 *     (PIPEMORPH_BENCH_ON_WORKER=1: every decision on the planning worker; own-core: the daemon on a core of its own)
 *   node dist/bench/daemon.bench.js isolation                   the planning-isolation rows
 *   node dist/bench/daemon.bench.js ingest                      the ingest drain
 * PIPEMORPH_DAEMON_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" profiles the daemon process;
 * PIPEMORPH_BENCH_WARM_UP_ROUNDS=N overrides control.warmUpRounds (0: a daemon that decides cold).
 */
import Redis from 'ioredis';
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { DEFAULT_DETECTOR_CONFIG } from '../src/core/detect/detector-config.type';
import { JobDetector, LinkObservation } from '../src/core/detect/job-detector';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';
import { DaemonProcess } from '../test/support/daemon-process';
import { startStamp } from '../src/support/results-stamp';
import { startOwnRedis } from '../src/support/own-redis-server';

/** Pause between the pre-trial /metrics scrape and the reveal, ms (see untilPrepare). */
const SCRAPE_SETTLE_MS = 50;
/** Extra delay of the straggling link in the control-loop trials, ms. */
const SLOW_EXTRA_MS = 40;
/** Iterations a trial's straggler stays on after its measured switch (untimed; see `answering`). */
const HOLD_ITERATIONS = 20;
/** Iterations written after a trial's straggler ends, waiting for the recovery switch (untimed). */
const RECOVERY_ITERATIONS = 30;
/** main's private redis-server (issue 30, item 4): never the one at REDIS_URL. */
let REDIS_URL = '';
let redis: Redis;
const run = Date.now().toString(36);

function config(): PipemorphConfig {
  const c = JSON.parse(readFileSync(join(__dirname, '../../config/default.json'), 'utf8')) as PipemorphConfig;
  c.redis.url = REDIS_URL;
  c.http.port = 0;
  // Production settings (config/default.json) except what lets trials follow each other at once
  // (a registration adopts its job at once, so discovery keeps its production interval).
  c.control.minReplanIntervalMs = 0;
  // The trials time the first reaction (reveal -> prepare), then recover at once; a refinement
  // (control.refinePlanner, a second switch once the first is in force) would be taken for the
  // recovery. bench:optimal-line measures what a refinement costs.
  c.control.refinePlanner = 'none';
  c.handshake.retryBackoffMs = 10;
  // Iterations here come milliseconds apart, not a second: a lead of handshake.leadMs (2 s) would be
  // dozens of them, longer than a trial's straggler, and the cost gate would decline every switch
  // as not paying back after its lead. The lead is handshake.minLeadIterations, as for 1 s iterations.
  c.handshake.leadMs = 0;
  // The counterfactual: PIPEMORPH_BENCH_WARM_UP_ROUNDS=0 times a daemon that decides its first stragglers cold.
  if (process.env.PIPEMORPH_BENCH_WARM_UP_ROUNDS !== undefined) c.control.warmUpRounds = Number(process.env.PIPEMORPH_BENCH_WARM_UP_ROUNDS);
  return c;
}

/** A daemon process (test/support/daemon-process.ts) on a free port; `url` for its HTTP API, `stop` ends it. */
interface Daemon {
  url: string;
  stop(): Promise<void>;
}

/** Sets the CPU affinity of every thread of `pid` (threads started later inherit it); false when taskset is missing. */
function pin(pid: number, cpuList: string): boolean {
  return spawnSync('taskset', ['-a', '-p', '-c', cpuList, String(pid)], { stdio: 'ignore' }).status === 0;
}

/**
 * With `ownCore`, the daemon runs on the last core alone and this bench and a local Redis on the
 * others, as a Deployment with a CPU request of one core would run it beside its neighbours.
 */
async function startDaemon(adjust: (c: PipemorphConfig) => void = () => undefined, ownCore = false): Promise<Daemon> {
  const c = config();
  adjust(c);
  const daemon = await DaemonProcess.start(c);
  const last = cpus().length - 1;
  const unpin: Array<() => void> = [];
  if (ownCore) {
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    const local = /127\.0\.0\.1|localhost/.test(REDIS_URL);
    if (!pin(daemon.pid!, String(last)) || !pin(process.pid, `0-${last - 1}`) || (local && redisPid && !pin(redisPid, `0-${last - 1}`))) throw new Error('bench: taskset failed');
    unpin.push(() => pin(process.pid, `0-${last}`));
    if (local && redisPid) unpin.push(() => pin(redisPid, `0-${last}`));
  }
  await waitFor(async () => (await daemon.status('/health/ready')) === 200, 30000);
  return {
    url: daemon.url,
    stop: async () => {
      await daemon.stop();
      for (const undo of unpin) undo();
    },
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
    const ms = 1 + (slow.has(`${d}:${link}`) ? SLOW_EXTRA_MS : 0);
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
  /** From the reveal iteration's reports all stored (its pipelined XADDs answered) to the prepare read, ms. */
  storedMs: number;
  /**
   * The daemon's loop on Redis's clock: the prepare's control-stream entry id minus the reveal
   * iteration's last report's entry id (both stamped by Redis when stored; whole ms).
   */
  redisMs: number;
}

/** Where decisions are made: the shipped default (quick ones inline, the rest on the worker), or every one on the worker. */
type Placement = 'default' | 'worker';

async function controlLoopLatency(trials: number, placement: Placement = 'default', ownCore = false): Promise<{ trials: Trial[]; planning: Planning }> {
  const jobId = `bench-loop-${run}-${placement}${ownCore ? '-pinned' : ''}`;
  const stages = 8;
  const dp = 8;
  await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(jobId, stages, dp)));
  const daemon = await startDaemon((c) => {
    if (placement === 'worker') c.control.inlinePlanMaxCells = 0;
  }, ownCore);
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
  /** Writes one iteration's reports; returns the stream id Redis gave the last one. */
  const writeIteration = async (): Promise<string> => {
    const p = redis.pipeline();
    for (let rank = 0; rank < stages * dp; rank++) p.xadd(keys.reports, '*', 'm', report(jobId, rank, stages, dp, iteration, slow));
    const replies = (await p.exec()) ?? [];
    iteration++;
    return String(replies[replies.length - 1]?.[1] ?? '0-0');
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
    // Formatting /metrics leaves garbage the daemon collects soon after: a trial that starts at once
    // would time this bench's scrape, not the daemon's loop (Prometheus scrapes every 15-30 s, not
    // at the moment a straggler shows). The reveal is written once that has passed.
    await new Promise((resolve) => setTimeout(resolve, SCRAPE_SETTLE_MS));
    loop.reset();
    const t0 = performance.now();
    let writeMs = 0;
    let storedAt = 0;
    let revealId = '0-0';
    for (let k = 0; k < 100; k++) {
      const w0 = performance.now();
      const lastId = await writeIteration();
      if (k === 0) {
        storedAt = performance.now();
        writeMs = storedAt - w0;
        revealId = lastId;
      }
      const reply = (await control.xread('BLOCK', 200, 'STREAMS', keys.control, cursor)) as Array<[string, Array<[string, string[]]>]> | null;
      const t1 = performance.now();
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          cursor = id;
          const event = JSON.parse(fields[1]);
          if (event.type === 'prepare') {
            const benchStallMs = loop.max / 1e6;
            const after = await scrape(daemon);
            const trial = {
              ms: t1 - t0, writeMs, loopStallMs: after('nodejs_eventloop_lag_max_seconds') * 1000, gcMs: (after('nodejs_gc_duration_seconds_sum') - gc0) * 1000, benchStallMs, writes: k + 1,
              storedMs: t1 - storedAt, redisMs: idMs(id) - idMs(revealId),
            };
            await ackAll(event.version, event.epoch);
            await untilCommit(event.version);
            return trial;
          }
        }
      }
    }
    throw new Error('bench: no prepare');
  };
  /**
   * Untimed iterations that answer any prepare (acks, then reads up to its commit): up to
   * `iterations` of them, or until the first prepare answered when `untilOne`. A straggler is held
   * this way after its measured prepare, so the job's learned straggler episodes last as in
   * production (HOLD_ITERATIONS), not the 2-3 iterations of a trial, after which the cost gate
   * declines the next trial's first reveal as a straggler not worth a switch; and the recovery is
   * waited for this way, since the cost gate may decline it (the adapted schedule costs the healthy
   * job next to nothing) and then no prepare comes.
   */
  const answering = async (iterations: number, untilOne: boolean): Promise<void> => {
    for (let k = 0; k < iterations; k++) {
      await writeIteration();
      const reply = (await control.xread('BLOCK', 20, 'STREAMS', keys.control, cursor)) as Array<[string, Array<[string, string[]]>]> | null;
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          cursor = id;
          const event = JSON.parse(fields[1]);
          if (event.type !== 'prepare') continue;
          await ackAll(event.version, event.epoch);
          await untilCommit(event.version);
          if (untilOne) return;
        }
      }
    }
  };
  for (let k = 0; k < 12; k++) await writeIteration(); // learn baselines
  const before = untimedBadIterations();
  // Two untimed trials first: a fresh daemon's planning worker runs cold code (JIT) at first.
  for (let trial = -2; trial < trials; trial++) {
    slow.clear();
    slow.add(`${(trial + dp) % dp}:${(trial + stages) % (stages - 1)}`);
    for (let k = 0; k < before; k++) await writeIteration();
    const measured = await untilPrepare();
    if (trial >= 0) latencies.push(measured);
    await answering(HOLD_ITERATIONS, false);
    slow.clear();
    await answering(RECOVERY_ITERATIONS, true); // recovery back to the initial plan, unless the cost gate declines it
  }
  loop.disable();
  await control.quit();
  const planning = await planningSeconds(daemon);
  await daemon.stop();
  await cleanup(jobId);
  return { trials: latencies, planning };
}

/**
 * The bad iterations the detector needs before the one that reveals the straggler: a 40 ms step is
 * severe (detection.severeExtraMs), so with the defaults the first one reveals it.
 */
function untimedBadIterations(): number {
  const { enterAfter, severeExtraMs, severeEnterAfter } = config().detection;
  return (SLOW_EXTRA_MS >= severeExtraMs ? severeEnterAfter : enterAfter) - 1;
}

/** The milliseconds part of a stream id: Redis's clock when the entry was stored. */
function idMs(id: string): number {
  return Number(id.split('-')[0]);
}

/** Stream ids compare by milliseconds, then sequence. */
function idAtMost(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am < bm || (am === bm && as <= bs);
}

/** Whether the daemon's consumer group has read and acknowledged the entry `id` of `stream`. */
async function acknowledged(client: Redis, stream: string, id: string): Promise<boolean> {
  const groups = (await client.xinfo('GROUPS', stream)) as Array<Array<string | number | null>>;
  const g = groups.find((x) => x[x.indexOf('name') + 1] === 'pipemorph');
  if (!g || !idAtMost(id, String(g[g.indexOf('last-delivered-id') + 1]))) return false;
  const [count, oldest] = (await client.xpending(stream, 'pipemorph')) as [number, string | null];
  return count === 0 || (oldest !== null && !idAtMost(oldest, id));
}

interface IsolationRow {
  planningWorkers: number;
  /** Wall time from the reveal iteration of the 8 x 32 job to its prepared schedule, ms. */
  planMs: number;
  probes: number;
  /** Another job's report, from XADD to its acknowledgement by the daemon, while the plan ran. */
  probeP50Ms: number;
  probeP99Ms: number;
  probeMaxMs: number;
}

/**
 * Planning isolation: an 8 x 32 job is re-planned by a slow planner (the exact MILP, its cell
 * limit raised to cover the job: seconds of solving) while a second job's reports are written
 * one at a time and timed from XADD to their acknowledgement. With control.planningWorkers = 0 the
 * plan runs on the daemon's event loop; with 1, on a worker thread.
 */
async function ingestDuringSlowPlan(workers: number): Promise<IsolationRow> {
  const planJob = `bench-slowplan-${run}-${workers}`;
  const probeJob = `bench-probe-${run}-${workers}`;
  await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(planJob, 8, 1)));
  await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(probeJob, 4, 1)));
  const daemon = await startDaemon((c) => {
    c.control.planningWorkers = workers;
    c.control.planner = 'optimal';
    c.control.optimalMaxCells = 4096;
    c.control.optimalTimeLimitMs = 1000;
  });
  const plan = jobKeys(planJob);
  const probe = jobKeys(probeJob);
  await waitFor(async () => (await redis.get(plan.schedule)) !== null && (await redis.get(probe.schedule)) !== null);
  const control = new Redis(REDIS_URL);
  const watcher = new Redis(REDIS_URL);
  const last = (await redis.xrevrange(plan.control, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
  let cursor = last.length > 0 ? last[0][0] : '0-0';
  let iteration = 0;
  const slow = new Set<string>();
  const writePlanIteration = async () => {
    const p = redis.pipeline();
    for (let rank = 0; rank < 8; rank++) p.xadd(plan.reports, '*', 'm', report(planJob, rank, 8, 1, iteration, slow));
    await p.exec();
    iteration++;
  };
  for (let k = 0; k < 12; k++) await writePlanIteration();
  let probeIteration = 0;
  const lags: number[] = [];
  let planned = false;
  const probing = (async () => {
    while (!planned) {
      const t0 = performance.now();
      const id = (await redis.xadd(probe.reports, '*', 'm', report(probeJob, probeIteration % 4, 4, 1, Math.floor(probeIteration / 4), new Set())))!;
      probeIteration++;
      while (!(await acknowledged(watcher, probe.reports, id))) await new Promise((r) => setTimeout(r, 1));
      lags.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  slow.add('0:3');
  for (let k = 0; k < untimedBadIterations(); k++) await writePlanIteration();
  const t0 = performance.now();
  let planMs = Number.NaN;
  for (let k = 0; k < 200 && Number.isNaN(planMs); k++) {
    if (k < 20) await writePlanIteration();
    const reply = (await control.xread('BLOCK', 200, 'STREAMS', plan.control, cursor)) as Array<[string, Array<[string, string[]]>]> | null;
    for (const [, entries] of reply ?? []) {
      for (const [id, fields] of entries) {
        cursor = id;
        if (JSON.parse(fields[1]).type === 'prepare') planMs = performance.now() - t0;
      }
    }
  }
  planned = true;
  await probing;
  await control.quit();
  await watcher.quit();
  await daemon.stop();
  await cleanup(planJob);
  await cleanup(probeJob);
  const r = (x: number) => Math.round(x * 1000) / 1000;
  const row = { planningWorkers: workers, planMs: r(planMs), probes: lags.length, probeP50Ms: r(percentile(lags, 50)), probeP99Ms: r(percentile(lags, 99)), probeMaxMs: r(Math.max(...lags)) };
  console.log(JSON.stringify({ isolation: row }));
  return row;
}

interface Planning {
  count: number;
  meanMs: number;
  over10Ms: number;
  /** Mean time per stage of the control steps that published (pipemorph_control_stage_seconds), ms. */
  stagesMeanMs?: Record<string, number>;
  /** The bucket bound (ms) under which half of those steps' stage times fall. */
  stagesMedianBucketMs?: Record<string, number>;
}

/** The daemon's own planning-duration histogram, read from /metrics like any scraper. */
async function planningSeconds(daemon: Daemon): Promise<Planning> {
  const m = await scrape(daemon);
  const count = m('pipemorph_planning_duration_seconds_count');
  const sum = m('pipemorph_planning_duration_seconds_sum');
  const le10 = m('pipemorph_planning_duration_seconds_bucket', 'le="0.01"');
  const stage = (s: string) => Math.round((m('pipemorph_control_stage_seconds_sum', `stage="${s}"`) / m('pipemorph_control_stage_seconds_count', `stage="${s}"`)) * 1e6) / 1000;
  const median = (s: string) => {
    const n = m('pipemorph_control_stage_seconds_count', `stage="${s}"`);
    const bound = [0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1].find((le) => m('pipemorph_control_stage_seconds_bucket', `le="${le}",stage="${s}"`) >= n / 2);
    return bound === undefined ? Number.NaN : bound * 1000;
  };
  const stages = ['detect', 'decide', 'publish'];
  return {
    count, meanMs: (sum / count) * 1000, over10Ms: count - le10,
    stagesMeanMs: Object.fromEntries(stages.map((s) => [s, stage(s)])), stagesMedianBucketMs: Object.fromEntries(stages.map((s) => [s, median(s)])),
  };
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
  const server = await startOwnRedis();
  REDIS_URL = server.url();
  redis = new Redis(REDIS_URL);
  try {
    await measure();
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

async function measure(): Promise<void> {
  await removeLeftovers();
  if (process.argv[2] === 'isolation') {
    // Only the planning-isolation rows, printed, results file untouched (quick checks).
    for (const workers of [0, 1]) await ingestDuringSlowPlan(workers);
    await redis.quit();
    return;
  }
  if (process.argv[2] === 'ingest') {
    console.log(JSON.stringify({ ingestSamplesPerSec: Math.round(await ingestThroughput()) }));
    await redis.quit();
    return;
  }
  if (process.argv[2] === 'loop') {
    // Only the control-loop trials, printed, results file untouched (profiling runs).
    const placement: Placement = process.env.PIPEMORPH_BENCH_ON_WORKER ? 'worker' : 'default';
    const { trials, planning } = await controlLoopLatency(Number(process.argv[3] ?? 50), placement, process.argv[4] === 'own-core');
    const ms = trials.map((t) => t.ms);
    const mean = (f: (t: Trial) => number) => trials.reduce((a, t) => a + f(t), 0) / trials.length;
    const onRedis = trials.map((t) => t.redisMs);
    const stored = trials.map((t) => t.storedMs);
    console.log(JSON.stringify({
      trials: ms.length, p50Ms: percentile(ms, 50), p90Ms: percentile(ms, 90), p99Ms: percentile(ms, 99), maxMs: Math.max(...ms),
      storedP50Ms: percentile(stored, 50), storedP99Ms: percentile(stored, 99), redisP50Ms: percentile(onRedis, 50), redisP99Ms: percentile(onRedis, 99), redisMaxMs: Math.max(...onRedis), redisMs: onRedis,
      meanWriteMs: mean((t) => t.writeMs), meanLoopStallMs: mean((t) => t.loopStallMs), meanGcMs: mean((t) => t.gcMs), planning,
      // The slowest trials whole, with their index: whether the tail is early (cold) or spread.
      slowest: trials.map((t, index) => ({ index, ...t })).sort((a, b) => b.redisMs - a.redisMs).slice(0, 5),
    }));
    await redis.quit();
    return;
  }
  const stamp = startStamp();
  const heap = heapPer10kLinks();
  const ingest = await ingestThroughput();
  // The shipped placement (Alg. 2 for this job inline) and every decision on the worker,
  // alternating rounds of 25 trials, so that both see the same machine: the comparison is fair
  // even when the load changes.
  const trials: Trial[] = [];
  const onWorker: Trial[] = [];
  const plannings: Planning[] = [];
  for (let round = 0; round < 4; round++) {
    const shipped = await controlLoopLatency(25);
    trials.push(...shipped.trials);
    plannings.push(shipped.planning);
    onWorker.push(...(await controlLoopLatency(25, 'worker')).trials);
  }
  const count = plannings.reduce((a, p) => a + p.count, 0);
  const planning: Planning = { count, meanMs: plannings.reduce((a, p) => a + p.meanMs * p.count, 0) / Math.max(1, count), over10Ms: plannings.reduce((a, p) => a + p.over10Ms, 0) };
  // The daemon on a core of its own (its Deployment's CPU request), this bench and Redis on the others.
  const ownCore = cpus().length >= 2 && pin(process.pid, `0-${cpus().length - 1}`) ? (await controlLoopLatency(50, 'default', true)).trials : [];
  const isolation = [await ingestDuringSlowPlan(0), await ingestDuringSlowPlan(1)];
  await redis.quit();
  const r = (x: number) => Math.round(x * 1000) / 1000;
  // The slowest tenth of trials against the rest: which component grows with the latency.
  const sorted = trials.slice().sort((a, b) => a.ms - b.ms);
  const tail = sorted.slice(Math.floor(sorted.length * 0.9));
  const body = sorted.slice(0, Math.floor(sorted.length * 0.9));
  const avg = (ts: Trial[], f: (t: Trial) => number) => r(ts.reduce((a, t) => a + f(t), 0) / Math.max(1, ts.length));
  const breakdown = Object.fromEntries(
    (['ms', 'writeMs', 'storedMs', 'redisMs', 'loopStallMs', 'gcMs', 'benchStallMs', 'writes'] as const).map((k) => [k, { slowestTenth: avg(tail, (t) => t[k]), rest: avg(body, (t) => t[k]) }]),
  );
  /**
   * Per set of trials: the daemon's loop on Redis's clock (the reveal iteration's last report
   * stored -> the prepare stored: what the target is about), and as this bench sees it (from
   * starting to write the reveal iteration, 64 reports in one pipeline, to reading the prepare).
   */
  const stats = (ts: Trial[]) => {
    const onRedis = ts.map((t) => t.redisMs);
    const client = ts.map((t) => t.ms);
    return {
      trials: ts.length,
      p50Ms: r(percentile(onRedis, 50)), p90Ms: r(percentile(onRedis, 90)), p99Ms: r(percentile(onRedis, 99)), maxMs: r(Math.max(...onRedis)),
      client: { p50Ms: r(percentile(client, 50)), p90Ms: r(percentile(client, 90)), p99Ms: r(percentile(client, 99)), maxMs: r(Math.max(...client)) },
    };
  };
  const controlLoopOwnCore = ownCore.length > 0 ? stats(ownCore) : null;
  const controlLoopOnWorker = stats(onWorker);
  const controlLoop = { ...stats(trials), breakdown, planning };
  console.log(JSON.stringify({ controlLoop }));
  const summary = { ingestSamplesPerSec: Math.round(ingest), controlLoopP50Ms: controlLoop.p50Ms, controlLoopP99Ms: controlLoop.p99Ms, heapBytesPer10kLinks: Math.round(heap) };
  const results = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'daemon.json'), `${JSON.stringify({ bench: 'daemon', ...summary, controlLoop, controlLoopOnWorker, controlLoopOwnCore, isolation, loadAverage: loadavg().map((x) => r(x)), stamp: stamp() })}\n`);
  console.log(JSON.stringify(summary));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
