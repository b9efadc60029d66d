import { Injectable } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DecisionKind } from '../../core/control/control-decision.type';
import { FencedResult } from '../store/job-store.repository';

/** Verdicts of the cost gate (core judgeDecision), for pipemorph_decisions_total. */
const DECISION_VERDICTS = ['taken', 'declined', 'paused'] as const;

/** Every value a label can take (bounded cardinality), also what forgetJob removes. Typed so a new kind or result must be listed here. */
export const REPLAN_KINDS = Object.keys({ initial: 1, straggler: 1, recovery: 1, 'nic-failure': 1, remap: 1, rebalance: 1 } satisfies Record<DecisionKind, 1>) as DecisionKind[];
export const PUBLISH_OUTCOMES = ['prepared', 'committed', 'aborted', ...Object.keys({ fenced: 1, busy: 1, stale: 1 } satisfies Record<Exclude<FencedResult, 'ok'>, 1>)] as const;
/** Why a prepared schedule was aborted: a rank refused it, not every rank acknowledged in time, or a new owner dropped the old owner's prepare. */
export const ABORT_REASONS = ['refused', 'timeout', 'replica_changed'] as const;
export type AbortReason = (typeof ABORT_REASONS)[number];
export const STRAGGLER_KINDS = ['pipeline', 'data_parallel', 'compute'] as const;
/** current: the schedule in force; static: the initial plan, never changed; healthy: the initial plan with every link at its baseline. */
export const PREDICTION_SCHEDULES = ['current', 'static', 'healthy'] as const;
export const INGEST_TYPES = ['register', 'registered', 'report', 'ack', 'unknown'] as const;
export const INGEST_RESULTS = ['accepted', 'rejected', 'duplicate', 'stale_layout'] as const;
/** Who handled a per-job overrides document: the operator API (any replica), or the job's leading replica applying the key. */
export const OVERRIDES_SOURCES = ['api', 'leader'] as const;
/**
 * What became of it: applied (api: written; leader: in force), cleared (api: deleted; leader: the
 * key was gone), rejected (api: 400 or 404; leader: refused, what was in force stays),
 * unauthorized (api: no or wrong token, or the API is off), conflict (api: 409).
 */
export const OVERRIDES_RESULTS = ['applied', 'cleared', 'rejected', 'unauthorized', 'conflict'] as const;
/** What a per-job override pauses. */
export const PAUSE_KINDS = ['detection', 'switching'] as const;

/** The version in pipemorph's package.json, found upwards from this file (source tree, dist/ or the container's /app). */
function packageVersion(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'pipemorph' && pkg.version) return pkg.version;
    } catch {
      // no package.json here
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

/**
 * The daemon's only metric declarations, in one registry with the default process metrics.
 * Labels stay bounded: job, pipeline link index, and enumerated kinds, outcomes and reasons;
 * never a rank or a rank pair (per-rank detail is in the HTTP API). Names follow Prometheus
 * conventions: prefix pipemorph_, base units (seconds), _total for counters.
 * docs/operations.md#metrics describes every metric; test/ops-docs.test.ts keeps that list complete.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  // --- ingest ---
  readonly ingestMessages = new Counter({
    name: 'pipemorph_ingest_messages_total',
    help: 'Messages read from Redis streams, by type (register, registered, report, ack, unknown) and result (accepted, rejected, duplicate).',
    labelNames: ['type', 'result'] as const,
    registers: [this.registry],
  });
  readonly ingestBatches = new Counter({ name: 'pipemorph_ingest_batches_total', help: 'Stream batches processed (XREADGROUP or XAUTOCLAIM).', registers: [this.registry] });
  readonly ingestErrors = new Counter({ name: 'pipemorph_ingest_errors_total', help: 'Failed reads or processing passes of the ingest loop.', registers: [this.registry] });
  readonly ingestLastRead = new Gauge({
    name: 'pipemorph_ingest_last_read_timestamp_seconds',
    help: 'Unix time of the last completed read of the ingest loop (it reads at least every ingest.blockMs).',
    registers: [this.registry],
  });
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

  // --- detection ---
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
  readonly staleRanks = new Gauge({ name: 'pipemorph_stale_ranks', help: 'Reporting ranks silent longer than jobs.staleRankMs.', labelNames: ['job'] as const, registers: [this.registry] });

  // --- fleet view (docs/fleet.md) ---
  readonly fleetSuspect = new Gauge({
    name: 'pipemorph_fleet_suspect_confidence',
    help: 'Confidence (0-1) of each current fleet suspect, by kind (nic, uplink, boundary, node_pair, compute) and target (the node, locality, or pair a|b); the series goes when the suspect clears.',
    labelNames: ['kind', 'target'] as const,
    registers: [this.registry],
  });
  readonly fleetSuspects = new Gauge({ name: 'pipemorph_fleet_suspects', help: 'Current fleet suspects, by kind.', labelNames: ['kind'] as const, registers: [this.registry] });
  readonly fleetJobs = new Gauge({ name: 'pipemorph_fleet_jobs', help: 'Jobs whose evidence the fleet view was last computed from (every replica\'s).', registers: [this.registry] });
  readonly fleetPriorLinks = new Gauge({ name: 'pipemorph_fleet_prior_slow_links', help: 'Links of the jobs this replica leads that the fleet prior names slow (flagged on their first bad sample).', registers: [this.registry] });
  readonly fleetComputed = new Gauge({ name: 'pipemorph_fleet_computed_timestamp_seconds', help: 'When this replica last computed the fleet view (Unix time).', registers: [this.registry] });

  // --- control and schedules ---
  readonly decisions = new Counter({
    name: 'pipemorph_decisions_total',
    help: 'Control decisions judged by the cost gate, by kind and verdict (taken, declined: not worth its cost, paused)',
    labelNames: ['job', 'kind', 'verdict'] as const,
    registers: [this.registry],
  });

  readonly replans = new Counter({
    name: 'pipemorph_replans_total',
    help: 'Control decisions to publish a schedule, by kind (initial, straggler, recovery, nic-failure).',
    labelNames: ['job', 'kind'] as const,
    registers: [this.registry],
  });
  readonly predictedIteration = new Gauge({
    name: 'pipemorph_predicted_iteration_seconds',
    help: 'Predicted iteration time: of the schedule in force (current) and of the static initial plan (static) under current conditions, and of the initial plan on healthy links (healthy).',
    labelNames: ['job', 'schedule'] as const,
    registers: [this.registry],
  });
  readonly planningDuration = new Histogram({
    name: 'pipemorph_planning_duration_seconds',
    help: 'Time to detect, plan and decide for one job (one control step).',
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly controlStages = new Histogram({
    name: 'pipemorph_control_stage_seconds',
    help: 'Where a control step that publishes a schedule spends its time, by stage: detect (detection snapshot and the step input), decide (planning, pricing, the version reservation and the cost gate, up to the publish), publish (building the schedule and writing it to Redis).',
    labelNames: ['stage'] as const,
    buckets: [0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly refinementDuration = new Histogram({
    name: 'pipemorph_refinement_duration_seconds',
    help: 'Time from the start of a refinement (control.refinePlanner, the second phase of a reaction) to its plan, queue wait included. No control step waits for it.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly planningQueue = new Gauge({ name: 'pipemorph_planning_queue', help: 'Control decisions waiting for a planning worker.', registers: [this.registry] });
  readonly planningFailures = new Counter({
    name: 'pipemorph_planning_failures_total',
    help: 'Control decisions that failed: timeout (the worker was replaced), crash (the worker died) or error (the planner threw).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly scheduleVersion = new Gauge({ name: 'pipemorph_schedule_version', help: 'Version of the committed schedule.', labelNames: ['job'] as const, registers: [this.registry] });
  readonly topologyVersion = new Gauge({
    name: 'pipemorph_topology_version',
    help: 'Rank layout of the committed schedule: 0 = as registered, +1 with every re-map away from slow data-parallel links.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly scheduleCommitted = new Gauge({
    name: 'pipemorph_schedule_last_commit_timestamp_seconds',
    help: 'Unix time the committed schedule was created (its createdAt).',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly handshakeOpen = new Gauge({ name: 'pipemorph_schedule_handshake_open', help: '1 while a prepared schedule waits for acknowledgements.', labelNames: ['job'] as const, registers: [this.registry] });
  readonly unackedRanks = new Gauge({
    name: 'pipemorph_schedule_unacked_ranks',
    help: 'Reporting ranks that have not yet acknowledged the prepared schedule (0 when no prepare is open).',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly publishes = new Counter({
    name: 'pipemorph_publishes_total',
    help: 'Schedule publication steps by outcome (prepared, committed, aborted; refused by Redis: fenced, busy, stale).',
    labelNames: ['job', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly handshakeAborts = new Counter({
    name: 'pipemorph_handshake_aborts_total',
    help: 'Prepared schedules aborted, by reason (refused by a rank, timeout waiting for acknowledgements, replica_changed).',
    labelNames: ['job', 'reason'] as const,
    registers: [this.registry],
  });
  readonly delegatedRanks = new Gauge({ name: 'pipemorph_delegated_ranks', help: 'Ranks with CPU delegation on in the committed schedule.', labelNames: ['job'] as const, registers: [this.registry] });

  // --- per-job overrides ---
  readonly overrides = new Counter({
    name: 'pipemorph_overrides_total',
    help: 'Per-job overrides documents handled, by source (api; leader: the key applied by the job leading replica) and result (applied, cleared, rejected, unauthorized, conflict).',
    labelNames: ['source', 'result'] as const,
    registers: [this.registry],
  });
  readonly overridesVersion = new Gauge({
    name: 'pipemorph_overrides_version',
    help: 'Version of the per-job overrides in force on the leading replica; 0 when none.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly paused = new Gauge({
    name: 'pipemorph_job_paused',
    help: '1 while per-job overrides pause detection or switching for the job (what), else 0.',
    labelNames: ['job', 'what'] as const,
    registers: [this.registry],
  });

  // --- ownership ---
  readonly jobsOwned = new Gauge({ name: 'pipemorph_jobs_owned', help: 'Jobs this replica owns (leads).', registers: [this.registry] });
  readonly jobsRegistered = new Gauge({ name: 'pipemorph_jobs_registered', help: 'Jobs in the Redis job index at the last discovery (owned by any replica or by none).', registers: [this.registry] });
  readonly jobEpoch = new Gauge({
    name: 'pipemorph_job_lease_epoch',
    help: 'Fencing epoch under which this replica leads the job; the series exists only on the owning replica.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly jobsRestored = new Counter({
    name: 'pipemorph_jobs_restored_total',
    help: 'Jobs written back to Redis from a replica\'s memory after Redis lost their keys (restart without persistence, FLUSHALL).',
    registers: [this.registry],
  });
  readonly streamRepairs = new Counter({
    name: 'pipemorph_ingest_stream_repairs_total',
    help: 'Streams or consumer groups recreated by the ingest loop (NOGROUP after a deleted stream or a Redis data loss), by result (repaired, quarantined).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly orphanStreams = new Counter({
    name: 'pipemorph_orphan_streams_expired_total',
    help: 'Reports streams of job ids never registered that maintenance gave a TTL (jobs.staleJobMs).',
    registers: [this.registry],
  });
  readonly jobRefenced = new Counter({
    name: 'pipemorph_job_refenced_total',
    help: 'Times this replica found its writes for a job it leads fenced by an epoch it did not take (the epoch key changed behind its lease) and took the job again under a new epoch.',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });
  readonly jobsHandedOff = new Counter({ name: 'pipemorph_jobs_handed_off_total', help: 'Jobs this replica offered above its fair share and another replica took over (the lease moved in one step, never free).', registers: [this.registry] });
  readonly leaseLosses = new Counter({ name: 'pipemorph_lease_losses_total', help: 'Job leases this replica lost to another replica (or to Redis) before releasing them.', registers: [this.registry] });

  readonly buildInfo = new Gauge({ name: 'pipemorph_build_info', help: 'Build information (value 1).', labelNames: ['version', 'node'] as const, registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // prom-client's three *_total gauges break the _total-is-a-counter convention (promtool check
    // metrics reports them); each is the sum over `type` of the gauge of the same name without it.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(name);
    this.buildInfo.set({ version: packageVersion(), node: process.version }, 1);
    // Counters exist from the start, so rate() and increase() see the first event.
    for (const type of INGEST_TYPES) for (const result of INGEST_RESULTS) this.ingestMessages.inc({ type, result }, 0);
    for (const source of OVERRIDES_SOURCES) for (const result of OVERRIDES_RESULTS) this.overrides.inc({ source, result }, 0);
  }

  /** The overrides in force for a job it leads (none: version 0, nothing paused). */
  overridesInForce(jobId: string, version: number, pauseDetection: boolean, pauseSwitching: boolean): void {
    this.overridesVersion.set({ job: jobId }, version);
    this.paused.set({ job: jobId, what: 'detection' }, pauseDetection ? 1 : 0);
    this.paused.set({ job: jobId, what: 'switching' }, pauseSwitching ? 1 : 0);
  }

  /** Creates a job's series at zero when this replica takes it, so increase() over them sees the first event. */
  initJob(jobId: string, epoch: number): void {
    this.jobEpoch.set({ job: jobId }, epoch);
    this.handshakeOpen.set({ job: jobId }, 0);
    this.unackedRanks.set({ job: jobId }, 0);
    for (const kind of REPLAN_KINDS) this.replans.inc({ job: jobId, kind }, 0);
    for (const outcome of PUBLISH_OUTCOMES) this.publishes.inc({ job: jobId, outcome }, 0);
    for (const reason of ABORT_REASONS) this.handshakeAborts.inc({ job: jobId, reason }, 0);
    this.jobRefenced.inc({ job: jobId }, 0); // keeps its count when the job is taken again (forgetJob, stillLeading)
    this.overridesInForce(jobId, 0, false, false);
  }

  /**
   * Drops every series of a job this replica no longer owns (label sets are known from the job's
   * shape and the enumerations above). `stillLeading`: the replica rebuilds the job and goes on
   * leading it (a re-registration, an epoch taken again): pipemorph_job_refenced_total keeps its
   * count, or a job taken again twice would show 1.
   */
  forgetJob(jobId: string, stages: number, stillLeading = false): void {
    const job = { job: jobId };
    if (!stillLeading) this.jobRefenced.remove(job);
    for (const metric of [this.pendingEntries, this.ingestLag, this.scheduleVersion, this.topologyVersion, this.scheduleCommitted, this.handshakeOpen, this.unackedRanks, this.delegatedRanks, this.staleRanks, this.jobEpoch, this.overridesVersion]) metric.remove(job);
    for (const what of PAUSE_KINDS) this.paused.remove({ job: jobId, what });
    for (let link = 0; link + 1 < stages; link++) {
      this.linkExtraDelay.remove({ job: jobId, link: String(link) });
      this.linkExtraDelayObserved.remove({ job: jobId, link: String(link) });
    }
    for (const kind of STRAGGLER_KINDS) this.stragglers.remove({ job: jobId, kind });
    for (const schedule of PREDICTION_SCHEDULES) this.predictedIteration.remove({ job: jobId, schedule });
    for (const kind of REPLAN_KINDS) this.replans.remove({ job: jobId, kind });
    for (const kind of REPLAN_KINDS) for (const verdict of DECISION_VERDICTS) this.decisions.remove({ job: jobId, kind, verdict });
    for (const outcome of PUBLISH_OUTCOMES) this.publishes.remove({ job: jobId, outcome });
    for (const reason of ABORT_REASONS) this.handshakeAborts.remove({ job: jobId, reason });
  }

  /**
   * Records a schedule that became the committed one (published, or found in Redis on adoption),
   * with the iteration time predicted for it when it was decided (the next control step refines it).
   */
  scheduleInForce(jobId: string, schedule: { version: number; createdAt: number; delegation: unknown[]; prediction: { newMs: number }; topology?: { version: number } }): void {
    this.scheduleVersion.set({ job: jobId }, schedule.version);
    this.topologyVersion.set({ job: jobId }, schedule.topology?.version ?? 0);
    this.scheduleCommitted.set({ job: jobId }, schedule.createdAt / 1000);
    this.delegatedRanks.set({ job: jobId }, schedule.delegation.length);
    if (Number.isFinite(schedule.prediction.newMs)) this.predictedIteration.set({ job: jobId, schedule: 'current' }, schedule.prediction.newMs / 1000);
  }
}
