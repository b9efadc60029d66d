import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { schedule, ScheduledTask } from 'node-cron';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { IngestService } from '../ingest/ingest.service';
import { JobRegistry } from '../jobs/job-registry.service';
import { MaintenanceService } from './maintenance.service';

const TICK_MS = 100;

/** Starts the daemon's loops in order and stops them gracefully (SIGTERM): stop reading, finish the batch, release leases. */
@Injectable()
export class DaemonLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DaemonLifecycle.name);
  private readonly timers: NodeJS.Timeout[] = [];
  private cron: ScheduledTask | null = null;
  private stopping = false;

  constructor(
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly registry: JobRegistry,
    private readonly ingest: IngestService,
    private readonly maintenance: MaintenanceService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.registry.discover();
    await this.ingest.start();
    this.every(this.config.jobs.discoveryIntervalMs, () => this.registry.discover());
    this.every(TICK_MS, () => this.maintenance.tick());
    this.cron = schedule(this.config.jobs.maintenanceCron, () => this.maintenance.run(), { name: 'pipemorph-maintenance', noOverlap: true });
    this.logger.log(`replica ${this.registry.replicaId} running; ${this.registry.all().length} jobs owned`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers) clearInterval(timer);
    await this.cron?.destroy();
    await this.ingest.stop();
    await this.registry.releaseAll();
    this.logger.log('stopped: batch in hand acknowledged, leases released');
  }

  /** Like setInterval, but a run never overlaps the previous one and errors are logged, not thrown. */
  private every(ms: number, task: () => Promise<unknown>): void {
    let busy = false;
    this.timers.push(
      setInterval(() => {
        if (busy || this.stopping) return;
        busy = true;
        task()
          .catch((error) => this.logger.error((error as Error).message))
          .finally(() => (busy = false));
      }, ms),
    );
  }
}
