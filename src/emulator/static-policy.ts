import { DEFAULT_CONTROL_CONFIG } from '../core/control/control-config.type';
import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { planPipeline } from '../core/planner/plan';
import { DelegationToggle } from '../protocol/protocol-v1.type';
import { EmulatedJob, IterationResult, ReplicaPlan } from './emulated-job';

export type StaticPolicy = 'zb-static' | '1f1b-static' | 'delegation-only';

/**
 * Baselines without the daemon: the ZeroBubble or 1F1B schedule planned for the healthy job and
 * never changed; or the ZeroBubble schedule with CPU delegation switched on, at each iteration
 * boundary, on both ends of every link whose delay exceeds the threshold (an oracle for the
 * toggles alone: no re-scheduling).
 */
export function runStaticPolicy(job: EmulatedJob, policy: StaticPolicy, iterations: number, delegationThresholdMs = 5): IterationResult[] {
  const healthy = toPipelineModel(job.profile);
  const plan = planPipeline(healthy, { policy: policy === '1f1b-static' ? '1f1b' : 'initial' });
  const S = job.stages;
  const results: IterationResult[] = [];
  for (let i = 0; i < iterations; i++) {
    const delegation = new Map<number, DelegationToggle>();
    if (policy === 'delegation-only') {
      for (let link = 0; link < S - 1; link++) {
        const delay = job.delays.delayMs(link, job.clockMs, i);
        if (delay <= delegationThresholdMs && !job.delays.nicFailed(link, i)) continue;
        const sendMs = job.profile.linkMs[link] + delay;
        const queues = Math.max(1, Math.min(DEFAULT_CONTROL_CONFIG.maxDelegateQueues, Math.ceil(sendMs / Math.max(1e-9, Math.min(job.profile.fMs[link], job.profile.bMs[link + 1])))));
        for (let dp = 0; dp < job.dp; dp++) {
          for (const rank of [job.rankOf(dp, link), job.rankOf(dp, link + 1)]) delegation.set(rank, { rank, sendQueues: queues, recvQueues: queues });
        }
      }
    }
    const plans: ReplicaPlan[] = Array.from({ length: job.dp }, () => ({ schedule: plan.run.order, delegation }));
    results.push(job.runIteration(i, plans, new Array(job.dp * S).fill(0)));
  }
  return results;
}
