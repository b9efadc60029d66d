import { PipelineModel } from '../pipeline/pipeline-model.type';
import { requiredSlackness } from './link-tolerance';

/** Alg. 2 keeps at least this much slackness on every link, to absorb jitter. */
export const MIN_ADAPTIVE_SLACKNESS = 2;

/**
 * Dynamic adaptation (paper Alg. 2): from the last stage (x_{S-1} = 1) backwards, give each link
 * the smallest slackness that satisfies Eq. 1 for its measured delay (at least 2), clipped by
 * N - 2S so the other stages keep forwards for their own warm-up.
 *
 * Departures from the printed algorithm, each because the printed form breaks Eq. 1 or the model:
 * - ceil instead of floor, and t^B_i instead of t^B_{i+1}: the floor can leave the delay
 *   unabsorbed (t = 10, c = 15 gives floor(2.5) = 2, which tolerates only 10 ms).
 * - when N - 2S < 1 (few microbatches) the clip is 1: x_i = S - i, as 1F1B.
 * - every x_i is finally clipped to min(N, caps[i]) (host memory), keeping the counts non-increasing.
 */
export function adaptiveWarmup(model: PipelineModel, caps?: readonly number[]): number[] {
  const { stages: S, microbatches: N } = model;
  const clip = Math.max(1, N - 2 * S);
  const warmup = new Array<number>(S);
  warmup[S - 1] = 1;
  for (let i = S - 2; i >= 0; i--) {
    const delta = Math.min(clip, Math.max(MIN_ADAPTIVE_SLACKNESS, requiredSlackness(model, i)));
    warmup[i] = warmup[i + 1] + delta;
  }
  for (let i = 0; i < S; i++) {
    const limit = Math.min(N, caps ? caps[i] : N, i > 0 ? warmup[i - 1] : N);
    if (warmup[i] > limit) warmup[i] = limit;
  }
  return warmup;
}
