/**
 * The in-memory JobStore that the services' unit tests run on must behave like the Redis one:
 * the same fencing, busy/stale answers, leases and consumer-group bookkeeping, checked here
 * against both (the Redis store on a real Redis).
 */
import Redis from 'ioredis';
import { ManualClock } from '../src/core/clock/manual-clock';
import { InMemoryJobStore } from '../src/daemon/store/in-memory-job-store.repository';
import { JobStore } from '../src/daemon/store/job-store.repository';
import { RedisJobStore } from '../src/daemon/store/redis-job-store';
import { ControlEvent, PublishedSchedule } from '../src/protocol/protocol-v1.type';
import { jobKeys } from '../src/protocol/redis-keys';
import { REDIS_URL } from './support/test-daemon';

const run = `${process.pid}-${Date.now().toString(36)}`;
const commands = new Redis(REDIS_URL);
const blocking = new Redis(REDIS_URL);
const used: string[] = [];

afterAll(async () => {
  for (const jobId of used) await commands.del(...Object.values(jobKeys(jobId)));
  await commands.quit();
  await blocking.quit();
});

const stores: Array<[string, () => JobStore]> = [
  ['in memory', () => new InMemoryJobStore(new ManualClock())],
  ['on Redis', () => new RedisJobStore(commands, blocking)],
];

function schedule(jobId: string, version: number, epoch: number): PublishedSchedule {
  return {
    protocol: 1, jobId, version, epoch, state: 'prepared', effectiveIteration: 10, createdAt: 0,
    pipelines: [{ dpReplicas: [0], warmup: [2, 1], stages: [[], []] }], delegation: [],
    reason: { kind: 'straggler', links: [], detail: '' }, prediction: { previousMs: null, newMs: 1 },
  };
}

function event(type: ControlEvent['type'], jobId: string, version: number, epoch: number): ControlEvent {
  return { type, protocol: 1, jobId, version, epoch, effectiveIteration: 10 };
}

describe.each(stores)('JobStore contract (%s)', (name, make) => {
  const jobId = `contract-${name.replace(/ /g, '-')}-${run}`;
  used.push(jobId);
  const store = make();

  it('fences every schedule write of an older epoch, and answers busy and stale like the Lua scripts', async () => {
    const e1 = await store.bumpEpoch(jobId);
    expect(await store.bumpEpoch(jobId, 10)).toBe(11); // above the floor
    expect(await store.nextVersion(jobId, e1)).toBe('fenced');
    const v = (await store.nextVersion(jobId, 11, 4)) as number;
    expect(v).toBe(5);
    expect(await store.commitDirect(jobId, e1, schedule(jobId, v, e1), event('commit', jobId, v, e1), 100)).toBe('fenced');
    expect(await store.prepare(jobId, 11, schedule(jobId, v, 11), event('prepare', jobId, v, 11), 100)).toBe('ok');
    expect(await store.prepare(jobId, 11, schedule(jobId, v + 1, 11), event('prepare', jobId, v + 1, 11), 100)).toBe('busy');
    expect(await store.commit(jobId, 11, schedule(jobId, v + 1, 11), event('commit', jobId, v + 1, 11), 100)).toBe('stale');
    expect(await store.abort(jobId, 11, event('abort', jobId, v, 11), 100)).toBe('ok');
    expect((await store.readSchedules(jobId)).pending).toBeNull();
    expect(await store.commit(jobId, 11, schedule(jobId, v, 11), event('commit', jobId, v, 11), 100)).toBe('stale');
    expect(await store.prepare(jobId, 11, schedule(jobId, v + 1, 11), event('prepare', jobId, v + 1, 11), 100)).toBe('ok');
    expect(await store.commit(jobId, 11, { ...schedule(jobId, v + 1, 11), state: 'committed' }, event('commit', jobId, v + 1, 11), 100)).toBe('ok');
    expect((await store.readSchedules(jobId)).committed!.version).toBe(v + 1);
    expect(await store.readEpoch(jobId)).toBe(11);
  });

  it('takes a new epoch for a fenced owner only while it holds the lease, above the epoch written behind its back', async () => {
    const retaken = `${jobId}-retake`;
    used.push(retaken);
    const e = await store.bumpEpoch(retaken);
    expect(await store.acquireLease(retaken, 'a', 60000)).toBe(true);
    expect(await store.retakeEpoch(retaken, 'a', 60000, e)).toBe('held'); // still a's epoch: nothing taken
    expect(await store.readEpoch(retaken)).toBe(e);
    const tampered = await store.bumpEpoch(retaken); // another client's INCR; the lease stays a's
    expect(await store.nextVersion(retaken, e)).toBe('fenced');
    expect(await store.retakeEpoch(retaken, 'b', 60000, e)).toBe('lost'); // not b's lease: nothing changes
    expect(await store.readEpoch(retaken)).toBe(tampered);
    expect(await store.retakeEpoch(retaken, 'a', 60000, e)).toBe(tampered + 1);
    expect(await store.nextVersion(retaken, tampered + 1)).toBe(1);
    await store.bumpEpoch(retaken);
    expect(await store.retakeEpoch(retaken, 'a', 60000, tampered + 1, 20)).toBe(21); // above the floor
    expect(await store.ownerOf(retaken)).toBe('a');
    await store.releaseLease(retaken, 'a');
    await store.bumpEpoch(retaken);
    expect(await store.retakeEpoch(retaken, 'a', 60000, 21)).toBe('lost'); // no lease: a lets the job go
    expect(await store.readEpoch(retaken)).toBe(22);
  });

  it('gives a lease to one owner at a time', async () => {
    expect(await store.acquireLease(jobId, 'a', 60000)).toBe(true);
    expect(await store.acquireLease(jobId, 'b', 60000)).toBe(false);
    expect(await store.acquireLease(jobId, 'a', 60000)).toBe(true); // a restarted owner takes its own back
    expect(await store.renewLease(jobId, 'b', 60000)).toBe(false);
    expect(await store.ownerOf(jobId)).toBe('a');
    await store.releaseLease(jobId, 'b'); // not b's to release
    expect(await store.ownerOf(jobId)).toBe('a');
    await store.releaseLease(jobId, 'a');
    expect(await store.acquireLease(jobId, 'b', 60000)).toBe(true);
  });

  it('hands an offered lease over in one step: from its holder while it offers it, never while a switch is prepared, never through a free lease', async () => {
    const job = `${jobId}-offer`;
    used.push(job);
    expect(await store.acquireLease(job, 'a', 60000)).toBe(true);
    expect(await store.leaseOf(job)).toEqual({ owner: 'a', offeredBy: null });
    expect(await store.takeOffered(job, 'a', 'b', 60000)).toBe(false); // not offered
    expect(await store.offerLease(job, 'b', 60000)).toBe(false); // not b's to offer
    expect(await store.offerLease(job, 'a', 60000)).toBe(true);
    expect(await store.leaseOf(job)).toEqual({ owner: 'a', offeredBy: 'a' });
    const epoch = await store.bumpEpoch(job);
    expect(await store.prepare(job, epoch, schedule(job, 1, epoch), event('prepare', job, 1, epoch), 100)).toBe('ok');
    expect(await store.takeOffered(job, 'a', 'b', 60000)).toBe(false); // a switch is prepared: after it
    expect(await store.abort(job, epoch, event('abort', job, 1, epoch), 100)).toBe('ok');
    expect(await store.takeOffered(job, 'c', 'b', 60000)).toBe(false); // c neither holds nor offers it
    await store.withdrawOffer(job, 'c'); // not c's offer
    expect((await store.leaseOf(job)).offeredBy).toBe('a');
    expect(await store.takeOffered(job, 'a', 'b', 60000)).toBe(true);
    expect(await store.leaseOf(job)).toEqual({ owner: 'b', offeredBy: null }); // held all along, now by b
    expect(await store.renewLease(job, 'a', 60000)).toBe(false); // a finds it gone at its next renewal
    expect(await store.takeOffered(job, 'a', 'c', 60000)).toBe(false); // taken once
    expect(await store.offerLease(job, 'b', 60000)).toBe(true);
    await store.withdrawOffer(job, 'b');
    expect(await store.takeOffered(job, 'b', 'c', 60000)).toBe(false); // withdrawn
  });

  it('delivers each entry once per group, keeps it pending until acknowledged, and hands idle ones to another consumer', async () => {
    const stream = jobKeys(jobId).reports;
    expect(await store.ensureGroup(stream, 'g')).toBe(true);
    expect(await store.ensureGroup(stream, 'g')).toBe(false);
    for (const m of ['1', '2', '3']) await store.append(stream, m, 1000);
    const first = await store.readNew([stream], 'g', 'c1', 2, 0);
    expect(first.batches[0].entries.map((e) => e.message)).toEqual(['1', '2']);
    expect(await store.groupLag(stream, 'g')).toBe(1);
    await store.ack(stream, 'g', [first.batches[0].entries[0].id]);
    expect(await store.pendingCount(stream, 'g')).toBe(1);
    expect((await store.delivered(stream, 'g', 10)).map((e) => e.message)).toEqual(['1']); // not past the pending one
    const claimed = await store.claimIdle(stream, 'g', 'c2', 0, 10);
    expect(claimed.map((e) => e.message)).toEqual(['2']);
    const rest = await store.readNew([stream, jobKeys(`${jobId}-none`).reports], 'g', 'c2', 10, 0);
    expect(rest.batches.map((b) => b.entries.map((e) => e.message))).toEqual([['3']]);
    expect(rest.failed.map((f) => f.stream)).toEqual([jobKeys(`${jobId}-none`).reports]);
    expect(rest.failed[0].error).toMatch(/NOGROUP/);
  });
});

describe.each(stores)('JobStore contract: per-job overrides (%s)', (name, make) => {
  const jobId = `contract-overrides-${name.replace(/ /g, '-')}-${run}`;
  used.push(jobId);
  const store = make();

  it('writes the overrides key only when it still holds what the writer read (compare-and-set)', async () => {
    expect(await store.readOverrides(jobId)).toBeNull();
    expect(await store.replaceOverrides(jobId, 'v0', 'v1')).toBe(false); // not there yet
    expect(await store.replaceOverrides(jobId, null, 'v1')).toBe(true);
    expect(await store.replaceOverrides(jobId, null, 'v1 again')).toBe(false); // no longer absent
    expect(await store.replaceOverrides(jobId, 'v0', 'v2')).toBe(false); // someone else wrote meanwhile
    expect(await store.readOverrides(jobId)).toBe('v1');
    expect(await store.replaceOverrides(jobId, 'v1', 'v2')).toBe(true);
    expect(await store.readOverrides(jobId)).toBe('v2');
    expect(await store.replaceOverrides(jobId, 'v1', null)).toBe(false);
    expect(await store.replaceOverrides(jobId, 'v2', null)).toBe(true);
    expect(await store.readOverrides(jobId)).toBeNull();
    expect(await store.replaceOverrides(jobId, undefined, 'v3')).toBe(true); // whatever it held
    expect(await store.replaceOverrides(jobId, undefined, null)).toBe(true);
    expect(await store.readOverrides(jobId)).toBeNull();
  });
});

describe('RedisJobStore: an overrides key of another type', () => {
  it('fails the read with WRONGTYPE, and is deleted by a write that takes whatever it holds', async () => {
    const jobId = `contract-overrides-wrongtype-${run}`;
    used.push(jobId);
    const store = new RedisJobStore(commands, blocking);
    await commands.hset(jobKeys(jobId).overrides, 'pauseSwitching', 'true');
    await expect(store.readOverrides(jobId)).rejects.toThrow(/WRONGTYPE/);
    await expect(store.replaceOverrides(jobId, null, 'x')).rejects.toThrow(/WRONGTYPE/);
    expect(await store.replaceOverrides(jobId, undefined, null)).toBe(true);
    expect(await commands.exists(jobKeys(jobId).overrides)).toBe(0);
  });
});

describe('RedisJobStore.retakeEpoch', () => {
  it('renews the lease it checks, and takes an epoch above the floor when the key holds no number', async () => {
    const jobId = `contract-retake-garbage-${run}`;
    used.push(jobId);
    const store = new RedisJobStore(commands, blocking);
    expect(await store.acquireLease(jobId, 'a', 1000)).toBe(true);
    await commands.set(jobKeys(jobId).epoch, 'not an epoch');
    expect(await store.retakeEpoch(jobId, 'a', 60000, 4, 4)).toBe(5);
    expect(await commands.get(jobKeys(jobId).epoch)).toBe('5');
    expect(await commands.pttl(jobKeys(jobId).owner)).toBeGreaterThan(1000);
  });
});
