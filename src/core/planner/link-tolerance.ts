import { effectiveLinkDelayMs } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';

export interface LinkTolerance {
  link: number;
  /** Δ_i = x_i - x_{i+1}. */
  slackness: number;
  /** The largest one-way delay this slackness absorbs by Eq. 1, ms (0 when it absorbs none). */
  toleranceMs: number;
  /** The link's effective delay in the model (latency plus one message's transfer time), ms. */
  delayMs: number;
  /** Whether Eq. 1 holds: the delay causes no cascading bubbles. */
  absorbed: boolean;
}

function stageFB(model: PipelineModel, stage: number): number {
  return model.durations[stage * 3] + model.durations[stage * 3 + 1];
}

/**
 * Eq. 1 of the paper: a delay c_i on link i causes no cascading bubbles iff
 * t^F_i + t^B_i + 2 c_i <= Δ_i (t^F_{i+1} + t^B_{i+1}).
 */
export function linkTolerance(model: PipelineModel, warmup: readonly number[]): LinkTolerance[] {
  const result: LinkTolerance[] = [];
  for (let i = 0; i + 1 < model.stages; i++) {
    const slackness = warmup[i] - warmup[i + 1];
    const toleranceMs = Math.max(0, (slackness * stageFB(model, i + 1) - stageFB(model, i)) / 2);
    const delayMs = effectiveLinkDelayMs(model, i);
    // One comparison for both questions ("absorbed?" and "how much slackness?"), one rounding rule.
    result.push({ link: i, slackness, toleranceMs, delayMs, absorbed: slackness >= requiredSlackness(model, i) });
  }
  return result;
}

/** The smallest slackness that satisfies Eq. 1 for link i under its current delay (Infinity when none can: zero-time downstream stage). */
export function requiredSlackness(model: PipelineModel, link: number): number {
  const need = stageFB(model, link) + 2 * effectiveLinkDelayMs(model, link);
  const per = stageFB(model, link + 1);
  if (per <= 0) return need <= 0 ? 0 : Infinity;
  return Math.ceil(need / per - 1e-9);
}
