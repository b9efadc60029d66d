import { ControlDecision } from '../../core/control/control-decision.type';
import { DecisionRecord } from '../../core/control/decision-record.type';
import { JobControlInput } from '../../core/control/control-input.type';
import { judgeDecision } from '../../core/control/judge-decision';
import { pipelineKey } from '../../core/control/straggler-key';
import { refinementMayPay } from '../../core/control/switch-gate';
import { switchCostConfigOf } from '../config/control-config-of';
import { PipemorphConfig } from '../config/pipemorph-config.type';
import { JobRuntime } from '../jobs/job-runtime';
import { switchLead } from '../publish/switch-lead';

/**
 * The cost gate for one of a job's decisions (core judgeDecision) with the job's lead, history,
 * the re-map handoff and its per-job overrides, logged in the job's decision log; the daemon's
 * ControlService and `pipemorph replay` alike. A declined decision the gate marks revisitSoon is
 * asked for again at the next iteration: a straggler declined only while it is within the job's
 * history of short ones, and a recovery declined under recoveryWithinIterations (so the bound holds
 * to the iteration). The lead counts from the newest report: one iteration to reach the read that
 * can see the prepare, then the switch's lead.
 */
export function judgeForJob(job: JobRuntime, decision: ControlDecision, predictedCurrentMs: number | null, config: PipemorphConfig, now: number): { take: boolean; record: DecisionRecord } {
  // The job's overrides (cost knobs, switching paused) when it has any, else the configuration.
  const verdict = judgeDecision(decision, predictedCurrentMs, job.overrides.effective?.switchCost ?? switchCostConfigOf(config), {
    at: now,
    iteration: job.progress.maxIteration,
    leadIterations: 1 + switchLead(job, decision, config),
    // Moved ranks load their new stage in parallel: one node's handoff.
    migrationMs: decision.topology ? config.remap.migrationMsPerNode : 0,
    history: job.stragglers,
    paused: job.overrides.pauseSwitching,
    overrides: job.overrides.active,
    current: job.planInForce(),
    answeredKeys: job.answeredKeys(),
    fleetNamed: job.fleetNamed,
  });
  job.decisions.record(verdict.record);
  // A straggler still within the job's history of short ones is decided again at the next
  // iteration: its verdict changes with its age, not with each report of the same iteration.
  if (verdict.revisitSoon) job.requestEvaluationAt(job.progress.maxIteration + 1);
  return verdict;
}

/**
 * Whether a refinement for the job's straggling links could be taken at all (core
 * refinementMayPay), with the context judgeForJob gives the gate: the job's cost knobs, history,
 * lead and plan in force. `headroomMs`: ControlOutcome.refinementHeadroomMs (absent: Infinity).
 */
export function refinementMayPayForJob(job: JobRuntime, input: JobControlInput, headroomMs: number | undefined, config: PipemorphConfig): boolean {
  const stragglers = input.links.filter((l) => l.straggler);
  return refinementMayPay(
    headroomMs ?? Infinity,
    stragglers.map((l) => pipelineKey(l.dp, l.link)),
    stragglers.some((l) => l.nicFailure),
    job.overrides.effective?.switchCost ?? switchCostConfigOf(config),
    { iteration: job.progress.maxIteration, leadIterations: 1 + switchLead(job, {}, config), migrationMs: 0, history: job.stragglers, current: job.planInForce(), fleetNamed: job.fleetNamed },
  );
}
