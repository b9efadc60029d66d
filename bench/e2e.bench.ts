/**
 * npm run bench:e2e: the same scenarios under five policies, in virtual time, in one process.
 * - zb-static / 1f1b-static: the schedule the daemon starts the job with (same device memory), never
 *   changed (GPU-direct sends);
 * - delegation-only: that ZeroBubble schedule with CPU delegation toggled on slow links at once, sized
 *   by the daemon's rule (no re-scheduling);
 * - pipemorph: the real daemon (in this process) and emulated ranks speaking protocol v1 over Redis;
 * - oracle: knows every link's delay at every instant and switches at once to the best plan the
 *   planners make (src/emulator/oracle-policy.ts): pipemorph -> oracle is what detection, hysteresis
 *   and the handshake cost.
 * The emulator models head-of-line blocking (one GPU-direct send in flight per link direction),
 * delegate queues with a 2% copy cost, 1% op-time jitter. A failed NIC costs a 2 s timeout per message
 * on plain ranks (zb-static, 1f1b-static); ranks with delegate processes (the other three) time out
 * once per link and fail over to the host path on their own until the schedule delegates the link
 * (docs/protocol.md sec. 7, EmulationOptions.nicFailover).
 *
 * Then the paper's data-parallel straggler (sec. 7.3, Fig. 19): (2 DP, 4 PP) on two racks, every
 * stage's all-reduce ring crossing a rack link that turns slow (+10/20/30 ms) at iteration 5, under
 * healthy (no slow link), zb-static, falcon (re-map once, 3 iterations after the onset, static
 * ZeroBubble after: src/emulator/remap-policy.ts) and pipemorph (the daemon: re-map, then adapt).
 *
 * Then issue 24's compute straggler (layer re-balancing, docs/rebalancing.md): an 8-stage job that
 * declares its 64 layers (8 per stage), rank 3 1.5x slower in compute from iteration 20, under
 * healthy (no slowdown), no adaptation (the initial ZeroBubble schedule), re-planning alone (the
 * daemon with rebalance.enabled=false) and pipemorph (the daemon as shipped: it moves layers, and the
 * emulated ranks run the published split, paying the handoff the daemon priced at the switch
 * iteration). Each daemon variant is its own daemon, started after the one above is closed.
 *
 * PIPEMORPH_BENCH_ONLY=dp (or --only=dp) runs only the data-parallel rows, =pp only the others but
 * re-balancing, =rebalance only the re-balancing rows (written into the results' rebalanceScenarios,
 * the rest of bench/results/e2e.json kept).
 * The daemon takes PIPEMORPH__section__key overrides from the environment, to compare settings
 * (e.g. PIPEMORPH__control__planner=search).
 * Last line: one JSON document ({ scenarios, pacedScenarios, dpScenarios, rebalanceScenarios }), also written to bench/results/e2e.json
 * (the tables in docs/benchmarks.md are rendered from it: npm run readme:tables).
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/daemon/config/load-config';
import { startDaemon } from '../src/daemon/start-daemon.util';
import { constantDelay } from '../src/emulator/delay/constant-delay';
import { DEFAULT_EMULATION, DELEGATING_EMULATION, EmulatedJob, IterationResult } from '../src/emulator/emulated-job';
import { RankGroup } from '../src/emulator/rank-group';
import { runFalconPolicy } from '../src/emulator/remap-policy';
import { DpScenario, dpScenarioJob, dpScenarios, LayeredStragglerScenario, layeredStragglerJob, layeredStragglerScenario, Scenario, scenarios } from '../src/emulator/scenarios';
import { runOraclePolicy } from '../src/emulator/oracle-policy';
import { startStamp } from '../src/support/results-stamp';
import { startOwnRedis } from '../src/support/own-redis-server';
import { runStaticPolicy, StaticPolicy } from '../src/emulator/static-policy';

/** A redis-server of the bench's own (main starts it): a bench beside the tests or another bench changes neither's numbers (issue 30, item 4). */
let REDIS_URL = '';
const POLICIES = ['zb-static', '1f1b-static', 'delegation-only', 'pipemorph', 'oracle'] as const;
type Policy = (typeof POLICIES)[number];
const DP_POLICIES = ['healthy', 'zb-static', 'falcon', 'pipemorph'] as const;
type DpPolicy = (typeof DP_POLICIES)[number];
/** Paper, sec. 7.3 / Fig. 19: ZeroBubble degrades up to 8.04x; Falcon's remap 3.6x faster than ZB; PipeMorph 1.96x faster than Falcon. */
const PAPER_DP = { zbSlowdownUpTo: 8.04, falconOverZb: 3.6, pipemorphOverFalcon: 1.96 };
const ONLY = (process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length) ?? process.env.PIPEMORPH_BENCH_ONLY ?? '').toLowerCase();
if (!['', 'dp', 'pp', 'rebalance'].includes(ONLY)) throw new Error(`PIPEMORPH_BENCH_ONLY / --only must be dp, pp or rebalance, not ${JSON.stringify(ONLY)}`);
const RESULTS = join(__dirname, '..', '..', 'bench', 'results', 'e2e.json');

function mean(results: IterationResult[], skip: number): number {
  const kept = results.slice(Math.min(skip, results.length - 1));
  return kept.reduce((a, r) => a + r.iterationMs, 0) / kept.length;
}

async function startBenchDaemon(patch: (config: ReturnType<typeof loadConfig>) => void = () => {}): Promise<INestApplication> {
  const config = loadConfig({ ...process.env, REDIS_URL }); // PIPEMORPH__section__key overrides apply, e.g. to compare settings
  patch(config);
  config.http.port = 0;
  config.ingest.blockMs = 5;
  config.jobs.discoveryIntervalMs = 20;
  // Wall-clock intervals mean nothing in virtual time: the hysteresis (in iterations) governs.
  config.control.minReplanIntervalMs = 0;
  config.http.host = '127.0.0.1';
  return (await startDaemon(config)).app;
}

async function runGroup(redis: Redis, job: EmulatedJob, name: string, deviceActivations: number[], iterations: number, pace?: number, beforeCleanup?: (group: RankGroup) => Promise<void>): Promise<{ results: IterationResult[]; group: RankGroup }> {
  const group = new RankGroup(redis, job, { lockstep: pace === undefined, pace, deviceActivations, hostActivations: 64 });
  await group.register();
  const results: IterationResult[] = [];
  try {
    await group.connect();
    for (let i = 0; i < iterations; i++) results.push(await group.step());
    const mixed = group.history.filter((h) => new Set(h.versions).size > 1);
    if (mixed.length > 0) throw new Error(`${name}: ${mixed.length} iterations ran mixed schedule versions`);
    await beforeCleanup?.(group);
  } finally {
    await group.cleanup();
  }
  return { results, group };
}

async function runPipemorph(redis: Redis, scenario: Scenario, index: number, pace?: number): Promise<{ results: IterationResult[]; switchedAt: number | null }> {
  const job = new EmulatedJob(`bench-e2e-${index}${pace ? 'p' : ''}-${Date.now().toString(36)}`, scenario.profile, 1, scenario.delays(), DELEGATING_EMULATION);
  const { results, group } = await runGroup(redis, job, scenario.name, scenario.deviceActivations, scenario.iterations, pace);
  const first = group.history[0]?.versions[0];
  return { results, switchedAt: group.history.find((h) => h.versions[0] !== first)?.iteration ?? null };
}

/** Wall-clock iterations scaled by these in the paced rows: at 0.05 a 768 ms iteration takes about 38 ms, at 0.01 about 8 ms. */
const PACES = [0.05, 0.01];

interface PacedRow {
  name: string;
  lockstep: { meanIterationMs: number; switchedAt: number | null };
  paced: Array<{ pace: number; meanIterationMs: number; switchedAt: number | null }>;
}

/**
 * The constant-straggler scenarios again with the ranks on a paced wall clock (RankGroup `pace`):
 * each iteration lasts its emulated time x pace (PACES), each rank reads control once at its own boundary, and the
 * daemon's wall-clock reaction (ingest, planning, the handshake's round trips) costs iterations.
 * Lockstep hides that cost; the difference in switch iteration and steady-state time is it.
 */
async function runPacedScenarios(redis: Redis, list: Scenario[]): Promise<PacedRow[]> {
  const rows: PacedRow[] = [];
  for (const [index, scenario] of list.filter((s) => s.name.includes(' ms on link')).entries()) {
    const lock = await runPipemorph(redis, scenario, 100 + index);
    const paced: PacedRow['paced'] = [];
    for (const pace of PACES) {
      const run = await runPipemorph(redis, scenario, 100 + index, pace);
      paced.push({ pace, meanIterationMs: round(mean(run.results, scenario.skip)), switchedAt: run.switchedAt });
      console.error(`${scenario.name} / paced x${pace}: ${paced[paced.length - 1].meanIterationMs} ms, switched at ${run.switchedAt} (lockstep ${lock.switchedAt})`);
    }
    rows.push({ name: scenario.name, lockstep: { meanIterationMs: round(mean(lock.results, scenario.skip)), switchedAt: lock.switchedAt }, paced });
  }
  return rows;
}

/** The DP scenario with the daemon in the loop: it sees locality and the all-reduce in the registration and DP link reports. */
async function runPipemorphDp(redis: Redis, scenario: DpScenario, index: number): Promise<{ results: IterationResult[]; remapAt: number | null; reasons: string[] }> {
  const job = dpScenarioJob(scenario, `bench-e2e-dp-${index}-${Date.now().toString(36)}`);
  const { results, group } = await runGroup(redis, job, scenario.name, scenario.deviceActivations, scenario.iterations);
  const remapAt = results.find((r) => r.topologyVersion > 0)?.iteration ?? null;
  return { results, remapAt, reasons: group.learned().map((s) => `v${s.version}:${s.reason.kind}@${s.effectiveIteration}`) };
}

interface DpRow {
  name: string;
  extraMs: number;
  healthyMs: number;
  policies: Record<DpPolicy, { meanIterationMs: number; slowdown: number }>;
  falconRemapAt: number | null;
  falconMoved: number[];
  pipemorphRemapAt: number | null;
  pipemorphSchedules: string[];
  falconOverZb: number;
  pipemorphOverFalcon: number;
  pipemorphOverZb: number;
}

async function runDpScenarios(redis: Redis): Promise<DpRow[]> {
  const rows: DpRow[] = [];
  for (const [index, scenario] of dpScenarios().entries()) {
    const means = {} as Record<DpPolicy, number>;
    let falconRemapAt: number | null = null;
    let falconMoved: number[] = [];
    let pipemorph: Awaited<ReturnType<typeof runPipemorphDp>> | null = null;
    for (const policy of DP_POLICIES) {
      const t0 = performance.now();
      let results: IterationResult[];
      const memory = { deviceActivations: scenario.deviceActivations };
      if (policy === 'healthy') results = runStaticPolicy(dpScenarioJob(scenario, 'healthy', true), 'zb-static', scenario.iterations, memory);
      else if (policy === 'zb-static') results = runStaticPolicy(dpScenarioJob(scenario, 'static'), 'zb-static', scenario.iterations, memory);
      else if (policy === 'falcon') {
        const run = runFalconPolicy(dpScenarioJob(scenario, 'falcon'), scenario.iterations);
        results = run.results;
        falconRemapAt = run.remap?.effectiveIteration ?? null;
        falconMoved = run.remap?.topology.moved ?? [];
      } else {
        pipemorph = await runPipemorphDp(redis, scenario, index);
        results = pipemorph.results;
      }
      means[policy] = mean(results, scenario.skip);
      console.error(`${scenario.name} / ${policy}: ${means[policy].toFixed(1)} ms (${((performance.now() - t0) / 1000).toFixed(1)} s wall)`);
    }
    const policies = Object.fromEntries(DP_POLICIES.map((p) => [p, { meanIterationMs: round(means[p]), slowdown: round(means[p] / means.healthy) }])) as DpRow['policies'];
    rows.push({
      name: scenario.name,
      extraMs: scenario.extraMs,
      healthyMs: round(means.healthy),
      policies,
      falconRemapAt,
      falconMoved,
      pipemorphRemapAt: pipemorph?.remapAt ?? null,
      pipemorphSchedules: pipemorph?.reasons ?? [],
      falconOverZb: round(means['zb-static'] / means.falcon),
      pipemorphOverFalcon: round(means.falcon / means.pipemorph),
      pipemorphOverZb: round(means['zb-static'] / means.pipemorph),
    });
  }
  return rows;
}

const REBALANCE_POLICIES = ['healthy', 'no-adaptation', 'replan-only', 'pipemorph'] as const;
type RebalancePolicy = (typeof REBALANCE_POLICIES)[number];
/** Iterations at the start left out of "before" (the daemon's first plan settles), and the steady window "after" ends the run with. */
const REBALANCE_WARMUP = 5;
const REBALANCE_AFTER = 30;

/** One entry of a job's decision log (GET /jobs/:id/decisions). */
interface RebalanceDecision {
  iteration: number;
  kind: string;
  verdict: string;
  reason: string;
}

interface RebalancePolicyRow {
  /** Mean iteration ms before the slowdown (iterations 5 .. slowFrom - 1). */
  beforeMs: number;
  /** Mean over the onset to pipemorph's last switch (inclusive; the same iterations for every policy): detection, the handshake, the move. */
  duringMs: number;
  /** Mean over the last REBALANCE_AFTER iterations (after every switch). */
  afterMs: number;
  /** Mean from the onset to the end. */
  fromOnsetMs: number;
  /** Iterations at which the agreed schedule version changed, with their times and handoff. */
  switches: Array<{ iteration: number; version: number; kind: string; iterationMs: number; handoffMs: number; perStage: number[] | null }>;
  /** Layers per stage at the end (the registered split unless re-balanced). */
  perStage: number[];
  /** afterMs over the healthy job scaled to the remaining compute. */
  overScaled: number;
  /** The daemon's decision log (daemon policies; empty otherwise). */
  decisions: RebalanceDecision[];
}

interface RebalanceRow {
  name: string;
  stages: number;
  layers: number;
  microbatches: number;
  slowRank: number;
  slowFactor: number;
  slowFrom: number;
  iterations: number;
  handoffGBps: number;
  /** Healthy mean x S / (S - 1 + 1 / factor): the healthy job with the slow rank's lost compute taken out. */
  healthyScaledMs: number;
  policies: Record<RebalancePolicy, RebalancePolicyRow>;
  /** pipemorph's afterMs over re-planning alone's. */
  pipemorphOverReplan: number;
  /** The "during" window: the onset to pipemorph's last switch, inclusive. */
  duringFrom: number;
  duringTo: number;
}

/** A daemon (its config patched), one job's ranks in lockstep against it, the daemon closed. */
async function runLayeredWithDaemon(
  redis: Redis,
  scenario: LayeredStragglerScenario,
  tag: string,
  handoffGBps: number,
  patch: (config: ReturnType<typeof loadConfig>) => void,
): Promise<{ results: IterationResult[]; group: RankGroup; decisions: RebalanceDecision[] }> {
  const app = await startBenchDaemon(patch);
  try {
    const job = layeredStragglerJob(scenario, `bench-e2e-rb-${tag}-${Date.now().toString(36)}`, false, DEFAULT_EMULATION, handoffGBps);
    let decisions: RebalanceDecision[] = [];
    // The job's decision log (GET /jobs/:id/decisions), read before its keys are cleaned up.
    const readDecisions = async () => {
      const response = await fetch(`${(await app.getUrl()).replace('[::1]', '127.0.0.1')}/jobs/${encodeURIComponent(job.jobId)}/decisions`);
      if (!response.ok) throw new Error(`GET /jobs/${job.jobId}/decisions: ${response.status}`);
      const body = (await response.json()) as { decisions: Array<{ iteration: number; kind: string; verdict: string; reason: string }> };
      decisions = body.decisions.map((d) => ({ iteration: d.iteration, kind: d.kind, verdict: d.verdict, reason: d.reason }));
    };
    const run = await runGroup(redis, job, `${scenario.name} / ${tag}`, scenario.deviceActivations, scenario.iterations, undefined, readDecisions);
    return { ...run, decisions };
  } finally {
    await app.close();
  }
}

interface RebalanceRun {
  results: IterationResult[];
  versions: number[];
  schedules: Map<number, { kind: string; perStage: number[] | null }>;
  perStage: number[];
  decisions: RebalanceDecision[];
}

/** Where the agreed schedule version changed, with what the new one carried and that iteration's time and handoff. */
function switchesOf(run: RebalanceRun): RebalancePolicyRow['switches'] {
  const switches: RebalancePolicyRow['switches'] = [];
  for (let i = 1; i < run.results.length; i++) {
    if (run.versions[i] === run.versions[i - 1]) continue;
    const s = run.schedules.get(run.versions[i]);
    switches.push({ iteration: i, version: run.versions[i], kind: s?.kind ?? '?', iterationMs: round(run.results[i].iterationMs), handoffMs: round(run.results[i].handoffMs), perStage: s?.perStage ?? null });
  }
  return switches;
}

function rebalancePolicyRow(scenario: LayeredStragglerScenario, run: RebalanceRun, during: [number, number], healthyScaledMs: number): RebalancePolicyRow {
  const results = run.results;
  const avg = (from: number, to: number) => {
    const kept = results.slice(from, to);
    return kept.reduce((a, r) => a + r.iterationMs, 0) / kept.length;
  };
  const switches = switchesOf(run);
  const n = results.length;
  const last = switches.length > 0 ? switches[switches.length - 1].iteration : 0;
  if (last >= n - REBALANCE_AFTER) throw new Error(`${scenario.name}: a switch at iteration ${last} falls into the last ${REBALANCE_AFTER} iterations: run longer`);
  const afterMs = avg(n - REBALANCE_AFTER, n);
  return {
    beforeMs: round(avg(REBALANCE_WARMUP, scenario.slowFrom)),
    duringMs: round(avg(during[0], during[1] + 1)),
    afterMs: round(afterMs),
    fromOnsetMs: round(avg(scenario.slowFrom, n)),
    switches,
    perStage: run.perStage,
    overScaled: Math.round((afterMs / healthyScaledMs) * 1000) / 1000,
    decisions: run.decisions,
  };
}

/**
 * Issue 24, item 4: the layered compute straggler under the four policies. The daemon variants are
 * each their own daemon (the shipped config; rebalance.enabled=false), started and closed here.
 */
async function runRebalanceScenarios(redis: Redis): Promise<RebalanceRow[]> {
  const scenario = layeredStragglerScenario();
  const S = scenario.profile.stages;
  // The ranks' handoff runs at the bandwidth the daemon prices it with (the shipped 10 GB/s unless overridden).
  const handoffGBps = loadConfig({ ...process.env, REDIS_URL }).rebalance.handoffGBps;
  const memory = { deviceActivations: scenario.deviceActivations };
  const rows: RebalanceRow[] = [];
  const results = {} as Record<RebalancePolicy, RebalanceRun>;
  for (const policy of REBALANCE_POLICIES) {
    const t0 = performance.now();
    if (policy === 'healthy' || policy === 'no-adaptation') {
      const job = layeredStragglerJob(scenario, policy, policy === 'healthy', DEFAULT_EMULATION, handoffGBps);
      const run = runStaticPolicy(job, 'zb-static', scenario.iterations, memory);
      results[policy] = { results: run, versions: run.map(() => 0), schedules: new Map(), perStage: job.perStage, decisions: [] };
    } else {
      const { results: run, group, decisions } = await runLayeredWithDaemon(redis, scenario, policy, handoffGBps, (c) => {
        if (policy === 'replan-only') c.rebalance.enabled = false;
      });
      const schedules = new Map(group.learned().map((s) => [s.version, { kind: s.reason.kind, perStage: s.layers?.perStage ?? null }]));
      results[policy] = { results: run, versions: group.history.map((h) => h.versions[0]), schedules, perStage: group.job.perStage, decisions };
    }
    console.error(`${scenario.name} / ${policy}: ${((performance.now() - t0) / 1000).toFixed(1)} s wall`);
  }
  const healthyAfter = results.healthy.results.slice(-REBALANCE_AFTER).reduce((a, r) => a + r.iterationMs, 0) / REBALANCE_AFTER;
  const healthyScaledMs = (healthyAfter * S) / (S - 1 + 1 / scenario.slowFactor);
  const moved = switchesOf(results.pipemorph).filter((s) => s.iteration >= scenario.slowFrom);
  const during: [number, number] = [scenario.slowFrom, moved.length > 0 ? moved[moved.length - 1].iteration : scenario.slowFrom];
  const policies = Object.fromEntries(REBALANCE_POLICIES.map((p) => [p, rebalancePolicyRow(scenario, results[p], during, healthyScaledMs)])) as Record<RebalancePolicy, RebalancePolicyRow>;
  rows.push({
    name: scenario.name,
    stages: S,
    layers: scenario.layers.fMs.length,
    microbatches: scenario.profile.microbatches,
    slowRank: scenario.slowRank,
    slowFactor: scenario.slowFactor,
    slowFrom: scenario.slowFrom,
    iterations: scenario.iterations,
    handoffGBps,
    healthyScaledMs: round(healthyScaledMs),
    policies,
    pipemorphOverReplan: Math.round((policies.pipemorph.afterMs / policies['replan-only'].afterMs) * 1000) / 1000,
    duringFrom: during[0],
    duringTo: during[1],
  });
  return rows;
}

function printRebalanceTable(rows: RebalanceRow[]): void {
  for (const r of rows) {
    console.log(`\n${r.name}, from iteration ${r.slowFrom} (${r.iterations} iterations); healthy scaled to the remaining compute ${r.healthyScaledMs} ms`);
    console.log(`${'policy'.padEnd(16)} ${'before'.padStart(8)} ${`during ${r.duringFrom}-${r.duringTo}`.padStart(14)} ${'after'.padStart(8)} ${'/ scaled'.padStart(9)}  switches`);
    for (const p of REBALANCE_POLICIES) {
      const x = r.policies[p];
      const sw = x.switches.map((s) => `v${s.version} ${s.kind}@${s.iteration} ${s.iterationMs} ms${s.handoffMs > 0 ? ` (handoff ${s.handoffMs})` : ''}${s.perStage ? ` [${s.perStage}]` : ''}`).join('; ');
      console.log(`${p.padEnd(16)} ${x.beforeMs.toFixed(1).padStart(8)} ${x.duringMs.toFixed(1).padStart(14)} ${x.afterMs.toFixed(1).padStart(8)} ${x.overScaled.toFixed(3).padStart(9)}  ${sw || '-'}`);
    }
    console.log(`pipemorph / re-planning alone after: ${r.pipemorphOverReplan}`);
    for (const p of ['replan-only', 'pipemorph'] as const) for (const d of r.policies[p].decisions) console.log(`  ${p} decision @${d.iteration} ${d.kind} ${d.verdict}: ${d.reason}`);
  }
}

async function main(): Promise<void> {
  const stamp = startStamp();
  const server = await startOwnRedis();
  REDIS_URL = server.url();
  const redis = new Redis(REDIS_URL);
  let app = ONLY === 'rebalance' ? null : await startBenchDaemon();
  const trace = readFileSync(join(__dirname, '..', '..', 'bench', 'traces', 'superpod-link-delays.trace'), 'utf8');
  const rows = [];
  let dpRows: DpRow[] = [];
  let pacedRows: PacedRow[] = [];
  let rebalanceRows: RebalanceRow[] = [];
  try {
    for (const [index, scenario] of (ONLY === '' || ONLY === 'pp' ? scenarios(trace) : []).entries()) {
      const healthyJob = new EmulatedJob('healthy', scenario.profile, 1, constantDelay({}), DEFAULT_EMULATION);
      const memory = { deviceActivations: scenario.deviceActivations };
      const healthyMs = mean(runStaticPolicy(healthyJob, 'zb-static', 30, memory), 5);
      // Steady state (after `skip`) and from the onset (every iteration: the constant stragglers are on from iteration 0, so
      // detection, the cost gate and the handshake's lead are in it).
      const policies: Partial<Record<Policy, { meanIterationMs: number; fromOnsetMs: number; itersPerMin: number; slowdown: number }>> = {};
      for (const policy of POLICIES) {
        const t0 = performance.now();
        // Ranks with delegate processes fail over to them on a NIC failure (protocol sec. 7); plain ZeroBubble and 1F1B ranks have none.
        const options = policy === 'zb-static' || policy === '1f1b-static' ? DEFAULT_EMULATION : DELEGATING_EMULATION;
        const fresh = () => new EmulatedJob(policy, scenario.profile, 1, scenario.delays(), options);
        const results =
          policy === 'pipemorph'
            ? (await runPipemorph(redis, scenario, index)).results
            : policy === 'oracle'
              ? runOraclePolicy(fresh(), scenario.iterations, memory)
              : runStaticPolicy(fresh(), policy as StaticPolicy, scenario.iterations, memory);
        const ms = mean(results, scenario.skip);
        policies[policy] = { meanIterationMs: round(ms), fromOnsetMs: round(mean(results, 0)), itersPerMin: round(60000 / ms), slowdown: round(ms / healthyMs) };
        console.error(`${scenario.name} / ${policy}: ${ms.toFixed(1)} ms (${((performance.now() - t0) / 1000).toFixed(1)} s wall)`);
      }
      const p = policies.pipemorph!.meanIterationMs;
      const speedup = Object.fromEntries(POLICIES.filter((x) => x !== 'pipemorph').map((x) => [x, round(policies[x]!.meanIterationMs / p)]));
      rows.push({ name: scenario.name, iterations: scenario.iterations, skip: scenario.skip, healthyMs: round(healthyMs), policies, speedupOfPipemorph: speedup, pipemorphOverOracle: round(p / policies.oracle!.meanIterationMs), pipemorphOverOracleFromOnset: round(policies.pipemorph!.fromOnsetMs / policies.oracle!.fromOnsetMs) });
    }
    if (ONLY === '' || ONLY === 'pp') pacedRows = await runPacedScenarios(redis, scenarios(trace));
    if (ONLY === '' || ONLY === 'dp') dpRows = await runDpScenarios(redis);
    // Its daemons are its own: the one above is closed first.
    await app?.close();
    app = null;
    if (ONLY === '' || ONLY === 'rebalance') rebalanceRows = await runRebalanceScenarios(redis);
  } finally {
    await app?.close();
    await redis.quit();
    await server.stop();
  }
  if (rows.length > 0) printTable(rows);
  if (dpRows.length > 0) printDpTable(dpRows);
  if (rebalanceRows.length > 0) printRebalanceTable(rebalanceRows);
  for (const r of pacedRows) console.log(`${r.name}: lockstep ${r.lockstep.meanIterationMs} ms (switch at ${r.lockstep.switchedAt}); ${r.paced.map((p) => `paced x${p.pace} ${p.meanIterationMs} ms (switch at ${p.switchedAt})`).join('; ')}`);
  const json = JSON.stringify({ bench: 'e2e', scenarios: rows, pacedScenarios: pacedRows, dpScenarios: dpRows, paperDp: PAPER_DP, rebalanceScenarios: rebalanceRows, stamp: stamp() });
  // A partial run (--only) leaves the committed results, which docs/benchmarks.md's tables come from, alone;
  // but --only=rebalance replaces their rebalanceScenarios (the rest as committed).
  if (ONLY === '') {
    mkdirSync(join(__dirname, '..', '..', 'bench', 'results'), { recursive: true });
    writeFileSync(RESULTS, `${json}\n`);
  } else if (ONLY === 'rebalance') {
    const committed = JSON.parse(readFileSync(RESULTS, 'utf8')) as Record<string, unknown>;
    // The other rows were measured at another commit: the file's stamp stays theirs, the re-balancing rows carry their own.
    writeFileSync(RESULTS, `${JSON.stringify({ ...committed, rebalanceScenarios: rebalanceRows, rebalanceStamp: stamp() })}\n`);
  }
  console.log(json);
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

function printTable(rows: Array<{ name: string; healthyMs: number; policies: Partial<Record<Policy, { meanIterationMs: number; slowdown: number }>>; speedupOfPipemorph: Record<string, number>; pipemorphOverOracle: number }>): void {
  const head = ['scenario'.padEnd(30), 'healthy', ...POLICIES.map((p) => p.padStart(16)), '  pipemorph speed-up vs zb / 1f1b / deleg, pipemorph / oracle'];
  console.log(head.join(' '));
  for (const r of rows) {
    const cells = POLICIES.map((p) => `${r.policies[p]!.meanIterationMs.toFixed(0)} (${r.policies[p]!.slowdown.toFixed(2)}x)`.padStart(16));
    const s = r.speedupOfPipemorph;
    console.log([r.name.padEnd(30), r.healthyMs.toFixed(0).padStart(7), ...cells, `  ${s['zb-static']}x / ${s['1f1b-static']}x / ${s['delegation-only']}x, ${r.pipemorphOverOracle}x`].join(' '));
  }
}

function printDpTable(rows: DpRow[]): void {
  console.log(`\nData-parallel straggler (paper sec. 7.3, Fig. 19), mean iteration ms over the steady state, slowdown vs healthy`);
  const head = ['scenario'.padEnd(34), ...DP_POLICIES.map((p) => p.padStart(16)), '  falcon/zb  pipemorph/falcon  remap at (falcon / pipemorph)'];
  console.log(head.join(' '));
  for (const r of rows) {
    const cells = DP_POLICIES.map((p) => `${r.policies[p].meanIterationMs.toFixed(0)} (${r.policies[p].slowdown.toFixed(2)}x)`.padStart(16));
    console.log([r.name.padEnd(34), ...cells, `  ${`${r.falconOverZb}x`.padStart(9)}  ${`${r.pipemorphOverFalcon}x`.padStart(16)}  ${r.falconRemapAt ?? '-'} / ${r.pipemorphRemapAt ?? '-'}`].join(' '));
  }
  console.log(`paper (Fig. 19, 10/20/30 ms): ZB degrades up to ${PAPER_DP.zbSlowdownUpTo}x; Falcon's remap ${PAPER_DP.falconOverZb}x faster than ZB; PipeMorph ${PAPER_DP.pipemorphOverFalcon}x faster than Falcon`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
