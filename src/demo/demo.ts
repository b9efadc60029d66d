/**
 * The live demo (npm run demo): the daemon and emulated training jobs against Redis, in two acts.
 * 1. An 8-stage job: a 60 ms straggler appears on the link between stages 6 and 7, the daemon
 *    detects it, switches the job to a schedule with more slackness there and CPU delegation at
 *    both ends, and returns it to its initial plan once the link heals.
 * 2. A (2 DP, 4 PP) job, one replica per rack: the rack uplink that every data-parallel ring
 *    crosses slows by 30 ms; the daemon re-maps the ranks so that a pipeline edge crosses it
 *    instead, and absorbs what remains with slackness and delegation.
 * One line per iteration, then a summary per act. DEMO_ACTS=1 or DEMO_ACTS=2 runs one act.
 * DEMO_RESULTS=FILE also writes what the acts measured there as JSON (src/emulator/demo-record.ts;
 * `npm run bench:demo` records bench/results/demo.json, which the docs' demo tables are rendered from).
 * `npm run demo -- --real` (or DEMO_RANKS=real) plays act 1 with real PyTorch rank processes instead
 * (src/real/real-act.ts).
 */
import 'reflect-metadata';
import Redis from 'ioredis';
import { loadConfig } from '../daemon/config/load-config';
import { startDaemon, StartedDaemon } from '../daemon/start-daemon.util';
import { stepDelay } from '../emulator/delay/step-delay';
import { DEFAULT_EMULATION, EmulatedJob } from '../emulator/emulated-job';
import { fetchJobDetail } from '../emulator/job-detail.client';
import { RankGroup } from '../emulator/rank-group';
import { dpRackScenario, dpScenarioJob, megatron8, scenarios } from '../emulator/scenarios';
import { runStaticPolicy } from '../emulator/static-policy';
import { realAct } from '../real/real-act';
import { SwitchTimelines } from '../emulator/switch-timelines';
import { DemoRecord } from './demo-record';

const SLOW_LINK = 6;
const DELAY_MS = 60;
const START = 12;
const END = 52;
const ITERATIONS = 80;
/** Emulated time runs this many times faster than the wall clock. */
const SPEED = 5;

/** Act 2: the rack uplink slows by this much from this iteration; iterations run. */
const DP_DELAY_MS = 30;
const DP_START = 8;
const DP_ITERATIONS = 40;
/** Where the before/after timeline of each switch is written (DEMO_TIMELINES overrides). */
const TIMELINES = new SwitchTimelines(process.env.DEMO_TIMELINES ?? 'demo-timelines');
const RECORD = new DemoRecord();

const tty = process.stdout.isTTY;
const paint = (code: string, text: string) => (tty ? `\x1b[${code}m${text}\x1b[0m` : text);

function bar(ms: number, healthyMs: number): string {
  const width = 24;
  const filled = Math.max(1, Math.min(width, Math.round((ms / (healthyMs * 2)) * width)));
  const text = '█'.repeat(filled) + '·'.repeat(width - filled);
  return ms > healthyMs * 1.1 ? paint('31', text) : paint('32', text);
}

async function main(): Promise<void> {
  const config = loadConfig();
  config.http.port = Number(process.env.PORT ?? 8080);
  config.control.minReplanIntervalMs = 0;
  let stopping = false;
  process.once('SIGINT', () => {
    stopping = true;
    process.stdout.write('\n(stopping after this iteration)\n');
  });

  const redis = new Redis(config.redis.url, { maxRetriesPerRequest: 1 });
  try {
    await redis.ping();
  } catch {
    throw new Error(`no Redis answers at ${config.redis.url}: run scripts/ensure-redis.sh (starts or installs one) or set REDIS_URL`);
  }
  config.http.host = '127.0.0.1';
  let daemon: StartedDaemon;
  try {
    daemon = await startDaemon(config);
  } catch {
    config.http.port = 0; // the configured port is taken: any free one
    daemon = await startDaemon(config);
  }
  const { app } = daemon;
  // The demo reads the daemon like any client: GET /jobs/:id and Redis.
  const baseUrl = daemon.url;
  const port = Number(new URL(baseUrl).port);

  const real = process.argv.includes('--real') || process.env.DEMO_RANKS === 'real' || process.env.DEMO_RANKS === 'torch';
  const acts = process.env.DEMO_ACTS ?? '1,2';
  console.log(paint('1', 'pipemorph live demo') + `: daemon on ${baseUrl} (GET /jobs, /metrics), Redis at ${config.redis.url}\n`);
  try {
    if (real) await realAct(redis, config.redis.url, port, paint, bar);
    else if (acts.includes('1')) await pipelineAct(redis, baseUrl, () => stopping);
    if (!real && acts.includes('2') && !stopping) await dataParallelAct(redis, baseUrl, () => stopping);
    if (!real && !stopping) RECORD.write({ speed: SPEED });
  } finally {
    await app.close();
    await redis.quit();
  }
}

async function pipelineAct(redis: Redis, baseUrl: string, stopped: () => boolean): Promise<void> {
  const profile = megatron8();
  const delays = stepDelay([{ fromIteration: START, links: [SLOW_LINK], delayMs: DELAY_MS }, { fromIteration: END, links: [SLOW_LINK], delayMs: 0 }]);
  const jobId = `demo-${Date.now().toString(36)}`;
  const job = new EmulatedJob(jobId, profile, 1, delays, DEFAULT_EMULATION);
  const scenario = scenarios().find((s) => s.name.includes('link 6-7'))!;
  const group = new RankGroup(redis, job, { lockstep: true, deviceActivations: scenario.deviceActivations, hostActivations: 64 });

  console.log(paint('1', 'act 1: a slow pipeline link') + ` (try ${baseUrl}/jobs/${jobId}/view)`);
  const intro = `emulated job: 8 stages x 32 microbatches (Megatron GPT profile, scaled), +${DELAY_MS} ms on link ${SLOW_LINK}-${SLOW_LINK + 1} from iteration ${START} to ${END}, time x${SPEED}`;
  console.log(`${intro}\n`);
  await group.register();
  const first = await group.connect();
  const healthyMs = runStaticPolicy(new EmulatedJob('h', profile, 1, stepDelay([]), DEFAULT_EMULATION), 'zb-static', 10, { deviceActivations: scenario.deviceActivations }).reduce((a, r) => a + r.iterationMs, 0) / 10;
  const initial = `initial schedule v${first.version}: warm-up ${first.pipelines[0].warmup.join(',')} (Alg. 1 within device memory), healthy iteration about ${healthyMs.toFixed(0)} ms`;
  console.log(`${initial}\n`);
  RECORD.begin('pipeline', healthyMs);
  RECORD.intro(intro);
  RECORD.intro(initial);

  const rows: Array<{ iteration: number; ms: number; version: number; delayed: boolean }> = [];
  try {
    for (let i = 0; i < ITERATIONS && !stopped(); i++) {
      const started = Date.now();
      const result = await group.step();
      const version = group.history[group.history.length - 1].versions[0];
      const detail = await fetchJobDetail(baseUrl, jobId);
      await TIMELINES.capture(baseUrl, jobId, detail?.scheduleVersion ?? null);
      const slow = detail?.links.pipeline.filter((l) => l.straggler).map((l) => `link ${l.link}-${l.link + 1} +${l.extraMs.toFixed(0)} ms`) ?? [];
      const running = group.agreedVersion(i);
      const delegation = running.delegation.map((d) => d.rank).join(',') || '-';
      const pending = detail?.handshake ? paint('33', ` switching to v${detail.handshake.version} at it ${detail.handshake.effectiveIteration}`) : '';
      const injected = delays.delayMs(SLOW_LINK, 0, i) > 0 ? paint('31', `injected +${DELAY_MS} ms`) : 'healthy link  ';
      const line = `it ${String(i).padStart(3)}  ${result.iterationMs.toFixed(0).padStart(5)} ms ${bar(result.iterationMs, healthyMs)}  v${version}  ${injected}  detected: ${slow.join(', ') || '-'}  delegation: ${delegation}${pending}`;
      console.log(line);
      RECORD.line(i, `v${version} ${injected} ${slow.join(',')} ${delegation}${pending}`, line);
      rows.push({ iteration: i, ms: result.iterationMs, version, delayed: delays.delayMs(SLOW_LINK, 0, i) > 0 });
      const wait = result.iterationMs / SPEED - (Date.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  } finally {
    await group.cleanup();
  }
  summary(rows, healthyMs, profile, group.mixedIterations());
  console.log('\nswitches:');
  RECORD.outro('\nswitches:');
  for (const s of group.learned()) {
    const line = `  v${s.version} from iteration ${s.effectiveIteration}: ${s.reason.kind} - ${s.reason.detail}; warm-up ${s.pipelines[0].warmup.join(',')}; predicted ${s.prediction.newMs.toFixed(0)} ms${s.prediction.previousMs ? ` (was ${s.prediction.previousMs.toFixed(0)} ms)` : ''}`;
    console.log(line);
    RECORD.outro(line);
    RECORD.switched({ version: s.version, effectiveIteration: s.effectiveIteration, kind: s.reason.kind, detail: s.reason.detail, predictedMs: s.prediction.newMs, previousMs: s.prediction.previousMs ?? null });
  }
  printTimelines(jobId);
}

/** The before/after timelines written for a job's switches (open them in a browser). */
function printTimelines(jobId: string): void {
  const paths = TIMELINES.written.filter((p) => p.includes(`${jobId}-v`));
  if (paths.length === 0) return;
  console.log('\ntimelines (before/after each switch):');
  for (const path of paths) console.log(`  ${path}`);
}

async function dataParallelAct(redis: Redis, baseUrl: string, stopped: () => boolean): Promise<void> {
  const scenario = dpRackScenario(DP_DELAY_MS, DP_START);
  const jobId = `demo-dp-${Date.now().toString(36)}`;
  const job = dpScenarioJob(scenario, jobId);
  const group = new RankGroup(redis, job, { lockstep: true, deviceActivations: scenario.deviceActivations, hostActivations: 64 });
  const healthyRuns = runStaticPolicy(dpScenarioJob(scenario, 'h', true), 'zb-static', 10, { deviceActivations: scenario.deviceActivations });
  const healthyMs = healthyRuns.reduce((a, r) => a + r.iterationMs, 0) / healthyRuns.length;
  const staticRuns = runStaticPolicy(dpScenarioJob(dpRackScenario(DP_DELAY_MS, 0), 's'), 'zb-static', 10, { deviceActivations: scenario.deviceActivations });
  const staticMs = staticRuns.reduce((a, r) => a + r.iterationMs, 0) / staticRuns.length;
  const layout = () => [0, 1].map((dp) => `[${[0, 1, 2, 3].map((pp) => job.rankOf(dp, pp)).join(' ')}]`).join(' ');
  console.log('\n' + paint('1', 'act 2: a slow data-parallel link') + ` (try ${baseUrl}/jobs/${jobId}/view)`);
  const intro = [
    `emulated job: 2 replicas x 4 stages, replica 0 (ranks 0-3) on rack A, replica 1 (ranks 4-7) on rack B: every stage's ring all-reduce`,
    `(3.5 GB of gradients per stage) crosses the rack uplink, +${DP_DELAY_MS} ms on it from iteration ${DP_START}; healthy iteration about ${healthyMs.toFixed(0)} ms`,
  ];
  console.log(`${intro.join('\n')}\n`);
  RECORD.begin('dataParallel', healthyMs);
  for (const line of intro) RECORD.intro(line);
  await group.register();
  await group.connect();
  const rows: Array<{ ms: number; slow: boolean; topology: number; migrationMs: number }> = [];
  try {
    for (let i = 0; i < DP_ITERATIONS && !stopped(); i++) {
      const started = Date.now();
      const result = await group.step();
      const detail = await fetchJobDetail(baseUrl, jobId);
      await TIMELINES.capture(baseUrl, jobId, detail?.scheduleVersion ?? null);
      const dpSlow = detail?.links.dataParallel.filter((l) => l.straggler).length ?? 0;
      const ppSlow = detail?.links.pipeline.filter((l) => l.straggler).map((l) => `dp ${l.dp} link ${l.link}-${l.link + 1}`) ?? [];
      const detected = [dpSlow > 0 ? `${dpSlow} ring links` : '', ...ppSlow].filter(Boolean).join(', ') || '-';
      const pending = detail?.handshake ? paint('33', ` switching to v${detail.handshake.version} at it ${detail.handshake.effectiveIteration}`) : '';
      const slow = i >= DP_START;
      const note = result.migrationMs > 0 ? paint('33', ` (ranks ${group.agreedVersion(i).topology?.moved.join(',')} load their new stage: +${result.migrationMs.toFixed(0)} ms once)`) : '';
      const line = `it ${String(i).padStart(3)}  ${result.iterationMs.toFixed(0).padStart(5)} ms ${bar(result.iterationMs - result.migrationMs, healthyMs)}  layout ${layout()}  ${slow ? paint('31', `uplink +${DP_DELAY_MS} ms`) : 'healthy uplink'}  detected: ${detected}${pending}${note}`;
      console.log(line);
      RECORD.line(i, `${layout()} ${slow} ${detected}${pending}${note}`, line);
      rows.push({ ms: result.iterationMs - result.migrationMs, slow, topology: result.topologyVersion, migrationMs: result.migrationMs });
      const wait = result.iterationMs / SPEED / 4 - (Date.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  } finally {
    await group.cleanup();
  }
  const phase = (name: string, kept: typeof rows) => {
    if (kept.length === 0) return;
    const ms = kept.reduce((a, r) => a + r.ms, 0) / kept.length;
    console.log(`${name.padEnd(34)}${String(kept.length).padStart(10)}${ms.toFixed(0).padStart(10)}${(ms / healthyMs).toFixed(2).padStart(12)}x`);
    RECORD.phase(name, kept.length, ms, healthyMs);
  };
  console.log('\n' + paint('1', 'summary') + ' (migration time left out of the means, shown above)');
  console.log('phase                             iterations   mean ms   vs healthy');
  phase('healthy', rows.filter((r) => !r.slow));
  phase('slow uplink, rings across it', rows.filter((r) => r.slow && r.topology === 0));
  phase('slow uplink, re-mapped', rows.filter((r) => r.slow && r.topology > 0));
  console.log(`${'slow uplink, static ZB, no re-map'.padEnd(34)}${'(model)'.padStart(10)}${staticMs.toFixed(0).padStart(10)}${(staticMs / healthyMs).toFixed(2).padStart(12)}x`);
  RECORD.phase('slow uplink, static ZB, no re-map', null, staticMs, healthyMs);
  RECORD.mixed(group.mixedIterations());
  console.log('\nswitches:');
  RECORD.outro('\nswitches:');
  for (const s of group.learned()) {
    const t = s.topology && s.reason.kind === 'remap' ? `; layout v${s.topology.version}, ranks ${s.topology.moved.join(',')} change stage` : '';
    const line = `  v${s.version} from iteration ${s.effectiveIteration}: ${s.reason.kind} - ${s.reason.detail}${t}; predicted ${s.prediction.newMs.toFixed(0)} ms${s.prediction.previousMs ? ` (was ${s.prediction.previousMs.toFixed(0)} ms)` : ''}`;
    console.log(line);
    RECORD.outro(line);
    RECORD.switched({ version: s.version, effectiveIteration: s.effectiveIteration, kind: s.reason.kind, detail: s.reason.detail, predictedMs: s.prediction.newMs, previousMs: s.prediction.previousMs ?? null });
  }
  printTimelines(jobId);
}

function summary(rows: Array<{ iteration: number; ms: number; version: number; delayed: boolean }>, healthyMs: number, profile: ReturnType<typeof megatron8>, mixed: number[]): void {
  if (rows.length === 0) return;
  const firstVersion = rows[0].version;
  const phases = [
    { name: 'healthy', keep: (r: (typeof rows)[0]) => !r.delayed && r.iteration < START },
    { name: 'straggler, old schedule', keep: (r: (typeof rows)[0]) => r.delayed && r.version === firstVersion },
    { name: 'straggler, adapted', keep: (r: (typeof rows)[0]) => r.delayed && r.version !== firstVersion },
    { name: 'healed', keep: (r: (typeof rows)[0]) => !r.delayed && r.iteration >= START },
  ];
  const staticRun = runStaticPolicy(new EmulatedJob('s', profile, 1, stepDelay([{ fromIteration: 0, links: [SLOW_LINK], delayMs: DELAY_MS }]), DEFAULT_EMULATION), 'zb-static', 20);
  const staticMs = staticRun.reduce((a, r) => a + r.iterationMs, 0) / staticRun.length;
  console.log('\n' + paint('1', 'summary'));
  console.log('phase                       iterations   mean ms   vs healthy');
  for (const phase of phases) {
    const kept = rows.filter(phase.keep);
    if (kept.length === 0) continue;
    const ms = kept.reduce((a, r) => a + r.ms, 0) / kept.length;
    console.log(`${phase.name.padEnd(28)}${String(kept.length).padStart(10)}${ms.toFixed(0).padStart(10)}${(ms / healthyMs).toFixed(2).padStart(12)}x`);
    RECORD.phase(phase.name, kept.length, ms, healthyMs);
  }
  console.log(`${'straggler, static ZB only'.padEnd(28)}${'(model)'.padStart(10)}${staticMs.toFixed(0).padStart(10)}${(staticMs / healthyMs).toFixed(2).padStart(12)}x`);
  RECORD.phase('straggler, static ZB only', null, staticMs, healthyMs);
  RECORD.mixed(mixed);
  // Read from every rank's own record of the version it ran (RankGroup.history), not assumed.
  const agreement = mixed.length === 0 ? 'every rank recorded the same version in every iteration' : paint('31', `ranks ran MIXED versions in iterations ${mixed.join(', ')}`);
  const versions = `\nversions used: ${[...new Set(rows.map((r) => r.version))].map((v) => 'v' + v).join(' -> ')}; ${agreement}.`;
  console.log(versions);
  RECORD.outro(versions);
}

main().catch((error) => {
  console.error(`demo failed: ${(error as Error).message}`);
  process.exit(1);
});
