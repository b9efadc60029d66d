/**
 * Fuzz (fast-check) over every inbound message type: registrations, reports, acks, forged
 * registered markers and garbage, valid and mutated, some oversized. After each batch the daemon
 * must be ready, every stream bounded in entries and bytes, no key created for a job id that was
 * never accepted, and the daemon process (its own process_resident_memory_bytes) within the
 * Deployment's memory limit (512 MiB). Needs `npm run build`.
 */
import fc from 'fast-check';
import Redis from 'ioredis';
import { JOBS_INDEX, REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';
import { FakeJob, waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';
import { DaemonProcess } from './support/daemon-process';
import { testConfig } from './support/test-daemon';

const COPY_BYTES = 2048;
const REJECTED_MAX = 50;
const REGISTRATIONS_MAX = 100;
const NODE = 100; // MAXLEN ~ trims whole nodes of up to 100 entries

let server: RedisServer;
let redis: Redis;
let daemon: DaemonProcess;
let job: FakeJob;

async function residentBytes(): Promise<number> {
  const text = await (await fetch(`${daemon.url}/metrics`)).text();
  return Number(text.match(/^process_resident_memory_bytes (\d+)/m)?.[1] ?? Number.NaN);
}

async function processed(): Promise<number> {
  const text = await (await fetch(`${daemon.url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^pipemorph_ingest_messages_total\{[^}]*\} (\d+)/gm)) sum += Number(m[1]);
  return sum;
}

const jsonValue = fc.jsonValue({ maxDepth: 2 });
const mutate = <T extends Record<string, unknown>>(base: fc.Arbitrary<T>) =>
  fc.tuple(base, fc.option(fc.tuple(fc.constantFrom('type', 'protocol', 'jobId', 'rank', 'iteration', 'version', 'epoch', 'links', 'computeMs', 'stages', 'ranks', 'extra'), jsonValue), { nil: undefined })).map(([value, change]) =>
    change ? { ...value, [change[0]]: change[1] } : value,
  );

function arbitraries(jobId: string) {
  const link = fc.record({ peer: fc.integer({ min: 0, max: 5 }), kind: fc.constantFrom('pipeline', 'data-parallel'), bytes: fc.nat(), medianMs: fc.double({ min: 0, max: 100, noNaN: true }), maxMs: fc.double({ min: 0, max: 100, noNaN: true }), delegated: fc.boolean(), error: fc.constantFrom(null, 'nic-failure', 'timeout') });
  const report = fc.record({
    type: fc.constant('report'), protocol: fc.constant(1), jobId: fc.constant(jobId), rank: fc.integer({ min: 0, max: 5 }),
    iteration: fc.oneof(fc.integer({ min: 0, max: 200 }), fc.constant(1e15)), scheduleVersion: fc.integer({ min: 0, max: 5 }), epoch: fc.integer({ min: 0, max: 3 }),
    computeMs: fc.record({ f: fc.double({ min: 0, max: 50, noNaN: true }), b: fc.double({ min: 0, max: 50, noNaN: true }), w: fc.double({ min: 0, max: 50, noNaN: true }) }),
    links: fc.array(link, { maxLength: 3 }),
  });
  const ack = fc.record({ type: fc.constant('ack'), protocol: fc.constant(1), jobId: fc.constant(jobId), rank: fc.integer({ min: 0, max: 5 }), version: fc.integer({ min: 0, max: 9 }), epoch: fc.integer({ min: 0, max: 3 }), iteration: fc.nat(300), accepted: fc.boolean() });
  const registration = fc.tuple(fc.stringMatching(/^[a-z]{1,6}$/), fc.integer({ min: 1, max: 4 }), fc.constantFrom(4, 8, 70000)).map(([id, stages, microbatches]) => {
    const r = new FakeJob(redis, { jobId: `fz-${id}`, stages, microbatches }).registration;
    return { ...r } as unknown as Record<string, unknown>;
  });
  const marker = fc.record({ type: fc.constant('registered'), protocol: fc.constant(1), jobId: fc.oneof(fc.constant(jobId), fc.string()), registrationId: fc.string() });
  const garbage = fc.oneof(fc.string({ maxLength: 200 }), jsonValue.map((v) => JSON.stringify(v) ?? 'null'), fc.constant('x'.repeat(300 * 1024)));
  const onReports = fc.oneof(mutate(report).map((m) => JSON.stringify(m)), mutate(ack).map((m) => JSON.stringify(m)), marker.map((m) => JSON.stringify(m)), garbage);
  const onRegistrations = fc.oneof(mutate(registration).map((m) => JSON.stringify(m)), garbage);
  return fc.array(fc.oneof(onReports.map((m) => ({ stream: 'reports' as const, m })), onRegistrations.map((m) => ({ stream: 'registrations' as const, m }))), { minLength: 1, maxLength: 60 });
}

beforeAll(async () => {
  server = await RedisServer.start();
  redis = new Redis(server.url());
  daemon = await DaemonProcess.start(testConfig((c) => {
    c.ingest.rejectedCopyBytes = COPY_BYTES;
    c.ingest.rejectedMaxLen = REJECTED_MAX;
    c.ingest.registrationsMaxLen = REGISTRATIONS_MAX;
  }, server.url()));
  job = new FakeJob(redis, { jobId: 'fuzzed', stages: 4, microbatches: 8 });
  await job.register();
  await waitFor('the initial schedule', () => job.committed(), 20000);
});

afterAll(async () => {
  await daemon?.stop('SIGKILL');
  redis?.disconnect();
  await server?.stop();
});

it('stays ready with bounded streams under fuzzed input of every message type', async () => {
  await fc.assert(
    fc.asyncProperty(arbitraries('fuzzed'), async (messages) => {
      const before = await processed();
      const pipeline = redis.pipeline();
      for (const { stream, m } of messages) pipeline.xadd(stream === 'reports' ? job.keys.reports : REGISTRATIONS_STREAM, '*', 'm', m);
      await pipeline.exec();
      // Positive signal first: every message was read and counted.
      await waitFor('every message processed', async () => (await processed()) >= before + messages.length, 20000);
      expect((await fetch(`${daemon.url}/health/ready`)).status).toBe(200);
      expect(await residentBytes()).toBeLessThan(512 * 1024 * 1024);
    }),
    { numRuns: 8, seed: 11 },
  );
  // Let maintenance trim the registrations stream once.
  await waitFor('registrations trimmed', async () => (await redis.xlen(REGISTRATIONS_STREAM)) <= REGISTRATIONS_MAX + NODE, 10000);
  const jobs = new Set(await redis.smembers(JOBS_INDEX));
  for (const key of await redis.keys('pipemorph:*')) {
    const id = key.match(/^pipemorph:\{([^}]*)\}:/)?.[1];
    if (id !== undefined) expect({ key, known: jobs.has(id) }).toEqual({ key, known: true });
    if ((await redis.type(key)) !== 'stream') continue;
    const entries = await redis.xlen(key);
    const bytes = Number(await redis.call('MEMORY', 'USAGE', key));
    if (key.endsWith('rejected')) {
      expect({ key, entries: entries <= REJECTED_MAX + NODE }).toEqual({ key, entries: true });
      expect({ key, bytes: bytes <= (REJECTED_MAX + NODE) * (COPY_BYTES + 800) }).toEqual({ key, bytes: true });
    }
  }
});
