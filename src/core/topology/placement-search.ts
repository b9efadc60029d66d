import { Evaluation, PlacementCost, PlacementEvaluator } from './placement-evaluator';
import { RemapProblem } from './remap-problem.type';
import { Placement } from './topology.type';

export interface RemapSearchOptions {
  /** Problems with at most this many candidate placements of the slow links' endpoints are solved exactly. */
  exactLimit?: number;
  /** Time budget of the local search, ms: a safety cap only; maxEvaluations makes results machine-independent. */
  timeBudgetMs?: number;
  /** Cap on placements the local search evaluates: with it the same problem gives the same placement on every machine. */
  maxEvaluations?: number;
  /** Injected clock, ms (default performance.now). */
  now?: () => number;
}

export interface RemapResult {
  /** The best placement found (the current one when nothing beats it). */
  placement: Placement;
  cost: PlacementCost;
  /** The current placement and rings, unchanged. */
  stay: PlacementCost;
  /** Nodes whose stage changes. */
  movedNodes: number[];
  /** Whether any node's slot or any ring changes. */
  changed: boolean;
  method: 'exact' | 'local-search';
  evaluations: number;
  elapsedMs: number;
}

export const DEFAULT_REMAP_SEARCH: Required<Omit<RemapSearchOptions, 'now'>> = { exactLimit: 50000, timeBudgetMs: 500, maxEvaluations: 200000 };

const EPS = 1e-9;

function inverse(nodeAt: Int32Array): Int32Array {
  const slotOf = new Int32Array(nodeAt.length);
  nodeAt.forEach((node, slot) => (slotOf[node] = slot));
  return slotOf;
}

/** Strictly better: lower objective, then fewer moved nodes. */
function better(a: PlacementCost, b: PlacementCost): boolean {
  if (a.objectiveMs < b.objectiveMs - EPS) return true;
  return a.objectiveMs <= b.objectiveMs + EPS && a.moved < b.moved;
}

function candidateCount(nodes: number, endpoints: number): number {
  let count = 1;
  for (let k = 0; k < endpoints; k++) count *= nodes - k;
  return count;
}

export function checkPlacement(placement: Placement): void {
  const { dpSize: D, stages: S, nodeAt, rings } = placement;
  const n = D * S;
  if (nodeAt.length !== n) throw new RangeError(`placement: nodeAt must have ${n} entries, has ${nodeAt.length}`);
  const seen = new Uint8Array(n);
  for (const node of nodeAt) {
    if (!(node >= 0 && node < n) || seen[node]) throw new RangeError(`placement: nodeAt must be a permutation of 0..${n - 1}`);
    seen[node] = 1;
  }
  if (rings.length !== S) throw new RangeError(`placement: need ${S} rings, got ${rings.length}`);
  for (const ring of rings) {
    const dps = new Set(ring);
    if (ring.length !== D || dps.size !== D || ring.some((d) => d < 0 || d >= D)) throw new RangeError(`placement: every ring must order 0..${D - 1}`);
  }
}

/**
 * Re-maps a job's nodes so that slow links carry as little traffic as possible (Falcon's idea:
 * a slow data-parallel link costs far more than a slow pipeline link, and a pipeline straggler
 * can then be absorbed by slackness and delegation). Minimises predicted iteration time plus
 * amortised migration over node positions and ring orders.
 *
 * Exact when the endpoints of the slow links have few possible slots (every assignment of them is
 * tried; the other nodes are interchangeable, so they keep their slots or take freed ones in their
 * own stage first, which moves the fewest). Otherwise a steepest-descent local search over swaps
 * of an endpoint with a node of its replica, its stage, or the replica of a node it has a slow link
 * to, from the current placement with the best rings.
 */
export function searchPlacement(problem: RemapProblem, options: RemapSearchOptions = {}): RemapResult {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const { exactLimit, timeBudgetMs, maxEvaluations } = { ...DEFAULT_REMAP_SEARCH, ...options };
  checkPlacement(problem.current);
  const evaluator = new PlacementEvaluator(problem);
  const current = problem.current;
  const stay = evaluator.evaluate(current.nodeAt, inverse(current.nodeAt), 0, false).cost;
  const exact = candidateCount(evaluator.nodes, evaluator.endpoints.length) <= exactLimit;
  const found = exact ? exactSearch(evaluator) : localSearch(evaluator, () => now() > started + timeBudgetMs || evaluator.evaluations >= maxEvaluations);
  let { nodeAt, evaluation } = found;
  if (!better(evaluation.cost, stay)) {
    nodeAt = current.nodeAt;
    evaluation = { cost: stay, rings: current.rings, ringExtraMs: new Float64Array(problem.stages) };
  }
  const S = problem.stages;
  const movedNodes: number[] = [];
  nodeAt.forEach((node, slot) => {
    if (slot % S !== evaluator.currentStage[node]) movedNodes.push(node);
  });
  movedNodes.sort((a, b) => a - b);
  const changed = nodeAt.some((node, slot) => node !== current.nodeAt[slot]) || evaluation.rings.some((ring, p) => ring !== current.rings[p] && ring.some((d, k) => d !== current.rings[p][k]));
  return {
    placement: { dpSize: problem.dpSize, stages: S, nodeAt: nodeAt.slice(), rings: evaluation.rings.map((r) => r.slice()) },
    cost: evaluation.cost,
    stay,
    movedNodes,
    changed,
    method: exact ? 'exact' : 'local-search',
    evaluations: evaluator.evaluations,
    elapsedMs: now() - started,
  };
}

interface Found {
  nodeAt: Int32Array;
  evaluation: Evaluation;
}

/** Every assignment of the endpoints to slots; the rest filled with the fewest moves. */
function exactSearch(evaluator: PlacementEvaluator): Found {
  const { nodes, stages: S, endpoints, currentStage } = evaluator;
  const current = evaluator.problem.current.nodeAt;
  const currentSlot = inverse(current);
  const isEndpoint = new Uint8Array(nodes);
  for (const x of endpoints) isEndpoint[x] = 1;
  const taken = new Uint8Array(nodes);
  const assigned = new Int32Array(endpoints.length);
  const nodeAt = new Int32Array(nodes);
  let best: Found | null = null;

  const complete = () => {
    nodeAt.fill(-1);
    endpoints.forEach((x, k) => (nodeAt[assigned[k]] = x));
    const displaced: number[] = [];
    for (let slot = 0; slot < nodes; slot++) {
      const u = current[slot];
      if (isEndpoint[u]) continue;
      if (taken[slot]) displaced.push(u);
      else nodeAt[slot] = u;
    }
    const free: number[] = [];
    for (let slot = 0; slot < nodes; slot++) if (nodeAt[slot] < 0) free.push(slot);
    // Displaced nodes take a free slot of their own stage first: no weights to load.
    const rest: number[] = [];
    for (const u of displaced) {
      const i = free.findIndex((slot) => slot % S === currentSlot[u] % S);
      if (i >= 0) nodeAt[free.splice(i, 1)[0]] = u;
      else rest.push(u);
    }
    rest.forEach((u, i) => (nodeAt[free[i]] = u));
    let moved = 0;
    for (let slot = 0; slot < nodes; slot++) if (slot % S !== currentStage[nodeAt[slot]]) moved++;
    const evaluation = evaluator.evaluate(nodeAt, inverse(nodeAt), moved);
    if (!best || better(evaluation.cost, best.evaluation.cost)) best = { nodeAt: nodeAt.slice(), evaluation };
  };

  const assign = (k: number) => {
    if (k === endpoints.length) return complete();
    for (let slot = 0; slot < nodes; slot++) {
      if (taken[slot]) continue;
      taken[slot] = 1;
      assigned[k] = slot;
      assign(k + 1);
      taken[slot] = 0;
    }
  };
  assign(0);
  return best!;
}

/** Steepest descent over endpoint swaps, from the current placement with the best rings. */
function localSearch(evaluator: PlacementEvaluator, exhausted: () => boolean): Found {
  const { stages: S, dpSize: D, endpoints, currentStage } = evaluator;
  const nodeAt = evaluator.problem.current.nodeAt.slice();
  const slotOf = inverse(nodeAt);
  let moved = 0;
  let evaluation = evaluator.evaluate(nodeAt, slotOf, moved);
  const swap = (x: number, y: number) => {
    const sx = slotOf[x];
    const sy = slotOf[y];
    moved -= (sx % S !== currentStage[x] ? 1 : 0) + (sy % S !== currentStage[y] ? 1 : 0);
    nodeAt[sx] = y;
    nodeAt[sy] = x;
    slotOf[x] = sy;
    slotOf[y] = sx;
    moved += (sy % S !== currentStage[x] ? 1 : 0) + (sx % S !== currentStage[y] ? 1 : 0);
  };
  const candidates = (x: number): Set<number> => {
    const out = new Set<number>();
    const addReplica = (d: number) => {
      for (let p = 0; p < S; p++) out.add(nodeAt[d * S + p]);
    };
    const addStage = (p: number) => {
      for (let d = 0; d < D; d++) out.add(nodeAt[d * S + p]);
    };
    addReplica(Math.floor(slotOf[x] / S));
    addStage(slotOf[x] % S);
    for (const { node } of evaluator.neighboursOf(x)) addReplica(Math.floor(slotOf[node] / S));
    out.delete(x);
    return out;
  };
  for (;;) {
    let bestMove: [number, number] | null = null;
    let bestEval = evaluation;
    for (const x of endpoints) {
      for (const y of candidates(x)) {
        if (exhausted()) break;
        swap(x, y);
        const e = evaluator.evaluate(nodeAt, slotOf, moved);
        if (better(e.cost, bestEval.cost)) {
          bestEval = e;
          bestMove = [x, y];
        }
        swap(x, y);
      }
    }
    if (!bestMove) break;
    swap(bestMove[0], bestMove[1]);
    evaluation = bestEval;
    if (exhausted()) break;
  }
  return { nodeAt, evaluation };
}
