import { AllReduceModel } from './topology.type';

/** Chunks one ring link carries per iteration for a stage's all-reduce over `dpSize` replicas. */
export function ringMessages(model: AllReduceModel, stage: number, dpSize: number): number {
  if (dpSize <= 1) return 0;
  return Math.ceil(((2 * (dpSize - 1)) / dpSize) * (model.gradientBytes[stage] / model.chunkBytes) - 1e-9);
}

/** Time one chunk holds a ring link whose extra delay is `extraMs`: bandwidth or latency window bound. */
export function chunkMs(model: AllReduceModel, extraMs: number): number {
  const transfer = model.chunkBytes / (model.gbps * 1e6);
  const window = (model.latencyMs + Math.max(0, extraMs)) / model.inflight;
  return transfer > window ? transfer : window;
}

/** Ring all-reduce time of one stage, given the largest extra delay on any link of its ring, ms. */
export function ringAllReduceMs(model: AllReduceModel, stage: number, dpSize: number, worstExtraMs: number): number {
  const messages = ringMessages(model, stage, dpSize);
  return messages === 0 ? 0 : messages * chunkMs(model, worstExtraMs) + model.latencyMs;
}

/**
 * Iteration time of a job: every stage starts its all-reduce once all its replicas have finished
 * their last op (so early-finishing stages overlap it with the others' cool-down) and the
 * iteration ends with the last all-reduce. `finishMs[dp][pp]`, `ringExtraMs[pp]`.
 */
export function iterationWithAllReduceMs(model: AllReduceModel | null, finishMs: ArrayLike<number>[], ringExtraMs: ArrayLike<number>): number {
  const stages = finishMs.length > 0 ? finishMs[0].length : 0;
  let end = 0;
  for (let p = 0; p < stages; p++) {
    let ready = 0;
    for (const replica of finishMs) if (replica[p] > ready) ready = replica[p];
    const total = ready + (model ? ringAllReduceMs(model, p, finishMs.length, ringExtraMs[p]) : 0);
    if (total > end) end = total;
  }
  return end;
}

/** Problems with `model`, one sentence each; empty when usable. */
export function validateAllReduceModel(model: AllReduceModel, stages: number): string[] {
  const problems: string[] = [];
  const positive = (x: unknown) => typeof x === 'number' && Number.isFinite(x) && x > 0;
  if (!Array.isArray(model.gradientBytes) || model.gradientBytes.length !== stages || !model.gradientBytes.every((b) => typeof b === 'number' && Number.isFinite(b) && b >= 0)) {
    problems.push(`gradientBytes must list ${stages} finite numbers >= 0`);
  }
  if (!(typeof model.latencyMs === 'number' && Number.isFinite(model.latencyMs) && model.latencyMs >= 0)) problems.push('latencyMs must be a finite number >= 0');
  if (!positive(model.gbps)) problems.push('gbps must be a finite number > 0');
  if (!positive(model.chunkBytes)) problems.push('chunkBytes must be a finite number > 0');
  if (!(Number.isInteger(model.inflight) && model.inflight >= 1)) problems.push('inflight must be an integer >= 1');
  return problems;
}
