import { generateSchedule } from '../engine/generator';
import { simulateSchedule } from '../engine/simulator';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { Schedule } from '../pipeline/schedule.type';
import { initialWarmup } from '../planner/initial-planner';
import { MilpSolver } from '../planner/optimal-planner';
import { planPipeline, PlanRequest } from '../planner/plan';
import { stageFinishTimes } from '../topology/stage-finish';
import { AllReducePrice, allReduceOf, withAllReduceMs } from './all-reduce-pricing';
import { ControlConfig, DEFAULT_TRANSPORT_CONFIG, TransportConfig } from './control-config.type';
import { DelegationPlan, JobControlInput, PipelineGroupPlan, PipelineLinkView } from './control-input.type';
import { linkTransportOf, transportKey } from './link-transport';

/**
 * The plans of a job's replica groups and their price (pure): the planning model of a replica, the
 * link delays now and healthy, CPU delegation for straggling links, the initial plan, the planned
 * groups, and the iteration time a set of plans runs at. The control decision (job-controller.ts)
 * and the re-map decision (remap-decision.ts) both build on these; neither imports the other.
 */

/** The planning model of one replica; with `transport`, sends queue as the ranks' transport makes them (link-transport.ts). */
export function modelOf(input: JobControlInput, linkMs: number[], transport?: PipelineModel['transport']): PipelineModel {
  const { stages: S } = input;
  const durations = new Float64Array(S * 3);
  for (let i = 0; i < S; i++) {
    durations[i * 3] = input.fMs[i];
    durations[i * 3 + 1] = input.bMs[i];
    durations[i * 3 + 2] = input.wMs[i];
  }
  return {
    stages: S,
    microbatches: input.microbatches,
    durations,
    linkMs: Float64Array.from(linkMs),
    transferMs: new Float64Array(Math.max(0, S - 1)),
    memDelta: null,
    memLimit: null,
    ...(transport ? { transport } : {}),
  };
}

/** Per replica: one-way time of each pipeline link now (baseline + extra) and with the extra removed. */
export function replicaDelays(input: JobControlInput): { now: number[][]; healthy: number[][] } {
  const links = input.stages - 1;
  const now = Array.from({ length: input.dpSize }, () => new Array<number>(links).fill(0));
  const healthy = Array.from({ length: input.dpSize }, () => new Array<number>(links).fill(0));
  for (const view of input.links) {
    if (view.dp >= input.dpSize || view.link >= links) continue;
    const base = Number.isFinite(view.baselineMs) ? view.baselineMs : 0;
    now[view.dp][view.link] = base + (Number.isFinite(view.extraMs) ? view.extraMs : 0);
    healthy[view.dp][view.link] = base;
  }
  return { now, healthy };
}

function delegateQueues(sendMs: number, opMs: number, max: number): number {
  // The delegates must drain one message per op the stage produces (paper sec. 5.2).
  if (!(opMs > 0)) return max;
  return Math.max(1, Math.min(max, Math.ceil(sendMs / opMs - 1e-9)));
}

export function delegationFor(input: JobControlInput, stragglers: PipelineLinkView[], maxQueues: number): DelegationPlan[] {
  const byRank = new Map<number, DelegationPlan>();
  const raise = (rank: number, send: number, recv: number) => {
    const plan = byRank.get(rank) ?? { rank, sendQueues: 1, recvQueues: 1 };
    plan.sendQueues = Math.max(plan.sendQueues, send);
    plan.recvQueues = Math.max(plan.recvQueues, recv);
    byRank.set(rank, plan);
  };
  for (const view of stragglers) {
    const sendMs = (Number.isFinite(view.baselineMs) ? view.baselineMs : 0) + view.extraMs;
    const forward = delegateQueues(sendMs, input.fMs[view.link], maxQueues); // activations, produced once per F upstream
    const backward = delegateQueues(sendMs, input.bMs[view.link + 1], maxQueues); // gradients, once per B downstream
    raise(view.upRank, forward, backward);
    raise(view.downRank, backward, forward);
  }
  return [...byRank.values()].sort((a, b) => a.rank - b.rank);
}

/** A content key of one schedule: replicas running equal schedules under equal delays price equally. */
export function scheduleKey(schedule: Schedule): string {
  return schedule.map((stage) => stage.join(',')).join(';');
}

/**
 * Per stage, when all its replicas running `pipelines` with `delegation` under per-replica delays
 * have finished their last op, ms. Sends are priced with the ranks' transport: GPU-direct sends
 * block compute when `gpuSendsInFlight` are in flight, delegated links queue on their CPU queues,
 * delegating ranks pay the copy overhead. `simulated` (schedule, delays and transport -> stage
 * finish times) may be shared by the calls of one decision: healthy replicas run the same schedule
 * under every candidate plan and are simulated once.
 */
export function stageReadyMs(
  input: JobControlInput,
  pipelines: PipelineGroupPlan[],
  delays: number[][],
  delegation: readonly DelegationPlan[] = [],
  transport: TransportConfig = DEFAULT_TRANSPORT_CONFIG,
  simulated = new Map<string, Float64Array>(),
): Float64Array {
  const ready = new Float64Array(input.stages);
  for (const group of pipelines) {
    let groupKey: string | null = null;
    for (const dp of group.dpReplicas) {
      if (dp >= input.dpSize) continue;
      const links = linkTransportOf(input, dp, delegation, transport);
      groupKey ??= scheduleKey(group.schedule);
      const key = groupKey + '|' + delays[dp].join(',') + '|' + transportKey(links);
      let finish = simulated.get(key);
      if (finish === undefined) {
        finish = stageFinishTimes(simulateSchedule(modelOf(input, delays[dp], links), group.schedule));
        simulated.set(key, finish);
      }
      for (let p = 0; p < ready.length; p++) if (finish[p] > ready[p]) ready[p] = finish[p];
    }
  }
  return ready;
}

/**
 * Iteration time of a job running `pipelines` with `delegation` under per-replica delays: every
 * stage waits for its slowest replica (stageReadyMs), then, when the job has a data-parallel
 * all-reduce (dp > 1 and a `dataParallel` registration), runs its ring all-reduce priced with the
 * measured ring links of the layout in force (allReduceOf), and the iteration ends with the last
 * ring; without one, with the slowest replica's last op.
 */
export function predictMs(
  input: JobControlInput,
  pipelines: PipelineGroupPlan[],
  delays: number[][],
  delegation: readonly DelegationPlan[] = [],
  transport: TransportConfig = DEFAULT_TRANSPORT_CONFIG,
  simulated = new Map<string, Float64Array>(),
  allReduce: AllReducePrice | null = allReduceOf(input),
): number {
  return withAllReduceMs(stageReadyMs(input, pipelines, delays, delegation, transport, simulated), allReduce);
}

function maxDelays(delays: number[][], replicas: number[]): number[] {
  return delays[replicas[0]].map((_, i) => Math.max(...replicas.map((dp) => delays[dp][i])));
}

/**
 * Initial plans generated lately, by content: every decision of a job prices the initial plan, and
 * its inputs (stage times, device caps, learned baselines) rarely change between decisions.
 * Bounded; a decision on a worker thread keeps its own.
 */
const initialPlans = new Map<string, { warmup: number[]; schedule: Schedule }>();
const INITIAL_PLANS_KEPT = 32;

/** The initial plan (paper Alg. 1 within device memory) for all replicas, generated for the healthy delays. */
export function initialPipelines(input: JobControlInput): PipelineGroupPlan[] {
  const { healthy } = replicaDelays(input);
  const all = Array.from({ length: input.dpSize }, (_, dp) => dp);
  const delays = maxDelays(healthy, all);
  const key = [input.stages, input.microbatches, input.fMs, input.bMs, input.wMs, input.deviceCaps, delays].map(String).join('|');
  let plan = initialPlans.get(key);
  if (!plan) {
    const warmup = initialWarmup(input.stages, input.microbatches, input.deviceCaps);
    plan = { warmup, schedule: generateSchedule(modelOf(input, delays), { warmup }).order };
    if (initialPlans.size >= INITIAL_PLANS_KEPT) initialPlans.delete(initialPlans.keys().next().value!);
    initialPlans.set(key, plan);
  }
  // Copies: callers own what they are given.
  return [{ dpReplicas: all, warmup: plan.warmup.slice(), schedule: plan.schedule.map((stage) => stage.slice()) }];
}

/** Whether decisions under `config` can use the exact planner, so its caller should load the MILP solver. */
export function usesMilpSolver(config: ControlConfig): boolean {
  return config.planner === 'optimal' && (config.optimalMaxCells ?? 0) > 0;
}

/**
 * The planner request for one replica group: `optimal` only for jobs small enough to solve within
 * the control budget (stages x microbatches <= optimalMaxCells) and when the solver is loaded; the
 * search otherwise, which the MILP is warm-started from anyway.
 */
export function planRequestFor(model: PipelineModel, input: JobControlInput, config: ControlConfig, solver?: MilpSolver): PlanRequest {
  const search = { timeBudgetMs: config.searchBudgetMs, ...(config.searchEvaluations ? { maxEvaluations: config.searchEvaluations } : {}) };
  // Without host memory to offload to, activations stay on the device: the device caps bound every plan.
  const base = { hostInflightCaps: config.hostMemory === false ? input.deviceCaps : input.hostCaps, search };
  if (config.planner !== 'optimal') return { ...base, policy: config.planner };
  const small = model.stages * model.microbatches <= (config.optimalMaxCells ?? 0);
  if (!small || !solver) return { ...base, policy: 'search' };
  return { ...base, policy: 'optimal', optimal: { solver, timeLimitMs: config.optimalTimeLimitMs } };
}

/** Replicas with the same straggling links share one plan, made for the worst delays among them; the others keep the initial plan. */
export function plannedPipelines(
  input: JobControlInput,
  stragglers: PipelineLinkView[],
  now: number[][],
  initial: PipelineGroupPlan[],
  config: ControlConfig,
  delegation?: readonly DelegationPlan[],
  solver?: MilpSolver,
): PipelineGroupPlan[] {
  const groups = new Map<string, number[]>();
  for (let dp = 0; dp < input.dpSize; dp++) {
    const key = stragglers.filter((l) => l.dp === dp).map((l) => l.link).sort((a, b) => a - b).join(',');
    groups.set(key, [...(groups.get(key) ?? []), dp]);
  }
  const planned: PipelineGroupPlan[] = [];
  for (const [key, replicas] of groups) {
    if (key === '') {
      planned.push({ ...initial[0], dpReplicas: replicas });
      continue;
    }
    // Replicas of a group straggle on the same links, so one replica's transport stands for all.
    const transport = delegation ? linkTransportOf(input, replicas[0], delegation, config.transport ?? DEFAULT_TRANSPORT_CONFIG) : undefined;
    const model = modelOf(input, maxDelays(now, replicas), transport);
    const plan = planPipeline(model, planRequestFor(model, input, config, solver));
    planned.push({ dpReplicas: replicas, warmup: plan.warmup, schedule: plan.run.order });
  }
  return planned;
}
