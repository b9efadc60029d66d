import { ControlDecision } from './control-decision.type';
import { DelegationPlan, PipelineGroupPlan } from './control-input.type';
import { StragglerHistory } from './straggler-history';
import { dataParallelKey, parseStragglerKey, pipelineKey } from './straggler-key';

/** Knobs of cost-aware switching (config section "control", keys named alike). */
export interface SwitchCostConfig {
  /** Off: every decision the planner makes is taken (the behaviour before cost-aware switching). */
  costAware: boolean;
  /**
   * What one schedule switch costs the job, ms of iteration time: the handshake, op lists rebuilt,
   * CPU delegates started or stopped. A switch made for a straggler is paid again on the way back.
   */
  switchCostMs: number;
  /** Fraction of a predicted gain not counted on (the model's error against real ranks, the estimate's noise). */
  predictionUncertainty: number;
  /** Expected length of a straggler with no history, iterations (StragglerHistory). */
  stragglerPriorIterations: number;
  /** Weight of that prior against one observed episode. */
  stragglerPriorWeight: number;
  /**
   * What a rank running CPU delegates costs per iteration, ms of iteration time: the CPU cores and
   * pinned host memory its delegate processes hold. Priced in the same gate as iteration time, so a
   * healed job gives them back and a straggler plan that adds them must gain more (issue 29).
   * Absent: 0 (the gate before resources were priced).
   */
  delegatedRankMsPerIteration?: number;
  /**
   * What one warm-up forward held above the initial plan costs per iteration, ms: a microbatch of
   * activations kept on one stage of one replica (device or host memory). Absent: 0.
   */
  warmupMsPerIteration?: number;
  /**
   * Iterations the stragglers a plan was made for must be healthy before going back to the initial
   * plan (delegation off, memory-lean warm-ups) is taken whatever the gate says: the bound on how
   * long a healed job holds resources. Absent: no bound.
   */
  recoveryWithinIterations?: number;
}

export interface GateContext {
  /** The job's newest iteration. */
  iteration: number;
  /** Iterations between deciding and the switch taking effect (the handshake's lead). */
  leadIterations: number;
  /** One-off cost of a re-map (the moved ranks' handoff, in parallel), ms; 0 when none. */
  migrationMs: number;
  history: StragglerHistory;
  /** The plan in force (its resources are priced against the decision's); null before the first. */
  current?: { pipelines: readonly PipelineGroupPlan[]; delegation: readonly DelegationPlan[] } | null;
  /** The straggler keys the plan in force was made for: a recovery is undone only when one of them comes back. */
  answeredKeys?: readonly string[];
  /**
   * Whether a straggler key runs through a suspect the fleet named on other jobs' evidence (a bad
   * NIC, node pair, boundary or uplink; fleetLinkPrior): its expected duration is then at least the
   * prior (expectedStragglerRemaining). Absent: the job's own history alone.
   */
  fleetNamed?: (key: string) => boolean;
}

/** The cost side of a decision, as the decision log shows it. */
export interface CostEstimate {
  /** Predicted iteration time saved per iteration, before the uncertainty discount, ms. */
  gainMsPerIteration: number;
  /** Resources given back per iteration (delegated ranks, warm-ups above the plan in force; negative when taken), ms. */
  resourceMsPerIteration?: number;
  /** Iterations the straggler (or, for a recovery, the healthy spell) is expected to last from now. */
  expectedIterations: number;
  leadIterations: number;
  uncertainty: number;
  /** (gain x (1 - uncertainty) + resources) x (expected - lead), ms. */
  benefitMs: number;
  /** Switch (and switch back) plus any migration, ms. */
  costMs: number;
}

export interface GateVerdict {
  take: boolean;
  /**
   * Declined only because the straggler is still within the job's history of short ones: decide
   * again at the next iteration, not the next maintenance tick, since outliving that history makes it
   * worth a switch at once.
   */
  revisitSoon: boolean;
  /** One sentence: why taken or declined. */
  reason: string;
  cost: CostEstimate | null;
}

/** The straggler keys a decision answers (StragglerHistory's names). */
export function decisionKeys(decision: ControlDecision): string[] {
  return [
    ...decision.links.map((l) => pipelineKey(l.dp, l.link)),
    ...(decision.dataParallelLinks ?? []).map((l) => dataParallelKey(l.fromRank, l.toRank)),
  ];
}

const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : String(x));

/** What a plan's resources cost per iteration, ms: its delegated ranks and every warm-up forward it holds. */
export function resourceMsPerIteration(plan: { pipelines: readonly PipelineGroupPlan[]; delegation: readonly DelegationPlan[] }, config: SwitchCostConfig): number {
  const perRank = config.delegatedRankMsPerIteration ?? 0;
  const perWarmup = config.warmupMsPerIteration ?? 0;
  let warmups = 0;
  for (const group of plan.pipelines) for (const w of group.warmup) warmups += w * group.dpReplicas.length;
  return perRank * plan.delegation.length + perWarmup * warmups;
}

/**
 * How long the stragglers `keys` are expected to last from now, iterations: the plan pays off while
 * any of them lasts (StragglerHistory.expectedRemaining); the prior with no keys. A key the fleet
 * names slow (GateContext.fleetNamed) is a fault other jobs see too, not one of this job's bursts,
 * so it is priced at no less than the prior, whatever the job's history of short spells says.
 */
function expectedStragglerRemaining(keys: readonly string[], config: SwitchCostConfig, ctx: GateContext): number {
  if (keys.length === 0) return config.stragglerPriorIterations;
  let expected = 0;
  for (const k of keys) {
    const own = ctx.history.expectedRemaining(k, ctx.iteration);
    expected = Math.max(expected, ctx.fleetNamed?.(k) ? Math.max(own, config.stragglerPriorIterations) : own);
  }
  return expected;
}

interface Benefit {
  /** Discounted gain plus resources given back, ms per iteration. */
  perIteration: number;
  benefitMs: number;
  /** The straggler's duty cycle when its recurring price won (a flapping link); null otherwise. */
  recurringDuty: number | null;
}

/**
 * The benefit side of the gate, one function for gateSwitch and its bound refinementMayPay so the
 * bound cannot drift from what it bounds: the gain discounted by the uncertainty (a loss is not),
 * plus the resources given back, over the `expected` iterations after the lead. For a straggler
 * decision (`keys` not null) that gains, a recurring straggler (a flapping link) is also priced on
 * its share of slow iterations over the prior's horizon, and the larger price counts: its healthy
 * gaps are too short for a recovery to pay (expectedHealthyNow), so such a plan stays.
 */
function priceBenefit(gainMs: number, resourcesMs: number, expected: number, keys: readonly string[] | null, config: SwitchCostConfig, ctx: GateContext): Benefit {
  const u = config.predictionUncertainty;
  const lead = ctx.leadIterations;
  const perIteration = (gainMs > 0 ? gainMs * (1 - u) : gainMs) + resourcesMs;
  let benefitMs = perIteration > 0 ? perIteration * Math.max(0, expected - lead) : 0;
  let recurringDuty: number | null = null;
  if (keys !== null && gainMs > 0) {
    const duty = Math.max(0, ...keys.map((k) => ctx.history.dutyCycle(k) ?? 0));
    const kept = (gainMs * (1 - u) * duty + resourcesMs) * Math.max(0, config.stragglerPriorIterations - lead);
    if (duty > 0 && kept > benefitMs) {
      benefitMs = kept;
      recurringDuty = duty;
    }
  }
  return { perIteration, benefitMs, recurringDuty };
}

/**
 * Whether a decision is worth its cost (pure): its predicted gain, discounted by the prediction's
 * uncertainty, plus the resources it gives back (delegated ranks, warm-ups held: negative when it
 * takes them), over the iterations it is expected to pay off after its lead, must beat what the
 * switch costs: the switch and the switch back, plus the handoff of a re-map. A straggler's
 * expected remaining duration comes from the job's own history (StragglerHistory), so a link that
 * flaps is not chased and a recovery during a flapping spell is not taken. The first plan and a
 * NIC failure (only the delegated path carries traffic) are always taken, and so is a recovery
 * once the stragglers the plan was made for have been healthy recoveryWithinIterations.
 */
export function gateSwitch(decision: ControlDecision, config: SwitchCostConfig, ctx: GateContext): GateVerdict {
  const taken = (reason: string): GateVerdict => ({ take: true, revisitSoon: false, reason, cost: null });
  if (decision.kind === 'initial') return taken('first schedule of the job');
  if (decision.kind === 'nic-failure') return taken('NIC failure: only CPU delegation carries the link');
  if (!config.costAware) return taken('cost-aware switching off: predicted gain above minGain');
  const previous = decision.predictedPreviousMs;
  if (previous === null || !Number.isFinite(previous)) return taken('nothing in force to compare with');
  const bound = config.recoveryWithinIterations;
  if (decision.kind === 'recovery' && bound !== undefined) {
    const healthy = ctx.history.healthyFor(ctx.iteration, ctx.answeredKeys);
    if (healthy >= bound) return taken(`healthy for ${fmt(healthy)} iterations (recoveryWithinIterations ${bound}): delegation and warm-ups given back`);
  }
  const keys = decisionKeys(decision);
  const gain = previous - decision.predictedNewMs;
  const resources = ctx.current ? resourceMsPerIteration(ctx.current, config) - resourceMsPerIteration(decision, config) : 0;
  const recovery = decision.kind === 'recovery';
  const expected = recovery
    ? ctx.history.expectedHealthyNow(ctx.iteration, ctx.answeredKeys && ctx.answeredKeys.length > 0 ? ctx.answeredKeys : undefined)
    : expectedStragglerRemaining(keys, config, ctx);
  const what = recovery ? 'healthy spell' : 'straggler';
  const lead = ctx.leadIterations;
  const u = config.predictionUncertainty;
  const { perIteration, benefitMs, recurringDuty } = priceBenefit(gain, resources, expected, recovery ? null : keys, config, ctx);
  const recurring = recurringDuty === null ? '' : ` (recurring: slow ${(100 * recurringDuty).toFixed(0)}% of iterations, priced over ${config.stragglerPriorIterations})`;
  const costMs = decision.kind === 'remap' ? config.switchCostMs + ctx.migrationMs : 2 * config.switchCostMs;
  const cost: CostEstimate = { gainMsPerIteration: gain, resourceMsPerIteration: resources, expectedIterations: expected, leadIterations: lead, uncertainty: u, benefitMs, costMs };
  const take = benefitMs > costMs;
  const priced = resources !== 0 ? ` ${resources > 0 ? '+' : ''}${resources.toFixed(1)} ms/iteration of resources` : '';
  const reason = take
    ? `gain ${gain.toFixed(1)} ms/iteration${priced} over an expected ${fmt(expected)}-iteration ${what}${recurring} (${fmt(benefitMs)} ms) beats its cost (${fmt(costMs)} ms)`
    : `declined: gain ${gain.toFixed(1)} ms/iteration${priced} over an expected ${fmt(expected)}-iteration ${what}${recurring}, after ${lead} lead iterations (${fmt(benefitMs)} ms), does not beat its cost (${fmt(costMs)} ms)`;
  // A declined recovery under a bound is asked again at the next iteration, so the bound holds to the iteration.
  const revisitSoon = !take && (decision.kind === 'recovery' ? bound !== undefined : perIteration > 0 && keys.some((k) => ctx.history.withinHistory(k, ctx.iteration)));
  return { take, revisitSoon, reason, cost };
}

/**
 * Whether the gate could take any plan a refinement might find (pure): one gaining at most
 * `headroomMs` per iteration (refinementHeadroom: against the lower bound of any plan) and giving
 * back at most every resource the plan in force holds, for the straggling `keys`, priced exactly as
 * gateSwitch prices a straggler decision (its expected remaining duration, the recurring price, the
 * switch and the switch back). False only where gateSwitch would decline every such plan, so a
 * refinement left out is one that could not have been taken: the bound is strict (switch-gate.spec.ts
 * checks it against gateSwitch). The exact planner and the search are the daemon's costliest work
 * (bench:scale-out), and a straggler that the job's history says ends within a few iterations is
 * not worth searching for. Always true where the gate takes without pricing (cost-aware switching
 * off, a NIC failure) and where `keys` name a data-parallel link (a re-map is priced otherwise).
 */
export function refinementMayPay(headroomMs: number, keys: readonly string[], nicFailure: boolean, config: SwitchCostConfig, ctx: GateContext): boolean {
  if (!config.costAware || nicFailure || !(headroomMs < Infinity)) return true;
  if (keys.some((k) => parseStragglerKey(k)?.kind === 'dataParallel')) return true;
  if (!(headroomMs > 0)) return false;
  // The most any plan could give back: every resource the plan in force holds.
  const resources = ctx.current ? Math.max(0, resourceMsPerIteration(ctx.current, config)) : 0;
  const { benefitMs } = priceBenefit(headroomMs, resources, expectedStragglerRemaining(keys, config, ctx), keys, config, ctx);
  return benefitMs > 2 * config.switchCostMs;
}
