import { ControlDecision } from './control-decision.type';
import { StragglerHistory } from './straggler-history';

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
}

export interface GateContext {
  /** The job's newest iteration. */
  iteration: number;
  /** Iterations between deciding and the switch taking effect (the handshake's lead). */
  leadIterations: number;
  /** One-off cost of a re-map (the moved ranks' handoff, in parallel), ms; 0 when none. */
  migrationMs: number;
  history: StragglerHistory;
}

/** The cost side of a decision, as the decision log shows it. */
export interface CostEstimate {
  /** Predicted iteration time saved per iteration, before the uncertainty discount, ms. */
  gainMsPerIteration: number;
  /** Iterations the straggler (or, for a recovery, the healthy spell) is expected to last from now. */
  expectedIterations: number;
  leadIterations: number;
  uncertainty: number;
  /** gain x (1 - uncertainty) x (expected - lead), ms. */
  benefitMs: number;
  /** Switch (and switch back) plus any migration, ms. */
  costMs: number;
}

export interface GateVerdict {
  take: boolean;
  /**
   * Declined only because the straggler is still within the job's history of short ones: decide
   * again at the next report, not the next maintenance tick, since outliving that history makes it
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

export function pipelineKey(dp: number, link: number): string {
  return `p:${dp}:${link}`;
}

export function dataParallelKey(fromRank: number, toRank: number): string {
  return `d:${fromRank}>${toRank}`;
}

export function computeKey(rank: number): string {
  return `c:${rank}`;
}

const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : String(x));

/**
 * Whether a decision is worth its cost (pure): its predicted gain, discounted by the prediction's
 * uncertainty, over the iterations it is expected to pay off after its lead, must beat what the
 * switch costs: the switch and the switch back, plus the handoff of a re-map. A straggler's
 * expected remaining duration comes from the job's own history (StragglerHistory), so a link that
 * flaps is not chased and a recovery during a flapping spell is not taken. The first plan and a
 * NIC failure (only the delegated path carries traffic) are always taken.
 */
export function gateSwitch(decision: ControlDecision, config: SwitchCostConfig, ctx: GateContext): GateVerdict {
  const taken = (reason: string): GateVerdict => ({ take: true, revisitSoon: false, reason, cost: null });
  if (decision.kind === 'initial') return taken('first schedule of the job');
  if (decision.kind === 'nic-failure') return taken('NIC failure: only CPU delegation carries the link');
  if (!config.costAware) return taken('cost-aware switching off: predicted gain above minGain');
  const previous = decision.predictedPreviousMs;
  if (previous === null || !Number.isFinite(previous)) return taken('nothing in force to compare with');
  const keys = decisionKeys(decision);
  const gain = previous - decision.predictedNewMs;
  let expected: number;
  let what: string;
  if (decision.kind === 'recovery') {
    expected = ctx.history.expectedHealthyNow(ctx.iteration);
    what = 'healthy spell';
  } else {
    // The plan pays off while any of the stragglers it answers lasts.
    expected = keys.length === 0 ? config.stragglerPriorIterations : Math.max(...keys.map((k) => ctx.history.expectedRemaining(k, ctx.iteration)));
    what = 'straggler';
  }
  const lead = ctx.leadIterations;
  const u = config.predictionUncertainty;
  const benefitMs = gain > 0 ? gain * (1 - u) * Math.max(0, expected - lead) : 0;
  const costMs = decision.kind === 'remap' ? config.switchCostMs + ctx.migrationMs : 2 * config.switchCostMs;
  const cost: CostEstimate = { gainMsPerIteration: gain, expectedIterations: expected, leadIterations: lead, uncertainty: u, benefitMs, costMs };
  const take = benefitMs > costMs;
  const reason = take
    ? `gain ${gain.toFixed(1)} ms/iteration over an expected ${fmt(expected)}-iteration ${what} (${fmt(benefitMs)} ms) beats its cost (${fmt(costMs)} ms)`
    : `declined: gain ${gain.toFixed(1)} ms/iteration over an expected ${fmt(expected)}-iteration ${what}, after ${lead} lead iterations (${fmt(benefitMs)} ms), does not beat its cost (${fmt(costMs)} ms)`;
  const revisitSoon = !take && decision.kind !== 'recovery' && gain > 0 && keys.some((k) => ctx.history.withinHistory(k, ctx.iteration));
  return { take, revisitSoon, reason, cost };
}
