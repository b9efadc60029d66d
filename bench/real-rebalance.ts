/**
 * bench:real's re-balancing row (issue 24, item 4, imported by bench/real.bench.ts with
 * PIPEMORPH_BENCH_ONLY=rebalance): a compute straggler with real ranks. The tiny GPT of
 * clients/python/pipemorph/gpt.py with movable blocks (`pipemorph.launch --model gpt --split ...`)
 * on real rank processes, gloo on 127.0.0.1; from iteration `slowFrom` one rank's ops are held
 * `slowFactor` times their compute time (`--compute-slow RANK=FACTOR@FROM`: the rank sleeps for the
 * extra, so it emulates a slower device without taking a core from the other rank).
 *
 * Policies, each a separate run of the same job (same seed, data and slowdown):
 * - healthy: the daemon's initial schedule, static, no slowdown (the yardstick's base);
 * - no-adaptation: the same static schedule with the slowdown (the ranks never hear from a daemon);
 * - replan-only: the ranks follow a daemon with `rebalance.enabled=false` (it may still re-plan the
 *   schedule for the uneven op times, but never moves layers);
 * - pipemorph: the ranks follow a daemon as shipped (re-balancing on), which moves blocks live;
 * - best-static: the static schedule with the slowdown on each candidate split (the initial one, which
 *   no-adaptation measures, and `staticSplits`), blocks placed so from the start: per round the fastest
 *   of them, the best split measured on the same ranks. pipemorph's after is judged against it, not
 *   against a healthy run scaled by a model of the slowdown (a yardstick the job once beat).
 * The daemons run against the Redis the caller gives (bench:real starts a private redis-server), one
 * daemon per policy, started and closed here. The job registers the op times the ranks measured in a calibration run (per stage,
 * divided evenly over the stage's blocks: embeddings and head are folded into their stage's blocks).
 *
 * Windows, as bench:e2e's rebalance row (bench/e2e.bench.ts) but with medians (robust to iterations
 * slowed by other processes on a 2-core box): before = iterations WARMUP .. slowFrom-1; during = the
 * onset to pipemorph's move iteration (inclusive, the same iterations for every policy); after = the
 * last AFTER iterations (after every switch). The yardstick is bench:e2e's: the healthy job scaled to
 * the remaining compute, healthy x S / (S - 1 + 1 / factor), kept beside the judgement for reference.
 * Rounds (PIPEMORPH_REBALANCE_ROUNDS, default 7): every figure is reported as the median and the
 * interquartile range over the rounds, and the goal (pipemorph within 1.05x of the best static
 * split) is met only when the upper quartile of the rounds' ratios is.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/daemon/config/load-config';
import { startDaemon } from '../src/daemon/start-daemon.util';
import { PublishedSchedule, Registration } from '../src/protocol/protocol-v1.type';
import { jobKeys } from '../src/protocol/redis-keys';
import { jobFiles, PYTHON, PYTHON_CLIENT } from '../src/real/real-job';
import { waitForSchedule, watchSchedules } from './real-torch';

const WARMUP = 3;
/** pipemorph's after over the best static split's: the goal, judged on the upper quartile over the rounds. */
export const REBALANCE_GOAL = 1.05;

export interface RebalanceScenario {
  name: string;
  stages: number;
  /** Blocks per stage at the start (launch --split). */
  split: number[];
  microbatches: number;
  gpt: { dModel: number; heads: number; seq: number; rows: number; vocab: number };
  slowRank: number;
  slowFactor: number;
  slowFrom: number;
  iterations: number;
  /** Steady iterations at the end the "after" figure is taken over. */
  after: number;
  /**
   * Rounds of the runs (pipemorph, re-planning alone, healthy, no adaptation, the other static splits,
   * in that order in every round): the same static schedule on the same 2 ranks measured 296 and 387 ms in two
   * back-to-back runs on a quiet machine, so one run per policy is not a measurement.
   */
  repeats: number;
  /** Splits besides `split` run statically with the slowdown; the fastest measured is the best static split. */
  staticSplits: number[][];
}

interface RankRecord { iteration: number; version: number; ms: number; layers?: number; moveMs?: number; loss?: number }
interface LaunchResult {
  ranks: Array<{ rank: number; iterations: RankRecord[] }>;
  iterations: Array<{ iteration: number; versions: number[]; splits: number[]; ms: number }>;
  loss: Array<number | null>;
  mixedIterations: number[];
}

/** One job of real rank processes: `pipemorph.launch --model gpt --split ... [--compute-slow ...]`. */
function launch(s: RebalanceScenario, o: { iterations: number; slow: boolean; schedule?: PublishedSchedule; redisUrl?: string; jobId?: string; registration?: Registration }): Promise<LaunchResult> {
  const { dir, file } = jobFiles('pipemorph-real-rebalance-');
  const g = s.gpt;
  const args = ['-m', 'pipemorph.launch', '--stages', `${s.stages}`, '--microbatches', `${s.microbatches}`, '--iterations', `${o.iterations}`,
    '--compute', 'torch', '--model', 'gpt', '--hidden', `${g.dModel}`, '--heads', `${g.heads}`, '--seq', `${g.seq}`, '--rows', `${g.rows}`,
    '--vocab', `${g.vocab}`, '--split', s.split.join(','), '--lr', '0.1', '--momentum', '0.9', '--timeout-s', '120',
    '--checkpoint-dir', join(dir, 'checkpoints'), '--out', join(dir, 'result.json')];
  if (o.slow) args.push('--compute-slow', `${s.slowRank}=${s.slowFactor}@${s.slowFrom}`);
  if (o.schedule) args.push('--schedule', file('schedule.json', o.schedule));
  else {
    args.push('--redis', o.redisUrl!, '--job', o.jobId!);
    if (o.registration) args.push('--register', file('registration.json', o.registration));
  }
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, args, { cwd: PYTHON_CLIENT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`pipemorph.launch exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`));
      resolve(JSON.parse(readFileSync(join(dir, 'result.json'), 'utf8')) as LaunchResult);
    });
  });
}

const median = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length === 0 ? NaN : v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};
const mean = (xs: number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;
const r1 = (x: number) => Math.round(x * 10) / 10;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

interface OpTimes { fMs: number[]; bMs: number[]; wMs: number[] }

/** The job's registration: one node per rank, the blocks declared at their stage's measured time / its block count. */
function registration(s: RebalanceScenario, jobId: string, op: OpTimes): Registration {
  const per = (t: number[]) => s.split.flatMap((n, pp) => new Array<number>(n).fill(r3(t[pp] / n)));
  const d = s.gpt.dModel;
  const L = s.split.reduce((a, n) => a + n, 0);
  return {
    type: 'register', protocol: 1, jobId, stages: s.stages, microbatches: s.microbatches, dp: 1, tp: 1,
    ranks: Array.from({ length: s.stages }, (_, r) => ({ rank: r, dp: 0, pp: r, tp: 0, node: `real-${r}` })),
    // Activations of this GPT are kilobytes; the memory budget lets the planner defer every W.
    memory: { deviceBytes: new Array(s.stages).fill(4e9 * s.microbatches), activationBytes: new Array(s.stages).fill(1e9), hostBytes: 64e9 },
    computeMs: op,
    network: { latencyMs: 0.2, nominalGBps: 1000 },
    layers: {
      fMs: per(op.fMs), bMs: per(op.bMs), wMs: per(op.wMs),
      // A block's float32 weights and SGD momentum (12 d^2 + 13 d parameters) and its gradients.
      stateBytes: new Array<number>(L).fill(3 * 4 * (12 * d * d + 13 * d)),
      activationBytes: new Array<number>(L).fill(4 * s.gpt.rows * s.gpt.seq * d * 8),
      perStage: s.split,
    },
  };
}

async function startRebalanceDaemon(redisUrl: string, rebalance: boolean): Promise<{ app: INestApplication; url: string }> {
  const config = loadConfig({ ...process.env, REDIS_URL: redisUrl });
  config.redis.url = redisUrl;
  config.http.port = 0;
  config.http.host = '127.0.0.1';
  config.ingest.blockMs = 20;
  config.jobs.discoveryIntervalMs = 50;
  config.control.minReplanIntervalMs = 0;
  config.rebalance.enabled = rebalance;
  const app = (await startDaemon(config)).app;
  return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}

interface Decision { iteration: number; kind: string; verdict: string; reason: string }

async function decisionsOf(daemonUrl: string, jobId: string): Promise<Decision[]> {
  try {
    const body = (await (await fetch(`${daemonUrl}/jobs/${encodeURIComponent(jobId)}/decisions`)).json()) as { decisions?: Decision[] };
    return (body.decisions ?? []).map((d) => ({ iteration: d.iteration, kind: d.kind, verdict: d.verdict, reason: d.reason }));
  } catch {
    return [];
  }
}

/** Per stage, the median over the ranks' reports (iterations from 2 on) of F, B and W: a healthy run following a daemon. */
async function calibrate(redis: Redis, redisUrl: string, s: RebalanceScenario): Promise<OpTimes> {
  const jobId = `bench-real-rb-cal-${Date.now().toString(36)}`;
  const guess = { fMs: new Array(s.stages).fill(10), bMs: new Array(s.stages).fill(10), wMs: new Array(s.stages).fill(10) };
  await launch(s, { iterations: 8, slow: false, redisUrl, jobId, registration: registration(s, jobId, guess) });
  const entries = (await redis.xrange(jobKeys(jobId).reports, '-', '+')) as Array<[string, string[]]>;
  const per = Array.from({ length: s.stages }, () => ({ f: [] as number[], b: [] as number[], w: [] as number[] }));
  for (const [, fields] of entries) {
    const m = JSON.parse(fields[1]) as { type: string; rank: number; iteration: number; computeMs?: { f: number; b: number; w: number } };
    if (m.type !== 'report' || !m.computeMs || m.iteration < 2) continue;
    per[m.rank].f.push(m.computeMs.f);
    per[m.rank].b.push(m.computeMs.b);
    per[m.rank].w.push(m.computeMs.w);
  }
  return { fMs: per.map((p) => r1(median(p.f))), bMs: per.map((p) => r1(median(p.b))), wMs: per.map((p) => r1(median(p.w))) };
}

/** Median and interquartile range (linear interpolation between order statistics) of the rounds. */
export interface Spread {
  median: number;
  q1: number;
  q3: number;
  rounds: number[];
}

export function spreadOf(values: number[], round = r3): Spread {
  const v = [...values].sort((a, b) => a - b);
  const at = (q: number) => {
    const x = q * (v.length - 1);
    const lo = Math.floor(x);
    return v.length === 0 ? NaN : v[lo] + (v[Math.min(lo + 1, v.length - 1)] - v[lo]) * (x - lo);
  };
  return { median: round(at(0.5)), q1: round(at(0.25)), q3: round(at(0.75)), rounds: values.map(round) };
}

/** One round's figures for one policy. */
export interface RebalanceRoundResult {
  beforeMs: number;
  duringMs: number;
  afterMs: number;
  overScaled: number;
  /** afterMs / the best static split's afterMs in the same round. */
  overBest: number;
  moveIteration: number | null;
  moveCostMs: number | null;
  perStage: number[];
}

export interface RebalancePolicyResult {
  /** Every round's figures; the fields below are their medians, and the traces are the first round's. */
  rounds: RebalanceRoundResult[];
  /** Medians (ms) of the windows; means beside them. */
  beforeMs: number;
  duringMs: number;
  afterMs: number;
  afterMeanMs: number;
  /** afterMs / the healthy job scaled to the remaining compute (each round against its own healthy run). */
  overScaled: number;
  /** The after window's spread over the rounds (ms). */
  afterSpread: Spread;
  /** afterMs / the best static split's, per round: the judgement. */
  overBest: Spread;
  /** Iterations at which the agreed version changed: what the schedule carried, that iteration's time, the ranks' moveMs. */
  switches: Array<{ iteration: number; version: number; kind: string | null; perStage: number[] | null; iterationMs: number; moveMs: number[] }>;
  /** The move iteration minus the median after it (null without a move). */
  moveCostMs: number | null;
  /** Blocks per stage at the end. */
  perStage: number[];
  decisions: Decision[];
  iterationMs: number[];
  versions: number[];
  loss: Array<number | null>;
  mixedIterations: number;
}

export interface RealRebalanceRow {
  name: string;
  stages: number;
  split: number[];
  microbatches: number;
  gpt: RebalanceScenario['gpt'];
  slowRank: number;
  slowFactor: number;
  slowFrom: number;
  iterations: number;
  measuredOpMs: OpTimes;
  repeats: number;
  /** Median over the rounds of the healthy runs' medians (iterations WARMUP on), and healthy x S / (S - 1 + 1 / factor). */
  healthyMs: number;
  healthyRoundsMs: number[];
  healthyScaledMs: number;
  duringFrom: number;
  duringTo: number;
  policies: Record<RebalancePolicy, RebalancePolicyResult>;
  /** The split best-static ran at in each round (the fastest candidate measured). */
  bestSplitRounds: number[][];
  /** pipemorph within REBALANCE_GOAL of the best static split: the upper quartile of its rounds' ratios. */
  goal: { ratio: number; met: boolean };
  pipemorphOverReplan: number;
  /** Largest |loss difference| per iteration between pipemorph's run and no-adaptation's (same data, seed and updates). */
  lossMaxDiffVsStatic: number | null;
  loadAverage: { before: number[]; after: number[] };
}

export type RebalancePolicy = 'no-adaptation' | 'replan-only' | 'pipemorph' | 'best-static';

interface Run { result: LaunchResult; versions: Map<number, PublishedSchedule>; decisions: Decision[] }

function switchesOf(run: Run): RebalancePolicyResult['switches'] {
  const it = run.result.iterations;
  const out: RebalancePolicyResult['switches'] = [];
  for (let i = 1; i < it.length; i++) {
    if (it[i].versions[0] === it[i - 1].versions[0]) continue;
    const sch = run.versions.get(it[i].versions[0]);
    const moveMs = run.result.ranks.map((r) => r.iterations[i]?.moveMs).filter((x): x is number => typeof x === 'number').map(r1);
    out.push({ iteration: i, version: it[i].versions[0], kind: sch?.reason?.kind ?? null, perStage: (sch?.layers?.perStage as number[] | undefined) ?? null, iterationMs: r1(it[i].ms), moveMs });
  }
  return out;
}

/** `redisUrl`: a Redis of the caller's own (the daemons and ranks write jobs into it). */
export async function runRealRebalanceScenario(s: RebalanceScenario, log: (line: string) => void, redisUrl: string): Promise<RealRebalanceRow> {
  const redis = new Redis(redisUrl);
  const before = loadavg();
  try {
    const cal = await startRebalanceDaemon(redisUrl, false);
    let op: OpTimes;
    try {
      op = await calibrate(redis, redisUrl, s);
    } finally {
      await cal.app.close();
    }
    log(`  ${s.name}: measured op times F ${op.fMs.join('/')} B ${op.bMs.join('/')} W ${op.wMs.join('/')} ms`);
    const daemonRun = async (tag: string, rebalance: boolean): Promise<Run & { initial: PublishedSchedule }> => {
      const { app, url } = await startRebalanceDaemon(redisUrl, rebalance);
      try {
        const jobId = `bench-real-rb-${tag}-${Date.now().toString(36)}`;
        const live = launch(s, { iterations: s.iterations, slow: true, redisUrl, jobId, registration: registration(s, jobId, op) });
        const initial = await waitForSchedule(redis, jobId);
        const { result, versions } = await watchSchedules(redis, jobId, live);
        return { result, versions, initial, decisions: await decisionsOf(url, jobId) };
      } finally {
        await app.close();
      }
    };
    const ms = (r: LaunchResult) => r.iterations.map((it) => it.ms);
    type Policy = RebalancePolicy;
    const figures = (run: Run, healthyScaledMs: number, duringTo: number, split = s.split): RebalancePolicyResult => {
      const x = ms(run.result);
      const n = x.length;
      const switches = switchesOf(run);
      const last = switches.length ? switches[switches.length - 1].iteration : 0;
      if (last >= n - s.after) log(`  warning: a switch at iteration ${last} falls into the last ${s.after} iterations`);
      const afterMs = median(x.slice(n - s.after));
      const move = [...switches].reverse().find((w) => w.perStage !== null && w.moveMs.length > 0);
      const splits = run.result.iterations[n - 1];
      const finalSchedule = run.versions.get(splits.versions[0]);
      const round: RebalanceRoundResult = {
        beforeMs: r1(median(x.slice(WARMUP, s.slowFrom))),
        duringMs: r1(median(x.slice(s.slowFrom, duringTo + 1))),
        afterMs: r1(afterMs),
        overScaled: r3(afterMs / healthyScaledMs),
        overBest: NaN, // set once the round's best static split is known
        moveIteration: move?.iteration ?? null,
        moveCostMs: move ? r1(move.iterationMs - median(x.slice(move.iteration + 2))) : null,
        perStage: (finalSchedule?.layers?.perStage as number[] | undefined) ?? split,
      };
      return {
        rounds: [round], ...round,
        afterSpread: spreadOf([round.afterMs], r1),
        overBest: spreadOf([]),
        afterMeanMs: r1(mean(x.slice(n - s.after))),
        switches,
        decisions: run.decisions,
        iterationMs: x.map(r1),
        versions: run.result.iterations.map((it) => it.versions[0]),
        loss: run.result.loss,
        mixedIterations: run.result.mixedIterations.length,
      };
    };
    const perRound: Array<Record<Policy, RebalancePolicyResult>> = [];
    const healthyRoundsMs: number[] = [];
    const bestSplitRounds: number[][] = [];
    let lossMaxDiffVsStatic: number | null = null;
    let duringTo = s.slowFrom;
    for (let round = 0; round < s.repeats; round++) {
      const pipemorph = await daemonRun('pipemorph', true);
      const replan = await daemonRun('replan', false);
      // The static policies run the daemon's first plan (pipemorph's initial schedule) with no daemon.
      const healthy = await launch(s, { iterations: Math.max(16, s.after + WARMUP), slow: false, schedule: pipemorph.initial });
      const none: Run = { result: await launch(s, { iterations: s.iterations, slow: true, schedule: pipemorph.initial }), versions: new Map(), decisions: [] };
      const healthyMs = median(ms(healthy).slice(WARMUP));
      healthyRoundsMs.push(r1(healthyMs));
      const scaled = (healthyMs * s.stages) / (s.stages - 1 + 1 / s.slowFactor);
      const moves = switchesOf(pipemorph).filter((w) => w.iteration >= s.slowFrom);
      const to = moves.length ? moves[moves.length - 1].iteration : s.slowFrom;
      if (round === 0) duringTo = to;
      const noAdaptation = figures(none, scaled, to);
      // The same static schedule with the blocks split otherwise from the start (no daemon, no move).
      let best = noAdaptation;
      for (const split of s.staticSplits) {
        const schedule = { ...pipemorph.initial, ...(pipemorph.initial.layers ? { layers: { ...pipemorph.initial.layers, perStage: split } } : {}) } as PublishedSchedule;
        const run: Run = { result: await launch({ ...s, split }, { iterations: s.iterations, slow: true, schedule }), versions: new Map(), decisions: [] };
        const f = figures(run, scaled, to, split);
        if (f.afterMs < best.afterMs) best = f;
      }
      bestSplitRounds.push(best.perStage);
      const entry: Record<Policy, RebalancePolicyResult> = { 'no-adaptation': noAdaptation, 'replan-only': figures(replan, scaled, to), pipemorph: figures(pipemorph, scaled, to), 'best-static': best };
      for (const p of Object.values(entry)) p.rounds[0].overBest = r3(p.rounds[0].afterMs / best.afterMs);
      perRound.push(entry);
      log(`  round ${round + 1}: healthy ${r1(healthyMs)} ms | ${(['no-adaptation', 'replan-only', 'pipemorph', 'best-static'] as const).map((p) => `${p} ${perRound[round][p].beforeMs} / ${perRound[round][p].duringMs} / ${perRound[round][p].afterMs} ms (${perRound[round][p].overScaled}x, ${perRound[round][p].perStage.join(',')})`).join(' | ')}`);
      const pl = pipemorph.result.loss;
      const nl = none.result.loss;
      const diffs = pl.map((x, i) => (x !== null && nl[i] !== null && nl[i] !== undefined ? Math.abs(x - (nl[i] as number)) : null)).filter((x): x is number => x !== null);
      if (diffs.length) lossMaxDiffVsStatic = Math.max(lossMaxDiffVsStatic ?? 0, ...diffs);
    }
    const healthyMs = median(healthyRoundsMs);
    const healthyScaledMs = (healthyMs * s.stages) / (s.stages - 1 + 1 / s.slowFactor);
    const summarize = (p: Policy): RebalancePolicyResult => {
      const rounds = perRound.map((r) => r[p].rounds[0]);
      const mid = (f: (x: RebalanceRoundResult) => number | null): number | null => {
        const v = rounds.map(f).filter((x): x is number => x !== null);
        return v.length ? r1(median(v)) : null;
      };
      return {
        ...perRound[0][p],
        rounds,
        afterSpread: spreadOf(rounds.map((x) => x.afterMs), r1),
        overBest: spreadOf(rounds.map((x) => x.overBest)),
        beforeMs: mid((x) => x.beforeMs)!,
        duringMs: mid((x) => x.duringMs)!,
        afterMs: mid((x) => x.afterMs)!,
        overScaled: r3(median(rounds.map((x) => x.overScaled))),
        moveCostMs: mid((x) => x.moveCostMs),
        mixedIterations: perRound.reduce((a, r) => a + r[p].mixedIterations, 0),
      };
    };
    const policies = { 'no-adaptation': summarize('no-adaptation'), 'replan-only': summarize('replan-only'), pipemorph: summarize('pipemorph'), 'best-static': summarize('best-static') };
    return {
      name: s.name,
      stages: s.stages,
      split: s.split,
      microbatches: s.microbatches,
      gpt: s.gpt,
      slowRank: s.slowRank,
      slowFactor: s.slowFactor,
      slowFrom: s.slowFrom,
      iterations: s.iterations,
      measuredOpMs: op,
      repeats: s.repeats,
      healthyMs: r1(healthyMs),
      healthyRoundsMs,
      healthyScaledMs: r1(healthyScaledMs),
      duringFrom: s.slowFrom,
      duringTo,
      policies,
      pipemorphOverReplan: r3(policies.pipemorph.afterMs / policies['replan-only'].afterMs),
      bestSplitRounds,
      goal: { ratio: REBALANCE_GOAL, met: policies.pipemorph.overBest.q3 <= REBALANCE_GOAL },
      lossMaxDiffVsStatic,
      loadAverage: { before, after: loadavg() },
    };
  } finally {
    redis.disconnect();
  }
}


/**
 * The row's job: 2 stages x dp 1 (2 rank processes, one per core of this 2-core box: the only GPT
 * shape here where every rank has a core, bench/real.bench.ts's torchScenarios), the d_model-64 GPT
 * of the torch rows with 10 movable blocks, 5 per stage, 8 microbatches. With rank 1 1.5x slower the
 * best split is 6,4 (6 blocks at 1 against 4 at 1.5: both stages 6 blocks' time, 1.2x the healthy
 * 5), which is exactly the healthy job scaled to the remaining compute (5 x 2 / (1 + 1/1.5) = 6); with
 * 8 blocks the best (5,3: 5 against 4.5) is 1.042x above it, with 6 blocks (4,2: 4 against 3) 1.11x.
 */
export function realRebalanceScenario(quick = false): RebalanceScenario {
  return {
    name: 'GPT d64, 2-stage x dp 1, 10 blocks (5,5), rank 1 1.5x slower in compute',
    stages: 2,
    split: [5, 5],
    microbatches: 8,
    gpt: { dModel: 64, heads: 4, seq: 16, rows: 4, vocab: 64 },
    slowRank: 1,
    slowFactor: 1.5,
    slowFrom: 12,
    iterations: quick ? 36 : 44,
    after: quick ? 8 : 12,
    // Three rounds gave after / yardstick ratios of 0.69, 0.99 and 1.21: a median of three says little.
    repeats: Number(process.env.PIPEMORPH_REBALANCE_ROUNDS ?? (quick ? 3 : 7)),
    // Around the model's best (6,4; see above): the measured best may differ on these ranks.
    staticSplits: [[6, 4], [7, 3]],
  };
}
