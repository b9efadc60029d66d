import { DetectionSnapshot } from '../detect/detection.type';
import { FleetComputeEvidence, FleetLinkEvidence, JobFleetEvidence } from './job-fleet-evidence.type';

/** Where a rank runs, as its registration says. */
export interface FleetRankPlace {
  rank: number;
  node: string;
  locality?: string;
}

function finite(x: number): number {
  return Number.isFinite(x) ? x : 0;
}

/**
 * One job's detector snapshot in node terms. A link counts as slow while it is a straggler that
 * is not already recovering (its newest samples are healthy again) or while it reports a NIC
 * failure. Ranks of unknown node are left out. At most `maxLinks` node pairs are kept, the slow
 * ones first, then the best sampled (bounded keys whatever the job's size).
 */
export function jobFleetEvidence(jobId: string, at: number, ranks: readonly FleetRankPlace[], snapshot: DetectionSnapshot, maxLinks: number): JobFleetEvidence {
  const nodeOf = new Map<number, string>();
  const localities: Record<string, string> = {};
  for (const r of ranks) {
    nodeOf.set(r.rank, r.node);
    if (r.locality !== undefined) localities[r.node] = r.locality;
  }
  const pairs = new Map<string, FleetLinkEvidence>();
  const add = (from: number, to: number, samples: number, slow: boolean, extraMs: number) => {
    const x = nodeOf.get(from);
    const y = nodeOf.get(to);
    if (x === undefined || y === undefined || x === y || samples <= 0) return;
    const [a, b] = x < y ? [x, y] : [y, x];
    const key = `${a}\u0000${b}`;
    const e = pairs.get(key) ?? { a, b, healthy: 0, slow: 0, extraMs: 0 };
    if (slow) {
      e.slow += samples;
      e.extraMs = Math.max(e.extraMs, finite(extraMs));
    } else e.healthy += samples;
    pairs.set(key, e);
  };
  for (const l of snapshot.pipelineLinks) add(l.upRank, l.downRank, l.samples, (l.straggler && !l.recovering) || l.error === 'nic-failure', l.extraMs);
  for (const l of snapshot.dataParallelLinks) add(l.fromRank, l.toRank, l.samples, (l.straggler && !l.recovering) || l.error === 'nic-failure', l.extraMs);
  const links = [...pairs.values()].sort((p, q) => q.slow - p.slow || q.healthy - p.healthy || (p.a < q.a ? -1 : p.a > q.a ? 1 : p.b < q.b ? -1 : p.b > q.b ? 1 : 0)).slice(0, Math.max(0, maxLinks));
  const compute = new Map<string, FleetComputeEvidence>();
  for (const c of snapshot.compute) {
    const node = nodeOf.get(c.rank);
    if (node === undefined) continue;
    const e = compute.get(node) ?? { node, healthy: 0, slow: 0, ratio: 0 };
    if (c.straggler && !c.recovering) e.slow++;
    else e.healthy++;
    e.ratio = Math.max(e.ratio, finite(c.ratio));
    compute.set(node, e);
  }
  return { jobId, at, localities, links, compute: [...compute.values()].sort((p, q) => (p.node < q.node ? -1 : p.node > q.node ? 1 : 0)) };
}
