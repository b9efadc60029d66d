/**
 * Issue 31, item 1: the fleet's evidence in a real Redis (a private redis-server). Entries expire
 * unless re-written, the index forgets expired ones, what is not evidence is skipped, a flushed
 * Redis is rebuilt by the next record, and every key shares one hash slot (Redis Cluster).
 */
import Redis from 'ioredis';
import { JobFleetEvidence } from '../src/core/fleet/job-fleet-evidence.type';
import { FleetStore, parseFleetEvidence } from '../src/daemon/fleet/fleet-store';
import { FLEET_INDEX, fleetEvidenceKey } from '../src/protocol/redis-keys';
import { waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';

let server: RedisServer;
let redis: Redis;

const evidence = (jobId: string, slow = 0): JobFleetEvidence => ({ jobId, at: 1, localities: { x: 'r0', y: 'r1' }, links: [{ a: 'x', b: 'y', healthy: 16 - slow, slow, extraMs: slow ? 7 : 0 }], compute: [{ node: 'x', healthy: 1, slow: 0, ratio: 0 }] });

beforeAll(async () => {
  server = await RedisServer.start();
  redis = new Redis(server.url());
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

beforeEach(() => redis.flushall());

it('reads back what every replica recorded, sorted by job, at most maxJobs', async () => {
  const other = new Redis(server.url());
  const a = new FleetStore(redis);
  const b = new FleetStore(other);
  await a.record([evidence('j2'), evidence('j0', 16)], 10000);
  await b.record([evidence('j1')], 10000);
  expect((await a.readAll(10)).map((e) => e.jobId)).toEqual(['j0', 'j1', 'j2']);
  expect(await a.readAll(10)).toEqual(await b.readAll(10));
  expect((await a.readAll(2)).map((e) => e.jobId)).toEqual(['j0', 'j1']);
  expect(await redis.pttl(fleetEvidenceKey('j0'))).toBeGreaterThan(0);
  other.disconnect();
});

it('forgets evidence nobody re-writes: the entry expires and leaves the index', async () => {
  const store = new FleetStore(redis);
  await store.record([evidence('old')], 300);
  await store.record([evidence('kept')], 60000);
  await waitFor('the short-lived entry expired', async () => (await redis.exists(fleetEvidenceKey('old'))) === 0, 5000, 50);
  // A read-only reader (the CLI under the operator's Redis user) leaves the index alone.
  expect((await store.readAll(10, false)).map((e) => e.jobId)).toEqual(['kept']);
  expect((await redis.smembers(FLEET_INDEX)).sort()).toEqual(['kept', 'old']);
  expect((await store.readAll(10)).map((e) => e.jobId)).toEqual(['kept']);
  expect(await redis.smembers(FLEET_INDEX)).toEqual(['kept']);
});

it('is rebuilt by the next record after Redis lost its data', async () => {
  const store = new FleetStore(redis);
  await store.record([evidence('j0')], 60000);
  await redis.flushall();
  expect(await store.readAll(10)).toEqual([]);
  await store.record([evidence('j0')], 60000);
  expect((await store.readAll(10)).map((e) => e.jobId)).toEqual(['j0']);
});

it('skips what is not evidence (and a twin: the same entry well-formed is read)', async () => {
  await redis.sadd(FLEET_INDEX, 'bad', 'good');
  await redis.set(fleetEvidenceKey('bad'), JSON.stringify({ ...evidence('bad'), links: [{ a: 'x', b: 'y', healthy: -1, slow: 0, extraMs: 0 }] }));
  await redis.set(fleetEvidenceKey('good'), JSON.stringify(evidence('good')));
  expect((await new FleetStore(redis).readAll(10)).map((e) => e.jobId)).toEqual(['good']);
  expect(parseFleetEvidence('not json')).toBeNull();
  expect(parseFleetEvidence(JSON.stringify(evidence('x')))).toEqual(evidence('x'));
});

it('keeps every fleet key in one hash slot, apart from any job\'s', async () => {
  // Redis Cluster hashes only what is between the first { and the next }.
  const tag = (key: string) => key.slice(key.indexOf('{') + 1, key.indexOf('}'));
  expect(new Set([FLEET_INDEX, fleetEvidenceKey('a'), fleetEvidenceKey('zz-9')].map(tag))).toEqual(new Set(['fleet:view']));
  expect(tag(fleetEvidenceKey('fleet'))).toBe('fleet:view');
  // Tools find a job's keys as pipemorph:{<job>}:* (the orphan sweep, the fuzz test's audit).
  for (const key of [FLEET_INDEX, fleetEvidenceKey('a')]) expect(key).not.toMatch(/^pipemorph:\{/);
});
