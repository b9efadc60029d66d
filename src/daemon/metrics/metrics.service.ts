import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * One registry for the daemon. Labels stay bounded: job, link index, kind and outcome, never
 * a rank or a rank pair (per-rank detail is in the HTTP API).
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly ingestMessages = new Counter({
    name: 'pipemorph_ingest_messages_total',
    help: 'Messages read from Redis streams, by type and result (accepted, rejected, duplicate).',
    labelNames: ['type', 'result'] as const,
    registers: [this.registry],
  });
  readonly ingestBatches = new Counter({ name: 'pipemorph_ingest_batches_total', help: 'XREADGROUP batches processed.', registers: [this.registry] });
  readonly ingestErrors = new Counter({ name: 'pipemorph_ingest_errors_total', help: 'Failed reads or processing passes of the ingest loop.', registers: [this.registry] });
  readonly pendingEntries = new Gauge({
    name: 'pipemorph_ingest_pending_entries',
    help: 'Entries delivered but not yet acknowledged in the consumer group of a job reports stream.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly ingestLag = new Gauge({
    name: 'pipemorph_ingest_lag_entries',
    help: 'Entries of a job reports stream not yet delivered to the consumer group.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly linkExtraDelayObserved = new Histogram({
    name: 'pipemorph_link_extra_delay_observed_seconds',
    help: 'Extra one-way delay of a pipeline link over its baseline, observed at each control step (max over replicas).',
    labelNames: ['job', 'link'] as const,
    buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1],
    registers: [this.registry],
  });
  readonly linkExtraDelay = new Gauge({
    name: 'pipemorph_link_extra_delay_seconds',
    help: 'Estimated extra one-way delay of a pipeline link over its healthy baseline (max over data-parallel replicas).',
    labelNames: ['job', 'link'] as const,
    registers: [this.registry],
  });
  readonly stragglers = new Gauge({
    name: 'pipemorph_stragglers',
    help: 'Stragglers currently detected, by kind (pipeline, data_parallel, compute).',
    labelNames: ['job', 'kind'] as const,
    registers: [this.registry],
  });
  readonly scheduleVersion = new Gauge({ name: 'pipemorph_schedule_version', help: 'Version of the committed schedule.', labelNames: ['job'] as const, registers: [this.registry] });
  readonly handshakeOpen = new Gauge({ name: 'pipemorph_schedule_handshake_open', help: '1 while a prepared schedule waits for acknowledgements.', labelNames: ['job'] as const, registers: [this.registry] });
  readonly publishes = new Counter({
    name: 'pipemorph_publishes_total',
    help: 'Schedule publication steps by outcome (prepared, committed, aborted, fenced).',
    labelNames: ['job', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly replans = new Counter({ name: 'pipemorph_replans_total', help: 'Control decisions by kind.', labelNames: ['job', 'kind'] as const, registers: [this.registry] });
  readonly predictedIteration = new Gauge({
    name: 'pipemorph_predicted_iteration_seconds',
    help: 'Predicted iteration time under current conditions, of the schedule in force and of the static initial plan.',
    labelNames: ['job', 'schedule'] as const,
    registers: [this.registry],
  });
  readonly delegatedRanks = new Gauge({ name: 'pipemorph_delegated_ranks', help: 'Ranks with CPU delegation on in the committed schedule.', labelNames: ['job'] as const, registers: [this.registry] });
  readonly planningDuration = new Histogram({
    name: 'pipemorph_planning_duration_seconds',
    help: 'Time to detect, plan and decide for one job.',
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly jobsOwned = new Gauge({ name: 'pipemorph_jobs_owned', help: 'Jobs this replica owns (leads).', registers: [this.registry] });
  readonly staleRanks = new Gauge({ name: 'pipemorph_stale_ranks', help: 'Reporting ranks silent longer than jobs.staleRankMs.', labelNames: ['job'] as const, registers: [this.registry] });
  readonly buildInfo = new Gauge({ name: 'pipemorph_build_info', help: 'Build information (value 1).', labelNames: ['version', 'node'] as const, registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.buildInfo.set({ version: process.env.npm_package_version ?? '0.1.0', node: process.version }, 1);
  }

  /** Drops every series of a job this replica no longer owns (label sets are known from the job's shape). */
  forgetJob(jobId: string, stages: number): void {
    for (const metric of [this.pendingEntries, this.ingestLag, this.scheduleVersion, this.handshakeOpen, this.delegatedRanks, this.staleRanks]) metric.remove({ job: jobId });
    for (let link = 0; link + 1 < stages; link++) {
      this.linkExtraDelay.remove({ job: jobId, link: String(link) });
      this.linkExtraDelayObserved.remove({ job: jobId, link: String(link) });
    }
    for (const kind of ['pipeline', 'data_parallel', 'compute']) this.stragglers.remove({ job: jobId, kind });
    for (const schedule of ['current', 'static']) this.predictedIteration.remove({ job: jobId, schedule });
  }
}
