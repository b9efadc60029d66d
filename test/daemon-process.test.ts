/**
 * Issue 11, fault 6 and trust, with the daemon as a separate process: Redis down at start, a
 * daemon restarted under the same owner id after kill -9, and no password in the logs of a failed
 * AUTH. Needs `npm run build` (npm test builds first).
 */
import Redis from 'ioredis';
import { FakeJob, waitFor } from './support/fake-job';
import { DaemonProcess } from './support/daemon-process';
import { freePort, RedisServer } from './support/redis-server';
import { testConfig } from './support/test-daemon';

const started: DaemonProcess[] = [];
const servers: RedisServer[] = [];

afterEach(async () => {
  for (const d of started.splice(0)) await d.stop('SIGKILL');
  for (const s of servers.splice(0)) await s.stop();
});

describe('daemon process', () => {
  it('waits for Redis when it is down at start, unready meanwhile, then works', async () => {
    const port = await freePort();
    const daemon = await DaemonProcess.start(testConfig(undefined, `redis://127.0.0.1:${port}/0`));
    started.push(daemon);
    await waitFor('HTTP up', async () => (await daemon.status('/health/live')) === 200, 20000, 100);
    expect(await daemon.status('/health/ready')).toBe(503);
    const live = await fetch(`${daemon.url}/health/live`);
    expect(live.headers.get('x-powered-by')).toBeNull();
    expect((await fetch(`${daemon.url}/jobs/nope`)).headers.get('x-powered-by')).toBeNull();
    await waitFor('two failed attempts', async () => (daemon.output.match(/cannot reach Redis yet/g) ?? []).length >= 2, 20000, 100);
    expect(daemon.running).toBe(true);
    const server = await RedisServer.start({ port });
    servers.push(server);
    await waitFor('ready once Redis is up', async () => (await daemon.status('/health/ready')) === 200, 30000, 100);
    const redis = new Redis(server.url());
    const job = new FakeJob(redis, { jobId: 'late-redis', stages: 2, microbatches: 4 });
    await job.register();
    await waitFor('the initial schedule', () => job.committed(), 15000);
    redis.disconnect();
    expect(daemon.running).toBe(true);
  });

  it('takes its own jobs back at once when restarted under the same owner id after kill -9', async () => {
    const server = await RedisServer.start();
    servers.push(server);
    // A lease far longer than the wait below: only taking back its own lease can explain the takeover.
    const config = testConfig((c) => {
      c.jobs.ownerId = 'pod-a';
      c.jobs.leaseMs = 120000;
    }, server.url());
    const daemon = await DaemonProcess.start(config);
    started.push(daemon);
    const redis = new Redis(server.url());
    const job = new FakeJob(redis, { jobId: 'same-owner', stages: 2, microbatches: 4 });
    await job.register();
    await waitFor('the initial schedule', () => job.committed(), 20000);
    const before = await waitFor('owned', () => daemon.json(`/jobs/${job.options.jobId}`), 20000);
    await daemon.stop('SIGKILL');
    expect(await redis.get(job.keys.owner)).toBe('pod-a'); // the dead process's lease is still there
    daemon.launch();
    const after = await waitFor('owned again', () => daemon.json(`/jobs/${job.options.jobId}`), 30000, 100);
    expect(after.epoch).toBeGreaterThan(before.epoch);
    expect(await redis.pttl(job.keys.owner)).toBeGreaterThan(60000);
    redis.disconnect();
  });

  it('never logs the Redis password of a failed AUTH', async () => {
    const server = await RedisServer.start({ extraArgs: ['--requirepass', 'the-right-one'] });
    servers.push(server);
    const secret = 'Wr0ngPassw0rd-s3cret';
    const daemon = await DaemonProcess.start(testConfig(undefined, `redis://default:${secret}@127.0.0.1:${server.port}/0`));
    started.push(daemon);
    await waitFor('the AUTH failure logged', async () => /WRONGPASS|NOAUTH|invalid username-password/i.test(daemon.output), 20000, 100);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // more retries, more log lines
    expect(daemon.output).not.toContain(secret);
    expect(await daemon.status('/health/ready')).toBe(503);
  });
});
