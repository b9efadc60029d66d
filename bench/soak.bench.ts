/**
 * npm run bench:soak (starts a redis-server of its own; leaves the one at REDIS_URL alone)
 *
 * 1000 emulated ranks (10 jobs of 4 stages x 25 data-parallel replicas) report to one daemon
 * process for PIPEMORPH_SOAK_SECONDS (default 600), one iteration per job every
 * PIPEMORPH_SOAK_ITERATION_MS (default 1000). Every job turns a straggler on and off in turn
 * (staggered), so the daemon keeps detecting, planning and running prepare/ack/commit handshakes
 * that the ranks answer (control.costAware off, see startDaemon). Every 10 s it samples the daemon's heap and RSS (its /metrics) and Redis's
 * used_memory; every straggler episode gives one control-loop latency: from writing the iteration
 * the daemon decided on (the `iteration` of the taken decision its decision log, GET
 * /jobs/:id/decisions, gives for the prepared version) to the first prepare event on the control
 * stream after the onset; and its detection delay: slow iterations up to that one. The daemon's
 * rules allow detection.severeEnterAfter (for a delay of severeExtraMs or more, as this bench's
 * 40 ms; raised towards enterAfter on a job whose own tail makes that many severe samples in a row
 * likely, detection.severeChanceRate: these jobs are slow half the time) to enterAfter.
 *
 * Start-up rule: a straggler that begins within a job's first detection.baselineWarmup iterations
 * is start-up, not a control-loop latency: the link has no learned baseline yet, so the daemon
 * sees it only once the warm-up is over, an iteration or more after the revealing one (the ~1 s
 * first-third tail of the first recorded run: job 4's straggler began at iteration 6 of 8), and
 * one on from iteration 0 is learned as the link's baseline, which delays that job's later
 * episodes too. So no straggler begins before iteration baselineWarmup + 2 (jobs whose pattern
 * has one on earlier start it there); an episode that still begins within the warm-up is counted
 * apart (startupEpisodes) and left out of the percentiles. Every other episode answered after
 * more than enterAfter slow iterations, or an iteration or more after the reports it was decided
 * on, counts as late (lateReactions, a row of the docs table): a tail like that one coming back,
 * from start-up or anywhere else, shows there.
 *
 * Prints and writes bench/results/soak.json: the samples, least-squares slopes of heap, RSS and
 * used_memory (bytes per minute) over the second half of the run (after warm-up), the control-loop
 * p50/p99 overall and of the first and the last third of the run, and the daemon's CPU time
 * (process_cpu_seconds_total) per report and its largest event-loop delay (nodejs_eventloop_lag_max_seconds).
 */
import Redis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/daemon/config/load-config';
import { jobKeys, REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';
import { percentile, slope } from './bench-stats';
import { startStamp } from '../src/support/results-stamp';
import { startOwnRedis } from '../src/support/own-redis-server';

/** A redis-server of the bench's own (main starts it), never the one at REDIS_URL (issue 30, item 4). */
let REDIS_URL = '';
const SECONDS = Number(process.env.PIPEMORPH_SOAK_SECONDS ?? 600);
const ITERATION_MS = Number(process.env.PIPEMORPH_SOAK_ITERATION_MS ?? 1000);
const JOBS = 10;
const STAGES = 4;
const DP = 25;
const SAMPLE_MS = 10000;
/** Straggler on for this many iterations, then off as long, per job; jobs start staggered. */
const STRAGGLER_ITERATIONS = 30;
const run = Date.now().toString(36);
let redis: Redis;

interface Sample {
  atS: number;
  heapBytes: number;
  rssBytes: number;
  redisUsedBytes: number;
}

interface Latency {
  atS: number;
  ms: number;
  job: number;
  /** Iteration the straggler began at. */
  onset: number;
  /** Onset within the job's baseline warm-up: start-up, not in the percentiles. */
  startup: boolean;
  /** The prepared version, and the iteration the daemon decided on (null: not in its decision log). */
  version: number;
  decidedAt: number | null;
  /** Slow iterations up to the one decided on. */
  slowIterations: number | null;
}

/** Detection settings that say which iteration reveals a straggler of SLOW_EXTRA_MS. */
interface RevealRule {
  revealAfter: number;
  enterAfter: number;
  baselineWarmup: number;
}

/** Healthy iterations after the detector's baseline warm-up before a straggler may begin. */
const QUIET_AFTER_WARMUP = 2;
/** Extra delay of the slow link while a straggler is on, ms. */
const SLOW_EXTRA_MS = 40;

function registration(jobId: string) {
  return {
    type: 'register', protocol: 1, jobId, stages: STAGES, microbatches: 4 * STAGES, dp: DP, tp: 1,
    ranks: Array.from({ length: STAGES * DP }, (_, rank) => ({ rank, dp: Math.floor(rank / STAGES), pp: rank % STAGES, tp: 0, node: `${jobId}-n${rank}` })),
    memory: { deviceBytes: new Array(STAGES).fill(2 * STAGES), activationBytes: new Array(STAGES).fill(1), hostBytes: 1e6 },
    computeMs: { fMs: new Array(STAGES).fill(10), bMs: new Array(STAGES).fill(10), wMs: new Array(STAGES).fill(10) },
  };
}

/** One report per rank: its pipeline links; link 1 of replica 0 is slow while the straggler is on. */
function report(jobId: string, rank: number, iteration: number, version: number, slow: boolean): string {
  const d = Math.floor(rank / STAGES);
  const pp = rank % STAGES;
  const links = [];
  for (const [peerPp, link] of [[pp + 1, pp], [pp - 1, pp - 1]]) {
    if (peerPp < 0 || peerPp >= STAGES) continue;
    const ms = 1 + (slow && d === 0 && link === 1 ? SLOW_EXTRA_MS : 0);
    links.push({ peer: d * STAGES + peerPp, kind: 'pipeline', bytes: 16777216, medianMs: ms, maxMs: ms, delegated: false, error: null });
  }
  return JSON.stringify({ type: 'report', protocol: 1, jobId, rank, iteration, scheduleVersion: version, computeMs: { f: 10, b: 10, w: 10 }, links });
}

class SoakJob {
  readonly keys;
  iteration = 0;
  version = 0;
  /** Episodes whose straggler ended before any prepare. */
  missed = 0;
  /** Prepares whose decision the daemon's log did not have (left out of the percentiles). */
  early = 0;
  private cursor = '0-0';
  /** The current straggler episode, until its first prepare. */
  private episode: { onset: number } | null = null;
  /** performance.now() once each iteration's reports were written. */
  readonly writtenAt: number[] = [];

  constructor(readonly index: number, readonly jobId: string, private readonly offset: number, private readonly rule: RevealRule) {
    this.keys = jobKeys(jobId);
  }

  /** No straggler before the link baselines are learned (see the start-up rule above): half the jobs' first one begins right after. */
  private slow(iteration: number): boolean {
    const phase = iteration + this.offset;
    return iteration >= this.rule.baselineWarmup + QUIET_AFTER_WARMUP && phase >= STRAGGLER_ITERATIONS && Math.floor(phase / STRAGGLER_ITERATIONS) % 2 === 1;
  }

  async step(): Promise<void> {
    const it = this.iteration++;
    const pipeline = redis.pipeline();
    for (let rank = 0; rank < STAGES * DP; rank++) pipeline.xadd(this.keys.reports, 'MAXLEN', '~', 10000, '*', 'm', report(this.jobId, rank, it, this.version, this.slow(it)));
    await pipeline.exec();
    this.writtenAt[it] = performance.now();
    if (this.slow(it) && !this.slow(it - 1)) {
      if (this.episode) this.missed++;
      this.episode = { onset: it };
    }
    if (!this.slow(it) && this.episode) {
      this.missed++;
      this.episode = null;
    }
  }

  /** Times this job's latencies from the iterations its taken decisions were made on (GET /jobs/:id/decisions). */
  async settle(url: string, latencies: Latency[]): Promise<void> {
    const log = (await (await fetch(`${url}/jobs/${this.jobId}/decisions`)).json()) as { decisions: Array<{ iteration: number; scheduleVersion: number | null; verdict: string }> };
    for (const l of latencies.filter((x) => x.job === this.index)) {
      const decision = log.decisions.find((d) => d.verdict === 'taken' && d.scheduleVersion === l.version);
      const receivedAt = l.ms;
      if (!decision || this.writtenAt[decision.iteration] === undefined) {
        this.early++; // not found: left out (counted as unmatched)
        l.ms = Number.NaN;
        continue;
      }
      l.decidedAt = decision.iteration;
      l.slowIterations = decision.iteration - l.onset + 1;
      l.ms = receivedAt - this.writtenAt[decision.iteration];
    }
  }

  /**
   * Reads control events (polled every 20 ms, between iterations too: the latency is not rounded
   * up to an iteration); every rank accepts each prepare, as ranks do when it is not late.
   */
  async answerControl(latencies: Latency[], started: number): Promise<void> {
    const reply = (await redis.xread('COUNT', 100, 'STREAMS', this.keys.control, this.cursor)) as Array<[string, Array<[string, string[]]>]> | null;
    for (const [, entries] of reply ?? []) {
      for (const [id, fields] of entries) {
        this.cursor = id;
        const event = JSON.parse(fields[1]) as { type: string; version: number; epoch: number };
        if (event.type === 'commit') this.version = event.version;
        if (event.type !== 'prepare') continue;
        const episode = this.episode;
        if (episode) {
          this.episode = null;
          // Timed once the daemon's decision log says which iteration it decided on (settle).
          latencies.push({ atS: (performance.now() - started) / 1000, ms: performance.now(), job: this.index, onset: episode.onset, startup: episode.onset < this.rule.baselineWarmup, version: event.version, decidedAt: null, slowIterations: null });
        }
        const acks = redis.pipeline();
        for (let rank = 0; rank < STAGES * DP; rank++) {
          acks.xadd(this.keys.reports, '*', 'm', JSON.stringify({ type: 'ack', protocol: 1, jobId: this.jobId, rank, version: event.version, epoch: event.epoch, iteration: this.iteration, accepted: true }));
        }
        await acks.exec();
      }
    }
  }
}

/** The named unlabelled metrics from one scrape (several scrapes would reset the event-loop delay histogram in between). */
async function metrics(url: string, ...names: string[]): Promise<number[]> {
  const lines = (await (await fetch(`${url}/metrics`)).text()).split('\n');
  return names.map((name) => {
    const line = lines.find((l) => l.startsWith(`${name} `));
    return line ? Number(line.slice(name.length + 1)) : Number.NaN;
  });
}

async function redisUsedMemory(): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
}

/** The p-th percentile, to 0.1 ms. */
function percentileMs(values: number[], p: number): number | null {
  const v = percentile(values, p);
  return v === null ? null : Math.round(v * 10) / 10;
}

async function startDaemon(port: number): Promise<ChildProcess> {
  const config = loadConfig({ ...process.env, REDIS_URL }); // PIPEMORPH__section__key overrides apply
  config.redis.url = REDIS_URL;
  config.http = { host: '127.0.0.1', port };
  config.control.minReplanIntervalMs = 0;
  // Every episode a switch and every recovery a switch back, so the loop keeps running handshakes:
  // with cost-aware switching the daemon learns that this bench's stragglers come back every 60
  // iterations and keeps the first adapted schedule (10 handshakes in 10 minutes instead of ~100).
  config.control.costAware = false;
  const path = join(mkdtempSync(join(tmpdir(), 'pipemorph-soak-')), 'config.json');
  writeFileSync(path, JSON.stringify(config));
  const env: NodeJS.ProcessEnv = { ...process.env, PIPEMORPH_CONFIG: path };
  delete env.REDIS_URL;
  delete env.PORT;
  const child = spawn(process.execPath, [join(__dirname, '..', 'src', 'daemon', 'main.js')], { env, stdio: ['ignore', 'ignore', process.env.PIPEMORPH_BENCH_LOGS ? 'inherit' : 'ignore'] });
  for (const deadline = Date.now() + 30000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if ((await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => null))?.ok) return child;
  }
  child.kill('SIGKILL');
  throw new Error('soak: the daemon did not get ready');
}

async function main(): Promise<void> {
  const stamp = startStamp();
  const server = await startOwnRedis();
  REDIS_URL = server.url();
  redis = new Redis(REDIS_URL);
  const port = 20000 + Math.floor(Math.random() * 10000);
  const url = `http://127.0.0.1:${port}`;
  const daemon = await startDaemon(port);
  const { detection } = loadConfig({ ...process.env, REDIS_URL });
  const rule: RevealRule = { revealAfter: SLOW_EXTRA_MS >= detection.severeExtraMs ? detection.severeEnterAfter : detection.enterAfter, enterAfter: detection.enterAfter, baselineWarmup: detection.baselineWarmup };
  const jobs = Array.from({ length: JOBS }, (_, k) => new SoakJob(k, `soak-${run}-${k}`, Math.round((k * 2 * STRAGGLER_ITERATIONS) / JOBS), rule));
  const [cpuAtStart] = await metrics(url, 'process_cpu_seconds_total');
  let maxLoopDelayS = 0;
  for (const job of jobs) await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registration(job.jobId)));
  const started = performance.now();
  const samples: Sample[] = [];
  const latencies: Latency[] = [];
  let behindMs = 0;
  const sampler = setInterval(() => {
    void (async () => {
      const [[heapBytes, rssBytes, loopDelayS], redisUsedBytes] = await Promise.all([metrics(url, 'nodejs_heap_size_used_bytes', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_max_seconds'), redisUsedMemory()]);
      maxLoopDelayS = Math.max(maxLoopDelayS, loopDelayS || 0);
      samples.push({ atS: Math.round((performance.now() - started) / 1000), heapBytes, rssBytes, redisUsedBytes });
      process.stderr.write(`soak ${samples[samples.length - 1].atS}s heap ${(heapBytes / 2 ** 20).toFixed(1)} MiB rss ${(rssBytes / 2 ** 20).toFixed(1)} MiB redis ${(redisUsedBytes / 2 ** 20).toFixed(1)} MiB handshakes ${latencies.length}\n`);
    })().catch(() => undefined);
  }, SAMPLE_MS);
  let polling = false;
  const poller = setInterval(() => {
    if (polling) return;
    polling = true;
    Promise.all(jobs.map((job) => job.answerControl(latencies, started)))
      .catch(() => undefined)
      .finally(() => (polling = false));
  }, 20);
  // Paced: iteration k of every job is written at k * ITERATION_MS (late iterations are not made up).
  for (let k = 0; (performance.now() - started) / 1000 < SECONDS; k++) {
    await Promise.all(jobs.map((job) => job.step()));
    const wait = started + (k + 1) * ITERATION_MS - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    else behindMs = Math.max(behindMs, -wait);
  }
  clearInterval(sampler);
  clearInterval(poller);
  while (polling) await new Promise((r) => setTimeout(r, 20));
  const cpuSeconds = (await metrics(url, 'process_cpu_seconds_total'))[0] - cpuAtStart;
  for (const job of jobs) await job.settle(url, latencies);
  const iterationsWritten = jobs.reduce((a, j) => a + j.iteration, 0);
  daemon.kill('SIGTERM');
  for (const job of jobs) {
    await redis.del(...Object.values(job.keys));
    await redis.srem('pipemorph:jobs', job.jobId);
  }
  redis.disconnect();
  await server.stop();

  const late = samples.filter((s) => s.atS >= SECONDS / 2);
  const perMinute = (key: keyof Sample) => Math.round(slope(late.map((s) => s.atS / 60), late.map((s) => s[key])));
  const counted = latencies.filter((l) => !l.startup && Number.isFinite(l.ms));
  const startup = latencies.filter((l) => l.startup);
  const third = (from: number, to: number) => counted.filter((l) => l.atS >= (from * SECONDS) / 3 && l.atS < (to * SECONDS) / 3).map((l) => l.ms);
  const first = third(0, 1);
  const last = third(2, 3);
  const result = {
    bench: 'soak',
    command: 'npm run bench:soak',
    seconds: SECONDS,
    jobs: JOBS,
    ranks: JOBS * STAGES * DP,
    iterationMs: ITERATION_MS,
    loadAverage1m: Math.round(loadavg()[0] * 100) / 100,
    maxBehindPaceMs: Math.round(behindMs),
    handshakes: latencies.length,
    revealRule: { ...rule, slowExtraMs: SLOW_EXTRA_MS },
    episodes: {
      answered: counted.length,
      lateReactions: counted.filter((l) => l.ms >= ITERATION_MS || (l.slowIterations ?? 0) > rule.enterAfter).length,
      slowIterationsToReact: counted.reduce<Record<string, number>>((acc, l) => ({ ...acc, [String(l.slowIterations)]: (acc[String(l.slowIterations)] ?? 0) + 1 }), {}),
      startupEpisodes: startup.length,
      startupMaxMs: startup.length > 0 ? Math.round(Math.max(...startup.map((l) => l.ms))) : null,
      missed: jobs.reduce((a, j) => a + j.missed, 0),
      unmatched: jobs.reduce((a, j) => a + j.early, 0),
    },
    daemonCpu: { seconds: Math.round(cpuSeconds * 10) / 10, microsPerReport: Math.round((cpuSeconds * 1e6) / (iterationsWritten * STAGES * DP)) },
    maxEventLoopDelayMs: Math.round(maxLoopDelayS * 1000),
    slopesBytesPerMinute: { heap: perMinute('heapBytes'), rss: perMinute('rssBytes'), redisUsedMemory: perMinute('redisUsedBytes') },
    controlLoopMs: {
      p50: percentileMs(counted.map((l) => l.ms), 50),
      p99: percentileMs(counted.map((l) => l.ms), 99),
      firstThirdP99: percentileMs(first, 99),
      lastThirdP99: percentileMs(last, 99),
    },
    samples,
    latencies,
    stamp: stamp(),
  };
  const dir = join(__dirname, '../../bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'soak.json'), JSON.stringify(result, null, 2) + '\n');
  const { samples: _s, latencies: _l, ...summary } = result;
  console.log(JSON.stringify(summary));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
