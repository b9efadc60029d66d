import { ringAllReduceMs } from '../topology/all-reduce';
import { allReduceOf } from './all-reduce-pricing';
import { DataParallelLinkView, JobControlInput, PipelineLinkView } from './control-input.type';
import { initialPipelines, predictMs, replicaDelays } from './pipeline-plans';
import { inputUnderLayout, sameLayout } from './layout-input';

const S = 4;
const rack = (rank: number) => (rank < 4 ? 'rack-a' : 'rack-b');
const allReduce = { gradientBytes: [3.5e9, 3.5e9, 3.5e9, 3.5e9], latencyMs: 0.01, gbps: 50, chunkBytes: 4 << 20, inflight: 8 };
const registered = { rankAt: [0, 1, 2, 3, 4, 5, 6, 7], rings: [[0, 1], [0, 1], [0, 1], [0, 1]] };

/**
 * A (2 DP, 4 PP) job after a re-map that put each ring inside one rack (replica 0 runs ranks
 * 0 1 4 5, replica 1 ranks 2 3 6 7), as its new detector measures it: the rack uplink, 30 ms slow,
 * now lies on pipeline link 1 of both replicas; the rings are healthy.
 */
function remapped(localities = true): JobControlInput {
  const rankAt = [0, 1, 4, 5, 2, 3, 6, 7];
  const links: PipelineLinkView[] = [];
  for (let dp = 0; dp < 2; dp++) {
    for (let link = 0; link + 1 < S; link++) {
      const upRank = rankAt[dp * S + link];
      const downRank = rankAt[dp * S + link + 1];
      const extraMs = rack(upRank) === rack(downRank) ? 0.2 : 30;
      links.push({ dp, link, upRank, downRank, baselineMs: 0.1, extraMs, straggler: extraMs > 1, nicFailure: false });
    }
  }
  const dataParallelLinks: DataParallelLinkView[] = [];
  for (let pp = 0; pp < S; pp++) {
    for (const [from, to] of [[rankAt[pp], rankAt[S + pp]], [rankAt[S + pp], rankAt[pp]]]) dataParallelLinks.push({ fromRank: from, toRank: to, extraMs: 0.1, straggler: false });
  }
  return {
    stages: S, microbatches: 12, dpSize: 2,
    fMs: [10, 10, 10, 10], bMs: [10, 10, 10, 10], wMs: [10, 10, 10, 10],
    deviceCaps: [12, 12, 12, 12], hostCaps: [12, 12, 12, 12],
    links,
    current: null,
    topology: {
      rankAt, rings: registered.rings,
      localityOf: new Map(localities ? rankAt.map((r) => [r, rack(r)]) : []),
      allReduce, dataParallelLinks, remapAllowed: true,
    },
  };
}

describe('inputUnderLayout: the fabric as another layout of the same ranks meets it', () => {
  it('prices the layout a re-map left with its rings across the slow boundary, its pipelines inside the racks', () => {
    const now = remapped();
    expect(allReduceOf(now)!.slow).toEqual([false, false, false, false]);
    const before = inputUnderLayout(now, registered, [{ fromRank: 0, toRank: 4, extraMs: 30.2 }]);
    expect(before.topology!.rankAt).toEqual(registered.rankAt);
    expect(before.topology!.remapAllowed).toBe(false);
    // Every ring crosses the boundary the pipeline links measure as 30 ms slow: all four are slow.
    const rings = allReduceOf(before)!;
    expect(rings.slow).toEqual([true, true, true, true]);
    // The recorded pair counts as a measurement across the boundary: its worst, 30.2 ms, paces every ring.
    expect(rings.worstExtraMs).toEqual([30.2, 30.2, 30.2, 30.2]);
    expect(allReduceOf(inputUnderLayout(now, registered))!.worstExtraMs).toEqual([30, 30, 30, 30]);
    // Its pipeline links stay inside a rack: measured pairs keep their measurement, the others are healthy.
    expect(before.links.filter((l) => l.straggler)).toEqual([]);
    expect(before.links.find((l) => l.dp === 0 && l.link === 0)).toMatchObject({ upRank: 0, downRank: 1, extraMs: 0.2, baselineMs: 0.1 });
    expect(before.links.find((l) => l.dp === 0 && l.link === 1)).toMatchObject({ upRank: 1, downRank: 2, extraMs: 0 });
    // What ran before costs its slow rings; what runs now only its healthy ones.
    const plan = initialPipelines(now);
    const beforeMs = predictMs(before, plan, replicaDelays(before).now);
    const nowMs = predictMs(now, plan, replicaDelays(now).now);
    expect(beforeMs).toBeGreaterThan(ringAllReduceMs(allReduce, 0, 2, 30));
    expect(beforeMs).toBeGreaterThan(3 * nowMs);
  });

  it('without localities knows only the measured and recorded pairs', () => {
    const before = inputUnderLayout(remapped(false), registered, [{ fromRank: 0, toRank: 4, extraMs: 30 }]);
    expect(allReduceOf(before)!.slow).toEqual([true, false, false, false]);
    expect(inputUnderLayout(remapped(false), registered).topology!.dataParallelLinks.every((l) => l.extraMs === 0)).toBe(true);
  });

  it('the layout measured now reads as measured', () => {
    const now = remapped();
    expect(sameLayout(now.topology!, { rankAt: [0, 1, 4, 5, 2, 3, 6, 7], rings: registered.rings })).toBe(true);
    expect(sameLayout(now.topology!, registered)).toBe(false);
    const same = inputUnderLayout(now, now.topology!);
    expect(replicaDelays(same)).toEqual(replicaDelays(now));
    expect(allReduceOf(same)).toEqual(allReduceOf(now));
  });
});
