import { simulateSchedule } from '../engine/simulator';
import { planPipeline } from '../planner/plan';
import { PlacementEvaluator } from '../topology/placement-evaluator';
import { searchPlacement } from '../topology/placement-search';
import { RemapProblem } from '../topology/remap-problem.type';
import { fixedScheduleFinish, stageFinishTimes } from '../topology/stage-finish';
import { NodeLink, StageFinishFn } from '../topology/topology.type';
import { ControlConfig, DEFAULT_REMAP_CONFIG } from './control-config.type';
import { ControlDecision } from './control-decision.type';
import { JobControlInput, PipelineGroupPlan, PipelineLinkView, TopologyView } from './control-input.type';
import { delegationFor, modelOf, plannedPipelines, replicaDelays } from './pipeline-plans';

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Healthy one-way time of each pipeline link: the median learned baseline over replicas (0 where none). */
export function healthyLinkMs(input: JobControlInput): number[] {
  return Array.from({ length: Math.max(0, input.stages - 1) }, (_, l) =>
    median(input.links.filter((v) => v.link === l && Number.isFinite(v.baselineMs)).map((v) => v.baselineMs)),
  );
}

/**
 * Slow node pairs (node = index into topology.rankAt) from every measured straggler. A slow link
 * between two localities is taken to be the boundary between them, so every pair across it is
 * slow, unless a measured link across the same boundary is healthy (under half the slow delay):
 * then only the measured pairs are. Pairs the fleet names slow (topology.fleetSlow: a bad NIC, a
 * slow uplink seen by other jobs) are slow too, unless this job measured that very pair healthy:
 * its own measurement is newer and closer than the fleet's.
 */
export function slowNodeLinks(input: JobControlInput, t: TopologyView): NodeLink[] {
  const nodeOf = new Map(t.rankAt.map((rank, node) => [rank, node]));
  const pairs = new Map<number, NodeLink>();
  const n = t.rankAt.length;
  const add = (a: number, b: number, extraMs: number) => {
    if (a === b || !(extraMs > 0)) return;
    const key = a < b ? a * n + b : b * n + a;
    const before = pairs.get(key);
    if (!before || before.extraMs < extraMs) pairs.set(key, { a: Math.min(a, b), b: Math.max(a, b), extraMs });
  };
  const boundary = new Map<string, { slowMs: number; fastestMs: number }>();
  const measured = [
    ...t.dataParallelLinks.map((l) => ({ from: l.fromRank, to: l.toRank, extraMs: l.extraMs, straggler: l.straggler })),
    ...input.links.map((l) => ({ from: l.upRank, to: l.downRank, extraMs: l.extraMs, straggler: l.straggler })),
  ];
  for (const { from, to, extraMs, straggler } of measured) {
    const a = nodeOf.get(from);
    const b = nodeOf.get(to);
    if (a === undefined || b === undefined) continue;
    if (straggler) add(a, b, extraMs);
    const la = t.localityOf.get(from);
    const lb = t.localityOf.get(to);
    if (la === undefined || lb === undefined || la === lb) continue;
    const key = la < lb ? `${la}\u0000${lb}` : `${lb}\u0000${la}`;
    const entry = boundary.get(key) ?? { slowMs: 0, fastestMs: Infinity };
    if (straggler) entry.slowMs = Math.max(entry.slowMs, extraMs);
    entry.fastestMs = Math.min(entry.fastestMs, extraMs);
    boundary.set(key, entry);
  }
  const members = new Map<string, number[]>();
  t.rankAt.forEach((rank, node) => {
    const l = t.localityOf.get(rank);
    if (l !== undefined) members.set(l, [...(members.get(l) ?? []), node]);
  });
  for (const [key, { slowMs, fastestMs }] of boundary) {
    if (!(slowMs > 0) || fastestMs < slowMs / 2) continue;
    const [la, lb] = key.split('\u0000');
    for (const a of members.get(la) ?? []) for (const b of members.get(lb) ?? []) add(a, b, slowMs);
  }
  if (t.fleetSlow && t.fleetSlow.length > 0) {
    const pairKey = (a: number, b: number) => (a < b ? a * n + b : b * n + a);
    const healthy = new Set<number>();
    for (const { from, to, straggler } of measured) {
      const a = nodeOf.get(from);
      const b = nodeOf.get(to);
      if (a !== undefined && b !== undefined && !straggler) healthy.add(pairKey(a, b));
    }
    for (const group of t.fleetSlow) {
      for (const from of group.from) {
        const a = nodeOf.get(from);
        if (a === undefined) continue;
        for (const to of group.to) {
          const b = nodeOf.get(to);
          if (b !== undefined && !healthy.has(pairKey(a, b))) add(a, b, group.extraMs);
        }
      }
    }
  }
  return [...pairs.values()];
}

/**
 * Whether to re-map the job's nodes away from slow data-parallel links (pure). Prices placements
 * with the engine: each replica's pipeline re-planned for the delays it would see (Alg. 2, the
 * slackness rule), each stage's ring all-reduce after its replicas finish, plus amortised
 * migration; re-maps only for a relative gain of at least remap.minGain over staying put (where
 * adaptation and delegation still run). The decision carries the new placement with the
 * schedule and delegation for the pipeline stragglers that remain, so ranks switch once.
 */
export function decideRemap(input: JobControlInput, config: ControlConfig, initial: PipelineGroupPlan[]): ControlDecision | null {
  const remap = config.remap ?? DEFAULT_REMAP_CONFIG;
  const t = input.topology;
  if (!remap.enabled || !t || !t.remapAllowed || !t.allReduce || input.dpSize < 2) return null;
  const dpStragglers = t.dataParallelLinks.filter((l) => l.straggler && l.extraMs > 0);
  if (dpStragglers.length === 0) return null;
  const S = input.stages;
  const base = healthyLinkMs(input);
  const initialSchedule = initial[0].schedule;
  const healthyModel = modelOf(input, base);
  const stageFinish: StageFinishFn = (extra) => {
    if (extra.every((ms) => ms === 0)) return stageFinishTimes(simulateSchedule(healthyModel, initialSchedule));
    const plan = planPipeline(modelOf(input, base.map((ms, l) => ms + extra[l])), { policy: 'adaptive', hostInflightCaps: input.hostCaps });
    return stageFinishTimes(plan.run);
  };
  const nodes = t.rankAt.length;
  const problem: RemapProblem = {
    stages: S,
    dpSize: input.dpSize,
    current: { dpSize: input.dpSize, stages: S, nodeAt: Int32Array.from({ length: nodes }, (_, i) => i), rings: t.rings.map((r) => Int32Array.from(r)) },
    slowLinks: slowNodeLinks(input, t),
    allReduce: t.allReduce,
    stageFinish,
    migrationMsPerNode: remap.migrationMsPerNode,
    amortizeIterations: remap.amortizeIterations,
  };
  const result = searchPlacement(problem, { timeBudgetMs: remap.searchBudgetMs });
  if (!result.changed || !(result.cost.objectiveMs < result.stay.objectiveMs * (1 - remap.minGain))) return null;

  // The pipeline links of the new layout, with the delays the slow pairs will put on them.
  const evaluator = new PlacementEvaluator(problem);
  const rankAt = Array.from(result.placement.nodeAt, (node) => t.rankAt[node]);
  const links: PipelineLinkView[] = [];
  for (let dp = 0; dp < input.dpSize; dp++) {
    const extras = evaluator.pipelineExtras(result.placement.nodeAt, dp);
    extras.forEach((extraMs, link) => {
      links.push({ dp, link, upRank: rankAt[dp * S + link], downRank: rankAt[dp * S + link + 1], baselineMs: base[link], extraMs, straggler: extraMs > 0, nicFailure: false });
    });
  }
  const after: JobControlInput = { ...input, links };
  const residual = links.filter((l) => l.straggler);
  const pipelines = plannedPipelines(after, residual, replicaDelays(after).now, initial, config);
  const delegation = delegationFor(after, residual, config.maxDelegateQueues);
  const staticMs = new PlacementEvaluator({ ...problem, stageFinish: fixedScheduleFinish(healthyModel, initialSchedule) }).evaluate(problem.current.nodeAt, problem.current.nodeAt, 0, false).cost.iterationMs;
  const movedRanks = result.movedNodes.map((node) => t.rankAt[node]).sort((a, b) => a - b);
  const worst = dpStragglers.reduce((a, b) => (b.extraMs > a.extraMs ? b : a));
  const slow = `${dpStragglers.length} data-parallel link${dpStragglers.length > 1 ? 's' : ''} slow (worst ${worst.fromRank}->${worst.toRank} +${worst.extraMs.toFixed(1)} ms)`;
  return {
    kind: 'remap',
    pipelines,
    delegation,
    links: residual.map(({ dp, link, upRank, downRank, extraMs }) => ({ dp, link, upRank, downRank, extraMs, nicFailure: false })),
    dataParallelLinks: dpStragglers.map(({ fromRank, toRank, extraMs }) => ({ fromRank, toRank, extraMs })),
    topology: {
      rankAt,
      rings: result.placement.rings.map((r) => Array.from(r)),
      movedRanks,
      stayMs: result.stay.iterationMs,
      newMs: result.cost.iterationMs,
      migrationMs: result.cost.migrationMs,
      search: { method: result.method, evaluations: result.evaluations, elapsedMs: result.elapsedMs },
    },
    predictedPreviousMs: result.stay.iterationMs,
    predictedNewMs: result.cost.iterationMs,
    predictedStaticMs: staticMs,
    reschedule: true,
    detail:
      `${slow}: re-mapped (${result.method}), ${movedRanks.length} ranks change stage, ` +
      `${residual.length} pipeline links left slow${delegation.length > 0 ? `, delegation on ${delegation.length} ranks` : ''}`,
  };
}
