import { ControlConfig } from '../core/control/control-config.type';
import { ControlDecision } from '../core/control/control-decision.type';
import { DecisionRecord } from '../core/control/decision-record.type';
import { decideControl } from '../core/control/job-controller';
import { stragglingLinks } from '../core/control/judge-decision';
import { MilpSolver } from '../core/planner/optimal-planner';
import { controlConfigOf } from '../daemon/config/control-config-of';
import { PipemorphConfig } from '../daemon/config/pipemorph-config.type';
import { judgeForJob, refinementMayPayForJob } from '../daemon/control/judge-for-job';
import { rebalanceForJob, supersede } from '../daemon/control/rebalance-for-job';
import { JobRuntime, ReportOutcome } from '../daemon/jobs/job-runtime';
import { publishedScheduleOf } from '../daemon/publish/published-schedule';
import { switchLead } from '../daemon/publish/switch-lead';
import { RankReport, Registration } from '../protocol/protocol-v1.type';

/** A switch the replay decided: the ranks run `decision` from `effectiveIteration` as schedule `version`. */
export interface ReplaySwitch {
  version: number;
  effectiveIteration: number;
  decision: ControlDecision;
  record: DecisionRecord;
}

/**
 * One job's control loop in process, on recorded or synthesized reports: the daemon's own pieces
 * (JobRuntime.observeReport and stepInput, the detector, decideControl, the refinement, the cost
 * gate judgeForJob, the published schedule) in the order the daemon's ControlService runs them,
 * with its timing rules: a step on every straggler change and at every maintenance tick, the
 * re-plan and re-map intervals and the switch's lead on the replayed clock (`now`, ms since the
 * epoch as the daemon's clock gives it). What it leaves out: Redis, the handshake's round trips
 * (ranks acknowledge at once: a switch is committed when decided), planning on a worker thread.
 */
export class ReplayJob {
  readonly job: JobRuntime;
  private readonly control: ControlConfig;
  private version = 0;
  private lastStepAt = -Infinity;
  private stepsRun = 0;
  /** Called with every decision judged, taken or not, once its step is done (a taken one has its version). */
  onDecision: ((record: DecisionRecord) => void) | null = null;

  constructor(registration: Registration, private readonly config: PipemorphConfig, private readonly solver?: MilpSolver, private readonly maintenanceMs = 5000) {
    this.job = new JobRuntime(registration, 1, config.detection, {}, { priorIterations: config.control.stragglerPriorIterations, priorWeight: config.control.stragglerPriorWeight });
    this.job.markHistoryReplayed();
    this.control = controlConfigOf(config);
  }

  /** Control steps that decided (not deferred). */
  get steps(): number {
    return this.stepsRun;
  }

  /** Every decision judged, taken or not. */
  get records(): DecisionRecord[] {
    return this.job.decisions.recent();
  }

  /** One report, as ingest takes it; what became of it (accepted, a duplicate, or of an older layout). */
  observe(report: RankReport, now: number): ReportOutcome {
    const { outcome, changed } = this.job.observeReport(report, now);
    if (changed) this.job.requestEvaluation();
    return outcome;
  }

  /** The end of an iteration's reports: a control step if one is due; the switch it decided, if any. */
  endIteration(now: number): ReplaySwitch | null {
    if (!this.job.needsEvaluation && now - this.lastStepAt < this.maintenanceMs) return null;
    this.lastStepAt = now;
    return this.step(now);
  }

  private step(now: number): ReplaySwitch | null {
    const job = this.job;
    const snapshot = job.detector.snapshot();
    const input = job.stepInput(snapshot, now, this.config.remap.minIntervalMs);
    if (!input) return null;
    this.stepsRun++;
    const outcome = decideControl(input, this.control, this.solver);
    job.evaluated();
    // As ControlService.step: the first phase judged at once, a refinement only with the plan in force.
    let decision = outcome.decision;
    let judged = decision && judgeForJob(job, decision, outcome.predictedCurrentMs, this.config, now);
    const records = judged ? [judged.record] : [];
    const refinePlanner = this.config.control.refinePlanner;
    if (job.refineDue(stragglingLinks(input), refinePlanner !== 'none' && refinePlanner !== this.config.control.planner && outcome.refinable !== false && refinementMayPayForJob(job, input, outcome.refinementHeadroomMs, this.config), judged ? (judged.take ? 'taken' : 'declined') : 'none')) {
      const refined = decideControl(input, { ...this.control, planner: refinePlanner as ControlConfig['planner'] }, this.solver);
      if (refined.decision) {
        decision = refined.decision;
        judged = judgeForJob(job, decision, refined.predictedCurrentMs, this.config, now);
        records.push(judged.record);
      }
    }
    // As ControlService.step: with no other switch taken (or only a recovery), a job that declared its
    // layers may move them (a compute straggler, or back once it healed).
    let taken = judged && judged.take ? decision : null;
    if ((!taken || taken.kind === 'recovery') && job.committed) {
      const rebalanced = rebalanceForJob(job, input, snapshot, this.config, this.control, outcome.predictedStaticMs, now);
      if (rebalanced) records.push(rebalanced.record);
      if (rebalanced?.take && rebalanced.decision) {
        if (taken && judged) supersede(judged.record, taken);
        taken = taken ? { ...rebalanced.decision, delegation: taken.delegation } : rebalanced.decision;
        judged = rebalanced;
      }
    }
    decision = taken;
    const switched = this.commit(decision, judged, now);
    if (this.onDecision) for (const r of records) this.onDecision(r);
    return switched;
  }

  private commit(decision: ControlDecision | null, judged: { take: boolean; record: DecisionRecord } | null, now: number): ReplaySwitch | null {
    const job = this.job;
    // Declined: decided again at the next straggler change or maintenance tick, as the daemon does.
    if (!decision || !judged || !judged.take) return null;
    const record = judged.record;
    record.scheduleVersion = ++this.version;
    const effectiveIteration = job.committed ? Math.max(0, job.progress.iterationAt(now, this.config.jobs.staleRankMs)) + 1 + switchLead(job, decision, this.config) : 0;
    const schedule = publishedScheduleOf(job, decision, { version: this.version, state: 'committed', effectiveIteration, now, traceId: '0'.repeat(32) });
    job.switching.committed(now, decision.kind === 'remap', this.config.control.minReplanIntervalMs);
    job.noteCommitted(schedule, !job.committed);
    return { version: this.version, effectiveIteration, decision, record };
  }
}
