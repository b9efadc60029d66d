import { ControlConfig, DEFAULT_CONTROL_CONFIG } from '../core/control/control-config.type';
import { DelegationPlan, PipelineGroupPlan } from '../core/control/control-input.type';
import { delegationFor, initialPipelines, plannedPipelines, predictMs, replicaDelays } from '../core/control/pipeline-plans';
import { DelegationToggle } from '../protocol/protocol-v1.type';
import { EmulatedJob, IterationResult, ReplicaPlan } from './emulated-job';
import { controlInputOf, linkViewsAt } from './control-input-of';

export interface OracleOptions {
  deviceActivations?: number[];
  /** Evaluations of the search planner per plan (a count, so the oracle is the same on every machine). */
  searchEvaluations?: number;
  /** Points at which the oracle reads each link's delay over the coming iteration. */
  samplesPerIteration?: number;
  /** Planners it may use besides the initial plan (default both): without the search it shows what knowing the delays is worth to the daemon's default planner. */
  planners?: ReadonlyArray<'adaptive' | 'search'>;
}

/**
 * The yardstick for the control loop: a controller that knows every link's delay at every instant
 * and switches at once, with no detection, hysteresis, handshake or minimum gain. At each iteration
 * boundary it reads each link's mean delay over the coming iteration (the delay model sampled over
 * the last iteration's length), and runs the fastest of what the daemon's planners make for exactly
 * those delays: the initial plan, Alg. 2 and the search (with an evaluation budget), each with and
 * without delegation sized by the daemon's rule, priced with the ranks' transport. The distance
 * pipemorph -> oracle is what detection, hysteresis and the handshake cost.
 */
export function runOraclePolicy(job: EmulatedJob, iterations: number, options: OracleOptions = {}, config: ControlConfig = DEFAULT_CONTROL_CONFIG): IterationResult[] {
  const base = controlInputOf(job, options.deviceActivations);
  const initial = initialPipelines(base);
  const samples = Math.max(1, options.samplesPerIteration ?? 8);
  const search: ControlConfig = { ...config, planner: 'search', searchBudgetMs: 60_000, searchEvaluations: options.searchEvaluations ?? 150 };
  const planners = new Set(options.planners ?? ['adaptive', 'search']);
  const cache = new Map<string, { pipelines: PipelineGroupPlan[]; delegation: DelegationPlan[] }>();
  let lastMs = 0;
  const results: IterationResult[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = job.clockMs;
    const span = lastMs > 0 ? lastMs : 0;
    const meanDelay = (link: number) => {
      let sum = 0;
      for (let k = 0; k < samples; k++) sum += job.delays.delayMs(link, start + (span * k) / samples, i);
      return sum / samples;
    };
    const links = linkViewsAt(job, i, start, meanDelay);
    // Plans depend on the delays only through the planners; delays rounded to 0.1 ms share one.
    const key = links.map((l) => `${l.extraMs.toFixed(1)}${l.nicFailure ? '!' : ''}`).join(',');
    let best = cache.get(key);
    if (!best) {
      const input = { ...base, links };
      const { now } = replicaDelays(input);
      const stragglers = links.filter((l) => l.straggler);
      const delegation = delegationFor(input, stragglers, config.maxDelegateQueues);
      const nic = links.some((l) => l.nicFailure);
      const candidates: Array<{ pipelines: PipelineGroupPlan[]; delegation: DelegationPlan[] }> = [];
      for (const d of nic ? [delegation] : [[], delegation]) {
        candidates.push({ pipelines: initial, delegation: d });
        if (stragglers.length > 0) {
          if (planners.has('adaptive')) candidates.push({ pipelines: plannedPipelines(input, stragglers, now, initial, { ...config, planner: 'adaptive' }, d), delegation: d });
          if (planners.has('search')) candidates.push({ pipelines: plannedPipelines(input, stragglers, now, initial, search, d), delegation: d });
        }
      }
      let bestMs = Number.POSITIVE_INFINITY;
      for (const c of candidates) {
        const ms = predictMs(input, c.pipelines, now, c.delegation, config.transport);
        if (ms < bestMs) [best, bestMs] = [c, ms];
      }
      cache.set(key, best!);
    }
    const toggles = new Map<number, DelegationToggle>(best!.delegation.map((d) => [d.rank, d]));
    const plans: ReplicaPlan[] = Array.from({ length: job.dp }, (_, dp) => ({
      schedule: (best!.pipelines.find((p) => p.dpReplicas.includes(dp)) ?? best!.pipelines[0]).schedule,
      delegation: toggles,
    }));
    const result = job.runIteration(i, plans, new Array(job.dp * job.stages).fill(0));
    lastMs = result.iterationMs;
    results.push(result);
  }
  return results;
}
