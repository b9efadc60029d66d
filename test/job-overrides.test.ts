/**
 * Issue 21, item 6: per-job overrides on a real Redis with the ACL users of deploy/redis. The
 * operator API refuses writes without the token, with a wrong one, with a bad body; a rank's Redis
 * user cannot write the key; a good write to any replica is applied by the leader without a
 * restart (switching paused: decisions logged `paused`, nothing prepared); the leader is killed
 * (kill -9) and the replica that takes the job over applies the overrides before its first
 * decision; lifted through the API, the same straggler is switched. Needs `npm run build`.
 */
import Redis from 'ioredis';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StartedDaemon } from '../src/daemon/start-daemon.util';
import { DaemonProcess } from './support/daemon-process';
import { FakeJob, waitFor } from './support/fake-job';
import { jobsApiProblem } from './support/jobs-api-schema';
import { RedisServer } from './support/redis-server';
import { startDaemon, testConfig } from './support/test-daemon';

const TOKEN = 'test-operator-token-0123456789';
let server: RedisServer;
let rank: Redis;
const replicas: DaemonProcess[] = [];

function daemonUrl(db = 0): string {
  return `redis://pipemorph-daemon:daemon-pw-1@127.0.0.1:${server.port}/${db}`;
}

async function put(url: string, jobId: string, body: string, token: string | null = TOKEN): Promise<Response> {
  return fetch(`${url}/jobs/${jobId}/overrides`, { method: 'PUT', body, headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) } });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function json(r: Response): Promise<any> {
  return r.json();
}

async function metric(url: string, series: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line ? Number(line.split(' ')[1]) : 0;
}

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pipemorph-overrides-'));
  const aclPath = join(dir, 'users.acl');
  writeFileSync(aclPath, readFileSync(join(__dirname, '../deploy/redis/pipemorph.acl'), 'utf8').replace('CHANGE-ME-daemon-password', 'daemon-pw-1').replace('CHANGE-ME-rank-password', 'rank-pw-2').replace('CHANGE-ME-operator-password', 'operator-pw-3'));
  server = await RedisServer.start({ extraArgs: ['--aclfile', aclPath] });
  rank = new Redis(`redis://pipemorph-rank:rank-pw-2@127.0.0.1:${server.port}/0`);
  for (const ownerId of ['replica-a', 'replica-b']) {
    const config = testConfig((c) => {
      c.http.operatorToken = TOKEN;
      c.jobs.ownerId = ownerId;
    }, daemonUrl());
    replicas.push(await DaemonProcess.start(config));
  }
  for (const d of replicas) await waitFor('a replica ready', async () => (await d.status('/health/ready')) === 200, 30000, 100);
});

afterAll(async () => {
  for (const d of replicas) await d.stop('SIGKILL');
  rank?.disconnect();
  await server?.stop();
});

it('the operator API is off without a token: 403 with the reason, and the key untouched', async () => {
  let off: StartedDaemon | null = null;
  try {
    // Its own database: it must not lead the other test's job.
    off = await startDaemon(testConfig(undefined, daemonUrl(1)));
    const refused = await put(off.url, 'any-job', '{}');
    expect(refused.status).toBe(403);
    expect((await json(refused)).message).toMatch(/operator API is off: no operator token is configured \(http\.operatorToken/);
    expect((await fetch(`${off.url}/jobs/any-job/overrides`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(403);
    expect(await metric(off.url, 'pipemorph_overrides_total{source="api",result="unauthorized"}')).toBe(2);
  } finally {
    await off?.app.close();
  }
});

it('refuses bad writes, applies a good one on the leader, and keeps it in force across a kill -9 of the leader', async () => {
  const job = new FakeJob(rank, { jobId: 'tuned', stages: 4, microbatches: 8 });
  await job.register();
  const initial = await waitFor('the initial schedule', () => job.committed(), 30000);
  const leaderOf = () => waitFor('the leader', async () => {
    for (const d of replicas) if (d.running && (await d.status(`/jobs/${job.options.jobId}`)) === 200) return d;
    return undefined;
  }, 30000, 100);
  const leader = await leaderOf();
  const other = replicas.find((d) => d !== leader)!;
  for (let k = 0; k < 12; k++) await job.reportIteration();

  // Refused, on the replica that does not lead the job (any replica takes writes), and counted.
  const good = JSON.stringify({ setBy: 'alice', reason: 'link 1 under maintenance', pauseSwitching: true, detection: { leaveAfter: 6 } });
  const anonymous = await put(other.url, job.options.jobId, good, null);
  expect(anonymous.status).toBe(401);
  expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
  expect((await put(other.url, job.options.jobId, good, 'not-the-token-at-all')).status).toBe(401);
  const bad = await put(other.url, job.options.jobId, JSON.stringify({ setBy: 'alice', reason: 'r', detection: { enterAfter: 0, windowSize: 3, baselineWarmup: 500 } }));
  expect(bad.status).toBe(400);
  const badBody = await json(bad);
  expect(badBody.problems).toEqual(['/detection/enterAfter must be >= 1']);
  expect(badBody.message).toMatch(/^invalid overrides: /);
  const merged = await put(other.url, job.options.jobId, JSON.stringify({ setBy: 'alice', reason: 'r', detection: { windowSize: 3, baselineWarmup: 500 } }));
  expect(merged.status).toBe(400);
  expect((await json(merged)).problems.join(' ')).toMatch(/baselineWarmup 500 is unreasonably large/);
  expect((await put(other.url, job.options.jobId, '{"setBy": ')).status).toBe(400);
  expect((await put(other.url, 'no-such-job', good)).status).toBe(404);
  expect(await metric(other.url, 'pipemorph_overrides_total{source="api",result="unauthorized"}')).toBe(2);
  expect(await metric(other.url, 'pipemorph_overrides_total{source="api",result="rejected"}')).toBe(4);
  // A rank's Redis user cannot write the key at all.
  await expect(rank.set(job.keys.overrides, good)).rejects.toThrow(/NOPERM/);
  const view = await json(await fetch(`${other.url}/jobs/${job.options.jobId}/overrides`));
  expect(jobsApiProblem('overrides', view)).toBeNull();
  expect(view).toMatchObject({ leading: false, stored: null, storedProblems: [], inForce: null });

  // The good write: stored with version 1, applied by the leader at its next discovery.
  const written = await put(other.url, job.options.jobId, good);
  expect(written.status).toBe(200);
  expect(await json(written)).toMatchObject({ overrides: { version: 1, setBy: 'alice', pauseSwitching: true }, appliedBy: null });
  const inForce = await waitFor('the leader applying it', async () => {
    const v = await leader.json(`/jobs/${job.options.jobId}/overrides`);
    return v?.inForce?.version === 1 && v;
  }, 15000, 100);
  expect(jobsApiProblem('overrides', inForce)).toBeNull();
  expect(inForce.effective).toMatchObject({ pauseSwitching: true, detection: { leaveAfter: 6, enterAfter: 3 } });
  const detail = await leader.json(`/jobs/${job.options.jobId}`);
  expect(jobsApiProblem('detail', detail)).toBeNull();
  expect(detail.overrides).toEqual({ version: 1, setBy: 'alice', reason: 'link 1 under maintenance', pauseDetection: false, pauseSwitching: true });
  expect((await leader.json('/jobs')).jobs[0].overrides.pauseSwitching).toBe(true);

  // A straggler: decided and logged as paused, never prepared.
  job.extra.set('0:1', 40);
  const paused = await waitFor('a paused decision', async () => {
    await job.reportIteration();
    await job.pollControl();
    const log = await leader.json(`/jobs/${job.options.jobId}/decisions`);
    return log?.decisions.some((d: { kind: string; verdict: string }) => d.kind === 'straggler' && d.verdict === 'paused') && log;
  }, 30000, 30);
  expect(jobsApiProblem('decisions', paused)).toBeNull();
  expect(paused.decisions.filter((d: { kind: string }) => d.kind !== 'initial').every((d: { verdict: string; overrides: boolean }) => d.verdict === 'paused' && d.overrides)).toBe(true);
  expect(paused.overrideChanges).toEqual([expect.objectContaining({ action: 'applied', seen: 'poll', version: 1, setBy: 'alice', reason: 'link 1 under maintenance' })]);

  // The leader dies (kill -9): the other replica takes the job, with the overrides, before its first decision.
  await leader.stop('SIGKILL');
  const taken = await waitFor('the other replica leading and deciding', async () => {
    await job.reportIteration();
    await job.pollControl();
    const log = await other.json(`/jobs/${job.options.jobId}/decisions`);
    return log?.decisions.some((d: { kind: string }) => d.kind === 'straggler') && log;
  }, 40000, 30);
  expect(taken.overrideChanges[0]).toMatchObject({ action: 'applied', seen: 'adoption', version: 1 });
  expect(taken.decisions.every((d: { verdict: string; overrides: boolean }) => d.verdict === 'paused' && d.overrides)).toBe(true);
  for (let k = 0; k < 10; k++) {
    await job.reportIteration();
    await job.pollControl();
  }
  expect(job.events.filter((e) => e.type === 'prepare')).toEqual([]);
  expect((await job.committed())!.version).toBe(initial.version);
  expect((await other.json(`/jobs/${job.options.jobId}/overrides`)).effective.detection.leaveAfter).toBe(6);

  // The twin: lifted through the API (on the new leader: applied at once), the same straggler is switched.
  const lifted = await fetch(`${other.url}/jobs/${job.options.jobId}/overrides?setBy=alice&reason=done`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(lifted.status).toBe(200);
  expect(await json(lifted)).toMatchObject({ cleared: true, appliedBy: (await other.json('/jobs')).replica });
  await waitFor('a committed switch', async () => {
    await job.reportIteration();
    await new Promise((resolve) => setTimeout(resolve, 15));
    await job.pollControl();
    const s = await job.committed();
    return s !== null && s.version > initial.version;
  }, 30000, 0);
  const after = await other.json(`/jobs/${job.options.jobId}/decisions`);
  expect(after.decisions.some((d: { verdict: string; overrides: boolean }) => d.verdict === 'taken' && !d.overrides)).toBe(true);
  expect(after.overrideChanges[after.overrideChanges.length - 1]).toMatchObject({ action: 'cleared', seen: 'api', setBy: 'alice', reason: 'done' });
  expect(await metric(other.url, `pipemorph_overrides_version{job="${job.options.jobId}"}`)).toBe(0);
});
