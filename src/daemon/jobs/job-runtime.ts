import { ControlDecision } from '../../core/control/control-decision.type';
import { JobControlInput, PipelineGroupPlan, TopologyView } from '../../core/control/control-input.type';
import { DetectorConfig } from '../../core/detect/detector-config.type';
import { DetectionSnapshot, JobDetector, JobTopology, RankPosition } from '../../core/detect/job-detector';
import { parseSchedule } from '../../core/pipeline/schedule';
import { AllReduceModel } from '../../core/topology/topology.type';
import { PublishedSchedule, RankReport, Registration, TopologyAssignment } from '../../protocol/protocol-v1.type';
import { JobHistory } from './job-history';

/** Defaults of the all-reduce model where the registration leaves them out. */
const DEFAULT_CHUNK_BYTES = 4 << 20;
const DEFAULT_INFLIGHT_CHUNKS = 8;
const DEFAULT_RING_GBPS = 25;

/** A prepared schedule waiting for every reporting rank's acknowledgement. */
export interface OpenHandshake {
  schedule: PublishedSchedule;
  deadline: number;
  acked: Set<number>;
  decision: ControlDecision;
}

/**
 * Everything one daemon replica keeps in memory about a job it owns. Rebuilt from Redis
 * (spec, committed schedule, pending reports) when a replica takes the job over.
 */
export class JobRuntime {
  readonly jobId: string;
  reporting: RankPosition[] = [];
  readonly positionOf = new Map<number, RankPosition>();
  readonly rankAt: Map<string, number> = new Map();
  detector!: JobDetector;
  /** The layout the ranks' reports describe: null = the registration's. */
  topology: TopologyAssignment | null = null;
  /** A committed re-map the ranks have not reached yet: applied at the first report of its schedule version. */
  pendingTopology: TopologyAssignment | null = null;
  lastRemapAt = 0;
  /** No decisions before the ranks reach this iteration: the detector was rebuilt for a new layout. */
  holdUntilIteration = -1;
  /** Reports of an older layout than the one applied (they arrive around a switch): counted, not used. */
  staleLayoutReports = 0;
  private localities: Map<number, string> | null = null;
  readonly lastSeenAt = new Map<number, number>();
  readonly staleRanks = new Set<number>();
  committed: PublishedSchedule | null = null;
  handshake: OpenHandshake | null = null;
  maxIteration = -1;
  /** Iteration time estimated from how fast reported iterations advance, ms (NaN until known). */
  iterationMs = Number.NaN;
  lastPublishAt = 0;
  /** Earliest time the next prepare may start (min interval, back-off after an abort). */
  notBefore = 0;
  abortStreak = 0;
  needsEvaluation = true;
  /** Set when this replica lets go of the runtime (lease lost, job expired or rebuilt): no more control steps or metrics for it. */
  released = false;
  private lastIterationAt = 0;
  private measuredIterations = false;
  private chain: Promise<unknown> = Promise.resolve();
  readonly counters = { reports: 0, acks: 0, duplicates: 0, rejected: 0, prepares: 0, commits: 0, aborts: 0 };
  /** False until the new owner has replayed the job's history: no decision from an empty detector. */
  historyReplayed = false;
  /**
   * Highest schedule version known outside Redis's counter: reported by ranks, or held by an
   * earlier runtime of this job. A version counter lost with Redis's data restarts above it.
   */
  knownVersion = 0;
  /** Highest fencing epoch a rank has reported (reports' and acks' `epoch`). */
  knownEpoch = 0;
  /** Recent link delays, iteration times and versions for the job page, in fixed-size memory. */
  readonly history: JobHistory;

  /**
   * `registrationId`: the registrations-stream entry this runtime was built from; `adoptedAt`: when
   * this replica took the job (a job that never reports again expires counting from here).
   */
  constructor(readonly spec: Registration, readonly epoch: number, private readonly detection: DetectorConfig, readonly registrationId = '', readonly adoptedAt = 0) {
    this.jobId = spec.jobId;
    this.history = new JobHistory(spec.stages, spec.dp);
    this.place(spec.ranks.filter((r) => r.tp === 0).map(({ rank, dp, pp }) => ({ rank, dp, pp })));
  }

  private place(reporting: RankPosition[]): void {
    this.reporting = reporting;
    this.positionOf.clear();
    this.rankAt.clear();
    for (const position of reporting) {
      this.positionOf.set(position.rank, position);
      this.rankAt.set(`${position.dp},${position.pp}`, position.rank);
    }
    const topology: JobTopology = { stages: this.spec.stages, dpSize: this.spec.dp, ranks: reporting };
    this.detector = new JobDetector(topology, this.detection, this.nominal());
  }

  /**
   * The fabric's healthy level for a fresh detector: the registered network, else (after a re-map)
   * the typical baseline the old detector learned, so a link that is slow when the layout changes
   * is not learned as healthy.
   */
  private nominal(): { latencyMs?: number; gbps?: number } | undefined {
    if (this.spec.network) return { latencyMs: this.spec.network.latencyMs, gbps: this.spec.network.nominalGBps };
    if (!this.detector) return undefined;
    const baselines = this.detector.snapshot().pipelineLinks.map((l) => l.baselineMs).filter((ms) => Number.isFinite(ms)).sort((a, b) => a - b);
    return baselines.length > 0 ? { latencyMs: baselines[baselines.length >> 1], gbps: Number.POSITIVE_INFINITY } : undefined;
  }

  /** A committed schedule: its topology becomes pending until the ranks run it (or at once on adoption, `immediately`). */
  noteCommitted(schedule: PublishedSchedule, immediately = false): void {
    this.committed = schedule;
    this.history.noteCommitted(schedule);
    const t = schedule.topology;
    if (!t || t.version === (this.pendingTopology ?? this.topology)?.version) return;
    if (immediately) this.applyTopology(t);
    else this.pendingTopology = t;
  }

  /**
   * Whether a report of schedule version `version` describes the layout in force, applying a
   * pending re-map at the first report that runs it. Reports of an older layout are not used.
   */
  layoutOf(version: number, iteration: number): boolean {
    if (this.pendingTopology && version >= this.pendingTopology.sinceVersion) {
      this.applyTopology(this.pendingTopology);
      // The fresh detector needs as many samples as hysteresis asks before its word counts.
      this.holdUntilIteration = iteration + Math.max(this.detection.enterAfter, this.detection.leaveAfter);
    }
    if (this.topology && version < this.topology.sinceVersion) {
      this.staleLayoutReports++;
      return false;
    }
    return true;
  }

  private applyTopology(t: TopologyAssignment): void {
    const reporting = new Set(this.reporting.map((r) => r.rank));
    this.place(t.ranks.filter((r) => reporting.has(r.rank)).map(({ rank, dp, pp }) => ({ rank, dp, pp })));
    this.topology = t;
    this.pendingTopology = null;
    this.needsEvaluation = true;
  }

  /** The floor of the next version number: above every version the daemon or a rank has seen. */
  versionFloor(): number {
    return Math.max(this.knownVersion, this.committed?.version ?? 0, this.handshake?.schedule.version ?? 0);
  }

  /**
   * Whether a reported iteration is plausible: at most `maxJump` iterations beyond the job's
   * progress, plus what the time since the last report explains at 4x the measured pace. A single
   * report of iteration 1e15 would otherwise make every genuine later report a duplicate.
   */
  plausibleIteration(iteration: number, now: number, maxJump: number): boolean {
    if (this.maxIteration < 0) return true;
    const elapsed = this.lastIterationAt > 0 && this.iterationMs > 0 ? Math.ceil((4 * Math.max(0, now - this.lastIterationAt)) / this.iterationMs) : 0;
    return iteration <= this.maxIteration + maxJump + elapsed;
  }

  /** Runs `task` after every task queued before it for this job: one control step at a time per job. */
  serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task, task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Records a rank's progress; `live` is false for history replayed on adoption (progress, not
   * liveness). A rank-measured iteration time is preferred over the arrival rate of reports.
   */
  noteIteration(rank: number, iteration: number, now: number, live = true, measuredMs?: number): void {
    if (measuredMs !== undefined && measuredMs > 0) {
      this.iterationMs = Number.isFinite(this.iterationMs) ? 0.8 * this.iterationMs + 0.2 * measuredMs : measuredMs;
      this.measuredIterations = true;
    }
    if (live) {
      this.lastSeenAt.set(rank, now);
      this.staleRanks.delete(rank);
    }
    if (iteration > this.maxIteration) {
      if (live && !this.measuredIterations && this.maxIteration >= 0 && this.lastIterationAt > 0) {
        const per = (now - this.lastIterationAt) / (iteration - this.maxIteration);
        this.iterationMs = Number.isFinite(this.iterationMs) ? 0.8 * this.iterationMs + 0.2 * per : per;
      }
      this.maxIteration = iteration;
      if (live) this.lastIterationAt = now;
    }
  }

  /**
   * Keeps an accepted report's pipeline link times and the iteration time (the rank's own, else
   * the pace estimate) for the job page; call after noteIteration.
   */
  recordHistory(report: RankReport): void {
    const me = this.positionOf.get(report.rank);
    if (!me) return;
    for (const l of report.links) {
      if (l.kind !== 'pipeline') continue;
      const peer = this.positionOf.get(l.peer);
      if (!peer || peer.dp !== me.dp || Math.abs(peer.pp - me.pp) !== 1) continue;
      this.history.noteLinkDelay(report.iteration, me.dp, Math.min(me.pp, peer.pp), l.medianMs);
    }
    this.history.noteIteration(report.iteration, report.scheduleVersion, report.iterationMs ?? this.iterationMs);
  }

  /** Per stage: activations that fit on the device, and on device plus host once delegation offloads them. */
  caps(): { device: number[]; host: number[] } {
    const { deviceBytes, activationBytes, hostBytes } = this.spec.memory;
    const n = this.spec.microbatches;
    const activationsIn = (bytes: number, i: number) => (activationBytes[i] > 0 ? Math.max(1, Math.min(n, Math.floor(bytes / activationBytes[i]))) : n);
    return {
      device: deviceBytes.map((bytes, i) => activationsIn(bytes, i)),
      host: deviceBytes.map((bytes, i) => Math.max(activationsIn(bytes, i), activationsIn(bytes + hostBytes, i))),
    };
  }

  /** The all-reduce as the registration describes it (null without `dataParallel`). */
  allReduce(): AllReduceModel | null {
    const dp = this.spec.dataParallel;
    if (!dp) return null;
    return {
      gradientBytes: dp.gradientBytes,
      latencyMs: dp.latencyMs ?? this.spec.network?.latencyMs ?? 0,
      gbps: dp.gbps ?? this.spec.network?.nominalGBps ?? DEFAULT_RING_GBPS,
      chunkBytes: dp.chunkBytes ?? DEFAULT_CHUNK_BYTES,
      inflight: dp.inflightChunks ?? DEFAULT_INFLIGHT_CHUNKS,
    };
  }

  /** Locality of each reporting rank, from the registration (fixed for the runtime's life, so built once). */
  private localityOf(): ReadonlyMap<number, string> {
    if (!this.localities) {
      this.localities = new Map();
      for (const r of this.spec.ranks) if (r.tp === 0 && r.locality !== undefined) this.localities.set(r.rank, r.locality);
    }
    return this.localities;
  }

  /** Placement and data-parallel links for the re-map decision; re-mapping waits `minIntervalMs` after the last one and for it to be applied. */
  topologyView(snapshot: DetectionSnapshot, now: number, minIntervalMs: number): TopologyView {
    const S = this.spec.stages;
    const D = this.spec.dp;
    const rankAt = new Array<number>(S * D).fill(-1);
    for (const r of this.reporting) rankAt[r.dp * S + r.pp] = r.rank;
    return {
      rankAt,
      rings: this.topology?.rings ?? Array.from({ length: S }, () => Array.from({ length: D }, (_, d) => d)),
      localityOf: this.localityOf(),
      allReduce: rankAt.includes(-1) ? null : this.allReduce(),
      dataParallelLinks: snapshot.dataParallelLinks.map((l) => ({ fromRank: l.fromRank, toRank: l.toRank, extraMs: l.extraMs, straggler: l.straggler })),
      remapAllowed: !this.pendingTopology && now - this.lastRemapAt >= minIntervalMs,
    };
  }

  controlInput(snapshot: DetectionSnapshot, topology?: TopologyView): JobControlInput {
    const S = this.spec.stages;
    const pick = (measured: number[], registered: number[] | undefined, i: number) =>
      Number.isFinite(measured[i]) ? measured[i] : registered ? registered[i] : 1;
    const caps = this.caps();
    return {
      stages: S,
      microbatches: this.spec.microbatches,
      dpSize: this.spec.dp,
      fMs: Array.from({ length: S }, (_, i) => pick(snapshot.stageTimes.fMs, this.spec.computeMs?.fMs, i)),
      bMs: Array.from({ length: S }, (_, i) => pick(snapshot.stageTimes.bMs, this.spec.computeMs?.bMs, i)),
      wMs: Array.from({ length: S }, (_, i) => pick(snapshot.stageTimes.wMs, this.spec.computeMs?.wMs, i)),
      deviceCaps: caps.device,
      hostCaps: caps.host,
      links: snapshot.pipelineLinks.map((l) => ({
        dp: l.dp,
        link: l.link,
        upRank: l.upRank,
        downRank: l.downRank,
        baselineMs: l.baselineMs,
        extraMs: l.extraMs,
        straggler: l.straggler,
        nicFailure: l.reason === 'nic-failure',
      })),
      current: this.committed ? this.currentPlan(this.committed) : null,
      ...(topology ? { topology } : {}),
    };
  }

  private currentPlan(schedule: PublishedSchedule): JobControlInput['current'] {
    const pipelines: PipelineGroupPlan[] = schedule.pipelines.map((p) => ({
      dpReplicas: p.dpReplicas,
      warmup: p.warmup,
      schedule: parseSchedule(p.stages, this.spec.stages, this.spec.microbatches),
    }));
    return { pipelines, delegation: schedule.delegation };
  }
}
