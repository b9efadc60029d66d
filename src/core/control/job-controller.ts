import { generateSchedule } from '../engine/generator';
import { InputError } from '../input-error';
import { simulateSchedule } from '../engine/simulator';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { Schedule } from '../pipeline/schedule.type';
import { initialWarmup } from '../planner/initial-planner';
import { MilpSolver } from '../planner/optimal-planner';
import { planPipeline, PlanRequest } from '../planner/plan';
import { ControlConfig, DEFAULT_TRANSPORT_CONFIG, TransportConfig } from './control-config.type';
import { ControlDecision, ControlOutcome, DecisionKind } from './control-decision.type';
import { decideRemap } from './remap-decision';
import { DelegationPlan, JobControlInput, PipelineGroupPlan, PipelineLinkView } from './control-input.type';
import { linkTransportOf, transportKey } from './link-transport';
import { allReduceOf, AllReducePrice, withAllReduceMs } from './all-reduce-pricing';
import { stageFinishTimes } from '../topology/stage-finish';

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

/**
 * Whether the delegation in force already serves what is needed: every rank that needs delegates
 * has them, with at least as many queues. Queue counts only grow while stragglers last, so a
 * healing link (its delay falling before its hysteresis lets go) does not cause a new version.
 */
function delegationCovers(current: DelegationPlan[], needed: DelegationPlan[]): boolean {
  const byRank = new Map(current.map((d) => [d.rank, d]));
  return needed.every((d) => {
    const have = byRank.get(d.rank);
    return have !== undefined && have.sendQueues >= d.sendQueues && have.recvQueues >= d.recvQueues;
  });
}

function warmupOfReplica(pipelines: PipelineGroupPlan[], dp: number): number[] | undefined {
  return pipelines.find((p) => p.dpReplicas.includes(dp))?.warmup;
}

/** Same warm-up counts for every replica: op lists derived from equal counts differ only by delay-driven reordering, not worth a switch. */
function sameWarmups(a: PipelineGroupPlan[], b: PipelineGroupPlan[], dpSize: number): boolean {
  for (let dp = 0; dp < dpSize; dp++) {
    const x = warmupOfReplica(a, dp);
    const y = warmupOfReplica(b, dp);
    if (!x || !y || x.length !== y.length || x.some((v, i) => v !== y[i])) return false;
  }
  return true;
}

/** Same op order for every replica. */
function sameSchedules(a: PipelineGroupPlan[], b: PipelineGroupPlan[], dpSize: number): boolean {
  for (let dp = 0; dp < dpSize; dp++) {
    const x = a.find((p) => p.dpReplicas.includes(dp))?.schedule;
    const y = b.find((p) => p.dpReplicas.includes(dp))?.schedule;
    if (!x || !y || scheduleKey(x) !== scheduleKey(y)) return false;
  }
  return true;
}

/**
 * Whether a planned switch would change nothing that counts. Alg. 1 and 2 choose warm-up counts
 * and leave the op order to the generator's greedy, whose order moves with every measured delay:
 * for them equal counts are the same plan. The search and the exact planner choose the order
 * itself (a W held back for an imminent B, ops interleaved across a bubble), and a new order
 * with the same counts can be worth the switch (the gain threshold still applies).
 */
function samePlan(a: PipelineGroupPlan[], b: PipelineGroupPlan[], dpSize: number, planner: ControlConfig['planner']): boolean {
  return planner === 'search' || planner === 'optimal' ? sameSchedules(a, b, dpSize) : sameWarmups(a, b, dpSize);
}

/** A content key of one schedule: replicas running equal schedules under equal delays price equally. */
function scheduleKey(schedule: Schedule): string {
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

/**
 * The control decision for one job (pure): what should run now, and whether that is worth
 * publishing. Every prediction prices sends with the ranks' transport (`config.transport`), so
 * slackness and delegation are chosen together, and ends with the data-parallel ring all-reduce
 * when the job has one (predictMs), slow ring links included. With stragglers: CPU delegation on both ends of
 * each straggling pipeline link, queues sized to keep up with production, and replicas grouped by
 * their straggling links re-planned (Alg. 2 or search, memory relaxed to the host) when the
 * simulator predicts a gain of at least `minGain` over keeping the schedule with delegation. A
 * job without delegates yet stays on GPU-direct sends when a plan without delegation is predicted
 * faster by `minGain` (a mild straggler whose copy overhead would cost more than its blocking).
 * Without stragglers: back to the initial plan, delegation off.
 * `decision` is null when what runs now is already right; the predictions are always given.
 */
export function decideControl(input: JobControlInput, config: ControlConfig, solver?: MilpSolver): ControlOutcome {
  const S = input.stages;
  // A model with missing stage times would make the generator wait for ops that never come.
  if (![input.fMs, input.bMs, input.wMs, input.deviceCaps, input.hostCaps].every((a) => a.length === S)) {
    throw new InputError(`control input: ${S} stages need ${S} stage times and memory caps each`);
  }
  const transport = config.transport ?? DEFAULT_TRANSPORT_CONFIG;
  const { now } = replicaDelays(input);
  const initial = initialPipelines(input);
  // The same replica schedule is often priced several times in one decision (the schedule in force
  // is the initial plan, healthy replicas keep it in every candidate): each simulation is simulated once.
  const simulated = new Map<string, Float64Array>();
  // The all-reduce after the pipelines is the same for every candidate: priced once.
  const allReduce = allReduceOf(input);
  const predict = (pipelines: PipelineGroupPlan[], delegation: readonly DelegationPlan[]): number => predictMs(input, pipelines, now, delegation, transport, simulated, allReduce);
  const predictedStaticMs = predict(initial, []);
  const stragglers = input.links.filter((l) => l.straggler && l.dp < input.dpSize && l.link < input.stages - 1);
  const reasonLinks = stragglers.map(({ dp, link, upRank, downRank, extraMs, nicFailure }) => ({ dp, link, upRank, downRank, extraMs, nicFailure }));

  if (!input.current) {
    const decision: ControlDecision = {
      kind: 'initial', pipelines: initial, delegation: [], links: [], predictedPreviousMs: null,
      predictedNewMs: predictedStaticMs, predictedStaticMs, reschedule: true, detail: 'initial plan (Alg. 1, device memory)',
    };
    return { decision, predictedCurrentMs: null, predictedStaticMs };
  }
  const current = input.current;
  const predictedPreviousMs = predict(current.pipelines, current.delegation);
  const outcome = (decision: ControlDecision | null): ControlOutcome => ({ decision, predictedCurrentMs: predictedPreviousMs, predictedStaticMs });
  // A slow data-parallel link costs far more than a slow pipeline link: re-mapping comes first.
  const remap = decideRemap(input, config, initial);
  if (remap) return outcome(remap);

  if (stragglers.length === 0) {
    if (current.delegation.length === 0 && sameWarmups(current.pipelines, initial, input.dpSize)) return outcome(null);
    return outcome({
      kind: 'recovery', pipelines: initial, delegation: [], links: [], predictedPreviousMs,
      predictedNewMs: predictedStaticMs, predictedStaticMs, reschedule: !sameWarmups(current.pipelines, initial, input.dpSize),
      detail: 'all links healthy: initial plan, delegation off',
    });
  }

  const kind: DecisionKind = stragglers.some((l) => l.nicFailure) ? 'nic-failure' : 'straggler';
  const describe = reasonLinks.map((l) => `dp ${l.dp} link ${l.link} +${l.extraMs.toFixed(1)} ms${l.nicFailure ? ' (NIC failure)' : ''}`).join(', ');
  const needed = delegationFor(input, stragglers, config.maxDelegateQueues);
  // Keep delegates that are still running where they are still needed, with the larger queue count.
  const delegation = needed.map((d) => {
    const have = current.delegation.find((c) => c.rank === d.rank);
    return have ? { rank: d.rank, sendQueues: Math.max(d.sendQueues, have.sendQueues), recvQueues: Math.max(d.recvQueues, have.recvQueues) } : d;
  });
  const keptMs = predict(current.pipelines, delegation);
  const planned = plannedPipelines(input, stragglers, now, initial, config, delegation, solver);
  const plannedMs = predict(planned, delegation);
  const worthIt = plannedMs < keptMs * (1 - config.minGain) && !samePlan(current.pipelines, planned, input.dpSize, config.planner);
  const delegatedMs = worthIt ? plannedMs : keptMs;

  // A NIC failure leaves only the delegated path, and delegates already running stay while stragglers last.
  if (kind === 'straggler' && current.delegation.length === 0) {
    const direct = plannedPipelines(input, stragglers, now, initial, config, [], solver);
    const directMs = predict(direct, []);
    if (directMs < delegatedMs * (1 - config.minGain)) {
      const replan = !samePlan(current.pipelines, direct, input.dpSize, config.planner) && directMs < predictedPreviousMs * (1 - config.minGain);
      if (!replan) return outcome(null);
      return outcome({
        kind, pipelines: direct, delegation: [], links: reasonLinks, predictedPreviousMs, predictedNewMs: directMs, predictedStaticMs, reschedule: true,
        detail: `${describe}: re-planned (${config.planner}), GPU-direct sends (delegation predicted ${delegatedMs.toFixed(0)} ms)`,
      });
    }
  }
  if (!worthIt && delegationCovers(current.delegation, needed)) return outcome(null);
  return outcome({
    kind,
    pipelines: worthIt ? planned : current.pipelines,
    delegation,
    links: reasonLinks,
    predictedPreviousMs,
    predictedNewMs: delegatedMs,
    predictedStaticMs,
    reschedule: worthIt,
    detail: `${describe}: ${worthIt ? `re-planned (${config.planner})` : 'schedule kept'}, delegation on ${delegation.length} ranks`,
  });
}
