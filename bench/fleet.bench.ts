/**
 * bench:fleet (issue 31, item 5): the fleet view's localisation on a simulated fleet, on the pure
 * core: 96 nodes in 12 racks, 24 jobs at a time (8 ranks each, 4 stages x dp 2, one node per rank,
 * at most 3 jobs per node), placed at random across racks and replaced as they finish, so nodes are
 * shared between jobs over time. Every job runs the daemon's real detector (JobDetector, shipped
 * thresholds) on link and compute samples with the detection corpus's noise (src/corpus/noise.ts:
 * lognormal link jitter with a Pareto tail, compute jitter, GC pauses, checkpoints); every
 * `fleet.intervalMs` each job's snapshot becomes its evidence (jobFleetEvidence) and the view is
 * computed from all of them (buildFleetView), as every daemon replica does. No Redis and no daemon:
 * the store only carries the same evidence (test/fleet.test.ts shows two replicas agree on it).
 *
 * Faults: one bad NIC (every link of the node +15 ms), one slow rack uplink (every link between the
 * rack and the others +10 ms), one slow GPU (compute x1.4), each arriving and healing. Then the same
 * fleet, healthy but noisy, for PIPEMORPH_BENCH_FLEET_HOURS (default 24: a fleet-day) simulated
 * hours: false suspects per fleet-day.
 *
 *   npm run bench:fleet   (writes bench/results/fleet.json; docs/benchmarks.md renders it)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { startStamp } from '../src/support/results-stamp';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_DETECTOR_CONFIG } from '../src/core/detect/detector-config.type';
import { JobDetector } from '../src/core/detect/job-detector';
import { LinkObservation } from '../src/core/detect/detection.type';
import { DEFAULT_FLEET_CONFIG } from '../src/core/fleet/fleet-config.type';
import { fleetLinkPrior } from '../src/core/fleet/fleet-link-prior';
import { buildFleetView } from '../src/core/fleet/fleet-view';
import { FleetView } from '../src/core/fleet/fleet-view.type';
import { jobFleetEvidence } from '../src/core/fleet/job-fleet-evidence';
import { JobFleetEvidence } from '../src/core/fleet/job-fleet-evidence.type';
import { seededRandom } from '../src/core/planner/seeded-random';
import { NoiseSource } from '../src/corpus/noise';
import { NoiseSpec } from '../src/corpus/corpus.type';

const NODES = 96;
const RACKS = 12;
const PER_RACK = NODES / RACKS;
const JOBS = 24;
const STAGES = 4;
const DP = 2;
const RANKS = STAGES * DP;
const JOBS_PER_NODE = 3;
const ITERATION_S = 2.5;
/** fleet.intervalMs of the shipped config, in iterations of this fleet. */
const INTERVAL_ITERATIONS = Math.round(DEFAULT_FLEET_CONFIG_INTERVAL_MS() / 1000 / ITERATION_S);
const TTL_S = 30;
const PIPELINE_MS = 2;
const DP_MS = 3;
const COMPUTE_MS = { f: 10, b: 12, w: 8 };
/**
 * The registrations' nominal network (optional in the protocol; Megatron-style launchers know their
 * fabric): a 16 MiB send in 1.9 ms, a little optimistic for the pipeline links (2 ms) and more for
 * the rings (3 ms), as registrations are. It lets a job placed on a node whose NIC is already bad
 * judge its first samples; without one, a link slow from its first sample has no healthy level.
 */
const NOMINAL = { latencyMs: 0.1, gbps: 2 ** 24 / 1.8e6 };
const LIFETIME_S = [15 * 60, 45 * 60];
/** The detection corpus's noise (its baseNoise()). */
const NOISE: NoiseSpec[] = [
  { type: 'link-jitter', sigma: 0.1, tailProbability: 0.02, tailScaleMs: 2, tailAlpha: 1.5 },
  { type: 'compute-jitter', sigma: 0.03 },
  { type: 'gc-pause', probability: 0.005, minMs: 20, maxMs: 1500 },
  { type: 'checkpoint', every: 500, durationMs: 8000, linkFactor: 4 },
];

function DEFAULT_FLEET_CONFIG_INTERVAL_MS(): number {
  return 5000; // config/default.json fleet.intervalMs (the core's FleetConfig has only thresholds)
}

const nodeName = (i: number) => `n${String(i).padStart(2, '0')}`;
const rackOf = (i: number) => `r${String(Math.floor(i / PER_RACK)).padStart(2, '0')}`;

interface Fault {
  id: string;
  kind: 'nic' | 'uplink' | 'compute';
  target: number | string;
  extraMs: number;
  fromS: number;
  toS: number;
}

interface Job {
  id: string;
  nodes: number[];
  startS: number;
  endS: number;
  detector: JobDetector;
  noise: NoiseSource;
  iteration: number;
  /** Straggler episodes of the job's detector (any link or rank flagged): start and end times, s. */
  flagged: Array<{ fromS: number; toS: number }>;
}

function pipelineExtra(faults: Fault[], tS: number, a: number, b: number): number {
  let extra = 0;
  for (const f of faults) {
    if (tS < f.fromS || tS >= f.toS) continue;
    if (f.kind === 'nic' && (a === f.target || b === f.target)) extra += f.extraMs;
    if (f.kind === 'uplink' && rackOf(a) !== rackOf(b) && (rackOf(a) === f.target || rackOf(b) === f.target)) extra += f.extraMs;
  }
  return extra;
}

function computeFactor(faults: Fault[], tS: number, node: number): number {
  return faults.reduce((x, f) => (f.kind === 'compute' && f.target === node && tS >= f.fromS && tS < f.toS ? x * f.extraMs : x), 1);
}

/** Whether a job's links or ranks go through the fault. */
function affects(f: Fault, nodes: number[]): boolean {
  if (f.kind === 'uplink') return nodes.some((n) => rackOf(n) === f.target) && nodes.some((n) => rackOf(n) !== f.target);
  return nodes.includes(f.target as number);
}

class Fleet {
  readonly jobs: Job[] = [];
  private readonly load = new Array<number>(NODES).fill(0);
  private readonly random: () => number;
  private next = 0;
  /** Evidence of finished jobs until it expires (fleet.ttlMs). */
  private readonly lingering: Array<{ evidence: JobFleetEvidence; untilS: number }> = [];
  /** Per job id, its nodes and lifetime (for ground truth). */
  readonly history: Array<{ id: string; nodes: number[]; startS: number; endS: number; flagged: Array<{ fromS: number; toS: number }> }> = [];

  constructor(readonly seed: number, readonly faults: Fault[]) {
    this.random = seededRandom(seed);
    for (let k = 0; k < JOBS; k++) this.place(0, true);
  }

  private place(tS: number, initial: boolean): void {
    // Two or three racks, ranks spread over them at random: pipeline and ring links cross racks.
    const racks = new Set<number>();
    const want = this.random() < 0.5 ? 2 : 3;
    while (racks.size < want) racks.add(Math.floor(this.random() * RACKS));
    const free = [...racks].flatMap((r) => Array.from({ length: PER_RACK }, (_, i) => r * PER_RACK + i)).filter((n) => this.load[n] < JOBS_PER_NODE);
    if (free.length < RANKS) return this.place(tS, initial);
    for (let i = free.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      [free[i], free[j]] = [free[j], free[i]];
    }
    const nodes = free.slice(0, RANKS);
    for (const n of nodes) this.load[n]++;
    const life = LIFETIME_S[0] + this.random() * (LIFETIME_S[1] - LIFETIME_S[0]);
    const id = `job-${String(this.next++).padStart(3, '0')}`;
    const ranks = Array.from({ length: RANKS }, (_, rank) => ({ rank, dp: Math.floor(rank / STAGES), pp: rank % STAGES }));
    const job: Job = {
      id,
      nodes,
      startS: tS,
      // The first jobs are part-way through their lives: the fleet is in steady state from the start.
      endS: tS + (initial ? this.random() * life : life),
      detector: new JobDetector({ stages: STAGES, dpSize: DP, ranks }, DEFAULT_DETECTOR_CONFIG, NOMINAL),
      noise: new NoiseSource(NOISE, (this.seed * 7919 + this.next) | 0, ranks.map((r) => r.rank)),
      iteration: 0,
      flagged: [],
    };
    if (this.priorView) job.detector.setFleetPrior(fleetLinkPrior(this.priorView, job.id, this.places(job)));
    this.jobs.push(job);
    this.history.push({ id, nodes, startS: tS, endS: job.endS, flagged: job.flagged });
  }

  /** One iteration of every job at time tS. */
  step(tS: number): void {
    for (let k = this.jobs.length - 1; k >= 0; k--) {
      const job = this.jobs[k];
      if (tS < job.endS) continue;
      this.jobs.splice(k, 1);
      for (const n of job.nodes) this.load[n]--;
      this.lingering.push({ evidence: this.evidenceOf(job, tS), untilS: tS + TTL_S });
      this.place(tS, false);
    }
    for (const job of this.jobs) this.iterate(job, tS);
  }

  private iterate(job: Job, tS: number): void {
    const it = job.iteration++;
    const n = job.noise.iteration(it);
    for (let rank = 0; rank < RANKS; rank++) {
      if (n.silent.has(rank)) continue;
      const dp = Math.floor(rank / STAGES);
      const pp = rank % STAGES;
      const node = job.nodes[rank];
      const warm = n.warmFactor.get(rank) ?? 1;
      const slow = computeFactor(this.faults, tS, node);
      const c = job.noise.computeFactor() * warm * slow;
      const links: LinkObservation[] = [];
      const send = (peer: number, kind: LinkObservation['kind'], baseMs: number) => {
        const ms = (baseMs + pipelineExtra(this.faults, tS, node, job.nodes[peer])) * n.linkFactor * warm;
        const s = job.noise.linkSample(ms);
        const pause = n.pauseMs.get(peer) ?? 0;
        links.push({ peer, kind, bytes: 1 << 24, medianMs: s.medianMs, maxMs: s.maxMs + pause, delegated: false, error: null });
      };
      if (pp + 1 < STAGES) send(dp * STAGES + pp + 1, 'pipeline', PIPELINE_MS);
      if (pp > 0) send(dp * STAGES + pp - 1, 'pipeline', PIPELINE_MS);
      send(((dp + 1) % DP) * STAGES + pp, 'data-parallel', DP_MS);
      job.detector.observe(rank, it, { f: COMPUTE_MS.f * c, b: COMPUTE_MS.b * c, w: COMPUTE_MS.w * c }, links);
    }
    const open = job.flagged.length > 0 && job.flagged[job.flagged.length - 1].toS === Infinity;
    const now = job.detector.activeStragglerCount() > 0;
    if (now && !open) job.flagged.push({ fromS: tS, toS: Infinity });
    if (!now && open) job.flagged[job.flagged.length - 1].toS = tS;
  }

  /** The newest view, once jobs take it as their prior: jobs placed later start with it (JobRegistry.setFleetView). */
  private priorView: FleetView | null = null;

  /** Every running job's detector takes the view as its prior, as FleetService does (fleet.prior). */
  tellPrior(view: FleetView): void {
    this.priorView = view;
    for (const job of this.jobs) job.detector.setFleetPrior(fleetLinkPrior(view, job.id, this.places(job)));
  }

  private places(job: Job): Array<{ rank: number; node: string; locality: string }> {
    return job.nodes.map((node, rank) => ({ rank, node: nodeName(node), locality: rackOf(node) }));
  }

  private evidenceOf(job: Job, tS: number): JobFleetEvidence {
    return jobFleetEvidence(job.id, tS * 1000, this.places(job), job.detector.snapshot(), 512);
  }

  /** What the replicas would read from Redis now. */
  evidence(tS: number): JobFleetEvidence[] {
    for (let k = this.lingering.length - 1; k >= 0; k--) if (this.lingering[k].untilS <= tS) this.lingering.splice(k, 1);
    return [...this.jobs.map((j) => this.evidenceOf(j, tS)), ...this.lingering.map((l) => l.evidence)];
  }
}

interface Tick {
  tS: number;
  suspects: string[];
}

/** `prior`: every job's detector takes each view as its prior (fleet.prior, shipped on). */
function runFleet(seed: number, faults: Fault[], seconds: number, prior: boolean): { ticks: Tick[]; fleet: Fleet; observeMs: number; viewMs: number; computations: number } {
  const fleet = new Fleet(seed, faults);
  const ticks: Tick[] = [];
  let observeMs = 0;
  let viewMs = 0;
  for (let it = 0; it * ITERATION_S < seconds; it++) {
    const tS = it * ITERATION_S;
    const t0 = performance.now();
    fleet.step(tS);
    observeMs += performance.now() - t0;
    if (it % INTERVAL_ITERATIONS !== 0) continue;
    const t1 = performance.now();
    const view = buildFleetView(fleet.evidence(tS), DEFAULT_FLEET_CONFIG);
    viewMs += performance.now() - t1;
    if (prior) fleet.tellPrior(view);
    ticks.push({ tS, suspects: view.suspects.map((s) => s.id) });
  }
  return { ticks, fleet, observeMs, viewMs, computations: ticks.length };
}

/** Episodes: maximal runs of ticks in which a suspect id is named. */
function episodes(ticks: Tick[]): Map<string, Array<{ fromS: number; toS: number }>> {
  const out = new Map<string, Array<{ fromS: number; toS: number }>>();
  const open = new Map<string, number>();
  const step = INTERVAL_ITERATIONS * ITERATION_S;
  for (const t of ticks) {
    const now = new Set(t.suspects);
    for (const id of now) if (!open.has(id)) open.set(id, t.tS);
    for (const [id, from] of [...open]) {
      if (now.has(id)) continue;
      open.delete(id);
      (out.get(id) ?? out.set(id, []).get(id)!).push({ fromS: from, toS: t.tS });
    }
  }
  const last = ticks.length > 0 ? ticks[ticks.length - 1].tS + step : 0;
  for (const [id, from] of open) (out.get(id) ?? out.set(id, []).get(id)!).push({ fromS: from, toS: last });
  return out;
}

type Run = ReturnType<typeof runFleet>;

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[(s.length - 1) >> 1];
}

/**
 * What the fleet prior does to the jobs' own detection (issue 31, step 4). Per culprit and affected
 * job: iterations from when the fault reached the job (its onset, or the job's start on a culprit
 * already active) until the job's detector flagged anything (0 when it already was); split by
 * whether the culprit was already named then (only those can gain from the prior).
 */
function jobDetection(run: Run, faults: Fault[], seconds: number) {
  return faults.map((f) => {
    const named = run.ticks.find((t) => t.tS >= f.fromS && t.tS < f.toS && t.suspects.includes(f.id))?.tS ?? null;
    const rows = run.fleet.history
      .filter((j) => affects(f, j.nodes) && j.startS < Math.min(f.toS, seconds) && j.endS > f.fromS)
      .map((j) => {
        const from = Math.max(j.startS, f.fromS);
        const until = Math.min(f.toS, j.endS, seconds);
        const e = j.flagged.find((x) => x.toS > from && x.fromS < until);
        return { afterNamed: named !== null && from >= named, iterations: e ? Math.max(0, e.fromS - from) / ITERATION_S : null };
      });
    const summary = (list: typeof rows) => {
      const seen = list.filter((r) => r.iterations !== null).map((r) => r.iterations!);
      // first: flagged on the first slow iteration (0 iterations after the fault reached the job).
      return { jobs: list.length, missed: list.length - seen.length, median: median(seen), max: seen.length > 0 ? Math.max(...seen) : null, first: seen.filter((x) => x === 0).length };
    };
    return { id: f.id, all: summary(rows), afterNamed: summary(rows.filter((r) => r.afterNamed)) };
  });
}

/** Straggler episodes a healthy fleet's jobs flagged (no fault: every one is false), per job-day. */
function falseFlags(run: Run, seconds: number) {
  let episodes = 0;
  let jobSeconds = 0;
  for (const j of run.fleet.history) {
    episodes += j.flagged.length;
    jobSeconds += Math.max(0, Math.min(j.endS, seconds) - j.startS);
  }
  return { episodes, jobDays: jobSeconds / 86400, perJobDay: jobSeconds > 0 ? episodes / (jobSeconds / 86400) : null };
}

function main(): void {
  const stamp = startStamp();
  const seed = Number(process.env.PIPEMORPH_BENCH_SEED ?? 31);
  const healthyHours = Number(process.env.PIPEMORPH_BENCH_FLEET_HOURS ?? 24);
  const faultSeconds = 3600;
  const faults: Fault[] = [
    { id: `nic:${nodeName(17)}`, kind: 'nic', target: 17, extraMs: 15, fromS: 600, toS: 2400 },
    { id: 'uplink:r05', kind: 'uplink', target: 'r05', extraMs: 10, fromS: 1200, toS: 3000 },
    { id: `compute:${nodeName(60)}`, kind: 'compute', target: 60, extraMs: 1.4, fromS: 1800, toS: 3000 },
  ];
  // Detectors hold a healed straggler for detection.leaveAfter samples: a culprit named shortly after
  // healing is late, not false. Bounded by two fleet intervals plus that.
  const graceS = 2 * INTERVAL_ITERATIONS * ITERATION_S + DEFAULT_DETECTOR_CONFIG.leaveAfter * ITERATION_S;
  const run = runFleet(seed, faults, faultSeconds, true);
  const runOff = runFleet(seed, faults, faultSeconds, false);
  const culprits = faults.map((f) => {
    // The affected jobs, in the order their reports began to show the fault.
    const since = run.fleet.history.filter((j) => affects(f, j.nodes) && j.startS < f.toS && j.endS > f.fromS).map((j) => Math.max(j.startS, f.fromS)).sort((a, b) => a - b);
    const secondS = since.length >= 2 ? since[1] : null;
    const firstS = since.length >= 1 ? since[0] : null;
    const named = run.ticks.find((t) => t.tS >= f.fromS && t.tS < f.toS && t.suspects.includes(f.id))?.tS ?? null;
    const during = run.ticks.filter((t) => t.tS >= (named ?? f.toS) && t.tS < f.toS);
    const cleared = run.ticks.find((t) => t.tS >= f.toS && !t.suspects.includes(f.id))?.tS ?? null;
    return {
      id: f.id,
      kind: f.kind,
      fault: f.kind === 'compute' ? `x${f.extraMs}` : `+${f.extraMs} ms`,
      fromS: f.fromS,
      toS: f.toS,
      affectedJobs: since.length,
      named: named !== null,
      namedAtS: named,
      afterFirstJobS: named !== null && firstS !== null ? named - firstS : null,
      afterSecondJobS: named !== null && secondS !== null ? named - secondS : null,
      afterSecondJobIterations: named !== null && secondS !== null ? (named - secondS) / ITERATION_S : null,
      heldFraction: during.length > 0 ? during.filter((t) => t.suspects.includes(f.id)).length / during.length : 0,
      clearedAfterS: cleared !== null ? cleared - f.toS : null,
    };
  });
  let correct = 0;
  let late = 0;
  let wrong = 0;
  const falseIds = new Set<string>();
  for (const t of run.ticks) {
    for (const id of t.suspects) {
      const f = faults.find((x) => x.id === id);
      if (f && t.tS >= f.fromS && t.tS < f.toS) correct++;
      else if (f && t.tS >= f.toS && t.tS < f.toS + graceS) late++;
      else {
        wrong++;
        falseIds.add(id);
      }
    }
  }
  const healthySeconds = healthyHours * 3600;
  const healthy = runFleet(seed + 1, [], healthySeconds, true);
  const healthyOff = runFleet(seed + 1, [], healthySeconds, false);
  const prior = {
    detection: { on: jobDetection(run, faults, faultSeconds), off: jobDetection(runOff, faults, faultSeconds) },
    falseFlags: { on: falseFlags(healthy, healthySeconds), off: falseFlags(healthyOff, healthySeconds) },
    offLocalisation: { recall: faults.filter((f) => runOff.ticks.some((t) => t.tS >= f.fromS && t.tS < f.toS && t.suspects.includes(f.id))).length / faults.length },
  };
  const healthyEpisodes = [...episodes(healthy.ticks)].flatMap(([id, list]) => list.map((e) => ({ id, ...e })));
  const result = {
    generatedAt: new Date().toISOString(),
    command: 'npm run bench:fleet',
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version },
    method:
      'Pure core only, no Redis and no daemon: synthetic fleet, the real JobDetector per job on samples with the detection corpus noise, jobFleetEvidence + buildFleetView every fleet interval (docs/fleet.md).',
    fleet: { nodes: NODES, racks: RACKS, jobsAtATime: JOBS, ranksPerJob: RANKS, shape: `${STAGES} stages x dp ${DP}`, jobsPerNodeMax: JOBS_PER_NODE, iterationS: ITERATION_S, intervalS: INTERVAL_ITERATIONS * ITERATION_S, evidenceTtlS: TTL_S, lifetimeMin: LIFETIME_S.map((s) => s / 60), seed },
    noise: NOISE,
    config: DEFAULT_FLEET_CONFIG,
    faults: {
      seconds: faultSeconds,
      jobsRun: run.fleet.history.length,
      computations: run.computations,
      culprits,
      suspectTicks: { correct, lateAfterHealing: late, wrong, graceS },
      precision: correct + wrong > 0 ? correct / (correct + wrong) : null,
      recall: culprits.filter((c) => c.named).length / culprits.length,
      falseSuspects: [...falseIds].sort(),
    },
    healthy: {
      hours: healthyHours,
      jobsRun: healthy.fleet.history.length,
      computations: healthy.computations,
      falseSuspectEpisodes: healthyEpisodes.length,
      falseSuspectsPerFleetDay: (healthyEpisodes.length / healthyHours) * 24,
      episodes: healthyEpisodes.slice(0, 20),
    },
    prior,
    cost: {
      viewMsPerComputation: (run.viewMs + healthy.viewMs) / (run.computations + healthy.computations),
      simulatedIterationsPerSecond: ((faultSeconds + healthySeconds) / ITERATION_S / ((run.observeMs + healthy.observeMs) / 1000)) * JOBS,
    },
    stamp: stamp(),
  };
  const dir = join(__dirname, '..', ...(__dirname.includes(join('dist', 'bench')) ? ['..'] : []), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'fleet.json'), JSON.stringify(result, null, 2) + '\n');
  console.log(JSON.stringify({ prior, culprits, precision: result.faults.precision, recall: result.faults.recall, falseSuspects: result.faults.falseSuspects, healthy: { falseSuspectEpisodes: healthyEpisodes.length, perFleetDay: result.healthy.falseSuspectsPerFleetDay }, cost: result.cost }, null, 1));
}

main();
