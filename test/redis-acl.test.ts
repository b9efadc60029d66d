/**
 * deploy/redis/pipemorph.acl: the daemon runs under its user (registration, initial schedule, a
 * straggler switch with the handshake), a rank under its user reports and acknowledges, and the
 * rank user is refused what only the daemon may do (epochs, schedules, leases, control events).
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

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipemorph-acl-'));
  const aclPath = join(dir, 'users.acl');
  writeFileSync(aclPath, readFileSync(join(__dirname, '../deploy/redis/pipemorph.acl'), 'utf8').replace('CHANGE-ME-daemon-password', 'daemon-pw-1').replace('CHANGE-ME-rank-password', 'rank-pw-2'));
  server = await RedisServer.start({ extraArgs: ['--aclfile', aclPath] });
  daemon = await DaemonProcess.start(testConfig(undefined, `redis://pipemorph-daemon:daemon-pw-1@127.0.0.1:${server.port}/0`));
  rank = new Redis(`redis://pipemorph-rank:rank-pw-2@127.0.0.1:${server.port}/0`);
});

afterAll(async () => {
  await daemon?.stop('SIGKILL');
  rank?.disconnect();
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
  ]) {
    await expect(attempt()).rejects.toThrow(/NOPERM/);
  }
});
