import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../../core/clock/clock.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../../protocol/redis-keys';
import { CLOCK } from '../clock/clock.token';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { ControlService } from '../control/control.service';
import { IngestService } from '../ingest/ingest.service';
import { JobRegistry } from '../jobs/job-registry.service';
import { MetricsService } from '../metrics/metrics.service';
import { JOB_STORE, JobStore } from '../store/job-store.repository';

/**
 * Periodic work (run by node-cron, see DaemonLifecycle): stale ranks and jobs, claiming entries
 * a crashed consumer left behind, stream trimming, consumer lag, and re-evaluating every job
 * (recovery, drifting stage times, retries after an abort).
 */
/** Keys examined per maintenance run by the orphan sweep (SCAN COUNT). */
const ORPHAN_SCAN_COUNT = 1000;

@Injectable()
export class MaintenanceService {
  private readonly logger = new Logger(MaintenanceService.name);
  private orphanCursor = '0';

  constructor(
    @Inject(JOB_STORE) private readonly store: JobStore,
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly registry: JobRegistry,
    private readonly ingest: IngestService,
    private readonly control: ControlService,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async run(now = this.clock.now()): Promise<void> {
    // Registrations are read within a pass; the stream only needs to hold recent history.
    await this.store.trim(REGISTRATIONS_STREAM, this.config.ingest.registrationsMaxLen).catch((error) => this.logger.error(`trimming registrations failed: ${(error as Error).message}`));
    await this.sweepOrphans().catch((error) => this.logger.error(`sweeping orphan streams failed: ${(error as Error).message}`));
    for (const job of this.registry.all()) {
      if (job.released) continue; // let go while earlier jobs were maintained
      try {
        const { staleRankMs, staleJobMs } = this.config.jobs;
        const stale = job.progress.markStale(job.reporting.map((r) => r.rank), now, staleRankMs);
        this.metrics.staleRanks.set({ job: job.jobId }, stale);
        const lastSeen = job.progress.lastSeen(job.adoptedAt);
        if (now - lastSeen > staleJobMs) {
          await this.registry.expire(job.jobId);
          continue;
        }
        const stream = jobKeys(job.jobId).reports;
        this.ingest.requestClaim(job.jobId); // claimed by the ingest loop itself, between its reads
        await this.store.trim(stream, this.config.ingest.streamMaxLen);
        const pending = await this.store.pendingCount(stream, this.config.ingest.consumerGroup);
        const lag = await this.store.groupLag(stream, this.config.ingest.consumerGroup);
        if (job.released) continue; // let go meanwhile: its series are gone and must stay gone
        this.metrics.pendingEntries.set({ job: job.jobId }, pending);
        this.metrics.ingestLag.set({ job: job.jobId }, lag);
        await this.control.evaluate(this.registry.get(job.jobId) ?? job, now);
      } catch (error) {
        this.logger.error(`maintenance of job ${job.jobId} failed: ${(error as Error).message}`);
      }
    }
  }

  /** Reports streams of job ids never registered get a TTL of jobs.staleJobMs, a bounded SCAN step per run. */
  private async sweepOrphans(): Promise<void> {
    const known = new Set(await this.store.listJobs());
    const { cursor, expired } = await this.store.expireOrphanStreams(this.orphanCursor, known, this.config.jobs.staleJobMs, ORPHAN_SCAN_COUNT);
    this.orphanCursor = cursor;
    if (expired > 0) {
      this.metrics.orphanStreams.inc(expired);
      this.logger.warn(`${expired} reports streams of unregistered job ids will expire in ${this.config.jobs.staleJobMs} ms`);
    }
  }

  /** Fast path between cron ticks: handshake deadlines and deferred decisions. */
  async tick(now = this.clock.now()): Promise<void> {
    for (const job of this.registry.all()) {
      const open = job.switching.handshake;
      const due = (open && now >= open.deadline) || (job.needsEvaluation && !open && now >= job.switching.notBefore);
      // Triggered, not awaited: one job's planning does not hold up another's handshake deadline.
      if (due) this.control.trigger(job);
    }
  }
}
