import { EngineRun } from '../engine/engine-run.type';
import { simulateSchedule } from '../engine/simulator';
import { InputError } from '../input-error';
import { PipelineModel } from '../pipeline/pipeline-model.type';

/**
 * A per-stage order found outside the generator (the depth-first search, the MILP), replayed
 * through the simulator: the truth about it, with the model's transport. Null when it does not
 * replay (within the solver's tolerances an order of ops of zero length can come out cyclic).
 */
export function replayOrder(model: PipelineModel, schedule: Int32Array[]): EngineRun | null {
  try {
    return simulateSchedule(model, schedule);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    return null;
  }
}
