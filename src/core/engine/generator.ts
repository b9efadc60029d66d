import { simulateSchedule } from './simulator';
import { InputError } from '../input-error';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { EngineRun } from './engine-run.type';
import { GreedyPolicy, LookAhead, runGreedy, WPlacement } from './engine';

export interface GenerateOptions {
  /** Warm-up forward count x_i per stage: integers in 1..N, non-increasing (Lemma 1). */
  warmup: readonly number[];
  /** Most microbatches in flight per stage; defaults to the warm-up count (the simple memory cap). */
  inflightCap?: readonly number[];
  /** W placement, one for all stages or one per stage; defaults to Lazy (B > F > W, paper Alg. 3). */
  wPlacement?: WPlacement | readonly WPlacement[];
  /**
   * Look-ahead after the warm-up, one for all stages or one per stage; defaults to None (the
   * greedy of Alg. 3). With it a stage waits for a B that is about to become ready rather than
   * start a W (or F) that would delay it. Ignored on stages with a memory limit (host memory only).
   */
  lookAhead?: LookAhead | readonly LookAhead[];
}

export function validateWarmup(warmup: readonly number[], stages: number, microbatches: number): void {
  if (warmup.length !== stages) throw new InputError(`warm-up counts must have ${stages} entries (one per stage), got ${warmup.length}`);
  warmup.forEach((x, i) => {
    if (!Number.isInteger(x) || x < 1 || x > microbatches) {
      throw new InputError(`warm-up count of stage ${i} must be an integer from 1 to ${microbatches} (the microbatches), got ${x}`);
    }
    if (i > 0 && x > warmup[i - 1]) {
      throw new InputError(`warm-up counts must not increase from stage to stage (Lemma 1), but stage ${i} has ${x} > ${warmup[i - 1]}`);
    }
  });
}

/**
 * Greedy schedule generation (paper Alg. 3 and 4), exact and event-driven: each stage runs its
 * x_i warm-up forwards, then picks B > F > W (per its W placement) among ready ops, within
 * the in-flight cap and the model's memory limits. The returned run is also the schedule's timing.
 */
export function generateSchedule(model: PipelineModel, options: GenerateOptions): EngineRun {
  const { stages, microbatches } = model;
  validateWarmup(options.warmup, stages, microbatches);
  const inflightCap = options.inflightCap ?? options.warmup;
  if (inflightCap.length !== stages) throw new InputError(`in-flight caps must have ${stages} entries, got ${inflightCap.length}`);
  inflightCap.forEach((cap, i) => {
    if (!(cap >= options.warmup[i])) throw new InputError(`in-flight cap of stage ${i} (${cap}) is below its warm-up count (${options.warmup[i]})`);
  });
  const placement = options.wPlacement ?? WPlacement.Lazy;
  const lookAhead = options.lookAhead ?? LookAhead.None;
  if (typeof lookAhead !== 'number' && lookAhead.length !== stages) throw new InputError(`look-ahead must have ${stages} entries, got ${lookAhead.length}`);
  const policy: GreedyPolicy = {
    warmup: options.warmup,
    inflightCap,
    wPlacement: typeof placement === 'number' ? new Array<WPlacement>(stages).fill(placement) : placement,
    lookAhead: typeof lookAhead === 'number' ? new Array<LookAhead>(stages).fill(lookAhead) : lookAhead,
  };
  const run = runGreedy(model, policy);
  if ((typeof lookAhead === 'number' ? [lookAhead] : Array.from(lookAhead)).every((l) => l === LookAhead.None)) return run;
  // A stage that idled for an arrival may then start an op that was ready before it idled (ties
  // among near-zero-length ops, found by the replay property): the ranks run the order as soon as
  // they can, so the order's timing is its replay, never later than the greedy's own.
  return simulateSchedule(model, run.order);
}
