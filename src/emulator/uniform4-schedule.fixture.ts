import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { formatSchedule, warmupOf } from '../core/pipeline/schedule';
import { planPipeline } from '../core/planner/plan';
import { PublishedSchedule, TopologyAssignment } from '../protocol/protocol-v1.type';
import { uniform4 } from './scenarios';

const zb = planPipeline(toPipelineModel(uniform4()), { policy: 'initial' }).run.order;

/** For the emulator's specs: a committed ZeroBubble schedule of job 'j' on the 4-stage profile, for replicas `dpReplicas`. */
export function uniform4Schedule(version: number, effectiveIteration: number, dpReplicas: number[], topology?: TopologyAssignment): PublishedSchedule {
  return {
    protocol: 1,
    jobId: 'j',
    version,
    epoch: 1,
    state: 'committed',
    effectiveIteration,
    createdAt: 0,
    pipelines: [{ dpReplicas, warmup: warmupOf(zb), stages: formatSchedule(zb) }],
    delegation: [],
    reason: { kind: topology ? 'remap' : 'initial', links: [], detail: '' },
    prediction: { previousMs: null, newMs: 390 },
    ...(topology ? { topology } : {}),
  };
}
