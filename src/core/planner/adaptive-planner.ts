import { PipelineModel } from '../pipeline/pipeline-model.type';
import { requiredSlackness } from './link-tolerance';

/** Alg. 2 keeps at least this much slackness on every link when the budget allows, to absorb jitter. */
export const MIN_ADAPTIVE_SLACKNESS = 2;

/**
 * Dynamic adaptation (paper Alg. 2): x_{S-1} = 1 and each link i gets the smallest slackness that
 * satisfies Eq. 1 for its measured delay, at least 2; x_i = x_{i+1} + Δ_i. Memory is relaxed to
 * the host, bounded by `caps` (default N).
 *
 * Departures from the printed algorithm, each because the printed form breaks Eq. 1 or wastes slack:
 * - ceil instead of floor, and t^B_i instead of t^B_{i+1}: the floor can leave the delay
 *   unabsorbed (t = 10, c = 15 gives floor(2.5) = 2, which tolerates only 10 ms).
 * - the clip: the paper caps every Δ_i at N - 2S, which for N close to 2S forces 1F1B-like
 *   slackness even where N forwards would be plenty (seeded benchmark: mean gap to the lower
 *   bound 20% with that clip). Here the only limit is the real one: x_0 = 1 + ΣΔ must fit
 *   min(N, caps[0]). When the wanted slackness does not fit, every link keeps Δ = 1 and the
 *   rest of the budget goes, one unit at a time, to the link furthest (relatively) from its need.
 * - finally x_i <= caps[i] for every stage, keeping the counts non-increasing.
 */
export function adaptiveWarmup(model: PipelineModel, caps?: readonly number[]): number[] {
  const { stages: S, microbatches: N } = model;
  const capOf = (i: number) => Math.min(N, caps ? caps[i] : N);
  const want = Array.from({ length: S - 1 }, (_, i) => Math.max(MIN_ADAPTIVE_SLACKNESS, requiredSlackness(model, i)));
  const budget = capOf(0) - 1;
  let delta: number[];
  if (want.reduce((a, b) => a + b, 0) <= budget) {
    delta = want;
  } else {
    delta = new Array<number>(S - 1).fill(1);
    let left = budget - (S - 1);
    while (left > 0) {
      let pick = -1;
      let deficit = 0;
      for (let i = 0; i < S - 1; i++) {
        // Infinite want (zero-time downstream stage): treat as a very large finite need.
        const need = Number.isFinite(want[i]) ? want[i] : N;
        const d = (need - delta[i]) / need;
        if (d > deficit) {
          deficit = d;
          pick = i;
        }
      }
      if (pick < 0) break;
      delta[pick]++;
      left--;
    }
  }
  const warmup = new Array<number>(S);
  warmup[S - 1] = 1;
  for (let i = S - 2; i >= 0; i--) warmup[i] = warmup[i + 1] + delta[i];
  // Too few microbatches even for Δ = 1 (N < S), or a tighter cap further down: clip from the top.
  for (let i = 0; i < S; i++) warmup[i] = Math.max(1, Math.min(warmup[i], capOf(i), i > 0 ? warmup[i - 1] : N));
  return warmup;
}
