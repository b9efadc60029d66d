import { PipelineModel } from '../pipeline/pipeline-model.type';

/**
 * How many microbatches' activations each stage can hold on the device: floor(limit / afterF)
 * from the memory profile, or N when memory is not modelled. Never below 1 (validation
 * guarantees one fits), never above N.
 */
export function deviceInflightCaps(model: PipelineModel): number[] {
  const { stages, microbatches, memDelta, memLimit } = model;
  return Array.from({ length: stages }, (_, i) =>
    memDelta && memLimit ? Math.max(1, Math.min(microbatches, Math.floor(memLimit[i] / memDelta[i * 3] + 1e-9))) : microbatches,
  );
}

/** Paper Alg. 1 for a given x_0: x_{S-1} = 1 and the slack x_0 - 1 spread as evenly as possible, the larger shares upstream. */
export function uniformSlacknessWarmup(stages: number, x0: number): number[] {
  if (stages === 1) return [x0];
  const deltaAvg = Math.floor((x0 - 1) / (stages - 1));
  const remainder = (x0 - 1) % (stages - 1);
  const warmup = [x0];
  for (let i = 1; i < stages; i++) warmup.push(warmup[i - 1] - (i <= remainder ? deltaAvg + 1 : deltaAvg));
  return warmup;
}

/**
 * Initial plan (paper Alg. 1): maximise the minimum slackness under device memory.
 * Generalised to per-stage capacities: the largest x_0 <= min(N, caps[0]) whose Alg. 1 plan
 * fits every stage (each x_i only grows with x_0, so the first fit from the top is the best).
 * One stage has no link to protect: it gets x_0 = 1, the least memory.
 */
export function initialWarmup(stages: number, microbatches: number, caps: readonly number[]): number[] {
  if (stages === 1) return [1];
  for (let x0 = Math.min(microbatches, caps[0]); x0 > 1; x0--) {
    const warmup = uniformSlacknessWarmup(stages, x0);
    if (warmup.every((x, i) => x <= caps[i])) return warmup;
  }
  return new Array<number>(stages).fill(1);
}
