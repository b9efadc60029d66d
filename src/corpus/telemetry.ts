import { DEFAULT_TRANSPORT_CONFIG, TransportConfig } from '../core/control/control-config.type';
import { DelegationPlan, JobControlInput, PipelineGroupPlan } from '../core/control/control-input.type';
import { linkTransportOf, transportKey } from '../core/control/link-transport';
import { simulateSchedule } from '../core/engine/simulator';
import { PipelineModel } from '../core/pipeline/pipeline-model.type';
import { chunkMs, iterationWithAllReduceMs, ringMessages } from '../core/topology/all-reduce';
import { stageFinishTimes } from '../core/topology/stage-finish';
import { AllReduceModel } from '../core/topology/topology.type';
import { RankReport, Registration } from '../protocol/protocol-v1.type';
import { CorpusScenario } from './corpus.type';
import { pairKey, TruthState } from './ground-truth';
import { IterationNoise, NoiseSource } from './noise';

const MESSAGE_BYTES = 1 << 24;
const CHUNK_BYTES = 1 << 22;
const RING_GBPS = 50;
const RING_LATENCY_MS = 0.01;
const RING_INFLIGHT = 8;

/** Where ranks sit: reporting rank at slot (dp, pp) = rankAt[dp * stages + pp]; per stage, its ring order of dp indices. */
export interface Layout {
  rankAt: number[];
  rings: number[][];
}

/** What runs: the plan in force and its version. */
export interface PlanInForce {
  version: number;
  pipelines: PipelineGroupPlan[];
  delegation: DelegationPlan[];
}

export function initialLayout(s: CorpusScenario): Layout {
  const { stages, dp } = s.shape;
  return { rankAt: Array.from({ length: stages * dp }, (_, i) => i), rings: Array.from({ length: stages }, () => Array.from({ length: dp }, (_, d) => d)) };
}

export function allReduceOf(s: CorpusScenario): AllReduceModel | null {
  return s.shape.dp > 1 ? { gradientBytes: s.shape.gradientBytes, latencyMs: RING_LATENCY_MS, gbps: RING_GBPS, chunkBytes: CHUNK_BYTES, inflight: RING_INFLIGHT } : null;
}

/** The registration a scenario's ranks would send (one node per rank, tp 1). */
export function registrationOf(s: CorpusScenario, jobId: string): Registration {
  const { stages, dp, microbatches, deviceActivations, gradientBytes, fMs, bMs, wMs } = s.shape;
  const activationBytes = 1 << 26;
  return {
    type: 'register',
    protocol: 1,
    jobId,
    stages,
    microbatches,
    dp,
    tp: 1,
    ranks: Array.from({ length: stages * dp }, (_, rank) => ({
      rank, dp: Math.floor(rank / stages), pp: rank % stages, tp: 0, node: `node-${rank}`,
      ...(s.localities ? { locality: s.localities[rank] } : {}),
    })),
    memory: { deviceBytes: new Array(stages).fill(deviceActivations * activationBytes), activationBytes: new Array(stages).fill(activationBytes), hostBytes: 1e12 },
    computeMs: { fMs, bMs, wMs },
    ...(dp > 1 ? { dataParallel: { gradientBytes, chunkBytes: CHUNK_BYTES, gbps: RING_GBPS, latencyMs: RING_LATENCY_MS, inflightChunks: RING_INFLIGHT } } : {}),
    // The nominal time is latency + bytes at bandwidth: a bandwidth so high that it is the latency alone.
    ...(s.shape.nominalLinkMs !== undefined ? { network: { latencyMs: s.shape.nominalLinkMs, nominalGBps: 1e9 } } : {}),
  } as Registration;
}

/** Ring successor pairs of stage p: [fromDp, toDp]. */
function ringEdges(ring: number[]): Array<[number, number]> {
  if (ring.length < 2) return [];
  return ring.map((d, i) => [d, ring[(i + 1) % ring.length]] as [number, number]);
}

/**
 * The job as it really runs under a plan and the ground truth: iteration times from the engine
 * (each replica's schedule with its real link delays and rank speeds, the ranks' transport, then
 * each stage's ring all-reduce), and the protocol v1 reports its ranks would send, with noise.
 */
export class JobTelemetry {
  private readonly S: number;
  private readonly D: number;
  private readonly nodes: number;
  private readonly allReduce: AllReduceModel | null;
  private readonly iterationCache = new Map<string, number>();
  private readonly transport: TransportConfig;

  constructor(private readonly scenario: CorpusScenario, private readonly jobId: string, transport: TransportConfig = DEFAULT_TRANSPORT_CONFIG) {
    this.S = scenario.shape.stages;
    this.D = scenario.shape.dp;
    this.nodes = this.S * this.D;
    this.allReduce = allReduceOf(scenario);
    this.transport = transport;
  }

  private extra(truth: TruthState, a: number, b: number): number {
    return truth.pairExtraMs.get(pairKey(a, b, this.nodes)) ?? 0;
  }

  private failed(truth: TruthState, a: number, b: number): boolean {
    return truth.failedPairs.has(pairKey(a, b, this.nodes));
  }

  /** Healthy time of one ring chunk, ms (core chunkMs with no extra delay). */
  ringChunkMs(): number {
    return this.allReduce ? chunkMs(this.allReduce, 0) : 0;
  }

  /** The iteration time of `plan` on `layout` under `truth`, ms (no noise; cached). */
  iterationMs(plan: PlanInForce, layout: Layout, truth: TruthState): number {
    const key = `${plan.version}|${layout.rankAt.join(',')}|${layout.rings.map((r) => r.join(',')).join(';')}|${truth.key}`;
    let ms = this.iterationCache.get(key);
    if (ms !== undefined) return ms;
    const { S, D } = this;
    const sh = this.scenario.shape;
    const input = { stages: S, dpSize: D, links: [], topology: { rankAt: layout.rankAt } } as unknown as JobControlInput;
    const finish: Float64Array[] = [];
    const perSchedule = new Map<string, Float64Array>();
    for (let d = 0; d < D; d++) {
      const group = plan.pipelines.find((p) => p.dpReplicas.includes(d)) ?? plan.pipelines[0];
      const transport = linkTransportOf(input, d, plan.delegation, this.transport);
      const durations = new Float64Array(S * 3);
      const linkMs = new Float64Array(Math.max(0, S - 1));
      for (let p = 0; p < S; p++) {
        const factor = truth.computeFactor.get(layout.rankAt[d * S + p]) ?? 1;
        durations[3 * p] = sh.fMs[p] * factor;
        durations[3 * p + 1] = sh.bMs[p] * factor;
        durations[3 * p + 2] = sh.wMs[p] * factor;
      }
      for (let l = 0; l < S - 1; l++) {
        const a = layout.rankAt[d * S + l];
        const b = layout.rankAt[d * S + l + 1];
        linkMs[l] = sh.linkMs + this.extra(truth, a, b);
        if (this.failed(truth, a, b) && transport.delegateQueues[l] === 0) {
          // pipemorph's ranks fail over on their own (docs/protocol.md sec. 7): after the first timed-out
          // send (the same for every policy, left out) the link's traffic takes one host-path queue on
          // both ends, paying the copy overhead, until a schedule delegates it.
          transport.delegateQueues[l] = 1;
          transport.copyOverhead[l] = this.transport.delegateCopyOverhead;
          transport.copyOverhead[l + 1] = this.transport.delegateCopyOverhead;
        }
      }
      const k = `${plan.pipelines.indexOf(group)}|${durations.join(',')}|${linkMs.join(',')}|${transportKey(transport)}`;
      let f = perSchedule.get(k);
      if (!f) {
        const model: PipelineModel = { stages: S, microbatches: sh.microbatches, durations, linkMs, transferMs: new Float64Array(Math.max(0, S - 1)), memDelta: null, memLimit: null, transport };
        f = stageFinishTimes(simulateSchedule(model, group.schedule));
        perSchedule.set(k, f);
      }
      finish.push(f);
    }
    const ringExtra = new Float64Array(S);
    for (let p = 0; p < S; p++) {
      for (const [from, to] of ringEdges(layout.rings[p])) ringExtra[p] = Math.max(ringExtra[p], this.extra(truth, layout.rankAt[from * S + p], layout.rankAt[to * S + p]));
    }
    ms = iterationWithAllReduceMs(this.allReduce, finish, ringExtra);
    if (this.iterationCache.size > 50000) this.iterationCache.clear();
    this.iterationCache.set(key, ms);
    return ms;
  }

  /** The reports of iteration `t`, in rank order; `iterationMs` is the true time (noise is added here). */
  reports(t: number, plan: PlanInForce, layout: Layout, truth: TruthState, iterationMs: number, noise: NoiseSource, n: IterationNoise): RankReport[] {
    const { S, D } = this;
    const sh = this.scenario.shape;
    const queues = new Map(plan.delegation.map((d) => [d.rank, d.sendQueues]));
    const out: RankReport[] = [];
    const slotOf = new Map<number, number>();
    layout.rankAt.forEach((rank, slot) => slotOf.set(rank, slot));
    const chunk = this.ringChunkMs();
    for (let rank = 0; rank < this.nodes; rank++) {
      if (n.silent.has(rank)) continue;
      const slot = slotOf.get(rank)!;
      const d = Math.floor(slot / S);
      const p = slot % S;
      const warm = n.warmFactor.get(rank) ?? 1;
      const factor = (truth.computeFactor.get(rank) ?? 1) * warm;
      const step = n.clockStepMs.get(rank) ?? 0;
      const links: RankReport['links'] = [];
      const sample = (peer: number, kind: 'pipeline' | 'data-parallel', baseMs: number, bytes: number, messages: number) => {
        const extra = this.extra(truth, rank, peer);
        const failed = this.failed(truth, rank, peer);
        const delegated = kind === 'pipeline' && queues.has(rank) && queues.has(peer);
        // A pause of the receiver holds the messages in flight to it; the sender, blocked on them, sends nothing more meanwhile.
        const pause = n.pauseMs.get(peer) ?? 0;
        const inFlight = kind === 'data-parallel' ? RING_INFLIGHT : delegated ? Math.min(queues.get(rank)!, queues.get(peer)!) : this.transport.gpuSendsInFlight;
        const s = noise.linkSample((baseMs + extra) * warm * n.linkFactor);
        const medianMs = s.medianMs + (2 * inFlight > messages ? pause : 0);
        links.push({ peer, kind, bytes, medianMs, maxMs: Math.max(medianMs, s.maxMs + pause + Math.abs(step)), delegated, error: failed ? 'nic-failure' : null });
      };
      if (p + 1 < S) sample(layout.rankAt[d * S + p + 1], 'pipeline', sh.linkMs, MESSAGE_BYTES, sh.microbatches);
      if (p > 0) sample(layout.rankAt[d * S + p - 1], 'pipeline', sh.linkMs, MESSAGE_BYTES, sh.microbatches);
      if (D > 1) {
        const ring = layout.rings[p];
        const next = ring[(ring.indexOf(d) + 1) % ring.length];
        sample(layout.rankAt[next * S + p], 'data-parallel', chunk, CHUNK_BYTES, this.allReduce ? ringMessages(this.allReduce, p, D) : 0);
      }
      const c = () => factor * noise.computeFactor();
      out.push({
        type: 'report',
        protocol: 1,
        jobId: this.jobId,
        rank,
        iteration: t,
        scheduleVersion: plan.version,
        iterationMs: Math.max(0, iterationMs + n.iterationExtraMs + step),
        computeMs: { f: sh.fMs[p] * c(), b: sh.bMs[p] * c(), w: sh.wMs[p] * c() },
        links,
      });
    }
    return out;
  }
}
