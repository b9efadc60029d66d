import { InputError } from '../input-error';
import { PipelineModel } from './pipeline-model.type';
import { MemoryProfile, PipelineProfile } from './pipeline-profile.type';

/** The most stages and microbatches the engine accepts: far beyond any real pipeline, small enough to bound memory. */
export const MAX_STAGES = 1024;
export const MAX_MICROBATCHES = 65536;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function positiveInt(value: unknown, name: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new InputError(`profile.${name} must be an integer from 1 to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function numberArray(value: unknown, name: string, length: number, opts: { min?: number; positive?: boolean } = {}): number[] {
  if (!Array.isArray(value)) throw new InputError(`profile.${name} must be an array of ${length} numbers, got ${JSON.stringify(value)}`);
  if (value.length !== length) throw new InputError(`profile.${name} must have ${length} entries, got ${value.length}`);
  value.forEach((v, i) => {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new InputError(`profile.${name}[${i}] must be a finite number, got ${JSON.stringify(v)}`);
    if (opts.min !== undefined && v < opts.min) throw new InputError(`profile.${name}[${i}] must be >= ${opts.min}, got ${v}`);
    if (opts.positive && v <= 0) throw new InputError(`profile.${name}[${i}] must be > 0, got ${v}`);
  });
  return value as number[];
}

function validateMemory(value: unknown, stages: number): MemoryProfile {
  if (!isPlainObject(value)) throw new InputError('profile.memory must be an object with afterF, afterB, afterW and limit');
  const memory: MemoryProfile = {
    afterF: numberArray(value.afterF, 'memory.afterF', stages, { positive: true }),
    afterB: numberArray(value.afterB, 'memory.afterB', stages),
    afterW: numberArray(value.afterW, 'memory.afterW', stages),
    limit: numberArray(value.limit, 'memory.limit', stages, { positive: true }),
  };
  for (let i = 0; i < stages; i++) {
    if (memory.afterF[i] > memory.limit[i]) {
      throw new InputError(`profile.memory: stage ${i} cannot hold one microbatch (afterF ${memory.afterF[i]} > limit ${memory.limit[i]})`);
    }
    // A microbatch that never gives its memory back would make any long enough schedule infeasible.
    if (memory.afterF[i] + memory.afterB[i] + memory.afterW[i] > 1e-9 * memory.afterF[i]) {
      throw new InputError(`profile.memory: stage ${i} does not release what F allocates (afterF + afterB + afterW must be <= 0)`);
    }
  }
  return memory;
}

/** Checks an untrusted profile (e.g. parsed JSON) field by field; throws InputError naming the first problem. */
export function validateProfile(value: unknown): PipelineProfile {
  if (!isPlainObject(value)) throw new InputError('profile must be a JSON object');
  const stages = positiveInt(value.stages, 'stages', MAX_STAGES);
  const microbatches = positiveInt(value.microbatches, 'microbatches', MAX_MICROBATCHES);
  const profile: PipelineProfile = {
    stages,
    microbatches,
    fMs: numberArray(value.fMs, 'fMs', stages, { min: 0 }),
    bMs: numberArray(value.bMs, 'bMs', stages, { min: 0 }),
    wMs: numberArray(value.wMs, 'wMs', stages, { min: 0 }),
    linkMs: numberArray(value.linkMs, 'linkMs', stages - 1, { min: 0 }),
  };
  if ((value.linkBytes === undefined) !== (value.linkGBps === undefined)) {
    throw new InputError('profile.linkBytes and profile.linkGBps go together: give both or neither');
  }
  if (value.linkBytes !== undefined) {
    profile.linkBytes = numberArray(value.linkBytes, 'linkBytes', stages - 1, { min: 0 });
    profile.linkGBps = numberArray(value.linkGBps, 'linkGBps', stages - 1, { positive: true });
  }
  if (value.memory !== undefined) profile.memory = validateMemory(value.memory, stages);
  return profile;
}

/** Builds the engine's model from a validated profile, optionally with other link delays (e.g. measured ones). */
export function toPipelineModel(profile: PipelineProfile, linkMs: readonly number[] = profile.linkMs): PipelineModel {
  const { stages } = profile;
  const durations = new Float64Array(stages * 3);
  for (let i = 0; i < stages; i++) {
    durations[i * 3] = profile.fMs[i];
    durations[i * 3 + 1] = profile.bMs[i];
    durations[i * 3 + 2] = profile.wMs[i];
  }
  const transferMs = new Float64Array(Math.max(0, stages - 1));
  if (profile.linkBytes && profile.linkGBps) {
    // GB/s = 1e9 bytes/s = 1e6 bytes/ms.
    for (let i = 0; i < stages - 1; i++) transferMs[i] = profile.linkBytes[i] / (profile.linkGBps[i] * 1e6);
  }
  let memDelta: Float64Array | null = null;
  let memLimit: Float64Array | null = null;
  if (profile.memory) {
    memDelta = new Float64Array(stages * 3);
    for (let i = 0; i < stages; i++) {
      memDelta[i * 3] = profile.memory.afterF[i];
      memDelta[i * 3 + 1] = profile.memory.afterB[i];
      memDelta[i * 3 + 2] = profile.memory.afterW[i];
    }
    memLimit = Float64Array.from(profile.memory.limit);
  }
  return {
    stages,
    microbatches: profile.microbatches,
    durations,
    linkMs: Float64Array.from(linkMs),
    transferMs,
    memDelta,
    memLimit,
  };
}

/** Effective one-way delay of link i: latency plus the time one message occupies the link. */
export function effectiveLinkDelayMs(model: PipelineModel, link: number): number {
  return model.linkMs[link] + model.transferMs[link];
}
