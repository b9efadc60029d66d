/**
 * Issue 11, Sentinel: a daemon configured with `redis.sentinels` and `redis.sentinelName` finds the
 * master through one sentinel, runs a job, and follows the failover when the master is killed
 * (SIGKILL) and the sentinel promotes the replica: the job then adapts with a newer version.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { committedAfter, FakeJob, iterate, waitFor } from './support/fake-job';
import { freePort, RedisServer } from './support/redis-server';
import { startDaemon, testConfig } from './support/test-daemon';

let master: RedisServer;
let replica: RedisServer;
let sentinel: ChildProcess;
let sentinelPort: number;
let client: Redis;
let daemon: { app: INestApplication; url: string } | null = null;

beforeAll(async () => {
  master = await RedisServer.start({ extraArgs: ['--repl-diskless-sync-delay', '0'] });
  replica = await RedisServer.start({ extraArgs: ['--repl-diskless-sync-delay', '0'] });
  const r = new Redis(replica.port, '127.0.0.1');
  await r.replicaof('127.0.0.1', master.port);
  await waitFor('the replica in sync', async () => /master_link_status:up/.test(await r.info('replication')), 20000, 100);
  r.disconnect();
  sentinelPort = await freePort();
  const conf = join(replica.dir, 'sentinel.conf');
  writeFileSync(conf, [`port ${sentinelPort}`, 'bind 127.0.0.1', `sentinel monitor pm 127.0.0.1 ${master.port} 1`, 'sentinel down-after-milliseconds pm 1000', 'sentinel failover-timeout pm 5000', ''].join('\n'));
  sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
  client = new Redis({ sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name: 'pm', maxRetriesPerRequest: 20 });
  client.on('error', () => undefined);
  await waitFor('the sentinel', async () => (await client.ping().catch(() => null)) === 'PONG', 20000, 100);
}, 60000);

afterAll(async () => {
  if (daemon) await daemon.app.close();
  client?.disconnect();
  sentinel?.kill('SIGKILL');
  await master?.stop();
  await replica?.stop();
});

it('finds the master through Sentinel and follows its failover', async () => {
  daemon = await startDaemon(testConfig((c) => {
    c.redis.sentinels = [`127.0.0.1:${sentinelPort}`];
    c.redis.sentinelName = 'pm';
  }, 'redis://127.0.0.1:1/0')); // the URL's host is not used with sentinels: 1 would refuse
  const job = new FakeJob(client, { jobId: 'sentinel-job', stages: 4, microbatches: 8 });
  await job.register();
  const initial = await waitFor('the initial schedule', () => job.committed(), 20000);

  await master.kill();
  const r = new Redis(replica.port, '127.0.0.1');
  await waitFor('the replica promoted', async () => /role:master/.test(await r.info('replication')), 30000, 200);
  r.disconnect();
  for (let k = 0; k < 12; k++) await job.reportIteration();
  job.extra.set('0:2', 40);
  // Bounded by time, not by a count of iterations: a loaded CI machine once ran 600 fake
  // iterations (about 12 s) before the daemon adapted. A daemon that never adapts still fails, and
  // says what it saw.
  try {
    await iterate(job, () => committedAfter(job, initial.version), 3000);
  } catch (error) {
    const seen = await Promise.all(['', '/decisions'].map(async (path) => (await fetch(`${daemon!.url}/jobs/sentinel-job${path}`)).text()));
    throw new Error(`${(error as Error).message}; the daemon's job: ${seen[0].slice(0, 4000)}; its decisions: ${seen[1].slice(0, 4000)}`);
  }
  expect((await job.committed())!.version).toBeGreaterThan(initial.version);
}, 150000);
