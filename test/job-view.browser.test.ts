/**
 * The job page in a real browser: the daemon against a real Redis, fed by emulated ranks (the
 * paper's 4-stage pipeline, 30 ms on link 2-3 from iteration 5); headless Chromium (Debian's
 * `chromium`, installed by scripts/ensure-chromium.sh) opens GET /jobs/:id/view, takes a
 * screenshot (kept in test-artifacts/, gitignored) and dumps the DOM it rendered, which must show
 * the before/after timeline and the straggler.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stepDelay } from '../src/emulator/delay/step-delay';
import { DEFAULT_EMULATION, EmulatedJob } from '../src/emulator/emulated-job';
import { RankGroup } from '../src/emulator/rank-group';
import { uniform4 } from '../src/emulator/scenarios';
import { chromium as headless } from './browser/headless-chromium';
import { redisUrlFor, startDaemon, testConfig } from './support/test-daemon';

const REDIS_URL = redisUrlFor(8);
const ARTIFACTS = join(__dirname, '..', 'test-artifacts');
const redis = new Redis(REDIS_URL);
let daemon: { app: INestApplication; url: string } | null = null;
let group: RankGroup | null = null;
let profileDir = '';

const chromium = (args: string[]): Promise<string> => headless(profileDir, args);

beforeAll(() => {
  mkdirSync(ARTIFACTS, { recursive: true });
  profileDir = mkdtempSync(join(tmpdir(), 'pipemorph-chromium-'));
});

afterAll(async () => {
  await daemon?.app.close();
  await group?.cleanup();
  await redis.quit();
  rmSync(profileDir, { recursive: true, force: true });
});

describe('job page in headless Chromium', () => {
  it('renders the timeline and the straggler of a running job', async () => {
    daemon = await startDaemon(testConfig((c) => (c.handshake.leadMs = 2000), REDIS_URL));
    const job = new EmulatedJob(`test-view-${process.pid}-${Date.now().toString(36)}`, uniform4(), 1, stepDelay([{ fromIteration: 5, links: [2], delayMs: 30 }]), { ...DEFAULT_EMULATION, seed: 5 });
    group = new RankGroup(redis, job, { lockstep: true, deviceActivations: [8, 8, 8, 8], hostActivations: 64 });
    await group.register();
    await group.connect();
    // Until the ranks run a re-planned version for the straggler, plus a few iterations under it.
    let switchedAt = -1;
    for (let i = 0; i < 80 && (switchedAt < 0 || i < switchedAt + 4); i++) {
      await group.step();
      const v = group.agreedVersion(group.iteration);
      if (switchedAt < 0 && v.reason.kind === 'straggler') switchedAt = group.iteration;
    }
    expect(switchedAt).toBeGreaterThan(5);
    const url = `${daemon.url}/jobs/${job.jobId}/view`;

    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const svg = await fetch(`${daemon.url}/jobs/${job.jobId}/timeline.svg`);
    expect(svg.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect((await svg.text()).match(/<rect class="[FBW]" data-op=/g)).toHaveLength(2 * 4 * 36);
    expect((await fetch(`${daemon.url}/jobs/test-view-nobody/view`)).status).toBe(404);
    expect((await fetch(`${daemon.url}/jobs/test-view-nobody/timeline.svg`)).status).toBe(404);
    expect((await fetch(`${daemon.url}/jobs/${encodeURIComponent('bad id!')}/view`)).status).toBe(400);

    const screenshot = join(ARTIFACTS, 'job-view.png');
    rmSync(screenshot, { force: true });
    await chromium([`--screenshot=${screenshot}`, '--window-size=1400,1250', url]);
    expect(existsSync(screenshot) && statSync(screenshot).size > 10000).toBe(true);

    const dom = await chromium(['--dump-dom', url]);
    // The browser built a document with both timelines: one block per op, before and after.
    expect(dom).toContain(`<span id="job-id">${job.jobId}</span>`);
    const panels = dom.split('<g class="panel"').slice(1);
    expect(panels).toHaveLength(2);
    for (const panel of panels) expect(panel.match(/<rect class="[FBW]" data-op=/g)).toHaveLength(4 * 36);
    expect(dom).toMatch(/before: v1 \(initial/);
    expect(dom).toMatch(/in force: v\d+ \(straggler/);
    // The straggler, in the list and marked in the heat strip, with its messages drawn in the timeline.
    expect(dom).toMatch(/<li class="straggler" data-kind="pipeline">.*dp 0 link 2-3 \(rank 2 → 3\): \+(2\d|3\d)\.\d ms/);
    expect(dom).toMatch(/<g class="heat-row straggler" data-row="\d+">/);
    expect(dom).toContain('<g class="slow-link" data-link="2">');
    expect(dom).toMatch(/<tr class="version in-force" data-version="\d+"><td>v\d+ \(in force\)<\/td><td class="num">\d+<\/td><td>straggler<\/td>/);
  });
});
