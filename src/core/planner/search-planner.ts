import { LookAhead, WPlacement } from '../engine/engine';
import { EngineRun } from '../engine/engine-run.type';
import { generateSchedule } from '../engine/generator';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { adaptiveWarmup } from './adaptive-planner';
import { initialWarmup } from './initial-planner';
import { seededRandom } from './seeded-random';

/** Schedules the search evaluates when the caller gives no count: the budget, the same on every machine. */
export const DEFAULT_SEARCH_EVALUATIONS = 400;
/** Wall-clock safety cap when the caller gives none, ms: a runaway guard, not the budget. */
export const DEFAULT_SEARCH_SAFETY_MS = 2000;

export interface SearchOptions {
  /**
   * Schedules to evaluate (default DEFAULT_SEARCH_EVALUATIONS): the budget. Plans depend on it and
   * on the input only, so the same input gives the same plan whatever the machine or its load.
   */
  maxEvaluations?: number;
  /** Wall-clock safety cap, ms (default DEFAULT_SEARCH_SAFETY_MS). Only when it fires does the plan depend on the machine (`timedOut`). */
  timeBudgetMs?: number;
  /** Most microbatches each stage may hold (host memory when delegation is on); default N. */
  inflightCaps?: readonly number[];
  seed?: number;
  /** Warm-up counts evaluated right after the adaptive plan, whatever the budget: the search returns nothing worse than them. */
  extraSeeds?: readonly number[][];
  /** Also search per stage the generator's options beyond B > F > W (look-ahead, in-flight cap above the warm-up); default true. */
  richSchedules?: boolean;
  /**
   * Depth-first nodes per target of the polish that follows the search in `planPipeline` (polish-plan.ts;
   * default DEFAULT_POLISH_NODES, 0 off): schedules outside the generator's space, found with a node budget.
   */
  polishNodes?: number;
  /** Injected clock, ms. */
  now?: () => number;
}

export interface SearchResult {
  warmup: number[];
  wPlacement: WPlacement[];
  /** Per stage, at least the warm-up count and at most the caller's in-flight cap. */
  inflightCap: number[];
  lookAhead: LookAhead[];
  run: EngineRun;
  evaluations: number;
  elapsedMs: number;
  /** Iteration time of Alg. 2's plan under the same caps: the search starts from it and never returns worse. */
  adaptiveIterationMs: number;
  /** Every warm-up vector within the caps was evaluated (with the greedy's default options). */
  exhaustive: boolean;
  /** The wall-clock safety cap, not the evaluation budget, ended the search: this plan depends on the machine. */
  timedOut: boolean;
}

/** One point of the search space: warm-up counts and the generator's per-stage options. */
interface Config {
  warmup: number[];
  /** In-flight cap above the warm-up count, per stage. */
  extra: number[];
  wPlacement: WPlacement[];
  lookAhead: LookAhead[];
}

interface Candidate extends Config {
  run: EngineRun;
  /** Sum of the in-flight caps: the activations the plan may hold. */
  memory: number;
  /** Per-stage options away from the greedy's defaults: among equals, the simpler plan wins. */
  options: number;
}

const RELATIVE_EPSILON = 1e-9;
/** Rounds in a row that evaluated nothing new: the reachable space is exhausted. */
const STALE_ROUNDS = 32;
/** Share of the budget for climbing warm-up counts alone (default options) before the per-stage options join in. */
const WARMUP_SHARE = 0.35;
/** Largest share of the budget spent enumerating every warm-up vector instead. */
const ENUMERATION_SHARE = 0.5;
/** Best distinct warm-up vectors the joint search restarts from, in order. */
const RESTARTS = 4;

/** Non-increasing integer vectors with 1 <= x_i <= caps[i], counted up to `limit` (then `limit + 1`). */
export function countWarmups(caps: readonly number[], limit: number): number {
  // ways[v] = vectors for stages i.. whose first entry is at most v.
  const top = Math.max(...caps);
  let ways = new Array<number>(top + 1).fill(1);
  for (let i = caps.length - 1; i >= 0; i--) {
    const next = new Array<number>(top + 1).fill(0);
    for (let v = 1; v <= top; v++) next[v] = Math.min(limit + 1, next[v - 1] + (v <= caps[i] ? ways[v] : 0));
    ways = next;
  }
  return Math.min(limit + 1, ways[top]);
}

/**
 * Searches warm-up counts and the generator's per-stage options with the exact generator as the
 * cost model, on a budget of evaluations (deterministic: the wall clock is only a safety cap):
 * 1. seeds: Alg. 2, the caller's extra seeds, 1F1B-like, Alg. 1 under the caps, uniform slackness,
 *    and for each link all the slackness upstream of it;
 * 2. warm-up counts with the greedy's defaults: every vector when they fit in half the budget,
 *    else best-improvement climbs over "one more/less slackness on link i" and "one more/less
 *    forward on stage i" (a move that pays off is repeated while it does), with seeded random
 *    kicks from the best plan between climbs;
 * 3. jointly with per-stage options (W placement Lazy/Eager, look-ahead on W and F, in-flight cap
 *    above the warm-up): first-improvement climbs restarted from the best distinct warm-up
 *    vectors of step 2, then seeded kicks of counts and options.
 * Ties in iteration time go to the plan holding fewer activations, then to the simpler plan.
 */
export function searchPlan(model: PipelineModel, options: SearchOptions = {}): SearchResult {
  const { stages: S, microbatches: N } = model;
  const now = options.now ?? (() => performance.now());
  const startedAt = now();
  const deadline = startedAt + (options.timeBudgetMs ?? DEFAULT_SEARCH_SAFETY_MS);
  const maxEvaluations = Math.max(1, options.maxEvaluations ?? DEFAULT_SEARCH_EVALUATIONS);
  const rich = options.richSchedules ?? true;
  const caps = (options.inflightCaps ?? new Array<number>(S).fill(N)).map((c) => Math.max(1, Math.min(N, c)));
  const random = seededRandom(options.seed ?? 1);
  const seen = new Map<string, Candidate | null>();
  let evaluations = 0;
  let timedOut = false;

  const feasible = (c: Config): boolean =>
    c.warmup.every((x, i) => Number.isInteger(x) && x >= 1 && x <= caps[i] && (i === 0 || x <= c.warmup[i - 1]) && c.extra[i] >= 0 && x + c.extra[i] <= caps[i]);
  const defaults = (warmup: number[]): Config => ({
    warmup,
    extra: new Array<number>(S).fill(0),
    wPlacement: new Array<WPlacement>(S).fill(WPlacement.Lazy),
    lookAhead: new Array<LookAhead>(S).fill(LookAhead.None),
  });
  const keyOf = (c: Config): string => `${c.warmup.join(',')}|${c.extra.join(',')}|${c.wPlacement.join('')}|${c.lookAhead.join('')}`;
  const outOfBudget = (): boolean => {
    if (evaluations >= maxEvaluations) return true;
    if (now() >= deadline) timedOut = true;
    return timedOut;
  };

  const evaluate = (c: Config): Candidate | null => {
    if (!feasible(c)) return null;
    const key = keyOf(c);
    if (seen.has(key)) return seen.get(key)!;
    evaluations++;
    let candidate: Candidate | null = null;
    try {
      const inflightCap = c.warmup.map((x, i) => x + c.extra[i]);
      const run = generateSchedule(model, { warmup: c.warmup, inflightCap, wPlacement: c.wPlacement, lookAhead: c.lookAhead });
      const options = c.extra.filter((e) => e > 0).length + c.wPlacement.filter((p) => p !== WPlacement.Lazy).length + c.lookAhead.filter((l) => l !== LookAhead.None).length;
      candidate = { ...c, run, memory: inflightCap.reduce((a, b) => a + b, 0), options };
    } catch {
      candidate = null; // infeasible under the model's memory limits: not a plan
    }
    seen.set(key, candidate);
    return candidate;
  };
  const better = (a: Candidate, b: Candidate): boolean => {
    const eps = RELATIVE_EPSILON * Math.max(1, b.run.iterationMs);
    if (a.run.iterationMs < b.run.iterationMs - eps) return true;
    if (a.run.iterationMs > b.run.iterationMs + eps) return false;
    return a.memory < b.memory || (a.memory === b.memory && a.options < b.options);
  };

  // Step 1: seeds. Alg. 2 and the caller's seeds are evaluated whatever the budget.
  const adaptive = evaluate(defaults(adaptiveWarmup(model, caps)));
  if (!adaptive) throw new Error('search planner: the adaptive plan is infeasible under the given caps');
  let best = adaptive;
  const consider = (c: Candidate | null): Candidate | null => {
    if (c && better(c, best)) best = c;
    return c;
  };
  const project = (warmup: number[]): number[] => {
    const x = warmup.map((v, i) => Math.max(1, Math.min(caps[i], Math.round(v))));
    for (let i = 1; i < S; i++) x[i] = Math.min(x[i], x[i - 1]);
    return x;
  };
  for (const warmup of options.extraSeeds ?? []) consider(evaluate(defaults(project(warmup))));
  const seeds: number[][] = [
    Array.from({ length: S }, (_, i) => S - i),
    initialWarmup(S, N, caps),
    ...[1, 2, 3].map((d) => Array.from({ length: S }, (_, i) => 1 + d * (S - 1 - i))),
    // All the slackness a slow link k could want: every stage up to k holds N.
    ...Array.from({ length: S - 1 }, (_, k) => Array.from({ length: S }, (_, i) => (i <= k ? N : S - i))),
  ];
  for (const warmup of seeds) {
    if (outOfBudget()) break;
    consider(evaluate(defaults(project(warmup))));
  }

  // Step 2: warm-up counts with the greedy's defaults.
  const warmupBudget = rich ? Math.floor(maxEvaluations * WARMUP_SHARE) : maxEvaluations;
  const enumerationBudget = rich ? Math.floor(maxEvaluations * ENUMERATION_SHARE) : maxEvaluations;
  const exhaustive = countWarmups(caps, enumerationBudget) <= enumerationBudget && enumerateWarmups(caps, (warmup) => !outOfBudget() && (consider(evaluate(defaults(warmup))), true));
  const warmupMoves = (c: Config): Config[] => {
    const out: Config[] = [];
    for (let i = 0; i + 1 < S; i++) for (const d of [1, -1]) out.push({ ...c, warmup: c.warmup.map((x, j) => (j <= i ? x + d : x)) });
    for (let i = 0; i < S; i++) for (const d of [1, -1]) out.push({ ...c, warmup: c.warmup.map((x, j) => (j === i ? x + d : x)) });
    return out;
  };
  // Pattern move: a warm-up change that paid off is repeated while it keeps paying off.
  const extend = (from: Candidate, to: Candidate): Candidate => {
    const step = to.warmup.map((x, i) => x - from.warmup[i]);
    if (step.every((d) => d === 0)) return to;
    let current = to;
    while (!outOfBudget()) {
      const next = evaluate({ ...current, warmup: current.warmup.map((x, i) => x + step[i]) });
      if (!next || !better(next, current)) break;
      current = consider(next)!;
    }
    return current;
  };
  const kickWarmup = (warmup: number[], moves: number): number[] => {
    const x = warmup.slice();
    for (let k = 0; k < moves; k++) {
      const link = Math.floor(random() * Math.max(1, S - 1));
      const d = (random() < 0.5 ? -1 : 1) * (1 + Math.floor(random() * 3));
      for (let j = 0; j <= link; j++) x[j] += d;
    }
    return project(x);
  };
  if (!exhaustive) {
    const budgetLeft = (): boolean => evaluations < warmupBudget && !outOfBudget();
    let current = best;
    let stale = 0;
    for (let round = 0; budgetLeft() && stale < STALE_ROUNDS; round++) {
      const before = evaluations;
      let improved: Candidate | null = null;
      for (const c of warmupMoves(current)) {
        if (!budgetLeft()) break;
        const e = evaluate(c);
        if (e && better(e, improved ?? current)) improved = e;
      }
      if (improved) {
        current = extend(current, consider(improved)!);
        continue;
      }
      // Local optimum: kick the best plan by a few random slackness moves and climb again.
      let kicked: Candidate | null = null;
      for (let attempt = 0; attempt < 8 && !kicked && budgetLeft(); attempt++) kicked = evaluate(defaults(kickWarmup(best.warmup, 1 + (round % 3))));
      stale = evaluations === before ? stale + 1 : 0;
      if (kicked) current = consider(kicked)!;
    }
  }

  // Step 3: per-stage options jointly with the counts.
  if (rich) {
    const optionMoves = (c: Config): Config[] => {
      const out: Config[] = [];
      for (let i = 0; i < S; i++) {
        const at = <T>(xs: T[], v: T): T[] => xs.map((x, j) => (j === i ? v : x));
        out.push({ ...c, lookAhead: at(c.lookAhead, c.lookAhead[i] ^ LookAhead.WAfterLastB) });
        out.push({ ...c, lookAhead: at(c.lookAhead, c.lookAhead[i] ^ LookAhead.W) });
        out.push({ ...c, extra: at(c.extra, c.extra[i] + 1) });
        out.push({ ...c, wPlacement: at(c.wPlacement, c.wPlacement[i] === WPlacement.Lazy ? WPlacement.Eager : WPlacement.Lazy) });
        out.push({ ...c, lookAhead: at(c.lookAhead, c.lookAhead[i] ^ LookAhead.WBeforeF) });
        out.push({ ...c, lookAhead: at(c.lookAhead, c.lookAhead[i] ^ LookAhead.F) });
        out.push({ ...c, extra: at(c.extra, c.extra[i] - 1) });
      }
      return out;
    };
    // First improvement, scanning on from where the last improvement was found; a full turn without one is a local optimum.
    const climb = (start: Candidate): void => {
      let current = start;
      let moves = [...optionMoves(current), ...warmupMoves(current)];
      let k = 0;
      let sinceImproved = 0;
      while (sinceImproved < moves.length && !outOfBudget()) {
        const e = evaluate(moves[k % moves.length]);
        k++;
        sinceImproved++;
        if (e && better(e, current)) {
          current = extend(current, consider(e)!);
          moves = [...optionMoves(current), ...warmupMoves(current)];
          k %= moves.length;
          sinceImproved = 0;
        }
      }
    };
    const starts = [...seen.values()]
      .filter((c): c is Candidate => c !== null)
      .sort((a, b) => (better(a, b) ? -1 : better(b, a) ? 1 : 0))
      .slice(0, RESTARTS);
    for (const start of starts) {
      if (outOfBudget()) break;
      climb(start);
    }
    let stale = 0;
    for (let round = 0; !outOfBudget() && stale < STALE_ROUNDS; round++) {
      const before = evaluations;
      // Kick counts and a few options of the best plan, then climb again.
      const kicked: Config = { ...best, warmup: kickWarmup(best.warmup, 1 + (round % 2)), extra: best.extra.slice(), wPlacement: best.wPlacement.slice(), lookAhead: best.lookAhead.slice() };
      for (let k = 0; k < 2; k++) {
        const i = Math.floor(random() * S);
        kicked.lookAhead[i] = Math.floor(random() * (LookAhead.All + 1));
        kicked.extra[i] = Math.floor(random() * 3);
      }
      for (let i = 0; i < S; i++) kicked.extra[i] = Math.max(0, Math.min(kicked.extra[i], caps[i] - kicked.warmup[i]));
      const e = evaluate(kicked);
      if (e) {
        consider(e);
        climb(e);
      }
      stale = evaluations === before ? stale + 1 : 0;
    }
  }

  return {
    warmup: best.warmup,
    wPlacement: best.wPlacement,
    inflightCap: best.warmup.map((x, i) => x + best.extra[i]),
    lookAhead: best.lookAhead,
    run: best.run,
    evaluations,
    elapsedMs: now() - startedAt,
    adaptiveIterationMs: adaptive.run.iterationMs,
    exhaustive,
    timedOut,
  };
}

/** Calls `visit` on every non-increasing vector within the caps, largest first; false from `visit` stops it. Returns whether it finished. */
function enumerateWarmups(caps: readonly number[], visit: (warmup: number[]) => boolean): boolean {
  const x = new Array<number>(caps.length);
  const go = (i: number): boolean => {
    if (i === caps.length) return visit(x.slice());
    for (let v = Math.min(caps[i], i > 0 ? x[i - 1] : caps[i]); v >= 1; v--) {
      x[i] = v;
      if (!go(i + 1)) return false;
    }
    return true;
  };
  return go(0);
}
