import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deviceInflightCaps } from '../core/planner/initial-planner';
import { toPipelineModel, validateProfile } from '../core/pipeline/pipeline-model';
import { PipelineProfile } from '../core/pipeline/pipeline-profile.type';
import { constantDelay } from './delay/constant-delay';
import { DelayModel } from './delay/delay-model.type';
import { dynamicDelay, PAPER_TRACES } from './delay/dynamic-delay';
import { parseDelayTrace } from './delay/superpod-trace';

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
