/**
 * Detection on real rank processes (issue 21, item 7), shared by test/real-detection.e2e.test.ts and
 * bench/detection-real.bench.ts: a real daemon process (test/support/daemon-process.ts), a real
 * Redis, and a 4-stage job of real rank processes (clients/python, `--compute sleep`) with seeded
 * rank noise (`--noise`: GC-like pauses, dataloader stalls, checkpoints) and, optionally, a slow link
 * from an iteration on. Measures what the daemon flagged (GET /jobs/:id, polled) and decided
 * (GET /jobs/:id/decisions), and what the ranks themselves ran (each rank's record of its version).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PipemorphConfig } from '../../src/daemon/config/pipemorph-config.type';
import { Registration } from '../../src/protocol/protocol-v1.type';
import { DaemonProcess } from './daemon-process';
import { launchRanks, REPOSITORY_ROOT } from './launch-ranks';

export const STAGES = 4;
export const MICROBATCHES = 8;
/** Op times of `--compute sleep`: a 1F1B iteration of about 150-200 ms on the 2-core test box. */
export const PROFILE = { fMs: [6, 6, 6, 6], bMs: [6, 6, 6, 6], wMs: [3, 3, 3, 3] };
/**
 * The noise of every run unless told otherwise: per rank and iteration a 2% chance of a GC-like pause
 * of 20-500 ms (log-uniform, a real gc.collect() of a generated heap), stage 0 stalls 50-300 ms before
 * its first forward in 5% of iterations, and every 50th iteration every rank spends 300 ms on a
 * "checkpoint".
 */
export const DEFAULT_NOISE = 'seed=7,gc=0.02,gcMinMs=20,gcMaxMs=500,gcCollect=1,stall=0.05,stallMinMs=50,stallMaxMs=300,checkpointEvery=50,checkpointMs=300';

/** The shipped configuration (config/default.json) with ingest and discovery fast enough for a short job. */
export function detectionConfig(redisUrl: string, overrides: (c: PipemorphConfig) => void = () => undefined): PipemorphConfig {
  const config = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'config', 'default.json'), 'utf8')) as PipemorphConfig;
  config.redis.url = redisUrl;
  config.ingest.blockMs = 20;
  config.jobs.discoveryIntervalMs = 100;
  // Iterations of ~200 ms: the shipped 2 s lead would be 10 iterations. The lead in iterations stays.
  config.handshake.leadMs = 0;
  overrides(config);
  return config;
}

export function registration(jobId: string): Registration {
  return {
    type: 'register', protocol: 1, jobId, stages: STAGES, microbatches: MICROBATCHES, dp: 1, tp: 1,
    ranks: Array.from({ length: STAGES }, (_, r) => ({ rank: r, dp: 0, pp: r, tp: 0, node: `real-${r}` })),
    memory: { deviceBytes: [4e9, 3e9, 2e9, 1e9], activationBytes: [1e9, 1e9, 1e9, 1e9], hostBytes: 64e9 },
    computeMs: PROFILE,
    network: { nominalGBps: 1000, latencyMs: 0.2 },
  };
}

export interface DetectionRunOptions {
  daemon: DaemonProcess;
  redisUrl: string;
  jobId: string;
  iterations: number;
  noise: string;
  /** 30 ms (or `slowMs`) on pipeline link `link` from iteration `onset` on; null: healthy links. */
  slow: { link: number; onset: number; ms: number } | null;
  timeoutS?: number;
}

export interface FlaggedEpisode {
  /** "link 1" (pipeline link l joins stages l and l+1), "dp 0->1", "rank 2". */
  what: string;
  /** The job's newest iteration when the daemon was first seen flagging it. */
  firstIteration: number;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export interface DetectionRunResult {
  jobId: string;
  noise: string;
  slow: DetectionRunOptions['slow'];
  iterations: number;
  wallS: number;
  medianIterationMs: number;
  mixedIterations: number;
  /**
   * Iterations where a rank played noise, per kind (from the ranks' own logs); `severeLinkTails`:
   * (rank, peer, iteration) whose sends were held a link tail of at least 20 ms (detection.severeExtraMs).
   */
  noiseEvents: { gcPauses: number; stalls: number; checkpoints: number; severeLinkTails: number };
  /** Schedule switches the ranks ran (version changes in their own records), with the iteration. */
  switches: Array<{ iteration: number; version: number }>;
  /** Straggler episodes seen flagged in GET /jobs/:id, polled every 100 ms. */
  flagged: FlaggedEpisode[];
  /** GET /jobs/:id/decisions after the run: every decision but the first plan. */
  decisions: Array<{ iteration: number; firstIteration: number; kind: string; verdict: string; links: number[]; repeats: number; reason: string; scheduleVersion: number | null }>;
  /** With a slow link: iterations from onset to its detection (1 = flagged on the onset's own report), from the decision log and from the poll; to the switch taking effect (first iteration run on the new schedule minus the onset). */
  detection: null | {
    decisionIteration: number | null;
    decisionIterations: number | null;
    flaggedIteration: number | null;
    flaggedIterations: number | null;
    switchIteration: number | null;
    switchIterations: number | null;
    switchReasonLinks: Array<[number, number]>;
  };
  stderr: string;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Runs one job of real ranks against `daemon` and measures what was flagged, decided and run. */
export async function runDetection(o: DetectionRunOptions): Promise<DetectionRunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'pipemorph-real-detection-'));
  writeFileSync(join(dir, 'profile.json'), JSON.stringify(PROFILE));
  writeFileSync(join(dir, 'registration.json'), JSON.stringify(registration(o.jobId)));
  writeFileSync(join(dir, 'delays.txt'), o.slow ? `step:${o.slow.onset}@${o.slow.link}=${o.slow.ms}` : 'none');
  const out = join(dir, 'result.json');
  const started = Date.now();
  const run = launchRanks(['--stages', `${STAGES}`, '--microbatches', `${MICROBATCHES}`, '--iterations', `${o.iterations}`,
    '--compute', 'sleep', '--profile', join(dir, 'profile.json'), '--redis', o.redisUrl, '--job', o.jobId,
    '--register', join(dir, 'registration.json'), '--delays', join(dir, 'delays.txt'), '--noise', o.noise,
    '--timeout-s', `${o.timeoutS ?? 60}`, '--out', out]);

  // Poll the daemon's view while the ranks run: a straggler flag lives for leaveAfter (5) iterations at least.
  const flagged: FlaggedEpisode[] = [];
  const on = new Set<string>();
  let done = false;
  void run.then(() => (done = true));
  while (!done) {
    const job: Json = await o.daemon.json(`/jobs/${o.jobId}`);
    if (job) {
      const now = new Set<string>();
      const s = typeof job.stragglers === 'object' && job.stragglers !== null ? job.stragglers : { pipeline: job.links?.pipeline ?? [], dataParallel: job.links?.dataParallel ?? [], compute: [] };
      for (const l of s.pipeline ?? []) if (l.straggler) now.add(`link ${l.link}`);
      for (const l of s.dataParallel ?? []) if (l.straggler) now.add(`dp ${l.fromRank}->${l.toRank}`);
      for (const r of s.compute ?? []) if (r.straggler) now.add(`rank ${r.rank}`);
      for (const what of now) if (!on.has(what)) flagged.push({ what, firstIteration: job.iteration });
      on.clear();
      for (const what of now) on.add(what);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const { code, stderr } = await run;
  const wallS = (Date.now() - started) / 1000;
  if (code !== 0) throw new Error(`pipemorph.launch exited ${code}: ${stderr.trim()}`);
  const result: Json = JSON.parse(readFileSync(out, 'utf8'));

  const versions: number[] = result.iterations.map((it: Json) => it.versions[0]);
  const switches = versions.flatMap((v, i) => (i > 0 && v !== versions[i - 1] ? [{ iteration: i, version: v }] : []));
  const noiseEvents = { gcPauses: 0, stalls: 0, checkpoints: 0, severeLinkTails: 0 };
  for (const rank of result.ranks) for (const n of rank.noise ?? []) {
    if (n.pauseMs > 0) noiseEvents.gcPauses++;
    if (n.stallMs > 0) noiseEvents.stalls++;
    if (n.checkpointMs > 0 && rank.rank === 0) noiseEvents.checkpoints++;
    noiseEvents.severeLinkTails += Object.values((n.linkTailMs ?? {}) as Record<string, number>).filter((ms) => ms >= 20).length;
  }
  const log: Json = (await o.daemon.json(`/jobs/${o.jobId}/decisions`)) ?? { decisions: [] };
  const decisions: DetectionRunResult['decisions'] = log.decisions
    .filter((d: Json) => d.kind !== 'initial')
    .map((d: Json) => ({ iteration: d.iteration, firstIteration: d.firstIteration, kind: d.kind, verdict: d.verdict,
      links: d.evidence.links.map((l: Json) => l.link), repeats: d.repeats, reason: d.reason, scheduleVersion: d.scheduleVersion }));

  let detection: DetectionRunResult['detection'] = null;
  if (o.slow) {
    const s = o.slow;
    const count = (at: number | null) => (at === null ? null : at - s.onset + 1);
    const decided = decisions.find((d) => d.kind === 'straggler' && d.firstIteration >= s.onset && d.links.includes(s.link));
    const seen = flagged.find((f) => f.what === `link ${s.link}` && f.firstIteration >= s.onset);
    const sw = switches.find((x) => x.iteration >= s.onset);
    const schedule: Json = await o.daemon.json(`/jobs/${o.jobId}`);
    detection = {
      decisionIteration: decided?.firstIteration ?? null,
      decisionIterations: count(decided?.firstIteration ?? null),
      flaggedIteration: seen?.firstIteration ?? null,
      flaggedIterations: count(seen?.firstIteration ?? null),
      switchIteration: sw?.iteration ?? null,
      switchIterations: sw ? sw.iteration - s.onset : null,
      switchReasonLinks: (schedule?.schedule?.reason?.links ?? []).map((l: Json) => [l.fromRank, l.toRank]),
    };
  }
  return {
    jobId: o.jobId, noise: o.noise, slow: o.slow, iterations: result.iterations.length, wallS,
    medianIterationMs: median(result.iterations.slice(1).map((it: Json) => it.ms)),
    mixedIterations: result.mixedIterations.length, noiseEvents, switches, flagged, decisions, detection, stderr,
  };
}
