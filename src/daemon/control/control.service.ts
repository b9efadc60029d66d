import { Inject, Injectable, Logger } from '@nestjs/common';
import { Span } from '@opentelemetry/api';
import { Clock } from '../../core/clock/clock.type';
import { ControlConfig } from '../../core/control/control-config.type';
import { ControlDecision, ControlOutcome } from '../../core/control/control-decision.type';
import { DecisionRecord } from '../../core/control/decision-record.type';
import { stragglingLinks } from '../../core/control/judge-decision';
import { JobControlInput } from '../../core/control/control-input.type';
import { DetectionSnapshot } from '../../core/detect/job-detector';
import { CLOCK } from '../clock/clock.token';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { JobRuntime } from '../jobs/job-runtime';
import { MetricsService } from '../metrics/metrics.service';
import { PlanningError, PlanningLane, PlanningPool } from '../planning/planning-pool.service';
import { SchedulePublisher } from '../publish/schedule-publisher.service';
import { controlConfigOf } from '../config/control-config-of';
import { judgeForJob, refinementMayPayForJob } from './judge-for-job';
import { rebalanceForJob, supersede } from './rebalance-for-job';
import { inSpan } from '../tracing/tracer';

/** How often the healthy-links prediction of a job is recomputed (it moves only with stage times and link baselines). */
const HEALTHY_REFRESH_MS = 10000;
/**
 * Reporting ranks above which a step lets the event loop run before and after its detection
 * snapshot: each part of a 4096-rank job's step takes tens of ms on the event loop (issue 23, item 5).
 */
const YIELDING_STEP_RANKS = 1024;

/** A refinement on its way (ControlService.refine): for which straggling links and schedule in force. */
interface PendingRefinement {
  links: string;
  version: number | null;
  /** Its switch, once made; taken by the step it triggers. */
  outcome: ControlOutcome | null;
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * One control step for a job: detection snapshot -> decision (pure core, on a planning worker) ->
 * publish. Steps of one job never overlap (JobRuntime.serialize); different jobs are independent.
 * Ingest only triggers steps (`trigger`): while a job is being planned, reports of every job,
 * this one included, go on being read and acknowledged.
 */
@Injectable()
export class ControlService {
  private readonly logger = new Logger(ControlService.name);
  private readonly healthy = new WeakMap<JobRuntime, { at: number; ms: number }>();
  /** Jobs with a triggered step that has not started yet: one waiting step covers every trigger since. */
  private readonly waiting = new Map<JobRuntime, Promise<void>>();
  private readonly running = new Set<Promise<void>>();
  private readonly refinements = new WeakMap<JobRuntime, PendingRefinement>();
  private readonly refining = new Set<Promise<void>>();
  /** The healthy yardstick in flight, per job (refreshHealthy): at most one each. */
  private readonly gauging = new Map<JobRuntime, Promise<void>>();

  constructor(
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly publisher: SchedulePublisher,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly planning: PlanningPool,
  ) {}

  private get controlConfig(): ControlConfig {
    return controlConfigOf(this.config);
  }

  /** The control knobs for one job: its per-job minGain override, if any. */
  private controlConfigFor(job: JobRuntime): ControlConfig {
    const minGain = job.overrides.effective?.minGain;
    return minGain === undefined ? this.controlConfig : { ...this.controlConfig, minGain };
  }

  evaluate(job: JobRuntime, now = this.clock.now()): Promise<void> {
    return job.serialize(() => this.traced(job, now));
  }

  /**
   * Runs a step for `job` in the background, after any step in progress; the caller (the ingest
   * loop) goes on at once. Triggers while a step waits to start add nothing: that step sees their
   * input. Resolves when that step has ended; a failing step is logged (never rejects) and left to
   * maintenance, which evaluates every job each run.
   */
  trigger(job: JobRuntime): Promise<void> {
    const queued = this.waiting.get(job);
    if (queued) return queued;
    const step: Promise<void> = job
      .serialize(() => {
        this.waiting.delete(job);
        return this.traced(job, this.clock.now());
      })
      .catch((error) => this.logger.error(`control step of job ${job.jobId} failed: ${(error as Error).message}`))
      .finally(() => this.running.delete(step));
    this.waiting.set(job, step);
    this.running.add(step);
    return step;
  }

  /**
   * Resolves once every triggered step has ended (shutdown; tests) and, unless `steps`, every
   * refinement under way and the step it triggers, and every healthy yardstick being priced.
   */
  async settled(what: 'all' | 'steps' = 'all'): Promise<void> {
    const waited = () => (what === 'all' ? [...this.running, ...this.refining, ...this.gauging.values()] : [...this.running]);
    while (waited().length > 0) await Promise.allSettled(waited());
  }

  private traced(job: JobRuntime, now: number): Promise<void> {
    return inSpan('pipemorph.detect_plan', { 'pipemorph.job': job.jobId, 'pipemorph.epoch': job.epoch }, (span) => this.step(job, now, span));
  }

  private async step(job: JobRuntime, now: number, span: Span): Promise<void> {
    if (job.released) return; // another runtime (or replica) decides for this job now
    await this.publisher.expire(job, now);
    if (job.released) return; // let go while expiring
    if (!job.historyReplayed) {
      // A new owner decides only once the job's history has been replayed into its detector: from an
      // empty one, a straggler the schedule absorbs would look healed (issue 11, fault 7).
      job.requestEvaluation();
      return;
    }
    const started = this.clock.monotonicMs();
    const large = job.reporting.length > YIELDING_STEP_RANKS;
    if (large) await yieldToLoop();
    const snapshot = job.detector.snapshot();
    this.recordDetection(job, snapshot);
    if (large) await yieldToLoop();
    if (job.released) return;
    const input = job.stepInput(snapshot, now, this.config.remap.minIntervalMs);
    if (!input) return;
    const detected = this.clock.monotonicMs();
    // The version a switch would need is allocated while planning runs (one round trip less after it).
    const reserving = job.committed ? this.publisher.reserveVersion(job) : Promise.resolve();
    let outcome = await this.decide(job, input, this.controlConfigFor(job), 'planning');
    await reserving;
    if (!outcome) {
      // Not retried at once (a planner that throws would throw again): the next maintenance run
      // (jobs.maintenanceCron) or report decides afresh.
      job.evaluated();
      return;
    }
    if (job.released) return; // let go while planning
    const slow = input.links.filter((l) => l.straggler);
    span.setAttributes({
      'pipemorph.stragglers': slow.length,
      'pipemorph.links': slow.map((l) => `dp${l.dp}:${l.link}+${l.extraMs.toFixed(1)}ms`).join(' '),
      'pipemorph.schedule_version': job.committed?.version ?? 0,
      'pipemorph.decision': outcome.decision?.kind ?? 'none',
    });
    this.metrics.planningDuration.observe((this.clock.monotonicMs() - started) / 1000);
    if (outcome.predictedCurrentMs !== null) this.metrics.predictedIteration.set({ job: job.jobId, schedule: 'current' }, outcome.predictedCurrentMs / 1000);
    this.metrics.predictedIteration.set({ job: job.jobId, schedule: 'static' }, outcome.predictedStaticMs / 1000);
    job.evaluated();
    // The first phase's decision is judged at once; a refinement runs only with the plan in force.
    let judged = outcome.decision && this.judge(job, outcome.decision, outcome.predictedCurrentMs, now);
    const refined = this.refine(job, input, judged ? (judged.take ? 'taken' : 'declined') : 'none', outcome.refinable !== false && refinementMayPayForJob(job, input, outcome.refinementHeadroomMs, this.config));
    if (refined?.decision) {
      outcome = refined;
      judged = this.judge(job, refined.decision, refined.predictedCurrentMs, now);
    }
    let decision = judged && judged.take ? outcome.decision : null;
    // No other switch, or only the return to the initial plan: a job that declared its layers may move
    // them (away from a slow rank, or back once it healed; docs/rebalancing.md). A re-balance taken
    // with every link healthy is that return too (delegation off), so a recovery never holds it up.
    if ((!decision || decision.kind === 'recovery') && job.committed) {
      const rebalanced = rebalanceForJob(job, input, snapshot, this.config, this.controlConfigFor(job), outcome.predictedStaticMs, now);
      if (rebalanced) this.metrics.decisions.inc({ job: job.jobId, kind: 'rebalance', verdict: rebalanced.record.verdict });
      if (rebalanced?.take && rebalanced.decision) {
        if (decision && judged) supersede(judged.record, decision);
        decision = decision ? { ...rebalanced.decision, delegation: decision.delegation } : rebalanced.decision;
        judged = rebalanced;
      }
    }
    if (decision && judged) {
      this.metrics.replans.inc({ job: job.jobId, kind: decision.kind });
      // Timed from now, not from the step's start: planning may have taken a while.
      const at = Math.max(now, this.clock.now());
      const publishing = this.clock.monotonicMs();
      if (!job.committed) await this.publisher.publishInitial(job, decision, at);
      else await this.publisher.prepare(job, decision, at);
      // The control loop's path, per stage, for the steps that publish (issue 23, item 4); `decide`
      // runs to the publish: planning, the version reservation, the cost gate, a refinement or re-balance.
      this.metrics.controlStages.observe({ stage: 'detect' }, (detected - started) / 1000);
      this.metrics.controlStages.observe({ stage: 'decide' }, (publishing - detected) / 1000);
      this.metrics.controlStages.observe({ stage: 'publish' }, (this.clock.monotonicMs() - publishing) / 1000);
      judged.record.scheduleVersion = job.handshake?.schedule.version ?? job.committed?.version ?? null;
    }
    // The healthy yardstick is a gauge, not part of the decision: priced after publishing, and not
    // waited for (on a busy machine the planning worker, niced, can take seconds to start; the job's
    // next step would wait behind it).
    this.refreshHealthy(job, input, now);
  }

  /**
   * Second phase of a reaction: the first plan (`control.planner`, Alg. 2 by default) is made in
   * milliseconds so the ranks get slackness and delegation at once; once it is in force and the
   * same links still straggle, the job is planned again with `control.refinePlanner` (the exact
   * planner for small jobs, the search above), which is never worse, and switched again when that
   * gains at least `minGain`. Runs once per first plan and set of straggling links
   * (JobRuntime.refineDue; `firstPhase`: what became of this step's first-phase decision).
   *
   * The step does not wait for it: the refinement runs on the planning pool's last lane and, once
   * made, triggers a step of its own, which takes it (returned here) if the same links still
   * straggle under the same schedule and nothing else was switched meanwhile. Why: a step that
   * waited held up the job's next reaction (its steps are serialized) and, on a busy pool, other
   * jobs' reactions queued behind it (issue 32: control step p99 1.5 s at 10,000 ranks).
   */
  private refine(job: JobRuntime, input: JobControlInput, firstPhase: 'none' | 'taken' | 'declined', mayGain: boolean): ControlOutcome | null {
    const links = stragglingLinks(input);
    const version = job.committed?.version ?? null;
    const pending = this.refinements.get(job);
    let made: ControlOutcome | null = null;
    if (pending && (pending.links !== links || pending.version !== version || firstPhase === 'taken')) this.refinements.delete(job);
    else if (pending?.outcome && firstPhase === 'none') {
      this.refinements.delete(job);
      made = pending.outcome;
    }
    const planner = this.config.control.refinePlanner;
    // Not where a lower bound shows no plan could be worth a switch (refinementHeadroom), nor where
    // the cost gate would decline the most it could gain (refinementMayPay): it would find nothing taken.
    if (job.refineDue(links, planner !== 'none' && planner !== this.config.control.planner && mayGain, firstPhase)) this.startRefinement(job, input, links!, version);
    return made;
  }

  private startRefinement(job: JobRuntime, input: JobControlInput, links: string, version: number | null): void {
    const refinement: PendingRefinement = { links, version, outcome: null };
    this.refinements.set(job, refinement);
    const started = this.clock.monotonicMs();
    const config = { ...this.controlConfigFor(job), planner: this.config.control.refinePlanner as ControlConfig['planner'] };
    const running: Promise<void> = this.decide(job, input, config, 'refining the plan', 'refinement')
      .then((outcome) => {
        this.metrics.refinementDuration.observe((this.clock.monotonicMs() - started) / 1000);
        if (this.refinements.get(job) !== refinement || job.released) return;
        if (!outcome?.decision) {
          this.refinements.delete(job);
          return;
        }
        refinement.outcome = outcome;
        void this.trigger(job);
      })
      .catch((error) => this.logger.error(`refinement of job ${job.jobId} failed: ${(error as Error).message}`))
      .finally(() => this.refining.delete(running));
    this.refining.add(running);
  }

  /** The cost gate on a decision (judgeForJob: logged in the job's decision log), counted by verdict. */
  private judge(job: JobRuntime, decision: ControlDecision, predictedCurrentMs: number | null, now: number): { take: boolean; record: DecisionRecord } {
    const judged = judgeForJob(job, decision, predictedCurrentMs, this.config, now);
    this.metrics.decisions.inc({ job: job.jobId, kind: decision.kind, verdict: judged.record.verdict });
    return judged;
  }

  /** A decision from the planning pool; null when planning failed (counted by the pool, logged here). */
  private async decide(job: JobRuntime, input: JobControlInput, config: ControlConfig, what: string, lane: PlanningLane = 'reaction'): Promise<ControlOutcome | null> {
    try {
      return await this.planning.decide(input, config, lane);
    } catch (error) {
      if (!(error instanceof PlanningError)) throw error;
      this.logger.error(`job ${job.jobId}: ${what} failed (${error.reason}): ${error.message.split('\n')[0]}`);
      return null;
    }
  }

  /**
   * Predicted iteration time of the initial plan with every link back at its learned baseline: the
   * yardstick for "the schedule in force cannot absorb the straggler" (docs/operations.md), set as
   * the `healthy` series of pipemorph_predicted_iteration_seconds. The same pure decision on the
   * input with the extra delays removed, on the planning pool's gauge lane, one at a time per job;
   * recomputed every HEALTHY_REFRESH_MS once the baselines are learned.
   */
  private refreshHealthy(job: JobRuntime, input: JobControlInput, now: number): void {
    const cached = this.healthy.get(job);
    if (cached && now - cached.at < HEALTHY_REFRESH_MS) {
      if (!job.released) this.metrics.predictedIteration.set({ job: job.jobId, schedule: 'healthy' }, cached.ms / 1000);
      return;
    }
    if (this.gauging.has(job)) return;
    const healthyInput: JobControlInput = {
      ...input,
      current: null,
      links: input.links.map((l) => ({ ...l, extraMs: 0, straggler: false, nicFailure: false })),
      // The rings too: a slow ring link is not the healthy job either.
      ...(input.topology ? { topology: { ...input.topology, dataParallelLinks: input.topology.dataParallelLinks.map((l) => ({ ...l, extraMs: 0, straggler: false })) } } : {}),
    };
    const gauge: Promise<void> = this.planning
      .decide(healthyInput, this.controlConfig, 'gauge')
      .then(({ predictedStaticMs: ms }) => {
        // Until every link has a learned baseline the value is provisional: recomputed at the next step.
        if (input.links.length > 0 && input.links.every((l) => Number.isFinite(l.baselineMs))) this.healthy.set(job, { at: now, ms });
        if (!job.released) this.metrics.predictedIteration.set({ job: job.jobId, schedule: 'healthy' }, ms / 1000);
      })
      .catch((error: Error) => {
        if (!(error instanceof PlanningError)) this.logger.error(`job ${job.jobId}: healthy yardstick failed: ${error.message}`);
      })
      .finally(() => this.gauging.delete(job));
    this.gauging.set(job, gauge);
  }

  private recordDetection(job: JobRuntime, snapshot: DetectionSnapshot): void {
    const worst = new Map<number, number>();
    for (const l of snapshot.pipelineLinks) worst.set(l.link, Math.max(worst.get(l.link) ?? 0, l.extraMs));
    for (const [link, ms] of worst) {
      this.metrics.linkExtraDelay.set({ job: job.jobId, link: String(link) }, ms / 1000);
      this.metrics.linkExtraDelayObserved.observe({ job: job.jobId, link: String(link) }, ms / 1000);
    }
    this.metrics.stragglers.set({ job: job.jobId, kind: 'pipeline' }, snapshot.pipelineLinks.filter((l) => l.straggler).length);
    this.metrics.stragglers.set({ job: job.jobId, kind: 'data_parallel' }, snapshot.dataParallelLinks.filter((l) => l.straggler).length);
    this.metrics.stragglers.set({ job: job.jobId, kind: 'compute' }, snapshot.compute.filter((c) => c.straggler).length);
  }
}
