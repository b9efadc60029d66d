import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { planPipeline } from '../core/planner/plan';
import { RemapResult, RemapSearchOptions, searchPlacement } from '../core/topology/placement-search';
import { fixedScheduleFinish } from '../core/topology/stage-finish';
import { topologyFromPlacement } from '../core/topology/topology-from-placement';
import { TopologyAssignment } from '../protocol/protocol-v1.type';
import { EmulatedJob, IterationResult, ReplicaPlan } from './emulated-job';
import { slowPairs } from './fabric/static-fabric';

export interface FalconOptions {
  /** Iterations between the first slow iteration and the re-mapping taking effect (the daemon's hysteresis: 3). */
  detectionIterations?: number;
  /** Iterations the search amortises a move over. */
  amortizeIterations?: number;
  search?: RemapSearchOptions;
}

export interface FalconRun {
  results: IterationResult[];
  /** The one re-mapping, or null when none happened (no slow link, or staying was best). */
  remap: { effectiveIteration: number; search: RemapResult; topology: TopologyAssignment } | null;
}

/**
 * Falcon's remedy alone (paper sec. 7.3, Fig. 19): move slow links out of the data-parallel rings
 * onto pipeline edges, and do nothing about the pipeline straggler that leaves. An oracle on the
 * job's fabric: it sees the slow node pairs from their first iteration and, `detectionIterations`
 * later, re-maps once with the core placement search priced with the static ZeroBubble schedule
 * (fixedScheduleFinish: no re-planning, no delegation). The static ZeroBubble schedule planned for
 * the healthy job runs throughout; the moved ranks pay the job's migrationMs once. The search's
 * per-node migration cost is the job's migrationMs (an upper bound: moved ranks load in parallel).
 */
export function runFalconPolicy(job: EmulatedJob, iterations: number, options: FalconOptions = {}): FalconRun {
  const detection = options.detectionIterations ?? 3;
  const healthy = toPipelineModel(job.profile);
  const plan = planPipeline(healthy, { policy: 'initial' });
  const nodes = job.dp * job.stages;
  const plans: ReplicaPlan[] = Array.from({ length: job.dp }, () => ({ schedule: plan.run.order, delegation: new Map() }));
  const results: IterationResult[] = [];
  let onset: number | null = null;
  let remap: FalconRun['remap'] = null;
  let done = false;
  for (let i = 0; i < iterations; i++) {
    if (!done && job.fabric) {
      const slow = slowPairs(job.fabric, nodes, i);
      if (onset === null && slow.length > 0) onset = i;
      if (onset !== null && i >= onset + detection) {
        done = true;
        const search = searchPlacement(
          {
            stages: job.stages,
            dpSize: job.dp,
            current: job.placement(),
            slowLinks: slow,
            allReduce: job.allReduce,
            stageFinish: fixedScheduleFinish(healthy, plan.run.order),
            migrationMsPerNode: job.migrationMs,
            amortizeIterations: options.amortizeIterations ?? 100,
          },
          options.search,
        );
        if (search.changed) {
          // No daemon, no schedule versions: the static schedule stands for version 1.
          const topology = topologyFromPlacement(search.placement, job.topologyVersion + 1, 1, search.movedNodes);
          job.applyTopology(topology);
          remap = { effectiveIteration: i, search, topology };
        }
      }
    }
    results.push(job.runIteration(i, plans, new Array(nodes).fill(0)));
  }
  return { results, remap };
}
