import Redis from 'ioredis';
import { ControlEvent, PublishedSchedule, Registration } from '../protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../protocol/redis-keys';
import { EmulatedJob, IterationResult, ReplicaPlan } from './emulated-job';
import { replicaPlans } from './replica-plans';
import { RankView } from './rank-view';

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
   * Paced wall clock (with lockstep off): each iteration takes its emulated time times `pace` in
   * wall-clock time before its reports go out, and ranks read control once per iteration boundary,
   * so the daemon's reaction time (its timers are wall-clock) costs iterations as it would for real
   * ranks. 1 is real time; 0.05 runs a 768 ms iteration in about 38 ms.
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
 * The rank side of protocol v1 for every reporting rank of an emulated job, over a real Redis:
 * register, wait for the first schedule, then per iteration agree on the version (all-reduce
 * MIN of what each rank knows, docs/protocol.md sec. 5), run, report, read control events and
 * acknowledge prepares, exactly as a real rank would.
 */
export class RankGroup {
  readonly keys;
  /** Each reporting rank's own protocol state. */
  private readonly views: RankView[];
  /** Schedule contents by version (identical for every rank that GETs them; the model needs them). */
  private readonly contents = new Map<number, PublishedSchedule>();
  /** Committed schedules in the order any rank learned them. */
  private readonly commits: PublishedSchedule[] = [];
  private readonly plans = new Map<number, ReplicaPlan[]>();
  private readonly ranks: number[];
  iteration = 0;
  /**
   * Per iteration, the version each rank itself recorded running (`versions`, index = rank) and the
   * k_local it brought to the agreement (`local`): the evidence for "no iteration mixed versions".
   */
  readonly history: Array<{ iteration: number; versions: number[]; local: number[]; iterationMs: number; topologyVersion: number }> = [];

  constructor(private readonly redis: Redis, readonly job: EmulatedJob, private readonly options: RankGroupOptions) {
    this.keys = jobKeys(job.jobId);
    this.ranks = Array.from({ length: job.dp * job.stages }, (_, r) => r);
    this.views = this.ranks.map((r) => new RankView(r));
  }

  registration(): Registration {
    const { profile, dp, stages } = this.job;
    const dataParallel = this.job.dataParallelSpec();
    return {
      type: 'register',
      protocol: 1,
      jobId: this.job.jobId,
      stages,
      microbatches: profile.microbatches,
      dp,
      tp: 1,
      ranks: this.ranks.map((rank) => {
        const locality = this.job.fabric?.locality(rank);
        return { rank, ...this.job.coordinatesOf(rank), tp: 0, node: `emulated-${rank}`, ...(locality !== undefined ? { locality } : {}) };
      }),
      memory: { deviceBytes: this.options.deviceActivations.map((a) => a * 1e9), activationBytes: new Array(stages).fill(1e9), hostBytes: this.options.hostActivations * 1e9 },
      computeMs: { fMs: profile.fMs, bMs: profile.bMs, wMs: profile.wMs },
      // The fabric's nominal latency: a link slow from the first iteration is still seen as slow.
      network: { latencyMs: Math.min(...profile.linkMs, Number.POSITIVE_INFINITY) === Number.POSITIVE_INFINITY ? 0 : Math.min(...profile.linkMs), nominalGBps: 1000 },
      ...(dataParallel ? { dataParallel } : {}),
    };
  }

  async register(): Promise<void> {
    await this.redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(this.registration()));
  }

  /** Every rank connects like a restarting rank (sec. 4): cursor first, then the committed schedule. */
  async connect(timeoutMs = 30000): Promise<PublishedSchedule> {
    const deadline = Date.now() + timeoutMs;
    let first: PublishedSchedule | null = null;
    for (const view of this.views) {
      for (;;) {
        const last = (await this.redis.xrevrange(this.keys.control, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
        const raw = await this.redis.get(this.keys.schedule);
        if (raw) {
          const schedule = JSON.parse(raw) as PublishedSchedule;
          const lastEvent = last.length > 0 ? (JSON.parse(last[0][1][last[0][1].indexOf('m') + 1]) as ControlEvent) : null;
          view.connect(last.length > 0 ? last[0][0] : '0-0', lastEvent?.epoch ?? 0, schedule);
          this.keep(schedule);
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
    return this.commits;
  }

  /** The schedule the job runs at `iteration` under the MIN agreement: the lowest k_local of all ranks. */
  agreedVersion(iteration: number): PublishedSchedule {
    const k = Math.min(...this.views.map((v) => v.localVersion(iteration)));
    return this.contents.get(k)!;
  }

  /** Iterations in which the ranks' own records disagree (must be none). */
  mixedIterations(): number[] {
    return this.history.filter((h) => new Set(h.versions).size > 1).map((h) => h.iteration);
  }

  async step(): Promise<IterationResult> {
    const startedAt = performance.now();
    const i = this.iteration;
    const local = this.views.map((v) => v.localVersion(i));
    const agreed = Math.min(...local);
    const versions = this.options.agreement === 'skip' ? local : local.map(() => agreed);
    this.views.forEach((v, r) => v.ran(versions[r]));
    // The engine runs one schedule per replica: the agreed one. Under a broken agreement the ranks'
    // records still say what each would have run; that is what the checks read.
    const schedule = this.contents.get(agreed)!;
    // Every rank runs the agreed version, so all of them switch topology at this same boundary.
    // A schedule without topology keeps the layout in force (the daemon sends one on every
    // schedule once the job has been re-mapped).
    if (schedule.topology && schedule.topology.version !== this.job.topologyVersion) this.job.applyTopology(schedule.topology);
    let plans = this.plans.get(schedule.version);
    if (!plans) {
      plans = replicaPlans(schedule, this.job.dp, this.job.stages, this.job.profile.microbatches);
      this.plans.set(schedule.version, plans);
    }
    const result = this.job.runIteration(i, plans, versions);
    this.history.push({ iteration: i, versions, local, iterationMs: result.iterationMs, topologyVersion: result.topologyVersion });
    const pace = this.options.lockstep ? undefined : this.options.pace;
    if (pace !== undefined) {
      // The iteration runs for its emulated time; its reports leave when it ends.
      const wait = startedAt + result.iterationMs * pace - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const pipeline = this.redis.pipeline();
    for (const report of result.reports) pipeline.xadd(this.keys.reports, 'MAXLEN', '~', 100000, '*', 'm', JSON.stringify(report));
    await pipeline.exec();
    if (this.options.lockstep) await this.drained();
    this.iteration++;
    // At the boundary every rank reads control once (sec. 4). Lockstep also lets the ranks that
    // acked read the commit that follows at once; paced ranks hear it at the next boundary.
    if ((await this.pollControl(false)) && pace === undefined) {
      if (this.options.lockstep) await this.drained();
      await this.pollControl(true);
    }
    return result;
  }

  /**
   * Each rank that polls this iteration reads the control stream from its own cursor, learns commits
   * (GETting the schedule content it lacks) and answers prepares (GET pending, then ack: accepted iff
   * the iteration it is about to run is before the effective iteration). Returns whether acks were sent.
   */
  private async pollControl(again: boolean): Promise<boolean> {
    // A slow rank reads at most once per iteration, so a commit landing after its ack reaches it only
    // at its next read; the others read once more when they acked (the commit follows at once).
    const slow = (v: RankView) => this.options.slowRanks?.includes(v.rank) ?? false;
    const polling = this.views.filter((v) => !slow(v) || (!again && this.iteration % (this.options.slowEvery ?? 1) === 0));
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
          const learned = view.onEvent(id, JSON.parse(fields[fields.indexOf('m') + 1]) as ControlEvent);
          if (learned === null) continue;
          const held = this.contents.get(learned);
          if (held) this.keep({ ...held, state: 'committed' });
          else {
            const raw = await this.redis.get(this.keys.schedule); // it did not see the prepare
            if (raw) this.keep(JSON.parse(raw) as PublishedSchedule);
          }
        }
      }
      for (const prepare of view.toAnswer.splice(0)) {
        const raw = await this.redis.get(this.keys.pending);
        const pending = raw ? (JSON.parse(raw) as PublishedSchedule) : null;
        if (!pending || pending.version !== prepare.version || pending.epoch < view.epoch) continue; // aborted or superseded
        this.contents.set(pending.version, pending);
        const accepted = this.iteration < pending.effectiveIteration;
        const ack = { type: 'ack', protocol: 1, jobId: this.job.jobId, rank: view.rank, version: pending.version, epoch: pending.epoch, iteration: this.iteration, accepted, ...(accepted ? {} : { reason: 'late' }) };
        acks.xadd(this.keys.reports, '*', 'm', JSON.stringify(ack));
        acked = true;
      }
    }
    if (acked) await acks.exec();
    return acked;
  }

  /** Records a committed schedule's content (and, the first time, that the job learned it). */
  private keep(schedule: PublishedSchedule): void {
    this.contents.set(schedule.version, schedule);
    if (!this.commits.some((c) => c.version === schedule.version)) this.commits.push(schedule);
  }

  /** Waits until the daemon has read and acknowledged everything written to the reports stream. */
  private async drained(timeoutMs = 30000): Promise<void> {
    const group = this.options.consumerGroup ?? 'pipemorph';
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const groups = (await this.redis.xinfo('GROUPS', this.keys.reports)) as Array<Array<string | number | null>>;
      const g = groups.find((x) => x[x.indexOf('name') + 1] === group);
      if (g) {
        const pending = Number(g[g.indexOf('pending') + 1]);
        const lag = g[g.indexOf('lag') + 1];
        if (pending === 0 && lag !== null && Number(lag) === 0) return;
      }
      if (Date.now() > deadline) throw new Error(`daemon did not drain job ${this.job.jobId} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  async cleanup(): Promise<void> {
    await this.redis.del(...Object.values(this.keys));
    await this.redis.srem('pipemorph:jobs', this.job.jobId);
  }
}
