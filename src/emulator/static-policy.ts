import { DEFAULT_CONTROL_CONFIG } from '../core/control/control-config.type';
import { delegationFor, initialPipelines } from '../core/control/pipeline-plans';
import { planPipeline } from '../core/planner/plan';
import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { DelegationToggle } from '../protocol/protocol-v1.type';
import { EmulatedJob, IterationResult, ReplicaPlan } from './emulated-job';
import { controlInputOf, linkViewsAt } from './control-input-of';

export type StaticPolicy = 'zb-static' | '1f1b-static' | 'delegation-only';

export interface StaticPolicyOptions {
  /**
   * Device memory per stage, in activations: what the daemon is registered with. Baselines get the
   * same as the daemon, or the comparison measures memory, not control. Default: the profile's
   * memory model when it has one, else unlimited (N).
   */
  deviceActivations?: number[];
  /** Extra delay above which delegation-only turns delegates on, ms (the daemon's detection.delegationThresholdMs). */
  delegationThresholdMs?: number;
}

/**
 * Baselines without the daemon: the ZeroBubble schedule the daemon starts every job with (Alg. 1
 * within device memory, `initialPipelines`), or 1F1B, never changed (GPU-direct sends); or that
 * ZeroBubble schedule with CPU delegation switched on, at each iteration boundary, on both ends of
 * every link whose delay exceeds the threshold, with the daemon's own queue sizing (`delegationFor`):
 * an oracle for the toggles alone, no re-scheduling.
 */
export function runStaticPolicy(job: EmulatedJob, policy: StaticPolicy, iterations: number, options: StaticPolicyOptions = {}): IterationResult[] {
  const input = controlInputOf(job, options.deviceActivations);
  const schedule = policy === '1f1b-static' ? planPipeline(toPipelineModel(job.profile), { policy: '1f1b' }).run.order : initialPipelines(input)[0].schedule;
  const threshold = options.delegationThresholdMs ?? 5;
  const S = job.stages;
  const results: IterationResult[] = [];
  for (let i = 0; i < iterations; i++) {
    const delegation = new Map<number, DelegationToggle>();
    if (policy === 'delegation-only') {
      const links = linkViewsAt(job, i, job.clockMs).map((l) => ({ ...l, straggler: l.extraMs > threshold || l.nicFailure }));
      for (const d of delegationFor({ ...input, links }, links.filter((l) => l.straggler), DEFAULT_CONTROL_CONFIG.maxDelegateQueues)) delegation.set(d.rank, d);
    }
    const plans: ReplicaPlan[] = Array.from({ length: job.dp }, () => ({ schedule, delegation }));
    results.push(job.runIteration(i, plans, new Array(job.dp * S).fill(0)));
  }
  return results;
}
