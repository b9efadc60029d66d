/**
 * npm run bench:detection-real (issue 21, item 7): detection on real rank processes with noise.
 *
 * A real daemon process (dist/src/daemon/main.js, the shipped detection and cost settings) and a real
 * Redis; a 4-stage job of real rank processes (clients/python, `--compute sleep`, iterations of about
 * 150-250 ms) with seeded rank noise: GC-like pauses (2% per rank and iteration, 20-500 ms, a real
 * gc.collect()), dataloader stalls on stage 0 (5%, 50-300 ms) and a 300 ms checkpoint every 50
 * iterations (test/support/real-detection.ts DEFAULT_NOISE).
 *
 * (a) healthy: PIPEMORPH_DETECTION_REAL_S seconds (default 180) of healthy links with the noise:
 *     switches (goal 0), flagged straggler episodes (GET /jobs/:id, polled) and decisions
 *     (GET /jobs/:id/decisions).
 * (b) slow: the same noise, plus 30 ms on pipeline link 1 from iteration PIPEMORPH_DETECTION_REAL_ONSET
 *     (default 40) on, PIPEMORPH_DETECTION_REAL_TRIALS runs (default 5, different noise seeds):
 *     iterations from onset to detection (1 = flagged on the onset's own report; goal: median <= 2)
 *     and to the switch taking effect.
 * Last line: JSON, also written to bench/results/detection-real.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DaemonProcess } from '../test/support/daemon-process';
import { DEFAULT_NOISE, DetectionRunResult, detectionConfig, runDetection } from '../test/support/real-detection';
import { startStamp } from '../src/support/results-stamp';
import { startOwnRedis } from '../src/support/own-redis-server';

/**
 * A redis-server of the bench's own (main starts it): a daemon of another bench or test on a shared
 * Redis would act as a replica and take the job, and neither run's numbers would be its own (issue 30, item 4).
 */
let REDIS_URL = '';
const HEALTHY_S = Number(process.env.PIPEMORPH_DETECTION_REAL_S ?? 180);
const ONSET = Number(process.env.PIPEMORPH_DETECTION_REAL_ONSET ?? 40);
const TRIALS = Number(process.env.PIPEMORPH_DETECTION_REAL_TRIALS ?? 5);
const SLOW_MS = 30;
const LINK = 1;
/** Iterations per second at the profile's ~200 ms, checked against the first run's measured rate. */
const NOMINAL_MS = 200;

function median(xs: number[]): number | null {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function strip(r: DetectionRunResult) {
  const { stderr: _stderr, ...rest } = r;
  return rest;
}

async function main(): Promise<void> {
  const stamp = startStamp();
  const server = await startOwnRedis();
  REDIS_URL = server.url();
  const daemon = await DaemonProcess.start(detectionConfig(REDIS_URL));
  const tag = Date.now().toString(36);
  try {
    for (let t = 0; t < 150 && (await daemon.status('/jobs')) === 0; t++) await new Promise((r) => setTimeout(r, 100));
    const healthyIterations = Math.max(50, Math.round((HEALTHY_S * 1000) / NOMINAL_MS));
    console.log(`(a) healthy links + noise: ${healthyIterations} iterations (~${HEALTHY_S} s) ...`);
    const healthy = await runDetection({ daemon, redisUrl: REDIS_URL, jobId: `detreal-healthy-${tag}`, iterations: healthyIterations, noise: DEFAULT_NOISE, slow: null, timeoutS: 120 });
    const taken = healthy.decisions.filter((d) => d.verdict === 'taken');
    console.log(`    ${healthy.iterations} iterations in ${healthy.wallS.toFixed(0)} s (median ${healthy.medianIterationMs.toFixed(0)} ms); noise ${JSON.stringify(healthy.noiseEvents)}`);
    console.log(`    switches ${healthy.switches.length} (goal 0); flagged episodes ${healthy.flagged.length} ${JSON.stringify(healthy.flagged)}; decisions ${healthy.decisions.length} (taken ${taken.length})`);

    const slow: DetectionRunResult[] = [];
    for (let t = 0; t < TRIALS; t++) {
      const noise = DEFAULT_NOISE.replace('seed=7', `seed=${100 + t}`);
      const r = await runDetection({ daemon, redisUrl: REDIS_URL, jobId: `detreal-slow-${t}-${tag}`, iterations: ONSET + 30, noise, slow: { link: LINK, onset: ONSET, ms: SLOW_MS }, timeoutS: 120 });
      slow.push(r);
      const d = r.detection!;
      console.log(`(b) trial ${t}: ${SLOW_MS} ms on link ${LINK} from iteration ${ONSET}: decided at ${d.decisionIteration} (${d.decisionIterations} iterations), flagged seen at ${d.flaggedIteration} (${d.flaggedIterations}), switch from ${d.switchIteration} (${d.switchIterations} after onset), reason links ${JSON.stringify(d.switchReasonLinks)}; switches before onset ${r.switches.filter((s) => s.iteration < ONSET).length}`);
    }
    const detect = median(slow.map((r) => r.detection!.decisionIterations ?? Infinity));
    const toSwitch = median(slow.map((r) => r.detection!.switchIterations ?? Infinity));
    const summary = {
      healthySwitches: healthy.switches.length,
      healthyFlaggedEpisodes: healthy.flagged.length,
      healthyDecisions: healthy.decisions.length,
      healthyIterations: healthy.iterations,
      healthyWallS: healthy.wallS,
      medianIterationsToDetect: detect,
      medianIterationsToSwitch: toSwitch,
      detectedTrials: slow.filter((r) => r.detection!.decisionIterations !== null).length,
      trials: slow.length,
      goalHealthyZeroSwitches: healthy.switches.length === 0,
      goalDetectWithin2: detect !== null && detect <= 2,
    };
    console.log('');
    console.log(`healthy: ${summary.healthySwitches} switches in ${summary.healthyIterations} noisy iterations (${summary.healthyWallS.toFixed(0)} s): goal 0 ${summary.goalHealthyZeroSwitches ? 'met' : 'MISSED'}; ${summary.healthyFlaggedEpisodes} flagged episodes, ${summary.healthyDecisions} decisions`);
    console.log(`slow link: median ${detect} iterations to detect (goal <= 2: ${summary.goalDetectWithin2 ? 'met' : 'MISSED'}${detect !== null ? `, by ${(2 - detect).toFixed(1)}` : ''}), median ${toSwitch} iterations from onset to the first iteration on the new schedule; detected in ${summary.detectedTrials}/${summary.trials} trials`);
    const json = JSON.stringify({ bench: 'detection-real', compute: 'sleep', noise: DEFAULT_NOISE, slowMs: SLOW_MS, link: LINK, onset: ONSET, summary, healthy: strip(healthy), slow: slow.map(strip), stamp: stamp() });
    mkdirSync(join(__dirname, '..', '..', 'bench', 'results'), { recursive: true });
    writeFileSync(join(__dirname, '..', '..', 'bench', 'results', 'detection-real.json'), `${json}\n`);
    console.log(json);
  } finally {
    await daemon.stop();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
