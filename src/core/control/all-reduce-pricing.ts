import { ringAllReduceMs } from '../topology/all-reduce';
import { DataParallelLinkView, JobControlInput, TopologyView } from './control-input.type';

/** One link of stage `pp`'s data-parallel ring in a layout, with what is measured between its two ranks. */
export interface RingLinkView extends DataParallelLinkView {
  pp: number;
}

/** The job's gradient all-reduce as the predictions price it: per stage, after its replicas' last op. */
export interface AllReducePrice {
  /** Per stage: its ring all-reduce time, ms. */
  ms: number[];
  /** Per stage: the largest extra delay on a link of its ring, ms (what paces the ring). */
  worstExtraMs: number[];
  /** Per stage: whether a link of its ring straggles. */
  slow: boolean[];
}

function pairKey(a: number, b: number): string {
  return a < b ? `${a},${b}` : `${b},${a}`;
}

/**
 * Per stage, the links of its data-parallel ring in the layout `t` describes (ring order
 * `t.rings[pp]`, rank at slot (dp, pp) `t.rankAt[dp * stages + pp]`), each with the largest extra
 * delay measured between its two ranks in either direction (a link nobody measured counts as
 * healthy). Empty per stage when the layout does not describe a ring of `dpSize` replicas.
 */
export function ringLinksOf(t: Pick<TopologyView, 'rankAt' | 'rings' | 'dataParallelLinks'>, stages: number, dpSize: number): RingLinkView[][] {
  const measured = new Map<string, { extraMs: number; straggler: boolean }>();
  for (const l of t.dataParallelLinks) {
    const key = pairKey(l.fromRank, l.toRank);
    const extraMs = Number.isFinite(l.extraMs) ? Math.max(0, l.extraMs) : 0;
    const before = measured.get(key);
    measured.set(key, { extraMs: Math.max(before?.extraMs ?? 0, extraMs), straggler: (before?.straggler ?? false) || l.straggler });
  }
  return Array.from({ length: stages }, (_, pp) => {
    const ring = t.rings[pp];
    if (dpSize < 2 || !ring || ring.length !== dpSize || t.rankAt.length !== stages * dpSize) return [];
    const links: RingLinkView[] = [];
    for (let k = 0; k < ring.length; k++) {
      const fromRank = t.rankAt[ring[k] * stages + pp];
      const toRank = t.rankAt[ring[(k + 1) % ring.length] * stages + pp];
      const m = measured.get(pairKey(fromRank, toRank));
      links.push({ pp, fromRank, toRank, extraMs: m?.extraMs ?? 0, straggler: m?.straggler ?? false });
    }
    return links;
  });
}

/**
 * The job's ring all-reduce under the layout in force (`input.topology`), each stage's ring paced
 * by the largest extra delay measured on one of its links; null when the job has none to price
 * (one replica, or no `dataParallel` in its registration, or an incomplete layout).
 */
export function allReduceOf(input: JobControlInput): AllReducePrice | null {
  const t = input.topology;
  const S = input.stages;
  const D = input.dpSize;
  if (!t || !t.allReduce || D < 2 || t.allReduce.gradientBytes.length !== S || t.rankAt.length !== S * D || t.rankAt.some((r) => r < 0)) return null;
  const model = t.allReduce;
  const rings = ringLinksOf(t, S, D);
  const worstExtraMs = rings.map((links) => links.reduce((worst, l) => Math.max(worst, l.extraMs), 0));
  return {
    ms: worstExtraMs.map((extraMs, pp) => ringAllReduceMs(model, pp, D, extraMs)),
    worstExtraMs,
    slow: rings.map((links) => links.some((l) => l.straggler)),
  };
}

/** Iteration time of stages ready at `readyMs` (all replicas done with their last op), each then running its all-reduce (none: 0). */
export function withAllReduceMs(readyMs: ArrayLike<number>, allReduce: AllReducePrice | null): number {
  let end = 0;
  for (let p = 0; p < readyMs.length; p++) {
    const total = readyMs[p] + (allReduce ? allReduce.ms[p] : 0);
    if (total > end) end = total;
  }
  return end;
}
