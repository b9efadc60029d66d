import { DetectionSnapshot } from '../detect/detection.type';
import { ControlDecision } from './control-decision.type';
import { JobControlInput } from './control-input.type';
import { DecisionRecord } from './decision-record.type';
import { StragglerHistory } from './straggler-history';
import { computeKey, dataParallelKey, pipelineKey } from './straggler-key';
import { GateContext, gateSwitch, SwitchCostConfig } from './switch-gate';

/** The straggler keys of a detection snapshot (StragglerHistory's names); `recovering`: only those whose newest samples are healthy again. */
export function stragglingKeys(snapshot: DetectionSnapshot, recovering = false): string[] {
  const keys: string[] = [];
  const take = (s: { straggler: boolean; recovering: boolean }) => s.straggler && (!recovering || s.recovering);
  for (const l of snapshot.pipelineLinks) if (take(l)) keys.push(pipelineKey(l.dp, l.link));
  for (const l of snapshot.dataParallelLinks) if (take(l)) keys.push(dataParallelKey(l.fromRank, l.toRank));
  for (const c of snapshot.compute) if (take(c)) keys.push(computeKey(c.rank));
  return keys;
}

/**
 * The straggler keys of a snapshot whose size is severe (StragglerHistory's class): a link whose
 * extra delay reaches `severeExtraMs`, a rank computing `2 x (computeSlowRatio - 1)` or more over
 * its reference (1.3x with the shipped 1.15).
 */
export function severeKeys(snapshot: DetectionSnapshot, severeExtraMs: number, computeSlowRatio: number): string[] {
  const keys: string[] = [];
  for (const l of snapshot.pipelineLinks) if (l.straggler && (l.extraMs >= severeExtraMs || l.reason === 'nic-failure')) keys.push(pipelineKey(l.dp, l.link));
  for (const l of snapshot.dataParallelLinks) if (l.straggler && (l.extraMs >= severeExtraMs || l.error === 'nic-failure')) keys.push(dataParallelKey(l.fromRank, l.toRank));
  for (const c of snapshot.compute) if (c.straggler && c.ratio - 1 >= 2 * (computeSlowRatio - 1)) keys.push(computeKey(c.rank));
  return keys;
}

/** The straggling pipeline links of a control input as a key ("dp:link,..."), null when none straggles: what a refinement is made for. */
export function stragglingLinks(input: JobControlInput): string | null {
  const links = input.links.filter((l) => l.straggler).map((l) => `${l.dp}:${l.link}`);
  return links.length > 0 ? links.sort().join(',') : null;
}

export interface JudgeContext {
  at: number;
  iteration: number;
  /** Iterations until a switch decided now takes effect. */
  leadIterations: number;
  /** Predicted handoff of a re-map (moved ranks load their new stage in parallel), ms. */
  migrationMs: number;
  history: StragglerHistory;
  /**
   * Switching paused for the job (per-job override): decided and logged, never taken. Except the
   * first plan (a job needs a schedule) and a NIC failure: with a failed NIC and no CPU delegation
   * the link carries nothing and the job stalls, so that switch is taken and its record says so.
   */
  paused: boolean;
  /** Per-job overrides were in force (logged with the decision). */
  overrides: boolean;
  /** The plan in force, whose resources the decision's are priced against (GateContext.current). */
  current?: GateContext['current'];
  /** The straggler keys the plan in force was made for (GateContext.answeredKeys). */
  answeredKeys?: readonly string[];
  /** Straggler keys through a suspect the fleet named (GateContext.fleetNamed). */
  fleetNamed?: GateContext['fleetNamed'];
}

/**
 * The last word on a planned decision (pure; the daemon's control step and `pipemorph replay`
 * both end here): the cost gate, then the record the decision log keeps. A decision that is not
 * taken leaves what runs in force; the loop decides again as the straggler ages.
 */
export function judgeDecision(decision: ControlDecision, predictedCurrentMs: number | null, config: SwitchCostConfig, ctx: JudgeContext): { take: boolean; revisitSoon: boolean; record: DecisionRecord } {
  const verdict = gateSwitch(decision, config, {
    iteration: ctx.iteration, leadIterations: ctx.leadIterations, migrationMs: ctx.migrationMs, history: ctx.history, current: ctx.current, answeredKeys: ctx.answeredKeys, fleetNamed: ctx.fleetNamed,
  });
  const exempt = decision.kind === 'initial' || decision.kind === 'nic-failure';
  const paused = ctx.paused && !exempt;
  const take = verdict.take && !paused;
  let reason = paused ? `switching paused for the job (would have been: ${verdict.reason})` : verdict.reason;
  if (ctx.paused && decision.kind === 'nic-failure') reason = `${reason}; taken although switching is paused for the job: a failed NIC without delegation stalls it`;
  const record: DecisionRecord = {
    at: ctx.at,
    iteration: ctx.iteration,
    kind: decision.kind,
    verdict: paused ? 'paused' : take ? 'taken' : 'declined',
    reason,
    evidence: {
      links: decision.links.map(({ dp, link, extraMs, nicFailure }) => ({ dp, link, extraMs, nicFailure })),
      dataParallelLinks: (decision.dataParallelLinks ?? []).map(({ fromRank, toRank, extraMs }) => ({ fromRank, toRank, extraMs })),
    },
    prediction: { currentMs: predictedCurrentMs ?? decision.predictedPreviousMs, newMs: decision.predictedNewMs, staticMs: decision.predictedStaticMs },
    cost: verdict.cost,
    scheduleVersion: null,
    overrides: ctx.overrides,
    repeats: 1,
    firstIteration: ctx.iteration,
  };
  return { take, revisitSoon: verdict.revisitSoon && !paused, record };
}
