import fc from 'fast-check';
import { PlacementEvaluator } from './placement-evaluator';
import { checkPlacement, searchPlacement } from './placement-search';
import { RemapProblem } from './remap-problem.type';
import { AllReduceModel, NodeLink, Placement } from './topology.type';

const ALL_REDUCE: AllReduceModel = { gradientBytes: [], latencyMs: 0.01, gbps: 50, chunkBytes: 4 << 20, inflight: 8 };

function identity(dpSize: number, stages: number): Placement {
  return {
    dpSize,
    stages,
    nodeAt: Int32Array.from({ length: dpSize * stages }, (_, i) => i),
    rings: Array.from({ length: stages }, () => Int32Array.from({ length: dpSize }, (_, d) => d)),
  };
}

/**
 * A stand-in for the engine: stage p finishes at 100 + 10 (S - 1 - p) ms plus, per slow pipeline
 * link, a share of its delay that depends on where it is (links near the end have less slack).
 */
function syntheticFinish(stages: number) {
  return (extra: Float64Array) => {
    const out = new Float64Array(stages);
    let penalty = 0;
    extra.forEach((ms, l) => (penalty += ms * (0.5 + l / stages)));
    for (let p = 0; p < stages; p++) out[p] = 100 + 10 * (stages - 1 - p) + penalty;
    return out;
  };
}

function problem(dpSize: number, stages: number, slowLinks: NodeLink[], migrationMsPerNode = 100, current = identity(dpSize, stages)): RemapProblem {
  return {
    stages,
    dpSize,
    current,
    slowLinks,
    allReduce: { ...ALL_REDUCE, gradientBytes: new Array(stages).fill(1e9) },
    stageFinish: syntheticFinish(stages),
    migrationMsPerNode,
    amortizeIterations: 100,
  };
}

function* permutations(n: number): Generator<Int32Array> {
  const a = Int32Array.from({ length: n }, (_, i) => i);
  const c = new Int32Array(n);
  yield a.slice();
  let i = 0;
  while (i < n) {
    if (c[i] < i) {
      const j = i % 2 === 0 ? 0 : c[i];
      [a[j], a[i]] = [a[i], a[j]];
      yield a.slice();
      c[i]++;
      i = 0;
    } else {
      c[i] = 0;
      i++;
    }
  }
}

/** The optimum over every placement of every node (rings chosen by the evaluator), by enumeration. */
function bruteForce(p: RemapProblem): number {
  const evaluator = new PlacementEvaluator(p);
  const n = p.stages * p.dpSize;
  let best = Infinity;
  for (const nodeAt of permutations(n)) {
    const slotOf = new Int32Array(n);
    nodeAt.forEach((node, slot) => (slotOf[node] = slot));
    let moved = 0;
    nodeAt.forEach((node, slot) => (moved += slot % p.stages !== evaluator.currentStage[node] ? 1 : 0));
    best = Math.min(best, evaluator.evaluate(nodeAt, slotOf, moved).cost.objectiveMs);
  }
  return best;
}

describe('searchPlacement', () => {
  it('takes a slow node pair off the data-parallel ring of a (2 DP, 4 PP) job', () => {
    // Nodes 1 and 5 hold stage 1 of replicas 0 and 1: their link carries the stage-1 ring.
    const p = problem(2, 4, [{ a: 1, b: 5, extraMs: 30 }]);
    const result = searchPlacement(p);
    expect(result.method).toBe('exact');
    expect(result.changed).toBe(true);
    expect(result.cost.objectiveMs).toBeLessThan(result.stay.objectiveMs);
    checkPlacement(result.placement);
    const S = 4;
    const [s1, s5] = [1, 5].map((node) => result.placement.nodeAt.indexOf(node));
    // A single slow pair can always be left carrying nothing: other replica and another stage, or not adjacent.
    expect(s1 % S === s5 % S).toBe(false);
    expect(Math.floor(s1 / S) === Math.floor(s5 / S) && Math.abs((s1 % S) - (s5 % S)) === 1).toBe(false);
    expect(result.movedNodes.length).toBe(2);
    expect(result.cost.objectiveMs).toBeCloseTo(bruteForce(p), 6);
  });

  it('moves a slow boundary between two racks onto a pipeline edge (Falcon)', () => {
    // Replica 0 on rack A (nodes 0-3), replica 1 on rack B (4-7): every ring crosses the slow rack link.
    const links: NodeLink[] = [];
    for (let a = 0; a < 4; a++) for (let b = 4; b < 8; b++) links.push({ a, b, extraMs: 30 });
    const p = problem(2, 4, links);
    const result = searchPlacement(p);
    expect(result.stay.iterationMs).toBeGreaterThan(2 * result.cost.iterationMs);
    const rackOf = (node: number) => (node < 4 ? 'A' : 'B');
    const { nodeAt } = result.placement;
    // Every ring stays inside a rack; each pipeline crosses the boundary once.
    for (let pp = 0; pp < 4; pp++) expect(rackOf(nodeAt[pp])).toBe(rackOf(nodeAt[4 + pp]));
    for (let dp = 0; dp < 2; dp++) {
      let crossings = 0;
      for (let pp = 0; pp < 3; pp++) crossings += rackOf(nodeAt[dp * 4 + pp]) === rackOf(nodeAt[dp * 4 + pp + 1]) ? 0 : 1;
      expect(crossings).toBe(1);
    }
    expect(result.cost.objectiveMs).toBeCloseTo(bruteForce(p), 6);
  });

  it('re-orders a ring instead of moving nodes when the ring has room', () => {
    const p = problem(4, 2, [{ a: 0, b: 2, extraMs: 40 }]); // replicas 0 and 1 of stage 0 are ring neighbours
    const result = searchPlacement(p);
    expect(result.movedNodes).toEqual([]);
    expect(result.changed).toBe(true);
    const ring = Array.from(result.placement.rings[0]);
    const gap = Math.abs(ring.indexOf(0) - ring.indexOf(1));
    expect(gap === 1 || gap === 3).toBe(false);
    expect(result.cost.objectiveMs).toBeCloseTo(bruteForce(p), 6);
  });

  it('stays when the migration does not pay back', () => {
    const p = { ...problem(2, 4, [{ a: 1, b: 5, extraMs: 30 }]), migrationMsPerNode: 1e9 };
    const result = searchPlacement(p);
    expect(result.changed).toBe(false);
    expect(result.movedNodes).toEqual([]);
    expect(result.cost).toEqual(result.stay);
  });

  it('stays when every link is healthy', () => {
    const result = searchPlacement(problem(2, 3, []));
    expect(result.changed).toBe(false);
    expect(result.cost.iterationMs).toBeCloseTo(result.stay.iterationMs, 9);
  });

  const smallProblem = fc
    .record({ dpSize: fc.integer({ min: 1, max: 3 }), stages: fc.integer({ min: 1, max: 4 }) })
    .filter(({ dpSize, stages }) => dpSize * stages >= 2 && dpSize * stages <= 7)
    .chain(({ dpSize, stages }) => {
      const n = dpSize * stages;
      const link = fc
        .record({ a: fc.integer({ min: 0, max: n - 1 }), b: fc.integer({ min: 0, max: n - 1 }), extraMs: fc.integer({ min: 1, max: 60 }) })
        .filter((l) => l.a !== l.b);
      return fc.record({
        dpSize: fc.constant(dpSize),
        stages: fc.constant(stages),
        links: fc.array(link, { minLength: 1, maxLength: 3 }),
        migration: fc.constantFrom(0, 50, 500, 5000),
        start: fc.shuffledSubarray(Array.from({ length: n }, (_, i) => i), { minLength: n, maxLength: n }),
      });
    });

  it('exact search equals brute force over every placement (property)', () => {
    fc.assert(
      fc.property(smallProblem, ({ dpSize, stages, links, migration, start }) => {
        const current = { ...identity(dpSize, stages), nodeAt: Int32Array.from(start) };
        const p = problem(dpSize, stages, links, migration, current);
        const result = searchPlacement(p);
        expect(result.method).toBe('exact');
        checkPlacement(result.placement);
        expect(result.cost.objectiveMs).toBeCloseTo(bruteForce(p), 6);
        expect(result.cost.objectiveMs).toBeLessThanOrEqual(result.stay.objectiveMs + 1e-9);
      }),
      { numRuns: 60, seed: 5 },
    );
  });

  it('local search returns a valid placement no worse than staying, and finds single-link optima (property)', () => {
    fc.assert(
      fc.property(smallProblem, ({ dpSize, stages, links, migration, start }) => {
        const current = { ...identity(dpSize, stages), nodeAt: Int32Array.from(start) };
        const p = problem(dpSize, stages, links, migration, current);
        const result = searchPlacement(p, { exactLimit: 0 });
        expect(result.method).toBe('local-search');
        checkPlacement(result.placement);
        const optimum = bruteForce(p);
        expect(result.cost.objectiveMs).toBeGreaterThanOrEqual(optimum - 1e-6);
        expect(result.cost.objectiveMs).toBeLessThanOrEqual(result.stay.objectiveMs + 1e-9);
        if (links.length === 1) expect(result.cost.objectiveMs).toBeCloseTo(optimum, 6);
        // The reported cost is the cost of the returned placement.
        const evaluator = new PlacementEvaluator(p);
        const slotOf = new Int32Array(result.placement.nodeAt.length);
        result.placement.nodeAt.forEach((node, slot) => (slotOf[node] = slot));
        expect(evaluator.evaluate(result.placement.nodeAt, slotOf, result.movedNodes.length).cost.objectiveMs).toBeCloseTo(result.cost.objectiveMs, 6);
      }),
      { numRuns: 60, seed: 9 },
    );
  });

  it('with an evaluation cap and a clock that never runs out, gives the same placement on every run', () => {
    const p = problem(4, 4, [{ a: 1, b: 6, extraMs: 30 }, { a: 9, b: 14, extraMs: 20 }]);
    const frozen = () => 0;
    const a = searchPlacement(p, { exactLimit: 0, maxEvaluations: 25, now: frozen });
    const b = searchPlacement(p, { exactLimit: 0, maxEvaluations: 25, now: frozen });
    expect(a.evaluations).toBeLessThanOrEqual(25 + 16); // the cap is checked between candidate moves
    expect(Array.from(b.placement.nodeAt)).toEqual(Array.from(a.placement.nodeAt));
    expect(b.cost.objectiveMs).toBe(a.cost.objectiveMs);
    // The injected clock is the only time source: a clock past the budget stops the search at once.
    let t = 0;
    const late = searchPlacement(p, { exactLimit: 0, timeBudgetMs: 10, now: () => (t += 100) });
    expect(late.evaluations).toBeLessThan(a.evaluations);
    expect(late.elapsedMs).toBeGreaterThan(0);
  });

  it('handles a large job with several slow links within the time budget', () => {
    const dpSize = 128;
    const stages = 8;
    const links: NodeLink[] = Array.from({ length: 10 }, (_, k) => ({ a: k * 8 * stages + (k % stages), b: (k * 8 + 1) * stages + (k % stages), extraMs: 10 + k }));
    const p = problem(dpSize, stages, links);
    const result = searchPlacement(p, { timeBudgetMs: 2000 });
    expect(result.method).toBe('local-search');
    checkPlacement(result.placement);
    // Rings of 128 replicas can always route around 10 slow edges: nothing needs to move.
    expect(result.movedNodes).toEqual([]);
    expect(result.cost.iterationMs).toBeLessThan(result.stay.iterationMs);
    expect(result.cost.iterationMs).toBeCloseTo(new PlacementEvaluator(problem(dpSize, stages, [])).evaluate(p.current.nodeAt, p.current.nodeAt, 0).cost.iterationMs, 6);
  });

  it('rejects a placement that is not a permutation', () => {
    const bad = { ...identity(2, 2), nodeAt: Int32Array.from([0, 0, 1, 2]) };
    expect(() => checkPlacement(bad)).toThrow(/permutation/);
  });
});
