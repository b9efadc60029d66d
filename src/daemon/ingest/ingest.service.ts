import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../../core/clock/clock.type';
import { sleep } from '../../core/clock/sleep';
import { parseRegistration, parseReportStreamMessage, RegisteredMarker } from '../../protocol/message-parser';
import { ProtocolError } from '../../protocol/protocol-error';
import { Ack, RankReport } from '../../protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM, REJECTED_REGISTRATIONS_STREAM } from '../../protocol/redis-keys';
import { CLOCK } from '../clock/clock.token';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { ControlService } from '../control/control.service';
import { JobRegistry } from '../jobs/job-registry.service';
import { JobRuntime, toObservation } from '../jobs/job-runtime';
import { MetricsService } from '../metrics/metrics.service';
import { SchedulePublisher } from '../publish/schedule-publisher.service';
import { JOB_STORE, JobStore, StreamEntry } from '../store/job-store.repository';
import { clusterReplyMisconfiguration } from '../redis/redis-mode.util';
import { inSpan } from '../tracing/tracer';

/** How long a stream that cannot be read or repaired is skipped before it is tried again. */
const QUARANTINE_MS = 5000;
/** Ingest passes failing in a row that make the replica unready: one failure is a blip, three a replica that cannot read. */
export const FAILED_PASSES_UNREADY = 3;
/**
 * Longest the loop processes one batch's entries before it lets the event loop run (timers, HTTP,
 * control steps, acks): a batch of 1000 reports of a 4096-rank job held it for 100-250 ms (issue 23, item 5).
 */
const INGEST_SLICE_MS = 10;

/** Errors that come from one stream's state, not from Redis being unreachable. */
function isStreamError(error: unknown): boolean {
  return /NOGROUP|WRONGTYPE|no such key/i.test(String((error as Error)?.message ?? ''));
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
  /** Ingest passes that failed in a row, and the newest failure's first line. */
  private failedPasses = 0;
  private lastFailure = '';
  /** The line that says REDIS_URL names a Cluster node, while the newest pass got such a reply (MOVED, CROSSSLOT). */
  private clusterMisconfigured: string | null = null;
  /** When the loop last completed a pass (read and processed), for liveness. */
  private lastPassAt: number;
  /** Streams that cannot be read or repaired (e.g. a key of another type): skipped until the time given, so other jobs go on. */
  private readonly quarantined = new Map<string, number>();
  /** Batches being processed, or waiting for their job's decision, per stream. */
  private readonly inFlight = new Map<string, number>();
  /** Acknowledgements waiting for a decision (ControlService.trigger). */
  private readonly acking = new Set<Promise<void>>();
  /**
   * Jobs whose idle pending entries maintenance asked to claim. The loop claims them between its
   * passes, never while a read is in hand: entries delivered by a read whose reply is slow to
   * arrive (large messages, a loaded machine) are idle in Redis's eyes too, and a concurrent claim
   * would process them a second time.
   */
  private readonly claimsRequested = new Set<string>();

  constructor(
    @Inject(JOB_STORE) private readonly store: JobStore,
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly registry: JobRegistry,
    private readonly control: ControlService,
    private readonly publisher: SchedulePublisher,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.lastPassAt = clock.now();
  }

  get consumer(): string {
    return this.registry.replicaId;
  }

  /**
   * Ready = the loop runs, has completed a read recently, and its last FAILED_PASSES_UNREADY passes
   * did not all fail: a replica whose every pass fails (a Cluster node given as REDIS_URL answers
   * MOVED and EXECABORT) can lead no job, and must not be taken for ready (issue 32, item 2).
   */
  get healthy(): boolean {
    return this.running && this.clusterMisconfigured === null && this.failedPasses < FAILED_PASSES_UNREADY && this.clock.now() - this.lastBatchAt < Math.max(5000, 4 * this.config.ingest.blockMs);
  }

  /** Why the loop is not ready, for /health/ready; null when it is. */
  get unreadyReason(): string | null {
    if (this.clusterMisconfigured !== null) return this.clusterMisconfigured;
    if (!this.running) return 'ingest loop not running';
    if (this.failedPasses >= FAILED_PASSES_UNREADY) return `the last ${this.failedPasses} ingest passes failed: ${this.lastFailure}`;
    if (!this.healthy) return 'no ingest pass completed recently';
    return null;
  }

  /**
   * Whether the loop completed a pass within `ingest.stallTimeoutMs` (counted from start-up before
   * it runs). A loop stuck in failing passes makes liveness fail (HealthController), so Kubernetes
   * restarts the pod instead of leaving it unready for ever (issue 11, fault 1).
   */
  get live(): boolean {
    return this.clock.now() - this.lastPassAt < this.config.ingest.stallTimeoutMs;
  }

  async start(): Promise<void> {
    if (this.running) return;
    try {
      await this.store.ensureGroup(REGISTRATIONS_STREAM, this.config.ingest.consumerGroup);
    } catch (error) {
      // The lifecycle retries the start for ever; a Cluster node's MOVED must be said for what it is.
      this.noteClusterReply(clusterReplyMisconfiguration(error as Error, this.config));
      throw error;
    }
    this.running = true;
    this.lastBatchAt = this.clock.now();
    this.lastPassAt = this.lastBatchAt;
    this.loop = this.run();
  }

  /** Stops reading; the batch in hand is finished, decided and acknowledged before this resolves. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    this.loop = null;
    await this.acknowledged();
  }

  /** Resolves once every batch waiting for its job's decision has been acknowledged. */
  async acknowledged(): Promise<void> {
    while (this.acking.size > 0) await Promise.allSettled([...this.acking]);
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.claimForAdopted();
        await this.claimRequested();
        const now = this.clock.now();
        const streams = [REGISTRATIONS_STREAM, ...this.registry.reportStreams().filter((s) => (this.quarantined.get(s) ?? 0) <= now)];
        const { consumerGroup, batchSize, blockMs } = this.config.ingest;
        const { batches, failed } = await this.store.readNew(streams, consumerGroup, this.consumer, batchSize, blockMs);
        this.noteClusterReply(failed.map((f) => clusterReplyMisconfiguration(f.error, this.config)).find((line) => line !== null) ?? null);
        if (failed.length > 0) {
          // Only the failing streams are repaired or set aside; the others' entries are processed below.
          this.metrics.ingestErrors.inc();
          const broken = await this.repair(failed.map((f) => f.stream), failed[0].error);
          if (broken.includes(REGISTRATIONS_STREAM)) {
            // No registration can be read: the pass does not count (liveness), whatever else was read.
            for (const batch of batches) await this.processStream(batch.stream, batch.entries);
            await sleep(this.clock, 500);
            continue;
          }
        }
        this.lastBatchAt = this.clock.now();
        this.lastPassAt = this.lastBatchAt;
        this.failedPasses = 0;
        this.metrics.ingestLastRead.set(this.lastBatchAt / 1000);
        for (const batch of batches) await this.processStream(batch.stream, batch.entries);
      } catch (error) {
        this.metrics.ingestErrors.inc();
        this.failedPasses++;
        this.lastFailure = (error as Error).message.split('\n')[0];
        const misconfigured = clusterReplyMisconfiguration(error as Error, this.config);
        if (misconfigured !== null) this.noteClusterReply(misconfigured);
        this.logger.error(`ingest pass failed: ${(error as Error).message}`);
        await sleep(this.clock, 500);
      }
    }
  }

  /**
   * A Cluster node's reply (MOVED on a job's stream, EXECABORT of a transaction across slots) never
   * heals by retrying: the replica is unready while its reads get them, and says why in one line,
   * once, not at every pass (issue 32, item 2: a server swapped under a running daemon).
   */
  private noteClusterReply(line: string | null): void {
    if (line !== null && this.clusterMisconfigured === null) this.logger.error(line);
    this.clusterMisconfigured = line;
  }

  /**
   * After reads failed on streams' state (NOGROUP: a deleted stream, or Redis lost its data;
   * WRONGTYPE: a key of another type): recreates each such stream's group (from 0: nothing written
   * since is skipped) and sets aside, for a while, a stream that cannot be repaired; returns those.
   * Other jobs' streams are read meanwhile. A lost registrations stream means Redis lost its data: discovery
   * then restores the jobs this replica leads (JobRegistry.restoreLost).
   */
  private async repair(streams: readonly string[], cause: string): Promise<string[]> {
    this.logger.warn(`ingest read failed (${cause}); repairing ${streams.join(', ')}`);
    const broken: string[] = [];
    const group = this.config.ingest.consumerGroup;
    let lostRegistrations = false;
    for (const stream of streams) {
      try {
        const created = await this.store.ensureGroup(stream, group);
        if (created) {
          this.metrics.streamRepairs.inc({ result: 'repaired' });
          this.logger.warn(`stream ${stream}: consumer group recreated`);
          if (stream === REGISTRATIONS_STREAM) lostRegistrations = true;
        }
        this.quarantined.delete(stream);
      } catch (error) {
        if (!isStreamError(error)) throw error;
        this.metrics.streamRepairs.inc({ result: 'quarantined' });
        this.quarantined.set(stream, this.clock.now() + QUARANTINE_MS);
        broken.push(stream);
        this.logger.error(`stream ${stream}: cannot be read (${(error as Error).message}); skipped for ${QUARANTINE_MS} ms, other jobs go on`);
      }
    }
    if (lostRegistrations) await this.registry.discover();
    return broken;
  }

  /** Asks the loop to claim `jobId`'s entries idle longer than ingest.claimIdleMs at its next pass. */
  requestClaim(jobId: string): void {
    this.claimsRequested.add(jobId);
  }

  private async claimRequested(): Promise<void> {
    for (const jobId of [...this.claimsRequested]) {
      this.claimsRequested.delete(jobId);
      if (this.registry.get(jobId)) await this.claimIdle(jobId);
    }
  }

  /** A job this replica just took: warm its detector from history, then claim what a crashed consumer left unacknowledged. */
  async claimForAdopted(): Promise<void> {
    const failed: string[] = [];
    for (const jobId of this.registry.takeAdopted()) {
      // One job's failed round trip (a Redis timeout under load) must not leave the jobs after it
      // unclaimed: each is tried, and a failed one is handed out again at the next pass.
      try {
        const job = this.registry.get(jobId);
        if (job) await this.replayOnce(job);
        await this.claimIdle(jobId, 0);
      } catch (error) {
        failed.push(jobId);
        this.metrics.ingestErrors.inc();
        this.logger.warn(`claiming adopted job ${jobId} failed (${(error as Error).message.split('\n')[0]}): tried again at the next pass`);
      }
    }
    this.registry.returnAdopted(failed);
  }

  /** Replays the job's history into a runtime that has not had it yet. */
  private async replayOnce(job: JobRuntime): Promise<void> {
    if (job.historyReplayed) return;
    await this.replayHistory(job);
    // Decisions wait for the replay (ControlService): an empty detector would undo an adapted schedule.
    job.markHistoryReplayed();
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
        if (message.type !== 'report' || !job.positionOf.has(message.rank)) continue;
        const verdict = job.layout.acceptReport(message.scheduleVersion, message.iteration);
        if (verdict === 'switched') job.requestEvaluation();
        if (verdict === 'stale-layout') continue;
        job.detector.observe(message.rank, message.iteration, message.computeMs, message.links.map(toObservation));
        job.progress.noteIteration(message.rank, message.iteration, this.clock.now(), false);
      } catch {
        // History that was rejected when it arrived stays rejected.
      }
    }
  }

  /** Claims and processes entries idle longer than minIdleMs (all of them on adoption). */
  async claimIdle(jobId: string, minIdleMs = this.config.ingest.claimIdleMs): Promise<number> {
    const stream = jobKeys(jobId).reports;
    // Entries of a batch still being processed are pending and age too: claiming them would process them twice.
    if ((this.inFlight.get(stream) ?? 0) > 0) return 0;
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
    this.inFlight.set(stream, (this.inFlight.get(stream) ?? 0) + 1);
    try {
      await this.processEntries(stream, entries);
    } finally {
      this.inFlight.set(stream, this.inFlight.get(stream)! - 1);
    }
  }

  private async processEntries(stream: string, entries: StreamEntry[]): Promise<void> {
    this.metrics.ingestBatches.inc();
    if (stream === REGISTRATIONS_STREAM) {
      for (const entry of entries) await this.handleRegistration(entry);
      await this.store.ack(stream, this.config.ingest.consumerGroup, entries.map((e) => e.id));
      return;
    }
    const job = this.registry.forStream(stream);
    if (!job) return; // lost the job meanwhile: leave the entries pending for the new owner
    // A runtime rebuilt while this batch was being read (a job taken again under a new epoch) gets
    // the history first: fed these reports into an empty detector, a link slow at that moment would
    // be learned as its baseline (the batch is pending, so the history ends before it).
    await this.replayOnce(job);
    // One span per control pass: ingest of the batch -> detection and planning -> publish.
    await inSpan('pipemorph.control_pass', { 'pipemorph.job': job.jobId, 'pipemorph.entries': entries.length }, async () => {
      let evaluate = false;
      const now = this.clock.now();
      await inSpan('pipemorph.ingest', { 'pipemorph.job': job.jobId }, async (span) => {
        let slice = performance.now();
        for (const entry of entries) {
          evaluate = (await this.handleJobMessage(job, entry, now)) || evaluate;
          if (performance.now() - slice > INGEST_SLICE_MS) {
            await new Promise((resolve) => setImmediate(resolve));
            slice = performance.now();
          }
        }
        span.setAttribute('pipemorph.reports_total', job.ingestCounts.reports);
      });
      const current = this.registry.get(job.jobId) ?? job; // a registered marker may have replaced the runtime
      const ids = entries.map((e) => e.id);
      if (!(evaluate || current.needsEvaluation)) {
        await this.store.ack(stream, this.config.ingest.consumerGroup, ids);
        return;
      }
      // The decision runs beside the loop (ControlService.trigger), so a slow plan does not delay
      // reading; the entries are acknowledged once it is made. Until then they are pending: a
      // replica that takes the job over meanwhile claims them and decides.
      this.afterDecision(stream, this.control.trigger(current), ids);
    });
  }

  /** Acknowledges `ids` once `decided` settles; the stream counts as in flight until then (no claims). */
  private afterDecision(stream: string, decided: Promise<void>, ids: string[]): void {
    this.inFlight.set(stream, (this.inFlight.get(stream) ?? 0) + 1);
    const ack: Promise<void> = decided
      .then(() => this.store.ack(stream, this.config.ingest.consumerGroup, ids))
      .then(
        () => undefined,
        (error: Error) => {
          // Left pending: claimed and processed again (idempotently) once idle.
          this.metrics.ingestErrors.inc();
          this.logger.error(`acknowledging ${ids.length} entries of ${stream} failed: ${error.message}`);
        },
      )
      .finally(() => {
        this.inFlight.set(stream, this.inFlight.get(stream)! - 1);
        this.acking.delete(ack);
      });
    this.acking.add(ack);
  }

  private async handleRegistration(entry: StreamEntry): Promise<void> {
    try {
      const registration = parseRegistration(entry.message);
      // What the schema allows can block the control loop for seconds (64 x 16384: 3.4 s): refuse
      // at registration what the planner cannot plan within its budget (docs/operations.md).
      const cells = registration.stages * registration.microbatches;
      const { maxPlanCells } = this.config.control;
      if (cells > maxPlanCells) {
        throw new ProtocolError(`registration: stages x microbatches = ${registration.stages} x ${registration.microbatches} = ${cells} is more than control.maxPlanCells (${maxPlanCells}), what the planner handles within the control budget`);
      }
      await this.store.saveSpec(registration, entry.id);
      const marker: RegisteredMarker = { type: 'registered', protocol: 1, jobId: registration.jobId, registrationId: entry.id };
      // The owner (maybe another replica) reloads the job in order with its reports.
      await this.store.append(jobKeys(registration.jobId).reports, JSON.stringify(marker), this.config.ingest.streamMaxLen);
      this.metrics.ingestMessages.inc({ type: 'register', result: 'accepted' });
      // Only this job is taken (O(1) round trips): a whole discovery per registration renewed every
      // lease one after the other, so a burst of N registrations cost O(N^2) round trips while no
      // report was read (issue 23, item 6). Leases of the others are renewed by periodic discovery.
      await this.registry.take(registration.jobId, true);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.metrics.ingestMessages.inc({ type: 'register', result: 'rejected' });
      await this.store.reject(REJECTED_REGISTRATIONS_STREAM, entry.message, error.message, this.config.ingest.rejectedMaxLen, this.config.ingest.rejectedCopyBytes);
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
        // Only a marker of the registration the daemon stored counts: ranks can write to this stream,
        // and a forged marker must not re-adopt the job (each adoption bumps the epoch).
        const stored = await this.store.loadSpec(job.jobId);
        if (!stored || stored.registrationId !== message.registrationId) {
          throw new ProtocolError(`registered marker names registration ${JSON.stringify(message.registrationId)}, not the stored one`, type);
        }
        const fresh = await this.registry.adopt(job.jobId);
        this.metrics.ingestMessages.inc({ type, result: 'accepted' });
        fresh?.requestEvaluation();
        return false;
      }
      let current = this.registry.get(job.jobId) ?? job;
      if (!current.positionOf.has(message.rank)) throw new ProtocolError(`rank ${message.rank} is not a reporting rank (tp 0) of job ${job.jobId}`, type);
      // What the ranks hold bounds the numbers this daemon hands out (protocol §5.6).
      const held = message.type === 'ack' ? message.version : message.scheduleVersion;
      current.noteHeldVersion(held);
      const epoch = message.epoch ?? 0;
      if (epoch > current.epoch) {
        const fresh = await this.registry.reconcileEpoch(current, epoch);
        if (fresh) {
          fresh.noteHeldVersion(held);
          fresh.requestEvaluation();
          current = fresh;
        }
      }
      if (message.type === 'ack') {
        current.ingestCounts.count('acks');
        this.metrics.ingestMessages.inc({ type, result: 'accepted' });
        await current.serialize(() => this.publisher.onAck(current, message as Ack, now));
        return false;
      }
      return this.handleReport(current, message, now);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      type = error.messageType ?? type;
      job.ingestCounts.count('rejected');
      this.metrics.ingestMessages.inc({ type, result: 'rejected' });
      await this.store.reject(jobKeys(job.jobId).rejected, entry.message, error.message, this.config.ingest.rejectedMaxLen, this.config.ingest.rejectedCopyBytes);
      return false;
    }
  }

  private handleReport(job: JobRuntime, report: RankReport, now: number): boolean {
    if (!job.progress.plausibleIteration(report.iteration, now, this.config.ingest.maxIterationJump)) {
      throw new ProtocolError(`report: iteration ${report.iteration} is implausible: the job is at iteration ${job.progress.maxIteration} (at most ${this.config.ingest.maxIterationJump} ahead, plus what elapsed time explains)`, 'report');
    }
    const { outcome, changed } = job.observeReport(report, now);
    if (outcome === 'stale-layout') {
      this.metrics.ingestMessages.inc({ type: 'report', result: 'stale_layout' });
      return false;
    }
    if (outcome === 'duplicate') {
      job.ingestCounts.count('duplicates');
      this.metrics.ingestMessages.inc({ type: 'report', result: 'duplicate' });
      return false;
    }
    job.ingestCounts.count('reports');
    this.metrics.ingestMessages.inc({ type: 'report', result: 'accepted' });
    return changed;
  }
}
