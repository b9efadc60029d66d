/**
 * Issue 31, items 1-3 and 6: the fleet view with two daemon replicas on a real Redis (a private
 * redis-server). Four jobs, led by both replicas between them: three share node `bad` (each with
 * other peers) whose NIC slows every link it is on; the fourth runs on those peers, healthy. Both
 * replicas serve the same GET /fleet naming `nic:bad` (and nothing else), valid against
 * schemas/fleet-api.v1.schema.json, with its metric; the fleet's keys lost, the view comes back
 * within an interval; a replica lost, the other leads every job and re-writes their evidence; the
 * NIC healed, the suspect clears. Needs nothing built.
 */
import Ajv from 'ajv';
import Redis from 'ioredis';
import fleetApiSchema from '../schemas/fleet-api.v1.schema.json';
import { JobRegistry } from '../src/daemon/jobs/job-registry.service';
import { StartedDaemon } from '../src/daemon/start-daemon.util';
import { FLEET_INDEX, fleetEvidenceKey } from '../src/protocol/redis-keys';
import { FakeJob, waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';
import { startDaemon, testConfig } from './support/test-daemon';

let server: RedisServer;
let redis: Redis;
const daemons: StartedDaemon[] = [];
const jobs: FakeJob[] = [];
const validate = new Ajv().compile(fleetApiSchema);

/** Nodes of each job's stages, in order. */
const PLACEMENT: Record<string, string[]> = {
  'fleet-a': ['a1', 'bad', 'a2'],
  'fleet-b': ['b1', 'bad', 'b2'],
  'fleet-c': ['c1', 'bad', 'c2'],
  'fleet-d': ['a1', 'a2', 'b1', 'b2', 'c1', 'c2'],
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function fleet(d: StartedDaemon): Promise<any> {
  return (await fetch(`${d.url}/fleet`)).json();
}

/** What must agree between replicas: everything but who served it and when. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const shared = ({ replica, computedAt, asOf, ...rest }: any) => rest;

async function iterateAll(n: number): Promise<void> {
  for (let k = 0; k < n; k++) {
    for (const job of jobs) {
      await job.reportIteration();
      await job.pollControl();
    }
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}

function setBad(extraMs: number): void {
  for (const job of jobs) {
    const nodes = PLACEMENT[job.options.jobId];
    for (let link = 0; link + 1 < nodes.length; link++) {
      if (nodes[link] === 'bad' || nodes[link + 1] === 'bad') job.extra.set(`0:${link}`, extraMs);
      else job.extra.delete(`0:${link}`);
    }
  }
}

beforeAll(async () => {
  server = await RedisServer.start();
  redis = new Redis(server.url());
  for (const ownerId of ['fleet-replica-a', 'fleet-replica-b']) {
    daemons.push(
      await startDaemon(
        testConfig((c) => {
          c.jobs.ownerId = ownerId;
          c.fleet.intervalMs = 200;
          c.fleet.ttlMs = 2000;
        }, server.url()),
      ),
    );
  }
  for (const [jobId, nodes] of Object.entries(PLACEMENT)) {
    const job = new FakeJob(redis, { jobId, stages: nodes.length, microbatches: 4 });
    await job.register({ ranks: job.registration.ranks.map((r) => ({ ...r, node: nodes[r.rank] })) });
    jobs.push(job);
  }
  const owned = () => daemons.map((d) => d.app.get(JobRegistry).all().length);
  await waitFor('both replicas lead their share of the four jobs', async () => owned().join() === '2,2', 15000, 50);
}, 30000);

afterAll(async () => {
  for (const d of daemons) await d.app.close().catch(() => undefined);
  redis?.disconnect();
  await server?.stop();
});

it('both replicas name the bad NIC, the same view; it survives a lost replica and clears when the NIC heals', async () => {
  await iterateAll(12); // the detectors learn their baselines
  setBad(25);
  const named = async () => {
    await iterateAll(1);
    const views = await Promise.all(daemons.map(fleet));
    return views.every((v) => v.suspects.length > 0) && views;
  };
  const views = await waitFor('both replicas name a suspect', named, 30000, 0);
  for (const v of views) expect(validate(v)).toBe(true);
  // The evidence comes in link by link as the jobs iterate: a view read the moment the suspect is
  // first named may hold 5 of its 6 slow links (a loaded CI machine saw that once), so wait for all.
  await waitFor('both replicas serve the same view, with every slow link in it', async () => {
    const [a, b] = await Promise.all(daemons.map(fleet));
    if (!/slow on 6 links/.test(a.suspects[0]?.reason ?? '')) await iterateAll(1);
    return JSON.stringify(shared(a)) === JSON.stringify(shared(b)) && /slow on 6 links/.test(a.suspects[0]?.reason ?? '');
  }, 10000, 50);
  const [a, b] = await Promise.all(daemons.map(fleet));
  expect(a.replica).not.toBe(b.replica);
  expect(a.suspects.map((s: { id: string }) => s.id)).toEqual(['nic:bad']);
  expect(a.suspects[0].reason).toMatch(/^node bad: slow on 6 links to 6 different peers in 3 jobs/);
  expect(a.jobs).toEqual(Object.keys(PLACEMENT));
  const metrics = await (await fetch(`${daemons[1].url}/metrics`)).text();
  expect(metrics).toMatch(/^pipemorph_fleet_suspect_confidence\{kind="nic",target="bad"\} 0\.\d+$/m);
  expect(metrics).toMatch(/^pipemorph_fleet_suspects\{kind="nic"\} 1$/m);
  // Step 4: every job's detector takes the view as its prior. The six links through `bad` (two in
  // each of jobs a, b, c; the suspect is named on the other two jobs' evidence too) are known slow.
  const priorSlow = async () => {
    let sum = 0;
    for (const d of daemons) sum += Number((await (await fetch(`${d.url}/metrics`)).text()).match(/^pipemorph_fleet_prior_slow_links (\d+)$/m)?.[1] ?? NaN);
    return sum;
  };
  await waitFor('the led jobs\' detectors know the six links through bad are slow', async () => (await priorSlow()) === 6, 5000, 50);

  // Redis lost the fleet's keys: every replica re-writes its jobs' evidence within an interval.
  await redis.del(FLEET_INDEX, ...Object.keys(PLACEMENT).map(fleetEvidenceKey));
  await waitFor('the view rebuilt', async () => (await redis.scard(FLEET_INDEX)) === 4 && (await fleet(daemons[0])).suspects.length === 1, 5000, 50);

  // A replica lost: the other takes its jobs, replays their history and re-writes their evidence.
  const lost = daemons.pop()!;
  const ledByLost = lost.app.get(JobRegistry).all().map((j) => j.jobId);
  await lost.app.close();
  // Evidence written from now on can only be the replica left's: the lost one is closed.
  const closedAt = Date.now();
  const [left] = daemons;
  const before = (await fleet(left)).computedAt;
  await waitFor('the replica left leads every job, and names the NIC from all of them', async () => {
    await iterateAll(1);
    const v = await fleet(left);
    // The lost replica's jobs' evidence re-written by the one left (the view alone also counts evidence the lost one wrote before, until it expires).
    const rewritten = (await redis.mget(...ledByLost.map(fleetEvidenceKey))).every((text) => text !== null && JSON.parse(text).at >= closedAt);
    return left.app.get(JobRegistry).all().length === 4 && rewritten && v.computedAt > before && v.suspects.length === 1 && v.jobs.length === 4 && v;
  }, 30000, 0);

  setBad(0);
  await waitFor('the suspect clears', async () => {
    await iterateAll(1);
    return (await fleet(left)).suspects.length === 0;
  }, 30000, 0);
  expect((await (await fetch(`${left.url}/metrics`)).text())).not.toMatch(/pipemorph_fleet_suspect_confidence\{/);
}, 90000);
