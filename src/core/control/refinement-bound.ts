import { iterationLowerBoundMs } from '../planner/lower-bound';
import { JobControlInput } from './control-input.type';
import { modelOf } from './pipeline-plans';

/**
 * Whether a refinement (the same decision with `control.refinePlanner`) could switch at all, after
 * a first phase that switched to nothing: it could only take a plan predicted at least `minGain`
 * faster than the better of what runs now and the first phase's candidate (`againstMs`), and no
 * schedule of any replica runs faster than that replica's lower bound under its delays now
 * (iterationLowerBoundMs: precedence and per-stage work, links without queueing, memory ignored);
 * the job ends with its slowest replica, and the all-reduce after it only adds. So when the bound
 * of the slowest replica is within `minGain` of `againstMs`, the refinement is known to find
 * nothing and is not run (issue 32: refinements were 81% of a replica's CPU at 10,000 ranks).
 * Pure; O(dp S N log N).
 */
export function refinementMayGain(input: JobControlInput, delays: number[][], againstMs: number, minGain: number): boolean {
  return refinementHeadroom(input, delays, againstMs, minGain) !== null;
}

/**
 * The most a refinement could gain per iteration, ms: `againstMs` less the slowest replica's lower
 * bound (refinementMayGain), or null when that is within `minGain` (it could switch to nothing).
 * Infinity when `againstMs` is not finite. The cost gate prices it (refinementMayPay): a gain the
 * gate would decline whatever plan the refinement finds is not searched for.
 */
export function refinementHeadroom(input: JobControlInput, delays: number[][], againstMs: number, minGain: number): number | null {
  if (!Number.isFinite(againstMs)) return Infinity;
  let bound = 0;
  for (const linkMs of delays) bound = Math.max(bound, iterationLowerBoundMs(modelOf(input, linkMs)));
  return bound < againstMs * (1 - minGain) ? againstMs - bound : null;
}
