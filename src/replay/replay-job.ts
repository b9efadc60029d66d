import { ControlConfig } from '../core/control/control-config.type';
import { ControlDecision } from '../core/control/control-decision.type';
import { DecisionRecord } from '../core/control/decision-record.type';
import { detectorTolerances } from '../core/control/detector-tolerances';
import { decideControl } from '../core/control/job-controller';
import { judgeDecision, stragglingKeys } from '../core/control/judge-decision';
import { SwitchCostConfig } from '../core/control/switch-gate';
import { controlConfigOf, switchCostConfigOf } from '../daemon/config/control-config-of';
import { DetectionSnapshot } from '../core/detect/detection.type';
import { MilpSolver } from '../core/planner/optimal-planner';
import { PipemorphConfig } from '../daemon/config/pipemorph-config.type';
import { JobRuntime } from '../daemon/jobs/job-runtime';
import { publishedScheduleOf } from '../daemon/publish/published-schedule';
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
 * (JobRuntime.observeReport, the detector, controlInput/topologyView, the Eq. 1 tolerances,
 * decideControl, the refinement, judgeDecision and the straggler history) in the order the
 * daemon's ControlService runs them, with its timing rules: one switch at a time, the re-plan
 * interval (`control.minReplanIntervalMs`) and the re-map interval on the replayed clock, a
 * step on every straggler change and at every maintenance tick (5 s of replayed time), and the
 * handshake's lead. What it leaves out: Redis, the handshake's round trips (ranks are taken to
 * acknowledge at once), planning on a worker thread.
 */
export class ReplayJob {
  readonly job: JobRuntime;
  readonly records: DecisionRecord[] = [];
  private readonly control: ControlConfig;
  private readonly cost: SwitchCostConfig;
  private version = 0;
  private notBefore = 0;
  private lastRemapAt = -Infinity;
  private lastStepAt = -Infinity;
  private refinedFor: string | null = null;
  private stepsRun = 0;

  constructor(registration: Registration, private readonly config: PipemorphConfig, private readonly solver?: MilpSolver, private readonly maintenanceMs = 5000) {
    this.job = new JobRuntime(registration, 1, config.detection, {}, { priorIterations: config.control.stragglerPriorIterations, priorWeight: config.control.stragglerPriorWeight });
    this.job.markHistoryReplayed();
    this.control = controlConfigOf(config);
    this.cost = switchCostConfigOf(config);
  }

  get steps(): number {
    return this.stepsRun;
  }

  /** One report, as ingest takes it. */
  observe(report: RankReport, now: number): void {
    const { changed } = this.job.observeReport(report, now);
    if (changed) this.job.requestEvaluation();
  }

  /**
   * The end of an iteration's reports: a control step if one is due. Returns the switch decided,
   * if any (the ranks run it from its effective iteration).
   */
  endIteration(now: number): ReplaySwitch | null {
    const due = this.job.needsEvaluation || now - this.lastStepAt >= this.maintenanceMs;
    if (!due) return null;
    this.lastStepAt = now;
    return this.step(now);
  }

  private step(now: number): ReplaySwitch | null {
    const job = this.job;
    const snapshot = job.detector.snapshot();
    const iteration = job.progress.maxIteration;
    job.stragglers.observe(iteration, stragglingKeys(snapshot));
    if (job.layout.pendingTopology || iteration < job.layout.holdUntilIteration) {
      job.requestEvaluation();
      return null;
    }
    const input = job.controlInput(snapshot, job.committed ? { ...job.topologyView(snapshot, now, 0), remapAllowed: !job.layout.pendingTopology && now - this.lastRemapAt >= this.config.remap.minIntervalMs } : undefined);
    if (job.committed) for (const t of detectorTolerances(input, job.committed.pipelines)) job.detector.setTolerance(t.dp, t.link, t.toleranceMs);
    const delegated = new Set((job.committed?.delegation ?? []).map((d) => d.rank));
    const urgent = input.links.some((l) => l.nicFailure && (!delegated.has(l.upRank) || !delegated.has(l.downRank)));
    if (job.committed && now < this.notBefore && !urgent) {
      job.requestEvaluation();
      return null;
    }
    this.stepsRun++;
    let outcome = decideControl(input, this.control, this.solver);
    job.evaluated();
    const links = input.links.filter((l) => l.straggler).map((l) => `${l.dp}:${l.link}`).sort().join(',') || null;
    const refinePlanner = this.config.control.refinePlanner;
    if (links === null) this.refinedFor = null;
    else if (refinePlanner !== 'none' && refinePlanner !== this.config.control.planner && !outcome.decision && this.refinedFor !== links) {
      this.refinedFor = links;
      const refined = decideControl(input, { ...this.control, planner: refinePlanner }, this.solver);
      if (refined.decision) outcome = refined;
    } else if (outcome.decision) this.refinedFor = null;
    const decision = outcome.decision;
    if (!decision) return null;
    return this.publish(decision, outcome.predictedCurrentMs, snapshot, now);
  }

  private publish(decision: ControlDecision, predictedCurrentMs: number | null, _snapshot: DetectionSnapshot, now: number): ReplaySwitch | null {
    const job = this.job;
    const iteration = job.progress.maxIteration;
    const { minLeadIterations, leadMs } = this.config.handshake;
    const pace = job.progress.iterationMs;
    const lead = (pace > 0 ? Math.max(minLeadIterations, Math.ceil(leadMs / pace)) : minLeadIterations) + (decision.topology ? this.config.remap.extraLeadIterations : 0);
    const { take, record } = judgeDecision(decision, predictedCurrentMs, this.cost, {
      at: now, iteration, leadIterations: 1 + lead, migrationMs: decision.topology ? this.config.remap.migrationMsPerNode : 0,
      history: job.stragglers, paused: false, overrides: false,
    });
    this.records.push(record);
    if (!take) {
      job.requestEvaluation();
      return null;
    }
    this.version++;
    record.scheduleVersion = this.version;
    const effectiveIteration = Math.max(0, iteration) + 1 + lead;
    const schedule = publishedScheduleOf(job, decision, { version: this.version, state: 'committed', effectiveIteration: job.committed ? effectiveIteration : 0, now, traceId: '0'.repeat(32) });
    job.noteCommitted(schedule, !job.committed);
    this.notBefore = now + this.config.control.minReplanIntervalMs;
    if (decision.topology) this.lastRemapAt = now;
    return { version: this.version, effectiveIteration: schedule.effectiveIteration, decision, record };
  }
}
