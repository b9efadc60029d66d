import { Inject, Injectable, Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { Clock } from '../../core/clock/clock.type';
import { buildFleetView } from '../../core/fleet/fleet-view';
import { FleetView } from '../../core/fleet/fleet-view.type';
import { jobFleetEvidence } from '../../core/fleet/job-fleet-evidence';
import { JobFleetEvidence } from '../../core/fleet/job-fleet-evidence.type';
import { CLOCK } from '../clock/clock.token';
import { fleetConfigOf } from '../config/fleet-config-of';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { JobRegistry } from '../jobs/job-registry.service';
import { MetricsService } from '../metrics/metrics.service';
import { REDIS_COMMANDS } from '../redis/redis.module';
import { FLEET_SUSPECT_KINDS, metricKind } from './fleet-suspect-kinds';
import { FleetStore } from './fleet-store';

/** What GET /fleet serves: the view, and which replica computed it when. */
export interface ServedFleetView extends FleetView {
  replica: string;
  enabled: boolean;
  /** When this replica computed it (ms since the epoch; 0: not yet). */
  computedAt: number;
}

/**
 * The fleet view on this replica. Every fleet.intervalMs (its own timer, DaemonLifecycle; never
 * on the report path) it records the evidence of the jobs it leads, reads every replica's, and
 * computes the view: every replica reads the same keys, so every replica serves the same view.
 */
@Injectable()
export class FleetService {
  private readonly logger = new Logger(FleetService.name);
  private readonly store: FleetStore;
  private latest: ServedFleetView;

  constructor(
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    @Inject(REDIS_COMMANDS) redis: Redis,
    private readonly registry: JobRegistry,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.store = new FleetStore(redis);
    this.latest = { ...buildFleetView([], fleetConfigOf(config)), replica: registry.replicaId, enabled: config.fleet.enabled, computedAt: 0 };
    for (const kind of FLEET_SUSPECT_KINDS) metrics.fleetSuspects.set({ kind: metricKind(kind) }, 0);
  }

  get view(): ServedFleetView {
    return this.latest;
  }

  /** The evidence of the jobs this replica leads now (jobs still replaying their history are left out). */
  ledEvidence(now: number): JobFleetEvidence[] {
    const out: JobFleetEvidence[] = [];
    for (const job of this.registry.all()) {
      if (job.released || !job.historyReplayed) continue;
      out.push(jobFleetEvidence(job.jobId, now, job.spec.ranks, job.detector.snapshot(), this.config.fleet.maxLinksPerJob));
    }
    return out;
  }

  async refresh(now = this.clock.now()): Promise<ServedFleetView> {
    if (!this.config.fleet.enabled) return this.latest;
    await this.store.record(this.ledEvidence(now), this.config.fleet.ttlMs);
    const all = await this.store.readAll(this.config.fleet.maxJobs);
    const view = buildFleetView(all, fleetConfigOf(this.config));
    this.latest = { ...view, replica: this.registry.replicaId, enabled: true, computedAt: now };
    this.export(view);
    this.applyPrior(view);
    return this.latest;
  }

  /**
   * Every led job's detector takes the new view as its prior (fleet.prior; fleetLinkPrior), and so
   * does each job the replica starts to lead until the next view: links through a suspect other
   * jobs named flag on their first bad sample. With fleet.prior off, jobs are told nothing.
   */
  private applyPrior(view: FleetView): void {
    this.metrics.fleetPriorLinks.set(this.registry.setFleetView(view));
  }

  private export(view: FleetView): void {
    const m = this.metrics;
    m.fleetSuspect.reset();
    for (const kind of FLEET_SUSPECT_KINDS) m.fleetSuspects.set({ kind: metricKind(kind) }, 0);
    for (const s of view.suspects) {
      m.fleetSuspect.set({ kind: metricKind(s.kind), target: s.id.slice(s.id.indexOf(':') + 1) }, s.confidence);
      m.fleetSuspects.inc({ kind: metricKind(s.kind) });
    }
    m.fleetJobs.set(view.jobs.length);
    m.fleetComputed.set(this.latest.computedAt / 1000);
    if (view.suspects.length > 0) this.logger.debug(`fleet suspects: ${view.suspects.map((s) => s.id).join(', ')}`);
  }
}
