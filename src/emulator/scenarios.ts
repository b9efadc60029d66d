import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deviceInflightCaps } from '../core/planner/initial-planner';
import { toPipelineModel, validateProfile } from '../core/pipeline/pipeline-model';
import { PipelineProfile } from '../core/pipeline/pipeline-profile.type';
import { constantDelay } from './delay/constant-delay';
import { DelayModel } from './delay/delay-model.type';
import { dynamicDelay, PAPER_TRACES } from './delay/dynamic-delay';
import { parseDelayTrace } from './delay/superpod-trace';
import { AllReduceConfig, DeclaredLayers, DEFAULT_EMULATION, EmulatedJob, EmulationOptions } from './emulated-job';
import { Fabric } from './fabric/fabric.type';
import { rackLocalities, staticFabric } from './fabric/static-fabric';

const ROOT = join(__dirname, '..', '..', ...(__dirname.includes(join('dist', 'src')) ? ['..'] : []));

/**
 * The real 8-stage Megatron profile (bench/profiles) scaled by 0.2: ops of about 6 ms and a
 * healthy iteration of about 766 ms, the PipeMorph paper's 8-stage 14B setting (about 760 ms).
 */
export function megatron8(): PipelineProfile {
  const raw = validateProfile(JSON.parse(readFileSync(join(ROOT, 'bench', 'profiles', 'megatron-gpt-8stage-32mb.json'), 'utf8')));
  const scale = (xs: number[]) => xs.map((x) => x * 0.2);
  return { ...raw, fMs: scale(raw.fMs), bMs: scale(raw.bMs), wMs: scale(raw.wMs), linkMs: scale(raw.linkMs) };
}

/** The paper's 4-stage example (Fig. 4): 12 microbatches, every op 10 ms, 390 ms healthy. */
export function uniform4(): PipelineProfile {
  const t = [10, 10, 10, 10];
  return { stages: 4, microbatches: 12, fMs: t, bMs: t, wMs: t, linkMs: [0.1, 0.1, 0.1] };
}

export interface Scenario {
  name: string;
  profile: PipelineProfile;
  delays: () => DelayModel;
  iterations: number;
  /** Iterations at the start left out of the mean (steady state for constant stragglers). */
  skip: number;
  /** Device memory per stage, in activations. */
  deviceActivations: number[];
}

function caps(profile: PipelineProfile, fallback: number): number[] {
  return profile.memory ? deviceInflightCaps(toPipelineModel(profile)) : new Array(profile.stages).fill(fallback);
}

export function scenarios(superpodTrace?: string): Scenario[] {
  const m8 = megatron8();
  const u4 = uniform4();
  const list: Scenario[] = [
    { name: '4-stage, 30 ms on link 2-3', profile: u4, delays: () => constantDelay({ 2: 30 }), iterations: 60, skip: 30, deviceActivations: caps(u4, 8) },
    { name: '8-stage, 60 ms on link 0-1', profile: m8, delays: () => constantDelay({ 0: 60 }), iterations: 60, skip: 30, deviceActivations: caps(m8, 16) },
    { name: '8-stage, 60 ms on link 6-7', profile: m8, delays: () => constantDelay({ 6: 60 }), iterations: 60, skip: 30, deviceActivations: caps(m8, 16) },
    ...(['A', 'B', 'C'] as const).map((t) => ({
      name: `8-stage, dynamic trace ${t}`,
      profile: m8,
      delays: () => dynamicDelay({ links: [0, 1, 2, 3, 4, 5, 6], meanMs: 30, stdMs: 10, intervalMs: PAPER_TRACES[t], seed: 7 }),
      iterations: 150,
      skip: 0,
      deviceActivations: caps(m8, 16),
    })),
  ];
  if (superpodTrace !== undefined) {
    const trace = parseDelayTrace(superpodTrace);
    list.push({ name: '8-stage, superpod trace', profile: m8, delays: () => parseDelayTrace(superpodTrace), iterations: trace.suggestedIterations ?? 1100, skip: 0, deviceActivations: caps(m8, 16) });
  }
  return list;
}

/** Per-stage gradient bytes of GPT 7B split over 4 pipeline stages, bf16 (7e9 params x 2 bytes / 4). */
export const GPT7B_STAGE_GRADIENT_BYTES = 3.5e9;

/**
 * The paper's data-parallel straggler (sec. 2.2 and 7.3, Fig. 3 and 19): (2 DP, 4 PP), one node
 * per rank. Replica 0 (ranks 0-3) sits on rack A, replica 1 (ranks 4-7) on rack B, so every stage's
 * two-member ring crosses the racks: a slow uplink between them is a slow data-parallel link.
 * The all-reduce of 3.5 GB per stage in 4 MiB chunks, 8 in flight, over 50 GB/s links with 10 us
 * latency takes about 70 ms healthy and is latency bound once the link is slow.
 */
export interface DpScenario {
  name: string;
  profile: PipelineProfile;
  dp: number;
  /** Extra one-way delay on the rack A - rack B link once slow, ms. */
  extraMs: number;
  /** First iteration the rack link is slow. */
  fromIteration: number;
  /** The fabric with the slow rack link, and the same racks healthy. */
  fabric: () => Fabric;
  healthyFabric: () => Fabric;
  allReduce: AllReduceConfig;
  iterations: number;
  skip: number;
  deviceActivations: number[];
}

export const RACKS = ['rack-a', 'rack-b'] as const;

export function dpRackScenario(extraMs: number, fromIteration = 5): DpScenario {
  const u4 = uniform4();
  const dp = 2;
  const localities = rackLocalities(dp * u4.stages, u4.stages, RACKS);
  return {
    name: `(2 DP, 4 PP), rack link +${extraMs} ms`,
    profile: u4,
    dp,
    extraMs,
    fromIteration,
    fabric: () => staticFabric({ localities, localityLinks: [{ between: RACKS, extraMs, from: fromIteration }] }),
    healthyFabric: () => staticFabric({ localities }),
    allReduce: { gradientBytes: new Array(u4.stages).fill(GPT7B_STAGE_GRADIENT_BYTES), chunkBytes: 4 * 1024 * 1024, inflightChunks: 8, ringLatencyMs: 0.01, ringGBps: 50 },
    iterations: 60,
    skip: 30,
    deviceActivations: caps(u4, 8),
  };
}

/** The three rows of the paper's Fig. 19: 10, 20 and 30 ms on the rack link from iteration 5. */
export function dpScenarios(): DpScenario[] {
  return [10, 20, 30].map((ms) => dpRackScenario(ms));
}

/** The emulated job of a DP scenario (healthy: same racks, no slow link). */
export function dpScenarioJob(scenario: DpScenario, jobId: string, healthy = false, options: EmulationOptions = DEFAULT_EMULATION, migrationMs?: number): EmulatedJob {
  return new EmulatedJob(jobId, scenario.profile, scenario.dp, constantDelay({}), options, {
    fabric: healthy ? scenario.healthyFabric() : scenario.fabric(),
    allReduce: scenario.allReduce,
    ...(migrationMs !== undefined ? { migrationMs } : {}),
  });
}

/**
 * Issue 24's compute straggler under the model: 8 stages of 8 layers (64 layers of 1 / 1 / 0.8 ms
 * F / B / W per microbatch, 2 GB of weights, gradients and optimizer state each, 1/8 GB of
 * activations per microbatch each, so a stage's activation is the registration's 1 GB), 32
 * microbatches, links of 0.05 ms, device memory for every microbatch in flight (no split is refused
 * for memory); rank `slowRank` computes `slowFactor` times slower from iteration `slowFrom` on.
 * The same layers as bench:rebalance's 64-layer row (src/core/rebalance/rebalance-scenario.util.ts).
 */
export interface LayeredStragglerScenario {
  name: string;
  profile: PipelineProfile;
  layers: DeclaredLayers;
  slowRank: number;
  slowFactor: number;
  slowFrom: number;
  iterations: number;
  deviceActivations: number[];
}

export function layeredStragglerScenario(o: { stages?: number; layersPerStage?: number; microbatches?: number; slowRank?: number; slowFactor?: number; slowFrom?: number; iterations?: number } = {}): LayeredStragglerScenario {
  const S = o.stages ?? 8;
  const per = o.layersPerStage ?? 8;
  const N = o.microbatches ?? 32;
  const L = S * per;
  const layer = { f: 1, b: 1, w: 0.8 };
  const layers: DeclaredLayers = {
    fMs: new Array<number>(L).fill(layer.f),
    bMs: new Array<number>(L).fill(layer.b),
    wMs: new Array<number>(L).fill(layer.w),
    stateBytes: new Array<number>(L).fill(2e9),
    activationBytes: new Array<number>(L).fill(1e9 / per),
    perStage: new Array<number>(S).fill(per),
  };
  const sums = (t: number) => new Array<number>(S).fill(per * t);
  const slowRank = o.slowRank ?? 3;
  const slowFactor = o.slowFactor ?? 1.5;
  return {
    name: `${S}-stage, ${L} layers (${per} per stage), rank ${slowRank} ${slowFactor}x slower in compute`,
    profile: { stages: S, microbatches: N, fMs: sums(layer.f), bMs: sums(layer.b), wMs: sums(layer.w), linkMs: new Array<number>(S - 1).fill(0.05) },
    layers,
    slowRank,
    slowFactor,
    slowFrom: o.slowFrom ?? 20,
    iterations: o.iterations ?? 80,
    deviceActivations: new Array<number>(S).fill(N),
  };
}

/** The emulated job of a layered straggler scenario (healthy: no slowdown); one replica. */
export function layeredStragglerJob(scenario: LayeredStragglerScenario, jobId: string, healthy = false, options: EmulationOptions = DEFAULT_EMULATION, handoffGBps?: number): EmulatedJob {
  return new EmulatedJob(jobId, scenario.profile, 1, constantDelay({}), options, {
    layers: { declared: scenario.layers, ...(handoffGBps !== undefined ? { handoffGBps } : {}) },
    computeSlowdowns: healthy ? [] : [{ rank: scenario.slowRank, factor: scenario.slowFactor, fromIteration: scenario.slowFrom }],
  });
}
