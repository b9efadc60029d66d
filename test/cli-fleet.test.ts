/**
 * `pipemorph fleet` on the built binary (npm test builds first): the view computed from the
 * evidence in a real Redis (a private redis-server) names the bad NIC with its reason and runbook
 * step, as text and as JSON; --set changes the thresholds as a daemon's config would; from a
 * daemon's URL it prints what GET /fleet answers; bad usage is one line on stderr, exit 2.
 */
import Redis from 'ioredis';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { DEFAULT_FLEET_CONFIG } from '../src/core/fleet/fleet-config.type';
import { buildFleetView } from '../src/core/fleet/fleet-view';
import { JobFleetEvidence } from '../src/core/fleet/job-fleet-evidence.type';
import { FleetStore } from '../src/daemon/fleet/fleet-store';
import { runCli } from './cli/run-cli';
import { expectUserError } from './support/cli-user-error';
import { RedisServer } from './support/redis-server';

let server: RedisServer;
let redis: Redis;
let http: Server;

const run = runCli;

/** Three jobs through node `bad` (slow), each with its own peers, and a fourth on those peers (healthy). */
function fleet(): JobFleetEvidence[] {
  const job = (jobId: string, nodes: string[]): JobFleetEvidence => ({
    jobId,
    at: 1_700_000_000_000,
    localities: {},
    links: nodes.slice(1).map((n, i) => {
      const [a, b] = [nodes[i], n].sort();
      const slow = a === 'bad' || b === 'bad';
      return { a, b, healthy: slow ? 0 : 16, slow: slow ? 16 : 0, extraMs: slow ? 25 : 0 };
    }),
    compute: [],
  });
  return [job('a', ['a1', 'bad', 'a2']), job('b', ['b1', 'bad', 'b2']), job('c', ['c1', 'bad', 'c2']), job('d', ['a1', 'a2', 'b1', 'b2', 'c1', 'c2'])];
}

beforeAll(async () => {
  server = await RedisServer.start();
  redis = new Redis(server.url());
  await new FleetStore(redis).record(fleet(), 600000);
  const body = JSON.stringify({ ...buildFleetView(fleet(), DEFAULT_FLEET_CONFIG), replica: 'r1', enabled: true, computedAt: 1 });
  http = createServer((req, res) => {
    res.writeHead(req.url === '/fleet' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(req.url === '/fleet' ? body : '{}');
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
  await new Promise((resolve) => http?.close(resolve));
});

it('names the bad NIC from the evidence in Redis, with its reason and runbook step', async () => {
  const r = await run('fleet', '--redis', server.url());
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^fleet view from redis:\/\/127\.0\.0\.1:\d+\/0: 4 jobs, 7 nodes/);
  expect(r.stdout).toContain('1. nic:bad  confidence');
  expect(r.stdout).toContain('   node bad: slow on 6 links to 6 different peers in 3 jobs (up to +25.0 ms); its peers are healthy on 5 other links');
  expect(r.stdout).toContain('   -> drain node bad and check its NIC, cable and switch port');
  expect(r.stdout).toMatch(/^bad +- +6\/6 +6 +\+25\.0 ms +- +a, b, c$/m);
  const json = await run('fleet', '--redis', server.url(), '--json');
  expect(JSON.parse(json.stdout).suspects.map((s: { id: string }) => s.id)).toEqual(['nic:bad']);
});

it('twin: with --set fleet.nicMinJobs=4 the same evidence names no NIC', async () => {
  const r = await run('fleet', '--redis', server.url(), '--set', 'fleet.nicMinJobs=4', '--json');
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout).suspects).toEqual([]);
});

it('prints what a daemon serves at GET /fleet', async () => {
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const r = await run('fleet', '--url', url);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain(`fleet view from ${url}: 4 jobs`);
  expect(r.stdout).toContain('1. nic:bad');
});

it('refuses bad usage in one line, exit 2', async () => {
  expectUserError(await run('fleet'), /fleet needs exactly one of --url .* or --redis/);
  expectUserError(await run('fleet', '--url', 'http://127.0.0.1:1', '--redis', server.url()), /exactly one of/);
  expectUserError(await run('fleet', '--url', 'http://127.0.0.1:1', '--set', 'fleet.nicMinJobs=1'), /--config and --set go with --redis/);
  expectUserError(await run('fleet', '--redis', server.url(), '--set', 'fleet.nicMinJobs=0'), /fleet\.nicMinJobs/);
  expectUserError(await run('fleet', '--url', 'http://127.0.0.1:1'), /cannot reach the daemon at http:\/\/127\.0\.0\.1:1/);
  expectUserError(await run('fleet', '--redis', 'redis://127.0.0.1:1'), /cannot read the fleet's evidence from Redis at redis:\/\/127\.0\.0\.1:1/);
});
