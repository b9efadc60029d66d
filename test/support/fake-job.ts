/**
 * Emulated ranks for integration tests: they speak protocol v1 with plain Redis commands
 * (XADD / XREAD / GET), exactly what a Python rank with redis-py does, so the daemon is tested
 * through its real wire interface.
 */
import Redis from 'ioredis';
import { ControlEvent, PublishedSchedule, Registration } from '../../src/protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../../src/protocol/redis-keys';

export interface FakeJobOptions {
  jobId: string;
  stages: number;
  microbatches: number;
  dp?: number;
  opMs?: number;
  /** Activations per stage that fit on the device (deviceBytes / activationBytes). */
  deviceActivations?: number;
}

export type AckPolicy = 'accept' | 'ignore' | 'refuse';

export class FakeJob {
  readonly keys;
  readonly registration: Registration;
  /** Healthy one-way send time of a pipeline message, ms. */
  baseMs = 1;
  /** Extra delay per pipeline link (key `${dp}:${link}`), ms. */
  readonly extra = new Map<string, number>();
  readonly nicFailed = new Set<string>();
  /** How each rank answers prepares. */
  readonly ackPolicy = new Map<number, AckPolicy>();
  private controlCursor = '0-0';
  readonly events: ControlEvent[] = [];
  iteration = 0;

  constructor(private readonly redis: Redis, readonly options: FakeJobOptions) {
    const dp = options.dp ?? 1;
    const opMs = options.opMs ?? 10;
    const S = options.stages;
    this.keys = jobKeys(options.jobId);
    this.registration = {
      type: 'register',
      protocol: 1,
      jobId: options.jobId,
      stages: S,
      microbatches: options.microbatches,
      dp,
      tp: 1,
      ranks: Array.from({ length: S * dp }, (_, rank) => ({ rank, dp: Math.floor(rank / S), pp: rank % S, tp: 0, node: `node-${rank}` })),
      memory: {
        deviceBytes: new Array(S).fill((options.deviceActivations ?? 2 * S) * 1e9),
        activationBytes: new Array(S).fill(1e9),
        hostBytes: 64e9,
      },
      computeMs: { fMs: new Array(S).fill(opMs), bMs: new Array(S).fill(opMs), wMs: new Array(S).fill(opMs) },
    };
  }

  rankOf(dp: number, pp: number): number {
    return dp * this.options.stages + pp;
  }

  get reportingRanks(): number[] {
    return this.registration.ranks.map((r) => r.rank);
  }

  async register(override: Partial<Registration> = {}): Promise<void> {
    await this.redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify({ ...this.registration, ...override }));
  }

  async committed(): Promise<PublishedSchedule | null> {
    const raw = await this.redis.get(this.keys.schedule);
    return raw ? JSON.parse(raw) : null;
  }

  async pending(): Promise<PublishedSchedule | null> {
    const raw = await this.redis.get(this.keys.pending);
    return raw ? JSON.parse(raw) : null;
  }

  /** One report per reporting rank for the current iteration, then iteration++. */
  async reportIteration(version?: number): Promise<void> {
    const S = this.options.stages;
    const dp = this.options.dp ?? 1;
    const opMs = this.options.opMs ?? 10;
    const v = version ?? (await this.committed())?.version ?? 0;
    const pipeline = this.redis.pipeline();
    for (let d = 0; d < dp; d++) {
      for (let pp = 0; pp < S; pp++) {
        const rank = this.rankOf(d, pp);
        const links = [];
        for (const [peerPp, link] of [[pp + 1, pp], [pp - 1, pp - 1]] as const) {
          if (peerPp < 0 || peerPp >= S) continue;
          const key = `${d}:${link}`;
          const ms = this.baseMs + (this.extra.get(key) ?? 0);
          links.push({ peer: this.rankOf(d, peerPp), kind: 'pipeline', bytes: 1 << 24, medianMs: ms, maxMs: ms * 1.2, delegated: false, error: this.nicFailed.has(key) ? 'nic-failure' : null });
        }
        const report = { type: 'report', protocol: 1, jobId: this.options.jobId, rank, iteration: this.iteration, scheduleVersion: v, computeMs: { f: opMs, b: opMs, w: opMs }, links };
        pipeline.xadd(this.keys.reports, 'MAXLEN', '~', 100000, '*', 'm', JSON.stringify(report));
      }
    }
    await pipeline.exec();
    this.iteration++;
  }

  /** Reads new control events and answers prepares like a rank would (per ackPolicy). */
  async pollControl(): Promise<ControlEvent[]> {
    const reply = (await this.redis.xread('COUNT', 1000, 'STREAMS', this.keys.control, this.controlCursor)) as Array<[string, Array<[string, string[]]>]> | null;
    const fresh: ControlEvent[] = [];
    for (const [, entries] of reply ?? []) {
      for (const [id, fields] of entries) {
        this.controlCursor = id;
        const event = JSON.parse(fields[1]) as ControlEvent;
        fresh.push(event);
        this.events.push(event);
        if (event.type === 'prepare') await this.answerPrepare(event);
      }
    }
    return fresh;
  }

  async answerPrepare(event: ControlEvent, ranks = this.reportingRanks): Promise<void> {
    for (const rank of ranks) {
      const policy = this.ackPolicy.get(rank) ?? 'accept';
      if (policy === 'ignore') continue;
      const accepted = policy === 'accept' && this.iteration < event.effectiveIteration;
      const ack = { type: 'ack', protocol: 1, jobId: this.options.jobId, rank, version: event.version, epoch: event.epoch, iteration: this.iteration, accepted, ...(accepted ? {} : { reason: 'late' }) };
      await this.redis.xadd(this.keys.reports, '*', 'm', JSON.stringify(ack));
    }
  }

  async cleanup(): Promise<void> {
    await this.redis.del(...Object.values(this.keys));
    await this.redis.srem('pipemorph:jobs', this.options.jobId);
  }
}

/** Polls `check` until it returns a value other than undefined/false, or fails after timeoutMs. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false | null>, timeoutMs = 10000, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false && value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Runs iterations, answering control events after each, until `until` holds. */
export async function iterate(job: FakeJob, until: () => Promise<unknown>, max = 200): Promise<void> {
  for (let k = 0; k < max; k++) {
    await job.reportIteration();
    await new Promise((resolve) => setTimeout(resolve, 15));
    await job.pollControl();
    if (await until()) return;
  }
  throw new Error(`condition not reached in ${max} iterations`);
}

/** The committed schedule when its version is above `version`, else false. */
export async function committedAfter(job: FakeJob, version: number): Promise<PublishedSchedule | false> {
  const s = await job.committed();
  return s !== null && s.version > version && s;
}
