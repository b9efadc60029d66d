import { parseSchedule } from '../core/pipeline/schedule';
import { DelegationToggle, PublishedSchedule } from '../protocol/protocol-v1.type';
import { ReplicaPlan } from './emulated-job';

/** What each data-parallel replica runs under a published schedule. */
export function replicaPlans(schedule: PublishedSchedule, dp: number, stages: number, microbatches: number): ReplicaPlan[] {
  const delegation = new Map<number, DelegationToggle>(schedule.delegation.map((d) => [d.rank, d]));
  const plans: ReplicaPlan[] = [];
  for (let r = 0; r < dp; r++) {
    const pipeline = schedule.pipelines.find((p) => p.dpReplicas.includes(r));
    if (!pipeline) throw new Error(`schedule version ${schedule.version} has no pipeline for replica ${r}`);
    plans.push({ schedule: parseSchedule(pipeline.stages, stages, microbatches), delegation });
  }
  return plans;
}
