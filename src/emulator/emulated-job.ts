import { EngineRun } from '../core/engine/engine-run.type';
import { simulateSchedule } from '../core/engine/simulator';
import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { PipelineProfile } from '../core/pipeline/pipeline-profile.type';
import { Schedule } from '../core/pipeline/schedule.type';
import { seededRandom } from '../core/planner/seeded-random';
import { iterationWithAllReduceMs, ringAllReduceMs, ringMessages, validateAllReduceModel } from '../core/topology/all-reduce';
import { stageFinishTimes } from '../core/topology/stage-finish';
import { AllReduceModel, Placement } from '../core/topology/topology.type';
import { InputError } from '../core/input-error';
import { DataParallelSpec, DelegationToggle, LinkSample, PublishedSchedule, RankReport, Registration, TopologyAssignment } from '../protocol/protocol-v1.type';
import { DelayModel } from './delay/delay-model.type';
import { Fabric } from './fabric/fabric.type';

export interface EmulationOptions {
  /** Relative standard deviation of op times, per stage and iteration (0.02 = 2%). */
  jitter: number;
  /** GPU-direct sends in flight per link direction before compute stalls (NCCL-like: 1). */
  gpuSlots: number;
  /** Extra op time on a stage whose rank delegates (device-host copies; paper sec. 7.4: 1-4%). */
  copyOverhead: number;
  /** What a message costs when the GPU-direct path of its link has failed and it is not delegated (NCCL timeout and retry), ms. */
  nicTimeoutMs: number;
  /** Bytes of one activation or gradient message, reported to the daemon. */
  messageBytes: number;
  seed: number;
  /**
   * Ranks that fail over on their own (docs/protocol.md sec. 7, paper sec. 5.3): the first send on a
   * link whose GPU-direct path died pays one `nicTimeoutMs`, then that link's traffic goes through
   * one host-path queue on both ends (paying the copy overhead) until the schedule delegates it or
   * the NIC is back. Without it (ranks with no delegate processes, e.g. plain ZeroBubble) every
   * message on the dead path pays the timeout. Absent: false.
   */
  nicFailover?: boolean;
}

export const DEFAULT_EMULATION: EmulationOptions = { jitter: 0.01, gpuSlots: 1, copyOverhead: 0.02, nicTimeoutMs: 2000, messageBytes: 1 << 24, seed: 1 };

/** Ranks with pipemorph's data plane: delegate processes they can fail over to when a NIC dies. */
export const DELEGATING_EMULATION: EmulationOptions = { ...DEFAULT_EMULATION, nicFailover: true };

/** The data-parallel gradient all-reduce at the end of every iteration (a ring per stage, alpha-beta model of src/core/topology). */
export interface AllReduceConfig {
  /** Per stage: gradient bytes each rank of that stage all-reduces per iteration. */
  gradientBytes: number[];
  /** Bytes per ring message (default 4 MiB). */
  chunkBytes?: number;
  /** Ring messages in flight per link (default 8). */
  inflightChunks?: number;
  /** Healthy one-way latency of a ring link, ms (default 0.01). */
  ringLatencyMs?: number;
  /** Ring link bandwidth, GB/s (default 50: 400 Gb/s InfiniBand). */
  ringGBps?: number;
}

/** Where the job's nodes sit and what connects them; all optional: without them the job runs exactly as before. */
export interface ClusterOptions {
  /** Extra delay between node pairs (ranks), on top of the DelayModel's per-pipeline-link delays. */
  fabric?: Fabric;
  /** Models the data-parallel all-reduce (only when dp > 1). */
  allReduce?: AllReduceConfig;
  /**
   * One-off cost of a topology switch that moves ranks to other stages, ms, added to the iteration
   * at which it takes effect: the moved ranks load their new stage's weights and optimizer state, in
   * parallel, before that iteration can start (default 3000: a few GB per node over a fast link plus
   * communicator rebuild). A switch that only reorders rings costs nothing.
   */
  migrationMs?: number;
  /** The job's layers, when its ranks move them (re-balancing); absent: stage op times are the profile's, as before. */
  layers?: LayeredOptions;
  /** Ranks whose compute is slower for a while (compute stragglers); absent: every rank computes at its profiled speed. */
  computeSlowdowns?: ComputeSlowdown[];
}

export const DEFAULT_MIGRATION_MS = 3000;

/** The layers a job registers (docs/protocol.md sec. 3.1): per layer F, B, W ms, state and activation bytes; `perStage` the registered split. */
export type DeclaredLayers = NonNullable<Registration['layers']>;
/** A schedule's split of the layers (docs/protocol.md sec. 3.5, 5.7). */
export type ScheduleLayers = NonNullable<PublishedSchedule['layers']>;

/** The handoff bandwidth of moved layers' state when none is given, GB/s: the shipped `rebalance.handoffGBps`. */
export const DEFAULT_HANDOFF_GBPS = 10;

/**
 * A job whose ranks can move layers (docs/rebalancing.md): its op times per stage are the sums of
 * its layers' declared times under the split in force, and a schedule carrying a new `layers` split
 * moves them at its effective iteration.
 */
export interface LayeredOptions {
  /** The registration's `layers`; the profile's fMs, bMs, wMs must be its `perStage` split's sums. */
  declared: DeclaredLayers;
  /**
   * How fast the moved layers' state reaches its new stage, GB/s (default DEFAULT_HANDOFF_GBPS).
   * The move is modelled as the daemon prices it: every moved layer's `stateBytes`, one after
   * another at this bandwidth, paid before the switch iteration's ops (every rank waits for it).
   */
  handoffGBps?: number;
}

/** A rank whose device computes `factor` times slower (every op it runs takes `factor` x its time) from `fromIteration` up to, not including, `untilIteration`. */
export interface ComputeSlowdown {
  rank: number;
  factor: number;
  fromIteration: number;
  untilIteration?: number;
}

/** What one replica runs: its op lists and which of its ranks delegate. */
export interface ReplicaPlan {
  schedule: Schedule;
  delegation: ReadonlyMap<number, DelegationToggle>;
}

export interface IterationResult {
  iteration: number;
  startMs: number;
  /** Slowest replica: the replicas meet in the data-parallel all-reduce. */
  iterationMs: number;
  /** Each replica's pipeline alone (last op done), without the all-reduce or a migration. */
  replicaMs: number[];
  /** Per stage, its ring all-reduce time (empty when the all-reduce is not modelled). */
  allReduceMs: number[];
  /** Migration paid at the start of this iteration (a topology switch that moved ranks), ms. */
  migrationMs: number;
  /** Topology version in force (0: the registration layout). */
  topologyVersion: number;
  /** Moving layers to a new split (a re-balance) paid at the start of this iteration, ms (0 when nothing moved). */
  handoffMs: number;
  /** Split version in force (0: the registered split, or a job without layers). */
  layersVersion: number;
  /**
   * Per rank (index = rank), ms after startMs at which it reached its iteration boundary: its last
   * op done (after a migration); with the all-reduce modelled, the iteration's end (its ring waits
   * for the slowest replica). A paced clock writes the rank's report and reads control then.
   */
  rankDoneMs: number[];
  reports: RankReport[];
}

function median(values: number[]): number {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * All ranks of one training job, executing schedules in virtual time: per iteration, each data-
 * parallel replica runs its schedule through the exact engine with the run-time link model
 * (head-of-line blocking on GPU-direct sends, CPU delegate queues, NIC failures) and per-op times
 * from the profile with jitter. Produces the protocol v1 reports a real rank would send.
 *
 * Ranks (one per node, tp = 1) never change numbers; the placement says which rank holds slot
 * (dp, pp): initially rank = dp * stages + pp, changed by applyTopology (a re-mapping). Pipeline
 * link l of replica d gets the DelayModel's delay of link l (same on every replica) plus the
 * fabric's extra delay between the two ranks at its ends. With an all-reduce config and dp > 1,
 * every stage all-reduces its gradients over a ring of its replicas (order `rings[pp]`) once all
 * of them finished their last op, and the iteration ends with the last ring (core
 * iterationWithAllReduceMs); a ring is paced by its slowest link.
 *
 * With `layers` (docs/rebalancing.md), a stage's op times are the sums of its layers' declared
 * times under the split in force; a schedule's new split (applyLayers) changes them from its
 * iteration on, which pays the moved layers' handoff first. A rank with a compute slowdown runs
 * every op that many times slower, whatever stage it holds.
 */
export class EmulatedJob {
  readonly stages: number;
  clockMs = 0;
  readonly fabric: Fabric | undefined;
  /** The all-reduce as the core models it, or null when not modelled (no config or dp = 1). */
  readonly allReduce: AllReduceModel | null;
  readonly migrationMs: number;
  private readonly random: () => number;
  /** Slot (dp * stages + pp) -> rank, and its inverse. */
  private nodeAt: Int32Array;
  private slotOf: Int32Array;
  private rings: number[][];
  private topology = 0;
  /** Migration the next iteration pays (a topology that moved ranks took effect). */
  private pendingMigrationMs = 0;
  /** Pipeline links (dp * (stages - 1) + link) whose ranks already timed out once and moved to the host path. */
  private readonly failedOver = new Set<number>();
  /** The declared layers (null: stage times are the profile's) and the split in force. */
  readonly layers: DeclaredLayers | null;
  readonly handoffGBps: number;
  private split: number[];
  private splitVersion = 0;
  /** Per stage, F, B and W of one microbatch on a healthy device under the split in force, ms. */
  private stageMs: number[][];
  /** Layer handoff the next iteration pays (a new split took effect). */
  private pendingHandoffMs = 0;
  private readonly slowdowns: ComputeSlowdown[];

  constructor(
    readonly jobId: string,
    readonly profile: PipelineProfile,
    readonly dp: number,
    readonly delays: DelayModel,
    readonly options: EmulationOptions = DEFAULT_EMULATION,
    cluster: ClusterOptions = {},
  ) {
    this.stages = profile.stages;
    this.random = seededRandom(options.seed);
    const n = dp * this.stages;
    this.nodeAt = Int32Array.from({ length: n }, (_, slot) => slot);
    this.slotOf = this.nodeAt.slice();
    this.rings = Array.from({ length: this.stages }, () => Array.from({ length: dp }, (_, d) => d));
    this.fabric = cluster.fabric;
    this.migrationMs = cluster.migrationMs ?? DEFAULT_MIGRATION_MS;
    if (!Number.isFinite(this.migrationMs) || this.migrationMs < 0) throw new InputError(`emulated job: migrationMs ${cluster.migrationMs} is not a finite number >= 0`);
    this.slowdowns = (cluster.computeSlowdowns ?? []).map((c) => ({ ...c }));
    for (const c of this.slowdowns) {
      if (!Number.isInteger(c.rank) || c.rank < 0 || c.rank >= n) throw new InputError(`emulated job: compute slowdown of rank ${c.rank}, not a rank of this job (0..${n - 1})`);
      if (!(c.factor > 0) || !Number.isFinite(c.factor)) throw new InputError(`emulated job: compute slowdown factor ${c.factor} of rank ${c.rank} is not a finite number > 0`);
    }
    this.handoffGBps = cluster.layers?.handoffGBps ?? DEFAULT_HANDOFF_GBPS;
    if (!(this.handoffGBps > 0) || !Number.isFinite(this.handoffGBps)) throw new InputError(`emulated job: handoffGBps ${cluster.layers?.handoffGBps} is not a finite number > 0`);
    this.layers = cluster.layers ? checkedLayers(cluster.layers.declared, profile) : null;
    this.split = this.layers ? this.layers.perStage.slice() : [];
    this.stageMs = this.layers ? stageTimes(this.layers, this.split) : Array.from({ length: this.stages }, (_, i) => [profile.fMs[i], profile.bMs[i], profile.wMs[i]]);
    this.allReduce = null;
    if (cluster.allReduce) {
      const c = cluster.allReduce;
      const model: AllReduceModel = {
        gradientBytes: Array.isArray(c.gradientBytes) ? c.gradientBytes.slice() : c.gradientBytes,
        chunkBytes: c.chunkBytes ?? 4 * 1024 * 1024,
        inflight: c.inflightChunks ?? 8,
        latencyMs: c.ringLatencyMs ?? 0.01,
        gbps: c.ringGBps ?? 50,
      };
      const problems = validateAllReduceModel(model, this.stages);
      if (problems.length > 0) throw new InputError(`emulated job: all-reduce: ${problems.join('; ')}`);
      if (dp > 1) this.allReduce = model;
    }
  }

  rankOf(dp: number, pp: number): number {
    return this.nodeAt[dp * this.stages + pp];
  }

  /** Where `rank` sits now. */
  coordinatesOf(rank: number): { dp: number; pp: number } {
    const slot = this.slotOf[rank];
    return { dp: Math.floor(slot / this.stages), pp: slot % this.stages };
  }

  /** The ring successor (a dp index) of replica `dp` in stage `pp`'s ring. */
  ringSuccessor(dp: number, pp: number): number {
    const ring = this.rings[pp];
    return ring[(ring.indexOf(dp) + 1) % ring.length];
  }

  /** Topology version in force (0: the registration layout). */
  get topologyVersion(): number {
    return this.topology;
  }

  /** Split version in force (0: the registered split, or a job without layers). */
  get layersVersion(): number {
    return this.splitVersion;
  }

  /** Layers per stage in force (empty for a job without layers). */
  get perStage(): number[] {
    return this.split.slice();
  }

  /** The compute slowdown of `rank` at `iteration` (1: healthy; overlapping slowdowns multiply). */
  computeFactor(rank: number, iteration: number): number {
    let f = 1;
    for (const c of this.slowdowns) if (c.rank === rank && iteration >= c.fromIteration && (c.untilIteration === undefined || iteration < c.untilIteration)) f *= c.factor;
    return f;
  }

  /**
   * Switches to the split `l` from the next iteration on (docs/protocol.md sec. 5.7), when its
   * version differs from the one in force: each stage's op times become its new layers' sums, and
   * the next iteration pays the handoff of every layer whose stage changes (worked out from the
   * split in force, as a rank does, not read from `moves`), priced as the daemon prices it. A job
   * without layers ignores it (a runtime without support keeps its layers). Throws on a split that
   * does not share out the declared layers, without changing anything.
   */
  applyLayers(l: ScheduleLayers): void {
    const declared = this.layers;
    if (!declared || l.version === this.splitVersion) return;
    const what = `layers version ${l.version}`;
    if (!Number.isInteger(l.version) || l.version < 1) throw new InputError(`layers: version ${l.version} is not an integer >= 1`);
    if (!Array.isArray(l.perStage) || l.perStage.length !== this.stages) throw new InputError(`${what}: perStage needs one entry per stage (${this.stages})`);
    if (l.perStage.some((n) => !Number.isInteger(n) || n < 1)) throw new InputError(`${what}: perStage ${JSON.stringify(l.perStage)} must hold at least one layer per stage`);
    const total = l.perStage.reduce((a, b) => a + b, 0);
    if (total !== declared.fMs.length) throw new InputError(`${what}: perStage shares out ${total} layers, the job declared ${declared.fMs.length}`);
    this.pendingHandoffMs += movedBytes(this.split, l.perStage, declared.stateBytes) / (this.handoffGBps * 1e6);
    this.split = l.perStage.slice();
    this.splitVersion = l.version;
    this.stageMs = stageTimes(declared, this.split);
  }

  /** The current placement in the core's terms (copies). */
  placement(): Placement {
    return { dpSize: this.dp, stages: this.stages, nodeAt: this.nodeAt.slice(), rings: this.rings.map((r) => Int32Array.from(r)) };
  }

  /** The all-reduce as a registration announces it, or undefined when not modelled. */
  dataParallelSpec(): DataParallelSpec | undefined {
    const m = this.allReduce;
    return m ? { gradientBytes: m.gradientBytes.slice(), chunkBytes: m.chunkBytes, inflightChunks: m.inflight, gbps: m.gbps, latencyMs: m.latencyMs } : undefined;
  }

  /**
   * Switches to `t` from the next iteration on: rebuilds the placement and rings. The ranks in
   * `t.moved` load their new stage's weights and optimizer state (protocol), and so does any rank
   * whose stage differs from the one it runs now (possible when a topology version was skipped);
   * if any rank loads, the next iteration pays `migrationMs` once (they load in parallel). A
   * switch that only reorders rings costs nothing. Throws on an inconsistent assignment without
   * changing anything.
   */
  applyTopology(t: TopologyAssignment): void {
    const S = this.stages;
    const D = this.dp;
    const n = D * S;
    const what = `topology version ${t?.version}`;
    if (!t || !Number.isInteger(t.version) || t.version < 1) throw new InputError(`topology: version ${t?.version} is not an integer >= 1`);
    if (!Array.isArray(t.ranks) || t.ranks.length !== n) throw new InputError(`${what}: must place all ${n} ranks, places ${Array.isArray(t.ranks) ? t.ranks.length : 'none'}`);
    const nodeAt = new Int32Array(n).fill(-1);
    const placed = new Uint8Array(n);
    for (const { rank, dp, pp } of t.ranks) {
      if (!Number.isInteger(rank) || rank < 0 || rank >= n) throw new InputError(`${what}: rank ${rank} is not a rank of this job (0..${n - 1})`);
      if (placed[rank]) throw new InputError(`${what}: rank ${rank} is placed twice`);
      if (!Number.isInteger(dp) || dp < 0 || dp >= D || !Number.isInteger(pp) || pp < 0 || pp >= S) throw new InputError(`${what}: rank ${rank} at (dp ${dp}, pp ${pp}) is outside the ${D} x ${S} grid`);
      const slot = dp * S + pp;
      if (nodeAt[slot] >= 0) throw new InputError(`${what}: ranks ${nodeAt[slot]} and ${rank} both at (dp ${dp}, pp ${pp})`);
      nodeAt[slot] = rank;
      placed[rank] = 1;
    }
    if (!Array.isArray(t.rings) || t.rings.length !== S) throw new InputError(`${what}: needs one ring per stage (${S}), has ${Array.isArray(t.rings) ? t.rings.length : 'none'}`);
    t.rings.forEach((ring, pp) => {
      const ok = Array.isArray(ring) && ring.length === D && new Set(ring).size === D && ring.every((d) => Number.isInteger(d) && d >= 0 && d < D);
      if (!ok) throw new InputError(`${what}: ring of stage ${pp} ${JSON.stringify(ring)} is not an order of 0..${D - 1}`);
    });
    if (!Array.isArray(t.moved) || t.moved.some((r) => !Number.isInteger(r) || r < 0 || r >= n)) throw new InputError(`${what}: moved must list ranks of this job (0..${n - 1})`);
    let moves = 0;
    nodeAt.forEach((rank, slot) => {
      if (slot % S !== this.slotOf[rank] % S) moves++;
    });
    this.nodeAt = nodeAt;
    this.slotOf = new Int32Array(n);
    nodeAt.forEach((rank, slot) => (this.slotOf[rank] = slot));
    this.rings = t.rings.map((r) => r.slice());
    this.topology = t.version;
    if (moves > 0 || t.moved.length > 0) this.pendingMigrationMs = this.migrationMs;
  }

  /** Gaussian jitter factor, clipped so an op never takes less than half its time. */
  private jitterFactor(): number {
    if (this.options.jitter <= 0) return 1;
    const u = Math.max(1e-12, this.random());
    const gaussian = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.random());
    return Math.max(0.5, 1 + this.options.jitter * gaussian);
  }

  /** Largest fabric extra delay on a link of stage `pp`'s ring at `iteration`, ms. */
  ringExtraMs(pp: number, iteration: number): number {
    if (!this.fabric || this.dp < 2) return 0;
    const ring = this.rings[pp];
    let worst = 0;
    for (let k = 0; k < ring.length; k++) {
      const extra = this.fabric.pairExtraMs(this.rankOf(ring[k], pp), this.rankOf(ring[(k + 1) % ring.length], pp), iteration);
      if (extra > worst) worst = extra;
    }
    return worst;
  }

  /** Runs iteration `iteration` with `plans[dp]` for each replica and advances the virtual clock. */
  runIteration(iteration: number, plans: ReplicaPlan[], versions: number[]): IterationResult {
    const startMs = this.clockMs;
    const handoffMs = this.pendingHandoffMs;
    this.pendingHandoffMs = 0;
    // The moved ranks load their state, and the moved layers reach their new stages, before anything runs.
    const migrationMs = this.pendingMigrationMs;
    this.pendingMigrationMs = 0;
    const pausedMs = migrationMs + handoffMs;
    const runStartMs = startMs + pausedMs;
    const replicas = [];
    for (let dp = 0; dp < this.dp; dp++) replicas.push(this.runReplica(dp, iteration, runStartMs, plans[dp]));
    const replicaMs = replicas.map((r) => r.run.iterationMs);
    let iterationMs = Math.max(...replicaMs);
    const allReduceMs: number[] = [];
    const model = this.allReduce;
    if (model) {
      const ringExtra = Array.from({ length: this.stages }, (_, pp) => this.ringExtraMs(pp, iteration));
      for (let pp = 0; pp < this.stages; pp++) allReduceMs.push(ringAllReduceMs(model, pp, this.dp, ringExtra[pp]));
      iterationMs = Math.max(iterationMs, iterationWithAllReduceMs(model, replicas.map((r) => stageFinishTimes(r.run)), ringExtra));
    }
    iterationMs += pausedMs;
    const rankDoneMs = new Array<number>(this.dp * this.stages).fill(iterationMs);
    if (!model) {
      for (let dp = 0; dp < this.dp; dp++) {
        const finish = stageFinishTimes(replicas[dp].run);
        for (let pp = 0; pp < this.stages; pp++) rankDoneMs[this.rankOf(dp, pp)] = pausedMs + finish[pp];
      }
    }
    const reports: RankReport[] = [];
    for (let dp = 0; dp < this.dp; dp++) {
      const { run, opMs, jitter } = replicas[dp];
      for (let pp = 0; pp < this.stages; pp++) reports.push(this.report(dp, pp, iteration, versions[this.rankOf(dp, pp)], run, opMs, jitter, plans[dp]));
    }
    for (const r of reports) r.iterationMs = iterationMs;
    this.clockMs += iterationMs;
    return { iteration, startMs, iterationMs, replicaMs, allReduceMs, migrationMs, topologyVersion: this.topology, handoffMs, layersVersion: this.splitVersion, rankDoneMs, reports };
  }

  private delegated(plan: ReplicaPlan, dp: number, link: number): number {
    const up = plan.delegation.get(this.rankOf(dp, link));
    const down = plan.delegation.get(this.rankOf(dp, link + 1));
    return up && down ? Math.max(1, Math.min(up.sendQueues, down.sendQueues)) : 0;
  }

  /**
   * Per pipeline link of replica `dp`: whether its ranks route it over the host path on their own
   * this iteration (nicFailover, its GPU-direct path dead and not delegated by the schedule).
   * Forgets the links whose NIC is back or that the schedule delegates, so a later failure times out again.
   */
  private failover(dp: number, failed: boolean[]): boolean[] {
    const links = this.stages - 1;
    for (let l = 0; l < links; l++) if (!failed[l]) this.failedOver.delete(dp * links + l);
    return failed.map((f) => f && this.options.nicFailover === true);
  }

  private runReplica(dp: number, iteration: number, startMs: number, plan: ReplicaPlan): { run: EngineRun; opMs: number[][]; jitter: number[] } {
    const S = this.stages;
    const jitter: number[] = [];
    const opMs = Array.from({ length: S }, (_, i) => {
      const j = this.jitterFactor();
      jitter.push(j);
      const k = j * this.computeFactor(this.rankOf(dp, i), iteration);
      const [f, b, w] = this.stageMs[i];
      return [f * k, b * k, w * k];
    });
    const base = toPipelineModel({ ...this.profile, fMs: opMs.map((o) => o[0]), bMs: opMs.map((o) => o[1]), wMs: opMs.map((o) => o[2]) });
    const delegateQueues = Int32Array.from({ length: S - 1 }, (_, l) => this.delegated(plan, dp, l));
    const failed = Array.from({ length: S - 1 }, (_, l) => this.delays.nicFailed(l, iteration) && delegateQueues[l] === 0);
    const fallback = this.failover(dp, failed);
    // A dead link that fails over: its first send this iteration is the one that times out (if the ranks did not know yet).
    const timeoutPending = fallback.map((f, l) => f && !this.failedOver.has(dp * (S - 1) + l));
    for (let l = 0; l < S - 1; l++) {
      if (!fallback[l]) continue;
      failed[l] = false;
      delegateQueues[l] = 1;
      this.failedOver.add(dp * (S - 1) + l);
    }
    const hostPath = (pp: number) => plan.delegation.has(this.rankOf(dp, pp)) || (pp > 0 && fallback[pp - 1]) || (pp < S - 1 && fallback[pp]);
    const copyOverhead = Float64Array.from({ length: S }, (_, pp) => (hostPath(pp) ? this.options.copyOverhead : 0));
    const fabric = this.fabric;
    const fabricMs = Float64Array.from({ length: S - 1 }, (_, l) => (fabric ? fabric.pairExtraMs(this.rankOf(dp, l), this.rankOf(dp, l + 1), iteration) : 0));
    const model = {
      ...base,
      transport: {
        gpuSlots: new Int32Array(S - 1).fill(this.options.gpuSlots),
        delegateQueues,
        copyOverhead,
        extraDelayMs: (link: number, t: number) => {
          if (failed[link]) return this.options.nicTimeoutMs;
          const ms = this.delays.delayMs(link, startMs + t, iteration) + fabricMs[link];
          if (!timeoutPending[link]) return ms;
          timeoutPending[link] = false;
          return ms + this.options.nicTimeoutMs;
        },
      },
    };
    return { run: simulateSchedule(model, plan.schedule), opMs, jitter };
  }

  /** The report rank (dp, pp) sends: its op times and, per link it sent on, the time one send took once started. */
  private report(dp: number, pp: number, iteration: number, version: number, run: EngineRun, opMs: number[][], jitter: number[], plan: ReplicaPlan): RankReport {
    const links: LinkSample[] = [];
    const m = run.messages;
    for (const [direction, link, peerPp] of [[0, pp, pp + 1], [1, pp - 1, pp - 1]] as const) {
      if (link < 0 || link >= this.stages - 1) continue;
      const times: number[] = [];
      for (let k = 0; k < m.count; k++) if (m.link[k] === link && m.direction[k] === direction) times.push(m.arriveMs[k] - m.transferStartMs[k]);
      if (times.length === 0) continue;
      const delegated = this.delegated(plan, dp, link) > 0 || this.failedOver.has(dp * (this.stages - 1) + link);
      // The GPU-direct path's state, whatever path the traffic took (docs/protocol.md, report links).
      const failed = this.delays.nicFailed(link, iteration);
      links.push({
        peer: this.rankOf(dp, peerPp),
        kind: 'pipeline',
        bytes: this.options.messageBytes,
        medianMs: median(times),
        maxMs: Math.max(...times),
        count: times.length,
        delegated,
        error: failed ? 'nic-failure' : null,
      });
    }
    const dpLink = this.dataParallelSample(dp, pp, iteration, jitter[pp]);
    if (dpLink) links.push(dpLink);
    const toggle = plan.delegation.get(this.rankOf(dp, pp));
    return {
      type: 'report',
      protocol: 1,
      jobId: this.jobId,
      rank: this.rankOf(dp, pp),
      iteration,
      scheduleVersion: version,
      computeMs: { f: opMs[pp][0], b: opMs[pp][1], w: opMs[pp][2] },
      links,
      delegation: { enabled: toggle !== undefined, sendQueues: toggle?.sendQueues ?? 0, recvQueues: toggle?.recvQueues ?? 0 },
    };
  }

  /**
   * Rank (dp, pp)'s outgoing data-parallel ring link: to the rank of its ring successor in its
   * stage, the time one chunk takes from send to arrival (latency + extra delay + transfer; several
   * are in flight, so the ring's pace is the core's chunkMs), scaled by the rank's op-time jitter
   * of this iteration (no extra random draws; not by a compute slowdown).
   */
  private dataParallelSample(dp: number, pp: number, iteration: number, jitter: number): LinkSample | null {
    const model = this.allReduce;
    if (!model) return null;
    const count = ringMessages(model, pp, this.dp);
    if (count === 0) return null;
    const from = this.rankOf(dp, pp);
    const peer = this.rankOf(this.ringSuccessor(dp, pp), pp);
    const extra = this.fabric ? this.fabric.pairExtraMs(from, peer, iteration) : 0;
    const medianMs = (model.latencyMs + extra + model.chunkBytes / (model.gbps * 1e6)) * jitter;
    return { peer, kind: 'data-parallel', bytes: model.chunkBytes, medianMs, maxMs: medianMs * (1 + 2 * this.options.jitter), count, delegated: false, error: null };
  }
}

/** Per stage, F, B and W of one microbatch under `split`: the sums of its layers' declared times. */
function stageTimes(layers: DeclaredLayers, split: readonly number[]): number[][] {
  const out: number[][] = [];
  for (let s = 0, first = 0; s < split.length; first += split[s], s++) {
    const t = [0, 0, 0];
    for (let l = first; l < first + split[s]; l++) {
      t[0] += layers.fMs[l];
      t[1] += layers.bMs[l];
      t[2] += layers.wMs[l];
    }
    out.push(t);
  }
  return out;
}

/** State bytes of every layer whose stage differs between split `from` and split `to`. */
export function movedBytes(from: readonly number[], to: readonly number[], stateBytes: readonly number[]): number {
  const stageOf = (split: readonly number[]) => split.flatMap((n, s) => new Array<number>(n).fill(s));
  const a = stageOf(from);
  const b = stageOf(to);
  let bytes = 0;
  for (let l = 0; l < a.length; l++) if (a[l] !== b[l]) bytes += stateBytes[l];
  return bytes;
}

/** The declared layers, checked against the profile: one split entry per stage, and the profile's stage times its sums (the registration says both). */
function checkedLayers(declared: DeclaredLayers, profile: PipelineProfile): DeclaredLayers {
  const L = declared.fMs.length;
  for (const name of ['bMs', 'wMs', 'stateBytes', 'activationBytes'] as const) {
    if (declared[name].length !== L) throw new InputError(`emulated job: layers.${name} has ${declared[name].length} entries, layers.fMs has ${L}`);
  }
  if (declared.perStage.length !== profile.stages) throw new InputError(`emulated job: layers.perStage has ${declared.perStage.length} entries, the job has ${profile.stages} stages`);
  if (declared.perStage.reduce((a, b) => a + b, 0) !== L) throw new InputError(`emulated job: layers.perStage does not share out the ${L} layers`);
  if (profile.memory) throw new InputError('emulated job: layers with a profile memory model are not modelled (activation memory would change with the split)');
  const sums = stageTimes(declared, declared.perStage);
  const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  sums.forEach(([f, b, w], s) => {
    if (!close(f, profile.fMs[s]) || !close(b, profile.bMs[s]) || !close(w, profile.wMs[s])) {
      throw new InputError(`emulated job: stage ${s}'s profile times ${profile.fMs[s]} / ${profile.bMs[s]} / ${profile.wMs[s]} ms are not its layers' sums ${f} / ${b} / ${w} ms`);
    }
  });
  return { ...declared, fMs: declared.fMs.slice(), bMs: declared.bMs.slice(), wMs: declared.wMs.slice(), stateBytes: declared.stateBytes.slice(), activationBytes: declared.activationBytes.slice(), perStage: declared.perStage.slice() };
}
