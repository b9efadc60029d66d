/**
 * bench:real's rows with real compute (imported by bench/real.bench.ts): real rank processes
 * training the tiny GPT of clients/python/pipemorph/gpt.py through the integration API
 * (`pipemorph.launch --model gpt --compute torch`), gloo on 127.0.0.1, the daemon and Redis in the
 * loop for pipemorph.
 *
 * - GPT rows: healthy, zb-static (the daemon's initial plan, no adaptation) and pipemorph (the ranks
 *   follow the daemon, which detects the injected link delay and re-plans), every iteration time
 *   measured by the ranks in wall-clock time. The job registers the op times the ranks themselves
 *   measured in a short calibration run (the medians of their reports), so the daemon's first plan
 *   and the emulator's `model` column start from real numbers; the daemon then learns from reports.
 *   The daemon's prediction published with each switch is set against what the ranks measured after it.
 * - Re-map row: the data-parallel straggler of test/real-remap.e2e.test.ts (a (2 DP, 2 PP) job, one
 *   replica per rack, every message between the racks slow: both rings cross the slow uplink). The
 *   daemon re-maps the rings into the racks; the row has the iteration time before the re-map, of
 *   the switch iteration (checkpoint write, barrier, load, communicators re-formed) and after it, and
 *   the handoff cost: the switch iteration minus a steady one of the new layout.
 */
import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { PipelineProfile } from '../src/core/pipeline/pipeline-profile.type';
import { parseDelaySpec } from '../src/emulator/delay/delay-spec';
import { DEFAULT_EMULATION, EmulatedJob } from '../src/emulator/emulated-job';
import { replicaPlans } from '../src/emulator/replica-plans';
import { PublishedSchedule, Registration } from '../src/protocol/protocol-v1.type';
import { jobKeys } from '../src/protocol/redis-keys';
import { jobFiles, PYTHON } from '../src/real/real-job';

/** clients/python of the repository above this file (dist/bench when built), else of the working directory. */
function pythonClient(): string {
  for (const start of [__dirname, process.cwd()]) {
    for (let dir = start; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'clients', 'python', 'pipemorph', 'launch.py'))) return join(dir, 'clients', 'python');
  }
  throw new Error('clients/python not found');
}

/** The GPT every torch row trains (pipemorph/gpt.py; launcher flags --hidden --heads --seq --rows --layers --vocab). */
export interface GptShape {
  dModel: number;
  heads: number;
  seq: number;
  rows: number;
  /** Transformer blocks per stage. */
  layers: number;
  vocab: number;
}

interface RankRecord { iteration: number; version: number; ms: number; topology?: number; dp?: number; pp?: number; loss?: number }
/** A rank's re-map at k, ms by phase (pipemorph/runtime.py remap_log): saveMs barrierMs buildMs loadMs (handoff "load"), streamMs buildMs loadMs ("stream"), groupsMs sendersMs. */
type RemapPhases = Record<string, number | boolean | string>;
/** What a rank prepared during the lead iterations (runtime.py prefetch_log): its new stage built, the new rings' groups created. */
interface Prefetch { iteration: number; topology: number; what: 'build' | 'groups'; ms: number }
interface LaunchResult {
  ranks: Array<{ rank: number; dp: number; pp: number; iterations: RankRecord[]; remaps?: RemapPhases[]; prefetches?: Prefetch[] }>;
  iterations: Array<{ iteration: number; versions: number[]; topologies: number[]; ms: number }>;
  loss: Array<number | null>;
  mixedIterations: number[];
}

interface LaunchOptions {
  stages: number;
  dp: number;
  microbatches: number;
  iterations: number;
  gpt: GptShape;
  delays: string;
  schedule?: PublishedSchedule;
  redisUrl?: string;
  jobId?: string;
  registration?: Registration;
  momentum?: number;
  timeoutS?: number;
  /** How a re-map hands stage state over (launcher --handoff): stream (prefetch + point to point, the default) or load (checkpoint file + barrier at k). */
  handoff?: Handoff;
}

export type Handoff = 'stream' | 'load';

/** One job of real rank processes through `python3 -m pipemorph.launch --model gpt --compute torch`. */
function launch(o: LaunchOptions): Promise<LaunchResult> {
  const { dir, file } = jobFiles('pipemorph-real-torch-');
  const g = o.gpt;
  const args = ['-m', 'pipemorph.launch', '--stages', `${o.stages}`, '--dp', `${o.dp}`, '--microbatches', `${o.microbatches}`,
    '--iterations', `${o.iterations}`, '--compute', 'torch', '--model', 'gpt', '--hidden', `${g.dModel}`, '--heads', `${g.heads}`,
    '--seq', `${g.seq}`, '--rows', `${g.rows}`, '--layers', `${g.layers}`, '--vocab', `${g.vocab}`, '--lr', '0.1',
    '--momentum', `${o.momentum ?? 0.9}`, '--delays', file('delays.txt', o.delays), '--timeout-s', `${o.timeoutS ?? 180}`,
    '--checkpoint-dir', join(dir, 'checkpoints'), '--out', join(dir, 'result.json'), '--handoff', o.handoff ?? 'stream'];
  if (o.schedule) args.push('--schedule', file('schedule.json', o.schedule));
  else {
    if (!o.redisUrl || !o.jobId) throw new Error('launch: give a schedule, or redisUrl and jobId');
    args.push('--redis', o.redisUrl, '--job', o.jobId);
    if (o.registration) args.push('--register', file('registration.json', o.registration));
  }
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, args, { cwd: pythonClient(), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`pipemorph.launch exited ${code}: ${stderr.trim().split('\n').pop() ?? ''}`));
      resolve(JSON.parse(readFileSync(join(dir, 'result.json'), 'utf8')) as LaunchResult);
    });
  });
}

/** Parameters of GPT stage `pp` (pipemorph/gpt.py): 12 d^2 + 13 d per block, embeddings on the first stage, final LN and head on the last. */
export function gptStageParams(g: GptShape, pp: number, stages: number): number {
  const d = g.dModel;
  return g.layers * (12 * d * d + 13 * d) + (pp === 0 ? (g.vocab + g.seq) * d : 0) + (pp === stages - 1 ? 2 * d + d * g.vocab : 0);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const mean = (xs: number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;
const window = (r: LaunchResult, from: number, to = r.iterations.length): number[] => r.iterations.slice(from, to).map((it) => it.ms);

/** Registration of an S x dp GPT job: one node per rank, rack per replica when `racks`. */
function registration(jobId: string, stages: number, dp: number, microbatches: number, op: { fMs: number[]; bMs: number[]; wMs: number[] },
  extra: Partial<Registration> = {}, rack?: (rank: number) => string): Registration {
  const n = stages * dp;
  return {
    type: 'register', protocol: 1, jobId, stages, microbatches, dp, tp: 1,
    ranks: Array.from({ length: n }, (_, r) => ({ rank: r, dp: Math.floor(r / stages), pp: r % stages, tp: 0, node: `real-${r}`, ...(rack ? { locality: rack(r) } : {}) })),
    // Activations of this GPT are kilobytes; the memory budget lets the planner defer every W.
    memory: { deviceBytes: new Array(stages).fill(4e9 * microbatches), activationBytes: new Array(stages).fill(1e9), hostBytes: 64e9 },
    computeMs: op,
    network: { latencyMs: 0.2, nominalGBps: 1000 },
    ...extra,
  };
}

/** The job's committed schedule, once the daemon has published it (up to 2 minutes). */
export async function waitForSchedule(redis: Redis, jobId: string): Promise<PublishedSchedule> {
  for (let tries = 0; tries < 2400; tries++) {
    const raw = await redis.get(jobKeys(jobId).schedule);
    if (raw) return JSON.parse(raw) as PublishedSchedule;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no schedule for ${jobId}`);
}

/** Every schedule version the daemon prepared or committed for a job while `running` is pending (content and prediction). */
export async function watchSchedules<T>(redis: Redis, jobId: string, running: Promise<T>): Promise<{ result: T; versions: Map<number, PublishedSchedule> }> {
  const keys = jobKeys(jobId);
  const versions = new Map<number, PublishedSchedule>();
  let done = false;
  const poll = (async () => {
    while (!done) {
      for (const raw of await redis.mget(keys.schedule, keys.pending)) {
        if (!raw) continue;
        const s = JSON.parse(raw) as PublishedSchedule;
        if (!versions.has(s.version)) versions.set(s.version, s);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  try {
    const result = await running;
    return { result, versions };
  } finally {
    done = true;
    await poll;
  }
}

/**
 * The op times the ranks measured: a healthy run following the daemon, the median over ranks'
 * reports (iterations from 2 on) of each stage's F, B and W. These are the times of the ranks
 * sharing the machine's cores with each other, as they will in the measured runs.
 */
async function calibrate(redis: Redis, redisUrl: string, stages: number, dp: number, microbatches: number, gpt: GptShape, iterations: number): Promise<{ fMs: number[]; bMs: number[]; wMs: number[] }> {
  const jobId = `bench-real-torch-cal-${Date.now().toString(36)}`;
  const guess = { fMs: new Array(stages).fill(10), bMs: new Array(stages).fill(10), wMs: new Array(stages).fill(10) };
  await launch({ stages, dp, microbatches, iterations, gpt, delays: 'none', redisUrl, jobId, registration: registration(jobId, stages, dp, microbatches, guess) });
  const entries = (await redis.xrange(jobKeys(jobId).reports, '-', '+')) as Array<[string, string[]]>;
  const per: Array<{ f: number[]; b: number[]; w: number[] }> = Array.from({ length: stages }, () => ({ f: [], b: [], w: [] }));
  for (const [, fields] of entries) {
    const m = JSON.parse(fields[1]) as { type: string; rank: number; iteration: number; computeMs?: { f: number; b: number; w: number } };
    if (m.type !== 'report' || !m.computeMs || m.iteration < 2) continue;
    const pp = m.rank % stages;
    per[pp].f.push(m.computeMs.f);
    per[pp].b.push(m.computeMs.b);
    per[pp].w.push(m.computeMs.w);
  }
  const r1 = (x: number) => Math.round(x * 10) / 10;
  return { fMs: per.map((p) => r1(median(p.f))), bMs: per.map((p) => r1(median(p.b))), wMs: per.map((p) => r1(median(p.w))) };
}

/** The emulator's mean iteration time for a schedule under a delay spec (the engine the daemon plans with). */
function modelMs(profile: PipelineProfile, schedule: PublishedSchedule, spec: string, iterations = 8): number {
  const job = new EmulatedJob(`model-${Date.now()}`, profile, 1, parseDelaySpec(spec, profile.stages - 1), { ...DEFAULT_EMULATION, jitter: 0 });
  const plans = replicaPlans(schedule, 1, profile.stages, profile.microbatches);
  let total = 0;
  for (let i = 0; i < iterations; i++) total += job.runIteration(i, plans, new Array(profile.stages).fill(schedule.version)).iterationMs;
  return total / iterations;
}

export interface TorchScenario {
  name: string;
  stages: number;
  dp: number;
  microbatches: number;
  gpt: GptShape;
  /** Pipeline link (upstream stage) slowed and by how much, from iteration `from` of the pipemorph run (healthy before). */
  link: number;
  delayMs: number;
  from: number;
  iterations: number;
}

export interface TorchRow {
  name: string;
  stages: number;
  dp: number;
  microbatches: number;
  compute: 'torch';
  model: 'gpt';
  gpt: GptShape;
  delay: string;
  /** The op times the ranks measured in the calibration run (registered with the job; the model column's profile). */
  measuredOpMs: { fMs: number[]; bMs: number[]; wMs: number[] };
  healthyMs: number;
  healthyModelMs: number;
  policies: Record<'zb-static' | 'pipemorph', { medianIterationMs: number; meanIterationMs: number; iterations: number; modelMs: number }>;
  /** Versions the ranks switched to, the iteration they ran it from, the daemon's prediction published with it and the median the ranks measured while it was in force. */
  switches: Array<{ version: number; iteration: number; predictedMs: number | null; measuredMs: number | null; reason: string | null }>;
  /** The last switch's prediction against the ranks' median after it; error = (predicted - measured) / measured. */
  predictedMs: number | null;
  predictionError: number | null;
  speedupVsZbStatic: number;
  lossFirst: number | null;
  lossLast: number | null;
  mixedIterations: number;
  loadAverage: { before: number[]; after: number[] };
}

/** const delay on `link` from iteration `from` (step spec), or from the start. */
const delaySpec = (s: TorchScenario, from: number): string => (from > 0 ? `step:${from}@${s.link}=${s.delayMs}` : `const:${s.link}=${s.delayMs}`);

/** The daemon's decision records of a job (GET /jobs/:id/decisions); printed with PIPEMORPH_BENCH_DEBUG=1. */
async function decisionsOf(daemonUrl: string | undefined, jobId: string, log: (line: string) => void): Promise<Array<{ kind: string; verdict: string; cost: { costMs: number } | null; scheduleVersion: number | null }>> {
  if (!daemonUrl) return [];
  try {
    const body = (await (await fetch(`${daemonUrl}/jobs/${jobId}/decisions`)).json()) as { decisions?: Array<{ kind: string; verdict: string; cost: { costMs: number } | null; scheduleVersion: number | null }> };
    if (process.env.PIPEMORPH_BENCH_DEBUG === '1') log(`  decisions of ${jobId}: ${JSON.stringify(body).slice(0, 6000)}`);
    return body.decisions ?? [];
  } catch (error) {
    log(`  decisions of ${jobId}: ${String(error)}`);
    return [];
  }
}

export async function runTorchScenario(redis: Redis, redisUrl: string, s: TorchScenario, log: (line: string) => void, daemonUrl?: string): Promise<TorchRow> {
  const before = loadavg();
  const op = await calibrate(redis, redisUrl, s.stages, s.dp, s.microbatches, s.gpt, 8);
  log(`  ${s.name}: measured op times F ${op.fMs.join('/')} B ${op.bMs.join('/')} W ${op.wMs.join('/')} ms`);
  const profile: PipelineProfile = { stages: s.stages, microbatches: s.microbatches, ...op, linkMs: new Array(s.stages - 1).fill(0.2) };
  const jobId = `bench-real-torch-${Date.now().toString(36)}`;
  const spec = delaySpec(s, s.from);
  // With dp > 1 the ranks all-reduce each stage's float32 gradients: registered, the daemon prices the ring too.
  const dataParallel = s.dp > 1 ? { dataParallel: { gradientBytes: Array.from({ length: s.stages }, (_, pp) => 4 * gptStageParams(s.gpt, pp, s.stages)) } } : {};
  const live = launch({ stages: s.stages, dp: s.dp, microbatches: s.microbatches, iterations: s.iterations, gpt: s.gpt, delays: spec, redisUrl, jobId, registration: registration(jobId, s.stages, s.dp, s.microbatches, op, dataParallel) });
  const initial = await waitForSchedule(redis, jobId);
  if (process.env.PIPEMORPH_BENCH_DEBUG === '1') log(`  initial schedule: ${JSON.stringify({ pipelines: initial.pipelines, delegation: initial.delegation })}`);
  const { result: run, versions } = await watchSchedules(redis, jobId, live);
  await decisionsOf(daemonUrl, jobId, log);
  const ran = run.iterations.map((it) => it.versions[0]);
  const starts: Array<{ version: number; iteration: number }> = [];
  ran.forEach((v, i) => {
    if (i > 0 && v !== ran[i - 1]) starts.push({ version: v, iteration: i });
  });
  const switches = starts.map((w, k) => {
    const end = k + 1 < starts.length ? starts[k + 1].iteration : run.iterations.length;
    const sched = versions.get(w.version);
    // The switch iteration itself and the one after it settle; the rest is the schedule's steady time.
    const steady = window(run, Math.min(w.iteration + 1, end - 1), end);
    return { version: w.version, iteration: w.iteration, predictedMs: sched?.prediction?.newMs ?? null, measuredMs: steady.length ? median(steady) : null, reason: sched?.reason?.kind ?? null };
  });
  const lastStart = starts.length ? starts[starts.length - 1].iteration : s.from + 2;
  const afterLast = window(run, lastStart + 1);
  const last = versions.get(ran[ran.length - 1]) ?? initial;
  const staticIterations = Math.max(10, Math.ceil(s.iterations / 2));
  const healthy = await launch({ stages: s.stages, dp: s.dp, microbatches: s.microbatches, iterations: staticIterations, gpt: s.gpt, delays: 'none', schedule: initial });
  const zb = await launch({ stages: s.stages, dp: s.dp, microbatches: s.microbatches, iterations: staticIterations, gpt: s.gpt, delays: delaySpec(s, 0), schedule: initial });
  const settle = 2;
  const healthyMs = median(window(healthy, settle));
  const zbMs = median(window(zb, settle));
  const pipemorphMs = median(afterLast);
  const predictedMs = starts.length ? last.prediction?.newMs ?? null : null;
  const losses = run.loss.filter((x): x is number => x !== null);
  return {
    name: s.name,
    stages: s.stages,
    dp: s.dp,
    microbatches: s.microbatches,
    compute: 'torch',
    model: 'gpt',
    gpt: s.gpt,
    delay: `${s.delayMs} ms on link ${s.link}-${s.link + 1}${s.dp > 1 ? ' of every replica' : ''}`,
    measuredOpMs: op,
    healthyMs,
    healthyModelMs: modelMs(profile, initial, 'none'),
    policies: {
      'zb-static': { medianIterationMs: zbMs, meanIterationMs: mean(window(zb, settle)), iterations: staticIterations - settle, modelMs: modelMs(profile, initial, delaySpec(s, 0)) },
      pipemorph: { medianIterationMs: pipemorphMs, meanIterationMs: mean(afterLast), iterations: afterLast.length, modelMs: modelMs(profile, last, delaySpec(s, 0)) },
    },
    switches,
    predictedMs,
    predictionError: predictedMs === null ? null : (predictedMs - pipemorphMs) / pipemorphMs,
    speedupVsZbStatic: zbMs / pipemorphMs,
    lossFirst: losses[0] ?? null,
    lossLast: losses[losses.length - 1] ?? null,
    mixedIterations: run.mixedIterations.length + healthy.mixedIterations.length + zb.mixedIterations.length,
    loadAverage: { before, after: loadavg() },
  };
}

export interface RemapScenario {
  name: string;
  stages: number;
  dp: number;
  microbatches: number;
  gpt: GptShape;
  /** Extra ms on every message between the racks (replica d on rack d). */
  crossRackMs: number;
  iterations: number;
  /** What the registration declares each rank all-reduces per iteration (as test/real-remap.e2e.test.ts: a real model's size). */
  gradientBytes: number;
  /** Runs of the same job per handoff (the switch iteration is one sample per run). */
  repeats: number;
  /** The re-map handoffs measured, each in `repeats` runs; the row's top-level numbers are the first's. */
  handoffs: Handoff[];
}

/** One run of the re-map scenario, as the ranks measured it. */
export interface RemapRun {
  handoff: Handoff;
  /** The iteration every rank ran the new layout from and the schedule version that brought it. */
  switchIteration: number | null;
  version: number | null;
  moved: number[];
  /** Median of iterations 1 .. switch - 1 (the old layout, rings across the racks). */
  beforeMs: number;
  /** The switch iteration: checkpoint write, barrier, load, groups re-formed, then its ops. */
  switchMs: number | null;
  /** Median from the second iteration after the switch on (the new layout). */
  afterMs: number | null;
  /** switchMs - afterMs: what the handoff cost the switch iteration over a steady one. */
  handoffCostMs: number | null;
  /** The re-map schedule's prediction.previousMs and newMs (the old and new layout under current conditions). */
  predictedBeforeMs: number | null;
  predictedAfterMs: number | null;
  /** The cost the daemon's cost gate put on the re-map (its decision record's cost.costMs). */
  pricedMs: number | null;
  iterationMs: number[];
  /** The schedule version the ranks ran, per iteration. */
  versions: number[];
  mixedIterations: number;
  /** The re-map at k by phase, the most any rank spent in each (ms); ms: the slowest rank's whole re-map. */
  switchPhasesMs: Record<string, number>;
  /** Lead-iteration work (handoff "stream"): the most any rank spent building its new stage, creating the new groups (ms), and the iterations they ran in. */
  prefetch: { buildMs: number | null; groupsMs: number | null; iterations: number[] };
  /** The iterations that did lead-iteration work, minus beforeMs: what the prefetch cost them (ms each). */
  leadExtraMs: number[];
}

/** One handoff's medians over its runs. */
export interface RemapHandoffSummary {
  runs: number;
  remapped: number;
  beforeMs: number;
  switchMs: number | null;
  afterMs: number | null;
  handoffCostMs: number | null;
  /** Median over the runs of each phase of switchPhasesMs. */
  switchPhasesMs: Record<string, number>;
  prefetchBuildMs: number | null;
  prefetchGroupsMs: number | null;
  leadExtraMs: number | null;
}

export interface RemapRow {
  name: string;
  stages: number;
  dp: number;
  microbatches: number;
  compute: 'torch';
  model: 'gpt';
  gpt: GptShape;
  delay: string;
  gradientBytesDeclared: number;
  measuredOpMs: { fMs: number[]; bMs: number[]; wMs: number[] };
  /** The same job with no delay (the daemon's initial plan, registration layout): the yardstick. */
  healthyMs: number;
  /** Medians over the runs; the switch iteration, version and moved ranks of the first run that re-mapped. */
  runs: RemapRun[];
  remapped: number;
  switchIteration: number | null;
  moved: number[];
  beforeMs: number;
  switchMs: number | null;
  afterMs: number | null;
  handoffCostMs: number | null;
  predictedBeforeMs: number | null;
  predictedAfterMs: number | null;
  /** (predicted after - measured after) / measured after, of the medians. */
  predictionError: number | null;
  pricedHandoffMs: number | null;
  mixedIterations: number;
  loadAverage: { before: number[]; after: number[] };
  /** The same measurement per handoff (stream: prefetch during the lead iterations + point-to-point state at k; load: checkpoint file + barrier + groups at k). */
  byHandoff: Partial<Record<Handoff, RemapHandoffSummary>>;
}

/** Most any rank spent in each phase of its re-map at k. */
function switchPhases(run: LaunchResult): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of run.ranks) {
    for (const [phase, v] of Object.entries(r.remaps?.[0] ?? {})) {
      if ((phase.endsWith('Ms') || phase === 'ms') && typeof v === 'number') out[phase] = Math.max(out[phase] ?? 0, v);
    }
  }
  return out;
}

function prefetchOf(run: LaunchResult): RemapRun['prefetch'] {
  const all = run.ranks.flatMap((r) => r.prefetches ?? []);
  const most = (what: Prefetch['what']) => {
    const ms = all.filter((p) => p.what === what).map((p) => p.ms);
    return ms.length ? Math.max(...ms) : null;
  };
  return { buildMs: most('build'), groupsMs: most('groups'), iterations: [...new Set(all.map((p) => p.iteration))].sort((a, b) => a - b) };
}

function summarizeHandoff(runs: RemapRun[]): RemapHandoffSummary {
  const phases = [...new Set(runs.flatMap((r) => Object.keys(r.switchPhasesMs)))];
  return {
    runs: runs.length,
    remapped: runs.filter((r) => r.switchIteration !== null).length,
    beforeMs: median(runs.map((r) => r.beforeMs)),
    switchMs: medianOrNull(runs.map((r) => r.switchMs)),
    afterMs: medianOrNull(runs.map((r) => r.afterMs)),
    handoffCostMs: medianOrNull(runs.map((r) => r.handoffCostMs)),
    switchPhasesMs: Object.fromEntries(phases.map((p) => [p, Math.round(10 * (medianOrNull(runs.map((r) => r.switchPhasesMs[p] ?? null)) ?? 0)) / 10])),
    prefetchBuildMs: medianOrNull(runs.map((r) => r.prefetch.buildMs)),
    prefetchGroupsMs: medianOrNull(runs.map((r) => r.prefetch.groupsMs)),
    leadExtraMs: medianOrNull(runs.flatMap((r) => r.leadExtraMs)),
  };
}

const medianOrNull = (xs: Array<number | null>): number | null => {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? median(v) : null;
};

export async function runRemapScenario(redis: Redis, redisUrl: string, s: RemapScenario, log: (line: string) => void, daemonUrl?: string): Promise<RemapRow> {
  const before = loadavg();
  const rack = (rank: number) => `rack-${Math.floor(rank / s.stages)}`;
  const n = s.stages * s.dp;
  const pairs: string[] = [];
  for (let a = 0; a < n; a++) for (let b = a + 1; b < n; b++) if (rack(a) !== rack(b)) pairs.push(`${a}-${b}=${s.crossRackMs}`);
  const op = await calibrate(redis, redisUrl, s.stages, s.dp, s.microbatches, s.gpt, 8);
  log(`  ${s.name}: measured op times F ${op.fMs.join('/')} B ${op.bMs.join('/')} W ${op.wMs.join('/')} ms`);
  const runs: RemapRun[] = [];
  let initial: PublishedSchedule | null = null;
  // Alternating the handoffs run by run, so a change of the machine's load hits both alike.
  const plan = Array.from({ length: s.repeats }, () => s.handoffs).flat();
  for (let k = 0; k < plan.length; k++) {
    const handoff = plan[k];
    const jobId = `bench-real-remap-${k}-${Date.now().toString(36)}`;
    const reg = registration(jobId, s.stages, s.dp, s.microbatches, op, { dataParallel: { gradientBytes: new Array(s.stages).fill(s.gradientBytes) } }, rack);
    const live = launch({ stages: s.stages, dp: s.dp, microbatches: s.microbatches, iterations: s.iterations, gpt: s.gpt, delays: `pair:${pairs.join(',')}`, redisUrl, jobId, registration: reg, handoff });
    initial = initial ?? (await waitForSchedule(redis, jobId));
    const { result: run, versions } = await watchSchedules(redis, jobId, live);
    const decisions = await decisionsOf(daemonUrl, jobId, log);
    const at = run.iterations.findIndex((it) => it.topologies[0] > 0);
    const ms = run.iterations.map((it) => it.ms);
    const remap = at > 0 ? versions.get(run.iterations[at].versions[0]) ?? null : null;
    const after = at > 0 ? ms.slice(at + 2) : [];
    const afterMs = after.length ? median(after) : null;
    const switchMs = at > 0 ? ms[at] : null;
    const beforeMs = median(ms.slice(1, at > 0 ? at : ms.length));
    const prefetch = prefetchOf(run);
    const r: RemapRun = {
      handoff,
      switchIteration: at > 0 ? at : null,
      version: remap?.version ?? null,
      moved: remap?.topology?.moved ?? [],
      beforeMs,
      switchMs,
      afterMs,
      handoffCostMs: switchMs !== null && afterMs !== null ? switchMs - afterMs : null,
      predictedBeforeMs: remap?.prediction?.previousMs ?? null,
      predictedAfterMs: remap?.prediction?.newMs ?? null,
      pricedMs: decisions.find((d) => d.kind === 'remap' && d.verdict === 'taken' && d.scheduleVersion === (remap?.version ?? -1))?.cost?.costMs ?? null,
      iterationMs: ms.map((x) => Math.round(x * 10) / 10),
      versions: run.iterations.map((it) => it.versions[0]),
      mixedIterations: run.mixedIterations.length,
      switchPhasesMs: switchPhases(run),
      prefetch,
      leadExtraMs: prefetch.iterations.filter((i) => at < 0 || i < at).map((i) => Math.round(10 * (ms[i] - beforeMs)) / 10),
    };
    runs.push(r);
    log(`  run ${k + 1} (${handoff}): phases at k ${Object.entries(r.switchPhasesMs).map(([p, v]) => `${p} ${v.toFixed(1)}`).join(' ')} | prefetch build ${r.prefetch.buildMs?.toFixed(1) ?? '-'} groups ${r.prefetch.groupsMs?.toFixed(1) ?? '-'} ms at ${r.prefetch.iterations.join(',')} (lead iterations +${r.leadExtraMs.join('/')} ms)`);
    log(`  run ${k + 1} (${handoff}): before ${r.beforeMs.toFixed(0)} ms | switch iteration ${r.switchIteration ?? '-'} ${r.switchMs?.toFixed(0) ?? '-'} ms | after ${r.afterMs?.toFixed(0) ?? '-'} ms | handoff cost ${r.handoffCostMs?.toFixed(0) ?? '-'} ms | moved ${r.moved.join(',')} | ms ${r.iterationMs.map((x, i) => `${x.toFixed(0)}(v${r.versions[i]})`).join(' ')}`);
  }
  const byHandoff: Partial<Record<Handoff, RemapHandoffSummary>> = {};
  for (const h of s.handoffs) byHandoff[h] = summarizeHandoff(runs.filter((r) => r.handoff === h));
  const main = runs.filter((r) => r.handoff === s.handoffs[0]);
  const healthy = await launch({ stages: s.stages, dp: s.dp, microbatches: s.microbatches, iterations: 16, gpt: s.gpt, delays: 'none', schedule: initial! });
  const first = main.find((r) => r.switchIteration !== null);
  const afterMs = medianOrNull(main.map((r) => r.afterMs));
  const predictedAfterMs = medianOrNull(main.map((r) => r.predictedAfterMs));
  return {
    name: s.name,
    stages: s.stages,
    dp: s.dp,
    microbatches: s.microbatches,
    compute: 'torch',
    model: 'gpt',
    gpt: s.gpt,
    delay: `${s.crossRackMs} ms on every message between the racks (replica d on rack d)`,
    gradientBytesDeclared: s.gradientBytes,
    measuredOpMs: op,
    healthyMs: median(window(healthy, 2)),
    runs,
    remapped: runs.filter((r) => r.switchIteration !== null).length,
    switchIteration: first?.switchIteration ?? null,
    moved: first?.moved ?? [],
    beforeMs: median(main.map((r) => r.beforeMs)),
    switchMs: medianOrNull(main.map((r) => r.switchMs)),
    afterMs,
    handoffCostMs: medianOrNull(main.map((r) => r.handoffCostMs)),
    predictedBeforeMs: medianOrNull(main.map((r) => r.predictedBeforeMs)),
    predictedAfterMs,
    predictionError: predictedAfterMs !== null && afterMs !== null ? (predictedAfterMs - afterMs) / afterMs : null,
    pricedHandoffMs: medianOrNull(main.map((r) => r.pricedMs)),
    mixedIterations: runs.reduce((a, r) => a + r.mixedIterations, 0) + healthy.mixedIterations.length,
    loadAverage: { before, after: loadavg() },
    byHandoff,
  };
}
