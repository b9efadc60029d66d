/**
 * Emulated reporting ranks for the chaos suite, each with its own view of the protocol (docs/protocol.md
 * §4-5): its own control cursor, highest epoch, the schedules it holds and the commits it knows.
 * Every iteration the ranks agree on k = MIN of their own k_local and record, per rank, the version
 * and the content (createdAt) they ran, so the checks read what each rank did, not a shared value.
 * Redis errors never stop an iteration (the data plane does not wait for Redis).
 */
import Redis, { Cluster } from 'ioredis';
import { ControlEvent, PublishedSchedule, Registration } from '../../src/protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../../src/protocol/redis-keys';

export interface RankState {
  rank: number;
  pp: number;
  cursor: string;
  epoch: number;
  /**
   * Highest epoch of the control entries this rank has read, in stream order: an entry below it
   * was written after a higher epoch's (a fenced owner's write). Per rank, not shared: the ranks
   * read the stream one after the other, so a shared maximum would hold the epoch of entries a rank
   * has not reached yet and count an older entry as written after them.
   */
  streamEpoch: number;
  /** version -> createdAt of the content held */
  held: Map<number, number>;
  /** committed versions known -> effective iteration */
  commits: Map<number, number>;
  floor: number;
}

/** What connecting sets in a rank's protocol view. */
export interface ConnectingView {
  cursor: string;
  epoch: number;
  streamEpoch: number;
  commits: Map<number, number>;
  floor: number;
}

/**
 * Connect (§4) every view: cursor at the last control entry, the committed schedule in force at
 * once (`hold` keeps its content). False while the job has no committed schedule.
 */
export async function connectViews<V extends ConnectingView>(redis: Redis | Cluster, keys: { control: string; schedule: string }, views: V[], hold: (view: V, schedule: PublishedSchedule) => void): Promise<boolean> {
  const [latest] = (await redis.xrevrange(keys.control, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
  const raw = await redis.get(keys.schedule);
  if (!raw) return false;
  const schedule = JSON.parse(raw) as PublishedSchedule;
  const latestEpoch = latest ? (JSON.parse(latest[1][1]) as ControlEvent).epoch : 0;
  for (const v of views) {
    v.cursor = latest?.[0] ?? '0-0';
    v.streamEpoch = Math.max(v.streamEpoch, latestEpoch);
    v.epoch = Math.max(v.epoch, schedule.epoch);
    hold(v, schedule);
    v.commits.set(schedule.version, 0);
    v.floor = schedule.version;
  }
  return true;
}

export interface RankRecord {
  iteration: number;
  /** per rank: `${version}@${createdAt}` or 'missing' */
  ran: string[];
}

export class ChaosRanks {
  readonly keys;
  readonly registration: Registration;
  readonly ranks: RankState[];
  readonly records: RankRecord[] = [];
  /** version -> distinct createdAt seen in any schedule a rank read */
  readonly contents = new Map<number, Set<number>>();
  /** control entries with an epoch below an earlier entry's on the stream, as a rank reads it in order (a fenced owner's write) */
  readonly staleWrites = new Set<string>();
  /** ids of reports written (accepted by Redis) and the time each was written */
  readonly written: Array<{ id: string; at: number }> = [];
  extraMs = new Map<number, number>();
  iteration = 0;
  private timer: NodeJS.Timeout | null = null;
  private busy = false;

  constructor(readonly redis: Redis, readonly jobId: string, readonly stages = 4, readonly periodMs = 40) {
    this.keys = jobKeys(jobId);
    this.ranks = Array.from({ length: stages }, (_, pp) => ({ rank: pp, pp, cursor: '0-0', epoch: 0, streamEpoch: 0, held: new Map(), commits: new Map(), floor: 0 }));
    this.registration = {
      type: 'register', protocol: 1, jobId, stages, microbatches: 8, dp: 1, tp: 1,
      ranks: Array.from({ length: stages }, (_, rank) => ({ rank, dp: 0, pp: rank, tp: 0, node: `node-${rank}` })),
      memory: { deviceBytes: new Array(stages).fill(2 * stages * 1e9), activationBytes: new Array(stages).fill(1e9), hostBytes: 64e9 },
      computeMs: { fMs: new Array(stages).fill(10), bMs: new Array(stages).fill(10), wMs: new Array(stages).fill(10) },
      network: { nominalGBps: 25, latencyMs: 1 },
    };
  }

  async register(): Promise<void> {
    await this.redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(this.registration));
  }

  /** Connect (§4): cursor at the last control entry, the committed schedule in force at once. */
  connect(): Promise<boolean> {
    return connectViews(this.redis, this.keys, this.ranks, (r, s) => this.hold(r, s));
  }

  start(): void {
    this.timer = setInterval(() => {
      if (this.busy) return;
      this.busy = true;
      this.step().finally(() => (this.busy = false));
    }, this.periodMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    while (this.busy) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  /** The version every rank runs now (the last agreed k). */
  get agreed(): number {
    return this.ranks[0].floor;
  }

  private hold(r: RankState, s: PublishedSchedule): void {
    r.held.set(s.version, s.createdAt);
    let set = this.contents.get(s.version);
    if (!set) this.contents.set(s.version, (set = new Set()));
    set.add(s.createdAt);
  }

  private async poll(r: RankState, i: number): Promise<void> {
    const reply = (await this.redis.xread('COUNT', 1000, 'STREAMS', this.keys.control, r.cursor)) as Array<[string, Array<[string, string[]]>]> | null;
    for (const [, entries] of reply ?? []) {
      for (const [id, fields] of entries) {
        r.cursor = id;
        const e = JSON.parse(fields[1]) as ControlEvent;
        if (e.epoch < r.streamEpoch) this.staleWrites.add(id);
        r.streamEpoch = Math.max(r.streamEpoch, e.epoch);
        if (e.epoch < r.epoch) continue;
        r.epoch = e.epoch;
        if (e.type === 'prepare') {
          const raw = await this.redis.get(this.keys.pending);
          const p = raw ? (JSON.parse(raw) as PublishedSchedule) : null;
          if (!p || p.version !== e.version || p.epoch < r.epoch) continue;
          this.hold(r, p);
          const accepted = i < e.effectiveIteration;
          const ack = { type: 'ack', protocol: 1, jobId: this.jobId, rank: r.rank, version: e.version, epoch: e.epoch, iteration: i, accepted, ...(accepted ? {} : { reason: 'late' }) };
          await this.redis.xadd(this.keys.reports, '*', 'm', JSON.stringify(ack));
        } else if (e.type === 'commit') {
          r.commits.set(e.version, e.effectiveIteration);
          if (!r.held.has(e.version)) {
            const raw = await this.redis.get(this.keys.schedule);
            const s = raw ? (JSON.parse(raw) as PublishedSchedule) : null;
            if (s && s.version === e.version) this.hold(r, s);
          }
        }
      }
    }
  }

  private async step(): Promise<void> {
    const i = this.iteration;
    for (const r of this.ranks) await this.poll(r, i).catch(() => undefined);
    const local = this.ranks.map((r) => {
      let k = r.floor;
      for (const [v, e] of r.commits) if (v > k && e <= i && r.held.has(v)) k = v;
      return k;
    });
    const k = Math.min(...local);
    this.records.push({ iteration: i, ran: this.ranks.map((r) => (r.held.has(k) ? `${k}@${r.held.get(k)}` : 'missing')) });
    for (const r of this.ranks) r.floor = k;
    const at = Date.now();
    for (const r of this.ranks) {
      const links = [];
      for (const [peer, link] of [[r.pp + 1, r.pp], [r.pp - 1, r.pp - 1]]) {
        if (peer < 0 || peer >= this.stages) continue;
        const ms = 1 + (this.extraMs.get(link) ?? 0);
        links.push({ peer, kind: 'pipeline', bytes: 1 << 24, medianMs: ms, maxMs: ms * 1.2, delegated: false, error: null });
      }
      const report = { type: 'report', protocol: 1, jobId: this.jobId, rank: r.rank, iteration: i, scheduleVersion: k, epoch: r.epoch, iterationMs: this.periodMs, computeMs: { f: 10, b: 10, w: 10 }, links };
      try {
        const id = (await this.redis.xadd(this.keys.reports, 'MAXLEN', '~', 100000, '*', 'm', JSON.stringify(report))) as string;
        this.written.push({ id, at });
      } catch {
        // Redis unreachable: the iteration ran anyway; its report is skipped (§4)
      }
    }
    this.iteration++;
  }

  /** Iterations whose ranks ran different versions or contents, or a version a rank did not hold. */
  mixedIterations(): number {
    return this.records.filter((r) => r.ran.includes('missing') || new Set(r.ran).size > 1).length;
  }

  /** Version numbers that named two different schedules. */
  reusedVersions(): number {
    return [...this.contents.values()].filter((s) => s.size > 1).length;
  }
}
