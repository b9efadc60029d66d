import { ControlDecision } from '../../core/control/control-decision.type';
import { formatSchedule } from '../../core/pipeline/schedule';
import { topologyFromPlacement } from '../../core/topology/topology-from-placement';
import { PublishedSchedule, TopologyAssignment } from '../../protocol/protocol-v1.type';
import { JobRuntime } from '../jobs/job-runtime';

/** The wire form of a decision (schemas/schedule.v1.schema.json), pure: the publisher and `pipemorph replay` build schedules alike. */
export function publishedScheduleOf(
  job: JobRuntime,
  decision: ControlDecision,
  at: { version: number; state: PublishedSchedule['state']; effectiveIteration: number; now: number; traceId: string },
): PublishedSchedule {
  return {
    protocol: 1,
    jobId: job.jobId,
    version: at.version,
    epoch: job.epoch,
    state: at.state,
    effectiveIteration: at.effectiveIteration,
    createdAt: at.now,
    pipelines: decision.pipelines.map((p) => ({ dpReplicas: p.dpReplicas, warmup: p.warmup, stages: formatSchedule(p.schedule) })),
    delegation: decision.delegation,
    reason: {
      kind: decision.kind,
      links: [
        ...decision.links.map((l) => ({
          kind: 'pipeline' as const, fromRank: l.upRank, toRank: l.downRank, dp: l.dp, link: l.link, extraMs: l.extraMs, error: l.nicFailure ? 'nic-failure' : null,
        })),
        ...(decision.dataParallelLinks ?? []).map((l) => ({ kind: 'data-parallel' as const, fromRank: l.fromRank, toRank: l.toRank, extraMs: l.extraMs, error: null })),
      ],
      detail: decision.detail,
    },
    prediction: { previousMs: decision.predictedPreviousMs, newMs: decision.predictedNewMs, staticMs: decision.predictedStaticMs },
    traceId: at.traceId,
    ...topologyOf(job, decision, at.version),
    ...layersOf(job, decision, at.version),
  };
}

/**
 * The split of the layers a schedule runs (docs/rebalancing.md): a new split version for a
 * re-balance, else the one in force carried over (absent while the registered split runs).
 */
function layersOf(job: JobRuntime, decision: ControlDecision, version: number): { layers?: NonNullable<PublishedSchedule['layers']> } {
  const inForce = job.committed?.layers;
  const change = decision.layers;
  if (!change) return inForce ? { layers: { ...inForce, moves: [] } } : {};
  return { layers: { version: (inForce?.version ?? 0) + 1, sinceVersion: version, perStage: change.perStage, moves: change.moves } };
}

/**
 * The layout a schedule runs on: a new topology version for a re-map (every rank of the job,
 * TP ranks following their node's reporting rank), else the one in force carried over.
 */
function topologyOf(job: JobRuntime, decision: ControlDecision, version: number): { topology?: TopologyAssignment } {
  const inForce = job.layout.inForce;
  const change = decision.topology;
  if (!change) return inForce ? { topology: { ...inForce, moved: [] } } : {};
  const reportingRankOf = new Map(job.spec.ranks.filter((r) => r.tp === 0).map((r) => [r.node, r.rank]));
  const previousPp = new Map((inForce?.ranks ?? job.spec.ranks).map((r) => [r.rank, r.pp]));
  const members = job.spec.ranks.map((r) => ({ rank: r.rank, placedAs: reportingRankOf.get(r.node) ?? r.rank }));
  const placement = { stages: job.spec.stages, nodeAt: change.rankAt, rings: change.rings };
  return { topology: topologyFromPlacement(placement, (inForce?.version ?? 0) + 1, version, previousPp, members) };
}
