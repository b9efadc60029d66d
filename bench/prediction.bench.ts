/**
 * npm run bench:prediction: are the daemon's iteration-time predictions right about real ranks?
 *
 * Real rank processes (clients/python, torch.distributed gloo, sleep compute, wall clock) run fixed
 * schedules with a slow pipeline link, and their measured median iteration time is set against two
 * predictions made by the core for the same schedule, delegation and delay:
 * - transport-aware (what the daemon predicts now): GPU-direct sends block compute once
 *   control.gpuSendsInFlight are in flight (head-of-line blocking), delegated links queue on their
 *   CPU queues, delegating ranks pay control.delegateCopyOverhead;
 * - no queueing (what it predicted before): every send costs its latency and nothing else.
 * The ranks implement their transport from docs/protocol.md, not from the engine, so they judge it.
 * Each prediction is compared as an absolute time and as a slowdown over the healthy run measured
 * the same way (which cancels the ranks' constant per-op overhead on a busy 2-core machine).
 *
 * PIPEMORPH_BENCH_QUICK=1 runs fewer iterations. Last line: JSON, also in bench/results/prediction.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONTROL_CONFIG, DEFAULT_TRANSPORT_CONFIG } from '../src/core/control/control-config.type';
import { DelegationPlan, JobControlInput, PipelineGroupPlan, PipelineLinkView } from '../src/core/control/control-input.type';
import { delegationFor, initialPipelines, plannedPipelines, predictMs, replicaDelays } from '../src/core/control/pipeline-plans';
import { formatSchedule } from '../src/core/pipeline/schedule';
import { PipelineProfile } from '../src/core/pipeline/pipeline-profile.type';
import { megatron8, uniform4 } from '../src/emulator/scenarios';
import { PublishedSchedule } from '../src/protocol/protocol-v1.type';
import { medianMs, runRealJob } from '../src/real/real-job';
import { startStamp } from '../src/support/results-stamp';

const QUICK = process.env.PIPEMORPH_BENCH_QUICK === '1';
const ITERATIONS = QUICK ? 8 : 14;
const SETTLE = 2;

interface Scenario {
  name: string;
  profile: PipelineProfile;
  link: number;
  extraMs: number;
  deviceCaps: number[];
}

interface PolicyResult {
  policy: string;
  measuredMs: number;
  transportAwareMs: number;
  noQueueingMs: number;
  /** Signed relative errors of each prediction, absolute and as a slowdown over healthy. */
  transportAwareError: number;
  noQueueingError: number;
  transportAwareSlowdownError: number;
  noQueueingSlowdownError: number;
}

function scenarios(): Scenario[] {
  const u4 = uniform4();
  const m8 = megatron8();
  return [
    { name: '4-stage, 30 ms on link 2-3', profile: u4, link: 2, extraMs: 30, deviceCaps: new Array(4).fill(8) },
    { name: '4-stage, 60 ms on link 2-3', profile: u4, link: 2, extraMs: 60, deviceCaps: new Array(4).fill(8) },
    { name: '8-stage, 60 ms on link 6-7', profile: m8, link: 6, extraMs: 60, deviceCaps: new Array(8).fill(16) },
  ];
}

/** The daemon's control input for one replica with the straggler as the detector would see it. */
function controlInput(s: Scenario, extraMs: number): JobControlInput {
  const S = s.profile.stages;
  const links: PipelineLinkView[] = Array.from({ length: S - 1 }, (_, l) => ({
    dp: 0, link: l, upRank: l, downRank: l + 1, baselineMs: s.profile.linkMs[l], extraMs: l === s.link ? extraMs : 0,
    straggler: l === s.link && extraMs > 0, nicFailure: false,
  }));
  return {
    stages: S, microbatches: s.profile.microbatches, dpSize: 1, fMs: s.profile.fMs, bMs: s.profile.bMs, wMs: s.profile.wMs,
    deviceCaps: s.deviceCaps, hostCaps: new Array(S).fill(s.profile.microbatches), links, current: null,
  };
}

function published(plan: PipelineGroupPlan, delegation: DelegationPlan[]): PublishedSchedule {
  return {
    protocol: 1, jobId: 'bench-prediction', version: 1, epoch: 1, state: 'committed', effectiveIteration: 0, createdAt: 0,
    pipelines: [{ dpReplicas: [0], warmup: plan.warmup, stages: formatSchedule(plan.schedule) }],
    delegation, reason: { kind: 'initial', links: [], detail: 'bench:prediction' }, prediction: { previousMs: null, newMs: 0 },
  };
}

async function measure(s: Scenario, plan: PipelineGroupPlan, delegation: DelegationPlan[], delays: string): Promise<number> {
  const run = await runRealJob({ profile: s.profile, iterations: ITERATIONS, compute: 'sleep', delays, schedule: published(plan, delegation) });
  if (run.mixedIterations.length > 0) throw new Error(`${s.name}: mixed versions in a static run`);
  return medianMs(run, SETTLE);
}

async function runScenario(s: Scenario): Promise<{ name: string; healthyMs: number; healthyPredictedMs: number; policies: PolicyResult[] }> {
  const input = controlInput(s, s.extraMs);
  const { now } = replicaDelays(input);
  const healthyDelays = replicaDelays(controlInput(s, 0)).now;
  const initial = initialPipelines(input);
  const stragglers = input.links.filter((l) => l.straggler);
  const delegation = delegationFor(input, stragglers, DEFAULT_CONTROL_CONFIG.maxDelegateQueues);
  const adapted = plannedPipelines(input, stragglers, now, initial, DEFAULT_CONTROL_CONFIG, delegation);
  const noQueueing = { gpuSendsInFlight: 1 << 20, delegateCopyOverhead: 0 };
  const delays = `const:${s.link}=${s.extraMs}`;

  const healthyMs = await measure(s, initial[0], [], 'none');
  const healthyPredictedMs = predictMs(input, initial, healthyDelays, [], DEFAULT_TRANSPORT_CONFIG);
  const cases: Array<[string, PipelineGroupPlan[], DelegationPlan[]]> = [
    ['zb-static (GPU-direct)', initial, []],
    ['delegation-only', initial, delegation],
    ['pipemorph (adaptive + delegation)', adapted, delegation],
  ];
  const policies: PolicyResult[] = [];
  for (const [policy, plan, deleg] of cases) {
    const measuredMs = await measure(s, plan[0], deleg, delays);
    const transportAwareMs = predictMs(input, plan, now, deleg, DEFAULT_TRANSPORT_CONFIG);
    const noQueueingMs = predictMs(input, plan, now, deleg, noQueueing);
    const measuredSlowdown = measuredMs / healthyMs;
    policies.push({
      policy, measuredMs, transportAwareMs, noQueueingMs,
      transportAwareError: transportAwareMs / measuredMs - 1,
      noQueueingError: noQueueingMs / measuredMs - 1,
      transportAwareSlowdownError: transportAwareMs / healthyPredictedMs / measuredSlowdown - 1,
      noQueueingSlowdownError: noQueueingMs / healthyPredictedMs / measuredSlowdown - 1,
    });
  }
  return { name: s.name, healthyMs, healthyPredictedMs, policies };
}

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}%`;

async function main(): Promise<void> {
  const stamp = startStamp();
  const rows = [];
  for (const s of scenarios()) {
    const row = await runScenario(s);
    rows.push(row);
    console.error(`${row.name}: healthy ${row.healthyMs.toFixed(0)} ms measured, ${row.healthyPredictedMs.toFixed(0)} predicted`);
  }
  const all = rows.flatMap((r) => r.policies);
  const meanAbs = (f: (p: PolicyResult) => number) => all.reduce((a, p) => a + Math.abs(f(p)), 0) / all.length;
  const worstAbs = (f: (p: PolicyResult) => number) => Math.max(...all.map((p) => Math.abs(f(p))));
  const summary = {
    transportAware: { meanAbsError: meanAbs((p) => p.transportAwareError), worstAbsError: worstAbs((p) => p.transportAwareError), meanAbsSlowdownError: meanAbs((p) => p.transportAwareSlowdownError), worstAbsSlowdownError: worstAbs((p) => p.transportAwareSlowdownError) },
    noQueueing: { meanAbsError: meanAbs((p) => p.noQueueingError), worstAbsError: worstAbs((p) => p.noQueueingError), meanAbsSlowdownError: meanAbs((p) => p.noQueueingSlowdownError), worstAbsSlowdownError: worstAbs((p) => p.noQueueingSlowdownError) },
  };
  console.log('| scenario | policy | measured ms | transport-aware ms (error, slowdown error) | no queueing ms (error, slowdown error) |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) {
    for (const p of r.policies) {
      console.log(`| ${r.name} | ${p.policy} | ${p.measuredMs.toFixed(0)} | ${p.transportAwareMs.toFixed(0)} (${pct(p.transportAwareError)}, ${pct(p.transportAwareSlowdownError)}) | ${p.noQueueingMs.toFixed(0)} (${pct(p.noQueueingError)}, ${pct(p.noQueueingSlowdownError)}) |`);
    }
  }
  console.log(`mean |error|: transport-aware ${pct(summary.transportAware.meanAbsError)} (slowdown ${pct(summary.transportAware.meanAbsSlowdownError)}), no queueing ${pct(summary.noQueueing.meanAbsError)} (slowdown ${pct(summary.noQueueing.meanAbsSlowdownError)})`);
  const json = JSON.stringify({ bench: 'prediction', compute: 'sleep', iterations: ITERATIONS, transport: DEFAULT_TRANSPORT_CONFIG, scenarios: rows, summary, stamp: stamp() });
  const dir = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'prediction.json'), `${json}\n`);
  console.log(json);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
