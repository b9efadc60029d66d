/**
 * npm run bench:chaos-scale (issue 32, item 1): faults under load. 10,000 emulated ranks in 100
 * jobs (4 stages x dp 25; bench/chaos-scale-ranks.ts: each rank keeps its own protocol view, as the
 * chaos suite's ranks do) report one iteration every ITERATION_MS to a private Redis Cluster (3
 * masters, a replica each) led by REPLICAS daemon processes with the shipped settings (leases of
 * 10 s, discovery every 2 s). Stragglers (60 ms on a pipeline link of dp replica 0, 6-12 iterations)
 * arrive and heal throughout, about one every BACKGROUND_EVERY_S seconds across the fleet.
 *
 * Under that load, one fault at a time, each followed by an observation window:
 *   1. kill -9 of the replica leading the most jobs (about a third); a replacement is started after
 *   2. SIGSTOP of a replica for 15 s, then SIGCONT (its leases expire while it is frozen; it wakes
 *      up with superseded epochs)
 *   3. a Cluster master killed (kill -9), its replica promoted
 *   4. Redis stalled: CLIENT PAUSE 5000 ALL on every master
 *   5. Redis at maxmemory (noeviction): every master refuses writes for 10 s
 *   6. a replica started with a wrong configuration (one Cluster node as redis.url, no cluster
 *      nodes) beside the healthy ones
 * Before the faults, the load alone with the shipped settings (the reference window); after them,
 * the load alone on replicas replaced by ones without the exact planner's refinement
 * (control.refinePlanner "none"), which shows where the control loop's tail comes from.
 * At each fault's start a probe straggler is put on PROBES jobs (those the faulted replica leads
 * when a replica is faulted), none whose schedule already answers the probe's link (last round's
 * "no decision in 90 s" SIGSTOP probes are suspected to be such jobs: a straggler plan kept through
 * the freeze needs no switch). Per fault: iterations whose ranks ran mixed versions, versions reused
 * and control writes under a superseded epoch (read by the ranks, in stream order) in its window;
 * time until every job is led again (owner key set and the live replicas' jobs_owned summing to
 * every job); time until each probe's plan (a schedule naming its link) runs on all its ranks; the
 * control loop (the last report of the iteration the daemon decided on, to its prepare, on Redis's
 * clock) during the fault and in the 30 s after it, and the replicas' own histograms of the control
 * step and its stages (detect, decide, publish) with their largest event-loop delay; daemon CPU per
 * report; the replicas' RSS and Redis's memory. Over the whole run: reports never processed
 * (consumer-group lag and pending after the ranks stop), reports refused by Redis (the ranks skip
 * them, as a rank does), reports a killed master accepted but never replicated.
 *
 * What it leaves out: the ranks are emulated (no compute, links as numbers); the load generator,
 * six redis-servers and the replicas share 2 cores, so absolute latencies are this machine's;
 * iterations are slow (ITERATION_MS, default 4 s) so that the 2 cores keep up with 10,000 ranks.
 *
 * Writes bench/results/chaos-scale.json, rendered into docs/benchmarks.md and docs/faults.md.
 */
import Redis, { Cluster } from 'ioredis';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { jobKeys } from '../src/protocol/redis-keys';
import { startStamp } from '../src/support/results-stamp';
import { clusterConfig, Replica, ReplicaSet } from '../test/support/cluster-daemons';
import { cpuSecondsOf, rssMiBOf } from '../test/support/proc-stats';
import { DaemonProcess } from '../test/support/daemon-process';
import { RedisCluster } from '../test/support/redis-cluster';
import { percentile } from './bench-stats';
import { idMs, JobRanks } from './chaos-scale-ranks';

const JOBS = Number(process.env.PIPEMORPH_CHAOS_SCALE_JOBS ?? 100);
const STAGES = 4;
const DP = Number(process.env.PIPEMORPH_CHAOS_SCALE_DP ?? 25);
const ITERATION_MS = Number(process.env.PIPEMORPH_CHAOS_SCALE_ITERATION_MS ?? 4000);
const REPLICAS = 3;
const STRAGGLER_MS = 60;
/** Seconds between background stragglers across the fleet (on average). */
const BACKGROUND_EVERY_S = 3;
/** Iterations before any straggler: past the detector's baseline warm-up (detection.baselineWarmup 8). */
const QUIET_ITERATIONS = 12;
const PROBES = 3;
/** Seconds watched after a fault ends (the "after" window of the control loop). */
const AFTER_S = 30;
/** A probe's straggler lasts until its plan is in force, at most this long. */
const PROBE_MAX_MS = 90000;
/** The link a probe straggler slows (dp 0, link 1), as a schedule's reason names it. */
const PROBE_LINK = '0:1';

const cleanups: Array<() => Promise<unknown>> = [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
/** Cumulative bucket counts of a histogram series on a /metrics page: le -> count, summed over its label sets with `labels`. */
function buckets(text: string, name: string, labels = ''): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}_bucket{`) || !line.includes(labels)) continue;
    const le = /le="([^"]+)"/.exec(line)![1];
    out.set(le, (out.get(le) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** The p99 of the observations between two scrapes of a histogram, as its bucket's upper bound (ms), and how many. */
function windowP99(before: Map<string, number>, after: Map<string, number>): { n: number; p99UpToMs: number | string | null } {
  const les = [...after.keys()].sort((a, b) => (a === '+Inf' ? 1 : b === '+Inf' ? -1 : Number(a) - Number(b)));
  const n = (after.get('+Inf') ?? 0) - (before.get('+Inf') ?? 0);
  if (n <= 0) return { n: 0, p99UpToMs: null };
  for (const le of les) if ((after.get(le) ?? 0) - (before.get(le) ?? 0) >= 0.99 * n) return { n, p99UpToMs: le === '+Inf' ? `over ${Number(les[les.length - 2]) * 1000}` : Number(le) * 1000 };
  return { n, p99UpToMs: null };
}

interface Probe {
  job: string;
  onsetAt: number;
  versionAtOnset: number;
  inForceAt: number | null;
}

/**
 * One switch's control loop, ms: `total` from the last report of the iteration the owner decided on
 * (its decision log) to the prepare; `step` from the step that decided it (the decision record's
 * time, the daemon's clock) to the prepare. The difference is the wait before that step: a
 * refinement's (the step it triggers), the re-plan interval or an open handshake the decision was
 * deferred behind, a new owner's adoption after a fault.
 */
interface LoopSample {
  total: number;
  step: number;
}

interface FaultRow {
  fault: string;
  /** Seconds the fault lasted (0 for a kill: instantaneous). */
  faultSeconds: number;
  mixedIterations: number;
  versionsReused: number;
  splitBrainWrites: number;
  /** Seconds from the fault's start until every job is led by a live replica (null: never within the window). */
  everyJobLedAfterS: number | null;
  /** Jobs without a live leader at the worst moment of the window. */
  jobsUnledAtWorst: number;
  probesInForce: number;
  probeInForceMedianS: number | null;
  probeInForceMaxS: number | null;
  /** Control loop (ms, Redis's clock) for decisions in the fault, and in the AFTER_S seconds after it. */
  loopDuring: { n: number; p50: number | null; p99: number | null; max: number | null };
  loopAfter: { n: number; p50: number | null; p99: number | null; max: number | null };
  /** The same switches from the step that decided them (its decision record's time) to the prepare: the loop less the wait before the step. */
  stepDuring: { n: number; p50: number | null; p99: number | null; max: number | null };
  stepAfter: { n: number; p50: number | null; p99: number | null; max: number | null };
  reportsRefused: number;
  /** The replicas' CPU (alive at the window's end) per report written in the window, µs, and cores used. */
  daemonCpuMicrosPerReport: number | null;
  daemonCores: number;
  /** Largest event-loop delay of any replica in the window (nodejs_eventloop_lag_max_seconds at every scrape), ms. */
  eventLoopDelayMsMax: number;
  /** The daemons' own view of the control path over the window (histograms of the replicas alive at both ends): count and p99 (bucket upper bound, ms). */
  controlPath: Record<string, { n: number; p99UpToMs: number | string | null }>;
  replicaRssMiBMax: number;
  redisUsedMiBMax: number;
  note: string;
  /** Probes whose plan never ran on every rank within PROBE_MAX_MS: the owner's last decisions. */
  probesMissed: string[];
}

async function main(): Promise<void> {
  const stamp = startStamp();
  const t0 = Date.now();
  const cluster = await RedisCluster.start();
  cleanups.push(() => cluster.stop());
  const redis: Cluster = cluster.client();
  const run = Date.now().toString(36);
  const config = clusterConfig(cluster);

  const set = new ReplicaSet(config, 60000, cleanups);
  const replicas = set.replicas;
  const startReplica = (settings = config): Promise<Replica> => set.start(settings);
  for (let k = 0; k < REPLICAS; k++) await startReplica();

  const jobs = Array.from({ length: JOBS }, (_, k) => new JobRanks(redis, `cs-${run}-${k}`, STAGES, DP, ITERATION_MS, 0));
  const byId = new Map(jobs.map((j) => [j.jobId, j]));
  for (const j of jobs) await j.register();
  const scheduling = Date.now();
  for (const j of jobs) while (!(await j.connect())) await sleep(200);
  const allScheduledS = (Date.now() - scheduling) / 1000;
  process.stderr.write(`chaos-scale: ${JOBS} jobs (${JOBS * STAGES * DP} ranks) scheduled in ${allScheduledS.toFixed(1)} s\n`);

  // --- the load: every job's iteration at its own phase, one step at a time per job ---
  const begun = Date.now();
  jobs.forEach((j, k) => (j.nextAt = begun + Math.floor((k * ITERATION_MS) / JOBS)));
  let running = true;
  let behindMsMax = 0;
  const pump = (async () => {
    while (running) {
      const now = Date.now();
      for (const j of jobs) {
        if (j.busy || j.nextAt > now) continue;
        behindMsMax = Math.max(behindMsMax, now - j.nextAt);
        j.busy = true;
        j.nextAt += ITERATION_MS;
        if (j.nextAt < now) j.nextAt = now + ITERATION_MS; // fell behind: skip, do not burst
        void j.step(now).catch(() => undefined).finally(() => (j.busy = false));
      }
      await sleep(20);
    }
  })();

  // --- background stragglers: one about every BACKGROUND_EVERY_S s, 6-12 iterations each ---
  let rand = 12345;
  const random = () => ((rand = (rand * 1103515245 + 12345) % 2147483648) / 2147483648);
  const probing = new Set<string>();
  const healAt = new Map<string, number>();
  let backgroundEpisodes = 0;
  const background = setInterval(() => {
    const now = Date.now();
    for (const [id, at] of healAt) {
      if (now >= at) {
        byId.get(id)!.slow.clear();
        healAt.delete(id);
      }
    }
    if (random() > 1 / BACKGROUND_EVERY_S) return;
    const free = jobs.filter((j) => j.iteration >= QUIET_ITERATIONS && j.slow.size === 0 && !probing.has(j.jobId));
    if (free.length === 0) return;
    const j = free[Math.floor(random() * free.length)];
    j.slow.set(Math.floor(random() * (STAGES - 1)), STRAGGLER_MS);
    healAt.set(j.jobId, now + (6 + Math.floor(random() * 7)) * ITERATION_MS);
    backgroundEpisodes++;
  }, 1000);

  // --- observation helpers ---
  const live = () => replicas.filter((r) => r.daemon.running && !r.frozen);
  /** Largest event-loop delay any replica's scrape reported since the window began (each scrape resets it). */
  let loopLagMsMax = 0;
  /**
   * A replica's /metrics text ('' when it does not answer). Every scrape goes through here: the
   * event-loop delay max resets at each scrape, so a scrape that did not keep it in loopLagMsMax
   * would lose it.
   */
  const metricsText = async (r: Replica): Promise<string> => {
    const text = await fetch(`${r.daemon.url}/metrics`, { signal: AbortSignal.timeout(3000) }).then((x) => x.text(), () => '');
    const lag = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
    if (lag) loopLagMsMax = Math.max(loopLagMsMax, Number(lag[1]) * 1000);
    return text;
  };
  /** The jobs a replica owns, and those it leads with the epoch it leads each under (pipemorph_job_lease_epoch); none when it does not answer. */
  const scrape = async (r: Replica): Promise<{ owned: number; led: Map<string, number> }> => {
    const text = await metricsText(r);
    const led = new Map<string, number>();
    for (const m of text.matchAll(/^pipemorph_job_lease_epoch\{job="([^"]+)"\} (\d+)$/gm)) led.set(m[1], Number(m[2]));
    return { owned: Number(/^pipemorph_jobs_owned (\S+)$/m.exec(text)?.[1] ?? 0), led };
  };
  const scrapeOwned = async (r: Replica): Promise<number> => (await scrape(r)).owned;
  /** The control path's histograms on every live replica (summed): the control step (detect, plan, decide) and the stages of those that publish. */
  const STAGE_SERIES: Array<[string, string, string]> = [
    ['step', 'pipemorph_planning_duration_seconds', ''],
    ['detect', 'pipemorph_control_stage_seconds', 'stage="detect"'],
    ['decide', 'pipemorph_control_stage_seconds', 'stage="decide"'],
    ['publish', 'pipemorph_control_stage_seconds', 'stage="publish"'],
    // No step waits for a refinement (ControlService.refine): its own time, queue wait included.
    ['refine', 'pipemorph_refinement_duration_seconds', ''],
  ];
  const stageSnapshot = async (): Promise<Map<string, Map<string, number>>> => {
    const out = new Map(STAGE_SERIES.map(([k]) => [k, new Map<string, number>()]));
    for (const r of live()) {
      const text = await metricsText(r);
      for (const [k, name, labels] of STAGE_SERIES) for (const [le, c] of buckets(text, name, labels)) out.get(k)!.set(le, (out.get(k)!.get(le) ?? 0) + c);
    }
    return out;
  };

  /**
   * Jobs with no live leader: a job is led when a live replica leads it under the epoch Redis holds
   * (so neither a replica still holding a job another has taken over, nor a count of jobs owned
   * summed over replicas, where one job led twice would hide another led by none, counts).
   */
  const unled = async (): Promise<number> => {
    const epochs = await Promise.all(jobs.map((j) => redis.get(jobKeys(j.jobId).epoch).catch(() => null)));
    const led = (await Promise.all(live().map(scrape))).map((x) => x.led);
    return jobs.filter((j, k) => epochs[k] === null || !led.some((m) => m.get(j.jobId) === Number(epochs[k]))).length;
  };
  const memory = { replicaRssMiBMax: 0, redisUsedMiBMax: 0 };
  const sampleMemory = async () => {
    for (const r of replicas) if (r.daemon.running) memory.replicaRssMiBMax = Math.max(memory.replicaRssMiBMax, rssMiBOf(r.daemon.pid));
    for (const node of cluster.servers) {
      if (node.pid === undefined) continue;
      const c = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
      c.on('error', () => undefined);
      try {
        await c.connect();
        const m = /used_memory:(\d+)/.exec(await c.info('memory'));
        if (m) memory.redisUsedMiBMax = Math.max(memory.redisUsedMiBMax, round(Number(m[1]) / 2 ** 20));
      } catch {
        // a paused or killed node: sampled again later
      } finally {
        c.disconnect();
      }
    }
  };
  const memoryTimer = setInterval(() => void sampleMemory(), 5000);

  /** Control-loop samples (ms) for prepares read in [from, to): the decision the owner logged for that version, its iteration's last report, the prepare. */
  const loopSamples = async (from: number, to: number): Promise<LoopSample[]> => {
    const out: LoopSample[] = [];
    for (const j of jobs) {
      const prepares = j.prepares.filter((p) => idMs(p.id) >= from && idMs(p.id) < to);
      if (prepares.length === 0) continue;
      let log: { decisions: Array<{ at: number; iteration: number; scheduleVersion: number | null; verdict: string }> } | null = null;
      for (const r of live()) {
        log = await r.daemon.json(`/jobs/${j.jobId}/decisions`);
        if (log) break;
      }
      if (!log) continue;
      for (const p of prepares) {
        const d = log.decisions.find((x) => x.verdict === 'taken' && x.scheduleVersion === p.version);
        const last = d ? j.lastIds[d.iteration] : undefined;
        if (d && last !== undefined) out.push({ total: idMs(p.id) - idMs(last), step: Math.max(0, idMs(p.id) - d.at) });
      }
    }
    return out;
  };
  const summary = (ms: number[]) => ({ n: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms.length > 0 ? Math.max(...ms) : null });

  /** Jobs passed over as probes because the schedule their ranks run already answers the probe's link (a healed straggler not yet recovered from): no switch could be timed there. */
  let probesPassedOver = 0;
  const startProbes = (candidates: JobRanks[]): Probe[] => {
    const idle = candidates.filter((j) => j.slow.size === 0 && !probing.has(j.jobId));
    const free = idle.filter((j) => !j.answers.get(j.agreed)?.has(PROBE_LINK));
    probesPassedOver += idle.length - free.length;
    const chosen: JobRanks[] = [];
    while (chosen.length < PROBES && free.length > 0) chosen.push(free.splice(Math.floor(random() * free.length), 1)[0]);
    const now = Date.now();
    return chosen.map((j) => {
      probing.add(j.jobId);
      healAt.delete(j.jobId);
      j.slow.set(1, STRAGGLER_MS);
      return { job: j.jobId, onsetAt: now, versionAtOnset: j.agreed, inForceAt: null };
    });
  };
  const watchProbes = (probes: Probe[]) => {
    for (const p of probes) {
      const j = byId.get(p.job)!;
      // In force: every rank runs a version newer than at the onset whose schedule names the probe's link (dp 0, link 1) as a straggler it answers.
      if (p.inForceAt === null) p.inForceAt = j.agreedChanges.find((c) => c.version > p.versionAtOnset && j.answers.get(c.version)?.has(PROBE_LINK))?.at ?? null;
      if (p.inForceAt !== null || Date.now() - p.onsetAt > PROBE_MAX_MS) {
        if (probing.delete(p.job)) j.slow.clear();
      }
    }
  };
  /** The jobs `r` leads (GET /jobs), every job if it does not answer. */
  const ownedBy = async (r: Replica): Promise<JobRanks[]> => {
    const led = (await r.daemon.json('/jobs')) as { jobs: Array<{ jobId: string }> } | null;
    const mine = (led?.jobs ?? []).map((x) => byId.get(x.jobId)).filter((j): j is JobRanks => j !== undefined);
    return mine.length > 0 ? mine : jobs;
  };

  const rows: FaultRow[] = [];
  /**
   * Runs one fault: `inject` starts it (returns when it is in place), `heal` ends it (for faults
   * that last); probes are started at the injection; the window runs until every job is led again,
   * every probe is in force (or gave up) and AFTER_S seconds have passed since the heal.
   */
  const fault = async (name: string, target: Replica | null, inject: () => Promise<void>, heal: (() => Promise<void>) | null, lastsMs: number, note = ''): Promise<void> => {
    const mixed0 = jobs.map((j) => j.mixedAt.length);
    const stale0 = jobs.map((j) => j.staleWrites.size);
    const reused0 = jobs.reduce((a, j) => a + j.reusedVersions(), 0);
    const refused0 = jobs.reduce((a, j) => a + j.refused, 0);
    memory.replicaRssMiBMax = 0;
    memory.redisUsedMiBMax = 0;
    loopLagMsMax = 0;
    const candidates = target ? await ownedBy(target) : jobs;
    const cpu0 = new Map(replicas.map((r) => [r, cpuSecondsOf(r.daemon.pid)]));
    const stages0 = await stageSnapshot();
    const written0 = jobs.reduce((a, j) => a + j.written, 0);
    const at = Date.now();
    await inject();
    const probes = startProbes(candidates);
    // Every job led again: the first sample with every job led after the last sample with one unled (0 s when none ever was).
    let ledAgainAt: number | null = null;
    let sawUnled = false;
    let worst = 0;
    let healedAt = lastsMs === 0 ? Date.now() : Number.NaN;
    for (;;) {
      const now = Date.now();
      if (heal && Number.isNaN(healedAt) && now - at >= lastsMs) {
        await heal();
        healedAt = Date.now();
      }
      const u = await unled();
      if (process.env.PIPEMORPH_CHAOS_SCALE_DEBUG) process.stderr.write(`chaos-scale: t+${((Date.now() - at) / 1000).toFixed(1)} s unled ${u}, owned ${(await Promise.all(live().map(scrapeOwned))).join('/')}\n`);
      worst = Math.max(worst, u);
      if (u > 0) {
        sawUnled = true;
        ledAgainAt = null;
      } else if (ledAgainAt === null) ledAgainAt = Date.now();
      watchProbes(probes);
      const probesDone = probes.every((p) => p.inForceAt !== null || now - p.onsetAt > PROBE_MAX_MS);
      if (!Number.isNaN(healedAt) && now - healedAt >= AFTER_S * 1000 && probesDone && (ledAgainAt !== null || now - at > 120000)) break;
      await sleep(500);
    }
    const end = healedAt;
    // Daemon CPU per report written in the window, over the replicas alive at its end (a killed one's CPU is not counted).
    const cpuS = replicas.filter((r) => r.daemon.running).reduce((a, r) => a + cpuSecondsOf(r.daemon.pid) - (cpu0.get(r) ?? 0), 0);
    const reportsInWindow = jobs.reduce((a, j) => a + j.written, 0) - written0;
    const windowS = (Date.now() - at) / 1000;
    const stages1 = await stageSnapshot();
    const controlPath = Object.fromEntries(STAGE_SERIES.map(([k]) => [k, windowP99(stages0.get(k)!, stages1.get(k)!)]));
    const during = await loopSamples(at, end);
    const after = await loopSamples(end, end + AFTER_S * 1000);
    const totals = (samples: LoopSample[]) => samples.map((x) => x.total);
    const steps = (samples: LoopSample[]) => samples.map((x) => x.step);
    const inForce = probes.filter((p) => p.inForceAt !== null).map((p) => (p.inForceAt! - p.onsetAt) / 1000);
    // A probe whose plan never ran: what its owner decided after the onset (its decision log).
    const missed: string[] = [];
    for (const p of probes.filter((x) => x.inForceAt === null)) {
      let log: { decisions: Array<{ iteration: number; verdict: string; reason: string }> } | null = null;
      for (const r of live()) if ((log = await r.daemon.json(`/jobs/${p.job}/decisions`))) break;
      const last = !log ? 'no owner answered' : log.decisions.length === 0 ? 'no decision logged' : log.decisions.slice(-2).map((d) => `${d.verdict} at ${d.iteration}: ${d.reason}`).join(' / ');
      const j = byId.get(p.job)!;
      const control = ((await redis.xrange(j.keys.control, String(p.onsetAt - 1000), '+').catch(() => [])) as Array<[string, string[]]>).map(([, f]) => {
        const e = JSON.parse(f[1]) as { type: string; version: number; epoch: number; effectiveIteration?: number };
        return `${e.type} v${e.version} e${e.epoch}${e.effectiveIteration !== undefined ? ` @${e.effectiveIteration}` : ''}`;
      });
      missed.push(`${p.job} (ranks at iteration ${j.iteration}, running v${j.agreed}): ${last.slice(0, 300)}; control after the onset: ${control.join(', ') || 'nothing'}`);
      if (process.env.PIPEMORPH_CHAOS_SCALE_DEBUG) for (const r of live()) process.stderr.write(`chaos-scale: ${r.name} view of ${p.job}: ${JSON.stringify(await r.daemon.json(`/jobs/${p.job}`))?.slice(0, 2000)}\n`);
    }
    const row: FaultRow = {
      fault: name,
      faultSeconds: round((end - at) / 1000),
      mixedIterations: jobs.reduce((a, j, k) => a + j.mixedAt.length - mixed0[k], 0),
      versionsReused: jobs.reduce((a, j) => a + j.reusedVersions(), 0) - reused0,
      splitBrainWrites: jobs.reduce((a, j, k) => a + j.staleWrites.size - stale0[k], 0),
      everyJobLedAfterS: ledAgainAt === null ? null : sawUnled ? round((ledAgainAt - at) / 1000) : 0,
      jobsUnledAtWorst: worst,
      probesInForce: inForce.length,
      probeInForceMedianS: inForce.length > 0 ? round(percentile(inForce, 50)!) : null,
      probeInForceMaxS: inForce.length > 0 ? round(Math.max(...inForce)) : null,
      loopDuring: summary(totals(during)),
      loopAfter: summary(totals(after)),
      stepDuring: summary(steps(during)),
      stepAfter: summary(steps(after)),
      reportsRefused: jobs.reduce((a, j) => a + j.refused, 0) - refused0,
      daemonCpuMicrosPerReport: reportsInWindow > 0 ? Math.round((cpuS * 1e6) / reportsInWindow) : null,
      daemonCores: round(cpuS / windowS, 2),
      eventLoopDelayMsMax: Math.round(loopLagMsMax),
      controlPath,
      replicaRssMiBMax: memory.replicaRssMiBMax,
      redisUsedMiBMax: memory.redisUsedMiBMax,
      note: `${note}${note ? '; ' : ''}${probes.length} probes`,
      probesMissed: missed,
    };
    rows.push(row);
    process.stderr.write(`chaos-scale: ${JSON.stringify(row)}\n`);
  };

  // --- warm-up: baselines learned, background stragglers flowing, one undisturbed window as the reference ---
  while (jobs.some((j) => j.iteration < QUIET_ITERATIONS + 3)) await sleep(1000);
  await fault('none (reference window under load)', null, async () => undefined, async () => undefined, 15000, 'no fault: the load alone');

  // PIPEMORPH_CHAOS_SCALE_ONLY=kill,sigstop,master,pause,maxmemory,config,norefine (any of them; "reference": the load alone, e.g. to profile
  // the replicas with PIPEMORPH_DAEMON_NODE_ARGS=--cpu-prof). A partial run writes its results beside the full run's.
  const only = process.env.PIPEMORPH_CHAOS_SCALE_ONLY?.split(',');
  const want = (key: string) => !only || only.includes(key);
  /** Connections to the running masters (a killed master is skipped). */
  const masters = async () => {
    const out: Redis[] = [];
    for (const node of cluster.servers) {
      if (node.pid === undefined) continue;
      const c = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      c.on('error', () => undefined);
      if (/role:master/.test(await c.info('replication'))) out.push(c);
      else c.disconnect();
    }
    return out;
  };
  let gone = 0;
  // 1. kill -9 of the replica leading the most jobs
  if (want('kill')) {
    const counts = await Promise.all(replicas.map(scrapeOwned));
    const biggest = replicas[counts.indexOf(Math.max(...counts))];
    let killedLed = 0;
    await fault('kill -9 of the replica leading the most jobs', biggest, async () => {
      killedLed = await scrapeOwned(biggest);
      await biggest.daemon.stop('SIGKILL');
    }, null, 0);
    rows[rows.length - 1].note = `it led ${killedLed} of ${JOBS} jobs; ${rows[rows.length - 1].note}`;
    replicas.splice(replicas.indexOf(biggest), 1);
    await startReplica(); // back to REPLICAS: the fair share moves jobs again
    await sleep(20000);
  }

  // 2. SIGSTOP of a replica for 15 s
  if (want('sigstop')) {
    const frozen = replicas[0];
    await fault('SIGSTOP of a replica for 15 s, then SIGCONT', frozen, async () => {
      frozen.daemon.signal('SIGSTOP');
      frozen.frozen = true;
    }, async () => {
      frozen.daemon.signal('SIGCONT');
      frozen.frozen = false;
    }, 15000);
  }

  // 3. a Cluster master killed, its replica promoted
  if (want('master')) {
    await fault('Redis Cluster master kill -9, its replica promoted', null, async () => {
      for (const j of jobs) j.keepIds = true;
      await sleep(3000);
      const killedAt = Date.now();
      await cluster.killMasterOf(jobs[0].jobId);
      await sleep(2000);
      for (const j of jobs) j.keepIds = false;
      // Reports Redis acknowledged around the kill that the promoted replica does not hold.
      for (const j of jobs) {
        const ids = j.keptIds.filter((w) => Math.abs(w.at - killedAt) < 5000);
        if (ids.length === 0) continue;
        const present = new Set(((await redis.xrange(j.keys.reports, ids[0].id, ids[ids.length - 1].id).catch(() => [])) as Array<[string, string[]]>).map(([id]) => id));
        gone += ids.filter((w) => !present.has(w.id)).length;
        j.keptIds.length = 0;
      }
    }, null, 0);
    rows[rows.length - 1].note = `reports acknowledged by the killed master and never replicated: ${gone}; ${rows[rows.length - 1].note}`;
  }

  // 4. Redis stalled for 5 s
  if (want('pause')) {
    await fault('Redis stalled: CLIENT PAUSE 5000 ALL on every master', null, async () => {
      const ms = await masters();
      await Promise.all(ms.map((c) => c.call('CLIENT', 'PAUSE', '5000', 'ALL')));
      for (const c of ms) c.disconnect();
    }, async () => undefined, 5000);
  }

  // 5. maxmemory: writes refused for 10 s
  if (want('maxmemory')) {
    await fault('Redis at maxmemory (noeviction): writes refused for 10 s', null, async () => {
      const ms = await masters();
      for (const c of ms) {
        const used = Number(/used_memory:(\d+)/.exec(await c.info('memory'))![1]);
        await c.config('SET', 'maxmemory-policy', 'noeviction');
        await c.config('SET', 'maxmemory', String(used));
        c.disconnect();
      }
    }, async () => {
      const ms = await masters();
      for (const c of ms) {
        await c.config('SET', 'maxmemory', '0');
        c.disconnect();
      }
    }, 10000);
  }

  // 6. a replica with a wrong configuration beside the healthy ones
  if (want('config')) {
    let wrong: DaemonProcess | null = null;
    let wrongExit = '';
    await fault('a replica started with a wrong config (one Cluster node as redis.url)', null, async () => {
      const bad = JSON.parse(JSON.stringify(config)) as PipemorphConfig;
      bad.redis.cluster = { nodes: [] };
      const node = cluster.servers.find((x) => x.pid !== undefined)!;
      bad.redis.url = `redis://127.0.0.1:${node.port}`;
      wrong = await DaemonProcess.start(bad);
      cleanups.push(() => wrong!.stop('SIGKILL'));
      const startedAt = Date.now();
      while (wrong.running && Date.now() - startedAt < 20000) await sleep(100);
      const line = wrong.output.split('\n').find((l) => /cluster/i.test(l)) ?? '';
      wrongExit = `${wrong.running ? 'still running after 20 s' : `exited after ${round((Date.now() - startedAt) / 1000)} s`}; said: ${line.replace(/\s+/g, ' ').slice(0, 200)}`;
    }, null, 0);
    rows[rows.length - 1].note = `${wrongExit}; ${rows[rows.length - 1].note}`;
  }


  // 7. Where the control loop's tail comes from: the same load with the exact planner's refinement
  // (control.refinePlanner) off. The replicas are replaced one at a time (SIGTERM: leases released).
  if (want('norefine')) {
    const lean = { ...config, control: { ...config.control, refinePlanner: 'none' as const } };
    for (const old of [...replicas]) {
      await old.daemon.stop('SIGTERM');
      replicas.splice(replicas.indexOf(old), 1);
      await startReplica(lean);
    }
    for (const deadline = Date.now() + 60000; (await unled()) > 0 && Date.now() < deadline; ) await sleep(1000);
    await sleep(20000);
    await fault('none, refinement off (control.refinePlanner "none")', null, async () => undefined, async () => undefined, 15000, 'no fault: the load alone, replicas without the exact planner\'s refinement');
  }

  // --- quiet down and count what was never processed ---
  clearInterval(background);
  for (const j of jobs) j.slow.clear();
  await sleep(config.handshake.prepareTimeoutMs + 2 * ITERATION_MS);
  running = false;
  await pump;
  while (jobs.some((j) => j.busy)) await sleep(50);
  await sleep(5000);
  let unprocessed = 0;
  let unknown = 0;
  for (const j of jobs) {
    const groups = (await redis.xinfo('GROUPS', j.keys.reports).catch(() => [])) as Array<Array<string | number | null>>;
    const g = groups.find((x) => x[x.indexOf('name') + 1] === 'pipemorph');
    if (!g) {
      unknown++;
      continue;
    }
    const lag = g[g.indexOf('lag') + 1];
    if (lag === null) unknown++;
    unprocessed += Number(lag ?? 0) + Number(g[g.indexOf('pending') + 1] ?? 0);
  }
  let outOfOrderEpochs = 0;
  for (const j of jobs) {
    let highest = 0;
    for (const [, fields] of (await redis.xrange(j.keys.control, '-', '+')) as Array<[string, string[]]>) {
      const e = JSON.parse(fields[1]) as { epoch?: number };
      if (typeof e.epoch !== 'number') continue;
      if (e.epoch < highest) outOfOrderEpochs++;
      else highest = e.epoch;
    }
  }
  const cpu = replicas.map((r) => round(cpuSecondsOf(r.daemon.pid), 1));
  for (const r of replicas) await r.daemon.stop('SIGTERM');
  redis.disconnect();
  await cluster.stop();
  clearInterval(memoryTimer);

  const written = jobs.reduce((a, j) => a + j.written, 0);
  const totals = {
    reportsWritten: written,
    reportsRefused: jobs.reduce((a, j) => a + j.refused, 0),
    reportsNeverProcessed: unprocessed,
    jobsWhoseCountIsUnknown: unknown,
    reportsGoneWithMaster: gone,
    mixedIterations: jobs.reduce((a, j) => a + j.mixedAt.length, 0),
    versionsReused: jobs.reduce((a, j) => a + j.reusedVersions(), 0),
    splitBrainWrites: jobs.reduce((a, j) => a + j.staleWrites.size, 0),
    outOfOrderEpochs,
    iterationsRun: jobs.reduce((a, j) => a + j.iteration, 0),
    backgroundStragglers: backgroundEpisodes,
    probesPassedOver,
    loadGeneratorBehindMsMax: behindMsMax,
  };
  const faults = rows.filter((r) => !r.fault.startsWith('none'));
  const goals = {
    allZeros: totals.reportsNeverProcessed === 0 && totals.mixedIterations === 0 && totals.versionsReused === 0 && totals.splitBrainWrites === 0 && totals.outOfOrderEpochs === 0,
    everyJobLedWithin15s: faults.every((r) => r.everyJobLedAfterS !== null && r.everyJobLedAfterS <= 15),
    p99BackUnder20MsWithin30s: faults.every((r) => r.loopAfter.p99 !== null && r.loopAfter.p99 < 20),
    everyProbeInForce: rows.every((r) => r.probesInForce === Number(/(\d+) probes/.exec(r.note)?.[1] ?? 0)),
  };
  const result = {
    bench: 'chaos-scale',
    command: 'npm run bench:chaos-scale',
    setup: {
      redis: 'Redis Cluster, 3 masters + 3 replicas (local redis-server, node timeout 1 s)', replicas: REPLICAS, jobs: JOBS, stages: STAGES, dp: DP, ranks: JOBS * STAGES * DP,
      iterationMs: ITERATION_MS, reportsPerSecond: round((JOBS * STAGES * DP * 1000) / ITERATION_MS), straggler: `${STRAGGLER_MS} ms on a pipeline link of dp 0, 6-12 iterations, one about every ${BACKGROUND_EVERY_S} s`,
      probesPerFault: PROBES, afterWindowS: AFTER_S, leaseMs: config.jobs.leaseMs, discoveryIntervalMs: config.jobs.discoveryIntervalMs,
    },
    allScheduledSeconds: round(allScheduledS),
    rows,
    totals,
    goals,
    replicaCpuSecondsAtEnd: cpu,
    machine: { cpus: cpus().length, loadAverage: loadavg().map((x) => round(x, 2)) },
    elapsedS: round((Date.now() - t0) / 1000),
    stamp: stamp(),
  };
  const dir = join(__dirname, '../../bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, only ? 'chaos-scale-partial.json' : 'chaos-scale.json'), JSON.stringify(result, null, 2) + '\n');
  console.log(JSON.stringify({ totals, goals, rows: rows.map((r) => ({ fault: r.fault, led: r.everyJobLedAfterS, probe: r.probeInForceMaxS, p99after: r.loopAfter.p99 })) }));
}

main().catch(async (error) => {
  console.error(error);
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  process.exit(1);
});
