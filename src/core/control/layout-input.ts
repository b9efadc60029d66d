import { ringLinksOf } from './all-reduce-pricing';
import { DataParallelLinkView, JobControlInput, PipelineLinkView } from './control-input.type';
import { healthyLinkMs, slowNodeLinks } from './remap-decision';

/** A placement of the job's reporting ranks: rank at slot (dp, pp) `rankAt[dp * stages + pp]`, ring order per stage. */
export interface RankLayout {
  rankAt: number[];
  rings: number[][];
}

/** An extra delay known between two ranks (e.g. a slow link a re-map answered). */
export interface RankPairDelay {
  fromRank: number;
  toRank: number;
  extraMs: number;
}

function pairKey(a: number, b: number): string {
  return a < b ? `${a},${b}` : `${b},${a}`;
}

/** Whether two layouts place every rank and order every ring alike. */
export function sameLayout(a: RankLayout, b: RankLayout): boolean {
  return a.rankAt.length === b.rankAt.length && a.rankAt.every((r, i) => r === b.rankAt[i]) && a.rings.length === b.rings.length && a.rings.every((ring, p) => ring.length === b.rings[p].length && ring.every((d, i) => d === b.rings[p][i]));
}

/**
 * The control input as it reads under another layout of the same ranks (what ran before a re-map,
 * or what a re-map will run before its ranks report from it): each pipeline link and ring link of
 * `layout` gets the extra delay known between its two ranks: measured now (either direction),
 * else recorded in `evidence`, else inferred from a slow locality boundary as the re-map decision
 * infers it (slowNodeLinks), else none. A pipeline link keeps its measured baseline when its pair
 * was measured as a pipeline link, else the median baseline of that link. Re-mapping is not
 * allowed on the result: it is for pricing and drawing. `input` without a topology is returned as is.
 */
export function inputUnderLayout(input: JobControlInput, layout: RankLayout, evidence: readonly RankPairDelay[] = []): JobControlInput {
  const t = input.topology;
  if (!t) return input;
  const S = input.stages;
  const measured = new Map<string, { extraMs: number; straggler: boolean; nicFailure: boolean }>();
  const note = (a: number, b: number, extraMs: number, straggler: boolean, nicFailure: boolean) => {
    const key = pairKey(a, b);
    const before = measured.get(key);
    const extra = Number.isFinite(extraMs) ? Math.max(0, extraMs) : 0;
    measured.set(key, { extraMs: Math.max(before?.extraMs ?? 0, extra), straggler: (before?.straggler ?? false) || straggler, nicFailure: (before?.nicFailure ?? false) || nicFailure });
  };
  const baselineOf = new Map<string, number>();
  for (const l of input.links) {
    note(l.upRank, l.downRank, l.extraMs, l.straggler, l.nicFailure);
    if (Number.isFinite(l.baselineMs)) baselineOf.set(pairKey(l.upRank, l.downRank), l.baselineMs);
  }
  for (const l of t.dataParallelLinks) note(l.fromRank, l.toRank, l.extraMs, l.straggler, false);
  const recorded = new Map<string, number>();
  for (const e of evidence) if (e.extraMs > 0) recorded.set(pairKey(e.fromRank, e.toRank), Math.max(recorded.get(pairKey(e.fromRank, e.toRank)) ?? 0, e.extraMs));
  const inferred = new Map<string, number>();
  const withEvidence = { ...t, dataParallelLinks: [...t.dataParallelLinks, ...evidence.map((e) => ({ ...e, straggler: e.extraMs > 0 }))] };
  for (const { a, b, extraMs } of slowNodeLinks(input, withEvidence)) inferred.set(pairKey(t.rankAt[a], t.rankAt[b]), extraMs);
  const delayOf = (a: number, b: number): { extraMs: number; straggler: boolean; nicFailure: boolean } => {
    const key = pairKey(a, b);
    const m = measured.get(key);
    if (m) return m;
    const extraMs = recorded.get(key) ?? inferred.get(key) ?? 0;
    return { extraMs, straggler: extraMs > 0, nicFailure: false };
  };

  const medianBaseline = healthyLinkMs(input);
  const links: PipelineLinkView[] = [];
  for (let dp = 0; dp < input.dpSize; dp++) {
    for (let link = 0; link + 1 < S; link++) {
      const upRank = layout.rankAt[dp * S + link];
      const downRank = layout.rankAt[dp * S + link + 1];
      if (upRank === undefined || downRank === undefined || upRank < 0 || downRank < 0) continue;
      const d = delayOf(upRank, downRank);
      links.push({ dp, link, upRank, downRank, baselineMs: baselineOf.get(pairKey(upRank, downRank)) ?? medianBaseline[link], extraMs: d.extraMs, straggler: d.straggler, nicFailure: d.nicFailure });
    }
  }
  const dataParallelLinks: DataParallelLinkView[] = ringLinksOf({ rankAt: layout.rankAt, rings: layout.rings, dataParallelLinks: [] }, S, input.dpSize)
    .flat()
    .map(({ fromRank, toRank }) => {
      const d = delayOf(fromRank, toRank);
      return { fromRank, toRank, extraMs: d.extraMs, straggler: d.straggler };
    });
  return { ...input, links, topology: { ...t, rankAt: layout.rankAt.slice(), rings: layout.rings.map((r) => r.slice()), dataParallelLinks, remapAllowed: false } };
}
