import { iterationLowerBoundMs } from '../planner/lower-bound';
import { JobControlInput } from './control-input.type';
import { modelOf } from './pipeline-plans';

/**
 * The most a refinement (the same decision with `control.refinePlanner`, after a first phase that
 * switched to nothing) could gain per iteration, ms, or null when it could switch to nothing. It
 * could only take a plan predicted at least `minGain` faster than the better of what runs now and
 * the first phase's candidate (`againstMs`), and no schedule of any replica runs faster than that
 * replica's lower bound under its delays now (iterationLowerBoundMs: precedence and per-stage work,
 * links without queueing, memory ignored); the job ends with its slowest replica, and the
 * all-reduce after it only adds. So the headroom is `againstMs` less the slowest replica's bound,
 * null when that is within `minGain`, and Infinity when `againstMs` is not finite. The cost gate
 * prices it (refinementMayPay): a gain the gate would decline whatever plan the refinement finds
 * is not searched for (issue 32: refinements were 81% of a replica's CPU at 10,000 ranks).
 * Pure; O(dp S N log N).
 */
export function refinementHeadroom(input: JobControlInput, delays: number[][], againstMs: number, minGain: number): number | null {
  if (!Number.isFinite(againstMs)) return Infinity;
  let bound = 0;
  for (const linkMs of delays) bound = Math.max(bound, iterationLowerBoundMs(modelOf(input, linkMs)));
  return bound < againstMs * (1 - minGain) ? againstMs - bound : null;
}
