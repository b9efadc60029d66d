/**
 * npm run bench:rebalance
 *
 * Re-balancing layers away from a slow rank (docs/rebalancing.md), on the core alone:
 * 1. Planning time of the split search (bestSplit) for 64 stages of 2, 4 and 8 layers, 256
 *    microbatches, one rank 1.5x slower (median of 5 runs), of 4 uneven layers (64 and 256
 *    microbatches), and of the whole decision
 *    (decideRebalance: the search, then the best 4 splits planned with Alg. 2 and simulated) for
 *    64 stages of 4 layers, 128 microbatches.
 * 2. Agreement with brute force over every split on 500 seeded random jobs (2-6 stages, up to 12
 *    layers; random speeds, device memory, handoff bandwidth and expected duration).
 * 3. One rank 1.5x slower in compute on an 8-stage job (32 microbatches, 4 to 16 layers per stage):
 *    the simulated iteration time doing nothing (the initial plan), re-planning alone, re-balancing
 *    (plus its handoff amortised over 100 iterations, at 10 GB/s) and a healthy job scaled to the
 *    remaining compute (healthy x 8 / (7 + 1/1.5)).
 * Last line: JSON, also written to bench/results/rebalance.json. Wall-clock times on this machine
 * (the load average is recorded).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import defaults from '../config/default.json';
import { ControlConfig, DEFAULT_CONTROL_CONFIG } from '../src/core/control/control-config.type';
import { initialPipelines, predictMs, replicaDelays } from '../src/core/control/pipeline-plans';
import { seededRandom } from '../src/core/planner/seeded-random';
import { bestSplit } from '../src/core/rebalance/best-split.planner';
import { bruteForceSplit } from '../src/core/rebalance/brute-force-split.util';
import { decideRebalance } from '../src/core/rebalance/decide-rebalance.planner';
import { RebalanceConfig } from '../src/core/rebalance/rebalance-config.type';
import { RebalanceProblem } from '../src/core/rebalance/rebalance-problem.type';
import { rebalanceScenario } from '../src/core/rebalance/rebalance-scenario.util';
import { startStamp } from '../src/support/results-stamp';

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;
const median = (values: number[]) => {
  const s = values.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[(s.length >> 1) - 1] + s[s.length >> 1]) / 2;
};
const CONFIG: RebalanceConfig = {
  enabled: true,
  minGain: defaults.rebalance.minGain,
  handoffGBps: defaults.rebalance.handoffGBps,
  maxCandidates: defaults.rebalance.maxCandidates,
  refineCandidates: defaults.rebalance.refineCandidates,
};

function uniformProblem(stages: number, perStage: number, microbatches: number, slowStage: number): RebalanceProblem {
  const L = stages * perStage;
  return {
    layers: { fMs: new Array(L).fill(1), bMs: new Array(L).fill(1), wMs: new Array(L).fill(0.8), stateBytes: new Array(L).fill(2e9), activationBytes: new Array(L).fill(1e8) },
    current: new Array(stages).fill(perStage),
    speed: Array.from({ length: stages }, (_, s) => (s === slowStage ? 1.5 : 1)),
    microbatches,
    deviceBytes: new Array(stages).fill(80e9),
    minInflight: Array.from({ length: stages }, (_, s) => Math.min(microbatches, stages - s)),
    handoffBytesPerMs: CONFIG.handoffGBps * 1e6,
    amortizeIterations: 100,
  };
}

function planningTime() {
  const rows = [];
  for (const perStage of [2, 4, 8]) {
    const problem = uniformProblem(64, perStage, 256, 20);
    const times: number[] = [];
    let found = bestSplit(problem, { maxCandidates: CONFIG.maxCandidates })!;
    for (let run = 0; run < 5; run++) {
      const t0 = performance.now();
      found = bestSplit(problem, { maxCandidates: CONFIG.maxCandidates })!;
      times.push(performance.now() - t0);
    }
    rows.push({ stages: 64, layers: 64 * perStage, microbatches: 256, searchMedianMs: round(median(times), 1), searchMaxMs: round(Math.max(...times), 1), evaluations: found.evaluations, exact: found.exact, slowStageLayers: found.best.split[20], bottleneckMs: round(found.best.bottleneckMs) });
  }
  // Uneven layers (0.5-1.5x the uniform times) and fewer microbatches: more bottleneck values to try.
  const random = seededRandom(64);
  for (const microbatches of [64, 256]) {
    const problem = uniformProblem(64, 4, microbatches, 20);
    const jitter = (v: number) => v * (0.5 + random());
    problem.layers = { ...problem.layers, fMs: problem.layers.fMs.map(jitter), bMs: problem.layers.bMs.map(jitter), wMs: problem.layers.wMs.map(jitter) };
    const times: number[] = [];
    let found = bestSplit(problem, { maxCandidates: CONFIG.maxCandidates })!;
    for (let run = 0; run < 5; run++) {
      const t0 = performance.now();
      found = bestSplit(problem, { maxCandidates: CONFIG.maxCandidates })!;
      times.push(performance.now() - t0);
    }
    rows.push({ stages: 64, layers: 256, microbatches, unevenLayers: true, searchMedianMs: round(median(times), 1), searchMaxMs: round(Math.max(...times), 1), evaluations: found.evaluations, exact: found.exact, slowStageLayers: found.best.split[20], bottleneckMs: round(found.best.bottleneckMs) });
  }
  const input = rebalanceScenario({ stages: 64, layersPerStage: 4, microbatches: 128, slowStage: 20, slowFactor: 1.5 });
  const times: number[] = [];
  for (let run = 0; run < 3; run++) {
    const t0 = performance.now();
    decideRebalance(input, CONFIG, { ...DEFAULT_CONTROL_CONFIG, planner: 'adaptive' });
    times.push(performance.now() - t0);
  }
  return { search: rows, decision: { stages: 64, layers: 256, microbatches: 128, planner: 'adaptive', refineCandidates: CONFIG.refineCandidates, medianMs: round(median(times), 1) } };
}

function bruteForceAgreement(cases: number) {
  const random = seededRandom(24);
  const pick = (lo: number, hi: number) => lo + random() * (hi - lo);
  let agree = 0;
  let infeasible = 0;
  let exactFlag = 0;
  let maxRelDiff = 0;
  for (let c = 0; c < cases; c++) {
    const S = 2 + Math.floor(random() * 5);
    const L = S + Math.floor(random() * (13 - S));
    const per = () => Array.from({ length: L }, () => pick(0.2, 5));
    const problem: RebalanceProblem = {
      layers: { fMs: per(), bMs: per(), wMs: per(), stateBytes: Array.from({ length: L }, () => pick(0, 4e9)), activationBytes: Array.from({ length: L }, () => pick(0, 1e9)) },
      current: Array.from({ length: S }, (_, s) => Math.floor(L / S) + (s < L % S ? 1 : 0)),
      speed: Array.from({ length: S }, () => (random() < 0.6 ? 1 : pick(0.8, 2.5))),
      microbatches: 1 + Math.floor(random() * 64),
      deviceBytes: Array.from({ length: S }, () => (random() < 0.5 ? Infinity : pick(4e9, 2e10))),
      minInflight: Array.from({ length: S }, () => 1 + Math.floor(random() * 4)),
      handoffBytesPerMs: random() < 0.2 ? Infinity : pick(1e5, 1e8),
      amortizeIterations: 1 + Math.floor(random() * 5000),
    };
    const found = bestSplit(problem);
    const expected = bruteForceSplit(problem);
    if (expected === null) {
      infeasible++;
      if (found === null) agree++;
      continue;
    }
    if (!found) continue;
    if (found.exact) exactFlag++;
    const diff = Math.abs(found.best.objectiveMs - expected.objectiveMs) / expected.objectiveMs;
    maxRelDiff = Math.max(maxRelDiff, diff);
    if (diff <= 1e-9 && found.best.fits) agree++;
  }
  return { cases, agree, infeasible, exactFlagged: exactFlag, maxRelativeDifference: maxRelDiff };
}

function slowRankRows() {
  const rows = [];
  for (const [perStage, planner] of [[4, 'adaptive'], [8, 'adaptive'], [12, 'adaptive'], [12, 'search'], [16, 'adaptive']] as Array<[number, ControlConfig['planner']]>) {
    const input = rebalanceScenario({ stages: 8, layersPerStage: perStage, microbatches: 32, slowStage: 3, slowFactor: 1.5, expectedIterations: 100 });
    const out = decideRebalance(input, CONFIG, { ...DEFAULT_CONTROL_CONFIG, planner });
    const healthyInput = { ...input.control, fMs: input.control.fMs.map((t, s) => t / input.speed[s]), bMs: input.control.bMs.map((t, s) => t / input.speed[s]), wMs: input.control.wMs.map((t, s) => t / input.speed[s]) };
    const healthyMs = predictMs(healthyInput, initialPipelines(healthyInput), replicaDelays(healthyInput).now);
    const scaledMs = (healthyMs * 8) / (7 + 1 / 1.5);
    const rebalancedMs = out.predictedNewMs! + out.amortisedMoveMs;
    rows.push({
      stages: 8,
      layers: 8 * perStage,
      microbatches: 32,
      planner,
      split: out.split,
      taken: out.take,
      healthyMs: round(healthyMs, 1),
      nothingMs: round(out.predictedCurrentMs, 1),
      replanMs: round(out.predictedReplanMs, 1),
      rebalancedMs: round(out.predictedNewMs!, 1),
      handoffMsPerIteration: round(out.amortisedMoveMs, 1),
      movedGB: round(out.moveBytes / 1e9, 1),
      scaledHealthyMs: round(scaledMs, 1),
      rebalancedVsScaled: round(rebalancedMs / scaledMs),
      replanVsScaled: round(out.predictedReplanMs / scaledMs),
      nothingVsScaled: round(out.predictedCurrentMs / scaledMs),
    });
  }
  return rows;
}

function main(): void {
  const stamp = startStamp();
  const planning = planningTime();
  console.log(JSON.stringify({ planning }));
  const bruteForce = bruteForceAgreement(500);
  console.log(JSON.stringify({ bruteForce }));
  const slowRank = slowRankRows();
  for (const row of slowRank) console.log(JSON.stringify({ slowRank: row }));
  const result = { bench: 'rebalance', config: CONFIG, planning, bruteForce, slowRank, loadAverage: loadavg().map((x) => round(x)), stamp: stamp() };
  const results = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'rebalance.json'), `${JSON.stringify(result)}\n`);
  console.log(JSON.stringify(result));
}

main();
