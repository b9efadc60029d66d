import Redis from 'ioredis';
import { JobFleetEvidence } from '../../core/fleet/job-fleet-evidence.type';
import { FLEET_INDEX, fleetEvidenceKey } from '../../protocol/redis-keys';

/** Keys per MGET: one round trip reads this many jobs' evidence. */
const READ_CHUNK = 500;

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;

/** A stored entry as the view takes it, or null: anything else in the key (another version, a hand edit) is skipped, not trusted. */
export function parseFleetEvidence(text: string): JobFleetEvidence | null {
  let e: unknown;
  try {
    e = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObject(e) || typeof e.jobId !== 'string' || !isCount(e.at) || !isObject(e.localities) || !Array.isArray(e.links) || !Array.isArray(e.compute)) return null;
  if (!Object.values(e.localities).every((l) => typeof l === 'string')) return null;
  if (!e.links.every((l) => isObject(l) && typeof l.a === 'string' && typeof l.b === 'string' && isCount(l.healthy) && isCount(l.slow) && isCount(l.extraMs))) return null;
  if (!e.compute.every((c) => isObject(c) && typeof c.node === 'string' && isCount(c.healthy) && isCount(c.slow) && isCount(c.ratio))) return null;
  return e as unknown as JobFleetEvidence;
}

/**
 * The fleet's evidence in Redis: each job's under its own key with a TTL (re-written every interval
 * by whichever replica leads the job, so a lost replica's or a flushed Redis's evidence comes back
 * within one interval), indexed by a set that expires too. Only MULTI, SET, SADD, PEXPIRE, SMEMBERS, MGET
 * and SREM: what the daemon's ACL user (deploy/redis/pipemorph.acl) may run; every
 * key in one hash slot (redis-keys.ts), so it works on Redis Cluster.
 */
export class FleetStore {
  constructor(private readonly redis: Redis) {}

  async record(evidence: readonly JobFleetEvidence[], ttlMs: number): Promise<void> {
    if (evidence.length === 0) return;
    const tx = this.redis.multi();
    for (const e of evidence) tx.set(fleetEvidenceKey(e.jobId), JSON.stringify(e), 'PX', ttlMs);
    tx.sadd(FLEET_INDEX, ...evidence.map((e) => e.jobId));
    // Twice the evidence's TTL: the index outlives its entries, and goes when nobody writes.
    tx.pexpire(FLEET_INDEX, 2 * ttlMs);
    await tx.exec();
  }

  /**
   * Every job's live evidence, at most `maxJobs` (by job id). `prune`: expired entries leave the
   * index (the daemon); off for a reader without write access (the operator's Redis user, the CLI).
   */
  async readAll(maxJobs: number, prune = true): Promise<JobFleetEvidence[]> {
    const ids = (await this.redis.smembers(FLEET_INDEX)).sort();
    const out: JobFleetEvidence[] = [];
    const gone: string[] = [];
    for (let i = 0; i < ids.length && out.length < maxJobs; i += READ_CHUNK) {
      const chunk = ids.slice(i, i + READ_CHUNK);
      const values = await this.redis.mget(...chunk.map(fleetEvidenceKey));
      values.forEach((v, k) => {
        const e = v === null ? null : parseFleetEvidence(v);
        if (v === null) gone.push(chunk[k]);
        else if (e !== null && e.jobId === chunk[k] && out.length < maxJobs) out.push(e);
      });
    }
    if (prune && gone.length > 0) await this.redis.srem(FLEET_INDEX, ...gone);
    return out;
  }
}
