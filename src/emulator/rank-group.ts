import Redis from 'ioredis';
import { ControlEvent, PublishedSchedule, Registration } from '../protocol/protocol-v1.type';
import { JOBS_INDEX, jobKeys, REGISTRATIONS_STREAM } from '../protocol/redis-keys';
import { EmulatedJob, IterationResult } from './emulated-job';
import { RankView } from './rank-view';
import { RankIteration, RankSet } from './rank-set.model';
import { streamDrained } from './stream-drained.util';

export interface RankGroupOptions {
  /** Ranks that read the control stream only every `slowEvery` iterations (a rank that hears late). */
  slowRanks?: number[];
  slowEvery?: number;
  /** Per-stage device memory in activations (the daemon's initial plan fits it), and host memory. */
  deviceActivations: number[];
  hostActivations: number;
  /** Virtual time: after writing, wait until the daemon has handled everything (lockstep, fast and repeatable). */
  lockstep: boolean;
  /**
   * Paced clock (needs lockstep false): wall ms per simulated ms (1: real time). Each iteration takes
   * its simulated time on the wall clock, every rank writes its report and reads control at its own
   * iteration boundary, and nothing waits for the daemon: the daemon's wall-clock timers, its ingest
   * and planning time and the Redis round trips all cost iterations, as on a real cluster.
   */
  pace?: number;
  /**
   * How the ranks agree on the version to run (protocol sec. 5.2). `min` (default): the all-reduce
   * MIN of every rank's own k_local. `skip` breaks it on purpose, for tests of the checks: every rank
   * runs its own k_local, and the per-rank records show the mixed iterations.
   */
  agreement?: 'min' | 'skip';
  consumerGroup?: string;
}

/**
 * The Redis adapter of an emulated job's ranks (protocol v1 over a real Redis): registers, waits for
 * the first schedule, then per iteration lets the pure model (RankSet: per-rank views, the MIN
 * agreement, the EmulatedJob) run, writes the reports, reads control events and acknowledges
 * prepares, exactly as real ranks would.
 */
export class RankGroup {
  readonly keys;
  /** Everything the ranks know and decide, without I/O. */
  readonly model: RankSet;
  /** Paced clock: wall time (performance.now) the current iteration started, and how far the ranks fell behind the pace, at most. */
  private wallStartMs: number | null = null;
  maxBehindMs = 0;

  constructor(private readonly redis: Redis, readonly job: EmulatedJob, private readonly options: RankGroupOptions) {
    if (options.pace !== undefined && (options.lockstep || !(options.pace > 0) || !Number.isFinite(options.pace))) {
      throw new Error(`rank group: pace ${options.pace} needs lockstep false and a finite number > 0`);
    }
    this.keys = jobKeys(job.jobId);
    this.model = new RankSet(job, options.agreement);
  }

  /** The iteration the ranks run next. */
  get iteration(): number {
    return this.model.iteration;
  }

  /** Per iteration, what each rank recorded (RankSet.history). */
  get history(): readonly RankIteration[] {
    return this.model.history;
  }

  registration(): Registration {
    return this.model.registration(this.options.deviceActivations, this.options.hostActivations);
  }

  async register(): Promise<void> {
    await this.redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(this.registration()));
  }

  /** Every rank connects like a restarting rank (sec. 4): cursor first, then the committed schedule. */
  async connect(timeoutMs = 30000): Promise<PublishedSchedule> {
    const deadline = Date.now() + timeoutMs;
    let first: PublishedSchedule | null = null;
    for (const view of this.model.views) {
      for (;;) {
        const last = (await this.redis.xrevrange(this.keys.control, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
        const raw = await this.redis.get(this.keys.schedule);
        if (raw) {
          const schedule = JSON.parse(raw) as PublishedSchedule;
          const lastEvent = last.length > 0 ? (JSON.parse(last[0][1][last[0][1].indexOf('m') + 1]) as ControlEvent) : null;
          this.model.connect(view, last.length > 0 ? last[0][0] : '0-0', lastEvent?.epoch ?? 0, schedule);
          first ??= schedule;
          break;
        }
        if (Date.now() > deadline) throw new Error(`no schedule for job ${this.job.jobId} after ${timeoutMs} ms: is the daemon running?`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    return first!;
  }

  /** Committed schedules the ranks learned, oldest first. */
  learned(): readonly PublishedSchedule[] {
    return this.model.learned();
  }

  /** The schedule the job runs at `iteration` under the MIN agreement: the lowest k_local of all ranks. */
  agreedVersion(iteration: number): PublishedSchedule {
    return this.model.agreedVersion(iteration);
  }

  /** Iterations in which the ranks' own records disagree (must be none). */
  mixedIterations(): number[] {
    return this.model.mixedIterations();
  }

  async step(): Promise<IterationResult> {
    const result = this.model.run();
    if (this.options.pace !== undefined) {
      await this.pacedBoundaries(result, this.options.pace);
      return result;
    }
    const pipeline = this.redis.pipeline();
    for (const report of result.reports) pipeline.xadd(this.keys.reports, 'MAXLEN', '~', 100000, '*', 'm', JSON.stringify(report));
    await pipeline.exec();
    if (this.options.lockstep) await this.drained();
    if (await this.pollControl(this.pollingNow(false))) {
      if (this.options.lockstep) await this.drained();
      await this.pollControl(this.pollingNow(true));
    }
    return result;
  }

  /**
   * Paced clock: each rank reaches its boundary (its last op done) at its own wall time, writes its
   * report and reads control there, once; a commit that lands after a rank's read reaches it at its
   * next boundary. Then the iteration's end on the wall clock. Deadlines are absolute, so a late
   * boundary (a busy machine) is caught up, and maxBehindMs says how late the ranks ever were.
   */
  private async pacedBoundaries(result: IterationResult, pace: number): Promise<void> {
    const start = this.wallStartMs ?? performance.now();
    const byRank = new Map(result.reports.map((r) => [r.rank, r]));
    const order = this.model.views.map((v) => v.rank).sort((a, b) => result.rankDoneMs[a] - result.rankDoneMs[b]);
    for (let k = 0; k < order.length; ) {
      const at = result.rankDoneMs[order[k]];
      const due: number[] = [];
      while (k < order.length && result.rankDoneMs[order[k]] === at) due.push(order[k++]);
      await this.sleepUntil(start + at * pace);
      const pipeline = this.redis.pipeline();
      for (const rank of due) pipeline.xadd(this.keys.reports, 'MAXLEN', '~', 100000, '*', 'm', JSON.stringify(byRank.get(rank)));
      await pipeline.exec();
      const reading = new Set(this.pollingNow(false).map((v) => v.rank));
      await this.pollControl(this.model.views.filter((v) => due.includes(v.rank) && reading.has(v.rank)));
    }
    const end = start + result.iterationMs * pace;
    await this.sleepUntil(end);
    this.wallStartMs = end;
  }

  private async sleepUntil(wallMs: number): Promise<void> {
    const wait = wallMs - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    else this.maxBehindMs = Math.max(this.maxBehindMs, -wait);
  }

  /** The ranks that read control now: a slow rank reads at most once per iteration, every slowEvery-th. */
  private pollingNow(again: boolean): RankView[] {
    // A slow rank's commit landing after its ack reaches it only at its next read; the others read
    // once more when they acked (in lockstep the commit follows at once).
    const slow = (v: RankView) => this.options.slowRanks?.includes(v.rank) ?? false;
    return this.model.views.filter((v) => !slow(v) || (!again && this.iteration % (this.options.slowEvery ?? 1) === 0));
  }

  /**
   * Each rank in `polling` reads the control stream from its own cursor, learns commits (GETting the
   * schedule content it lacks) and answers prepares (GET pending, then ack: accepted iff the
   * iteration it is about to run is before the effective iteration). Returns whether acks were sent.
   */
  private async pollControl(polling: RankView[]): Promise<boolean> {
    if (polling.length === 0) return false;
    const reads = this.redis.pipeline();
    for (const view of polling) reads.xread('COUNT', 1000, 'STREAMS', this.keys.control, view.cursor);
    const replies = (await reads.exec()) ?? [];
    const acks = this.redis.pipeline();
    let acked = false;
    for (let n = 0; n < polling.length; n++) {
      const view = polling[n];
      const reply = replies[n][1] as Array<[string, Array<[string, string[]]>]> | null;
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          const missing = this.model.onEvent(view, id, JSON.parse(fields[fields.indexOf('m') + 1]) as ControlEvent);
          if (missing === null) continue;
          const raw = await this.redis.get(this.keys.schedule); // it did not see the prepare
          if (raw) this.model.keep(JSON.parse(raw) as PublishedSchedule);
        }
      }
      for (const prepare of view.toAnswer.splice(0)) {
        const raw = await this.redis.get(this.keys.pending);
        const ack = this.model.answer(view, prepare, raw ? (JSON.parse(raw) as PublishedSchedule) : null);
        if (!ack) continue; // aborted or superseded
        acks.xadd(this.keys.reports, '*', 'm', JSON.stringify(ack));
        acked = true;
      }
    }
    if (acked) await acks.exec();
    return acked;
  }

  /** Waits until the daemon has read and acknowledged everything written to the reports stream. */
  private drained(): Promise<void> {
    return streamDrained(this.redis, this.keys.reports, this.options.consumerGroup ?? 'pipemorph');
  }

  async cleanup(): Promise<void> {
    await this.redis.del(...Object.values(this.keys));
    await this.redis.srem(JOBS_INDEX, this.job.jobId);
  }
}
