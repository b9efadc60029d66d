import { ringAllReduceMs } from '../topology/all-reduce';
import { DEFAULT_CONTROL_CONFIG, DEFAULT_REMAP_CONFIG } from './control-config.type';
import { DataParallelLinkView, JobControlInput, PipelineLinkView, TopologyView } from './control-input.type';
import { decideControl } from './job-controller';
import { initialPipelines } from './pipeline-plans';

const S = 4;
/** (2 DP, 4 PP), 12 microbatches of 10 ms ops; replica 0 (ranks 0-3) on rack A, replica 1 (ranks 4-7) on rack B. */
function input(dpExtraMs: number, overrides: Partial<TopologyView> = {}): JobControlInput {
  const links: PipelineLinkView[] = [];
  for (let dp = 0; dp < 2; dp++) for (let l = 0; l < S - 1; l++) links.push({ dp, link: l, upRank: dp * S + l, downRank: dp * S + l + 1, baselineMs: 0.1, extraMs: 0, straggler: false, nicFailure: false });
  const dataParallelLinks: DataParallelLinkView[] = [];
  for (let pp = 0; pp < S; pp++) {
    for (const [from, to] of [[pp, S + pp], [S + pp, pp]]) dataParallelLinks.push({ fromRank: from, toRank: to, extraMs: dpExtraMs, straggler: dpExtraMs > 0 });
  }
  const base: JobControlInput = {
    stages: S,
    microbatches: 12,
    dpSize: 2,
    fMs: [10, 10, 10, 10],
    bMs: [10, 10, 10, 10],
    wMs: [10, 10, 10, 10],
    deviceCaps: [12, 12, 12, 12],
    hostCaps: [12, 12, 12, 12],
    links,
    current: null,
    topology: {
      rankAt: [0, 1, 2, 3, 4, 5, 6, 7],
      rings: [[0, 1], [0, 1], [0, 1], [0, 1]],
      localityOf: new Map([0, 1, 2, 3, 4, 5, 6, 7].map((r) => [r, r < 4 ? 'rack-a' : 'rack-b'])),
      allReduce: { gradientBytes: [3.5e9, 3.5e9, 3.5e9, 3.5e9], latencyMs: 0.01, gbps: 50, chunkBytes: 4 << 20, inflight: 8 },
      dataParallelLinks,
      remapAllowed: true,
      ...overrides,
    },
  };
  return { ...base, current: { pipelines: initialPipelines(base), delegation: [] } };
}

const config = { ...DEFAULT_CONTROL_CONFIG, remap: DEFAULT_REMAP_CONFIG };

describe('decideRemap (through decideControl)', () => {
  it('re-maps a job whose every ring crosses a slow rack boundary so that a pipeline edge crosses it instead', () => {
    const { decision } = decideControl(input(30), config);
    expect(decision?.kind).toBe('remap');
    const topology = decision!.topology!;
    const rack = (rank: number) => (rank < 4 ? 'a' : 'b');
    // Each stage's two replicas in one rack: the rings no longer cross.
    for (let pp = 0; pp < S; pp++) expect(rack(topology.rankAt[pp])).toBe(rack(topology.rankAt[S + pp]));
    expect(topology.newMs).toBeLessThan(topology.stayMs / 2);
    expect(topology.movedRanks.length).toBeGreaterThan(0);
    expect(topology.search.method).toBe('exact');
    // The residual pipeline straggler (the boundary, now between two stages) is adapted and delegated.
    expect(decision!.links.length).toBe(2);
    expect(new Set(decision!.links.map((l) => l.link)).size).toBe(1);
    const slowLink = decision!.links[0].link;
    expect(decision!.pipelines.every((p) => p.warmup[slowLink] - p.warmup[slowLink + 1] > 2)).toBe(true);
    expect(decision!.delegation.map((d) => d.rank).sort()).toEqual(decision!.links.flatMap((l) => [l.upRank, l.downRank]).sort());
    expect(decision!.dataParallelLinks).toHaveLength(8);
  });

  it('does not re-map without slow data-parallel links, when not allowed yet, or when moving costs more than it saves', () => {
    expect(decideControl(input(0), config).decision).toBeNull();
    expect(decideControl(input(30, { remapAllowed: false }), config).decision?.kind).not.toBe('remap');
    expect(decideControl(input(30, { allReduce: null }), config).decision?.kind).not.toBe('remap');
    const expensive = { ...config, remap: { ...DEFAULT_REMAP_CONFIG, migrationMsPerNode: 1e9 } };
    expect(decideControl(input(30), expensive).decision?.kind).not.toBe('remap');
    expect(decideControl(input(30), { ...config, remap: { ...DEFAULT_REMAP_CONFIG, enabled: false } }).decision?.kind).not.toBe('remap');
  });

  it('predicts with the all-reduce: the rings that straggle cost the layout it leaves, not the one it takes', () => {
    const slow = input(30);
    const outcome = decideControl(slow, config);
    const decision = outcome.decision!;
    expect(decision.kind).toBe('remap');
    const model = slow.topology!.allReduce!;
    const slowRingMs = ringAllReduceMs(model, 0, 2, 30);
    const healthyRingMs = ringAllReduceMs(model, 0, 2, 0);
    // 835 chunks paced by 30 ms / 8 in flight against the bandwidth: seconds against about 70 ms.
    expect(slowRingMs).toBeGreaterThan(3000);
    expect(healthyRingMs).toBeGreaterThan(60);
    expect(decision.predictedPreviousMs!).toBeGreaterThan(slowRingMs);
    expect(decision.predictedPreviousMs!).toBeGreaterThan(3 * decision.predictedNewMs);
    expect(decision.predictedStaticMs).toBeGreaterThan(slowRingMs);
    // The new layout's prediction still ends with its (healthy) rings after the pipeline.
    const pipelineOnly = decideControl(input(0, { allReduce: null }), config).predictedCurrentMs!;
    expect(decision.predictedNewMs).toBeGreaterThan(pipelineOnly + healthyRingMs);
    // The gauge of what runs now prices the slow rings too, as the re-map's own "staying put" does.
    // (Every stage's ring is alike here, so the last stage done is the last ring done.)
    expect(outcome.predictedCurrentMs!).toBeCloseTo(pipelineOnly + slowRingMs, 6);
    expect(decideControl(input(0), config).predictedCurrentMs!).toBeCloseTo(pipelineOnly + healthyRingMs, 6);
  });

  it('prices the pairs the fleet names slow: a rank behind a bad NIC is slow to peers this job never measured (can fail: without the fleet, the move is predicted to heal it)', () => {
    // Only stage 1's ring is measured slow (ranks 1 and 5); the fleet names rank 1's NIC, seen by other jobs.
    const ownOnly = (extraMs: number): DataParallelLinkView[] => input(0).topology!.dataParallelLinks.map((l) => ({ ...l, ...(l.fromRank % S === 1 ? { extraMs, straggler: true } : {}) }));
    const nic = { suspect: 'nic:node-1', from: [1], to: [0, 2, 3, 4, 5, 6, 7], extraMs: 30 };
    const blind = decideControl(input(0, { localityOf: new Map(), dataParallelLinks: ownOnly(30) }), config).decision;
    const told = decideControl(input(0, { localityOf: new Map(), dataParallelLinks: ownOnly(30), fleetSlow: [nic] }), config).decision;
    // Rank 1's peers in a decision's layout (pipeline neighbours and ring partner), and those of
    // them it prices slow (a residual pipeline straggler, or a ring it predicts slow).
    const peersOf = (d: typeof told) => {
      const rankAt = d!.topology!.rankAt;
      const at = rankAt.indexOf(1);
      const pp = at % S;
      return [pp > 0 ? rankAt[at - 1] : -1, pp < S - 1 ? rankAt[at + 1] : -1, rankAt[((Math.floor(at / S) + 1) % 2) * S + pp]].filter((r) => r >= 0).sort();
    };
    const measuredHealthy = [0, 2]; // pipeline links 0-1 and 1-2, measured healthy by this job
    expect(blind?.kind).toBe('remap');
    expect(told?.kind).toBe('remap');
    // Blind, the search puts rank 1 beside a peer it never measured and predicts every link healed.
    expect(peersOf(blind).filter((r) => !measuredHealthy.includes(r))).not.toEqual([]);
    expect(blind!.links).toEqual([]);
    // Told, rank 1 gets only peers measured healthy (or a residual straggler priced at the NIC's
    // delay), and its prediction is no better than blind's optimistic one.
    const toldUnmeasured = peersOf(told).filter((r) => !measuredHealthy.includes(r));
    const toldSlow = told!.links.filter((l) => l.upRank === 1 || l.downRank === 1).map((l) => (l.upRank === 1 ? l.downRank : l.upRank));
    expect(toldUnmeasured.filter((r) => !toldSlow.includes(r))).toEqual([]);
    expect(told!.predictedNewMs).toBeGreaterThanOrEqual(blind!.predictedNewMs);
  });

  it('without localities moves only the measured slow pairs off the rings', () => {
    const { decision } = decideControl(input(30, { localityOf: new Map() }), config);
    expect(decision?.kind).toBe('remap');
    const { rankAt } = decision!.topology!;
    const slot = (rank: number) => rankAt.indexOf(rank);
    for (let pp = 0; pp < S; pp++) {
      // Ranks pp and S + pp (a measured slow pair) are no longer ring neighbours in any stage.
      expect(slot(pp) % S === slot(S + pp) % S).toBe(false);
    }
  });
});
