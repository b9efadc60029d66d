/**
 * npm run bench:optimal-line
 *
 * Where the daemon's `optimal` planner fits its control budget, i.e. what `control.optimalMaxCells`
 * should be. For job sizes S x N from 4 x 8 to 8 x 32, 8 seeded profiles each (op times 5-20 ms,
 * one or two links slowed by 15-120 ms), the planning path the daemon runs for one replica group
 * (`planPipeline` with policy `optimal`, the shipped search settings and MILP time limit) against
 * the search alone: planning time (median, max), how often the MILP proves the optimum within its
 * limit, and the mean gain over the search's plan. Last line: JSON, also written to
 * bench/results/optimal-line.json (the table in docs/benchmarks.md is rendered from it).
 * Runs on one core; times are wall clock on this machine (the load average is recorded).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import defaults from '../config/default.json';
import { toPipelineModel, validateProfile } from '../src/core/pipeline/pipeline-model';
import { MilpSolver } from '../src/core/planner/optimal-planner';
import { planPipeline } from '../src/core/planner/plan';
import { seededRandom } from '../src/core/planner/seeded-random';
import { loadMilpSolver } from '../src/daemon/planning/load-milp-solver.util';
import { startStamp } from '../src/support/results-stamp';

const SIZES: Array<[number, number]> = [
  [4, 8],
  [4, 12],
  [6, 12],
  [6, 16],
  [8, 16],
  [8, 24],
  [8, 32],
];
const CASES = 8;

function median(values: number[]): number {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const round = (x: number) => Math.round(x * 1000) / 1000;

async function main(): Promise<void> {
  const stamp = startStamp();
  const solver: MilpSolver = await loadMilpSolver();
  const random = seededRandom(20261124);
  const u = (lo: number, hi: number) => lo + (hi - lo) * random();
  const timeLimitMs = defaults.control.optimalTimeLimitMs;
  const search = { timeBudgetMs: defaults.control.searchBudgetMs, ...('searchEvaluations' in defaults.control ? { maxEvaluations: (defaults.control as { searchEvaluations?: number }).searchEvaluations } : {}) };
  const rows = [];
  for (const [S, N] of SIZES) {
    const planMs: number[] = [];
    const searchMs: number[] = [];
    const gains: number[] = [];
    let proven = 0;
    for (let c = 0; c < CASES; c++) {
      const fMs = Array.from({ length: S }, () => u(5, 20));
      const linkMs = new Array<number>(S - 1).fill(0.5);
      const slow = 1 + Math.floor(random() * 2);
      for (let k = 0; k < slow; k++) linkMs[Math.floor(random() * (S - 1))] = u(15, 120);
      const model = toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs, bMs: fMs.map(() => u(5, 20)), wMs: fMs.map(() => u(5, 20)), linkMs }));
      let t0 = performance.now();
      const searched = planPipeline(model, { policy: 'search', search });
      searchMs.push(performance.now() - t0);
      t0 = performance.now();
      const exact = planPipeline(model, { policy: 'optimal', search, optimal: { solver, timeLimitMs } });
      planMs.push(performance.now() - t0);
      if (exact.optimal?.proven) proven++;
      gains.push((1 - exact.run.iterationMs / searched.run.iterationMs) * 100);
    }
    const row = {
      stages: S,
      microbatches: N,
      cells: S * N,
      cases: CASES,
      proven,
      optimalMedianMs: round(median(planMs)),
      optimalMaxMs: round(Math.max(...planMs)),
      searchMedianMs: round(median(searchMs)),
      meanGainOverSearchPct: round(gains.reduce((a, b) => a + b, 0) / gains.length),
    };
    console.log(JSON.stringify({ size: row }));
    rows.push(row);
  }
  const result = { bench: 'optimal-line', timeLimitMs, optimalMaxCells: defaults.control.optimalMaxCells, rows, loadAverage: loadavg().map(round), stamp: stamp() };
  const results = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'optimal-line.json'), `${JSON.stringify(result)}\n`);
  console.log(JSON.stringify(result));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
