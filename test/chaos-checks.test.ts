/**
 * The chaos suite's checks can fail: ranks given a mixed iteration, a version naming two schedules
 * and a control event from a fenced owner (an epoch below one already on the stream) are counted.
 */
import Redis from 'ioredis';
import { ChaosRanks } from './chaos/chaos-ranks';
import { waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = new Redis(server.url());
});

afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

function schedule(jobId: string, version: number, epoch: number, createdAt: number) {
  return { protocol: 1, jobId, version, epoch, state: 'committed', effectiveIteration: 0, createdAt, pipelines: [], delegation: [], reason: { kind: 'initial', links: [], detail: '' }, prediction: { previousMs: null, newMs: 1, staticMs: 1 } };
}

describe('chaos checks', () => {
  it('count mixed iterations from the ranks\' own records', () => {
    const ranks = new ChaosRanks(redis, 'mixed', 2);
    ranks.records.push({ iteration: 0, ran: ['1@10', '1@10'] }, { iteration: 1, ran: ['2@20', '1@10'] }, { iteration: 2, ran: ['2@20', 'missing'] }, { iteration: 3, ran: ['2@20', '2@21'] });
    expect(ranks.mixedIterations()).toBe(3);
  });

  it('count a reused version and a fenced owner\'s write seen by live ranks', async () => {
    const ranks = new ChaosRanks(redis, 'broken', 2, 20);
    await redis.set(ranks.keys.schedule, JSON.stringify(schedule('broken', 1, 1, 100)));
    expect(await ranks.connect()).toBe(true);
    ranks.start();
    // Version 2 committed under epoch 3, then a write under epoch 2 (fenced owner), then version 2 again with other content.
    await redis.set(ranks.keys.schedule, JSON.stringify(schedule('broken', 2, 3, 200)));
    await redis.xadd(ranks.keys.control, '*', 'm', JSON.stringify({ type: 'commit', protocol: 1, jobId: 'broken', version: 2, epoch: 3, effectiveIteration: 0 }));
    await waitFor('version 2 run', async () => ranks.agreed === 2);
    await redis.xadd(ranks.keys.control, '*', 'm', JSON.stringify({ type: 'abort', protocol: 1, jobId: 'broken', version: 3, epoch: 2, effectiveIteration: 0 }));
    // A daemon that lost its version counter prepares "version 2" again, with other content.
    await redis.set(ranks.keys.pending, JSON.stringify({ ...schedule('broken', 2, 4, 300), state: 'prepared', effectiveIteration: 1e6 }));
    await redis.xadd(ranks.keys.control, '*', 'm', JSON.stringify({ type: 'prepare', protocol: 1, jobId: 'broken', version: 2, epoch: 4, effectiveIteration: 1e6 }));
    await waitFor('both events read', async () => ranks.staleWrites.size === 1 && ranks.ranks.every((r) => r.epoch === 4));
    await ranks.stop();
    expect(ranks.staleWrites.size).toBe(1);
    expect(ranks.reusedVersions()).toBe(1);
  });

  it('count no write when ranks read an epoch change at different times (the epochs rise in stream order)', async () => {
    const ranks = new ChaosRanks(redis, 'handover', 4, 20);
    await redis.set(ranks.keys.schedule, JSON.stringify(schedule('handover', 1, 1, 100)));
    expect(await ranks.connect()).toBe(true);
    ranks.start();
    // The last write of the owner of epoch 1, then the first of the next owner (epoch 2), landing
    // together: rank 0 reads both in one poll before rank 1 reads the first. Counted as a fenced
    // owner's write while the maximum was shared by the ranks (a false split-brain write in bench:scale-out).
    await redis
      .multi()
      .xadd(ranks.keys.control, '*', 'm', JSON.stringify({ type: 'abort', protocol: 1, jobId: 'handover', version: 2, epoch: 1, effectiveIteration: 0 }))
      .xadd(ranks.keys.control, '*', 'm', JSON.stringify({ type: 'abort', protocol: 1, jobId: 'handover', version: 2, epoch: 2, effectiveIteration: 0 }))
      .exec();
    await waitFor('both events read by every rank', async () => ranks.ranks.every((r) => r.epoch === 2));
    // And a write under epoch 1 after them is still one, counted once though every rank reads it.
    await redis.xadd(ranks.keys.control, '*', 'm', JSON.stringify({ type: 'abort', protocol: 1, jobId: 'handover', version: 3, epoch: 1, effectiveIteration: 0 }));
    const last = (await redis.xrevrange(ranks.keys.control, '+', '-', 'COUNT', 1))[0][0];
    await waitFor('the fenced write read by every rank', async () => ranks.ranks.every((r) => r.cursor === last));
    await ranks.stop();
    expect([...ranks.staleWrites]).toEqual([last]);
  });
});
