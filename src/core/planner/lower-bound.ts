import { effectiveLinkDelayMs } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';

/**
 * A lower bound on any schedule's iteration time, for judging plan quality. For each stage i:
 * its first F cannot start before F_0 crossed the stages and links upstream (head_i); then it
 * needs N (f + b + w) of its own time; and after its last B, that gradient still has to cross
 * back to stage 0 and stage 0 must run that microbatch's B and W.
 */
export function iterationLowerBoundMs(model: PipelineModel): number {
  const { stages: S, microbatches: N, durations: d } = model;
  let bound = 0;
  let head = 0;
  for (let i = 0; i < S; i++) {
    let back = 0;
    for (let k = 0; k < i; k++) back += effectiveLinkDelayMs(model, k) + d[k * 3 + 1];
    const work = N * (d[i * 3] + d[i * 3 + 1] + d[i * 3 + 2]);
    const untilLastB = N * (d[i * 3] + d[i * 3 + 1]);
    const tail = i === 0 ? d[2] : back + d[2];
    bound = Math.max(bound, head + work, head + untilLastB + tail);
    head += d[i * 3] + (i < S - 1 ? effectiveLinkDelayMs(model, i) : 0);
  }
  return bound;
}
