/**
 * Issue 11, Redis Cluster: a daemon configured with `redis.cluster.nodes` drives jobs whose keys
 * live on different masters of a real 3-master, 3-replica cluster started here, through the full
 * register -> report -> straggler -> prepare/ack/commit cycle; then one job's master is killed
 * (SIGKILL), its replica takes over, and the daemon adapts that job again with a newer version.
 */
import { INestApplication } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import Redis, { Cluster } from 'ioredis';
import { PublishedSchedule } from '../src/protocol/protocol-v1.type';
import { RedisJobStore } from '../src/daemon/store/redis-job-store';
import { jobKeys } from '../src/protocol/redis-keys';
import { committedAfter, FakeJob, iterate, waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';
import { startDaemon, testConfig } from './support/test-daemon';

const servers: RedisServer[] = [];
let cluster: Cluster;
let daemon: { app: INestApplication; url: string } | null = null;

/** The master serving `slot`, as host:port, from CLUSTER SLOTS on any node. */
async function masterOf(slot: number): Promise<string> {
  const ranges = (await cluster.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
  const range = ranges.find(([from, to]) => slot >= from && slot <= to);
  if (!range) throw new Error(`slot ${slot} is not served`);
  return `${range[2][0]}:${range[2][1]}`;
}

/** Port of the replica of the master at `master` (host:port), from CLUSTER NODES on `port`. */
async function replicaOf(port: number, master: string): Promise<number> {
  const client = new Redis(port, '127.0.0.1');
  const lines = ((await client.cluster('NODES')) as string).split('\n').map((line) => line.split(' '));
  client.disconnect();
  const masterId = lines.find((f) => f[1]?.startsWith(`${master}@`))![0];
  const replica = lines.find((f) => f[2]?.includes('slave') && f[3] === masterId)!;
  return Number(replica[1].split('@')[0].split(':')[1]);
}

async function clusterOk(port: number): Promise<boolean> {
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  try {
    return /cluster_state:ok/.test((await client.cluster('INFO')) as string);
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

beforeAll(async () => {
  for (let k = 0; k < 6; k++) servers.push(await RedisServer.start({ extraArgs: ['--cluster-enabled', 'yes', '--cluster-node-timeout', '1000', '--cluster-config-file', 'nodes.conf'] }));
  // The first three become masters, each later one a replica of one of them.
  execFileSync('redis-cli', ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '1', '--cluster-yes'], { stdio: 'ignore' });
  for (const s of servers) await waitFor(`cluster state ok on ${s.port}`, () => clusterOk(s.port), 20000, 100);
  cluster = new Cluster(servers.slice(0, 3).map((s) => ({ host: '127.0.0.1', port: s.port })), { redisOptions: { maxRetriesPerRequest: 20 }, retryDelayOnClusterDown: 200, retryDelayOnFailover: 200 });
}, 60000);

afterAll(async () => {
  if (daemon) await daemon.app.close();
  cluster?.disconnect();
  for (const s of servers) await s.stop();
});

/** `count` job ids (prefix-k) whose keys land on `count` different masters. */
async function jobIdsOnDistinctMasters(prefix: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  const masters = new Set<string>();
  for (let k = 0; ids.length < count && k < 500; k++) {
    const jobId = `${prefix}-${k}`;
    const master = await masterOf(Number(await cluster.cluster('KEYSLOT', jobKeys(jobId).reports)));
    if (masters.has(master)) continue;
    masters.add(master);
    ids.push(jobId);
  }
  return ids;
}

it('runs every store operation on one slot: transactions, scripts, per-job reads and the orphan scan across all masters', async () => {
  const store = new RedisJobStore(cluster as unknown as Redis, cluster as unknown as Redis);
  const ids = await jobIdsOnDistinctMasters('store-job', 3);
  expect(ids).toHaveLength(3);
  // A command naming two jobs' keys is refused by the cluster: the checks below can fail.
  await expect(cluster.multi().set(jobKeys(ids[0]).spec, 'x').set(jobKeys(ids[1]).spec, 'x').exec()).rejects.toThrow(/CROSSSLOT|same slot/);
  for (const jobId of ids) {
    const registration = new FakeJob(cluster as unknown as Redis, { jobId, stages: 2, microbatches: 4 }).registration;
    await store.saveSpec(registration, '1-0');
    await store.keepJobKeys(jobId);
    expect(await store.bumpEpoch(jobId)).toBe(1);
    expect(await store.acquireLease(jobId, 'me', 5000)).toBe(true);
    await store.ensureGroup(jobKeys(jobId).reports, 'g');
    await store.append(jobKeys(jobId).reports, `{"n":"${jobId}"}`, 100);
  }
  expect((await store.listJobs()).sort()).toEqual([...ids].sort());
  // One read per job across three masters; a broken stream fails alone.
  await cluster.del(jobKeys(ids[2]).reports);
  await cluster.set(jobKeys(ids[2]).reports, 'not a stream');
  const read = await store.readNew(ids.map((id) => jobKeys(id).reports), 'g', 'c', 10, 0);
  expect(read.batches.map((b) => b.entries[0].message).sort()).toEqual(ids.slice(0, 2).map((id) => `{"n":"${id}"}`).sort());
  expect(read.failed.map((f) => f.stream)).toEqual([jobKeys(ids[2]).reports]);
  // The orphan scan walks every master: streams of unknown jobs on all three get a TTL.
  const orphans = await jobIdsOnDistinctMasters('orphan-job', 3);
  for (const jobId of orphans) await cluster.xadd(jobKeys(jobId).reports, '*', 'm', '{}');
  let cursor = '0';
  let expired = 0;
  do {
    const pass = await store.expireOrphanStreams(cursor, new Set(ids), 60000, 100);
    cursor = pass.cursor;
    expired += pass.expired;
  } while (cursor !== '0');
  expect(expired).toBe(3);
  for (const jobId of [...ids, ...orphans]) await store.forgetJob(jobId, 1000);
  expect(await store.listJobs()).toEqual([]);
  expect(await cluster.pttl(jobKeys(ids[0]).spec)).toBeGreaterThan(0);
});

it('drives jobs on three masters through the handshake, and again after a master is killed and its replica promoted', async () => {
  // Jobs whose hash tags land on three different masters.
  const ids = await jobIdsOnDistinctMasters('cluster-job', 3);
  expect(ids).toHaveLength(3);
  const jobs = ids.map((jobId) => new FakeJob(cluster as unknown as Redis, { jobId, stages: 4, microbatches: 8 }));

  daemon = await startDaemon(testConfig((c) => (c.redis.cluster = { nodes: servers.slice(0, 3).map((s) => `127.0.0.1:${s.port}`) }), `redis://127.0.0.1:${servers[0].port}`));

  const adapted: PublishedSchedule[] = [];
  for (const job of jobs) await job.register();
  const initial = await Promise.all(jobs.map((job) => waitFor(`initial schedule of ${job.options.jobId}`, () => job.committed(), 20000)));
  for (let k = 0; k < 12; k++) for (const job of jobs) await job.reportIteration();
  for (const [k, job] of jobs.entries()) {
    job.extra.set('0:2', 40);
    await iterate(job, () => committedAfter(job, initial[k].version));
    adapted.push((await job.committed())!);
    await job.pollControl(); // the commit event, written with the schedule
    const types = job.events.filter((e) => e.version === adapted[k].version).map((e) => e.type);
    expect(types).toEqual(['prepare', 'commit']);
  }

  // Kill the master of the first job's slot; its replica takes over (automatic failover after the
  // 1 s node timeout, forced with TAKEOVER if the vote has not happened yet).
  const victim = jobs[0];
  const master = await masterOf(Number(await cluster.cluster('KEYSLOT', jobKeys(victim.options.jobId).reports)));
  const killed = servers.find((s) => `127.0.0.1:${s.port}` === master)!;
  const survivor = servers.find((s) => s !== killed)!;
  const replicaPort = await replicaOf(survivor.port, master);
  const killedAt = Date.now();
  await killed.kill();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  if (!(await clusterOk(replicaPort))) {
    const replica = new Redis(replicaPort, '127.0.0.1');
    await replica.cluster('FAILOVER', 'TAKEOVER').catch(() => undefined);
    replica.disconnect();
  }
  await waitFor('the replica promoted', async () => (await masterOf(Number(await cluster.cluster('KEYSLOT', jobKeys(victim.options.jobId).reports)))) === `127.0.0.1:${replicaPort}`, 20000, 100);

  // The daemon adapts the job again on the promoted replica, with a version never used before.
  victim.extra.delete('0:2');
  victim.extra.set('0:1', 40);
  await iterate(victim, () => committedAfter(victim, adapted[0].version), 600);
  const recoveredMs = Date.now() - killedAt;
  const after = (await victim.committed())!;
  expect(after.version).toBeGreaterThan(adapted[0].version);
  // The other jobs keep working meanwhile.
  for (const [k, job] of jobs.slice(1).entries()) expect((await job.committed())!.version).toBeGreaterThanOrEqual(adapted[k + 1].version);
  // Measured for the report, never asserted (machine load varies).
  console.log(JSON.stringify({ clusterFailover: { recoveredMs, versionBefore: adapted[0].version, versionAfter: after.version } }));
}, 240000);
