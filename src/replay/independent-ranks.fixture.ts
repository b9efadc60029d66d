/**
 * Independent outside ranks: a pipeline-parallel job's registration and per-iteration reports,
 * written from docs/protocol.md, docs/detection.md and schemas/ alone (no detector code read),
 * with noise families of their own (issue 29 style outside testing).
 *
 * The job: `stages` x `dp` reporting ranks (tp 1), rank = dp * stages + pp, one node per rank,
 * `replicasPerLocality` replicas per leaf switch (locality). Every rank reports every link it sent
 * on: its pipeline successor (activations) and predecessor (gradients), 16 MiB per message, one
 * message per microbatch, and its data-parallel ring successor (same stage, next replica in the
 * ring order), 4 MiB chunks, 2 (dp - 1) / dp x gradientBytes / chunk messages. `layers` declares
 * 32 layers (embedding and LM-head layers heavier, as in a GPT), `perStage` split evenly.
 *
 * Everything physical is keyed by rank ids (nodes), not by (dp, pp): a slow link is a slow path
 * between two nodes whatever traffic the layout in force puts on it, and a slow rank is slow
 * whatever stage it holds. `switchedTo` follows the schedule a switch puts in force: the layer split
 * (`layers.perStage`), the layout of a re-map (`topology.ranks` / `rings`) and the delegation toggles.
 *
 * Noise families (designed before any run; parameters fixed in FAMILIES below):
 *
 *  quiet                 reference: lognormal jitter only (links sigma 0.08, compute 0.025).
 *  replica-congestion    another tenant's all-to-all on the leaf: at rate 1/120 iterations an
 *                        episode of 2-6 iterations hits every link touching one dp replica's nodes
 *                        at once (x1.5-4 and +1-12 ms), correlated across the replica.
 *  persistent-offsets    heterogeneous fabric from the first iteration: every link direction x1.0-1.4
 *                        for good, 15% of them +1-3 ms more (an oversubscribed spine hop), links
 *                        across localities x1.25 + 0.3 ms, ranks' compute x0.94-1.06 (silicon lottery).
 *  ecmp-bimodal          ECMP hash collisions with elephant flows: each link direction is a Markov
 *                        chain (healthy -> collided 3%/iteration, collided -> healthy 25%), collided
 *                        medians x2-4 per episode, 10% of episodes a hot collision x8. (Changed after
 *                        the first sweep, parameters unchanged: the chain used to advance only when the
 *                        link was reported, so a link a re-map stopped using stayed frozen in its state.)
 *  checkpoint-slowstart  a checkpoint every 500 iterations (first at 100-400): that iteration every
 *                        link x4-8 and +6-10 s; then 5-10 iterations of slow start on every link at
 *                        once (x(1 + A (1 - j / L)), A 1-3) and compute up to +15%, decaying.
 *  thermal-throttle      one rank at a time ramps its compute up by 8-12% over 40-100 iterations,
 *                        holds 80-200, ramps down over 40-100; next episode 250-500 iterations later;
 *                        compute jitter 0.04 and 0.5% one-iteration x1.3 spikes on a random rank.
 *  report-delivery       what a real stream delivers: 3% of reports a iteration late, 0.5% 2-4 late,
 *                        1% resent (duplicate), 0.2% lost, and every 300-600 iterations one rank
 *                        reconnects and resends its last 3-8 reports.
 *  heavy-tail            pipeline medians base x log-logistic(beta 3) (median = base), ring medians
 *                        base + base x Weibull(k 0.6, lambda 0.3), compute x (1 + Weibull(0.7, 0.01)).
 *  transport-hiccups     error "timeout" on 0.2% of link-iterations (maxMs 1-5 s, median as usual),
 *                        one flaky link direction with 2% timeouts, GC pauses on 0.5% of rank-iterations
 *                        (50-1500 ms log-uniform, in the max of links into the rank, in their median
 *                        one time in ten), dataloader stalls (2%, 100-2000 ms, iteration time only).
 *
 * Faults (reaction runs) come on top of a family: a pipeline link, both directions, between two
 * nodes; a ring link, one direction, between two nodes; a rank computing `factor` x slower.
 */
import { ControlDecision } from '../core/control/control-decision.type';
import { seededRandom } from '../core/planner/seeded-random';
import { RankReport, Registration } from '../protocol/protocol-v1.type';
import { OutsideRanks } from './drive-ranks.fixture';
import { REPLAY_EPOCH_MS } from './run-scenario';

export type FamilyName =
  | 'quiet'
  | 'replica-congestion'
  | 'persistent-offsets'
  | 'ecmp-bimodal'
  | 'checkpoint-slowstart'
  | 'thermal-throttle'
  | 'report-delivery'
  | 'heavy-tail'
  | 'transport-hiccups';

/** A noise family: its name, what it models, and its parameters (fixed before any run). */
export interface NoiseFamily {
  name: FamilyName;
  description: string;
  /** Lognormal sigma of every link's iteration median (before the family's own noise). */
  linkSigma: number;
  /** Lognormal sigma of a rank's F/B/W medians. */
  computeSigma: number;
  params: Record<string, number>;
}

export const FAMILIES: NoiseFamily[] = [
  { name: 'quiet', description: 'lognormal jitter only', linkSigma: 0.08, computeSigma: 0.025, params: {} },
  {
    name: 'replica-congestion',
    description: 'every link of one dp replica at once, x1.5-4 +1-12 ms, 2-6 iterations, rate 1/120',
    linkSigma: 0.08,
    computeSigma: 0.025,
    params: { rate: 1 / 120, minLen: 2, maxLen: 6, minMul: 1.5, maxMul: 4, minAdd: 1, maxAdd: 12 },
  },
  {
    name: 'persistent-offsets',
    description: 'links x1.0-1.4 for good, 15% +1-3 ms, cross-locality x1.25 +0.3 ms, compute x0.94-1.06',
    linkSigma: 0.08,
    computeSigma: 0.025,
    params: { maxMul: 1.4, addFraction: 0.15, minAdd: 1, maxAdd: 3, crossMul: 1.25, crossAdd: 0.3, computeSpread: 0.06 },
  },
  {
    name: 'ecmp-bimodal',
    description: 'per-link Markov fast/slow path (3%/25%), slow x2-4, 10% of episodes x8',
    linkSigma: 0.08,
    computeSigma: 0.025,
    params: { enter: 0.03, leave: 0.25, minMul: 2, maxMul: 4, hotFraction: 0.1, hotMul: 8 },
  },
  {
    name: 'checkpoint-slowstart',
    description: 'checkpoint every 500 (x4-8, +6-10 s), then 5-10 iterations all links x(1+A(1-j/L)), A 1-3, compute +15%',
    linkSigma: 0.08,
    computeSigma: 0.025,
    params: { every: 500, minPhase: 100, maxPhase: 400, minCkptMul: 4, maxCkptMul: 8, minLen: 5, maxLen: 10, minAmp: 1, maxAmp: 3, computeAmp: 0.15 },
  },
  {
    name: 'thermal-throttle',
    description: 'one rank ramps to +8-12% compute over 40-100 it, holds 80-200, recovers; 0.5% x1.3 spikes',
    linkSigma: 0.08,
    computeSigma: 0.04,
    params: { minPeak: 0.08, maxPeak: 0.12, minRamp: 40, maxRamp: 100, minHold: 80, maxHold: 200, minGap: 250, maxGap: 500, spikeRate: 0.005, spikeMul: 1.3 },
  },
  {
    name: 'report-delivery',
    description: '3% of reports 1 late, 0.5% 2-4 late, 1% duplicated, 0.2% lost, reconnect resends of 3-8 every 300-600',
    linkSigma: 0.08,
    computeSigma: 0.025,
    params: { late1: 0.03, lateN: 0.005, dup: 0.01, lost: 0.002, minGap: 300, maxGap: 600, minResend: 3, maxResend: 8 },
  },
  {
    name: 'heavy-tail',
    description: 'pipeline medians x log-logistic(beta 3), rings + Weibull(k 0.6, 0.3 x base), compute x(1+Weibull(0.7, 0.01))',
    linkSigma: 0,
    computeSigma: 0.02,
    params: { beta: 3, ringShape: 0.6, ringScale: 0.3, computeShape: 0.7, computeScale: 0.01 },
  },
  {
    name: 'transport-hiccups',
    description: 'timeouts on 0.2% of link-iterations (+ one flaky link 2%), GC pauses 0.5% 50-1500 ms, dataloader stalls 2%',
    linkSigma: 0.08,
    computeSigma: 0.025,
    params: { timeoutRate: 0.002, flakyRate: 0.02, gcRate: 0.005, gcMinMs: 50, gcMaxMs: 1500, gcMedianShare: 0.1, stallRate: 0.02, stallMinMs: 100, stallMaxMs: 2000 },
  },
];

export function family(name: FamilyName): NoiseFamily {
  const f = FAMILIES.find((x) => x.name === name);
  if (!f) throw new Error(`no family ${name}`);
  return f;
}

/**
 * A fault injected on top of the noise (reaction runs), on physical nodes (rank ids). With `at`, the
 * nodes are those holding that position in the layout in force at `from` (a re-map before the onset
 * may have moved the registered ones): the pipeline link of replica `dp` between stages `pp` and
 * `pp + 1`, the ring link from (`dp`, `pp`) to its ring successor, the rank at (`dp`, `pp`).
 * Resolved ranks are written back into the fault.
 */
export type Fault =
  | { kind: 'pipeline-link'; a: number; b: number; extraMs: number; from: number; to: number; at?: { dp: number; pp: number } }
  | { kind: 'ring-link'; fromRank: number; toRank: number; extraMs: number; from: number; to: number; at?: { dp: number; pp: number } }
  | { kind: 'slow-rank'; rank: number; factor: number; from: number; to: number; at?: { dp: number; pp: number } };

export interface IndependentRanksOptions {
  jobId?: string;
  stages?: number;
  dp?: number;
  microbatches?: number;
  /** Healthy one-way send time of one pipeline message (16 MiB), ms. */
  linkMs?: number;
  /** Healthy send time of one ring chunk (4 MiB), ms. */
  ringMs?: number;
  /** The job's healthy iteration time, ms (reported as iterationMs). */
  iterationMs?: number;
  replicasPerLocality?: number;
  family?: NoiseFamily;
  seed?: number;
  faults?: Fault[];
}

const ACTIVATION_MSG_BYTES = 16 * 1024 * 1024;
const CHUNK_BYTES = 4 * 1024 * 1024;
const LAYERS = 32;
const LAYER_STATE_BYTES = 2e9;
const LAYER_GRADIENT_BYTES = 2.5e8;
const LAYER_ACTIVATION_BYTES = 3e8;

interface Place {
  dp: number;
  pp: number;
}

/** What the ranks see of a switch's decision (read structurally: only the schedule's public fields). */
interface DecisionView {
  layers?: { perStage?: number[] };
  /** The schedule's `topology.ranks` (protocol sec. 3.5), or the decision's positional `rankAt` (rank at dp * stages + pp). */
  topology?: { ranks?: { rank: number; dp: number; pp: number }[]; rankAt?: number[]; rings?: number[][] };
  delegation?: { rank: number; sendQueues: number; recvQueues: number }[];
}

export class IndependentRanks implements OutsideRanks {
  readonly jobId: string;
  readonly stages: number;
  readonly dp: number;
  readonly microbatches: number;
  readonly linkMs: number;
  readonly ringMs: number;
  readonly iterationMs: number;
  readonly replicasPerLocality: number;
  readonly fam: NoiseFamily;
  readonly faults: Fault[];
  private readonly rand: () => number;
  private readonly layerF: number[];
  private readonly layerB: number[];
  private readonly layerW: number[];
  private perStage: number[];
  private place = new Map<number, Place>();
  private rings: number[][];
  private delegation = new Map<number, { sendQueues: number; recvQueues: number }>();
  /** Family state. */
  private linkState = new Map<string, { mul: number; add: number; collided: boolean; colMul: number }>();
  private rankOffset = new Map<number, number>();
  private congestion: { dp: number; until: number; mul: number; add: number } | null = null;
  private checkpoint: { next: number; start: number; len: number; amp: number; ckptMul: number; ckptAddMs: number } | null = null;
  private throttle: { rank: number; start: number; ramp: number; hold: number; down: number; peak: number; next: number } | null = null;
  private flaky: string | null = null;
  private delayed: { due: number; report: RankReport }[] = [];
  private sent = new Map<number, RankReport[]>();
  private nextResend = 0;
  /** Log of what the noise did, per iteration, for explaining decisions: iteration -> notes. */
  readonly events = new Map<number, string[]>();
  /** Counters of delivery tricks (report-delivery). */
  readonly delivery = { late: 0, duplicated: 0, lost: 0, resent: 0 };

  constructor(options: IndependentRanksOptions = {}) {
    this.jobId = options.jobId ?? 'indep-job';
    this.stages = options.stages ?? 4;
    this.dp = options.dp ?? 4;
    this.microbatches = options.microbatches ?? 16;
    this.linkMs = options.linkMs ?? 1.2;
    this.ringMs = options.ringMs ?? 0.8;
    this.iterationMs = options.iterationMs ?? 900;
    this.replicasPerLocality = options.replicasPerLocality ?? 2;
    this.fam = options.family ?? FAMILIES[0];
    this.faults = options.faults ?? [];
    this.rand = seededRandom((options.seed ?? 1) * 7919 + 17);
    this.layerF = Array.from({ length: LAYERS }, (_, i) => (i === 0 ? 1.8 : i === LAYERS - 1 ? 2.6 : 1.5));
    this.layerB = this.layerF.map((f) => f);
    this.layerW = this.layerF.map((f) => Math.round(f * 0.66 * 100) / 100);
    this.perStage = evenSplit(LAYERS, this.stages);
    for (let d = 0; d < this.dp; d++) for (let p = 0; p < this.stages; p++) this.place.set(d * this.stages + p, { dp: d, pp: p });
    this.rings = Array.from({ length: this.stages }, () => Array.from({ length: this.dp }, (_, i) => i));
    this.initFamily();
  }

  // ---------------------------------------------------------------- registration

  registration(): Registration {
    const ranks = [];
    for (let d = 0; d < this.dp; d++)
      for (let p = 0; p < this.stages; p++) {
        const rank = d * this.stages + p;
        ranks.push({ rank, dp: d, pp: p, tp: 0, node: `node-${rank}`, locality: this.localityOf(d) });
      }
    const stageSum = (arr: number[]) => this.stageRanges(this.perStage).map(([a, b]) => round(arr.slice(a, b).reduce((s, x) => s + x, 0)));
    return {
      type: 'register',
      protocol: 1,
      jobId: this.jobId,
      stages: this.stages,
      microbatches: this.microbatches,
      dp: this.dp,
      tp: 1,
      ranks,
      memory: {
        deviceBytes: this.perStage.map(() => 40e9),
        activationBytes: this.perStage.map((n) => n * LAYER_ACTIVATION_BYTES),
        hostBytes: 512e9,
      },
      computeMs: { fMs: stageSum(this.layerF), bMs: stageSum(this.layerB), wMs: stageSum(this.layerW) },
      network: { nominalGBps: 25, latencyMs: 0.02 },
      layers: {
        fMs: [...this.layerF],
        bMs: [...this.layerB],
        wMs: [...this.layerW],
        stateBytes: this.layerF.map(() => LAYER_STATE_BYTES),
        activationBytes: this.layerF.map(() => LAYER_ACTIVATION_BYTES),
        perStage: [...this.perStage],
      },
      dataParallel: {
        gradientBytes: this.perStage.map((n) => n * LAYER_GRADIENT_BYTES),
        chunkBytes: CHUNK_BYTES,
        inflightChunks: 8,
      },
    };
  }

  localityOf(dpIndex: number): string {
    return `leaf-${Math.floor(dpIndex / this.replicasPerLocality)}`;
  }

  /** The rank at (dp, pp) of the layout in force. */
  rankAt(d: number, p: number): number {
    for (const [r, pl] of this.place) if (pl.dp === d && pl.pp === p) return r;
    throw new Error(`no rank at dp ${d} pp ${p}`);
  }

  /** Ring successor of a rank in the layout in force (null when dp = 1). */
  ringPeer(rank: number): number | null {
    if (this.dp < 2) return null;
    const { dp, pp } = this.place.get(rank)!;
    const ring = this.rings[pp];
    const i = ring.indexOf(dp);
    return this.rankAt(ring[(i + 1) % ring.length], pp);
  }

  currentPerStage(): number[] {
    return [...this.perStage];
  }

  // ---------------------------------------------------------------- switches

  switchedTo(decision: ControlDecision): void {
    const d = decision as unknown as DecisionView;
    if (d.layers?.perStage && d.layers.perStage.length === this.stages) this.perStage = [...d.layers.perStage];
    if (d.topology) {
      const next = new Map<number, Place>();
      if (d.topology.ranks) for (const r of d.topology.ranks) next.set(r.rank, { dp: r.dp, pp: r.pp });
      else if (d.topology.rankAt) d.topology.rankAt.forEach((rank, i) => next.set(rank, { dp: Math.floor(i / this.stages), pp: i % this.stages }));
      if (next.size === this.place.size) this.place = next;
      else throw new Error(`topology of ${next.size} ranks for a job of ${this.place.size}: ${JSON.stringify(d.topology).slice(0, 300)}`);
      if (d.topology.rings && d.topology.rings.length === this.stages) this.rings = d.topology.rings.map((r) => [...r]);
    }
    if (Array.isArray(d.delegation)) {
      this.delegation.clear();
      for (const t of d.delegation) this.delegation.set(t.rank, { sendQueues: t.sendQueues, recvQueues: t.recvQueues });
    }
  }

  // ---------------------------------------------------------------- reports

  reports(iteration: number, version: number): RankReport[] {
    for (const f of this.faults) {
      if (!f.at || iteration < f.from) continue;
      if (f.kind === 'pipeline-link') [f.a, f.b] = [this.rankAt(f.at.dp, f.at.pp), this.rankAt(f.at.dp, f.at.pp + 1)];
      if (f.kind === 'ring-link') [f.fromRank, f.toRank] = [this.rankAt(f.at.dp, f.at.pp), this.ringPeer(this.rankAt(f.at.dp, f.at.pp)) ?? -1];
      if (f.kind === 'slow-rank') f.rank = this.rankAt(f.at.dp, f.at.pp);
      this.note(iteration, `fault ${f.kind} placed on ${JSON.stringify(f)}`);
      delete f.at;
    }
    this.stepFamily(iteration);
    const fresh: RankReport[] = [];
    const iterMs = this.iterationTime(iteration);
    for (const rank of [...this.place.keys()].sort((a, b) => a - b)) fresh.push(this.report(rank, iteration, version, iterMs));
    return this.fam.name === 'report-delivery' ? this.deliver(iteration, fresh) : fresh;
  }

  private report(rank: number, iteration: number, version: number, iterMs: number): RankReport {
    const { pp } = this.place.get(rank)!;
    const [a, b] = this.stageRanges(this.perStage)[pp];
    const speed = this.computeFactor(rank, iteration);
    const shared = this.lognormal(this.fam.computeSigma * 0.8);
    const op = (arr: number[]) => round(arr.slice(a, b).reduce((s, x) => s + x, 0) * speed * shared * this.lognormal(this.fam.computeSigma * 0.4));
    const links: RankReport['links'] = [];
    const delegated = this.delegation.has(rank);
    if (pp + 1 < this.stages) links.push(this.link(rank, this.rankAt(this.place.get(rank)!.dp, pp + 1), 'pipeline', iteration, delegated));
    if (pp > 0) links.push(this.link(rank, this.rankAt(this.place.get(rank)!.dp, pp - 1), 'pipeline', iteration, delegated));
    const ring = this.ringPeer(rank);
    if (ring !== null) links.push(this.link(rank, ring, 'data-parallel', iteration, false));
    const tog = this.delegation.get(rank);
    return {
      type: 'report',
      protocol: 1,
      jobId: this.jobId,
      rank,
      iteration,
      scheduleVersion: version,
      epoch: 1,
      iterationMs: round(iterMs * this.lognormal(0.005)),
      computeMs: { f: op(this.layerF), b: op(this.layerB), w: op(this.layerW) },
      links,
      memory: { devicePeakBytes: Math.round((b - a) * (LAYER_STATE_BYTES + LAYER_ACTIVATION_BYTES * Math.min(this.microbatches, this.stages - pp))), hostPeakBytes: tog ? 4e9 : 0 },
      delegation: { enabled: !!tog, sendQueues: tog?.sendQueues ?? 0, recvQueues: tog?.recvQueues ?? 0 },
      sentAt: REPLAY_EPOCH_MS + (iteration + 1) * this.iterationMs + this.rand() * 5,
    };
  }

  private link(from: number, to: number, kind: 'pipeline' | 'data-parallel', t: number, delegated: boolean): RankReport['links'][number] {
    const base = kind === 'pipeline' ? this.linkMs : this.ringMs;
    const bytes = kind === 'pipeline' ? ACTIVATION_MSG_BYTES : CHUNK_BYTES;
    const count = kind === 'pipeline' ? this.microbatches : Math.round(((2 * (this.dp - 1)) / this.dp) * ((this.perStage[this.place.get(from)!.pp] * LAYER_GRADIENT_BYTES) / CHUNK_BYTES));
    let { median, max, error } = this.linkNoise(from, to, kind, base, t);
    for (const f of this.faults) {
      if (t < f.from || t >= f.to) continue;
      if (f.kind === 'pipeline-link' && ((f.a === from && f.b === to) || (f.a === to && f.b === from))) {
        median += f.extraMs;
        max += f.extraMs;
      }
      if (f.kind === 'ring-link' && f.fromRank === from && f.toRank === to) {
        median += f.extraMs;
        max += f.extraMs;
      }
    }
    if (delegated) {
      median *= 1.02;
      max *= 1.02;
    }
    return { peer: to, kind, bytes, medianMs: round(median), maxMs: round(Math.max(max, median)), count, delegated, error };
  }

  // ---------------------------------------------------------------- noise

  private initFamily(): void {
    const p = this.fam.params;
    if (this.fam.name === 'persistent-offsets') {
      for (const r of this.place.keys()) this.rankOffset.set(r, 1 - p.computeSpread + 2 * p.computeSpread * this.rand());
    }
    if (this.fam.name === 'checkpoint-slowstart') {
      this.checkpoint = { next: Math.floor(this.uniform(p.minPhase, p.maxPhase)), start: -1, len: 0, amp: 0, ckptMul: 1, ckptAddMs: 0 };
    }
    if (this.fam.name === 'thermal-throttle') {
      this.throttle = { rank: -1, start: -1, ramp: 0, hold: 0, down: 0, peak: 0, next: Math.floor(this.uniform(50, p.maxGap)) };
    }
    if (this.fam.name === 'transport-hiccups') {
      const ranks = [...this.place.keys()];
      const from = ranks[Math.floor(this.rand() * ranks.length)];
      const { dp, pp } = this.place.get(from)!;
      const to = pp + 1 < this.stages ? dp * this.stages + pp + 1 : dp * this.stages + pp - 1;
      this.flaky = `${from}>${to}`;
      this.note(0, `flaky link direction ${this.flaky} (2% timeouts)`);
    }
    if (this.fam.name === 'report-delivery') this.nextResend = Math.floor(this.uniform(p.minGap, p.maxGap));
  }

  /** Per-iteration family state (episodes). */
  private stepFamily(t: number): void {
    const p = this.fam.params;
    switch (this.fam.name) {
      case 'replica-congestion':
        if (this.congestion && t >= this.congestion.until) this.congestion = null;
        if (!this.congestion && this.rand() < p.rate) {
          const len = Math.floor(this.uniform(p.minLen, p.maxLen + 1));
          this.congestion = { dp: Math.floor(this.rand() * this.dp), until: t + len, mul: this.uniform(p.minMul, p.maxMul), add: this.uniform(p.minAdd, p.maxAdd) };
          this.note(t, `congestion on dp replica ${this.congestion.dp} (nodes of physical replica) for ${len} it: x${this.congestion.mul.toFixed(2)} +${this.congestion.add.toFixed(1)} ms`);
        }
        break;
      case 'checkpoint-slowstart': {
        const c = this.checkpoint!;
        if (t === c.next) {
          c.start = t;
          c.len = Math.floor(this.uniform(p.minLen, p.maxLen + 1));
          c.amp = this.uniform(p.minAmp, p.maxAmp);
          c.ckptMul = this.uniform(p.minCkptMul, p.maxCkptMul);
          c.ckptAddMs = this.uniform(6000, 10000);
          c.next = t + p.every;
          this.note(t, `checkpoint: all links x${c.ckptMul.toFixed(1)}, then ${c.len} it slow start (x${(1 + c.amp).toFixed(2)} decaying)`);
        }
        break;
      }
      case 'thermal-throttle': {
        const th = this.throttle!;
        if (t === th.next) {
          const ranks = [...this.place.keys()];
          th.rank = ranks[Math.floor(this.rand() * ranks.length)];
          th.start = t;
          th.ramp = Math.floor(this.uniform(p.minRamp, p.maxRamp));
          th.hold = Math.floor(this.uniform(p.minHold, p.maxHold));
          th.down = Math.floor(this.uniform(p.minRamp, p.maxRamp));
          th.peak = this.uniform(p.minPeak, p.maxPeak);
          th.next = t + th.ramp + th.hold + th.down + Math.floor(this.uniform(p.minGap, p.maxGap));
          this.note(t, `thermal throttle on rank ${th.rank}: ramp ${th.ramp}, hold ${th.hold} at +${(th.peak * 100).toFixed(1)}%, down ${th.down} (ends ${t + th.ramp + th.hold + th.down})`);
        }
        break;
      }
      case 'ecmp-bimodal':
        // Every link direction's path (fast or collided) evolves whether or not the layout in force
        // sends on it (a link a re-map stopped using does not stay frozen in a collision).
        for (const [key, s] of this.linkState) {
          if (s.collided) {
            if (this.rand() < p.leave) s.collided = false;
          } else if (this.rand() < p.enter) {
            s.collided = true;
            s.colMul = this.rand() < p.hotFraction ? p.hotMul : this.uniform(p.minMul, p.maxMul);
            if (s.colMul >= p.hotMul) this.note(t, `hot ECMP collision on ${key} x${s.colMul}`);
          }
        }
        break;
      default:
        break;
    }
  }

  private linkState0(key: string, from: number, to: number) {
    let s = this.linkState.get(key);
    if (!s) {
      s = { mul: 1, add: 0, collided: false, colMul: 1 };
      if (this.fam.name === 'persistent-offsets') {
        const p = this.fam.params;
        s.mul = 1 + (p.maxMul - 1) * this.rand();
        if (this.rand() < p.addFraction) s.add = this.uniform(p.minAdd, p.maxAdd);
        const lf = this.localityOf(Math.floor(from / this.stages));
        const lt = this.localityOf(Math.floor(to / this.stages));
        if (lf !== lt) {
          s.mul *= p.crossMul;
          s.add += p.crossAdd;
        }
      }
      this.linkState.set(key, s);
    }
    return s;
  }

  private linkNoise(from: number, to: number, kind: 'pipeline' | 'data-parallel', base: number, t: number): { median: number; max: number; error: null | 'timeout' } {
    const p = this.fam.params;
    const key = `${from}>${to}`;
    const s = this.linkState0(key, from, to);
    let median = base * s.mul * this.lognormal(this.fam.linkSigma) + s.add;
    let error: null | 'timeout' = null;
    let maxExtra = 0;
    switch (this.fam.name) {
      case 'replica-congestion': {
        const c = this.congestion;
        // Physical replica: the nodes registered in that replica (rank ids), whatever the layout.
        if (c && (Math.floor(from / this.stages) === c.dp || Math.floor(to / this.stages) === c.dp)) median = median * c.mul + c.add;
        break;
      }
      case 'ecmp-bimodal':
        // The path state advances every iteration for every link known (stepFamily), used or not.
        if (s.collided) median *= s.colMul;
        break;
      case 'checkpoint-slowstart': {
        const c = this.checkpoint!;
        if (c.start >= 0 && t === c.start) {
          median *= c.ckptMul;
          maxExtra += median;
        } else if (c.start >= 0 && t > c.start && t <= c.start + c.len) {
          const j = t - c.start - 1;
          median *= 1 + c.amp * (1 - j / c.len);
        }
        break;
      }
      case 'heavy-tail':
        if (kind === 'pipeline') {
          const u = Math.max(1e-12, Math.min(1 - 1e-12, this.rand()));
          median = base * s.mul * Math.pow(u / (1 - u), 1 / p.beta) + s.add;
        } else {
          median = base * s.mul + base * this.weibull(p.ringShape, p.ringScale) + s.add;
        }
        break;
      case 'transport-hiccups':
        if (this.rand() < p.timeoutRate || (key === this.flaky && this.rand() < p.flakyRate)) {
          error = 'timeout';
          median *= this.uniform(1, 1.2);
          maxExtra += this.uniform(1000, 5000);
          this.note(t, `timeout on ${key} (${kind})`);
        }
        break;
      default:
        break;
    }
    // GC pause on the receiving rank (transport-hiccups): decided once per rank-iteration.
    const pause = this.pauseOf(to, t);
    if (pause > 0) {
      maxExtra += pause;
      if (this.pauseInMedian.get(`${to}@${t}`)) median += pause;
    }
    let max = median * (1 + this.exponential(0.3)) + maxExtra;
    if (this.fam.name === 'heavy-tail') max = median * (1 + this.exponential(1));
    return { median, max, error };
  }

  private pauses = new Map<string, number>();
  private pauseInMedian = new Map<string, boolean>();
  private pauseOf(rank: number, t: number): number {
    if (this.fam.name !== 'transport-hiccups') return 0;
    const key = `${rank}@${t}`;
    let v = this.pauses.get(key);
    if (v === undefined) {
      const p = this.fam.params;
      v = this.rand() < p.gcRate ? Math.exp(this.uniform(Math.log(p.gcMinMs), Math.log(p.gcMaxMs))) : 0;
      this.pauses.set(key, v);
      const inMedian = v > 0 && this.rand() < p.gcMedianShare;
      this.pauseInMedian.set(key, inMedian);
      if (v > 0) this.note(t, `GC pause ${v.toFixed(0)} ms on rank ${rank}${inMedian ? ' (in the median of links into it)' : ''}`);
      if (this.pauses.size > 4096) {
        this.pauses.clear();
        this.pauseInMedian.clear();
      }
    }
    return v;
  }

  private computeFactor(rank: number, t: number): number {
    const p = this.fam.params;
    let f = this.rankOffset.get(rank) ?? 1;
    if (this.fam.name === 'thermal-throttle') {
      const th = this.throttle!;
      if (th.rank === rank && t >= th.start) {
        const u = t - th.start;
        let x = 0;
        if (u < th.ramp) x = u / th.ramp;
        else if (u < th.ramp + th.hold) x = 1;
        else if (u < th.ramp + th.hold + th.down) x = 1 - (u - th.ramp - th.hold) / th.down;
        f *= 1 + th.peak * x;
      }
      if (this.rand() < p.spikeRate) f *= p.spikeMul;
    }
    if (this.fam.name === 'checkpoint-slowstart') {
      const c = this.checkpoint!;
      if (c.start >= 0 && t >= c.start && t <= c.start + c.len) f *= 1 + p.computeAmp * (1 - (t - c.start) / (c.len + 1));
    }
    if (this.fam.name === 'heavy-tail') f *= 1 + this.weibull(p.computeShape, p.computeScale);
    for (const fault of this.faults) if (fault.kind === 'slow-rank' && fault.rank === rank && t >= fault.from && t < fault.to) f *= fault.factor;
    return f;
  }

  private iterationTime(t: number): number {
    let ms = this.iterationMs * this.lognormal(0.02);
    let slowest = 1;
    for (const r of this.place.keys()) slowest = Math.max(slowest, this.rankOffset.get(r) ?? 1);
    for (const f of this.faults) {
      if (t < f.from || t >= f.to) continue;
      if (f.kind === 'slow-rank') slowest = Math.max(slowest, f.factor);
      if (f.kind === 'pipeline-link') ms += (f.extraMs * this.microbatches) / 2;
      if (f.kind === 'ring-link') ms += (f.extraMs / 8) * 2 * (this.dp - 1) * 60;
    }
    ms *= slowest;
    const p = this.fam.params;
    if (this.fam.name === 'checkpoint-slowstart' && this.checkpoint!.start === t) ms += this.checkpoint!.ckptAddMs;
    if (this.fam.name === 'transport-hiccups' && this.rand() < p.stallRate) ms += this.uniform(p.stallMinMs, p.stallMaxMs);
    if (this.fam.name === 'replica-congestion' && this.congestion) ms += this.congestion.add * this.microbatches;
    return ms;
  }

  /** report-delivery: late, duplicated, lost reports and reconnect resends. */
  private deliver(t: number, fresh: RankReport[]): RankReport[] {
    const p = this.fam.params;
    const out: RankReport[] = [];
    for (const r of fresh) {
      const sentBefore = this.sent.get(r.rank) ?? [];
      sentBefore.push(r);
      if (sentBefore.length > 16) sentBefore.shift();
      this.sent.set(r.rank, sentBefore);
      const u = this.rand();
      if (u < p.lost) {
        this.delivery.lost++;
        this.note(t, `report of rank ${r.rank} lost`);
        continue;
      }
      if (u < p.lost + p.late1) {
        this.delayed.push({ due: t + 1, report: r });
        this.delivery.late++;
        continue;
      }
      if (u < p.lost + p.late1 + p.lateN) {
        const by = Math.floor(this.uniform(2, 5));
        this.delayed.push({ due: t + by, report: r });
        this.delivery.late++;
        this.note(t, `report of rank ${r.rank} ${by} iterations late`);
        continue;
      }
      out.push(r);
      if (this.rand() < p.dup) {
        this.delayed.push({ due: t + 1, report: r });
        this.delivery.duplicated++;
      }
    }
    const due = this.delayed.filter((d) => d.due <= t);
    this.delayed = this.delayed.filter((d) => d.due > t);
    for (const d of due) out.push(d.report);
    if (t === this.nextResend) {
      const ranks = [...this.sent.keys()];
      const rank = ranks[Math.floor(this.rand() * ranks.length)];
      const n = Math.floor(this.uniform(p.minResend, p.maxResend + 1));
      const again = (this.sent.get(rank) ?? []).slice(-n);
      out.push(...again);
      this.delivery.resent += again.length;
      this.note(t, `rank ${rank} reconnects and resends its last ${again.length} reports`);
      this.nextResend = t + Math.floor(this.uniform(p.minGap, p.maxGap));
    }
    return out;
  }

  // ---------------------------------------------------------------- helpers

  stageRanges(perStage: number[]): [number, number][] {
    const out: [number, number][] = [];
    let a = 0;
    for (const n of perStage) {
      out.push([a, a + n]);
      a += n;
    }
    return out;
  }

  /** What the noise did between two iterations (inclusive), for explaining a decision. */
  eventsBetween(from: number, to: number): string[] {
    const out: string[] = [];
    for (let t = Math.max(0, from); t <= to; t++) for (const e of this.events.get(t) ?? []) out.push(`${t}: ${e}`);
    return out;
  }

  /** State of the noise at an iteration that has no discrete event (persistent families). */
  describeState(): string[] {
    const out: string[] = [];
    if (this.fam.name === 'persistent-offsets') {
      for (const [k, s] of this.linkState) if (s.add > 0 || s.mul > 1.3) out.push(`${k} x${s.mul.toFixed(2)} +${s.add.toFixed(2)} ms`);
      for (const [r, o] of this.rankOffset) if (Math.abs(o - 1) > 0.04) out.push(`rank ${r} compute x${o.toFixed(3)}`);
    }
    if (this.fam.name === 'ecmp-bimodal') for (const [k, s] of this.linkState) if (s.collided) out.push(`${k} collided x${s.colMul.toFixed(2)}`);
    if (this.fam.name === 'thermal-throttle' && this.throttle && this.throttle.rank >= 0) out.push(`throttle rank ${this.throttle.rank} peak +${(this.throttle.peak * 100).toFixed(1)}%`);
    return out;
  }

  /** The persistent state of one physical link direction (for explaining a decision on it). */
  linkInfo(from: number, to: number): string {
    const s = this.linkState.get(`${from}>${to}`);
    if (!s) return `${from}>${to}: no state`;
    return `${from}>${to}: x${s.mul.toFixed(2)} +${s.add.toFixed(2)} ms${s.collided ? `, collided x${s.colMul.toFixed(2)}` : ''}`;
  }

  /** The layout in force: rank -> (dp, pp). */
  layout(): Map<number, { dp: number; pp: number }> {
    return new Map(this.place);
  }

  private note(t: number, s: string): void {
    const list = this.events.get(t) ?? [];
    list.push(s);
    this.events.set(t, list);
  }

  private uniform(a: number, b: number): number {
    return a + (b - a) * this.rand();
  }

  private gaussian(): number {
    const u = Math.max(1e-12, this.rand());
    const v = this.rand();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  private lognormal(sigma: number): number {
    return sigma === 0 ? 1 : Math.exp(sigma * this.gaussian());
  }

  private exponential(mean: number): number {
    return -mean * Math.log(Math.max(1e-12, 1 - this.rand()));
  }

  private weibull(shape: number, scale: number): number {
    return scale * Math.pow(-Math.log(Math.max(1e-12, 1 - this.rand())), 1 / shape);
  }
}

function evenSplit(n: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(n / parts) + (i < n % parts ? 1 : 0));
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
