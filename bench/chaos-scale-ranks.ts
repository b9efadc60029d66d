/**
 * The ranks of one emulated job for bench:chaos-scale: `stages` x `dp` ranks, each with its own view
 * of the protocol (docs/protocol.md sections 4-5) as test/chaos/chaos-ranks.ts keeps it: its own
 * control cursor, highest epoch, the schedules it holds and the commits it knows. Unlike the chaos
 * suite's ranks (4 of them), a job here has 100, so what is recorded is compact (counts and the
 * times of bad events, not every rank's version at every iteration) and the ranks of a job share
 * one read of a pending schedule per step (as one host agent would), each acknowledging it itself.
 * Redis errors never stop an iteration (the data plane does not wait for Redis): a refused report
 * is counted as refused, never as lost.
 */
import Redis, { Cluster } from 'ioredis';
import { ControlEvent, PublishedSchedule } from '../src/protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';
import { connectViews, RankState } from '../test/chaos/chaos-ranks';

interface RankView extends RankState {
  dp: number;
}

/** Milliseconds of a stream id (Redis's clock). */
export const idMs = (id: string): number => Number(id.split('-')[0]);

export class JobRanks {
  readonly keys;
  readonly ranks: RankView[];
  iteration = 0;
  /** Wall-clock time (ms, Date.now) the next iteration is due. */
  nextAt: number;
  /** pipeline link of dp replica 0 -> extra ms */
  readonly slow = new Map<number, number>();
  /** Times (Date.now) of iterations whose ranks ran different versions or one a rank did not hold. */
  readonly mixedAt: number[] = [];
  /** Control entries read with an epoch below an earlier entry's: id and time read. */
  readonly staleWrites = new Map<string, number>();
  /** version -> the pipeline links ("dp:link") its schedule names as the stragglers it answers */
  readonly answers = new Map<number, Set<string>>();
  /** version -> distinct createdAt seen (two: a version reused for another schedule) */
  readonly contents = new Map<number, Set<number>>();
  /** Stream id of each iteration's last report (for the control loop on Redis's clock). */
  readonly lastIds: string[] = [];
  /** Prepares read: stream id, version, time read. */
  readonly prepares: Array<{ id: string; version: number; at: number }> = [];
  /** Changes of the version every rank runs: iteration, time, version. */
  readonly agreedChanges: Array<{ iteration: number; at: number; version: number }> = [];
  /** Report ids Redis accepted, with the time written (only while `keepIds`). */
  readonly keptIds: Array<{ id: string; at: number }> = [];
  keepIds = false;
  written = 0;
  refused = 0;
  busy = false;

  constructor(
    readonly redis: Cluster | Redis,
    readonly jobId: string,
    readonly stages: number,
    readonly dp: number,
    readonly periodMs: number,
    firstAt: number,
  ) {
    this.keys = jobKeys(jobId);
    this.nextAt = firstAt;
    this.ranks = Array.from({ length: stages * dp }, (_, rank) => ({ rank, pp: rank % stages, dp: Math.floor(rank / stages), cursor: '0-0', epoch: 0, streamEpoch: 0, held: new Map(), commits: new Map(), floor: 0 }));
  }

  get agreed(): number {
    return this.ranks[0].floor;
  }

  registration(): string {
    const { stages, dp, jobId } = this;
    return JSON.stringify({
      type: 'register', protocol: 1, jobId, stages, microbatches: 8, dp, tp: 1,
      ranks: this.ranks.map((r) => ({ rank: r.rank, dp: r.dp, pp: r.pp, tp: 0, node: `${jobId}-n${r.rank}` })),
      memory: { deviceBytes: new Array(stages).fill(2 * stages * 1e9), activationBytes: new Array(stages).fill(1e9), hostBytes: 64e9 },
      computeMs: { fMs: new Array(stages).fill(10), bMs: new Array(stages).fill(10), wMs: new Array(stages).fill(10) },
      network: { nominalGBps: 25, latencyMs: 1 },
    });
  }

  async register(): Promise<void> {
    await this.redis.xadd(REGISTRATIONS_STREAM, '*', 'm', this.registration());
  }

  /** Connect (section 4): cursor at the last control entry, the committed schedule in force at once. */
  connect(): Promise<boolean> {
    return connectViews(this.redis, this.keys, this.ranks, (r, s) => this.hold(r, s));
  }

  private hold(r: RankView, s: PublishedSchedule): void {
    r.held.set(s.version, s.createdAt);
    if (!this.answers.has(s.version)) this.answers.set(s.version, new Set(s.reason.links.filter((l) => l.kind === 'pipeline').map((l) => `${l.dp ?? 0}:${l.link ?? 0}`)));
    let set = this.contents.get(s.version);
    if (!set) this.contents.set(s.version, (set = new Set()));
    set.add(s.createdAt);
  }

  /** One iteration: every rank reads its control cursor (acknowledging prepares), the ranks agree on k = MIN of their k_local, and every rank reports. */
  async step(now: number): Promise<void> {
    const i = this.iteration;
    const reads = await Promise.all(this.ranks.map((r) => this.redis.xread('COUNT', 1000, 'STREAMS', this.keys.control, r.cursor).catch(() => null))) as Array<Array<[string, Array<[string, string[]]>]> | null>;
    const pending = new Map<number, Promise<PublishedSchedule | null>>();
    const committed = new Map<number, Promise<PublishedSchedule | null>>();
    const fetch = (key: string, cache: Map<number, Promise<PublishedSchedule | null>>, version: number) => {
      let p = cache.get(version);
      if (!p) cache.set(version, (p = this.redis.get(key).then((raw) => (raw ? (JSON.parse(raw) as PublishedSchedule) : null), () => null)));
      return p;
    };
    const out = this.redis.pipeline();
    for (const [k, r] of this.ranks.entries()) {
      for (const [, entries] of reads[k] ?? []) {
        for (const [id, fields] of entries) {
          r.cursor = id;
          const e = JSON.parse(fields[1]) as ControlEvent;
          if (e.epoch < r.streamEpoch && !this.staleWrites.has(id)) this.staleWrites.set(id, now);
          r.streamEpoch = Math.max(r.streamEpoch, e.epoch);
          if (e.epoch < r.epoch) continue;
          r.epoch = e.epoch;
          if (e.type === 'prepare') {
            if (k === 0) this.prepares.push({ id, version: e.version, at: now });
            const p = await fetch(this.keys.pending, pending, e.version);
            if (!p || p.version !== e.version || p.epoch < r.epoch) continue;
            this.hold(r, p);
            const accepted = i < e.effectiveIteration;
            out.xadd(this.keys.reports, '*', 'm', JSON.stringify({ type: 'ack', protocol: 1, jobId: this.jobId, rank: r.rank, version: e.version, epoch: e.epoch, iteration: i, accepted, ...(accepted ? {} : { reason: 'late' }) }));
          } else if (e.type === 'commit') {
            r.commits.set(e.version, e.effectiveIteration);
            if (!r.held.has(e.version)) {
              const s = await fetch(this.keys.schedule, committed, e.version);
              if (s && s.version === e.version) this.hold(r, s);
            }
          }
        }
      }
    }
    // A rank that knows a commit whose content it could not read (Redis refused or stalled the GET)
    // reads the committed schedule again at the next iteration start (docs/protocol.md section 5.1, step 4).
    const unheld = this.ranks.filter((r) => [...r.commits.keys()].some((v) => v > r.floor && !r.held.has(v)));
    if (unheld.length > 0) {
      const s = await this.redis.get(this.keys.schedule).then((raw) => (raw ? (JSON.parse(raw) as PublishedSchedule) : null), () => null);
      if (s) for (const r of unheld) if (r.commits.has(s.version) && !r.held.has(s.version)) this.hold(r, s);
    }
    let k = Infinity;
    for (const r of this.ranks) {
      let local = r.floor;
      for (const [v, e] of r.commits) if (v > local && e <= i && r.held.has(v)) local = v;
      k = Math.min(k, local);
    }
    let ran: string | null = null;
    let mixed = false;
    for (const r of this.ranks) {
      const mine = r.held.has(k) ? `${k}@${r.held.get(k)}` : 'missing';
      if (mine === 'missing' || (ran !== null && mine !== ran)) mixed = true;
      ran = mine;
      r.floor = k;
    }
    if (mixed) this.mixedAt.push(now);
    if (this.agreedChanges.length === 0 || this.agreedChanges[this.agreedChanges.length - 1].version !== k) this.agreedChanges.push({ iteration: i, at: now, version: k });
    const first = (out.length as number) ?? 0;
    for (const r of this.ranks) out.xadd(this.keys.reports, 'MAXLEN', '~', 100000, '*', 'm', this.report(r, i, k));
    const replies = (await out.exec().catch(() => null)) ?? [];
    for (let n = first; n < first + this.ranks.length; n++) {
      const [error, id] = replies[n] ?? [new Error('no reply'), null];
      if (error || typeof id !== 'string') {
        this.refused++;
        continue;
      }
      this.written++;
      if (this.keepIds) this.keptIds.push({ id, at: now });
      if (n === first + this.ranks.length - 1) this.lastIds[i] = id;
    }
    this.iteration++;
  }

  private report(r: RankView, i: number, k: number): string {
    const links = [];
    for (const [peerPp, link] of [[r.pp + 1, r.pp], [r.pp - 1, r.pp - 1]]) {
      if (peerPp < 0 || peerPp >= this.stages) continue;
      const ms = 1 + (r.dp === 0 ? this.slow.get(link) ?? 0 : 0);
      links.push({ peer: r.dp * this.stages + peerPp, kind: 'pipeline', bytes: 1 << 24, medianMs: ms, maxMs: ms * 1.2, delegated: false, error: null });
    }
    return JSON.stringify({ type: 'report', protocol: 1, jobId: this.jobId, rank: r.rank, iteration: i, scheduleVersion: k, epoch: this.ranks[r.rank].epoch, iterationMs: this.periodMs, computeMs: { f: 10, b: 10, w: 10 }, links });
  }

  /** Version numbers that named two different schedules. */
  reusedVersions(): number {
    return [...this.contents.values()].filter((s) => s.size > 1).length;
  }
}
