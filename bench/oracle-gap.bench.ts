/**
 * npm run bench:oracle-gap: where pipemorph's iterations go against the oracle's (docs/oracle-gap.md).
 * For the superpod trace and the dynamic traces, in lockstep with the real daemon in this process:
 * - per iteration, pipemorph's time minus the oracle's, summed by cause: a NIC failure, a straggler
 *   set that changed since the schedule in force was prepared (onset: detection plus the handshake),
 *   the plan after the switch (steady), links healthy again under a straggler plan (recovery);
 * - per change of the true straggler set, how many iterations until a new schedule ran;
 * - the oracle with only the daemon's default planner (what knowing every delay is worth to it);
 * - on the dynamic traces, one search plan made for X ms on every link and never changed (does
 *   planning for a higher quantile of the delays than their mean help?).
 * The daemon takes PIPEMORPH__section__key overrides from the environment (e.g.
 * PIPEMORPH__control__planner=search, PIPEMORPH__detection__severeEnterAfter=3 for the old rule).
 * Last line: one JSON document, also written to bench/results/oracle-gap.json.
 */
import Redis from 'ioredis';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlConfig, DEFAULT_CONTROL_CONFIG } from '../src/core/control/control-config.type';
import { delegationFor, initialPipelines, plannedPipelines, replicaDelays } from '../src/core/control/pipeline-plans';
import { loadConfig } from '../src/daemon/config/load-config';
import { startDaemon } from '../src/daemon/start-daemon.util';
import { controlInputOf, linkViewsAt } from '../src/emulator/control-input-of';
import { DELEGATING_EMULATION, EmulatedJob } from '../src/emulator/emulated-job';
import { runOraclePolicy } from '../src/emulator/oracle-policy';
import { RankGroup } from '../src/emulator/rank-group';
import { Scenario, scenarios } from '../src/emulator/scenarios';
import { startStamp } from '../src/support/results-stamp';
import { startOwnRedis } from '../src/support/own-redis-server';

/** A redis-server of the bench's own (main starts it), never the one at REDIS_URL (issue 30, item 4). */
let REDIS_URL = '';
const ROOT = join(__dirname, '..', '..');
const SWEEP_MS = [20, 25, 30, 35, 40, 45, 50];

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const round = (x: number) => Math.round(x * 10) / 10;

interface Run {
  ms: number[];
  /** Version each iteration ran and the iteration at which that version's prepare was decided (its effective iteration). */
  versions: number[];
  effectiveAt: Map<number, number>;
  switches: string[];
}

async function runPipemorph(redis: Redis, scenario: Scenario, index: number): Promise<Run> {
  const job = new EmulatedJob(`oracle-gap-${index}-${Date.now().toString(36)}`, scenario.profile, 1, scenario.delays(), DELEGATING_EMULATION);
  const group = new RankGroup(redis, job, { lockstep: true, deviceActivations: scenario.deviceActivations, hostActivations: 64 });
  await group.register();
  await group.connect();
  const ms: number[] = [];
  try {
    for (let i = 0; i < scenario.iterations; i++) ms.push((await group.step()).iterationMs);
  } finally {
    await group.cleanup();
  }
  const learned = group.learned();
  return {
    ms,
    versions: group.history.map((h) => h.versions[0]),
    effectiveAt: new Map(learned.map((s) => [s.version, s.effectiveIteration])),
    switches: learned.map((s) => `v${s.version}@${s.effectiveIteration} ${s.reason.kind}: ${s.reason.detail}`),
  };
}

/** The true straggler set at the start of each iteration (links with extra delay or a dead NIC). */
function trueStragglers(scenario: Scenario): { set: string[]; nic: boolean[] } {
  const job = new EmulatedJob('truth', scenario.profile, 1, scenario.delays(), DELEGATING_EMULATION);
  const set: string[] = [];
  const nic: boolean[] = [];
  for (let i = 0; i < scenario.iterations; i++) {
    // Step traces ignore the time; on the dynamic traces a link's mean over about an iteration (a draw may touch 0 for a moment).
    const views = linkViewsAt(job, i, 0, (link) => sum(Array.from({ length: 8 }, (_, k) => job.delays.delayMs(link, i * 1000 + k * 125, i))) / 8);
    set.push(views.filter((v) => v.extraMs > 0 || v.nicFailure).map((v) => v.link).join(','));
    nic.push(views.some((v) => v.nicFailure));
  }
  return { set, nic };
}

function account(scenario: Scenario, run: Run, oracle: number[]) {
  const truth = trueStragglers(scenario);
  const excess = { nic: 0, onset: 0, steady: 0, recovery: 0, healthy: 0 };
  const reactions: Array<{ from: number; links: string; newScheduleAt: number | null }> = [];
  let changedAt = -1;
  for (let i = 0; i < run.ms.length; i++) {
    if (i > 0 ? truth.set[i] !== truth.set[i - 1] : truth.set[0] !== '') {
      changedAt = i;
      const next = run.versions.findIndex((v, k) => k >= i && v !== run.versions[Math.max(0, i - 1)]);
      reactions.push({ from: i, links: truth.set[i] || '-', newScheduleAt: next >= 0 ? next : null });
    }
    const d = run.ms[i] - oracle[i];
    // The schedule in force was prepared for what the links did before the latest change.
    const stale = changedAt >= 0 && (run.effectiveAt.get(run.versions[i]) ?? 0) <= changedAt;
    if (truth.nic[i]) excess.nic += d;
    else if (truth.set[i] === '') excess[stale ? 'recovery' : 'healthy'] += d;
    else excess[stale ? 'onset' : 'steady'] += d;
  }
  return { excessS: Object.fromEntries(Object.entries(excess).map(([k, v]) => [k, round(v / 1000)])), reactions };
}

/** One plan (search, with delegation) for `extraMs` on every link, run over the whole trace. */
function fixedPlanMean(scenario: Scenario, extraMs: number): number {
  const job = new EmulatedJob('fixed', scenario.profile, 1, scenario.delays(), DELEGATING_EMULATION);
  const base = controlInputOf(job, scenario.deviceActivations);
  const links = linkViewsAt(job, 0, 0, () => extraMs);
  const input = { ...base, links };
  const delegation = delegationFor(input, links, DEFAULT_CONTROL_CONFIG.maxDelegateQueues);
  const search: ControlConfig = { ...DEFAULT_CONTROL_CONFIG, planner: 'search', searchBudgetMs: 60_000, searchEvaluations: 150 };
  const [plan] = plannedPipelines(input, links, replicaDelays(input).now, initialPipelines(base), search, delegation);
  const toggles = new Map(delegation.map((d) => [d.rank, d]));
  const ms: number[] = [];
  for (let i = 0; i < scenario.iterations; i++) ms.push(job.runIteration(i, [{ schedule: plan.schedule, delegation: toggles }], new Array(job.stages).fill(0)).iterationMs);
  return sum(ms) / ms.length;
}

async function main(): Promise<void> {
  const stamp = startStamp();
  const server = await startOwnRedis();
  REDIS_URL = server.url();
  const config = loadConfig({ ...process.env, REDIS_URL });
  config.redis.url = REDIS_URL;
  config.http.port = 0;
  config.http.host = '127.0.0.1';
  config.ingest.blockMs = 5;
  config.jobs.discoveryIntervalMs = 20;
  config.control.minReplanIntervalMs = 0;
  const redis = new Redis(REDIS_URL);
  const app = (await startDaemon(config)).app;
  const trace = readFileSync(join(ROOT, 'bench', 'traces', 'superpod-link-delays.trace'), 'utf8');
  const rows = [];
  try {
    for (const [index, scenario] of scenarios(trace).entries()) {
      if (!/trace/.test(scenario.name)) continue;
      const memory = { deviceActivations: scenario.deviceActivations };
      const run = await runPipemorph(redis, scenario, index);
      const oracle = runOraclePolicy(new EmulatedJob('oracle', scenario.profile, 1, scenario.delays(), DELEGATING_EMULATION), scenario.iterations, memory).map((r) => r.iterationMs);
      const oracleNoSearch = runOraclePolicy(new EmulatedJob('oracle', scenario.profile, 1, scenario.delays(), DELEGATING_EMULATION), scenario.iterations, { ...memory, planners: ['adaptive'] }).map((r) => r.iterationMs);
      const n = run.ms.length;
      const row = {
        name: scenario.name,
        planner: config.control.planner,
        pipemorphMs: round(sum(run.ms) / n),
        oracleMs: round(sum(oracle) / n),
        oracleWithoutSearchMs: round(sum(oracleNoSearch) / n),
        pipemorphOverOracle: Math.round((sum(run.ms) / sum(oracle)) * 1000) / 1000,
        ...account(scenario, run, oracle),
        switches: run.switches,
        fixedSearchPlanMs: scenario.name.includes('dynamic') ? Object.fromEntries(SWEEP_MS.map((x) => [x, round(fixedPlanMean(scenario, x))])) : undefined,
      };
      console.error(`${row.name}: pipemorph ${row.pipemorphMs} ms, oracle ${row.oracleMs} (without search ${row.oracleWithoutSearchMs}), excess s ${JSON.stringify(row.excessS)}`);
      rows.push(row);
    }
  } finally {
    await app.close();
    await redis.quit();
    await server.stop();
  }
  const json = JSON.stringify({ bench: 'oracle-gap', detection: config.detection, rows, stamp: stamp() });
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench', 'results', 'oracle-gap.json'), `${json}\n`);
  console.log(json);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
