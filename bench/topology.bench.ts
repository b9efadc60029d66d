/**
 * npm run bench:topology
 *
 * Re-mapping planning time at scale: a job of 1024 nodes (DP = 128, PP = 8, the 8-stage Megatron
 * profile, 32 microbatches) with 10 slow data-parallel links of 10-60 ms, planned through the
 * daemon's own decision path (decideControl: placement search priced with the engine, then the
 * schedule and delegation for what remains), over several seeded draws of the slow links. Also a
 * (2 DP, 4 PP) job whose rings all cross a slow rack boundary (exact search). Last output line:
 * one JSON object with the sizes, planning times and predicted iteration times before and after.
 */
import { DEFAULT_CONTROL_CONFIG, DEFAULT_REMAP_CONFIG } from '../src/core/control/control-config.type';
import { DataParallelLinkView, JobControlInput, PipelineLinkView } from '../src/core/control/control-input.type';
import { decideControl } from '../src/core/control/job-controller';
import { initialPipelines } from '../src/core/control/pipeline-plans';
import { deviceInflightCaps } from '../src/core/planner/initial-planner';
import { toPipelineModel } from '../src/core/pipeline/pipeline-model';
import { PipelineProfile } from '../src/core/pipeline/pipeline-profile.type';
import { seededRandom } from '../src/core/planner/seeded-random';
import { megatron8, uniform4 } from '../src/emulator/scenarios';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startStamp } from '../src/support/results-stamp';

const SEEDS = [1, 2, 3, 4, 5];

interface Case {
  dpSize: number;
  profile: PipelineProfile;
  slow: Array<{ from: number; to: number; extraMs: number }>;
  localities?: (rank: number) => string;
}

function jobInput({ dpSize, profile, slow, localities }: Case): JobControlInput {
  const S = profile.stages;
  const links: PipelineLinkView[] = [];
  for (let dp = 0; dp < dpSize; dp++) {
    for (let l = 0; l < S - 1; l++) links.push({ dp, link: l, upRank: dp * S + l, downRank: dp * S + l + 1, baselineMs: 0.05, extraMs: 0, straggler: false, nicFailure: false });
  }
  const slowBy = new Map(slow.map((s) => [`${s.from},${s.to}`, s.extraMs]));
  const dataParallelLinks: DataParallelLinkView[] = [];
  for (let pp = 0; pp < S; pp++) {
    for (let dp = 0; dp < dpSize; dp++) {
      const from = dp * S + pp;
      const to = ((dp + 1) % dpSize) * S + pp;
      if (from === to) continue;
      const extraMs = slowBy.get(`${from},${to}`) ?? slowBy.get(`${to},${from}`) ?? 0;
      dataParallelLinks.push({ fromRank: from, toRank: to, extraMs, straggler: extraMs > 0 });
    }
  }
  const caps = profile.memory ? deviceInflightCaps(toPipelineModel(profile)) : new Array<number>(S).fill(profile.microbatches);
  const ranks = Array.from({ length: dpSize * S }, (_, r) => r);
  const base: JobControlInput = {
    stages: S,
    microbatches: profile.microbatches,
    dpSize,
    fMs: profile.fMs,
    bMs: profile.bMs,
    wMs: profile.wMs,
    deviceCaps: caps,
    hostCaps: new Array<number>(S).fill(profile.microbatches),
    links,
    current: null,
    topology: {
      rankAt: ranks,
      rings: Array.from({ length: S }, () => Array.from({ length: dpSize }, (_, d) => d)),
      localityOf: new Map(localities ? ranks.map((r) => [r, localities(r)]) : []),
      allReduce: { gradientBytes: new Array<number>(S).fill(3.5e9), latencyMs: 0.01, gbps: 50, chunkBytes: 4 << 20, inflight: 8 },
      dataParallelLinks,
      remapAllowed: true,
    },
  };
  return { ...base, current: { pipelines: initialPipelines(base), delegation: [] } };
}

function largeCase(seed: number): Case {
  const random = seededRandom(seed);
  const dpSize = 128;
  const profile = megatron8();
  const S = profile.stages;
  const slow: Case['slow'] = [];
  const used = new Set<number>();
  while (slow.length < 10) {
    const dp = Math.floor(random() * dpSize);
    const pp = Math.floor(random() * S);
    if (used.has(dp * S + pp)) continue;
    used.add(dp * S + pp);
    slow.push({ from: dp * S + pp, to: ((dp + 1) % dpSize) * S + pp, extraMs: 10 + Math.round(random() * 50) });
  }
  return { dpSize, profile, slow };
}

function run(c: Case) {
  const input = jobInput(c);
  const config = { ...DEFAULT_CONTROL_CONFIG, remap: DEFAULT_REMAP_CONFIG };
  const t0 = performance.now();
  const { decision } = decideControl(input, config);
  const planningMs = performance.now() - t0;
  const topology = decision?.topology;
  if (!decision || decision.kind !== 'remap' || !topology) throw new Error(`no re-map decided (${decision?.kind ?? 'none'})`);
  return {
    planningMs,
    searchMs: topology.search.elapsedMs,
    method: topology.search.method,
    evaluations: topology.search.evaluations,
    movedNodes: topology.movedRanks.length,
    beforeMs: topology.stayMs,
    afterMs: topology.newMs,
    residualPipelineLinks: decision.links.length,
  };
}

function median(xs: number[]): number {
  const sorted = xs.slice().sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

function main(): void {
  const stamp = startStamp();
  const rows = [];
  const cases = SEEDS.map((seed) => ({ seed, c: largeCase(seed) }));
  run(largeCase(1000)); // warm the JIT
  for (const { seed, c } of cases) {
    const r = run(c);
    rows.push({ seed, ...r });
    console.log(`${c.dpSize * c.profile.stages} nodes, seed ${seed}: planned in ${r.planningMs.toFixed(1)} ms (search ${r.searchMs.toFixed(1)} ms, ${r.method}, ${r.evaluations} placements), ` +
      `${r.movedNodes} nodes moved, predicted ${r.beforeMs.toFixed(0)} -> ${r.afterMs.toFixed(0)} ms`);
  }
  const rackCase: Case = { dpSize: 2, profile: uniform4(), slow: [0, 1, 2, 3].map((pp) => ({ from: pp, to: 4 + pp, extraMs: 30 })), localities: (r) => (r < 4 ? 'rack-a' : 'rack-b') };
  const racks = run(rackCase);
  console.log(`(2 DP, 4 PP), every ring across a 30 ms rack boundary: planned in ${racks.planningMs.toFixed(1)} ms (${racks.method}), ${racks.movedNodes} nodes moved, ` +
    `predicted ${racks.beforeMs.toFixed(0)} -> ${racks.afterMs.toFixed(0)} ms, ${racks.residualPipelineLinks} residual slow pipeline links`);
  // Every figure below comes from the runs above: sizes from the cases, the rest from each seed's result.
  const first = cases[0].c;
  const planning = rows.map((r) => r.planningMs);
  const json = JSON.stringify({
    bench: 'topology',
    nodes: first.dpSize * first.profile.stages,
    dpSize: first.dpSize,
    stages: first.profile.stages,
    microbatches: first.profile.microbatches,
    slowLinks: first.slow.length,
    seeds: SEEDS,
    runs: rows.length,
    planningMsMedian: +median(planning).toFixed(2),
    planningMsMax: +Math.max(...planning).toFixed(2),
    predictedIterationMsBeforeMedian: +median(rows.map((r) => r.beforeMs)).toFixed(1),
    predictedIterationMsAfterMedian: +median(rows.map((r) => r.afterMs)).toFixed(1),
    movedNodesMax: Math.max(...rows.map((r) => r.movedNodes)),
    perSeed: rows.map((r) => ({ seed: r.seed, planningMs: +r.planningMs.toFixed(2), method: r.method, evaluations: r.evaluations, movedNodes: r.movedNodes, predictedIterationMsBefore: +r.beforeMs.toFixed(1), predictedIterationMsAfter: +r.afterMs.toFixed(1) })),
    rackBoundary: { nodes: rackCase.dpSize * rackCase.profile.stages, planningMs: +racks.planningMs.toFixed(2), method: racks.method, movedNodes: racks.movedNodes, predictedIterationMsBefore: +racks.beforeMs.toFixed(1), predictedIterationMsAfter: +racks.afterMs.toFixed(1) },
    stamp: stamp(),
  });
  const results = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'topology.json'), `${json}\n`);
  console.log(json);
}

main();
