import { Inject, Injectable, Logger } from '@nestjs/common';
import { LinkObservation } from '../../core/detect/job-detector';
import { parseRegistration, parseReportStreamMessage, RegisteredMarker } from '../../protocol/message-parser';
import { ProtocolError } from '../../protocol/protocol-error';
import { Ack, LinkSample, RankReport } from '../../protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM, REJECTED_REGISTRATIONS_STREAM } from '../../protocol/redis-keys';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { ControlService } from '../control/control.service';
import { JobRegistry } from '../jobs/job-registry.service';
import { JobRuntime } from '../jobs/job-runtime';
import { MetricsService } from '../metrics/metrics.service';
import { SchedulePublisher } from '../publish/schedule-publisher.service';
import { JOB_STORE, JobStore, StreamEntry } from '../store/job-store.repository';
import { inSpan } from '../tracing/tracer';

function toObservation(l: LinkSample): LinkObservation {
  return { peer: l.peer, kind: l.kind, bytes: l.bytes, medianMs: l.medianMs, maxMs: l.maxMs, delegated: l.delegated, error: l.error ?? null };
}

/**
 * Reads registrations and every owned job's reports with one consumer group: batched
 * XREADGROUP, processing, then XACK. Processing is idempotent (the detector drops a
 * (rank, iteration) it has seen; acks are sets), so a redelivered entry changes nothing.
 * A bad message is copied to the rejected stream with its reason and acknowledged; it never
 * stops the loop.
 */
@Injectable()
export class IngestService {
  private readonly logger = new Logger(IngestService.name);
  private running = false;
  private loop: Promise<void> | null = null;
  private lastBatchAt = 0;

  constructor(
    @Inject(JOB_STORE) private readonly store: JobStore,
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly registry: JobRegistry,
    private readonly control: ControlService,
    private readonly publisher: SchedulePublisher,
    private readonly metrics: MetricsService,
  ) {}

  get consumer(): string {
    return this.registry.replicaId;
  }

  /** Ready = the loop runs and has completed a read recently. */
  get healthy(): boolean {
    return this.running && Date.now() - this.lastBatchAt < Math.max(5000, 4 * this.config.ingest.blockMs);
  }

  async start(): Promise<void> {
    if (this.running) return;
    await this.store.ensureGroup(REGISTRATIONS_STREAM, this.config.ingest.consumerGroup);
    this.running = true;
    this.lastBatchAt = Date.now();
    this.loop = this.run();
  }

  /** Stops reading; the batch in hand is finished and acknowledged before this resolves. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    this.loop = null;
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.claimForAdopted();
        const streams = [REGISTRATIONS_STREAM, ...this.registry.reportStreams()];
        const { consumerGroup, batchSize, blockMs } = this.config.ingest;
        const batches = await this.store.readNew(streams, consumerGroup, this.consumer, batchSize, blockMs);
        this.lastBatchAt = Date.now();
        this.metrics.ingestLastRead.set(this.lastBatchAt / 1000);
        for (const batch of batches) await this.processStream(batch.stream, batch.entries);
      } catch (error) {
        this.metrics.ingestErrors.inc();
        this.logger.error(`ingest pass failed: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  /** A job this replica just took: warm its detector from history, then claim what a crashed consumer left unacknowledged. */
  async claimForAdopted(): Promise<void> {
    for (const jobId of [...this.registry.adoptedSinceClaim]) {
      this.registry.adoptedSinceClaim.delete(jobId);
      const job = this.registry.get(jobId);
      if (job) await this.replayHistory(job);
      await this.claimIdle(jobId, 0);
    }
  }

  /**
   * Feeds the detector the reports the previous owner already processed (back to the last
   * registration), so baselines and windows are as before: a link that is slow when the job
   * changes hands must not be learned as healthy. History is not counted and triggers nothing.
   */
  private async replayHistory(job: JobRuntime): Promise<void> {
    const maxEntries = Math.min(200000, Math.ceil(this.config.ingest.historyIterations * job.reporting.length * 1.25));
    if (maxEntries === 0) return;
    const entries = await this.store.delivered(jobKeys(job.jobId).reports, this.config.ingest.consumerGroup, maxEntries);
    let start = 0;
    for (let k = entries.length - 1; k >= 0; k--) {
      if (entries[k].message?.includes('"registered"')) {
        start = k + 1;
        break;
      }
    }
    for (const entry of entries.slice(start)) {
      try {
        const message = parseReportStreamMessage(entry.message, job.jobId);
        if (message.type !== 'report' || !job.positionOf.has(message.rank) || !job.layoutOf(message.scheduleVersion, message.iteration)) continue;
        job.detector.observe(message.rank, message.iteration, message.computeMs, message.links.map(toObservation));
        job.noteIteration(message.rank, message.iteration, Date.now(), false);
      } catch {
        // History that was rejected when it arrived stays rejected.
      }
    }
  }

  /** Claims and processes entries idle longer than minIdleMs (all of them on adoption). */
  async claimIdle(jobId: string, minIdleMs = this.config.ingest.claimIdleMs): Promise<number> {
    const stream = jobKeys(jobId).reports;
    let claimed = 0;
    for (;;) {
      const entries = await this.store.claimIdle(stream, this.config.ingest.consumerGroup, this.consumer, minIdleMs, this.config.ingest.batchSize);
      if (entries.length === 0) break;
      claimed += entries.length;
      await this.processStream(stream, entries);
      if (entries.length < this.config.ingest.batchSize) break;
    }
    return claimed;
  }

  async processStream(stream: string, entries: StreamEntry[]): Promise<void> {
    this.metrics.ingestBatches.inc();
    if (stream === REGISTRATIONS_STREAM) {
      for (const entry of entries) await this.handleRegistration(entry);
      await this.store.ack(stream, this.config.ingest.consumerGroup, entries.map((e) => e.id));
      return;
    }
    const job = this.registry.forStream(stream);
    if (!job) return; // lost the job meanwhile: leave the entries pending for the new owner
    // One span per control pass: ingest of the batch -> detection and planning -> publish.
    await inSpan('pipemorph.control_pass', { 'pipemorph.job': job.jobId, 'pipemorph.entries': entries.length }, async () => {
      let evaluate = false;
      const now = Date.now();
      await inSpan('pipemorph.ingest', { 'pipemorph.job': job.jobId }, async (span) => {
        for (const entry of entries) evaluate = (await this.handleJobMessage(job, entry, now)) || evaluate;
        span.setAttribute('pipemorph.reports_total', job.counters.reports);
      });
      const current = this.registry.get(job.jobId) ?? job; // a registered marker may have replaced the runtime
      if (evaluate || current.needsEvaluation) await this.control.evaluate(current);
      // Acknowledged only once fully handled (decision included): an entry left pending is redone, idempotently.
      await this.store.ack(stream, this.config.ingest.consumerGroup, entries.map((e) => e.id));
    });
  }

  private async handleRegistration(entry: StreamEntry): Promise<void> {
    try {
      const registration = parseRegistration(entry.message);
      await this.store.saveSpec(registration, entry.id);
      const marker: RegisteredMarker = { type: 'registered', protocol: 1, jobId: registration.jobId, registrationId: entry.id };
      // The owner (maybe another replica) reloads the job in order with its reports.
      await this.store.append(jobKeys(registration.jobId).reports, JSON.stringify(marker), this.config.ingest.streamMaxLen);
      this.metrics.ingestMessages.inc({ type: 'register', result: 'accepted' });
      if (!this.registry.get(registration.jobId)) await this.registry.discover();
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.metrics.ingestMessages.inc({ type: 'register', result: 'rejected' });
      await this.store.reject(REJECTED_REGISTRATIONS_STREAM, entry.message, error.message, this.config.ingest.rejectedMaxLen);
    }
  }

  /** Returns whether the job should be re-evaluated now. */
  private async handleJobMessage(job: JobRuntime, entry: StreamEntry, now: number): Promise<boolean> {
    let type = 'unknown';
    try {
      const message = parseReportStreamMessage(entry.message, job.jobId);
      type = message.type;
      if (message.type === 'registered') {
        // Each registration resets the job (e.g. resumed from a checkpoint, iterations repeat),
        // except the one this runtime was just built from.
        if (message.registrationId === job.registrationId) {
          this.metrics.ingestMessages.inc({ type, result: 'duplicate' });
          return false;
        }
        const fresh = await this.registry.adopt(job.jobId);
        this.metrics.ingestMessages.inc({ type, result: 'accepted' });
        if (fresh) fresh.needsEvaluation = true;
        return false;
      }
      const current = this.registry.get(job.jobId) ?? job;
      if (!current.positionOf.has(message.rank)) throw new ProtocolError(`rank ${message.rank} is not a reporting rank (tp 0) of job ${job.jobId}`);
      if (message.type === 'ack') {
        current.counters.acks++;
        this.metrics.ingestMessages.inc({ type, result: 'accepted' });
        await current.serialize(() => this.publisher.onAck(current, message as Ack, now));
        return false;
      }
      return this.handleReport(current, message, now);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      job.counters.rejected++;
      this.metrics.ingestMessages.inc({ type, result: 'rejected' });
      await this.store.reject(jobKeys(job.jobId).rejected, entry.message, error.message, this.config.ingest.rejectedMaxLen);
      return false;
    }
  }

  private handleReport(job: JobRuntime, report: RankReport, now: number): boolean {
    if (!job.layoutOf(report.scheduleVersion, report.iteration)) {
      // Written before the ranks switched to a re-mapped layout: its links name old neighbours.
      job.noteIteration(report.rank, report.iteration, now, true, report.iterationMs);
      this.metrics.ingestMessages.inc({ type: 'report', result: 'stale_layout' });
      return false;
    }
    const result = job.detector.observe(report.rank, report.iteration, report.computeMs, report.links.map(toObservation));
    if (result.duplicate) {
      job.counters.duplicates++;
      this.metrics.ingestMessages.inc({ type: 'report', result: 'duplicate' });
      return false;
    }
    job.counters.reports++;
    job.noteIteration(report.rank, report.iteration, now, true, report.iterationMs);
    job.recordHistory(report);
    this.metrics.ingestMessages.inc({ type: 'report', result: 'accepted' });
    return result.changed || (!job.committed && job.needsEvaluation);
  }
}
