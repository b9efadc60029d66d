import { WPlacement } from '../engine/engine';
import { EngineRun } from '../engine/engine-run.type';
import { generateSchedule } from '../engine/generator';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { adaptiveWarmup } from './adaptive-planner';
import { initialWarmup } from './initial-planner';
import { seededRandom } from './seeded-random';

export interface SearchOptions {
  /** Wall-clock budget, ms (default 50). The best schedule found so far is returned when it runs out. */
  timeBudgetMs?: number;
  /** Cap on schedules evaluated; with it the result no longer depends on machine speed (tests). */
  maxEvaluations?: number;
  /** Most microbatches each stage may hold (host memory when delegation is on); default N. */
  inflightCaps?: readonly number[];
  seed?: number;
  /** Warm-up counts evaluated right after the adaptive plan, whatever the budget: the search returns nothing worse than them. */
  extraSeeds?: readonly number[][];
  /** Injected clock, ms. */
  now?: () => number;
}

export interface SearchResult {
  warmup: number[];
  wPlacement: WPlacement[];
  run: EngineRun;
  evaluations: number;
  elapsedMs: number;
  /** Iteration time of Alg. 2's plan under the same caps: the search starts from it and never returns worse. */
  adaptiveIterationMs: number;
}

interface Candidate {
  warmup: number[];
  wPlacement: WPlacement[];
  run: EngineRun;
  memory: number;
}

const RELATIVE_EPSILON = 1e-9;

/**
 * Searches warm-up counts and per-stage W placement with the exact generator as the cost
 * model: seeds (Alg. 2, 1F1B-like, Alg. 1 under the caps, uniform slackness), then iterated
 * best-improvement local search over "one more/less slackness on link i", "one more/less
 * forward on stage i" and "toggle stage i's W placement", with seeded random kicks between
 * climbs. Ties in iteration time go to the plan holding fewer activations (sum of x_i).
 */
export function searchPlan(model: PipelineModel, options: SearchOptions = {}): SearchResult {
  const { stages: S, microbatches: N } = model;
  const now = options.now ?? (() => performance.now());
  const startedAt = now();
  const deadline = startedAt + (options.timeBudgetMs ?? 50);
  const maxEvaluations = options.maxEvaluations ?? Number.POSITIVE_INFINITY;
  const caps = (options.inflightCaps ?? new Array<number>(S).fill(N)).map((c) => Math.max(1, Math.min(N, c)));
  const random = seededRandom(options.seed ?? 1);
  const seen = new Map<string, Candidate | null>();
  let evaluations = 0;

  const feasible = (warmup: number[]): boolean =>
    warmup.every((x, i) => Number.isInteger(x) && x >= 1 && x <= caps[i] && (i === 0 || x <= warmup[i - 1]));

  const evaluate = (warmup: number[], wPlacement: WPlacement[]): Candidate | null => {
    if (!feasible(warmup)) return null;
    const key = warmup.join(',') + '|' + wPlacement.join('');
    if (seen.has(key)) return seen.get(key)!;
    evaluations++;
    let candidate: Candidate | null = null;
    try {
      const run = generateSchedule(model, { warmup, inflightCap: warmup, wPlacement });
      candidate = { warmup, wPlacement, run, memory: warmup.reduce((a, b) => a + b, 0) };
    } catch {
      candidate = null; // infeasible under the model's memory limits: not a plan
    }
    seen.set(key, candidate);
    return candidate;
  };
  const better = (a: Candidate, b: Candidate): boolean => {
    const eps = RELATIVE_EPSILON * Math.max(1, b.run.iterationMs);
    if (a.run.iterationMs < b.run.iterationMs - eps) return true;
    return a.run.iterationMs <= b.run.iterationMs + eps && a.memory < b.memory;
  };
  const outOfBudget = (): boolean => evaluations >= maxEvaluations || now() >= deadline;

  const lazy = new Array<WPlacement>(S).fill(WPlacement.Lazy);
  const adaptive = evaluate(adaptiveWarmup(model, caps), lazy);
  if (!adaptive) throw new Error('search planner: the adaptive plan is infeasible under the given caps');
  let best = adaptive;
  for (const warmup of options.extraSeeds ?? []) {
    const c = evaluate(warmup.map((x, i) => Math.max(1, Math.min(N, caps[i], x))), lazy);
    if (c && better(c, best)) best = c;
  }
  const seeds: number[][] = [
    Array.from({ length: S }, (_, i) => Math.min(N, caps[i], S - i)),
    initialWarmup(S, N, caps),
    ...[1, 2, 3].map((d) => Array.from({ length: S }, (_, i) => Math.min(N, caps[i], 1 + d * (S - 1 - i)))),
  ];
  for (const warmup of seeds) {
    if (outOfBudget()) break;
    const c = evaluate(warmup, lazy);
    if (c && better(c, best)) best = c;
  }

  const neighbours = (c: Candidate): Array<[number[], WPlacement[]]> => {
    const out: Array<[number[], WPlacement[]]> = [];
    for (let i = 0; i + 1 < S; i++) {
      for (const d of [1, -1]) out.push([c.warmup.map((x, j) => (j <= i ? x + d : x)), c.wPlacement]);
    }
    for (let i = 0; i < S; i++) {
      for (const d of [1, -1]) out.push([c.warmup.map((x, j) => (j === i ? x + d : x)), c.wPlacement]);
      const toggled = c.wPlacement.slice();
      toggled[i] = toggled[i] === WPlacement.Lazy ? WPlacement.Eager : WPlacement.Lazy;
      out.push([c.warmup, toggled]);
    }
    return out;
  };

  let current = best;
  // Once the neighbourhood and the kicks only revisit known plans, more rounds cannot help.
  let staleRounds = 0;
  while (!outOfBudget() && staleRounds < 32) {
    const evaluationsBefore = evaluations;
    let improved: Candidate | null = null;
    for (const [warmup, wPlacement] of neighbours(current)) {
      if (outOfBudget()) break;
      const c = evaluate(warmup, wPlacement);
      if (c && better(c, improved ?? current)) improved = c;
    }
    if (improved) {
      current = improved;
      if (better(current, best)) best = current;
      continue;
    }
    // Local optimum: kick the best plan by a few random slackness moves and climb again.
    let kicked: Candidate | null = null;
    for (let attempt = 0; attempt < 8 && !kicked && !outOfBudget(); attempt++) {
      const warmup = best.warmup.slice();
      for (let k = 0; k < 2; k++) {
        const link = Math.floor(random() * Math.max(1, S - 1));
        const d = random() < 0.5 ? -1 : 1;
        for (let j = 0; j <= link; j++) warmup[j] += d;
      }
      kicked = evaluate(warmup, best.wPlacement);
    }
    staleRounds = evaluations === evaluationsBefore ? staleRounds + 1 : 0;
    if (!kicked) continue;
    current = kicked;
    if (better(current, best)) best = current;
  }
  return {
    warmup: best.warmup,
    wPlacement: best.wPlacement,
    run: best.run,
    evaluations,
    elapsedMs: now() - startedAt,
    adaptiveIterationMs: adaptive.run.iterationMs,
  };
}
