/**
 * npm run bench:outside (issue 29): decisions on noise families the detection corpus (src/corpus)
 * does not have, through the daemon's own control loop (ReplayJob, shipped configuration, planner
 * and gate; refinement off for speed). Ranks are written here from docs/protocol.md: each
 * direction's per-iteration median is lognormal around its healthy time (sigma per family), with
 * the family's extras (bursts, GC pauses on a random rank, checkpoint stalls on every link, a slow
 * drift of the whole fabric, compute noise, missing reports); registrations declare 24 layers and
 * a ring nominal 50x optimistic; compute follows the split in force (closed loop for re-balances).
 *
 * Per family and seed: a healthy job for ITERATIONS iterations (false switches, re-maps and
 * re-balances), a +30 ms pipeline link from iteration 600 for 150 (plan in force from onset, back
 * to the initial plan after healing), a +30 ms ring link (re-map in force from onset) and a rank
 * 1.5x slower (re-balance in force from onset, and how many switches it took: one is the goal).
 *
 * Which families are evidence: the "found" ones found this round's fixes (a baseline that sank
 * under noisy medians, a nominal 50x off judged before peers, three bad samples taken for a
 * straggler on noisy fabric, a slow rank read in the noise of its window, a link's noise floor):
 * they are now a corpus the code was changed against. The "held out" families were written after
 * those fixes and are reported whatever they show; no change was made for them. Writes bench/results/outside-sweep.json; docs/benchmarks.md renders it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlDecision } from '../src/core/control/control-decision.type';
import { seededRandom } from '../src/core/planner/seeded-random';
import { loadConfig } from '../src/daemon/config/load-config';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { RankReport, Registration } from '../src/protocol/protocol-v1.type';
import { driveRanks, OutsideRanks } from '../src/replay/drive-ranks.fixture';
import { startStamp } from '../src/support/results-stamp';

const ROOT = join(__dirname, '..', ...(__dirname.includes('dist') ? ['..'] : []));
const ITERATIONS = Number(process.env.PIPEMORPH_OUTSIDE_ITERATIONS ?? 2500);
const SEEDS = [1, 2, 3];
const ONSET = 600;
const HEAL_AFTER = 150;
const MS_PER_ITERATION = 900;

interface Noise {
  /** Lognormal sigma of every direction's per-iteration median. */
  sigma: number;
  burstP?: number;
  burstMs?: number;
  gcP?: number;
  gcFactor?: number;
  ckptEvery?: number;
  ckptFactor?: number;
  drift?: number;
  driftPeriod?: number;
  computeSigma?: number;
  missP?: number;
  /** Heavier-tailed medians: a Student-t-like excess (scale ms, degrees of freedom). */
  tScaleMs?: number;
  tDof?: number;
  /** A gamma(2) excess of this scale, ms (the sum of two exponentials). */
  gammaScaleMs?: number;
}

interface Family {
  name: string;
  kind: 'found' | 'held out';
  noise: Noise;
  stages: number;
  dp: number;
}

export const FAMILIES: Family[] = [
  { name: 'lognormal 0.3', kind: 'found', noise: { sigma: 0.3 }, stages: 4, dp: 2 },
  { name: 'lognormal 0.6', kind: 'found', noise: { sigma: 0.6 }, stages: 4, dp: 2 },
  { name: 'bursts 15 ms, 1%', kind: 'found', noise: { sigma: 0.15, burstP: 0.01, burstMs: 15 }, stages: 4, dp: 2 },
  { name: 'bursts 40 ms, 0.3%', kind: 'found', noise: { sigma: 0.15, burstP: 0.003, burstMs: 40 }, stages: 4, dp: 2 },
  { name: 'GC pauses x20, 3%', kind: 'found', noise: { sigma: 0.15, gcP: 0.03, gcFactor: 20 }, stages: 4, dp: 2 },
  { name: 'checkpoint x8 every 50', kind: 'found', noise: { sigma: 0.15, ckptEvery: 50, ckptFactor: 8 }, stages: 4, dp: 2 },
  { name: 'fabric drift +-40%', kind: 'found', noise: { sigma: 0.2, drift: 0.4, driftPeriod: 700 }, stages: 4, dp: 2 },
  { name: 'compute noise 25%', kind: 'found', noise: { sigma: 0.15, computeSigma: 0.25 }, stages: 4, dp: 2 },
  { name: '5% reports missing', kind: 'found', noise: { sigma: 0.3, missP: 0.05 }, stages: 4, dp: 2 },
  { name: 'everything at once', kind: 'found', noise: { sigma: 0.4, burstP: 0.005, burstMs: 25, gcP: 0.02, gcFactor: 15, ckptEvery: 80, ckptFactor: 6 }, stages: 4, dp: 2 },
  // Held out first, then they found the link noise floor (PipelineLinkTracker.noiseFloorMs): found now.
  { name: 'lognormal 0.45, 8 x 4', kind: 'found', noise: { sigma: 0.45 }, stages: 8, dp: 4 },
  { name: 'bursts 25 ms 0.5% + compute 15%, 8 x 4', kind: 'found', noise: { sigma: 0.2, burstP: 0.005, burstMs: 25, computeSigma: 0.15 }, stages: 8, dp: 4 },
  // Held out next, then they found the ring nominal's calibration and remap.minGain 2%: found now.
  { name: 'gamma(2) excess 1 ms, 6 x 3', kind: 'found', noise: { sigma: 0.05, gammaScaleMs: 1 }, stages: 6, dp: 3 },
  { name: 'lognormal 0.35 + 3% missing + checkpoint x5 every 120, 12 x 2', kind: 'found', noise: { sigma: 0.35, missP: 0.03, ckptEvery: 120, ckptFactor: 5 }, stages: 12, dp: 2 },
  { name: 'congestion waves +-30% every 50 + bursts 10 ms 2%, 4 x 4', kind: 'found', noise: { sigma: 0.2, drift: 0.3, driftPeriod: 50, burstP: 0.02, burstMs: 10 }, stages: 4, dp: 4 },
  // Written after the fixes above and reported as they came: no change was made for them.
  { name: 'Student-t(2) excess, 0.5 ms', kind: 'held out', noise: { sigma: 0.1, tScaleMs: 0.5, tDof: 2 }, stages: 4, dp: 2 },
  { name: 'drift +-60% + GC x10 5%', kind: 'held out', noise: { sigma: 0.25, drift: 0.6, driftPeriod: 300, gcP: 0.05, gcFactor: 10 }, stages: 4, dp: 2 },
  // Written last, before the final measurement, and run only in it.
  { name: 'Student-t(3) excess 1 ms + 2% missing, 8 x 2', kind: 'held out', noise: { sigma: 0.1, tScaleMs: 1, tDof: 3, missP: 0.02 }, stages: 8, dp: 2 },
  { name: 'gamma(2) 0.5 ms + checkpoint x10 every 30, 4 x 8', kind: 'held out', noise: { sigma: 0.1, gammaScaleMs: 0.5, ckptEvery: 30, ckptFactor: 10 }, stages: 4, dp: 8 },
  // Held out until it found the ring noise floor (a false re-map at iteration 347, seed 3): found now.
  { name: 'lognormal 0.5 + drift +-50% every 1000 + GC x30 1%, 6 x 2', kind: 'found', noise: { sigma: 0.5, drift: 0.5, driftPeriod: 1000, gcP: 0.01, gcFactor: 30 }, stages: 6, dp: 2 },
];

type Extra = {
  pipe: (t: number, dp: number, link: number) => number;
  ring: (t: number, from: number, to: number) => number;
  compute: (t: number, rank: number) => number;
};
export const NONE: Extra = { pipe: () => 0, ring: () => 0, compute: () => 1 };

export class SweepRanks implements OutsideRanks {
  private readonly random: () => number;
  private perStage: number[];
  private readonly layersPerStage = 6;

  constructor(
    private readonly family: Family,
    seed: number,
    private readonly extra: Extra,
  ) {
    this.random = seededRandom(seed * 7919 + 13);
    this.perStage = new Array(family.stages).fill(this.layersPerStage);
  }

  registration(): Registration {
    const S = this.family.stages;
    const D = this.family.dp;
    const L = S * this.layersPerStage;
    return {
      type: 'register',
      protocol: 1,
      jobId: `sweep-${this.family.name}`,
      stages: S,
      microbatches: 3 * S,
      dp: D,
      tp: 1,
      ranks: Array.from({ length: S * D }, (_, rank) => ({ rank, dp: Math.floor(rank / S), pp: rank % S, tp: 0, node: `n${rank}` })),
      memory: { deviceBytes: new Array(S).fill(8 * 2 ** 26), activationBytes: new Array(S).fill(2 ** 26), hostBytes: 1e12 },
      computeMs: { fMs: new Array(S).fill(12), bMs: new Array(S).fill(12), wMs: new Array(S).fill(8) },
      network: { latencyMs: 1, nominalGBps: 1e6 },
      dataParallel: { gradientBytes: new Array(S).fill(2 ** 28), chunkBytes: 2 ** 22, gbps: 50, latencyMs: 0.01, inflightChunks: 8 },
      layers: { fMs: new Array(L).fill(2), bMs: new Array(L).fill(2), wMs: new Array(L).fill(4 / 3), stateBytes: new Array(L).fill(1e7), activationBytes: new Array(L).fill(1e6), perStage: new Array(S).fill(this.layersPerStage) },
    } as Registration;
  }

  switchedTo(decision: ControlDecision): void {
    if (decision.layers) this.perStage = [...decision.layers.perStage];
  }

  private gauss(): number {
    return Math.sqrt(-2 * Math.log(1 - this.random())) * Math.cos(2 * Math.PI * this.random());
  }

  reports(t: number, version: number): RankReport[] {
    const { stages: S, dp: D, noise: n } = this.family;
    const stall = n.ckptEvery && t % n.ckptEvery === 0 ? n.ckptFactor! : 1;
    const gcRank = n.gcP && this.random() < n.gcP ? Math.floor(this.random() * S * D) : -1;
    const drift = n.drift ? 1 + n.drift * Math.sin((2 * Math.PI * t) / n.driftPeriod!) : 1;
    const link = (base: number) => {
      let ms = base * drift * Math.exp(n.sigma * this.gauss());
      if (n.burstP && this.random() < n.burstP) ms += n.burstMs! * (0.5 + this.random());
      if (n.tScaleMs) {
        // |t| with tDof degrees of freedom: a normal over the root of a chi-square's mean.
        let chi = 0;
        for (let k = 0; k < n.tDof!; k++) chi += this.gauss() ** 2;
        ms += n.tScaleMs * Math.abs(this.gauss() / Math.sqrt(chi / n.tDof!));
      }
      if (n.gammaScaleMs) ms += n.gammaScaleMs * (-Math.log(1 - this.random()) - Math.log(1 - this.random()));
      return ms * stall;
    };
    const out: RankReport[] = [];
    for (let rank = 0; rank < S * D; rank++) {
      const d = Math.floor(rank / S);
      const p = rank % S;
      const links: RankReport['links'] = [];
      if (p + 1 < S) {
        const ms = link(2.3) + this.extra.pipe(t, d, p);
        links.push({ peer: rank + 1, kind: 'pipeline', bytes: 2 ** 24, medianMs: ms, maxMs: ms * 2, delegated: false, error: null });
      }
      if (p > 0) {
        const ms = link(2.3) + this.extra.pipe(t, d, p - 1);
        links.push({ peer: rank - 1, kind: 'pipeline', bytes: 2 ** 24, medianMs: ms, maxMs: ms * 2, delegated: false, error: null });
      }
      if (D > 1) {
        const peer = ((d + 1) % D) * S + p;
        const ms = link(5) + this.extra.ring(t, rank, peer);
        links.push({ peer, kind: 'data-parallel', bytes: 2 ** 22, medianMs: ms, maxMs: ms * 2, delegated: false, error: null });
      }
      const gc = rank === gcRank ? n.gcFactor! : 1;
      const f = 2 * this.perStage[p] * Math.exp((n.computeSigma ?? 0.05) * this.gauss()) * gc * this.extra.compute(t, rank);
      if (n.missP && this.random() < n.missP) continue;
      out.push({ type: 'report', protocol: 1, jobId: `sweep-${this.family.name}`, rank, iteration: t, scheduleVersion: version, iterationMs: MS_PER_ITERATION, computeMs: { f, b: f, w: (f * 2) / 3 }, links });
    }
    return out;
  }
}

interface SeedResult {
  seed: number;
  healthy: { switches: number; remaps: number; rebalances: number; first: string[] };
  pipelineInForce: number | null;
  backAfterHealing: number | null;
  ringInForce: number | null;
  computeInForce: number | null;
  /** Switches of any kind taken from onset to the run's end for the 1.5x rank (one re-balance is the goal: more is churn). */
  computeSwitches: number;
}

function runSeed(family: Family, seed: number, config: PipemorphConfig): SeedResult {
  const after = (kind: string, run: ReturnType<typeof driveRanks>, from: number) => run.switches.find((s) => s.decision.kind === kind && s.record.iteration >= from);
  const healthy = driveRanks(new SweepRanks(family, seed, NONE), ITERATIONS, config, MS_PER_ITERATION).switches.filter((s) => s.decision.kind !== 'initial');
  const pipe = driveRanks(new SweepRanks(family, seed + 100, { ...NONE, pipe: (t, d, l) => (d === 0 && l === 1 && t >= ONSET && t < ONSET + HEAL_AFTER ? 30 : 0) }), ONSET + HEAL_AFTER + 60, config, MS_PER_ITERATION);
  const ring = driveRanks(new SweepRanks(family, seed + 200, { ...NONE, ring: (t, a, b) => (a === 1 && b === family.stages + 1 && t >= ONSET ? 30 : 0) }), ONSET + 60, config, MS_PER_ITERATION);
  const slow = driveRanks(new SweepRanks(family, seed + 300, { ...NONE, compute: (t, r) => (r === 2 && t >= ONSET ? 1.5 : 1) }), ONSET + 60, config, MS_PER_ITERATION);
  const inForce = (s: { effectiveIteration: number } | undefined, from: number) => (s ? s.effectiveIteration - from : null);
  return {
    seed,
    healthy: {
      switches: healthy.filter((s) => s.decision.kind === 'straggler' || s.decision.kind === 'nic-failure').length,
      remaps: healthy.filter((s) => s.decision.kind === 'remap').length,
      rebalances: healthy.filter((s) => s.decision.kind === 'rebalance').length,
      first: healthy.slice(0, 3).map((s) => `${s.decision.kind}@${s.record.iteration}: ${s.record.reason.slice(0, 120)}`),
    },
    pipelineInForce: inForce(after('straggler', pipe, ONSET), ONSET),
    backAfterHealing: inForce(after('recovery', pipe, ONSET + HEAL_AFTER), ONSET + HEAL_AFTER),
    ringInForce: inForce(after('remap', ring, ONSET), ONSET),
    computeInForce: inForce(after('rebalance', slow, ONSET), ONSET),
    computeSwitches: slow.switches.filter((s) => s.record.iteration >= ONSET).length,
  };
}

function main(): void {
  const stamp = startStamp();
  const c = loadConfig(process.env);
  const config: PipemorphConfig = { ...c, control: { ...c.control, refinePlanner: 'none' } };
  const started = Date.now();
  const families = FAMILIES.map((family) => {
    const seeds = SEEDS.map((seed) => runSeed(family, seed, config));
    process.stderr.write(`${family.name}: ${JSON.stringify(seeds.map((s) => [s.healthy.switches, s.healthy.remaps, s.healthy.rebalances, s.pipelineInForce, s.backAfterHealing, s.ringInForce, s.computeInForce, s.computeSwitches]))}\n`);
    return { name: family.name, kind: family.kind, stages: family.stages, dp: family.dp, noise: family.noise, seeds };
  });
  const result = {
    bench: 'outside-sweep',
    iterations: ITERATIONS,
    seeds: SEEDS,
    onset: ONSET,
    healAfter: HEAL_AFTER,
    msPerIteration: MS_PER_ITERATION,
    families,
    elapsedMs: Date.now() - started,
    stamp: stamp(),
  };
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench', 'results', 'outside-sweep.json'), JSON.stringify(result, null, 2) + '\n');
  process.stdout.write(JSON.stringify({ families: families.map((f) => ({ name: f.name, kind: f.kind, seeds: f.seeds.map((s) => ({ ...s, healthy: { ...s.healthy, first: undefined } })) })), elapsedMs: result.elapsedMs }) + '\n');
}

if (require.main === module) main();
