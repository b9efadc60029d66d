/**
 * npm run bench:optimal-line
 *
 * Where the daemon's `optimal` planner fits its control budget, i.e. what `control.optimalMaxCells`
 * should be. For job sizes S x N from 4 x 8 to 8 x 32, 8 seeded profiles each (op times 5-20 ms,
 * one or two links slowed by 15-120 ms), the planning path the daemon runs for one replica group
 * (`planPipeline` with policy `optimal`, the shipped search settings and MILP time limit) against
 * the search alone: planning time (median, max), how often the MILP proves the optimum within its
 * limit, and the mean gain over the search's plan. Each case is planned twice: on the bare model,
 * and under the transport the daemon plans with (a GPU send slot per link direction,
 * `control.gpuSendsInFlight`, so a slow send blocks the stage behind it; every slowed link
 * delegated to 2 CPU queues with `control.delegateCopyOverhead` on its two stages). Under the
 * transport the MILP sees only the relaxed model, so nothing is ever proven there; "settled"
 * counts the calls that stopped because the relaxed problem was, not at the time limit. Last line: JSON, also written to
 * bench/results/optimal-line.json (the table in docs/benchmarks.md is rendered from it).
 * Runs on one core; times are wall clock on this machine (the load average is recorded).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import defaults from '../config/default.json';
import { toPipelineModel, validateProfile } from '../src/core/pipeline/pipeline-model';
import { PipelineModel } from '../src/core/pipeline/pipeline-model.type';
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

/** Runs `plan`, adds its wall time (ms) to `times`, returns its result. */
function timed<T>(times: number[], plan: () => T): T {
  const t0 = performance.now();
  const result = plan();
  times.push(performance.now() - t0);
  return result;
}

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
    const transportMs: number[] = [];
    const transportSearchMs: number[] = [];
    const transportGains: number[] = [];
    let settled = 0;
    for (let c = 0; c < CASES; c++) {
      const fMs = Array.from({ length: S }, () => u(5, 20));
      const linkMs = new Array<number>(S - 1).fill(0.5);
      const slow = 1 + Math.floor(random() * 2);
      for (let k = 0; k < slow; k++) linkMs[Math.floor(random() * (S - 1))] = u(15, 120);
      const model = toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs, bMs: fMs.map(() => u(5, 20)), wMs: fMs.map(() => u(5, 20)), linkMs }));
      const searched = timed(searchMs, () => planPipeline(model, { policy: 'search', search }));
      const exact = timed(planMs, () => planPipeline(model, { policy: 'optimal', search, optimal: { solver, timeLimitMs } }));
      if (exact.optimal?.proven) proven++;
      gains.push((1 - exact.run.iterationMs / searched.run.iterationMs) * 100);
      const slowed = linkMs.map((ms) => ms > 1);
      const underTransport: PipelineModel = {
        ...model,
        transport: {
          gpuSlots: new Int32Array(S - 1).fill(defaults.control.gpuSendsInFlight),
          delegateQueues: Int32Array.from(slowed, (slow) => (slow ? 2 : 0)),
          copyOverhead: Float64Array.from({ length: S }, (_, s) => (slowed[s] || slowed[s - 1] ? defaults.control.delegateCopyOverhead : 0)),
        },
      };
      const searchedT = timed(transportSearchMs, () => planPipeline(underTransport, { policy: 'search', search }));
      const exactT = timed(transportMs, () => planPipeline(underTransport, { policy: 'optimal', search, optimal: { solver, timeLimitMs } }));
      if (exactT.optimal?.settled) settled++;
      transportGains.push((1 - exactT.run.iterationMs / searchedT.run.iterationMs) * 100);
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
      transport: {
        settled,
        optimalMedianMs: round(median(transportMs)),
        optimalMaxMs: round(Math.max(...transportMs)),
        searchMedianMs: round(median(transportSearchMs)),
        meanGainOverSearchPct: round(transportGains.reduce((a, b) => a + b, 0) / transportGains.length),
        maxGainOverSearchPct: round(Math.max(...transportGains)),
      },
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
