import { Clock } from '../../core/clock/clock.type';
import { ControlEvent, PublishedSchedule, Registration } from '../../protocol/protocol-v1.type';
import { jobKeys } from '../../protocol/redis-keys';
import { boundedReason, rejectedCopy } from './rejected-copy.util';
import { FencedResult, JobStore, LeaseState, RetakeResult, StoredSpec, StreamBatch, StreamEntry, StreamFailure, StreamRead } from './job-store.repository';

interface Group {
  /** Sequence number of the last entry delivered to the group (0: none). */
  lastDelivered: number;
  /** Delivered, not yet acknowledged: id -> consumer and delivery time. */
  pending: Map<string, { consumer: string; at: number }>;
}

interface Stream {
  entries: Array<StreamEntry & { seq: number; fields?: Record<string, string> }>;
  groups: Map<string, Group>;
}

interface JobRecord {
  spec: StoredSpec | null;
  committed: PublishedSchedule | null;
  pending: PublishedSchedule | null;
  version: number;
  epoch: number;
  lease: { owner: string; until: number } | null;
  /** The replica offering the job to another (JobStore.offerLease), until when. */
  offer: { owner: string; until: number } | null;
  /** Events announced on the job's control stream, oldest first. */
  control: ControlEvent[];
  /** Text of the overrides key (null: absent). */
  overrides: string | null;
}

/** A JobStore method made to fail: once (`times` 1) or every call until cleared. */
type Fault = { error: Error; times: number };

/**
 * JobStore in memory with the Redis store's semantics (fencing epochs, busy and stale
 * publishes, leases that expire on the injected clock, consumer groups with pending entries), so
 * services are unit-tested without Redis. Tests make any method fail (`failNext`), make a stream
 * unreadable (`breakStream`, as a key of another type) or take a lease away (`stealLease`).
 */
export class InMemoryJobStore implements JobStore {
  private readonly streams = new Map<string, Stream>();
  private readonly jobs = new Map<string, JobRecord>();
  private readonly broken = new Set<string>();
  private readonly faults = new Map<keyof JobStore, Fault>();
  private seq = 0;
  /** Live replicas: id -> when their heartbeat expires. */
  private readonly replicas = new Map<string, number>();
  private reachable = true;

  constructor(private readonly clock: Clock) {}

  /** Whether ping answers: false plays a Redis that is down. */
  setReachable(reachable: boolean): void {
    this.reachable = reachable;
  }

  /** Makes the next `times` calls of `method` fail with `error` (Infinity: until clearFaults). */
  failNext(method: keyof JobStore, error: Error, times = 1): void {
    this.faults.set(method, { error, times });
  }

  clearFaults(): void {
    this.faults.clear();
  }

  /** Plays a stream key of another type: reads and group creation fail with WRONGTYPE. */
  breakStream(stream: string): void {
    this.broken.add(stream);
  }

  /** Plays a deleted stream (or Redis losing it): its consumer groups are gone too. */
  dropStream(stream: string): void {
    this.streams.delete(stream);
  }

  /** Another replica takes the job: its lease and a new epoch (this replica's writes are fenced from now). */
  stealLease(jobId: string, owner: string, ttlMs: number): number {
    const job = this.job(jobId);
    job.lease = { owner, until: this.clock.now() + ttlMs };
    return ++job.epoch;
  }

  /**
   * Another client INCRs the job's epoch behind its owner's back (an operator's mistake, a stale
   * replica's write): the lease is untouched, the owner's writes are fenced from now. Returns the epoch.
   */
  tamperEpoch(jobId: string): number {
    return ++this.job(jobId).epoch;
  }

  /** Events published on the job's control stream, oldest first. */
  controlEvents(jobId: string): readonly ControlEvent[] {
    return this.jobs.get(jobId)?.control ?? [];
  }

  /** Entries of a stream, oldest first (rejected copies carry their fields). */
  entries(stream: string): ReadonlyArray<StreamEntry & { fields?: Record<string, string> }> {
    return this.streams.get(stream)?.entries ?? [];
  }

  private fault(method: keyof JobStore): void {
    const fault = this.faults.get(method);
    if (!fault) return;
    if (--fault.times <= 0) this.faults.delete(method);
    throw fault.error;
  }

  private job(jobId: string): JobRecord {
    let job = this.jobs.get(jobId);
    if (!job) {
      job = { spec: null, committed: null, pending: null, version: 0, epoch: 0, lease: null, offer: null, control: [], overrides: null };
      this.jobs.set(jobId, job);
    }
    return job;
  }

  private stream(name: string, create: boolean): Stream | undefined {
    if (this.broken.has(name)) throw new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
    let stream = this.streams.get(name);
    if (!stream && create) {
      stream = { entries: [], groups: new Map() };
      this.streams.set(name, stream);
    }
    return stream;
  }

  private add(name: string, message: string | null, fields?: Record<string, string>): string {
    const stream = this.stream(name, true)!;
    const seq = ++this.seq;
    const id = `${this.clock.now()}-${seq}`;
    stream.entries.push({ id, seq, message, ...(fields ? { fields } : {}) });
    return id;
  }

  private group(name: string, group: string): { stream: Stream; g: Group } {
    const stream = this.stream(name, false);
    const g = stream?.groups.get(group);
    if (!stream || !g) throw new Error(`NOGROUP No such key '${name}' or consumer group '${group}'`);
    return { stream, g };
  }

  private announce(jobId: string, event: ControlEvent): void {
    this.job(jobId).control.push(event);
    this.add(jobKeys(jobId).control, JSON.stringify(event));
  }

  private fenced(jobId: string, epoch: number): boolean {
    return this.job(jobId).epoch !== epoch;
  }

  private leaseHolder(jobId: string): string | null {
    const lease = this.jobs.get(jobId)?.lease;
    return lease && lease.until > this.clock.now() ? lease.owner : null;
  }

  async ping(): Promise<boolean> {
    return this.reachable;
  }

  async ensureGroup(stream: string, group: string): Promise<boolean> {
    this.fault('ensureGroup');
    const s = this.stream(stream, true)!;
    if (s.groups.has(group)) return false;
    s.groups.set(group, { lastDelivered: 0, pending: new Map() });
    return true;
  }

  async readNew(streams: readonly string[], group: string, consumer: string, count: number, blockMs: number): Promise<StreamRead> {
    this.fault('readNew');
    const batches: StreamBatch[] = [];
    const failed: StreamFailure[] = [];
    for (const name of streams) {
      try {
        const { stream, g } = this.group(name, group);
        const fresh = stream.entries.filter((e) => e.seq > g.lastDelivered).slice(0, count);
        if (fresh.length === 0) continue;
        g.lastDelivered = fresh[fresh.length - 1].seq;
        for (const e of fresh) g.pending.set(e.id, { consumer, at: this.clock.now() });
        batches.push({ stream: name, entries: fresh.map(({ id, message }) => ({ id, message })) });
      } catch (error) {
        failed.push({ stream: name, error: (error as Error).message });
      }
    }
    // Nothing new: yield to the event loop (a blocking read in Redis), so a reading loop never spins.
    if (batches.length === 0 && blockMs > 0) await new Promise((resolve) => setImmediate(resolve));
    return { batches, failed };
  }

  async claimIdle(stream: string, group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    this.fault('claimIdle');
    const { stream: s, g } = this.group(stream, group);
    const now = this.clock.now();
    const claimed: StreamEntry[] = [];
    for (const e of s.entries) {
      const p = g.pending.get(e.id);
      if (!p || now - p.at < minIdleMs || claimed.length >= count) continue;
      g.pending.set(e.id, { consumer, at: now });
      claimed.push({ id: e.id, message: e.message });
    }
    return claimed;
  }

  async ack(stream: string, group: string, ids: readonly string[]): Promise<void> {
    this.fault('ack');
    const g = this.streams.get(stream)?.groups.get(group);
    for (const id of ids) g?.pending.delete(id);
  }

  async delivered(stream: string, group: string, maxEntries: number): Promise<StreamEntry[]> {
    this.fault('delivered');
    const { stream: s, g } = this.group(stream, group);
    const firstPending = Math.min(...s.entries.filter((e) => g.pending.has(e.id)).map((e) => e.seq));
    const end = Math.min(g.lastDelivered, firstPending - 1);
    return s.entries.filter((e) => e.seq <= end).slice(-maxEntries).map(({ id, message }) => ({ id, message }));
  }

  async pendingCount(stream: string, group: string): Promise<number> {
    return this.streams.get(stream)?.groups.get(group)?.pending.size ?? 0;
  }

  async groupLag(stream: string, group: string): Promise<number> {
    const s = this.streams.get(stream);
    const g = s?.groups.get(group);
    return s && g ? s.entries.filter((e) => e.seq > g.lastDelivered).length : 0;
  }

  async reject(stream: string, raw: string | null, reason: string, _maxLen: number, maxCopyBytes: number): Promise<void> {
    this.fault('reject');
    const copy = rejectedCopy(raw, maxCopyBytes);
    this.add(stream, copy.text, { reason: boundedReason(reason), at: String(this.clock.now()), bytes: String(copy.bytes) });
  }

  async trim(stream: string, maxLen: number): Promise<void> {
    const s = this.streams.get(stream);
    if (s && s.entries.length > maxLen) s.entries.splice(0, s.entries.length - maxLen);
  }

  async append(stream: string, message: string, _maxLen: number): Promise<string> {
    this.fault('append');
    return this.add(stream, message);
  }

  async saveSpec(registration: Registration, registrationId: string): Promise<void> {
    this.fault('saveSpec');
    this.job(registration.jobId).spec = { registration: structuredClone(registration), registrationId };
  }

  async keepJobKeys(): Promise<void> {
    this.fault('keepJobKeys');
  }

  async restoreSchedule(jobId: string, schedule: PublishedSchedule): Promise<boolean> {
    const job = this.job(jobId);
    if (job.committed) return false;
    job.committed = schedule;
    return true;
  }

  async ownerOf(jobId: string): Promise<string | null> {
    return this.leaseHolder(jobId);
  }

  async expireOrphanStreams(): Promise<{ cursor: string; expired: number }> {
    return { cursor: '0', expired: 0 };
  }

  async readEpoch(jobId: string): Promise<number> {
    return this.jobs.get(jobId)?.epoch ?? 0;
  }

  async loadSpec(jobId: string): Promise<StoredSpec | null> {
    this.fault('loadSpec');
    const spec = this.jobs.get(jobId)?.spec;
    return spec ? structuredClone(spec) : null;
  }

  async listJobs(): Promise<string[]> {
    this.fault('listJobs');
    return [...this.jobs.entries()].filter(([, job]) => job.spec !== null).map(([jobId]) => jobId);
  }

  async forgetJob(jobId: string, _keepMs: number): Promise<void> {
    this.jobs.delete(jobId);
  }

  async acquireLease(jobId: string, owner: string, ttlMs: number): Promise<boolean> {
    this.fault('acquireLease');
    const holder = this.leaseHolder(jobId);
    if (holder !== null && holder !== owner) return false;
    this.job(jobId).lease = { owner, until: this.clock.now() + ttlMs };
    return true;
  }

  async renewLease(jobId: string, owner: string, ttlMs: number): Promise<boolean> {
    this.fault('renewLease');
    if (this.leaseHolder(jobId) !== owner) return false;
    this.job(jobId).lease = { owner, until: this.clock.now() + ttlMs };
    return true;
  }

  async releaseLease(jobId: string, owner: string): Promise<void> {
    if (this.leaseHolder(jobId) === owner) this.job(jobId).lease = null;
  }

  async offerLease(jobId: string, owner: string, ttlMs: number): Promise<boolean> {
    this.fault('offerLease');
    if (this.leaseHolder(jobId) !== owner) return false;
    this.job(jobId).offer = { owner, until: this.clock.now() + ttlMs };
    return true;
  }

  async withdrawOffer(jobId: string, owner: string): Promise<void> {
    this.fault('withdrawOffer');
    if (this.offerer(jobId) === owner) this.job(jobId).offer = null;
  }

  async leaseOf(jobId: string): Promise<LeaseState> {
    this.fault('leaseOf');
    return { owner: this.leaseHolder(jobId), offeredBy: this.offerer(jobId) };
  }

  async takeOffered(jobId: string, from: string, to: string, ttlMs: number): Promise<boolean> {
    this.fault('takeOffered');
    const job = this.jobs.get(jobId);
    if (!job || this.leaseHolder(jobId) !== from || this.offerer(jobId) !== from || job.pending !== null) return false;
    job.lease = { owner: to, until: this.clock.now() + ttlMs };
    job.offer = null;
    return true;
  }

  private offerer(jobId: string): string | null {
    const offer = this.jobs.get(jobId)?.offer;
    return offer && offer.until > this.clock.now() ? offer.owner : null;
  }

  async replicaHeartbeat(replica: string, ttlMs: number): Promise<number> {
    this.fault('replicaHeartbeat');
    const now = this.clock.now();
    for (const [id, until] of this.replicas) if (until <= now) this.replicas.delete(id);
    if (ttlMs > 0) this.replicas.set(replica, now + ttlMs);
    else this.replicas.delete(replica);
    return this.replicas.size;
  }

  async bumpEpoch(jobId: string, floor = 0): Promise<number> {
    this.fault('bumpEpoch');
    const job = this.job(jobId);
    job.epoch = Math.max(job.epoch + 1, floor + 1);
    return job.epoch;
  }

  async retakeEpoch(jobId: string, owner: string, ttlMs: number, epoch: number, floor = 0): Promise<RetakeResult> {
    this.fault('retakeEpoch');
    if (this.leaseHolder(jobId) !== owner) return 'lost';
    const job = this.job(jobId);
    job.lease = { owner, until: this.clock.now() + ttlMs };
    if (job.epoch === epoch) return 'held';
    job.epoch = Math.max(job.epoch + 1, floor + 1);
    return job.epoch;
  }

  async readOverrides(jobId: string): Promise<string | null> {
    this.fault('readOverrides');
    return this.jobs.get(jobId)?.overrides ?? null;
  }

  async replaceOverrides(jobId: string, expected: string | null | undefined, next: string | null): Promise<boolean> {
    this.fault('replaceOverrides');
    const job = this.job(jobId);
    if (expected !== undefined && job.overrides !== expected) return false;
    job.overrides = next;
    return true;
  }

  async readSchedules(jobId: string): Promise<{ committed: PublishedSchedule | null; pending: PublishedSchedule | null }> {
    this.fault('readSchedules');
    const job = this.jobs.get(jobId);
    return { committed: job?.committed ?? null, pending: job?.pending ?? null };
  }

  async nextVersion(jobId: string, epoch: number, floor = 0): Promise<number | 'fenced'> {
    this.fault('nextVersion');
    if (this.fenced(jobId, epoch)) return 'fenced';
    const job = this.job(jobId);
    job.version = Math.max(job.version + 1, floor + 1);
    return job.version;
  }

  async prepare(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, _controlMaxLen: number): Promise<FencedResult> {
    this.fault('prepare');
    if (this.fenced(jobId, epoch)) return 'fenced';
    const job = this.job(jobId);
    if (job.pending) return 'busy';
    job.pending = schedule;
    this.announce(jobId, event);
    return 'ok';
  }

  async commit(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, _controlMaxLen: number): Promise<FencedResult> {
    this.fault('commit');
    if (this.fenced(jobId, epoch)) return 'fenced';
    const job = this.job(jobId);
    if (!job.pending || job.pending.version !== schedule.version) return 'stale';
    job.committed = schedule;
    job.pending = null;
    this.announce(jobId, event);
    return 'ok';
  }

  async abort(jobId: string, epoch: number, event: ControlEvent, _controlMaxLen: number): Promise<FencedResult> {
    this.fault('abort');
    if (this.fenced(jobId, epoch)) return 'fenced';
    const job = this.job(jobId);
    if (job.pending?.version === event.version) job.pending = null;
    this.announce(jobId, event);
    return 'ok';
  }

  async commitDirect(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, _controlMaxLen: number): Promise<FencedResult> {
    this.fault('commitDirect');
    if (this.fenced(jobId, epoch)) return 'fenced';
    this.job(jobId).committed = schedule;
    this.announce(jobId, event);
    return 'ok';
  }
}
