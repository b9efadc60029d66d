import Redis from 'ioredis';
import { ControlEvent, PublishedSchedule, Registration } from '../protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../protocol/redis-keys';
import { EmulatedJob, IterationResult, ReplicaPlan } from './emulated-job';
import { replicaPlans } from './replica-plans';

export interface RankGroupOptions {
  /** Ranks that read the control stream only every `slowEvery` iterations (a rank that hears late). */
  slowRanks?: number[];
  slowEvery?: number;
  /** Per-stage device memory in activations (the daemon's initial plan fits it), and host memory. */
  deviceActivations: number[];
  hostActivations: number;
  /** Virtual time: after writing, wait until the daemon has handled everything (lockstep, fast and repeatable). */
  lockstep: boolean;
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
  private cursor = '0-0';
  /** The prepare under way and the ranks that answered it. */
  private open: ControlEvent | null = null;
  private readonly acked = new Set<number>();
  private epoch = 0;
  /** Committed schedules in the order they were learned. */
  private readonly commits: PublishedSchedule[] = [];
  /** How many of `commits` each rank knows. */
  private readonly knownUpTo: number[];
  private readonly plans = new Map<number, ReplicaPlan[]>();
  private readonly ranks: number[];
  iteration = 0;
  /** Versions each rank ran, per iteration (for checking that no iteration mixes versions). */
  readonly history: Array<{ iteration: number; versions: number[]; iterationMs: number; topologyVersion: number }> = [];

  constructor(private readonly redis: Redis, readonly job: EmulatedJob, private readonly options: RankGroupOptions) {
    this.keys = jobKeys(job.jobId);
    this.ranks = Array.from({ length: job.dp * job.stages }, (_, r) => r);
    this.knownUpTo = this.ranks.map(() => 0);
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

  /** Connects like a restarting rank: cursor first, then the committed and pending schedules. */
  async connect(timeoutMs = 30000): Promise<PublishedSchedule> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const last = (await this.redis.xrevrange(this.keys.control, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
      const raw = await this.redis.get(this.keys.schedule);
      if (raw) {
        if (last.length > 0) this.cursor = last[0][0];
        const schedule = JSON.parse(raw) as PublishedSchedule;
        this.learn(schedule, this.ranks);
        return schedule;
      }
      if (Date.now() > deadline) throw new Error(`no schedule for job ${this.job.jobId} after ${timeoutMs} ms: is the daemon running?`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Committed schedules the ranks learned, oldest first. */
  learned(): readonly PublishedSchedule[] {
    return this.commits;
  }

  /** The version every rank runs at `iteration`: the MIN over ranks of the newest commit each knows that applies. */
  agreedVersion(iteration: number): PublishedSchedule {
    let agreed: PublishedSchedule | null = null;
    for (const rank of this.ranks) {
      let mine: PublishedSchedule | null = null;
      for (let k = 0; k < this.knownUpTo[rank]; k++) {
        const c = this.commits[k];
        if (c.effectiveIteration <= iteration && (!mine || c.version > mine.version)) mine = c;
      }
      // Right after connecting every rank knows the connect-time schedule, so mine is never null.
      if (mine && (!agreed || mine.version < agreed.version)) agreed = mine;
    }
    return agreed!;
  }

  async step(): Promise<IterationResult> {
    const i = this.iteration;
    const schedule = this.agreedVersion(i);
    // Every rank runs the agreed version, so all of them switch topology at this same boundary.
    // A schedule without topology keeps the layout in force (the daemon sends one on every
    // schedule once the job has been re-mapped).
    if (schedule.topology && schedule.topology.version !== this.job.topologyVersion) this.job.applyTopology(schedule.topology);
    let plans = this.plans.get(schedule.version);
    if (!plans) {
      plans = replicaPlans(schedule, this.job.dp, this.job.stages, this.job.profile.microbatches);
      this.plans.set(schedule.version, plans);
    }
    const result = this.job.runIteration(i, plans, this.ranks.map(() => schedule.version));
    this.history.push({ iteration: i, versions: this.ranks.map(() => schedule.version), iterationMs: result.iterationMs, topologyVersion: result.topologyVersion });
    const pipeline = this.redis.pipeline();
    for (const report of result.reports) pipeline.xadd(this.keys.reports, 'MAXLEN', '~', 100000, '*', 'm', JSON.stringify(report));
    await pipeline.exec();
    if (this.options.lockstep) await this.drained();
    this.iteration++;
    if (await this.pollControl()) {
      if (this.options.lockstep) await this.drained();
      await this.pollControl();
    }
    return result;
  }

  /** Reads control events; each rank answers prepares (if it polls this iteration). Returns whether acks were sent. */
  private async pollControl(): Promise<boolean> {
    const reply = (await this.redis.xread('COUNT', 1000, 'STREAMS', this.keys.control, this.cursor)) as Array<[string, Array<[string, string[]]>]> | null;
    let acked = false;
    const polling = this.ranks.filter((r) => !this.options.slowRanks?.includes(r) || this.iteration % (this.options.slowEvery ?? 1) === 0);
    for (const [, entries] of reply ?? []) {
      for (const [id, fields] of entries) {
        this.cursor = id;
        const event = JSON.parse(fields[fields.indexOf('m') + 1]) as ControlEvent;
        if (event.epoch < this.epoch) continue; // fenced: an old owner
        this.epoch = event.epoch;
        if (event.type === 'prepare') {
          this.open = event;
          this.acked.clear();
        } else if (this.open?.version === event.version) {
          this.open = null;
        }
        if (event.type === 'commit') {
          const raw = await this.redis.get(this.keys.schedule);
          if (raw) this.learn(JSON.parse(raw) as PublishedSchedule, polling);
        }
      }
    }
    // Slow ranks catch up with what the others learned when they do poll.
    for (const rank of polling) this.knownUpTo[rank] = this.commits.length;
    if (this.open) acked = await this.acknowledge(this.open, polling.filter((r) => !this.acked.has(r)));
    return acked;
  }

  private async acknowledge(event: ControlEvent, ranks: number[]): Promise<boolean> {
    if (ranks.length === 0) return false;
    const pipeline = this.redis.pipeline();
    for (const rank of ranks) {
      this.acked.add(rank);
      const accepted = this.iteration < event.effectiveIteration;
      const ack = { type: 'ack', protocol: 1, jobId: this.job.jobId, rank, version: event.version, epoch: event.epoch, iteration: this.iteration, accepted, ...(accepted ? {} : { reason: 'late' }) };
      pipeline.xadd(this.keys.reports, '*', 'm', JSON.stringify(ack));
    }
    await pipeline.exec();
    return true;
  }

  private learn(schedule: PublishedSchedule, ranks: number[]): void {
    if (!this.commits.some((c) => c.version === schedule.version)) this.commits.push(schedule);
    for (const rank of ranks) this.knownUpTo[rank] = this.commits.length;
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
