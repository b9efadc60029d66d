import { PublishedSchedule } from '../../protocol/protocol-v1.type';

/** Iterations of per-link delays kept per job (the job page's heat strip). */
export const HISTORY_ITERATIONS = 64;
/** Versions whose summaries are kept per job (full op lists only for the one in force and the one it replaced). */
export const HISTORY_VERSIONS = 16;
/** Pipeline links (dp x stage boundaries) tracked per job: beyond this a job's further links are not kept (counted). */
export const HISTORY_MAX_LINKS = 4096;

export interface VersionSummary {
  version: number;
  effectiveIteration: number;
  committedAt: number;
  reason: { kind: string; detail: string };
  predictedMs: number;
  previousPredictedMs: number | null;
  warmups: number[][];
  delegatedRanks: number;
  /** Measured iteration time while this version ran: sum and count of per-iteration values. */
  measuredSumMs: number;
  measuredCount: number;
}

/**
 * What the job page shows about a job's recent past, in fixed-size memory: a ring of the last
 * HISTORY_ITERATIONS iterations of per-link one-way times (the worst either end reported) and
 * measured iteration times, the last HISTORY_VERSIONS versions, and the full schedules of the
 * version in force and the one it replaced (for the before/after timeline).
 */
export class JobHistory {
  readonly links: number;
  private readonly tags = new Int32Array(HISTORY_ITERATIONS).fill(-1);
  private readonly delays: Float32Array;
  private readonly iterationMs = new Float32Array(HISTORY_ITERATIONS).fill(Number.NaN);
  private newest = -1;
  private droppedSamples = 0;
  private readonly summaries: VersionSummary[] = [];
  private inForce: PublishedSchedule | null = null;
  private before: PublishedSchedule | null = null;

  constructor(readonly stages: number, readonly dp: number) {
    this.links = Math.min(HISTORY_MAX_LINKS, Math.max(0, dp * (stages - 1)));
    this.delays = new Float32Array(HISTORY_ITERATIONS * this.links).fill(Number.NaN);
  }

  /** The ring slot of `iteration`, clearing it when it held an older one; -1 when the iteration is too old to keep. */
  private slot(iteration: number): number {
    if (!Number.isInteger(iteration) || iteration < 0 || iteration <= this.newest - HISTORY_ITERATIONS) return -1;
    const slot = iteration % HISTORY_ITERATIONS;
    if (this.tags[slot] !== iteration) {
      this.tags[slot] = iteration;
      this.delays.fill(Number.NaN, slot * this.links, (slot + 1) * this.links);
      this.iterationMs[slot] = Number.NaN;
    }
    if (iteration > this.newest) this.newest = iteration;
    return slot;
  }

  /** One rank's measured one-way time on pipeline link `link` of replica `dp` in `iteration`. */
  noteLinkDelay(iteration: number, dp: number, link: number, ms: number): void {
    const index = dp * (this.stages - 1) + link;
    if (link < 0 || link >= this.stages - 1 || dp < 0 || index >= this.links || !Number.isFinite(ms)) {
      this.droppedSamples++;
      return;
    }
    const slot = this.slot(iteration);
    if (slot < 0) {
      this.droppedSamples++;
      return;
    }
    const k = slot * this.links + index;
    if (!(this.delays[k] >= ms)) this.delays[k] = ms;
  }

  /** The iteration time measured for `iteration` (first value wins), credited to the version that ran it. */
  noteIteration(iteration: number, version: number, ms: number): void {
    if (!(ms > 0) || !Number.isFinite(ms)) return;
    const slot = this.slot(iteration);
    if (slot < 0 || !Number.isNaN(this.iterationMs[slot])) return;
    this.iterationMs[slot] = ms;
    const summary = this.summaries.find((v) => v.version === version);
    if (summary) {
      summary.measuredSumMs += ms;
      summary.measuredCount++;
    }
  }

  noteCommitted(schedule: PublishedSchedule): void {
    if (this.inForce?.version === schedule.version) return;
    if (this.inForce) this.before = this.inForce;
    this.inForce = schedule;
    this.summaries.push({
      version: schedule.version,
      effectiveIteration: schedule.effectiveIteration,
      committedAt: schedule.createdAt,
      reason: { kind: schedule.reason.kind, detail: schedule.reason.detail },
      predictedMs: schedule.prediction.newMs,
      previousPredictedMs: schedule.prediction.previousMs,
      warmups: schedule.pipelines.map((p) => p.warmup),
      delegatedRanks: schedule.delegation.length,
      measuredSumMs: 0,
      measuredCount: 0,
    });
    if (this.summaries.length > HISTORY_VERSIONS) this.summaries.splice(0, this.summaries.length - HISTORY_VERSIONS);
  }

  /** The kept iterations, oldest first, with per link (dp * (S - 1) + link) their delays (NaN = not reported) and the iteration times. */
  recent(): { iterations: number[]; delays: number[][]; iterationMs: number[] } {
    const iterations: number[] = [];
    for (let i = Math.max(0, this.newest - HISTORY_ITERATIONS + 1); i <= this.newest; i++) if (this.tags[i % HISTORY_ITERATIONS] === i) iterations.push(i);
    const delays = Array.from({ length: this.links }, (_, l) => iterations.map((i) => this.delays[(i % HISTORY_ITERATIONS) * this.links + l]));
    return { iterations, delays, iterationMs: iterations.map((i) => this.iterationMs[i % HISTORY_ITERATIONS]) };
  }

  /** Samples refused: older than the ring, or a link beyond HISTORY_MAX_LINKS. */
  get dropped(): number {
    return this.droppedSamples;
  }

  /** The newest versions, oldest first, with what they measured. */
  get versions(): readonly Readonly<VersionSummary>[] {
    return this.summaries;
  }

  /** The schedule in force, as far as this history has seen. */
  get current(): PublishedSchedule | null {
    return this.inForce;
  }

  /** The schedule the one in force replaced. */
  get replaced(): PublishedSchedule | null {
    return this.before;
  }

  /** Bytes of typed-array storage: fixed at construction, whatever the job reports. */
  get storageBytes(): number {
    return this.tags.byteLength + this.delays.byteLength + this.iterationMs.byteLength;
  }
}
