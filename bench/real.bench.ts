/**
 * npm run bench:real: real rank processes (clients/python, one per stage, torch.distributed gloo on
 * 127.0.0.1) in wall-clock time, with the real daemon and Redis in the loop for pipemorph. Every
 * iteration time here is measured by the ranks; the engine only supplies the model column.
 *
 * Policies per scenario:
 * - healthy: the daemon's initial plan (Alg. 1, device memory), no injected delay;
 * - zb-static: the same schedule with the delay, GPU-direct sends (head-of-line blocking);
 * - delegation-only: the same schedule with the daemon's own delegation toggles on from the start;
 * - pipemorph: ranks follow the daemon, which detects the slow link and publishes a new schedule.
 * Static policies are measured over their steady iterations; pipemorph over the iterations after its
 * last switch. `model` is the emulator's iteration time for the same schedule and delay (the engine the
 * daemon plans with): the distance measured vs model is what the model misses of real processes.
 *
 * The sleep rows (`--compute sleep`) hold each op for its profiled time with real processes, sends and
 * clocks; a 2-core box cannot run 8 real compute processes without contention. Beside them, rows with
 * real compute (bench/real-torch.ts): the tiny GPT trained with `--compute torch` through the
 * integration API (healthy, zb-static, pipemorph, the daemon's prediction error), and the re-map of a
 * data-parallel straggler measured (before, the switch iteration, after, the handoff cost).
 *
 * PIPEMORPH_BENCH_ONLY picks what runs: 4 or 8 (sleep rows by stage count), sleep, torch (the GPT rows
 * and the re-map), gpt, remap, rebalance (the compute straggler and layer moves, bench/real-rebalance.ts);
 * a part not run keeps its last measurement from bench/results/real.json.
 * PIPEMORPH_BENCH_QUICK=1 runs fewer iterations. Last line: JSON, also written to bench/results/real.json.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { cpus, loadavg } from 'node:os';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PipelineProfile } from '../src/core/pipeline/pipeline-profile.type';
import { loadConfig } from '../src/daemon/config/load-config';
import { startDaemon } from '../src/daemon/start-daemon.util';
import { parseDelaySpec } from '../src/emulator/delay/delay-spec';
import { DEFAULT_EMULATION, EmulatedJob } from '../src/emulator/emulated-job';
import { replicaPlans } from '../src/emulator/replica-plans';
import { megatron8, uniform4 } from '../src/emulator/scenarios';
import { deviceInflightCaps } from '../src/core/planner/initial-planner';
import { toPipelineModel } from '../src/core/pipeline/pipeline-model';
import { PublishedSchedule } from '../src/protocol/protocol-v1.type';
import { jobKeys } from '../src/protocol/redis-keys';
import { meanMs, medianMs, RealJobResult, realRegistration, runRealJob } from '../src/real/real-job';
import { realRebalanceTable } from './readme-tables';
import { RealRebalanceRow, realRebalanceScenario, runRealRebalanceScenario } from './real-rebalance';
import { GptShape, RemapRow, RemapScenario, runRemapScenario, runTorchScenario, TorchRow, TorchScenario } from './real-torch';
import { ResultsStamp, startStamp } from '../src/support/results-stamp';
import { startOwnRedis } from '../src/support/own-redis-server';

/** A redis-server of the bench's own (main starts it), never the one at REDIS_URL (issue 30, item 4). */
let REDIS_URL = '';
const QUICK = process.env.PIPEMORPH_BENCH_QUICK === '1';
const ONLY = process.env.PIPEMORPH_BENCH_ONLY ?? '';
const RUN_SLEEP = ONLY === '' || ONLY === 'sleep' || ONLY === '4' || ONLY === '8';
const RUN_GPT = ONLY === '' || ONLY === 'torch' || ONLY === 'gpt';
const RUN_REMAP = ONLY === '' || ONLY === 'torch' || ONLY === 'remap';
const RUN_REBALANCE = ONLY === '' || ONLY === 'rebalance';

interface RealScenario {
  name: string;
  profile: PipelineProfile;
  /** The straggler, without its start: "const:2=30" or a dynamic spec (slow from the start). */
  delay: string;
  /** Iteration the const straggler starts for pipemorph (healthy before, so the detector learns). */
  from: number;
  iterations: number;
  deviceActivations: number[];
}

function caps(profile: PipelineProfile, fallback: number): number[] {
  return profile.memory ? deviceInflightCaps(toPipelineModel(profile)) : new Array(profile.stages).fill(fallback);
}

function realScenarios(): RealScenario[] {
  const u4 = uniform4();
  const m8 = megatron8();
  const it = (n: number) => (QUICK ? Math.ceil(n / 2) : n);
  const list: RealScenario[] = [
    { name: '4-stage, 30 ms on link 2-3', profile: u4, delay: 'const:2=30', from: 6, iterations: it(30), deviceActivations: caps(u4, 8) },
    { name: '4-stage, 60 ms on link 2-3', profile: u4, delay: 'const:2=60', from: 6, iterations: it(30), deviceActivations: caps(u4, 8) },
    { name: '8-stage, 60 ms on link 6-7', profile: m8, delay: 'const:6=60', from: 6, iterations: it(28), deviceActivations: caps(m8, 16) },
    { name: '8-stage, dynamic trace A', profile: m8, delay: 'dynamic:A:seed=7', from: 0, iterations: it(24), deviceActivations: caps(m8, 16) },
  ];
  return list.filter((s) => ONLY === '' || ONLY === 'sleep' || s.name.startsWith(`${ONLY}-stage`));
}

/** "const:2=30" from iteration `from` as a step spec; dynamic specs run from the start. */
function delayFrom(spec: string, from: number): string {
  if (!spec.startsWith('const:') || from === 0) return spec;
  return `step:${spec.slice('const:'.length).split(',').map((item) => `${from}@${item}`).join(',')}`;
}

/** The emulator's mean iteration time for a schedule under a delay spec (the daemon's engine). */
function modelMs(s: RealScenario, schedule: PublishedSchedule, spec: string, iterations = 8): number {
  const job = new EmulatedJob(`model-${Date.now()}`, s.profile, 1, parseDelaySpec(spec, s.profile.stages - 1), { ...DEFAULT_EMULATION, jitter: 0 });
  const plans = replicaPlans(schedule, 1, s.profile.stages, s.profile.microbatches);
  let total = 0;
  for (let i = 0; i < iterations; i++) total += job.runIteration(i, plans, new Array(s.profile.stages).fill(schedule.version)).iterationMs;
  return total / iterations;
}

async function startBenchDaemon(): Promise<INestApplication> {
  const config = loadConfig({ REDIS_URL });
  config.http.port = 0;
  config.http.host = '127.0.0.1';
  config.ingest.blockMs = 20;
  config.jobs.discoveryIntervalMs = 50;
  config.control.minReplanIntervalMs = 0;
  return (await startDaemon(config)).app;
}

async function waitForSchedule(redis: Redis, jobId: string): Promise<PublishedSchedule> {
  for (let tries = 0; tries < 600; tries++) {
    const raw = await redis.get(jobKeys(jobId).schedule);
    if (raw) return JSON.parse(raw) as PublishedSchedule;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no schedule for ${jobId}`);
}

interface PolicyRow {
  meanIterationMs: number;
  /** The table's figure: the median is robust to iterations slowed by other processes on a shared 2-core box. */
  medianIterationMs: number;
  modelMs: number;
}
interface ScenarioRow {
  name: string;
  stages: number;
  microbatches: number;
  compute: 'sleep';
  healthyMs: number;
  healthyMeanMs: number;
  healthyModelMs: number;
  policies: Record<'zb-static' | 'delegation-only' | 'pipemorph', PolicyRow>;
  /** The daemon's prediction published with pipemorph's last switch, and what the ranks measured after it. */
  predictedMs: number | null;
  switches: Array<{ version: number; iteration: number; predictedMs: number | null }>;
  /** pipemorph slowdown vs healthy, measured and in the model. */
  slowdown: number;
  modelSlowdown: number;
  mixedIterations: number;
}

async function runScenario(redis: Redis, s: RealScenario, index: number): Promise<ScenarioRow> {
  const jobId = `bench-real-${index}-${Date.now().toString(36)}`;
  const slowSpec = delayFrom(s.delay, s.from);
  // pipemorph first: its initial plan (v1) is the static baselines' schedule, its delegation theirs.
  const runPromise = runRealJob({ profile: s.profile, iterations: s.iterations, compute: 'sleep', delays: slowSpec, redisUrl: REDIS_URL, jobId, registration: realRegistration(jobId, s.profile, s.deviceActivations) });
  const initial = await waitForSchedule(redis, jobId);
  const live: RealJobResult = await runPromise;
  const last = JSON.parse((await redis.get(jobKeys(jobId).schedule)) as string) as PublishedSchedule;
  const versions = live.iterations.map((it) => it.versions[0]);
  const switches: ScenarioRow['switches'] = [];
  versions.forEach((v, i) => {
    if (i > 0 && v !== versions[i - 1]) switches.push({ version: v, iteration: i, predictedMs: v === last.version ? last.prediction?.newMs ?? null : null });
  });
  const after = switches.length ? switches[switches.length - 1].iteration + 1 : s.from + 2;
  const staticIterations = Math.max(8, Math.ceil(s.iterations / 2));
  const healthy = await runRealJob({ profile: s.profile, iterations: staticIterations, compute: 'sleep', delays: 'none', schedule: initial });
  const zb = await runRealJob({ profile: s.profile, iterations: staticIterations, compute: 'sleep', delays: s.delay, schedule: initial });
  const delegated: PublishedSchedule = { ...initial, delegation: last.delegation };
  const deleg = await runRealJob({ profile: s.profile, iterations: staticIterations, compute: 'sleep', delays: s.delay, schedule: delegated });
  const settle = Math.min(2, staticIterations - 1);
  const healthyMs = medianMs(healthy, settle);
  const healthyModelMs = modelMs(s, initial, 'none');
  const pipemorphMs = medianMs(live, after);
  const pipemorphModelMs = modelMs(s, last, s.delay);
  return {
    name: s.name,
    stages: s.profile.stages,
    microbatches: s.profile.microbatches,
    compute: 'sleep',
    healthyMs,
    healthyMeanMs: meanMs(healthy, settle),
    healthyModelMs,
    policies: {
      'zb-static': { meanIterationMs: meanMs(zb, settle), medianIterationMs: medianMs(zb, settle), modelMs: modelMs(s, initial, s.delay) },
      'delegation-only': { meanIterationMs: meanMs(deleg, settle), medianIterationMs: medianMs(deleg, settle), modelMs: modelMs(s, delegated, s.delay) },
      pipemorph: { meanIterationMs: meanMs(live, after), medianIterationMs: pipemorphMs, modelMs: pipemorphModelMs },
    },
    predictedMs: last.prediction?.newMs ?? null,
    switches,
    slowdown: pipemorphMs / healthyMs,
    modelSlowdown: pipemorphModelMs / healthyModelMs,
    mixedIterations: live.mixedIterations.length + healthy.mixedIterations.length + zb.mixedIterations.length + deleg.mixedIterations.length,
  };
}

function fmt(x: number | null, digits = 0): string {
  return x === null || !Number.isFinite(x) ? '-' : x.toFixed(digits);
}

/** The GPT of the rows whose ranks have a core each: ~100k parameters per stage (2 blocks of d_model 64). */
const GPT: GptShape = { dModel: 64, heads: 4, seq: 16, rows: 4, layers: 2, vocab: 64 };
/** Where 4 rank processes share the 2 cores: d_model 32 (~25k parameters per stage), a quarter of the compute. */
const GPT_SHARED: GptShape = { ...GPT, dModel: 32, heads: 2 };

/**
 * Real compute on this 2-core box. The daemon plans as if every stage had a device of its own; 4
 * single-threaded rank processes on 2 cores do not (a healthy pipeline keeps ~3 of them busy), so the
 * row where that holds is 2 stages x dp 1 (2 processes), 12 microbatches of the d_model-64 GPT: ops
 * of ~6 ms, a ~220 ms iteration, where 30 ms on the one link (GPU-direct sends one at a time) more
 * than doubles the static plan's iteration. The 4-stage x dp 1 row (the pipeline depth of the sleep
 * rows) and the dp 2 row (2 stages x dp 2, its delay on link 0-1 of both replicas: a delay spec names
 * a pipeline position) run 4 processes on the 2 cores, with the d_model-32 GPT to keep the contention
 * down. A 4-stage x dp 2 job (8 processes) was tried: 4x oversubscribed, iterations of ~1 s and the
 * daemon's predictions 20-35% off.
 */
function torchScenarios(): TorchScenario[] {
  const it = (n: number) => (QUICK ? Math.ceil(n / 2) : n);
  return [
    { name: 'GPT d64, 2-stage x dp 1, 30 ms on link 0-1', stages: 2, dp: 1, microbatches: 12, gpt: GPT, link: 0, delayMs: 30, from: 6, iterations: it(48) },
    { name: 'GPT d32, 4-stage x dp 1, 30 ms on link 2-3', stages: 4, dp: 1, microbatches: 8, gpt: GPT_SHARED, link: 2, delayMs: 30, from: 6, iterations: it(48) },
    { name: 'GPT d32, 2-stage x dp 2, 30 ms on link 0-1 of both replicas', stages: 2, dp: 2, microbatches: 12, gpt: GPT_SHARED, link: 0, delayMs: 30, from: 6, iterations: it(40) },
  ];
}

/** test/real-remap.e2e.test.ts's data-parallel straggler with the GPT: 2 racks, every message between them 30 ms slow. */
function remapScenario(): RemapScenario {
  return { name: 'GPT d32, 2-stage x dp 2, rings across a 30 ms rack uplink', stages: 2, dp: 2, microbatches: 4, gpt: GPT_SHARED, crossRackMs: 30, iterations: QUICK ? 20 : 40, gradientBytes: 3.5e9, repeats: QUICK ? 1 : 3, handoffs: ['stream', 'load'] };
}

interface RealResults {
  bench: 'real';
  compute: 'sleep';
  scenarios: ScenarioRow[];
  torch?: {
    machine: { cpus: number; loadAverageBefore: number[]; loadAverageAfter: number[] };
    scenarios: TorchRow[];
    remap: RemapRow | null;
  };
  /** The whole file's measurement: this run's when every part ran, else the previous one's (a lower bound on the file's age). */
  stamp?: ResultsStamp;
  /** Each part's own measurement (a part not run keeps its previous one). */
  stamps?: Partial<Record<'sleep' | 'gpt' | 'remap' | 'rebalance', ResultsStamp>>;
  rebalance?: RealRebalanceRow;
}

function previousResults(path: string): Partial<RealResults> {
  try {
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Partial<RealResults>) : {};
  } catch {
    return {};
  }
}

async function main(): Promise<void> {
  const resultsDir = join(__dirname, '..', '..', 'bench', 'results');
  const resultsPath = join(resultsDir, 'real.json');
  const previous = previousResults(resultsPath);
  const stamp = startStamp();
  const server = await startOwnRedis();
  REDIS_URL = server.url();
  const redis = new Redis(REDIS_URL);
  const app = await startBenchDaemon();
  const daemonUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const rows: ScenarioRow[] = [];
  const torchRows: TorchRow[] = [];
  let remap: RemapRow | null = null;
  let rebalance: RealRebalanceRow | undefined;
  const loadBefore = loadavg();
  try {
    const list = RUN_SLEEP ? realScenarios() : [];
    for (let i = 0; i < list.length; i++) {
      const row = await runScenario(redis, list[i], i);
      rows.push(row);
      const p = row.policies;
      console.log(`${row.name}: healthy ${fmt(row.healthyMs)} ms | zb-static ${fmt(p['zb-static'].medianIterationMs)} | delegation-only ${fmt(p['delegation-only'].medianIterationMs)} | pipemorph ${fmt(p.pipemorph.medianIterationMs)} (predicted ${fmt(row.predictedMs)}, model ${fmt(p.pipemorph.modelMs)}) | switches ${row.switches.map((s) => `v${s.version}@${s.iteration}`).join(' ')}`);
    }
    const rowFilter = process.env.PIPEMORPH_BENCH_ROWS ?? '';
    for (const s of RUN_GPT ? torchScenarios().filter((t) => t.name.includes(rowFilter)) : []) {
      const row = await runTorchScenario(redis, REDIS_URL, s, (line) => console.log(line), daemonUrl);
      torchRows.push(row);
      const p = row.policies;
      console.log(`${row.name}: healthy ${fmt(row.healthyMs)} ms | zb-static ${fmt(p['zb-static'].medianIterationMs)} | pipemorph ${fmt(p.pipemorph.medianIterationMs)} (predicted ${fmt(row.predictedMs)}, error ${fmt(row.predictionError === null ? null : 100 * row.predictionError, 1)}%, model ${fmt(p.pipemorph.modelMs)}) | switches ${row.switches.map((w) => `v${w.version}@${w.iteration} (${w.reason}, predicted ${fmt(w.predictedMs)}, measured ${fmt(w.measuredMs)})`).join(' ')} | load ${row.loadAverage.before.map((x) => x.toFixed(1)).join('/')} -> ${row.loadAverage.after.map((x) => x.toFixed(1)).join('/')}`);
    }
    if (RUN_REMAP) {
      remap = await runRemapScenario(redis, REDIS_URL, remapScenario(), (line) => console.log(line), daemonUrl);
      console.log(`${remap.name}: healthy ${fmt(remap.healthyMs)} ms | before ${fmt(remap.beforeMs)} ms | switch iteration ${fmt(remap.switchMs)} ms | after ${fmt(remap.afterMs)} ms | handoff cost ${fmt(remap.handoffCostMs)} ms (priced ${fmt(remap.pricedHandoffMs)}) | predicted ${fmt(remap.predictedBeforeMs)} -> ${fmt(remap.predictedAfterMs)} | re-mapped in ${remap.remapped} of ${remap.runs.length} runs, moved ${remap.moved.join(',')}`);
      for (const [h, v] of Object.entries(remap.byHandoff)) console.log(`  handoff ${h}: before ${fmt(v.beforeMs)} | switch ${fmt(v.switchMs)} | after ${fmt(v.afterMs)} | cost ${fmt(v.handoffCostMs)} ms | at k ${Object.entries(v.switchPhasesMs).map(([p, x]) => `${p} ${x}`).join(' ')} | prefetch build ${fmt(v.prefetchBuildMs, 1)} groups ${fmt(v.prefetchGroupsMs, 1)} lead +${fmt(v.leadExtraMs)} ms`);
    }
    if (RUN_REBALANCE) {
      rebalance = await runRealRebalanceScenario(realRebalanceScenario(QUICK), (line) => console.log(line), server.url());
      console.log(realRebalanceTable({ rebalance }));
    }
  } finally {
    await app.close();
    redis.disconnect();
    await server.stop();
  }
  const sleepRows = RUN_SLEEP ? rows : previous.scenarios ?? [];
  console.log('');
  console.log('Median iteration time of the measured iterations, ms (slowdown vs healthy); model: the emulator for the same schedule and delay.');
  console.log('| scenario | healthy | zb-static | delegation-only | pipemorph | pipemorph slowdown, measured (model) | predicted at last switch | measured after it |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of sleepRows) {
    const p = r.policies;
    const x = (ms: number) => `${fmt(ms)} (${fmt(ms / r.healthyMs, 2)}x)`;
    console.log(`| ${r.name} | ${fmt(r.healthyMs)} | ${x(p['zb-static'].medianIterationMs)} | ${x(p['delegation-only'].medianIterationMs)} | ${x(p.pipemorph.medianIterationMs)} | ${fmt(r.slowdown, 2)}x (${fmt(r.modelSlowdown, 2)}x) | ${fmt(r.predictedMs)} | ${fmt(p.pipemorph.medianIterationMs)} |`);
  }
  const torch = RUN_GPT || RUN_REMAP
    ? {
        machine: { cpus: cpus().length, loadAverageBefore: loadBefore, loadAverageAfter: loadavg() },
        scenarios: RUN_GPT ? torchRows : previous.torch?.scenarios ?? [],
        remap: RUN_REMAP ? remap : previous.torch?.remap ?? null,
      }
    : previous.torch;
  const rebalanceRow = RUN_REBALANCE ? rebalance : previous.rebalance;
  const now = stamp();
  const ran = { sleep: RUN_SLEEP, gpt: RUN_GPT, remap: RUN_REMAP, rebalance: RUN_REBALANCE };
  const stamps = Object.fromEntries(
    Object.entries(ran).flatMap(([part, run]) => (run ? [[part, now]] : previous.stamps?.[part as keyof typeof ran] ? [[part, previous.stamps[part as keyof typeof ran]]] : [])),
  ) as RealResults['stamps'];
  const wholeStamp = Object.values(ran).every(Boolean) ? now : previous.stamp;
  const results: RealResults = { bench: 'real', compute: 'sleep', scenarios: sleepRows, ...(torch ? { torch } : {}), ...(rebalanceRow ? { rebalance: rebalanceRow } : {}), ...(wholeStamp ? { stamp: wholeStamp } : {}), stamps };
  const json = JSON.stringify(results);
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(resultsPath, `${json}\n`);
  console.log(json);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
