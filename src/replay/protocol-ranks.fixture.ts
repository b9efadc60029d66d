import { seededRandom } from '../core/planner/seeded-random';
import { RankReport, Registration } from '../protocol/protocol-v1.type';

/**
 * Ranks of a 4 x 12 x dp 2 job written from docs/protocol.md alone, with noise of their own, not
 * the corpus's (src/corpus): the shapes an outside rank model sent the daemon (issue 29). Every
 * pipeline and ring direction's per-iteration median carries a Pareto(1.3) excess; links run
 * `linkMs` healthy while the registration's nominal network says `nominalMs` (optimistic by about
 * a millisecond). A case sets `extraMs` (per direction, per iteration) and `computeFactor` (per rank).
 * Open loop: what ranks report does not depend on the schedule they run, which is what the
 * detector and the gate are judged on here.
 */
export class ProtocolRanks {
  readonly stages = 4;
  readonly dp = 2;
  readonly microbatches = 12;
  readonly linkMs = 1.7;
  readonly nominalMs = 0.69;
  readonly ringMs = 4;
  /** Scale of the Pareto(1.3) excess every direction's median carries, ms. */
  paretoScaleMs = 0.3;
  /** Extra delay of a direction at an iteration, ms: `dir` 'fwd' is reported by the upstream rank, 'bwd' by the downstream. */
  extraMs: (iteration: number, dp: number, link: number, dir: 'fwd' | 'bwd') => number = () => 0;
  ringExtraMs: (iteration: number, fromRank: number, toRank: number) => number = () => 0;
  computeFactor: (iteration: number, rank: number) => number = () => 1;
  private readonly random: () => number;

  constructor(readonly jobId: string, seed: number) {
    this.random = seededRandom(seed);
  }

  registration(): Registration {
    const S = this.stages;
    const D = this.dp;
    return {
      type: 'register',
      protocol: 1,
      jobId: this.jobId,
      stages: S,
      microbatches: this.microbatches,
      dp: D,
      tp: 1,
      ranks: Array.from({ length: S * D }, (_, rank) => ({ rank, dp: Math.floor(rank / S), pp: rank % S, tp: 0, node: `n${rank}` })),
      memory: { deviceBytes: new Array(S).fill(8 * 2 ** 26), activationBytes: new Array(S).fill(2 ** 26), hostBytes: 1e12 },
      computeMs: { fMs: new Array(S).fill(10), bMs: new Array(S).fill(10), wMs: new Array(S).fill(10) },
      // latency + 16 MiB at 1e6 GB/s: the nominal time is the latency, 0.69 ms, a millisecond below what links run.
      network: { latencyMs: this.nominalMs, nominalGBps: 1e6 },
      dataParallel: { gradientBytes: new Array(S).fill(2 ** 28), chunkBytes: 2 ** 22, gbps: 50, latencyMs: 0.01, inflightChunks: 8 },
    } as Registration;
  }

  private pareto(): number {
    return this.paretoScaleMs * (Math.pow(1 - this.random(), -1 / 1.3) - 1);
  }

  /** Every rank's report of iteration `t` (schedule `version` in force), rank order. */
  reports(t: number, version: number): RankReport[] {
    const S = this.stages;
    const out: RankReport[] = [];
    for (let rank = 0; rank < S * this.dp; rank++) {
      const d = Math.floor(rank / S);
      const p = rank % S;
      const links: RankReport['links'] = [];
      const pipe = (peerPp: number, link: number, dir: 'fwd' | 'bwd') => {
        const ms = this.linkMs + this.pareto() + this.extraMs(t, d, link, dir);
        links.push({ peer: d * S + peerPp, kind: 'pipeline', bytes: 2 ** 24, medianMs: ms, maxMs: ms * 1.5, delegated: false, error: null });
      };
      if (p + 1 < S) pipe(p + 1, p, 'fwd');
      if (p > 0) pipe(p - 1, p - 1, 'bwd');
      const peer = ((d + 1) % this.dp) * S + p;
      const ring = this.ringMs + this.pareto() + this.ringExtraMs(t, rank, peer);
      links.push({ peer, kind: 'data-parallel', bytes: 2 ** 22, medianMs: ring, maxMs: ring * 1.5, delegated: false, error: null });
      const f = 10 * this.computeFactor(t, rank);
      out.push({ type: 'report', protocol: 1, jobId: this.jobId, rank, iteration: t, scheduleVersion: version, iterationMs: 1000, computeMs: { f, b: f, w: f }, links });
    }
    return out;
  }
}
