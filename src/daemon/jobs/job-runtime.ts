import { ControlDecision } from '../../core/control/control-decision.type';
import { JobControlInput, PipelineGroupPlan } from '../../core/control/control-input.type';
import { DetectorConfig } from '../../core/detect/detector-config.type';
import { DetectionSnapshot, JobDetector, JobTopology, RankPosition } from '../../core/detect/job-detector';
import { parseSchedule } from '../../core/pipeline/schedule';
import { PublishedSchedule, Registration } from '../../protocol/protocol-v1.type';

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
  readonly reporting: RankPosition[];
  readonly positionOf = new Map<number, RankPosition>();
  readonly rankAt: Map<string, number> = new Map();
  readonly detector: JobDetector;
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
  /** When this replica took the job: a job that never reports again expires counting from here. */
  readonly adoptedAt = Date.now();
  private lastIterationAt = 0;
  private measuredIterations = false;
  private chain: Promise<unknown> = Promise.resolve();
  readonly counters = { reports: 0, acks: 0, duplicates: 0, rejected: 0, prepares: 0, commits: 0, aborts: 0 };

  /** `registrationId`: the registrations-stream entry this runtime was built from. */
  constructor(readonly spec: Registration, readonly epoch: number, detection: DetectorConfig, readonly registrationId = '') {
    this.jobId = spec.jobId;
    this.reporting = spec.ranks.filter((r) => r.tp === 0).map(({ rank, dp, pp }) => ({ rank, dp, pp }));
    for (const position of this.reporting) {
      this.positionOf.set(position.rank, position);
      this.rankAt.set(`${position.dp},${position.pp}`, position.rank);
    }
    const topology: JobTopology = { stages: spec.stages, dpSize: spec.dp, ranks: this.reporting };
    const nominal = spec.network ? { latencyMs: spec.network.latencyMs, gbps: spec.network.nominalGBps } : undefined;
    this.detector = new JobDetector(topology, detection, nominal);
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

  /** Per stage: activations that fit on the device, and on device plus host once delegation offloads them. */
  caps(): { device: number[]; host: number[] } {
    const { deviceBytes, activationBytes, hostBytes } = this.spec.memory;
    const n = this.spec.microbatches;
    const fit = (bytes: number, i: number) => (activationBytes[i] > 0 ? Math.max(1, Math.min(n, Math.floor(bytes / activationBytes[i]))) : n);
    return {
      device: deviceBytes.map((bytes, i) => fit(bytes, i)),
      host: deviceBytes.map((bytes, i) => Math.max(fit(bytes, i), fit(bytes + hostBytes, i))),
    };
  }

  controlInput(snapshot: DetectionSnapshot): JobControlInput {
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
