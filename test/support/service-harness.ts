/**
 * The daemon's services wired by hand on an in-memory JobStore and a manual clock: unit tests of
 * ingest, control, publishing and ownership without Redis or wall-clock waits.
 */
import { Logger } from '@nestjs/common';
import defaults from '../../config/default.json';
import { ManualClock } from '../../src/core/clock/manual-clock';
import { HealthController } from '../../src/daemon/api/health.controller';
import { PipemorphConfig } from '../../src/daemon/config/pipemorph-config.type';
import { ControlService } from '../../src/daemon/control/control.service';
import { IngestService } from '../../src/daemon/ingest/ingest.service';
import { JobRegistry } from '../../src/daemon/jobs/job-registry.service';
import { JobRuntime } from '../../src/daemon/jobs/job-runtime';
import { MetricsService } from '../../src/daemon/metrics/metrics.service';
import { OverridesService } from '../../src/daemon/overrides/overrides.service';
import { PlanningPool } from '../../src/daemon/planning/planning-pool.service';
import { SchedulePublisher } from '../../src/daemon/publish/schedule-publisher.service';
import { InMemoryJobStore } from '../../src/daemon/store/in-memory-job-store.repository';
import { Registration } from '../../src/protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../../src/protocol/redis-keys';

export interface ServiceHarness {
  clock: ManualClock;
  store: InMemoryJobStore;
  config: PipemorphConfig;
  metrics: MetricsService;
  publisher: SchedulePublisher;
  control: ControlService;
  planning: PlanningPool;
  registry: JobRegistry;
  overrides: OverridesService;
  ingest: IngestService;
  health: HealthController;
}

/** One replica (`ownerId`) on `store` and `clock` (shared when a test plays two replicas). */
export function serviceHarness(options: { ownerId?: string; clock?: ManualClock; store?: InMemoryJobStore; config?: (c: PipemorphConfig) => void } = {}): ServiceHarness {
  // The services log every decision; a unit test's output shows only its failures.
  Logger.overrideLogger(false);
  const clock = options.clock ?? new ManualClock();
  const store = options.store ?? new InMemoryJobStore(clock);
  const config = structuredClone(defaults) as PipemorphConfig;
  config.jobs.ownerId = options.ownerId ?? 'replica-a';
  config.control.planningWorkers = 0; // decisions inline: no worker threads, no dist build needed
  options.config?.(config);
  const metrics = new MetricsService();
  const publisher = new SchedulePublisher(store, config, metrics);
  const planning = new PlanningPool(config, metrics);
  const control = new ControlService(config, publisher, metrics, clock, planning);
  const overrides = new OverridesService(store, config, metrics, clock);
  const registry = new JobRegistry(store, config, publisher, metrics, clock, overrides);
  const ingest = new IngestService(store, config, registry, control, publisher, metrics, clock);
  return { clock, store, config, metrics, publisher, control, planning, registry, overrides, ingest, health: new HealthController(store, ingest) };
}

/** `stages` x `dp` ranks, one per node, every op `opMs`; device memory for 2 x stages activations. */
export function registration(jobId: string, stages = 4, dp = 1, opMs = 10): Registration {
  return {
    type: 'register',
    protocol: 1,
    jobId,
    stages,
    microbatches: 16,
    dp,
    tp: 1,
    ranks: Array.from({ length: stages * dp }, (_, rank) => ({ rank, dp: Math.floor(rank / stages), pp: rank % stages, tp: 0, node: `node-${rank}` })),
    memory: { deviceBytes: new Array(stages).fill(2 * stages * 1e9), activationBytes: new Array(stages).fill(1e9), hostBytes: 64e9 },
    computeMs: { fMs: new Array(stages).fill(opMs), bMs: new Array(stages).fill(opMs), wMs: new Array(stages).fill(opMs) },
  };
}

/**
 * What the ingest loop does in one pass (claim for adopted jobs, read, process), without the loop.
 * `wait`: what the pass waits for before it acknowledges, every step and refinement it set off
 * ('all') or the steps only (a test holding a refinement).
 */
export async function ingestPass(h: ServiceHarness, wait: 'all' | 'steps' = 'all'): Promise<void> {
  await h.ingest.claimForAdopted();
  const { consumerGroup, batchSize } = h.config.ingest;
  const { batches } = await h.store.readNew([REGISTRATIONS_STREAM, ...h.registry.reportStreams()], consumerGroup, h.registry.replicaId, batchSize, 0);
  for (const batch of batches) await h.ingest.processStream(batch.stream, batch.entries);
  await h.control.settled(wait); // the decisions the pass triggered
  await h.ingest.acknowledged();
}

/** Registers the job and runs ingest until this replica owns it with its initial schedule committed. */
export async function registeredJob(h: ServiceHarness, spec: Registration): Promise<JobRuntime> {
  await h.store.ensureGroup(REGISTRATIONS_STREAM, h.config.ingest.consumerGroup);
  await h.store.append(REGISTRATIONS_STREAM, JSON.stringify(spec), 1000);
  for (let pass = 0; pass < 3 && !h.registry.get(spec.jobId)?.committed; pass++) await ingestPass(h);
  const job = h.registry.get(spec.jobId);
  if (!job?.committed) throw new Error(`job ${spec.jobId}: no initial schedule`);
  return job;
}

/** One report of every reporting rank for `iteration`, pipeline link `link` of replica 0 slower by `extraMs`. */
export async function reportIteration(h: ServiceHarness, spec: Registration, iteration: number, slow: { link: number; extraMs: number } | null = null, version?: number): Promise<void> {
  const S = spec.stages;
  const v = version ?? h.registry.get(spec.jobId)?.committed?.version ?? 0;
  for (const r of spec.ranks) {
    const links = [];
    for (const [peerPp, link] of [[r.pp + 1, r.pp], [r.pp - 1, r.pp - 1]] as const) {
      if (peerPp < 0 || peerPp >= S) continue;
      const ms = 1 + (slow && r.dp === 0 && slow.link === link ? slow.extraMs : 0);
      links.push({ peer: r.dp * S + peerPp, kind: 'pipeline', bytes: 1 << 24, medianMs: ms, maxMs: ms * 1.2, delegated: false, error: null });
    }
    const report = { type: 'report', protocol: 1, jobId: spec.jobId, rank: r.rank, iteration, scheduleVersion: v, computeMs: { f: 10, b: 10, w: 10 }, links };
    await h.store.append(jobKeys(spec.jobId).reports, JSON.stringify(report), 100000);
  }
}

/** Runs `count` iterations from `from`, `stepMs` apart on the clock, each read and processed by ingest. */
export async function runIterations(h: ServiceHarness, spec: Registration, from: number, count: number, slow: { link: number; extraMs: number } | null = null, stepMs = 100): Promise<number> {
  for (let i = from; i < from + count; i++) {
    h.clock.advance(stepMs);
    await reportIteration(h, spec, i, slow);
    await ingestPass(h);
  }
  return from + count;
}

/** The value of a metric series (0 when absent). */
export async function metricValue(h: ServiceHarness, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await h.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as Array<{ value: number; labels: Record<string, string | number> }>;
  return values.filter((v) => Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x)).reduce((sum, v) => sum + v.value, 0);
}

/** A registered job whose link 1 (replica 0) turned slow after 12 healthy iterations and is detected as a straggler. */
export async function stragglingJob(h: ServiceHarness, spec: Registration): Promise<{ job: JobRuntime; iteration: number }> {
  const job = await registeredJob(h, spec);
  const iteration = await runIterations(h, spec, 0, 12);
  return { job, iteration: await runIterations(h, spec, iteration, 8, { link: 1, extraMs: 60 }) };
}

/** A job with a slow pipeline link detected and a switch prepared for it (after the re-plan interval). */
export async function preparedJob(h: ServiceHarness, spec: Registration): Promise<{ job: JobRuntime; iteration: number }> {
  const { job, iteration } = await stragglingJob(h, spec);
  h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
  await h.control.evaluate(job);
  if (!job.switching.handshake) throw new Error(`job ${spec.jobId}: no switch prepared`);
  return { job, iteration };
}

/** Lets every callback and promise that is ready run (the ingest loop's passes included). */
export async function settle(rounds = 20): Promise<void> {
  for (let k = 0; k < rounds; k++) await new Promise((resolve) => setImmediate(resolve));
}
