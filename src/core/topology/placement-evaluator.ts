import { ringAllReduceMs } from './all-reduce';
import { chooseRing, RingChoice, RingEdge } from './ring-order';
import { RemapProblem } from './remap-problem.type';
import { NodeLink } from './topology.type';

export interface PlacementCost {
  /** Predicted iteration time: pipelines, then each stage's all-reduce as soon as its replicas are done, ms. */
  iterationMs: number;
  /** Nodes whose stage differs from the current placement (they must load another stage's weights). */
  moved: number;
  /** One-off cost of those moves, ms. */
  migrationMs: number;
  /** What the search minimises: iterationMs + migrationMs / amortizeIterations. */
  objectiveMs: number;
}

export interface Evaluation {
  cost: PlacementCost;
  /** Per stage, the ring order to use (the current one where nothing better exists). */
  rings: Int32Array[];
  /** Per stage, the largest extra delay on a link of its ring, ms. */
  ringExtraMs: Float64Array;
}

/**
 * Prices placements of one remap problem. Only nodes at the ends of slow links can make a
 * placement differ from a healthy one, so an evaluation touches only their replicas and stages:
 * O(slow links x (stages + ring lookups)), whatever the job's size. Pipelines are simulated once
 * per distinct vector of link delays and rings chosen once per distinct set of slow ring edges.
 */
export class PlacementEvaluator {
  readonly stages: number;
  readonly dpSize: number;
  readonly nodes: number;
  /** Nodes at either end of a slow link, ascending. */
  readonly endpoints: Int32Array;
  /** Stage of every node in the current placement. */
  readonly currentStage: Int32Array;
  evaluations = 0;
  private readonly extra = new Map<number, number>();
  private readonly neighbours = new Map<number, Array<{ node: number; extraMs: number }>>();
  private readonly healthyFinish: Float64Array;
  private readonly finishCache = new Map<string, Float64Array>();
  private readonly ringCache = new Map<string, RingChoice>();
  private readonly linkExtra: Float64Array;

  constructor(readonly problem: RemapProblem) {
    const { stages, dpSize, current } = problem;
    this.stages = stages;
    this.dpSize = dpSize;
    this.nodes = stages * dpSize;
    // One extra delay per pair (the largest given), then each endpoint's list of slow neighbours.
    const pairs = new Map<number, NodeLink>();
    for (const link of problem.slowLinks) {
      if (link.a === link.b || !(link.extraMs > 0)) continue;
      const key = this.key(link.a, link.b);
      if (!(link.extraMs <= (pairs.get(key)?.extraMs ?? 0))) pairs.set(key, link);
    }
    for (const [key, { a, b, extraMs }] of pairs) {
      this.extra.set(key, extraMs);
      for (const [x, y] of [[a, b], [b, a]]) this.neighbours.set(x, [...(this.neighbours.get(x) ?? []), { node: y, extraMs }]);
    }
    this.endpoints = Int32Array.from([...this.neighbours.keys()].sort((x, y) => x - y));
    this.currentStage = new Int32Array(this.nodes);
    current.nodeAt.forEach((node, slot) => (this.currentStage[node] = slot % stages));
    this.linkExtra = new Float64Array(Math.max(0, stages - 1));
    this.healthyFinish = problem.stageFinish(new Float64Array(Math.max(0, stages - 1)));
  }

  extraBetween(a: number, b: number): number {
    return this.extra.get(this.key(a, b)) ?? 0;
  }

  /** Nodes with a slow link to `node`. */
  neighboursOf(node: number): ReadonlyArray<{ node: number; extraMs: number }> {
    return this.neighbours.get(node) ?? [];
  }

  /**
   * Cost of `nodeAt` (slotOf its inverse; `moved` nodes changed stage). With `chooseRings` each
   * stage gets its best ring order, else the current rings are priced as they are.
   */
  evaluate(nodeAt: Int32Array, slotOf: Int32Array, moved: number, chooseRings = true): Evaluation {
    this.evaluations++;
    const { stages: S, dpSize: D, problem } = this;
    const ready = new Float64Array(S);
    const replicas = new Set<number>();
    const stagesTouched = new Set<number>();
    for (const x of this.endpoints) {
      replicas.add(Math.floor(slotOf[x] / S));
      stagesTouched.add(slotOf[x] % S);
    }
    if (replicas.size < D) ready.set(this.healthyFinish);
    for (const d of replicas) {
      const finish = this.replicaFinish(nodeAt, d);
      for (let p = 0; p < S; p++) if (finish[p] > ready[p]) ready[p] = finish[p];
    }
    const rings = problem.current.rings.slice();
    const ringExtraMs = new Float64Array(S);
    for (const p of stagesTouched) {
      const choice = this.ringOf(slotOf, p, chooseRings);
      rings[p] = choice.ring;
      ringExtraMs[p] = choice.worstExtraMs;
    }
    let iterationMs = 0;
    for (let p = 0; p < S; p++) {
      const end = ready[p] + (problem.allReduce ? ringAllReduceMs(problem.allReduce, p, D, ringExtraMs[p]) : 0);
      if (end > iterationMs) iterationMs = end;
    }
    const migrationMs = moved * problem.migrationMsPerNode;
    return { cost: { iterationMs, moved, migrationMs, objectiveMs: iterationMs + migrationMs / problem.amortizeIterations }, rings, ringExtraMs };
  }

  /** Extra delay of each pipeline link of replica d under `nodeAt`. */
  pipelineExtras(nodeAt: Int32Array, d: number): Float64Array {
    const S = this.stages;
    const out = new Float64Array(Math.max(0, S - 1));
    for (let l = 0; l + 1 < S; l++) out[l] = this.extraBetween(nodeAt[d * S + l], nodeAt[d * S + l + 1]);
    return out;
  }

  private replicaFinish(nodeAt: Int32Array, d: number): Float64Array {
    const S = this.stages;
    let any = false;
    for (let l = 0; l + 1 < S; l++) {
      this.linkExtra[l] = this.extraBetween(nodeAt[d * S + l], nodeAt[d * S + l + 1]);
      if (this.linkExtra[l] > 0) any = true;
    }
    if (!any) return this.healthyFinish;
    const key = this.linkExtra.join(',');
    let finish = this.finishCache.get(key);
    if (!finish) {
      finish = this.problem.stageFinish(this.linkExtra.slice());
      this.finishCache.set(key, finish);
    }
    return finish;
  }

  private ringOf(slotOf: Int32Array, p: number, choose: boolean): RingChoice {
    const S = this.stages;
    const edges: RingEdge[] = [];
    for (const x of this.endpoints) {
      if (slotOf[x] % S !== p) continue;
      for (const { node: y, extraMs } of this.neighbours.get(x)!) {
        if (y > x && slotOf[y] % S === p) edges.push({ x: Math.floor(slotOf[x] / S), y: Math.floor(slotOf[y] / S), extraMs });
      }
    }
    const current = this.problem.current.rings[p];
    if (edges.length === 0) return { ring: current, worstExtraMs: 0 };
    if (!choose) return this.priceRing(current, edges);
    edges.sort((a, b) => a.x - b.x || a.y - b.y);
    const key = `${p}|${edges.map((e) => `${Math.min(e.x, e.y)}-${Math.max(e.x, e.y)}:${e.extraMs}`).join(',')}`;
    let choice = this.ringCache.get(key);
    if (!choice) {
      choice = chooseRing(current, edges);
      this.ringCache.set(key, choice);
    }
    return choice;
  }

  private priceRing(ring: Int32Array, edges: RingEdge[]): RingChoice {
    const d = ring.length;
    const position = new Int32Array(d);
    ring.forEach((dp, k) => (position[dp] = k));
    let worst = 0;
    for (const { x, y, extraMs } of edges) {
      const gap = Math.abs(position[x] - position[y]);
      if ((gap === 1 || gap === d - 1) && extraMs > worst) worst = extraMs;
    }
    return { ring, worstExtraMs: worst };
  }

  private key(a: number, b: number): number {
    return a < b ? a * this.nodes + b : b * this.nodes + a;
  }
}
