import { Inject, Injectable, Logger } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import { ControlDecision } from '../../core/control/control-decision.type';
import { Ack, ControlEvent, PublishedSchedule } from '../../protocol/protocol-v1.type';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { JobRuntime } from '../jobs/job-runtime';
import { AbortReason, MetricsService } from '../metrics/metrics.service';
import { FencedResult, JOB_STORE, JobStore } from '../store/job-store.repository';
import { currentTraceId, inSpan } from '../tracing/tracer';
import { publishedScheduleOf } from './published-schedule';
import { switchLead } from './switch-lead';

const MAX_BACKOFF_MS = 30000;

/**
 * Publishes schedules with the switching handshake of docs/protocol.md: prepare with an
 * effective iteration far enough ahead of the ranks' progress, collect an acknowledgement
 * from every reporting rank, then commit; abort on a refusal or at the deadline and let the
 * controller prepare again (new version, later iteration) after a back-off.
 */
@Injectable()
export class SchedulePublisher {
  private readonly logger = new Logger(SchedulePublisher.name);
  /** The version allocation in flight per job (reserveVersion). */
  private readonly reserving = new WeakMap<JobRuntime, Promise<void>>();

  constructor(
    @Inject(JOB_STORE) private readonly store: JobStore,
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly metrics: MetricsService,
  ) {}

  /** The metrics, unless the runtime was let go (its series are gone and must stay gone, docs/operations.md#metrics). */
  private metricsFor(job: JobRuntime): MetricsService | null {
    return job.released ? null : this.metrics;
  }

  /** First schedule of a job: committed at once with effective iteration 0 (no rank runs yet). */
  async publishInitial(job: JobRuntime, decision: ControlDecision, now: number): Promise<void> {
    const schedule = await this.build(job, decision, 'committed', 0, now);
    if (!schedule) return;
    const result = this.noted(job, await this.reservingNext(job, this.store.commitDirect(job.jobId, job.epoch, schedule, this.event('commit', schedule), this.config.ingest.controlMaxLen)));
    this.metricsFor(job)?.publishes.inc({ job: job.jobId, outcome: result === 'ok' ? 'committed' : result });
    if (result === 'ok') this.committed(job, schedule, now);
  }

  /** Starts a switch to the decided schedule. */
  prepare(job: JobRuntime, decision: ControlDecision, now: number): Promise<void> {
    return inSpan('pipemorph.publish', { 'pipemorph.job': job.jobId, 'pipemorph.reason': decision.kind, 'pipemorph.step': 'prepare' }, () => this.doPrepare(job, decision, now));
  }

  private async doPrepare(job: JobRuntime, decision: ControlDecision, now: number): Promise<void> {
    if (job.switching.handshake) return;
    // Moved ranks load another stage's weights first: a re-map gets more notice.
    const lead = switchLead(job, decision, this.config);
    // When report m arrives the fastest rank is already inside m + 1 (it read control at that
    // iteration's start, before this prepare existed), so the first read that can see the prepare is at
    // the start of m + 2: count the lead from there, or a rank following protocol sec. 4 hears the
    // prepare only at E itself with lead 2 and must refuse it as late. A step between reports (a
    // refinement finishing, a slow ingest pass) counts from where the ranks are by now.
    const effectiveIteration = Math.max(0, job.progress.iterationAt(now, this.config.jobs.staleRankMs)) + 1 + lead;
    const schedule = await this.build(job, decision, 'prepared', effectiveIteration, now);
    if (!schedule) return;
    trace.getActiveSpan()?.setAttributes({ 'pipemorph.version': schedule.version, 'pipemorph.effective_iteration': effectiveIteration, 'pipemorph.links': schedule.reason.links.map((l) => `dp${l.dp}:${l.link}`).join(' ') });
    const result = this.noted(job, await this.reservingNext(job, this.store.prepare(job.jobId, job.epoch, schedule, this.event('prepare', schedule), this.config.ingest.controlMaxLen)));
    this.metricsFor(job)?.publishes.inc({ job: job.jobId, outcome: result === 'ok' ? 'prepared' : result });
    if (result !== 'ok') {
      this.logger.warn(`job ${job.jobId}: prepare of version ${schedule.version} refused (${result})`);
      return;
    }
    job.switching.opened(schedule, now + this.config.handshake.prepareTimeoutMs, decision);
    this.metricsFor(job)?.handshakeOpen.set({ job: job.jobId }, 1);
    this.metricsFor(job)?.unackedRanks.set({ job: job.jobId }, job.reporting.length);
    this.logger.log(`job ${job.jobId}: prepared version ${schedule.version} for iteration ${effectiveIteration} (${decision.kind}: ${decision.detail})`);
  }

  async onAck(job: JobRuntime, ack: Ack, now: number): Promise<void> {
    const open = job.switching.handshake;
    if (!open || ack.version !== open.schedule.version || ack.epoch !== job.epoch) return; // late or duplicate: harmless
    if (!ack.accepted) {
      await this.abort(job, 'refused', `rank ${ack.rank} refused: ${ack.reason ?? 'no reason given'}`, now);
      return;
    }
    job.switching.acknowledged(ack.rank);
    this.metricsFor(job)?.unackedRanks.set({ job: job.jobId }, job.reporting.filter((r) => !open.acked.has(r.rank)).length);
    if (job.reporting.every((r) => open.acked.has(r.rank))) await this.commit(job, now);
  }

  /** Aborts handshakes whose deadline passed, naming the ranks that did not answer. */
  async expire(job: JobRuntime, now: number): Promise<void> {
    const open = job.switching.handshake;
    if (!open || now < open.deadline) return;
    const silent = job.reporting.filter((r) => !open.acked.has(r.rank)).map((r) => r.rank);
    await this.abort(job, 'timeout', `timeout: ranks ${silent.slice(0, 16).join(', ')}${silent.length > 16 ? ', ...' : ''} did not acknowledge`, now);
  }

  /** Under a new epoch, a prepare left by the previous owner is dropped: it can no longer be committed. */
  async abandonPending(job: JobRuntime, pending: PublishedSchedule): Promise<void> {
    const event: ControlEvent = { ...this.event('abort', pending), epoch: job.epoch, reason: 'daemon replica changed' };
    const result = this.noted(job, await this.store.abort(job.jobId, job.epoch, event, this.config.ingest.controlMaxLen));
    this.metricsFor(job)?.publishes.inc({ job: job.jobId, outcome: result === 'ok' ? 'aborted' : result });
    if (result === 'ok') this.metricsFor(job)?.handshakeAborts.inc({ job: job.jobId, reason: 'replica_changed' });
  }

  private async commit(job: JobRuntime, now: number): Promise<void> {
    const open = job.switching.handshake!;
    const schedule: PublishedSchedule = { ...open.schedule, state: 'committed' };
    const result = this.noted(job, await this.store.commit(job.jobId, job.epoch, schedule, this.event('commit', schedule), this.config.ingest.controlMaxLen));
    this.metricsFor(job)?.publishes.inc({ job: job.jobId, outcome: result === 'ok' ? 'committed' : result });
    job.switching.closedByCommit(result === 'ok');
    this.metricsFor(job)?.handshakeOpen.set({ job: job.jobId }, 0);
    this.metricsFor(job)?.unackedRanks.set({ job: job.jobId }, 0);
    if (result === 'ok') {
      this.committed(job, schedule, now);
      this.logger.log(`job ${job.jobId}: committed version ${schedule.version} from iteration ${schedule.effectiveIteration}`);
    } else {
      this.logger.warn(`job ${job.jobId}: commit of version ${schedule.version} refused (${result})`);
    }
  }

  private async abort(job: JobRuntime, cause: AbortReason, reason: string, now: number): Promise<void> {
    const open = job.switching.handshake!;
    const result = this.noted(job, await this.store.abort(job.jobId, job.epoch, { ...this.event('abort', open.schedule), reason }, this.config.ingest.controlMaxLen));
    this.metricsFor(job)?.publishes.inc({ job: job.jobId, outcome: result === 'ok' ? 'aborted' : result });
    this.metricsFor(job)?.handshakeAborts.inc({ job: job.jobId, reason: cause });
    job.switching.closedByAbort(now, (streak) => Math.min(MAX_BACKOFF_MS, this.config.handshake.retryBackoffMs * 2 ** (streak - 1)));
    this.metricsFor(job)?.handshakeOpen.set({ job: job.jobId }, 0);
    this.metricsFor(job)?.unackedRanks.set({ job: job.jobId }, 0);
    job.requestEvaluation();
    this.logger.warn(`job ${job.jobId}: aborted version ${open.schedule.version}: ${reason}`);
  }

  /**
   * A write refused as fenced marks the runtime: the job's epoch is no longer its own, and every
   * later write would be refused too. Discovery then takes the job again under a new epoch if this
   * replica still holds the lease, or lets it go (JobRegistry.retakeFenced).
   */
  private noted(job: JobRuntime, result: FencedResult): FencedResult {
    if (result === 'fenced') job.noteFenced();
    return result;
  }

  private committed(job: JobRuntime, schedule: PublishedSchedule, now: number): void {
    job.switching.committed(now, schedule.reason.kind === 'remap', this.config.control.minReplanIntervalMs);
    job.noteCommitted(schedule);
    this.metricsFor(job)?.scheduleInForce(job.jobId, schedule);
  }

  /**
   * Allocates the version the next publish will use ahead of its decision, so that a prepare is one
   * Redis round trip after its decision, not two: the step starts it beside planning, and every
   * publish that takes it starts the next one at once, so a job in steady state always holds one and
   * its next switch waits for no allocation at all. Kept until a publish takes it (a decision to
   * change nothing leaves it for the next one; a version reserved but never published is skipped,
   * docs/protocol.md); one allocation per job at a time; failures are left to the publish, which
   * allocates again and handles a fenced epoch.
   */
  reserveVersion(job: JobRuntime): Promise<void> {
    if (job.switching.reserved !== null || job.released) return Promise.resolve();
    let pending = this.reserving.get(job);
    if (!pending) {
      pending = this.store
        .nextVersion(job.jobId, job.epoch, job.versionFloor())
        .catch(() => 'failed' as const)
        .then((version) => {
          if (version === 'fenced') job.noteFenced();
          if (typeof version === 'number' && !job.released) job.switching.reserve(version);
        })
        .finally(() => this.reserving.delete(job));
      this.reserving.set(job, pending);
    }
    return pending;
  }

  /** Starts the next switch's version behind `publishing` (so above its version) while nothing waits for it. */
  private reservingNext<T>(job: JobRuntime, publishing: Promise<T>): Promise<T> {
    void this.reserveVersion(job);
    return publishing;
  }

  private async build(job: JobRuntime, decision: ControlDecision, state: PublishedSchedule['state'], effectiveIteration: number, now: number): Promise<PublishedSchedule | null> {
    // One allocation at a time per job, so versions come out in the order they are used: one in flight is this publish's.
    await this.reserving.get(job);
    const version = job.switching.takeReserved(job.versionFloor()) ?? (await this.store.nextVersion(job.jobId, job.epoch, job.versionFloor()));
    if (version === 'fenced') {
      job.noteFenced();
      this.metricsFor(job)?.publishes.inc({ job: job.jobId, outcome: 'fenced' });
      this.logger.warn(`job ${job.jobId}: epoch ${job.epoch} is fenced; the job's epoch changed (another replica took it, or a write behind this one's back)`);
      return null;
    }
    return publishedScheduleOf(job, decision, { version, state, effectiveIteration, now, traceId: currentTraceId() });
  }

  private event(type: ControlEvent['type'], schedule: PublishedSchedule): ControlEvent {
    return { type, protocol: 1, jobId: schedule.jobId, version: schedule.version, epoch: schedule.epoch, effectiveIteration: schedule.effectiveIteration };
  }
}
