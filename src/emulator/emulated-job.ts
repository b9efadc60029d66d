import { EngineRun } from '../core/engine/engine-run.type';
import { simulateSchedule } from '../core/engine/simulator';
import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { PipelineProfile } from '../core/pipeline/pipeline-profile.type';
import { Schedule } from '../core/pipeline/schedule.type';
import { seededRandom } from '../core/planner/seeded-random';
import { DelegationToggle, LinkSample, RankReport } from '../protocol/protocol-v1.type';
import { DelayModel } from './delay/delay-model.type';

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
}

export const DEFAULT_EMULATION: EmulationOptions = { jitter: 0.01, gpuSlots: 1, copyOverhead: 0.02, nicTimeoutMs: 2000, messageBytes: 1 << 24, seed: 1 };

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
  replicaMs: number[];
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
 * Rank numbering: rank = dp * stages + pp (one reporting rank per stage and replica).
 */
export class EmulatedJob {
  readonly stages: number;
  clockMs = 0;
  private readonly random: () => number;

  constructor(
    readonly jobId: string,
    readonly profile: PipelineProfile,
    readonly dp: number,
    readonly delays: DelayModel,
    readonly options: EmulationOptions = DEFAULT_EMULATION,
  ) {
    this.stages = profile.stages;
    this.random = seededRandom(options.seed);
  }

  rankOf(dp: number, pp: number): number {
    return dp * this.stages + pp;
  }

  /** Gaussian jitter factor, clipped so an op never takes less than half its time. */
  private jitterFactor(): number {
    if (this.options.jitter <= 0) return 1;
    const u = Math.max(1e-12, this.random());
    const gaussian = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.random());
    return Math.max(0.5, 1 + this.options.jitter * gaussian);
  }

  /** Runs iteration `iteration` with `plans[dp]` for each replica and advances the virtual clock. */
  runIteration(iteration: number, plans: ReplicaPlan[], versions: number[]): IterationResult {
    const startMs = this.clockMs;
    const replicaMs: number[] = [];
    const reports: RankReport[] = [];
    for (let dp = 0; dp < this.dp; dp++) {
      const { run, opMs } = this.runReplica(dp, iteration, startMs, plans[dp]);
      replicaMs.push(run.iterationMs);
      for (let pp = 0; pp < this.stages; pp++) reports.push(this.report(dp, pp, iteration, versions[this.rankOf(dp, pp)], run, opMs, plans[dp]));
    }
    const iterationMs = Math.max(...replicaMs);
    for (const r of reports) r.iterationMs = iterationMs;
    this.clockMs += iterationMs;
    return { iteration, startMs, iterationMs, replicaMs, reports };
  }

  private delegated(plan: ReplicaPlan, dp: number, link: number): number {
    const up = plan.delegation.get(this.rankOf(dp, link));
    const down = plan.delegation.get(this.rankOf(dp, link + 1));
    return up && down ? Math.max(1, Math.min(up.sendQueues, down.sendQueues)) : 0;
  }

  private runReplica(dp: number, iteration: number, startMs: number, plan: ReplicaPlan): { run: EngineRun; opMs: number[][] } {
    const S = this.stages;
    const opMs = Array.from({ length: S }, (_, i) => {
      const j = this.jitterFactor();
      return [this.profile.fMs[i] * j, this.profile.bMs[i] * j, this.profile.wMs[i] * j];
    });
    const base = toPipelineModel({ ...this.profile, fMs: opMs.map((o) => o[0]), bMs: opMs.map((o) => o[1]), wMs: opMs.map((o) => o[2]) });
    const delegateQueues = Int32Array.from({ length: S - 1 }, (_, l) => this.delegated(plan, dp, l));
    const failed = Array.from({ length: S - 1 }, (_, l) => this.delays.nicFailed(l, iteration) && delegateQueues[l] === 0);
    const copyOverhead = Float64Array.from({ length: S }, (_, pp) => (plan.delegation.has(this.rankOf(dp, pp)) ? this.options.copyOverhead : 0));
    const model = {
      ...base,
      transport: {
        gpuSlots: new Int32Array(S - 1).fill(this.options.gpuSlots),
        delegateQueues,
        copyOverhead,
        extraDelayMs: (link: number, t: number) => (failed[link] ? this.options.nicTimeoutMs : this.delays.delayMs(link, startMs + t, iteration)),
      },
    };
    return { run: simulateSchedule(model, plan.schedule), opMs };
  }

  /** The report rank (dp, pp) sends: its op times and, per link it sent on, the time one send took once started. */
  private report(dp: number, pp: number, iteration: number, version: number, run: EngineRun, opMs: number[][], plan: ReplicaPlan): RankReport {
    const links: LinkSample[] = [];
    const m = run.messages;
    for (const [direction, link, peerPp] of [[0, pp, pp + 1], [1, pp - 1, pp - 1]] as const) {
      if (link < 0 || link >= this.stages - 1) continue;
      const times: number[] = [];
      for (let k = 0; k < m.count; k++) if (m.link[k] === link && m.direction[k] === direction) times.push(m.arriveMs[k] - m.transferStartMs[k]);
      if (times.length === 0) continue;
      const delegated = this.delegated(plan, dp, link) > 0;
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
}
