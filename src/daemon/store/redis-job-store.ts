import Redis, { Cluster } from 'ioredis';
import { Clock } from '../../core/clock/clock.type';
import { ControlEvent, PublishedSchedule, Registration } from '../../protocol/protocol-v1.type';
import { JOBS_INDEX, jobKeys, MESSAGE_FIELD, REPLICAS_INDEX } from '../../protocol/redis-keys';
import { ABORT, ACQUIRE_LEASE, BUMP_EPOCH, COMMIT, COMMIT_DIRECT, LEASE_STATE, NEXT_VERSION, OFFER_LEASE, PREPARE, RELEASE_LEASE, RENEW_LEASE, REPLACE_OVERRIDES, REPLICA_HEARTBEAT, RETAKE_EPOCH, TAKE_OFFERED, WITHDRAW_OFFER } from './fenced-scripts';
import { SystemClock } from '../clock/system-clock';
import { boundedReason, rejectedCopy } from './rejected-copy.util';
import { FencedResult, JobStore, LeaseState, RetakeResult, StoredSpec, StreamBatch, StreamEntry, StreamFailure, StreamRead } from './job-store.repository';

type RawEntry = [string, string[]];

function toBatches(reply: unknown): StreamBatch[] {
  if (!reply) return [];
  return (reply as Array<[string, RawEntry[]]>).map(([stream, entries]) => ({ stream, entries: entries.map(([id, fields]) => ({ id, message: messageOf(fields) })) }));
}

function messageOf(fields: string[] | null): string | null {
  if (!fields) return null;
  for (let k = 0; k + 1 < fields.length; k += 2) if (fields[k] === MESSAGE_FIELD) return fields[k + 1];
  return null;
}

/**
 * XGROUP CREATE and XINFO GROUPS as one-key scripts, for a cluster only: ioredis knows no key
 * position for XGROUP or XINFO (their first argument is a subcommand), so it sends them to a random
 * master, which answers MOVED two times in three, and every MOVED makes the client fetch the whole
 * slot map again (a new connection, CLUSTER SLOTS, 16,384 slots rewritten): 17% of a replica's
 * event-loop CPU in a profile of bench:scale-out (docs/benchmarks.md). A script names its key.
 */
const CREATE_GROUP = `return redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')`;
const GROUPS_INFO = `return redis.call('XINFO', 'GROUPS', KEYS[1])`;

interface ScriptedRedis extends Redis {
  pmCreateGroup(stream: string, group: string): Promise<string>;
  pmGroupsInfo(stream: string): Promise<unknown>;
  pmNextVersion(epochKey: string, versionKey: string, epoch: number, floor: number): Promise<number>;
  pmBumpEpoch(epochKey: string, floor: number): Promise<number>;
  pmRetakeEpoch(ownerKey: string, epochKey: string, owner: string, ttlMs: number, epoch: number, floor: number): Promise<number>;
  pmAcquireLease(ownerKey: string, owner: string, ttlMs: number): Promise<number>;
  pmPrepare(epochKey: string, pendingKey: string, controlKey: string, epoch: number, schedule: string, event: string, maxLen: number): Promise<string>;
  pmCommit(epochKey: string, pendingKey: string, scheduleKey: string, controlKey: string, epoch: number, version: number, schedule: string, event: string, maxLen: number): Promise<string>;
  pmAbort(epochKey: string, pendingKey: string, controlKey: string, epoch: number, version: number, event: string, maxLen: number): Promise<string>;
  pmCommitDirect(epochKey: string, scheduleKey: string, controlKey: string, epoch: number, schedule: string, event: string, maxLen: number): Promise<string>;
  pmRenewLease(ownerKey: string, owner: string, ttlMs: number): Promise<number>;
  pmReleaseLease(ownerKey: string, owner: string): Promise<number>;
  pmOfferLease(ownerKey: string, offerKey: string, owner: string, ttlMs: number): Promise<number>;
  pmWithdrawOffer(offerKey: string, owner: string): Promise<number>;
  pmLeaseState(ownerKey: string, offerKey: string): Promise<[string | null, string | null]>;
  pmTakeOffered(ownerKey: string, offerKey: string, pendingKey: string, from: string, to: string, ttlMs: number): Promise<number>;
  pmReplicaHeartbeat(replicasKey: string, replica: string, ttlMs: number): Promise<number>;
  pmReplaceOverrides(overridesKey: string, mode: string, expected: string, remove: string, next: string): Promise<number>;
}

/**
 * JobStore on Redis. `commands` runs everything but blocking reads, which get their own
 * connection (`blocking`) so a BLOCKed XREADGROUP never delays a publish.
 */
export class RedisJobStore implements JobStore {
  private readonly redis: ScriptedRedis;
  /** A Redis Cluster client (typed as Redis by the module): no command may name keys of two slots. */
  private readonly cluster: Cluster | null;

  constructor(commands: Redis, private readonly blocking: Redis, private readonly clock: Clock = new SystemClock()) {
    this.redis = commands as ScriptedRedis;
    this.cluster = (commands as unknown as Cluster).isCluster ? (commands as unknown as Cluster) : null;
    const define = (name: string, numberOfKeys: number, lua: string) => {
      if (!(name in this.redis)) this.redis.defineCommand(name, { numberOfKeys, lua });
    };
    define('pmNextVersion', 2, NEXT_VERSION);
    define('pmBumpEpoch', 1, BUMP_EPOCH);
    define('pmRetakeEpoch', 2, RETAKE_EPOCH);
    define('pmAcquireLease', 1, ACQUIRE_LEASE);
    define('pmPrepare', 3, PREPARE);
    define('pmCommit', 4, COMMIT);
    define('pmAbort', 3, ABORT);
    define('pmCommitDirect', 3, COMMIT_DIRECT);
    define('pmRenewLease', 1, RENEW_LEASE);
    define('pmReleaseLease', 1, RELEASE_LEASE);
    define('pmOfferLease', 2, OFFER_LEASE);
    define('pmWithdrawOffer', 1, WITHDRAW_OFFER);
    define('pmLeaseState', 2, LEASE_STATE);
    define('pmTakeOffered', 3, TAKE_OFFERED);
    define('pmReplicaHeartbeat', 1, REPLICA_HEARTBEAT);
    define('pmReplaceOverrides', 1, REPLACE_OVERRIDES);
    define('pmCreateGroup', 1, CREATE_GROUP);
    define('pmGroupsInfo', 1, GROUPS_INFO);
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async ensureGroup(stream: string, group: string): Promise<boolean> {
    try {
      // From 0: entries written before the daemon knew the stream are processed too.
      if (this.cluster) await this.redis.pmCreateGroup(stream, group);
      else await this.redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
      return true;
    } catch (error) {
      if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
      return false;
    }
  }

  async readNew(streams: readonly string[], group: string, consumer: string, count: number, blockMs: number): Promise<StreamRead> {
    if (streams.length === 0) return { batches: [], failed: [] };
    // One read per stream, each naming one job's keys only (one hash slot, as Redis Cluster needs):
    // a stream that fails (deleted, wrong type) fails alone. Pipelined on one server; on a cluster
    // sent concurrently, since a cluster pipeline must stay on one node.
    const replies: Array<[Error | null, unknown]> = this.cluster
      ? (await Promise.allSettled(streams.map((stream) => this.blocking.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', stream, '>')))).map((r) => (r.status === 'fulfilled' ? [null, r.value] : [r.reason as Error, null]))
      : await (() => {
          const pipeline = this.blocking.pipeline();
          for (const stream of streams) pipeline.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', stream, '>');
          return pipeline.exec().then((r) => (r ?? []) as Array<[Error | null, unknown]>);
        })();
    const batches: StreamBatch[] = [];
    const failed: StreamFailure[] = [];
    replies.forEach(([error, reply], k) => {
      if (error) failed.push({ stream: streams[k], error: error.message });
      else for (const batch of toBatches(reply)) batches.push(batch);
    });
    if (batches.length > 0 || blockMs === 0) return { batches, failed };
    // Nothing new: wait for the next entry on any stream that could be read.
    const healthy = streams.filter((s) => !failed.some((f) => f.stream === s));
    if (healthy.length === 0) return { batches, failed };
    if (this.cluster) {
      // A BLOCKed read cannot span slots: poll instead, at most every 50 ms (the latency a block saves).
      await new Promise((resolve) => setTimeout(resolve, Math.min(blockMs, 50)));
      return { batches, failed };
    }
    try {
      const reply = await this.blocking.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', ...healthy, ...healthy.map(() => '>'));
      return { batches: toBatches(reply), failed };
    } catch (error) {
      // A stream broke meanwhile: the next pass's per-stream reads name it.
      if (/NOGROUP|WRONGTYPE/.test(String((error as Error).message))) return { batches, failed };
      throw error;
    }
  }

  async claimIdle(stream: string, group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    const reply = (await this.redis.xautoclaim(stream, group, consumer, minIdleMs, '0-0', 'COUNT', count)) as [string, Array<RawEntry | null>, string[]?];
    return (reply[1] ?? []).filter((e): e is RawEntry => e !== null).map(([id, fields]) => ({ id, message: messageOf(fields) }));
  }

  async ack(stream: string, group: string, ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.redis.xack(stream, group, ...ids);
  }

  async delivered(stream: string, group: string, maxEntries: number): Promise<StreamEntry[]> {
    const groups = (await this.groupsInfo(stream)) as Array<Array<string | number>>;
    const info = groups.find((g) => g[g.indexOf('name') + 1] === group);
    const last = info ? String(info[info.indexOf('last-delivered-id') + 1]) : '0-0';
    if (last === '0-0') return [];
    // Entries still pending (a crashed consumer's) are not history: they are claimed and processed.
    const [pending, firstPending] = (await this.redis.xpending(stream, group)) as [number, string | null];
    const end = Number(pending) > 0 && firstPending ? `(${firstPending}` : last;
    const entries = (await this.redis.xrevrange(stream, end, '-', 'COUNT', maxEntries)) as RawEntry[];
    return entries.reverse().map(([id, fields]) => ({ id, message: messageOf(fields) }));
  }

  private groupsInfo(stream: string): Promise<unknown> {
    return this.cluster ? this.redis.pmGroupsInfo(stream) : this.redis.xinfo('GROUPS', stream);
  }

  async groupLag(stream: string, group: string): Promise<number> {
    try {
      const groups = (await this.groupsInfo(stream)) as Array<Array<string | number | null>>;
      const info = groups.find((g) => g[g.indexOf('name') + 1] === group);
      return info ? Number(info[info.indexOf('lag') + 1] ?? 0) : 0;
    } catch {
      return 0;
    }
  }

  async pendingCount(stream: string, group: string): Promise<number> {
    try {
      const reply = (await this.redis.xpending(stream, group)) as [number, ...unknown[]];
      return Number(reply[0]) || 0;
    } catch {
      return 0; // no such stream or group yet
    }
  }

  async reject(stream: string, raw: string | null, reason: string, maxLen: number, maxCopyBytes: number): Promise<void> {
    const copy = rejectedCopy(raw, maxCopyBytes);
    const size = copy.truncated ? ['bytes', String(copy.bytes), 'truncated', '1'] : ['bytes', String(copy.bytes)];
    await this.redis.xadd(stream, 'MAXLEN', '~', maxLen, '*', MESSAGE_FIELD, copy.text, 'reason', boundedReason(reason), 'at', String(this.clock.now()), ...size);
  }

  async trim(stream: string, maxLen: number): Promise<void> {
    await this.redis.xtrim(stream, 'MAXLEN', '~', maxLen);
  }

  async append(stream: string, message: string, maxLen: number): Promise<string> {
    return (await this.redis.xadd(stream, 'MAXLEN', '~', maxLen, '*', MESSAGE_FIELD, message)) as string;
  }

  async saveSpec(registration: Registration, registrationId: string): Promise<void> {
    const stored: StoredSpec = { registration, registrationId };
    const keys = jobKeys(registration.jobId);
    // A job registering again after it expired must not keep the day-long TTLs its keys got then.
    // One transaction per hash slot (Redis Cluster): the job's keys, then the index, so a job in the
    // index always has its spec.
    const tx = this.redis.multi().set(keys.spec, JSON.stringify(stored));
    for (const key of Object.values(keys)) if (key !== keys.owner && key !== keys.offer && key !== keys.spec) tx.persist(key);
    await tx.exec();
    await this.redis.sadd(JOBS_INDEX, registration.jobId);
  }

  async keepJobKeys(jobId: string): Promise<void> {
    const keys = jobKeys(jobId);
    const tx = this.redis.multi();
    for (const key of Object.values(keys)) if (key !== keys.owner && key !== keys.offer) tx.persist(key);
    await tx.exec();
  }

  async restoreSchedule(jobId: string, schedule: PublishedSchedule): Promise<boolean> {
    return (await this.redis.set(jobKeys(jobId).schedule, JSON.stringify(schedule), 'NX')) === 'OK';
  }

  async expireOrphanStreams(cursor: string, known: ReadonlySet<string>, ttlMs: number, count: number): Promise<{ cursor: string; expired: number }> {
    // SCAN walks one server; on a cluster the cursor is `<master index>:<that master's cursor>`.
    const masters: Redis[] = this.cluster ? this.cluster.nodes('master') : [this.redis];
    const colon = cursor.indexOf(':');
    const node = colon < 0 ? 0 : Math.min(Number(cursor.slice(0, colon)) || 0, masters.length - 1);
    const [scanned, keys] = (await masters[node].scan(colon < 0 ? cursor : cursor.slice(colon + 1), 'MATCH', 'pipemorph:{*}:reports', 'COUNT', count)) as [string, string[]];
    const next = !this.cluster ? scanned : scanned !== '0' ? `${node}:${scanned}` : node + 1 < masters.length ? `${node + 1}:0` : '0';
    let expired = 0;
    for (const key of keys) {
      const jobId = key.slice('pipemorph:{'.length, key.length - '}:reports'.length);
      if (known.has(jobId)) continue;
      // Only keys without a TTL: a forgotten job's keys already expire; NX keeps an earlier, shorter TTL.
      if ((await this.redis.pttl(key)) === -1 && (await this.redis.pexpire(key, ttlMs)) === 1) expired++;
    }
    return { cursor: next, expired };
  }

  async readEpoch(jobId: string): Promise<number> {
    return Number((await this.redis.get(jobKeys(jobId).epoch)) ?? 0);
  }

  async ownerOf(jobId: string): Promise<string | null> {
    return this.redis.get(jobKeys(jobId).owner);
  }

  async loadSpec(jobId: string): Promise<StoredSpec | null> {
    const raw = await this.redis.get(jobKeys(jobId).spec);
    return raw ? (JSON.parse(raw) as StoredSpec) : null;
  }

  async listJobs(): Promise<string[]> {
    return this.redis.smembers(JOBS_INDEX);
  }

  async forgetJob(jobId: string, keepMs: number): Promise<void> {
    const keys = jobKeys(jobId);
    // Out of the index first, then the job's keys in one single-slot transaction (Redis Cluster).
    await this.redis.srem(JOBS_INDEX, jobId);
    const tx = this.redis.multi();
    for (const key of Object.values(keys)) tx.pexpire(key, keepMs);
    await tx.exec();
  }

  async acquireLease(jobId: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.pmAcquireLease(jobKeys(jobId).owner, owner, ttlMs)) === 1;
  }

  async renewLease(jobId: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.pmRenewLease(jobKeys(jobId).owner, owner, ttlMs)) === 1;
  }

  async releaseLease(jobId: string, owner: string): Promise<void> {
    await this.redis.pmReleaseLease(jobKeys(jobId).owner, owner);
  }

  async offerLease(jobId: string, owner: string, ttlMs: number): Promise<boolean> {
    const keys = jobKeys(jobId);
    return (await this.redis.pmOfferLease(keys.owner, keys.offer, owner, ttlMs)) === 1;
  }

  async withdrawOffer(jobId: string, owner: string): Promise<void> {
    await this.redis.pmWithdrawOffer(jobKeys(jobId).offer, owner);
  }

  async leaseOf(jobId: string): Promise<LeaseState> {
    const keys = jobKeys(jobId);
    const [owner, offeredBy] = await this.redis.pmLeaseState(keys.owner, keys.offer);
    return { owner: owner ?? null, offeredBy: offeredBy ?? null };
  }

  async takeOffered(jobId: string, from: string, to: string, ttlMs: number): Promise<boolean> {
    const keys = jobKeys(jobId);
    return (await this.redis.pmTakeOffered(keys.owner, keys.offer, keys.pending, from, to, ttlMs)) === 1;
  }

  async replicaHeartbeat(replica: string, ttlMs: number): Promise<number> {
    return this.redis.pmReplicaHeartbeat(REPLICAS_INDEX, replica, ttlMs);
  }

  async bumpEpoch(jobId: string, floor = 0): Promise<number> {
    return this.redis.pmBumpEpoch(jobKeys(jobId).epoch, floor);
  }

  async retakeEpoch(jobId: string, owner: string, ttlMs: number, epoch: number, floor = 0): Promise<RetakeResult> {
    const keys = jobKeys(jobId);
    const taken = await this.redis.pmRetakeEpoch(keys.owner, keys.epoch, owner, ttlMs, epoch, floor);
    return taken < 0 ? 'lost' : taken === 0 ? 'held' : taken;
  }

  async readOverrides(jobId: string): Promise<string | null> {
    return this.redis.get(jobKeys(jobId).overrides);
  }

  async replaceOverrides(jobId: string, expected: string | null | undefined, next: string | null): Promise<boolean> {
    const mode = expected === undefined ? 'any' : expected === null ? 'absent' : 'text';
    const done = await this.redis.pmReplaceOverrides(jobKeys(jobId).overrides, mode, expected ?? '', next === null ? '1' : '0', next ?? '');
    return done === 1;
  }

  async readSchedules(jobId: string): Promise<{ committed: PublishedSchedule | null; pending: PublishedSchedule | null }> {
    const keys = jobKeys(jobId);
    const [committed, pending] = await this.redis.mget(keys.schedule, keys.pending);
    return { committed: committed ? JSON.parse(committed) : null, pending: pending ? JSON.parse(pending) : null };
  }

  async nextVersion(jobId: string, epoch: number, floor = 0): Promise<number | 'fenced'> {
    const keys = jobKeys(jobId);
    const version = await this.redis.pmNextVersion(keys.epoch, keys.version, epoch, floor);
    return version < 0 ? 'fenced' : version;
  }

  async prepare(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, controlMaxLen: number): Promise<FencedResult> {
    const keys = jobKeys(jobId);
    return (await this.redis.pmPrepare(keys.epoch, keys.pending, keys.control, epoch, JSON.stringify(schedule), JSON.stringify(event), controlMaxLen)) as FencedResult;
  }

  async commit(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, controlMaxLen: number): Promise<FencedResult> {
    const keys = jobKeys(jobId);
    return (await this.redis.pmCommit(keys.epoch, keys.pending, keys.schedule, keys.control, epoch, schedule.version, JSON.stringify(schedule), JSON.stringify(event), controlMaxLen)) as FencedResult;
  }

  async abort(jobId: string, epoch: number, event: ControlEvent, controlMaxLen: number): Promise<FencedResult> {
    const keys = jobKeys(jobId);
    return (await this.redis.pmAbort(keys.epoch, keys.pending, keys.control, epoch, event.version, JSON.stringify(event), controlMaxLen)) as FencedResult;
  }

  async commitDirect(jobId: string, epoch: number, schedule: PublishedSchedule, event: ControlEvent, controlMaxLen: number): Promise<FencedResult> {
    const keys = jobKeys(jobId);
    return (await this.redis.pmCommitDirect(keys.epoch, keys.schedule, keys.control, epoch, JSON.stringify(schedule), JSON.stringify(event), controlMaxLen)) as FencedResult;
  }
}
