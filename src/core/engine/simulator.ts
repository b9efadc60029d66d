import { PipelineModel } from '../pipeline/pipeline-model.type';
import { Schedule } from '../pipeline/schedule.type';
import { EngineRun } from './engine-run.type';
import { runReplay } from './engine';

/**
 * Replays a fixed per-stage order under the model's times, delays and bandwidths: each op starts
 * as soon as its stage is free and its inputs have arrived. Memory is measured, not enforced.
 * Throws InputError naming the stuck ops when the order deadlocks.
 */
export function simulateSchedule(model: PipelineModel, schedule: Schedule): EngineRun {
  return runReplay(model, schedule);
}
