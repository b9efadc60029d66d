/**
 * Detection on real rank processes with noise (issue 21, item 7), the short version of
 * `npm run bench:detection-real`: a real daemon process with the shipped detection and cost settings
 * (test/support/real-detection.ts: only ingest, discovery and the lead in ms shrunk), a real Redis
 * (database 14 of REDIS_URL) and 4-stage jobs of real rank processes (`--compute sleep`) playing
 * seeded GC-like pauses (a real gc.collect()), dataloader stalls on stage 0, checkpoint iterations and
 * heavy-tailed link jitter (a sender's messages to one peer held tens of ms for one iteration).
 *
 * - Healthy links + noise: no switch, no straggler decision. Not an easy pass: the link tails reach
 *   the detector, and a daemon that trusts one severe sample (detection.severeEnterAfter 1) switches
 *   on the same traffic.
 * - The same noise + 30 ms on pipeline link 1 from iteration ONSET: a straggler switch whose reason
 *   names ranks 1-2, first decided (GET /jobs/:id/decisions records the iteration) within 2
 *   iterations of the onset (1 = on the onset's own report), run by every rank from one iteration on.
 */
import { DaemonProcess } from './support/daemon-process';
import { detectionConfig, runDetection } from './support/real-detection';
import { redisUrlFor } from './support/test-daemon';

const DB_URL = redisUrlFor(14);
/**
 * Heavier than the bench's (more events in few iterations): 5% GC pauses per rank-iteration, 10% stalls, a checkpoint every 15,
 * and a link tail on 10% of (rank, peer, iteration), Pareto(1.2) over 4 ms. Seed 31 draws 5 tails of 39-100 ms, none on
 * consecutive iterations of one link direction (clients/python/pipemorph/noise.py link_tail_ms).
 */
const NOISE = 'seed=31,gc=0.05,gcMinMs=20,gcMaxMs=500,gcCollect=1,stall=0.1,stallMinMs=50,stallMaxMs=300,checkpointEvery=15,checkpointMs=300,linkTail=0.1,linkTailMs=4';
const ONSET = 16;

describe('detection on real rank processes with noise', () => {
  let daemon: DaemonProcess;
  const stamp = `${process.pid}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    daemon = await DaemonProcess.start(detectionConfig(DB_URL));
    for (let t = 0; t < 150 && (await daemon.status('/jobs')) === 0; t++) await new Promise((r) => setTimeout(r, 100));
  }, 30_000);
  afterAll(async () => {
    await daemon?.stop();
  });

  it('healthy links with GC pauses, stalls and checkpoints: no switch', async () => {
    const r = await runDetection({ daemon, redisUrl: DB_URL, jobId: `detreal-healthy-${stamp}`, iterations: 45, noise: NOISE, slow: null });
    expect(r.mixedIterations).toBe(0);
    // The noise was played: pauses, stalls and checkpoints happened.
    expect(r.noiseEvents.gcPauses).toBeGreaterThan(0);
    expect(r.noiseEvents.stalls).toBeGreaterThan(0);
    expect(r.noiseEvents.checkpoints).toBeGreaterThan(0);
    expect(r.noiseEvents.severeLinkTails).toBeGreaterThanOrEqual(3);
    expect(r.switches).toEqual([]);
    expect(r.decisions.filter((d) => d.verdict === 'taken')).toEqual([]);
  }, 60_000);

  it('the twin: a daemon that trusts one severe sample switches on the same healthy traffic', async () => {
    const trusting = await DaemonProcess.start(detectionConfig(redisUrlFor(2), (c) => (c.detection.severeEnterAfter = 1)));
    try {
      for (let t = 0; t < 150 && (await trusting.status('/jobs')) === 0; t++) await new Promise((r) => setTimeout(r, 100));
      const r = await runDetection({ daemon: trusting, redisUrl: redisUrlFor(2), jobId: `detreal-twin-${stamp}`, iterations: 45, noise: NOISE, slow: null });
      expect(r.decisions.filter((d) => d.kind === 'straggler' && d.verdict === 'taken').length).toBeGreaterThan(0);
    } finally {
      await trusting.stop();
    }
  }, 90_000);

  it('the same noise and 30 ms on link 1: a straggler switch naming that link, detected within 2 iterations', async () => {
    const r = await runDetection({ daemon, redisUrl: DB_URL, jobId: `detreal-slow-${stamp}`, iterations: ONSET + 12, noise: NOISE, slow: { link: 1, onset: ONSET, ms: 30 } });
    expect(r.mixedIterations).toBe(0);
    expect(r.switches.filter((s) => s.iteration < ONSET)).toEqual([]);
    const d = r.detection!;
    expect(d.decisionIteration).not.toBeNull();
    expect(d.decisionIterations).toBeLessThanOrEqual(2);
    const decided = r.decisions.find((x) => x.kind === 'straggler' && x.verdict === 'taken');
    expect(decided?.links).toEqual([1]);
    expect(d.switchReasonLinks).toEqual([[1, 2]]);
    expect(d.switchIteration).not.toBeNull();
    expect(d.switchIteration!).toBeGreaterThan(ONSET);
  }, 60_000);
});
