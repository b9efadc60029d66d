import { InputError } from '../input-error';
import { MilpSolver } from '../planner/optimal-planner';
import { allReduceOf } from './all-reduce-pricing';
import { ControlConfig, DEFAULT_TRANSPORT_CONFIG } from './control-config.type';
import { ControlDecision, ControlOutcome, DecisionKind } from './control-decision.type';
import { DelegationPlan, JobControlInput, PipelineGroupPlan } from './control-input.type';
import { delegationFor, initialPipelines, plannedPipelines, predictMs, replicaDelays, scheduleKey } from './pipeline-plans';
import { decideRemap } from './remap-decision';
import { refinementHeadroom } from './refinement-bound';

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
  const outcome = (decision: ControlDecision | null, headroom?: number | null): ControlOutcome => ({
    decision, predictedCurrentMs: predictedPreviousMs, predictedStaticMs,
    ...(headroom === undefined ? {} : headroom === null ? { refinable: false } : { refinable: true, refinementHeadroomMs: headroom }),
  });
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
      if (!replan) return outcome(null, refinementHeadroom(input, now, Math.max(keptMs, predictedPreviousMs), config.minGain));
      return outcome({
        kind, pipelines: direct, delegation: [], links: reasonLinks, predictedPreviousMs, predictedNewMs: directMs, predictedStaticMs, reschedule: true,
        detail: `${describe}: re-planned (${config.planner}), GPU-direct sends (delegation predicted ${delegatedMs.toFixed(0)} ms)`,
      });
    }
  }
  if (!worthIt && delegationCovers(current.delegation, needed)) return outcome(null, refinementHeadroom(input, now, Math.max(keptMs, predictedPreviousMs), config.minGain));
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
