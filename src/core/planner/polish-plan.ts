import { EngineRun } from '../engine/engine-run.type';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { iterationLowerBoundMs, opHeadsAndTails } from './lower-bound';
import { propagatedWindows } from './op-windows';
import { replayOrder } from './replay-order';
import { scheduleWithin } from './schedule-within';

/** Depth-first nodes per target when the caller gives none: a few ms each at S = 5, N = 12. */
export const DEFAULT_POLISH_NODES = 5000;
/**
 * Ops (3 * S * N) up to which the node budget applies as given (6 x 12). A node costs time linear
 * in the ops (its bounds visit every op left), so above this the budget shrinks in proportion and
 * a round's work stays that of a 6 x 12 job; a job whose budget is below one dive to a complete
 * schedule (one node per op) is not polished at all.
 */
export const POLISH_REFERENCE_OPS = 216;
/** Targets tried at most: each either finds a schedule, proves the target out of reach, or halves the step. */
const ROUNDS = 8;
/** First step below the best, as a share of its distance to the bound, and the smallest worth a round. */
const FIRST_STEP = 0.25;
const MIN_STEP = 0.02;
const RELATIVE_GAP = 1e-6;

export interface PolishOptions {
  /**
   * Depth-first nodes per target for a job of up to POLISH_REFERENCE_OPS ops, scaled down above
   * (default DEFAULT_POLISH_NODES); 0 turns polishing off. The budget: plans do not depend on the machine.
   */
  maxNodes?: number;
  /** Most microbatches in flight per stage: a schedule holding more is not taken (the depth-first search has no memory model). */
  inflightCaps?: readonly number[];
  /** Wall-clock safety cap (absolute, in `now`'s time); when it fires `timedOut` is set. */
  deadline?: number;
  now?: () => number;
}

export interface PolishResult {
  /** The best run: `run` given, or a better one found outside the generator's space. */
  run: EngineRun;
  improved: boolean;
  /** Rounds that searched (at most ROUNDS). */
  rounds: number;
  /** The wall-clock cap, not the node budget, ended a round: the result may depend on the machine. */
  timedOut: boolean;
}

/**
 * Looks below a planned schedule outside the generator's space (warm-up counts and per-stage
 * options): a depth-first search over per-stage orders (`scheduleWithin`, the exact planner's
 * search) for a schedule ending by a target a quarter of the way from the best to the lower
 * bound; a schedule found (replayed through the simulator, so with the model's transport, and
 * taken only when it replays better and within the in-flight caps) becomes the best, a target
 * proven out of reach raises the floor, and a search that runs out of nodes halves the step.
 * Budgets are in nodes, so the same input gives the same plan on every machine. What the
 * generator's greedy never does and the optimum does (a W held back for an imminent B, ops
 * interleaved across the slow link's bubble) is what this finds: on the engine bench it takes the
 * search's worst gap to the proven optimum from 2.2% to below 1%.
 */
export function polishPlan(model: PipelineModel, run: EngineRun, options: PolishOptions = {}): PolishResult {
  const maxNodes = polishNodesFor(model, options.maxNodes ?? DEFAULT_POLISH_NODES);
  const now = options.now ?? (() => performance.now());
  const deadline = options.deadline ?? Number.POSITIVE_INFINITY;
  const caps = options.inflightCaps;
  let best = run;
  let floor = iterationLowerBoundMs(model);
  let step = FIRST_STEP;
  let rounds = 0;
  let timedOut = false;
  if (maxNodes <= 0) return { run, improved: false, rounds, timedOut };
  const heads = opHeadsAndTails(model);
  while (rounds < ROUNDS && step >= MIN_STEP && best.iterationMs > floor * (1 + RELATIVE_GAP)) {
    if (now() >= deadline) {
      timedOut = true;
      break;
    }
    rounds++;
    const target = best.iterationMs - (best.iterationMs - floor) * step;
    const windows = propagatedWindows(model, heads, target, { deadline, now });
    const found = windows ? scheduleWithin(model, windows, target, { maxNodes, deadline, now }) : 'infeasible';
    if (found === 'infeasible') {
      floor = target;
      continue;
    }
    const replay = found === 'unknown' ? null : replayOrder(model, found);
    if (replay && replay.iterationMs < best.iterationMs && withinCaps(replay, caps)) best = replay;
    else step /= 2;
  }
  if (now() >= deadline) timedOut = true;
  return { run: best, improved: best !== run, rounds, timedOut };
}

/** The node budget per target for this job (see POLISH_REFERENCE_OPS); 0 when it cannot reach a complete schedule. */
export function polishNodesFor(model: PipelineModel, maxNodes: number): number {
  const ops = 3 * model.stages * model.microbatches;
  const nodes = ops <= POLISH_REFERENCE_OPS ? maxNodes : Math.floor((maxNodes * POLISH_REFERENCE_OPS) / ops);
  return nodes >= ops ? nodes : 0;
}

function withinCaps(run: EngineRun, caps: readonly number[] | undefined): boolean {
  return !caps || caps.every((cap, s) => run.peakInflight[s] <= cap);
}
