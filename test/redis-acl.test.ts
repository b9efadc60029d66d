/**
 * deploy/redis/pipemorph.acl: the daemon runs under its user (registration, initial schedule, a
 * straggler switch with the handshake), a rank under its user reports and acknowledges, and the
 * rank user is refused what only the daemon may do (epochs, schedules, leases, control events).
 * The operator's user may write a job's overrides (and read the rest), which the daemon applies
 * or refuses like any bad input; a rank's user may not write them.
 */
import Redis from 'ioredis';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DaemonProcess } from './support/daemon-process';
import { FakeJob, waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';
import { testConfig } from './support/test-daemon';

let server: RedisServer;
let daemon: DaemonProcess;
let rank: Redis;
let operator: Redis;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipemorph-acl-'));
  const aclPath = join(dir, 'users.acl');
  writeFileSync(aclPath, readFileSync(join(__dirname, '../deploy/redis/pipemorph.acl'), 'utf8').replace('CHANGE-ME-daemon-password', 'daemon-pw-1').replace('CHANGE-ME-rank-password', 'rank-pw-2').replace('CHANGE-ME-operator-password', 'operator-pw-3'));
  server = await RedisServer.start({ extraArgs: ['--aclfile', aclPath] });
  daemon = await DaemonProcess.start(testConfig(undefined, `redis://pipemorph-daemon:daemon-pw-1@127.0.0.1:${server.port}/0`));
  rank = new Redis(`redis://pipemorph-rank:rank-pw-2@127.0.0.1:${server.port}/0`);
  operator = new Redis(`redis://pipemorph-operator:operator-pw-3@127.0.0.1:${server.port}/0`);
});

afterAll(async () => {
  await daemon?.stop('SIGKILL');
  rank?.disconnect();
  operator?.disconnect();
  await server?.stop();
});

it('runs the daemon and a rank under their ACL users, and refuses the rank what only the daemon may write', async () => {
  const job = new FakeJob(rank, { jobId: 'acl-job', stages: 2, microbatches: 4 });
  await job.register();
  const initial = await waitFor('the initial schedule', () => job.committed(), 20000);
  expect(await rank.sismember('pipemorph:jobs', 'acl-job')).toBe(1);
  for (let k = 0; k < 12; k++) await job.reportIteration();
  job.extra.set('0:0', 60);
  await waitFor('a committed switch (prepare, acks, commit)', async () => {
    await job.reportIteration();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await job.pollControl();
    const s = await job.committed();
    return s !== null && s.version > initial.version;
  }, 30000, 0).catch((error) => {
    throw new Error(`${(error as Error).message}; daemon said: ${daemon.output.split('\n').filter((l) => /NOPERM|error|fail/i.test(l)).slice(0, 5).join(' | ')}`);
  });
  expect(job.events.some((e) => e.type === 'prepare')).toBe(true);
  // Maintenance (claims, trimming, lag gauges, the orphan sweep) ran under the daemon's user too, without a refusal.
  await waitFor('a maintenance run', async () => /pipemorph_ingest_lag_entries\{job="acl-job"\}/.test(await (await fetch(`${daemon.url}/metrics`)).text()), 15000);
  expect(daemon.output).not.toMatch(/NOPERM|can't run this command/);
  for (const attempt of [
    () => rank.incr(job.keys.epoch),
    () => rank.set(job.keys.schedule, '{}'),
    () => rank.set(job.keys.owner, 'me'),
    () => rank.set(job.keys.spec, '{}'),
    () => rank.xadd(job.keys.control, '*', 'm', '{}'),
    () => rank.xrange(job.keys.reports, '-', '+'),
    () => rank.flushall(),
    () => rank.set(job.keys.overrides, JSON.stringify({ version: 1, setBy: 'rank 3', reason: 'no more switches', pauseSwitching: true })),
    () => rank.del(job.keys.overrides),
  ]) {
    await expect(attempt()).rejects.toThrow(/NOPERM/);
  }
});

it("lets the operator's user write a job's overrides, which the daemon applies; and nothing else", async () => {
  const job = new FakeJob(rank, { jobId: 'acl-overrides', stages: 2, microbatches: 4 });
  await job.register();
  await waitFor('the initial schedule', () => job.committed(), 20000);
  // The write a rank is refused above, by the operator's user: accepted by Redis, applied by the daemon.
  expect(await operator.set(job.keys.overrides, JSON.stringify({ version: 1, setBy: 'ops', reason: 'maintenance', pauseSwitching: true }))).toBe('OK');
  const applied = await waitFor('the overrides in force', async () => {
    const view = await daemon.json(`/jobs/acl-overrides/overrides`);
    return view?.inForce?.version === 1 && view;
  }, 15000, 100);
  expect(applied.changes[applied.changes.length - 1]).toMatchObject({ action: 'applied', setBy: 'ops', seen: expect.stringMatching(/poll|adoption/) });
  // What the operator's user writes is validated like any input: refused, kept in the rejected stream, v1 stays.
  await operator.set(job.keys.overrides, JSON.stringify({ version: 2, setBy: 'ops', reason: 'typo', detection: { enterAfter: -1 } }));
  await waitFor('the refusal', async () => (await operator.xrevrange(job.keys.rejected, '+', '-', 'COUNT', 1)).some(([, f]) => /overrides: .*enterAfter/.test(f.join(' '))), 15000, 100);
  expect((await daemon.json(`/jobs/acl-overrides/overrides`)).inForce.version).toBe(1);
  // It reads the rest, and writes nothing else.
  expect(JSON.parse((await operator.get(job.keys.schedule))!).version).toBeGreaterThan(0);
  for (const attempt of [
    () => operator.set(job.keys.schedule, '{}'),
    () => operator.incr(job.keys.epoch),
    () => operator.del(job.keys.spec),
    () => operator.set(job.keys.owner, 'me'),
    () => operator.xadd(job.keys.reports, '*', 'm', '{}'),
    () => operator.xadd(job.keys.control, '*', 'm', '{}'),
    () => operator.flushall(),
  ]) {
    await expect(attempt()).rejects.toThrow(/NOPERM/);
  }
  expect(await operator.del(job.keys.overrides)).toBe(1);
});
