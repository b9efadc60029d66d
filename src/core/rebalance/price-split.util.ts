import { InputError } from '../input-error';
import { RebalanceProblem } from './rebalance-problem.type';
import { SplitPrice } from './split-price.type';

/**
 * The predicted cost of running `split` (layers per stage) for `problem` (pure, O(layers)): the
 * estimated iteration time at the stages' speeds, the state moved from the split in force and its
 * handoff amortised over the straggler's expected remaining duration, and whether it fits in
 * memory. The one definition bestSplit optimises and its brute-force check compares against.
 */
export function priceSplit(problem: RebalanceProblem, split: readonly number[]): SplitPrice {
  const { layers, current, speed, microbatches: N } = problem;
  const L = layers.fMs.length;
  const S = current.length;
  if (split.length !== S || split.some((n) => !Number.isInteger(n) || n < 1) || split.reduce((a, b) => a + b, 0) !== L) {
    throw new InputError(`split [${split.join(', ')}] does not share ${L} layers out to ${S} stages`);
  }
  const stageMs: number[] = [];
  let fits = true;
  let moveBytes = 0;
  let first = 0;
  let currentFirst = 0;
  for (let s = 0; s < S; s++) {
    const last = first + split[s];
    const currentLast = currentFirst + current[s];
    let work = 0;
    let state = 0;
    let activations = 0;
    for (let l = first; l < last; l++) {
      work += layers.fMs[l] + layers.bMs[l] + layers.wMs[l];
      state += layers.stateBytes[l];
      activations += layers.activationBytes[l];
      if (l < currentFirst || l >= currentLast) moveBytes += layers.stateBytes[l];
    }
    stageMs.push(speed[s] * work);
    if (state + problem.minInflight[s] * activations > problem.deviceBytes[s]) fits = false;
    first = last;
    currentFirst = currentLast;
  }
  const bottleneckMs = Math.max(...stageMs);
  const estimateMs = stageMs.reduce((a, b) => a + b, 0) + (N - 1) * bottleneckMs;
  const moveMs = moveBytes > 0 ? moveBytes / problem.handoffBytesPerMs : 0;
  return { split: split.slice(), stageMs, bottleneckMs, estimateMs, moveBytes, moveMs, objectiveMs: estimateMs + moveMs / problem.amortizeIterations, fits };
}
