import { EngineRun } from '../engine/engine-run.type';
import { simulateSchedule } from '../engine/simulator';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { Schedule } from '../pipeline/schedule.type';
import { StageFinishFn } from './topology.type';

/** When each stage finished its last op in a run, ms from the iteration start. */
export function stageFinishTimes(run: EngineRun): Float64Array {
  const perStage = 3 * run.microbatches;
  const out = new Float64Array(run.stages);
  for (let s = 0; s < run.stages; s++) {
    let end = 0;
    for (let k = s * perStage; k < (s + 1) * perStage; k++) if (run.end[k] > end) end = run.end[k];
    out[s] = end;
  }
  return out;
}

/** A replica that keeps running `schedule` whatever its links do (no re-planning: Falcon's remap alone). */
export function fixedScheduleFinish(model: PipelineModel, schedule: Schedule): StageFinishFn {
  return (extraMs) => {
    const linkMs = model.linkMs.map((ms, l) => ms + extraMs[l]);
    return stageFinishTimes(simulateSchedule({ ...model, linkMs }, schedule));
  };
}
