import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { schedule, ScheduledTask } from 'node-cron';
import { Clock } from '../../core/clock/clock.type';
import { CLOCK } from '../clock/clock.token';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { ControlService } from '../control/control.service';
import { FleetService } from '../fleet/fleet.service';
import { IngestService } from '../ingest/ingest.service';
import { JobRegistry } from '../jobs/job-registry.service';
import { PlanningPool } from '../planning/planning-pool.service';
import { clusterReplyMisconfiguration } from '../redis/redis-mode.util';
import { MaintenanceService } from './maintenance.service';

const TICK_MS = 100;
/** Back-off of connection attempts at start-up: doubling from 200 ms to 5 s. */
const CONNECT_FIRST_DELAY_MS = 200;
const CONNECT_MAX_DELAY_MS = 5000;

/** Starts the daemon's loops in order and stops them gracefully (SIGTERM): stop reading, finish the batch, release leases. */
@Injectable()
export class DaemonLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DaemonLifecycle.name);
  /** The pending timer of each periodic task (DaemonLifecycle.every). */
  private readonly timers = new Map<number, unknown>();
  private cron: ScheduledTask | null = null;
  private stopping = false;
  /** The background connection attempts (kept for tests and debugging; shutdown does not wait for them). */
  connecting: Promise<void> | null = null;
  private retryTimer: unknown = null;

  constructor(
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly registry: JobRegistry,
    private readonly ingest: IngestService,
    private readonly maintenance: MaintenanceService,
    private readonly control: ControlService,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly planning: PlanningPool,
    private readonly fleet: FleetService,
  ) {}

  /**
   * Starts serving HTTP at once and connects in the background: with Redis down at start the
   * daemon waits and retries with back-off (not ready meanwhile) instead of exiting (issue 11, fault 6).
   */
  onApplicationBootstrap(): void {
    this.connecting = this.connect();
  }

  private async connect(): Promise<void> {
    // Before the first report is read (and so before /health/ready): a few hundred ms once.
    const warmUpMs = this.planning.warmUp();
    if (this.config.control.warmUpRounds > 0) this.logger.log(`decision path warmed up: ${this.config.control.warmUpRounds} synthetic reactions in ${warmUpMs.toFixed(0)} ms`);
    for (let attempt = 0, delay = CONNECT_FIRST_DELAY_MS; !this.stopping; attempt++, delay = Math.min(CONNECT_MAX_DELAY_MS, delay * 2)) {
      try {
        await this.ingest.start();
        await this.registry.discover();
        break;
      } catch (error) {
        // The message never carries credentials (ioredis errors name host and port only; see redis.module.ts).
        // A Cluster node's MOVED is no outage: IngestService said what it is, once (issue 32, item 2).
        if (clusterReplyMisconfiguration(error as Error, this.config) === null) this.logger.warn(`cannot reach Redis yet (attempt ${attempt + 1}: ${(error as Error).message}); retrying in ${delay} ms`);
        await new Promise<void>((resolve) => {
          this.retryTimer = this.clock.setTimeout(resolve, delay);
        });
      }
    }
    if (this.stopping) return;
    // Faster while jobs change hands (JobRegistry.discoveryDelayMs).
    this.every(() => this.registry.discoveryDelayMs, () => this.registry.discover());
    this.every(TICK_MS, () => this.maintenance.tick());
    // Its own timer, at its own pace: the fleet view never runs on the report path or in a control step.
    if (this.config.fleet.enabled) this.every(this.config.fleet.intervalMs, () => this.fleet.refresh());
    this.cron = schedule(this.config.jobs.maintenanceCron, () => this.maintenance.run(), { name: 'pipemorph-maintenance', noOverlap: true });
    this.logger.log(`replica ${this.registry.replicaId} running; ${this.registry.all().length} jobs owned`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer !== null) this.clock.clearTimeout(this.retryTimer);
    // Not awaited while still connecting: a command waiting for an unreachable Redis fails once the
    // connections close (RedisModule), and the attempt loop sees `stopping`.
    for (const timer of this.timers.values()) this.clock.clearTimeout(timer);
    this.timers.clear();
    await this.cron?.destroy();
    await this.ingest.stop();
    await this.control.settled(); // decisions in progress publish (or fail) before the leases go
    await this.registry.releaseAll();
    this.logger.log('stopped: batch in hand acknowledged, leases released');
  }

  /** Runs `task` every `ms` (read before each wait) on the clock; a run never overlaps the previous one and errors are logged, not thrown. */
  private every(ms: number | (() => number), task: () => Promise<unknown>): void {
    const id = this.timers.size;
    const next = () => {
      if (this.stopping) return;
      this.timers.set(
        id,
        this.clock.setTimeout(() => {
          if (this.stopping) return;
          task()
            .catch((error) => this.logger.error((error as Error).message))
            .finally(next);
        }, typeof ms === 'number' ? ms : ms()),
      );
    };
    next();
  }
}
