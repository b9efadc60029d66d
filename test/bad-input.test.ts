/**
 * Bad input from outside (issue 10): bounded copies of refused messages, oversized entries refused
 * before parsing, refused messages counted under their own type. A daemon against a private
 * redis-server; nothing here asserts a duration.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { REGISTRATIONS_STREAM, REJECTED_REGISTRATIONS_STREAM } from '../src/protocol/redis-keys';
import { FakeJob, waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';
import { startDaemon, testConfig } from './support/test-daemon';

let server: RedisServer;
let redis: Redis;
let daemon: { app: INestApplication; url: string };
let job: FakeJob;

const COPY_BYTES = 1024;
const MAX_LEN = 20;

function fieldsOf(fields: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let k = 0; k + 1 < fields.length; k += 2) out[fields[k]] = fields[k + 1];
  return out;
}

async function counter(type: string, result: string): Promise<number> {
  const text = await (await fetch(`${daemon.url}/metrics`)).text();
  const match = text.match(new RegExp(`^pipemorph_ingest_messages_total\\{type="${type}",result="${result}"\\} (\\d+)`, 'm'));
  return match ? Number(match[1]) : 0;
}

function report(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ type: 'report', protocol: 1, jobId: job.options.jobId, rank: 0, iteration: 0, scheduleVersion: 1, computeMs: { f: 1, b: 1, w: 1 }, links: [], ...extra });
}

beforeAll(async () => {
  server = await RedisServer.start();
  redis = new Redis(server.url());
  daemon = await startDaemon(testConfig((c) => {
    c.ingest.rejectedCopyBytes = COPY_BYTES;
    c.ingest.rejectedMaxLen = MAX_LEN;
  }, server.url()));
  job = new FakeJob(redis, { jobId: 'bad-input', stages: 2, microbatches: 4 });
  await job.register();
  // A hang guard, not a budget: a daemon starting beside the rest of the suite on a loaded machine can take a while.
  await waitFor('the initial schedule', () => job.committed(), 60000);
}, 90000);

afterAll(async () => {
  await daemon?.app.close();
  redis?.disconnect();
  await server?.stop();
});

describe('refused messages', () => {
  it('keeps a bounded copy of an oversized report, with a marker and the original size', async () => {
    const huge = report({ padding: 'x'.repeat(2 * 1024 * 1024) });
    await redis.xadd(job.keys.reports, '*', 'm', huge);
    const [entry] = await waitFor('the rejection', async () => {
      const entries = await redis.xrange(job.keys.rejected, '-', '+');
      return entries.length > 0 && entries;
    });
    const f = fieldsOf(entry[1]);
    expect(f.reason).toMatch(/message is at least \d+ bytes, more than 262144/);
    expect(Number(f.bytes)).toBe(Buffer.byteLength(huge));
    expect(f.truncated).toBe('1');
    expect(f.m.startsWith(huge.slice(0, COPY_BYTES))).toBe(true);
    expect(f.m).toMatch(new RegExp(`\\.\\.\\.\\[truncated: ${huge.length} bytes, first ${COPY_BYTES} kept\\]$`));
    expect(Buffer.byteLength(f.m)).toBeLessThan(COPY_BYTES + 100);
  });

  it('refuses by UTF-8 size before parsing: a report under the limit in characters but over it in bytes', async () => {
    const before = (await redis.xlen(job.keys.rejected));
    // 100,000 three-byte characters: 100k UTF-16 units, 300 kB on the wire; valid JSON of a report with an unknown field.
    const wide = report({ note: '€'.repeat(100000) });
    expect(wide.length).toBeLessThan(262144);
    await redis.xadd(job.keys.reports, '*', 'm', wide);
    const entries = await waitFor('the rejection', async () => {
      const e = await redis.xrange(job.keys.rejected, '-', '+');
      return e.length > before && e;
    });
    const f = fieldsOf(entries[entries.length - 1][1]);
    // Refused for its size, not for the schema (which a parse would have reached).
    expect(f.reason).toBe(`message is ${Buffer.byteLength(wide)} bytes, more than 262144`);
  });

  it('keeps a bounded copy of a refused registration', async () => {
    const registration = JSON.stringify({ ...job.registration, jobId: 'bad-registration', stages: 3, note: 'y'.repeat(100000) });
    await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', registration);
    const [entry] = await waitFor('the rejected registration', async () => {
      const entries = await redis.xrange(REJECTED_REGISTRATIONS_STREAM, '-', '+');
      return entries.length > 0 && entries;
    });
    const f = fieldsOf(entry[1]);
    expect(Number(f.bytes)).toBe(registration.length);
    expect(Buffer.byteLength(f.m)).toBeLessThan(COPY_BYTES + 100);
  });

  it('refuses at registration a job larger than the planner handles within the control budget', async () => {
    const stages = 64;
    const microbatches = 16384;
    const big = { ...job.registration, jobId: 'too-big', stages, microbatches, ranks: Array.from({ length: stages }, (_, rank) => ({ rank, dp: 0, pp: rank, tp: 0, node: `n${rank}` })),
      memory: { deviceBytes: new Array(stages).fill(1e10), activationBytes: new Array(stages).fill(1e9), hostBytes: 1e10 }, computeMs: undefined };
    await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(big));
    const entry = await waitFor('the refusal', async () => (await redis.xrange(REJECTED_REGISTRATIONS_STREAM, '-', '+')).find(([, f]) => f[1].includes('"too-big"')));
    expect(fieldsOf(entry[1]).reason).toMatch(/stages x microbatches = 64 x 16384 = 1048576 is more than control.maxPlanCells \(65536\)/);
    expect(await redis.sismember('pipemorph:jobs', 'too-big')).toBe(0);
  });

  it('bounds a rejected stream in entries and bytes under a flood of large refused messages', async () => {
    const big = report({ rank: 99, padding: 'z'.repeat(200 * 1024) }); // under the size limit, refused by the schema
    const before = await counter('report', 'rejected');
    const pipeline = redis.pipeline();
    for (let k = 0; k < 200; k++) pipeline.xadd(job.keys.reports, '*', 'm', big);
    await pipeline.exec();
    await waitFor('every refusal counted', async () => (await counter('report', 'rejected')) >= before + 200);
    const entries = await redis.xlen(job.keys.rejected);
    // MAXLEN ~ trims whole stream nodes: a bound of the order of rejectedMaxLen plus one node (100 entries).
    expect(entries).toBeLessThanOrEqual(MAX_LEN + 100);
    const bytes = Number(await redis.call('MEMORY', 'USAGE', job.keys.rejected));
    expect(bytes).toBeLessThan((MAX_LEN + 100) * (COPY_BYTES + 700));
  });
});

describe('pipemorph_ingest_messages_total{type}', () => {
  it('counts schema-invalid reports and acks under their type; unknown only for what does not parse', async () => {
    const counts = async () => ({ report: await counter('report', 'rejected'), ack: await counter('ack', 'rejected'), unknown: await counter('unknown', 'rejected') });
    const before = await counts();
    await redis.xadd(job.keys.reports, '*', 'm', report({ iteration: -1 }));
    await redis.xadd(job.keys.reports, '*', 'm', JSON.stringify({ type: 'ack', protocol: 1, jobId: job.options.jobId, rank: 0, version: 'two' }));
    await redis.xadd(job.keys.reports, '*', 'm', report({ jobId: 'another-job' }));
    await redis.xadd(job.keys.reports, '*', 'm', '{not json');
    await redis.xadd(job.keys.reports, '*', 'm', JSON.stringify({ type: 'gossip', protocol: 1 }));
    const after = await waitFor('five refusals', async () => {
      const c = await counts();
      return c.report + c.ack + c.unknown >= before.report + before.ack + before.unknown + 5 && c;
    });
    expect(after.report - before.report).toBe(2);
    expect(after.ack - before.ack).toBe(1);
    expect(after.unknown - before.unknown).toBe(2);
    expect((await fetch(`${daemon.url}/health/ready`)).status).toBe(200);
  });
});
