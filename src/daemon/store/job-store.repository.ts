import { ControlEvent, PublishedSchedule, Registration } from '../../protocol/protocol-v1.type';

export interface StreamEntry {
  id: string;
  /** The JSON text of field `m`, or null when the entry has no such field. */
  message: string | null;
}

export interface StreamBatch {
  stream: string;
  entries: StreamEntry[];
}

/** A stream whose read failed (NOGROUP: deleted or lost; WRONGTYPE: another key type), with Redis's message. */
export interface StreamFailure {
  stream: string;
  error: string;
}

export interface StreamRead {
  batches: StreamBatch[];
  failed: StreamFailure[];
}

export interface StoredSpec {
  registration: Registration;
  registrationId: string;
}

export type FencedResult = 'ok' | 'fenced' | 'busy' | 'stale';

/** A job's lease: its holder and the replica offering it to another (JobStore.leaseOf). */
export interface LeaseState {
  owner: string | null;
  offeredBy: string | null;
}

/** What retakeEpoch did: the new epoch it took, 'held' (the job's epoch is still the caller's), or 'lost' (the lease is not the caller's). */
export type RetakeResult = number | 'held' | 'lost';

/**
 * Everything the daemon stores in or reads from Redis, behind one interface so services
 * state intent ("prepare this schedule under epoch e") rather than commands.
 */
export interface JobStore {
  ping(): Promise<boolean>;

  /** Creates the consumer group (and the stream) unless it exists; true when it was created. */
  ensureGroup(stream: string, group: string): Promise<boolean>;
  /**
   * New entries for this consumer (XREADGROUP ... >), read per stream so one broken stream fails
   * alone (reported in `failed`); when nothing is new, blocks up to blockMs on the readable ones.
   */
  readNew(streams: readonly string[], group: string, consumer: string, count: number, blockMs: number): Promise<StreamRead>;
  /** Entries another (crashed) consumer left pending longer than minIdleMs (XAUTOCLAIM). */
  claimIdle(stream: string, group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]>;
  ack(stream: string, group: string, ids: readonly string[]): Promise<void>;
  /** The newest entries (oldest first, at most maxEntries) the group has delivered and that were acknowledged before the first pending one: a job's recent history. */
  delivered(stream: string, group: string, maxEntries: number): Promise<StreamEntry[]>;
  pendingCount(stream: string, group: string): Promise<number>;
  /** Entries not yet delivered to the group (0 when unknown). */
  groupLag(stream: string, group: string): Promise<number>;
  /** Keeps a bad message for inspection with the reason it was refused: at most maxCopyBytes of it, with its original size. */
  reject(stream: string, raw: string | null, reason: string, maxLen: number, maxCopyBytes: number): Promise<void>;
  trim(stream: string, maxLen: number): Promise<void>;
  append(stream: string, message: string, maxLen: number): Promise<string>;

  /** Stores an accepted registration, tagged with the id of its registrations-stream entry; clears TTLs left on the job's keys by an earlier expiry. */
  saveSpec(registration: Registration, registrationId: string): Promise<void>;
  /** Clears TTLs on a live job's keys (they get one only when the job is forgotten). */
  keepJobKeys(jobId: string): Promise<void>;
  /** Writes back a committed schedule Redis lost (only when the key is absent); true when written. */
  restoreSchedule(jobId: string, schedule: PublishedSchedule): Promise<boolean>;
  ownerOf(jobId: string): Promise<string | null>;
  /**
   * One SCAN step over reports streams: gives those of job ids not in `known` (written by ranks of
   * a job never registered, or by a stray client) a TTL, so they cannot grow Redis for ever.
   */
  expireOrphanStreams(cursor: string, known: ReadonlySet<string>, ttlMs: number, count: number): Promise<{ cursor: string; expired: number }>;
  /** The job's epoch counter in Redis (0 when absent). */
  readEpoch(jobId: string): Promise<number>;
  loadSpec(jobId: string): Promise<StoredSpec | null>;
  listJobs(): Promise<string[]>;
  forgetJob(jobId: string, keepMs: number): Promise<void>;

  /** Takes the lease when free or already held by `owner` (a restarted daemon with the same owner id). */
  acquireLease(jobId: string, owner: string, ttlMs: number): Promise<boolean>;
  renewLease(jobId: string, owner: string, ttlMs: number): Promise<boolean>;
  releaseLease(jobId: string, owner: string): Promise<void>;
  /**
   * The lease holder offers the job to a replica under its fair share, for `ttlMs`: it goes on
   * leading until one takes it (takeOffered). False when the lease is not `owner`'s.
   */
  offerLease(jobId: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Withdraws `owner`'s offer of the job (another replica's is left alone). */
  withdrawOffer(jobId: string, owner: string): Promise<void>;
  /** Who holds the job's lease and who offers it (null: free, not offered), in one round trip. */
  leaseOf(jobId: string): Promise<LeaseState>;
  /**
   * Moves an offered lease from `from` to `to` in one step, never through a free lease: only while
   * `from` holds and offers it and no switch is prepared. True when taken.
   */
  takeOffered(jobId: string, from: string, to: string, ttlMs: number): Promise<boolean>;
  /**
   * Marks replica `replica` live for `ttlMs` (0: it leaves now) on the store's clock and returns how
   * many replicas are live, itself included: each replica's fair share of the jobs (JobRegistry).
   */
  replicaHeartbeat(replica: string, ttlMs: number): Promise<number>;
  /** A new fencing epoch for a replica that just took the job, above `floor` (epochs known outside Redis). */
  bumpEpoch(jobId: string, floor?: number): Promise<number>;
  /**
   * For an owner whose schedule writes were fenced under `epoch` while it believes it leads the job:
   * in one atomic step, when `owner` holds the lease, renews it and, unless the job's epoch is still
   * `epoch` ('held'), takes a new epoch above the job's (whatever was written there) and above `floor`.
   * 'lost', changing nothing, when another replica (or none) holds the lease.
   */
  retakeEpoch(jobId: string, owner: string, ttlMs: number, epoch: number, floor?: number): Promise<RetakeResult>;

  /** The text of the job's overrides key, null when absent; throws WRONGTYPE when it is not a string. */
  readOverrides(jobId: string): Promise<string | null>;
  /**
   * Compare-and-set of the job's overrides key: writes `next` (null: deletes the key) only when
   * the key still holds `expected` (null: absent; undefined: whatever it holds, of any type);
   * false, changing nothing, otherwise.
   */
  replaceOverrides(jobId: string, expected: string | null | undefined, next: string | null): Promise<boolean>;

  readSchedules(jobId: string): Promise<{ committed: PublishedSchedule | null; pending: PublishedSchedule | null }>;
  /** Allocates the next version above `floor`, only while `epoch` is still the job's epoch. */
  nextVersion(jobId: string, epoch: number, floor?: number): Promise<number | 'fenced'>;
  /** Stores a prepared schedule and announces it; 'busy' if another prepare is open. */
  prepare(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, controlMaxLen: number): Promise<FencedResult>;
  /** Makes the prepared `version` the committed schedule and announces it; 'stale' if that version is no longer pending. */
  commit(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, controlMaxLen: number): Promise<FencedResult>;
  /** Drops the prepared `version` (if still pending) and announces the abort. */
  abort(jobId: string, epoch: number, event: ControlEvent, controlMaxLen: number): Promise<FencedResult>;
  /** Commits without a handshake (the first schedule of a job: no rank runs yet). */
  commitDirect(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, controlMaxLen: number): Promise<FencedResult>;
}

export const JOB_STORE = Symbol('JOB_STORE');
