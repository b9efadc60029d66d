import { seededRandom } from '../core/planner/seeded-random';
import { CorpusScenario, StragglerShape, StragglerSpec } from './corpus.type';

/** What is really slow at one iteration: extra one-way ms per node pair, failed pairs, compute factors per rank. */
export interface TruthState {
  /** key a*n+b (a < b) -> extra ms. */
  pairExtraMs: Map<number, number>;
  failedPairs: Set<number>;
  /** rank -> factor (> 1 slower). */
  computeFactor: Map<number, number>;
  /** A signature of the state, for caching what it costs. */
  key: string;
}

export function pairKey(a: number, b: number, nodes: number): number {
  return a < b ? a * nodes + b : b * nodes + a;
}

/** Segment boundaries and delays of a dynamic shape, drawn once from its seed. */
function dynamicSegments(shape: Extract<StragglerShape, { type: 'dynamic' }>, length: number): Array<[number, number]> {
  const random = seededRandom(shape.seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const out: Array<[number, number]> = [];
  for (let t = 0; t < length; ) {
    out.push([t, Math.max(0, shape.meanMs + shape.stdMs * normal())]);
    t += shape.minInterval + Math.floor(random() * (shape.maxInterval - shape.minInterval + 1));
  }
  return out;
}

/** Value of a straggler at offset `k` from its start (ms, or a factor for slowdowns; NaN for a NIC failure). */
export class ShapeValue {
  private readonly segments: Array<[number, number]> | null;

  constructor(private readonly spec: StragglerSpec) {
    const s = spec.shape;
    this.segments = s.type === 'dynamic' ? dynamicSegments(s, spec.end - spec.start + 1) : s.type === 'steps' ? s.steps : null;
  }

  at(k: number): number {
    const s = this.spec.shape;
    switch (s.type) {
      case 'constant':
        return s.ms;
      case 'ramp':
        return s.fromMs + (s.toMs - s.fromMs) * Math.min(1, k / Math.max(1, s.rampIterations));
      case 'periodic':
        return k % (s.onIterations + s.offIterations) < s.onIterations ? s.ms : 0;
      case 'slowdown':
        return s.factor;
      case 'nic-failure':
        return Number.NaN;
      case 'dynamic':
      case 'steps': {
        let v = 0;
        for (const [from, ms] of this.segments!) if (from <= k) v = ms;
        return v;
      }
    }
  }
}

/** The ground truth of a scenario, iteration by iteration; pipeline targets are pinned to the registration layout's node pairs. */
export class GroundTruth {
  readonly specs: StragglerSpec[];
  readonly nodes: number;
  private readonly values: ShapeValue[];

  constructor(private readonly scenario: CorpusScenario, extra: StragglerSpec[] = []) {
    this.nodes = scenario.shape.stages * scenario.shape.dp;
    this.specs = [...scenario.stragglers, ...extra];
    this.values = this.specs.map((s) => new ShapeValue(s));
  }

  at(iteration: number): TruthState {
    const S = this.scenario.shape.stages;
    const n = this.nodes;
    const pairExtraMs = new Map<number, number>();
    const failedPairs = new Set<number>();
    const computeFactor = new Map<number, number>();
    this.specs.forEach((spec, i) => {
      if (iteration < spec.start || iteration > spec.end) return;
      const v = this.values[i].at(iteration - spec.start);
      const t = spec.target;
      if (t.kind === 'compute') {
        if (v > 1) computeFactor.set(t.rank, Math.max(computeFactor.get(t.rank) ?? 1, v));
        return;
      }
      const key = t.kind === 'pipeline' ? pairKey(t.dp * S + t.link, t.dp * S + t.link + 1, n) : pairKey(t.a, t.b, n);
      if (v !== v) failedPairs.add(key);
      else if (v > 0) pairExtraMs.set(key, (pairExtraMs.get(key) ?? 0) + v);
    });
    const parts: string[] = [];
    for (const [k, ms] of [...pairExtraMs].sort((a, b) => a[0] - b[0])) parts.push(`${k}:${ms.toFixed(2)}`);
    parts.push('|');
    for (const k of [...failedPairs].sort((a, b) => a - b)) parts.push(String(k));
    parts.push('|');
    for (const [r, f] of [...computeFactor].sort((a, b) => a[0] - b[0])) parts.push(`${r}:${f.toFixed(3)}`);
    return { pairExtraMs, failedPairs, computeFactor, key: parts.join(' ') };
  }
}
