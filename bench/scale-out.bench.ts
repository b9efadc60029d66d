/**
 * npm run bench:scale-out (issue 23, item 3): replicas sharing jobs on a Redis Cluster.
 *
 * Starts a private Redis Cluster (3 masters, 1 replica each: local redis-servers on free ports, as
 * test/redis-cluster.test.ts does) and daemon processes (dist/src/daemon/main.js, shipped settings:
 * config/default.json with redis.cluster.nodes; leases of 10 s, discovery every 2 s). JOBS emulated
 * jobs of STAGES stages (dp 1: small shapes, so the load generator stays cheap) report one iteration
 * per ITERATION_MS (1 s: a realistic pace) through test/chaos/chaos-ranks.ts, whose ranks each keep
 * their own view of the protocol (control cursor, epoch, schedules held) and answer every prepare;
 * every job turns a 60 ms straggler on for 10 iterations and off for 20 (staggered), so the
 * replicas keep detecting, deciding and running handshakes.
 *
 * Phases (each steady window PIPEMORPH_SCALE_OUT_WINDOW_S, default 40 s): 1 replica; one joins (2);
 * two more join (4); one stops gracefully (SIGTERM: leases released, it leaves the live set at once);
 * one is killed (SIGKILL: its jobs wait for their leases to expire); both left are replaced by one
 * replica without the refinement (control.refinePlanner "none"), measured once more: what the
 * refinement costs at this straggler rate. Per steady window and replica:
 * jobs owned (against the fair share jobs / replicas; goal within 20%), daemon CPU time
 * (/proc/<pid>/stat, utime + stime, worker threads included) per report accepted and per control
 * decision (pipemorph_planning_duration_seconds_count), and the capacity that implies: ranks per
 * replica per core at one report per rank per second (1 core-second / CPU per report, decisions
 * included at this bench's rate). Per move: jobs moved (owner keys read before and after), time until
 * every job is owned and every replica holds its share. At the end, from what the ranks saw
 * (ChaosRanks) and the control streams: handshakes left open (a prepare with no commit or abort of
 * its version), iterations where ranks ran different versions (mixed), versions reused, control
 * writes under a superseded epoch (split brain) as the ranks read them, and the same read off each
 * control stream in order after the run (outOfOrderEpochs).
 *
 * Writes bench/results/scale-out.json, rendered into docs/benchmarks.md (bench/readme-tables.ts).
 */
import Redis, { Cluster } from 'ioredis';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { jobKeys } from '../src/protocol/redis-keys';
import { ChaosRanks } from '../test/chaos/chaos-ranks';
import { clusterConfig, Replica, ReplicaSet } from '../test/support/cluster-daemons';
import { cpuSecondsOf } from '../test/support/proc-stats';
import { DaemonProcess } from '../test/support/daemon-process';
import { RedisCluster } from '../test/support/redis-cluster';
import { startStamp } from '../src/support/results-stamp';

const JOBS = Number(process.env.PIPEMORPH_SCALE_OUT_JOBS ?? 120);
const STAGES = 4;
const ITERATION_MS = 1000;
const WINDOW_S = Number(process.env.PIPEMORPH_SCALE_OUT_WINDOW_S ?? 40);
const STRAGGLER_ON = 10;
const STRAGGLER_PERIOD = 30;
/** Iterations before the first straggler: past the detector's baseline warm-up. */
const QUIET_ITERATIONS = 15;
/** Seconds a fresh replica with no job is watched: its fixed CPU cost (discovery, maintenance, ingest polls). */
const IDLE_S = 10;
/** Seconds after a move before a steady window: adoption, history replay and a new process's JIT are not steady state. */
const SETTLE_S = 10;

/** What to stop if the bench fails half-way: daemons and redis-servers must not outlive it. */
const cleanups: Array<() => Promise<unknown>> = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

async function scrape(d: DaemonProcess): Promise<(name: string, labels?: string) => number> {
  const text = await (await fetch(`${d.url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  return (name, labels = '') => {
    let sum = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith('#') || !line.startsWith(name)) continue;
      const rest = line.slice(name.length);
      if (!(rest.startsWith(' ') || (rest.startsWith('{') && rest.includes(labels)))) continue;
      sum += Number(rest.slice(rest.lastIndexOf(' ') + 1));
    }
    return sum;
  };
}

interface Snapshot {
  cpuS: number;
  reports: number;
  decisions: number;
  owned: number;
  /** Refinements finished (the exact planner on the worker) and their time, queue wait included. */
  refinements: number;
  refinementS: number;
  /** Stream batches read (non-empty XREADGROUP or XAUTOCLAIM replies). */
  batches: number;
}

async function snapshot(r: Replica): Promise<Snapshot> {
  const m = await scrape(r.daemon);
  return { cpuS: cpuSecondsOf(r.daemon.pid!), reports: m('pipemorph_ingest_messages_total', 'type="report",result="accepted"'), decisions: m('pipemorph_planning_duration_seconds_count'), owned: m('pipemorph_jobs_owned'), refinements: m('pipemorph_refinement_duration_seconds_count'), refinementS: m('pipemorph_refinement_duration_seconds_sum'), batches: m('pipemorph_ingest_batches_total') };
}

/** XREADGROUP calls so far on every master (INFO commandstats): the ingest's reads, empty ones included. */
async function xreadgroupCalls(redis: Cluster): Promise<number> {
  const infos = await Promise.all(redis.nodes('master').map((node) => node.info('commandstats')));
  return infos.reduce((sum, info) => sum + Number(/cmdstat_xreadgroup:calls=(\d+)/.exec(info)?.[1] ?? 0), 0);
}

async function main(): Promise<void> {
  const stamp = startStamp();
  const benchCpu0 = process.cpuUsage();
  const cluster = await RedisCluster.start();
  cleanups.push(() => cluster.stop());
  const redis: Cluster = cluster.client();
  const run = Date.now().toString(36);
  const config = clusterConfig(cluster);
  const set = new ReplicaSet(config, 30000, cleanups);
  const replicas = set.replicas;
  const startReplica = (settings = config): Promise<Replica> => set.start(settings);
  const jobIds = Array.from({ length: JOBS }, (_, k) => `so-${run}-${k}`);
  const ranks = jobIds.map((jobId) => new ChaosRanks(redis as unknown as Redis, jobId, STAGES, ITERATION_MS));
  const owners = async (): Promise<Map<string, string | null>> => new Map(await Promise.all(jobIds.map(async (id) => [id, await redis.get(jobKeys(id).owner)] as [string, string | null])));
  const ownedCounts = async () => Promise.all(replicas.map(async (r) => (await scrape(r.daemon))('pipemorph_jobs_owned')));

  // --- 1 replica: its CPU with no job (the fixed cost of a replica), then jobs registered, ranks connected ---
  const first = await startReplica();
  await sleep(3000);
  const idle0 = cpuSecondsOf(first.daemon.pid!);
  const idleWall0 = performance.now();
  await sleep(IDLE_S * 1000);
  const idleCoreFraction = (cpuSecondsOf(first.daemon.pid!) - idle0) / ((performance.now() - idleWall0) / 1000);
  for (const r of ranks) await r.register();
  const t0 = Date.now();
  for (const r of ranks) while (!(await r.connect())) await sleep(100);
  const allScheduledS = (Date.now() - t0) / 1000;
  process.stderr.write(`scale-out: ${JOBS} jobs scheduled in ${allScheduledS.toFixed(1)} s\n`);
  for (const r of ranks) r.start();
  let tick = 0;
  let stragglers = true;
  const toggler = setInterval(() => {
    tick++;
    for (const [k, r] of ranks.entries()) {
      const phase = (r.iteration + Math.round((k * STRAGGLER_PERIOD) / JOBS)) % STRAGGLER_PERIOD;
      if (stragglers && r.iteration >= QUIET_ITERATIONS && phase < STRAGGLER_ON) r.extraMs.set(1, 60);
      else r.extraMs.delete(1);
    }
  }, ITERATION_MS / 4);
  await sleep(QUIET_ITERATIONS * ITERATION_MS + 5000);

  const windows: Array<Record<string, unknown>> = [];
  const measure = async (settings = 'shipped'): Promise<void> => {
    await sleep(SETTLE_S * 1000);
    const before = await Promise.all(replicas.map(snapshot));
    const reads0 = await xreadgroupCalls(redis);
    const bench0 = process.cpuUsage();
    const wall0 = performance.now();
    const samples: number[][] = [];
    for (let s = 0; s < WINDOW_S / 5; s++) {
      await sleep(5000);
      samples.push(await ownedCounts());
    }
    const after = await Promise.all(replicas.map(snapshot));
    const reads = (await xreadgroupCalls(redis)) - reads0;
    const seconds = (performance.now() - wall0) / 1000;
    const bench = process.cpuUsage(bench0);
    const fair = JOBS / replicas.length;
    const per = replicas.map((r, k) => {
      const cpuS = after[k].cpuS - before[k].cpuS;
      const reports = after[k].reports - before[k].reports;
      const decisions = after[k].decisions - before[k].decisions;
      const refinements = after[k].refinements - before[k].refinements;
      const refinementS = after[k].refinementS - before[k].refinementS;
      const batches = after[k].batches - before[k].batches;
      const owned = samples.map((s) => s[k]);
      return {
        replica: r.name, ownedAtEnd: after[k].owned, ownedMin: Math.min(...owned), ownedMax: Math.max(...owned),
        shareOfFair: round(after[k].owned / fair, 3), cpuSeconds: round(cpuS, 2), cpuCoreFraction: round(cpuS / seconds, 3),
        reports, decisions, refinements, refinementMsMean: refinements > 0 ? round((refinementS * 1e3) / refinements) : null, cpuMicrosPerReport: reports > 0 ? Math.round((cpuS * 1e6) / reports) : null, cpuMsPerDecision: decisions > 0 ? round((cpuS * 1e3) / decisions, 2) : null,
        reportsPerBatch: batches > 0 ? round(reports / batches, 2) : null,
      };
    });
    const cpuS = per.reduce((a, p) => a + p.cpuSeconds, 0);
    const reports = per.reduce((a, p) => a + p.reports, 0);
    const decisions = per.reduce((a, p) => a + p.decisions, 0);
    const usPerReport = (cpuS * 1e6) / reports;
    // What is left once every replica's fixed cost (measured with no job) is taken out: the cost that grows with reports.
    const marginalUsPerReport = ((cpuS - idleCoreFraction * seconds * replicas.length) * 1e6) / reports;
    const worst = Math.max(...per.map((p) => Math.abs(p.shareOfFair - 1)));
    const w = {
      replicas: replicas.length, settings, seconds: round(seconds), fairShare: round(fair, 2), perReplica: per,
      worstShareDeviation: round(worst, 3), shareGoalMet: worst <= 0.2 && samples.every((s) => s.every((owned) => Math.abs(owned / fair - 1) <= 0.2)),
      reportsPerSecond: round(reports / seconds), decisionsPerSecond: round(decisions / seconds, 2),
      cpuMicrosPerReport: Math.round(usPerReport), marginalCpuMicrosPerReport: Math.round(marginalUsPerReport), cpuMsPerDecision: decisions > 0 ? round((cpuS * 1e3) / decisions, 2) : null,
      /** Ranks (one report per second each) one replica serves with one core at this decision rate. */
      ranksPerReplicaPerCore: Math.round(1e6 / usPerReport),
      loadGeneratorCpuMicrosPerReport: Math.round((bench.user + bench.system) / reports),
      /** Every replica's stream reads (one XREADGROUP per job stream per ingest pass, empty or not; the load generator reads none). */
      xreadgroupPerSecond: round(reads / seconds), xreadgroupPerReport: round(reads / reports, 2),
      loadAverage1m: round(loadavg()[0], 2),
    };
    windows.push(w);
    process.stderr.write(`scale-out: ${JSON.stringify(w)}\n`);
  };

  const moves: Array<Record<string, unknown>> = [];
  const move = async (what: string, act: () => Promise<void>): Promise<void> => {
    const before = await owners();
    const at = performance.now();
    await act();
    let settledMs: number | null = null;
    for (const deadline = at + 60000; performance.now() < deadline; await sleep(250)) {
      const counts = await ownedCounts();
      const fair = JOBS / replicas.length;
      const all = counts.reduce((a, c) => a + c, 0);
      if (all === JOBS && counts.every((c) => Math.abs(c / fair - 1) <= 0.2) && [...(await owners()).values()].every((o) => o !== null)) {
        settledMs = performance.now() - at;
        break;
      }
    }
    const after = await owners();
    const moved = jobIds.filter((id) => before.get(id) !== after.get(id)).length;
    const m = { what, replicasAfter: replicas.length, jobsMoved: moved, settledMs: settledMs === null ? null : Math.round(settledMs), ownedAfter: await ownedCounts() };
    moves.push(m);
    process.stderr.write(`scale-out: ${JSON.stringify(m)}\n`);
  };

  await measure();
  await move('one replica joins (1 -> 2)', async () => void (await startReplica()));
  await measure();
  await move('two replicas join (2 -> 4)', async () => void (await Promise.all([startReplica(), startReplica()])));
  await measure();
  await move('one replica stops gracefully (SIGTERM, 4 -> 3)', async () => {
    const [r] = replicas.splice(1, 1);
    await r.daemon.stop('SIGTERM');
  });
  await move('one replica is killed (SIGKILL, 3 -> 2)', async () => {
    const [r] = replicas.splice(1, 1);
    await r.daemon.stop('SIGKILL');
  });

  // The same load on one replica without the refinement (control.refinePlanner "none"): how much of a
  // replica's CPU the exact planner's refinement is at this straggler rate (issue 32, item 3).
  const lean: PipemorphConfig = { ...config, control: { ...config.control, refinePlanner: 'none' } };
  await move('both replicas are replaced by one without the refinement (control.refinePlanner "none", 2 -> 1)', async () => {
    const old = replicas.splice(0);
    await Promise.all(old.map((r) => r.daemon.stop('SIGTERM')));
    await startReplica(lean);
  });
  await measure('refinement off (control.refinePlanner "none")');

  // Quiet down: no new stragglers, every handshake has time to finish (prepareTimeoutMs).
  stragglers = false;
  await sleep(config.handshake.prepareTimeoutMs + 5000);
  clearInterval(toggler);
  for (const r of ranks) await r.stop();

  let prepares = 0;
  let unresolved = 0;
  let commits = 0;
  let aborts = 0;
  // The same question as splitBrainWrites, asked of the streams themselves instead of the ranks'
  // reading of them: entries whose epoch is below an earlier entry's, in stream order.
  let outOfOrderEpochs = 0;
  for (const id of jobIds) {
    const entries = (await redis.xrange(jobKeys(id).control, '-', '+')) as Array<[string, string[]]>;
    const open = new Set<number>();
    let highest = 0;
    for (const [, fields] of entries) {
      const e = JSON.parse(fields[1]) as { type: string; version: number; epoch?: number };
      if (typeof e.epoch === 'number') {
        if (e.epoch < highest) outOfOrderEpochs++;
        else highest = e.epoch;
      }
      if (e.type === 'prepare') {
        prepares++;
        open.add(e.version);
      } else if (e.type === 'commit' || e.type === 'abort') {
        if (open.delete(e.version)) (e.type === 'commit' ? commits++ : aborts++);
      }
    }
    unresolved += open.size;
  }
  const integrity = {
    prepares, commits, aborts, handshakesLeftOpen: unresolved,
    mixedIterations: ranks.reduce((a, r) => a + r.mixedIterations(), 0),
    iterationsRun: ranks.reduce((a, r) => a + r.records.length, 0),
    versionsReused: ranks.reduce((a, r) => a + r.reusedVersions(), 0),
    splitBrainWrites: ranks.reduce((a, r) => a + r.staleWrites.size, 0),
    outOfOrderEpochs,
  };
  process.stderr.write(`scale-out: ${JSON.stringify(integrity)}\n`);
  for (const r of replicas) await r.daemon.stop('SIGTERM');
  redis.disconnect();
  await cluster.stop();
  const bench = process.cpuUsage(benchCpu0);

  const result = {
    bench: 'scale-out',
    command: 'npm run bench:scale-out',
    setup: { redis: 'Redis Cluster, 3 masters + 3 replicas (local redis-server 7)', jobs: JOBS, stages: STAGES, dp: 1, ranks: JOBS * STAGES, iterationMs: ITERATION_MS, straggler: `60 ms on link 1 for ${STRAGGLER_ON} of every ${STRAGGLER_PERIOD} iterations, staggered`, stragglerOnIterations: STRAGGLER_ON, stragglerPeriodIterations: STRAGGLER_PERIOD, leaseMs: config.jobs.leaseMs, discoveryIntervalMs: config.jobs.discoveryIntervalMs, windowSeconds: WINDOW_S },
    allScheduledSeconds: round(allScheduledS),
    idleReplicaCoreFraction: round(idleCoreFraction, 4),
    windows,
    moves,
    integrity,
    machine: { cpus: cpus().length, loadAverage: loadavg().map((x) => round(x, 2)), benchCpuSeconds: round((bench.user + bench.system) / 1e6) },
    stamp: stamp(),
  };
  const dir = join(__dirname, '../../bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'scale-out.json'), JSON.stringify(result, null, 2) + '\n');
  console.log(JSON.stringify({ windows: windows.map((w) => ({ replicas: w.replicas, worstShareDeviation: w.worstShareDeviation, cpuMicrosPerReport: w.cpuMicrosPerReport, cpuMsPerDecision: w.cpuMsPerDecision })), moves, integrity }));
}

main().catch(async (error) => {
  console.error(error);
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  process.exit(1);
});
