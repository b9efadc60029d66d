import { FleetLinkPriorOf } from '../../core/fleet/fleet-link-prior';
import { DetectorConfig } from '../../core/detect/detector-config.type';
import { RankPosition } from '../../core/detect/detection.type';
import { JobDetector, JobTopology } from '../../core/detect/job-detector';
import { TopologyAssignment } from '../../protocol/protocol-v1.type';
import { JobSpecView } from './job-spec.view';

/**
 * What a report's schedule version means for the layout: it describes the layout in force
 * (`accepted`), it is the first report of a committed re-map, which is now applied with a fresh
 * detector (`switched`, also accepted), or it was written under an older layout (`stale-layout`:
 * its links name old neighbours; counted, not used).
 */
export type LayoutVerdict = 'accepted' | 'switched' | 'stale-layout';

/**
 * Which rank sits at which (dp, pp) slot, the detector learning that layout, and a committed
 * re-map waiting for the ranks to reach it. The only writer of those: a layout changes when a
 * committed schedule says so (noteCommitted) and takes effect at the first report that runs it
 * (acceptReport).
 */
export class LayoutTracker {
  private reportingRanks: RankPosition[] = [];
  private readonly positions = new Map<number, RankPosition>();
  private readonly slots = new Map<string, number>();
  private jobDetector!: JobDetector;
  private applied: TopologyAssignment | null = null;
  private pending: TopologyAssignment | null = null;
  private holdUntil = -1;
  private staleReports = 0;
  private flaggingSuspended = false;
  private fleetPrior: FleetLinkPriorOf | null = null;

  constructor(private readonly spec: JobSpecView, private detection: DetectorConfig) {
    this.place([...spec.reportingPositions]);
  }

  /**
   * New detection knobs and pause at run time (per-job overrides): the detector in force is
   * reconfigured in place, keeping what it learned (JobDetector.reconfigure, suspend), and a
   * detector built for a later re-map starts with them. True when what the detector reports changed.
   */
  reconfigure(detection: DetectorConfig, pauseDetection: boolean): boolean {
    this.jobDetector.reconfigure(detection);
    this.detection = { ...detection };
    this.flaggingSuspended = pauseDetection;
    return this.jobDetector.suspend(pauseDetection);
  }

  /** The reporting ranks at their current slots. */
  get reporting(): readonly RankPosition[] {
    return this.reportingRanks;
  }

  get positionOf(): ReadonlyMap<number, RankPosition> {
    return this.positions;
  }

  /** Reporting rank at slot "dp,pp". */
  get rankAt(): ReadonlyMap<string, number> {
    return this.slots;
  }

  /** The detector of the layout in force (rebuilt when a re-map is applied). */
  get detector(): JobDetector {
    return this.jobDetector;
  }

  /** The fleet's prior on the job's links, by rank numbers: set on the detector in force and on every later one. */
  setFleetPrior(prior: FleetLinkPriorOf | null): void {
    this.fleetPrior = prior;
    this.jobDetector.setFleetPrior(prior);
  }

  /** The layout the ranks' reports describe: null = the registration's. */
  get topology(): TopologyAssignment | null {
    return this.applied;
  }

  /** A committed re-map the ranks have not reached yet. */
  get pendingTopology(): TopologyAssignment | null {
    return this.pending;
  }

  /** The layout the next schedule carries over: the pending one, else the one in force. */
  get inForce(): TopologyAssignment | null {
    return this.pending ?? this.applied;
  }

  /** No decisions before the ranks reach this iteration: the detector was rebuilt for a new layout. */
  get holdUntilIteration(): number {
    return this.holdUntil;
  }

  /** Reports of an older layout than the one applied (they arrive around a switch). */
  get staleLayoutReports(): number {
    return this.staleReports;
  }

  /**
   * The layout of a committed schedule: pending until the ranks run it, or applied at once
   * (`immediately`, a replica adopting the job). True when a new detector was built.
   */
  noteCommitted(topology: TopologyAssignment | undefined, immediately: boolean): boolean {
    if (!topology || topology.version === this.inForce?.version) return false;
    if (!immediately) {
      this.pending = topology;
      return false;
    }
    this.apply(topology);
    return true;
  }

  /** Judges a report of schedule version `version` at `iteration`, applying a pending re-map at the first report that runs it. */
  acceptReport(version: number, iteration: number): LayoutVerdict {
    let verdict: LayoutVerdict = 'accepted';
    if (this.pending && version >= this.pending.sinceVersion) {
      this.apply(this.pending);
      // The fresh detector needs as many samples as hysteresis asks before its word counts.
      this.holdUntil = iteration + Math.max(this.detection.enterAfter, this.detection.leaveAfter);
      verdict = 'switched';
    }
    if (this.applied && version < this.applied.sinceVersion) {
      this.staleReports++;
      return 'stale-layout';
    }
    return verdict;
  }

  private apply(t: TopologyAssignment): void {
    const reporting = new Set(this.reportingRanks.map((r) => r.rank));
    this.place(t.ranks.filter((r) => reporting.has(r.rank)).map(({ rank, dp, pp }) => ({ rank, dp, pp })));
    this.applied = t;
    this.pending = null;
  }

  private place(reporting: RankPosition[]): void {
    this.reportingRanks = reporting;
    this.positions.clear();
    this.slots.clear();
    for (const position of reporting) {
      this.positions.set(position.rank, position);
      this.slots.set(`${position.dp},${position.pp}`, position.rank);
    }
    const topology: JobTopology = { stages: this.spec.stages, dpSize: this.spec.dp, ranks: reporting, localityOf: this.spec.localityOf };
    const detector = new JobDetector(topology, this.detection, this.nominal());
    // A fresh detector flags nothing new while detection is paused: what the old one held back or flagged is not carried over.
    if (this.flaggingSuspended) detector.suspend(true);
    // Ranks keep their nodes across a re-map: what the fleet knows of a node pair still holds.
    if (this.fleetPrior) detector.setFleetPrior(this.fleetPrior);
    this.jobDetector = detector;
  }

  /**
   * The fabric's healthy level for a fresh detector: the registered network, else (after a re-map)
   * the typical baseline the old detector learned, so a link that is slow when the layout changes
   * is not learned as healthy.
   */
  private nominal(): { latencyMs?: number; gbps?: number } | undefined {
    const network = this.spec.registration.network;
    if (network) return { latencyMs: network.latencyMs, gbps: network.nominalGBps };
    if (!this.jobDetector) return undefined;
    const baselines = this.jobDetector.snapshot().pipelineLinks.map((l) => l.baselineMs).filter((ms) => Number.isFinite(ms)).sort((a, b) => a - b);
    return baselines.length > 0 ? { latencyMs: baselines[baselines.length >> 1], gbps: Number.POSITIVE_INFINITY } : undefined;
  }
}
