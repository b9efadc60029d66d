/**
 * The fleet page in a real browser: a daemon against a real Redis (a private redis-server) reads
 * the fleet's evidence other replicas recorded (written here with FleetStore, as they write it):
 * node `bad`'s NIC slows two jobs whose other links are healthy. Headless Chromium (Debian's
 * `chromium`, installed by scripts/ensure-chromium.sh) opens GET /fleet/view, takes a screenshot
 * (kept in test-artifacts/, gitignored) and dumps the DOM it rendered, which must show the suspect
 * with its evidence, the affected jobs' links and the node outlined in the heat map; healed, no
 * suspect and nothing outlined.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { JobFleetEvidence } from '../src/core/fleet/job-fleet-evidence.type';
import { FleetService } from '../src/daemon/fleet/fleet.service';
import { FleetStore } from '../src/daemon/fleet/fleet-store';
import { StartedDaemon } from '../src/daemon/start-daemon.util';
import { chromium as headless } from './browser/headless-chromium';
import { waitFor } from './support/fake-job';
import { RedisServer } from './support/redis-server';
import { startDaemon, testConfig } from './support/test-daemon';

const ARTIFACTS = join(__dirname, '..', 'test-artifacts');
let server: RedisServer;
let redis: Redis;
let daemon: StartedDaemon | null = null;
let profileDir = '';

const chromium = (args: string[]): Promise<string> => headless(profileDir, args);

/** A job's evidence along `nodes`; links touching `bad` slow. Racks: a* and bad in rack-a, b* in rack-b. */
function job(jobId: string, nodes: string[], bad: string | null): JobFleetEvidence {
  return {
    jobId,
    at: Date.now(),
    localities: Object.fromEntries(nodes.map((n) => [n, n.startsWith('b') && n !== 'bad' ? 'rack-b' : 'rack-a'])),
    links: nodes.slice(1).map((n, i) => {
      const [a, b] = [nodes[i], n].sort();
      const slow = a === bad || b === bad;
      return { a, b, healthy: slow ? 0 : 16, slow: slow ? 16 : 0, extraMs: slow ? 18 : 0 };
    }),
    compute: [],
  };
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  profileDir = mkdtempSync(join(tmpdir(), 'pipemorph-chromium-'));
  server = await RedisServer.start();
  redis = new Redis(server.url());
});

afterAll(async () => {
  await daemon?.app.close();
  redis?.disconnect();
  await server?.stop();
  rmSync(profileDir, { recursive: true, force: true });
});

it('shows the suspect, its jobs and the node in the heat map, and nothing once healed', async () => {
  const store = new FleetStore(redis);
  await store.record([job('train-a', ['a1', 'bad', 'b1'], 'bad'), job('train-b', ['a2', 'bad', 'b2'], 'bad'), job('train-c', ['a1', 'a2', 'b1', 'b2'], null)], 600000);
  daemon = await startDaemon(testConfig((c) => (c.fleet.intervalMs = 200), server.url()));
  const fleet = daemon.app.get(FleetService);
  await waitFor('the daemon names the NIC', async () => fleet.view.suspects.length > 0, 10000, 50);
  const url = `${daemon.url}/fleet/view`;
  const page = await fetch(url);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);

  const screenshot = join(ARTIFACTS, 'fleet-view.png');
  rmSync(screenshot, { force: true });
  await chromium([`--screenshot=${screenshot}`, '--window-size=1400,800', url]);
  expect(existsSync(screenshot) && statSync(screenshot).size > 5000).toBe(true);

  const dom = await chromium(['--dump-dom', url]);
  expect(dom).toContain('<span id="suspect-count">1 suspect</span>');
  expect(dom).toMatch(/<tr class="suspect" data-id="nic:bad">.*node bad: slow on 4 links to 4 different peers in 2 jobs \(up to \+18\.0 ms\)/);
  expect(dom).toContain('drain node bad and check its NIC, cable and switch port');
  expect(dom).toContain('<a href="../jobs/train-a/view">train-a</a>, <a href="../jobs/train-b/view">train-b</a>');
  expect(dom).toMatch(/<div class="node suspect" data-node="bad" style="background: ?hsl\(0,? ?70%,? ?50%\)/);
  expect(dom.match(/class="node"/g)).toHaveLength(4);

  // Healed: the same jobs report every link healthy.
  await store.record([job('train-a', ['a1', 'bad', 'b1'], null), job('train-b', ['a2', 'bad', 'b2'], null), job('train-c', ['a1', 'a2', 'b1', 'b2'], null)], 600000);
  await waitFor('the suspect cleared', async () => fleet.view.suspects.length === 0, 10000, 50);
  const healed = await chromium(['--dump-dom', url]);
  expect(healed).toContain('<span id="suspect-count">0 suspects</span>');
  expect(healed).not.toContain('node suspect');
}, 120000);
