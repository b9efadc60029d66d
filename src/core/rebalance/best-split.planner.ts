import { InputError } from '../input-error';
import { priceSplit } from './price-split.util';
import { BestSplit } from './best-split.type';
import { RebalanceProblem } from './rebalance-problem.type';
import { SplitPrice } from './split-price.type';

/** Bottleneck values tried above the least one before the scan gives up exactness (default). */
const DEFAULT_MAX_CANDIDATES = 512;

/**
 * The contiguous split of the layers into stages of least objective (priceSplit: estimated
 * iteration time, (N - 1) x bottleneck + the stages' sum, plus the amortised handoff of the layers
 * that move), within every device's memory; null when no split fits (pure).
 *
 * The objective mixes a max and a sum, so it is minimised over the bottleneck M: a min-max dynamic
 * programme gives the least feasible bottleneck M*; for a bottleneck M, a dynamic programme over
 * (stage, last layer) gives g(M), the least sum of stage times and amortised moves with every stage
 * at most M, in O(layers x window) per stage. g only changes at the stage times t(s, i, k) of some
 * stage s holding layers i..k-1, so the scan tries those values from M* up, and stops once
 * (N - 1) M + a lower bound of g (every layer on the fastest stage that could hold it, nothing
 * moved) cannot beat the best found: exact then. At most `maxCandidates` values
 * are tried (`exact` false past them: large jobs with dense stage times).
 */
export function bestSplit(problem: RebalanceProblem, options: { maxCandidates?: number } = {}): BestSplit | null {
  const { layers, current, speed, microbatches: N } = problem;
  const L = layers.fMs.length;
  const S = current.length;
  if (S < 1 || L < S) throw new InputError(`${L} layers cannot be split into ${S} stages of at least one layer`);
  if (speed.length !== S || problem.deviceBytes.length !== S || problem.minInflight.length !== S) throw new InputError(`rebalance: ${S} stages need ${S} speeds, device sizes and in-flight minimums`);
  const work = new Float64Array(L + 1);
  const state = new Float64Array(L + 1);
  const acts = new Float64Array(L + 1);
  for (let l = 0; l < L; l++) {
    work[l + 1] = work[l] + layers.fMs[l] + layers.bMs[l] + layers.wMs[l];
    state[l + 1] = state[l] + layers.stateBytes[l];
    acts[l + 1] = acts[l] + layers.activationBytes[l];
  }
  const from = new Int32Array(S);
  const to = new Int32Array(S);
  for (let s = 0, first = 0; s < S; s++) {
    from[s] = first;
    first += current[s];
    to[s] = first;
  }
  // Amortised ms per byte moved (0 when handoffs are free or paid back over forever).
  const perByte = Number.isFinite(problem.handoffBytesPerMs) && Number.isFinite(problem.amortizeIterations) ? 1 / (problem.handoffBytesPerMs * problem.amortizeIterations) : 0;
  const stageMs = (s: number, i: number, k: number) => speed[s] * (work[k] - work[i]);
  const fits = (s: number, i: number, k: number) => state[k] - state[i] + problem.minInflight[s] * (acts[k] - acts[i]) <= problem.deviceBytes[s];
  // Stage s (0-based) ends at layer k in [s + 1, L - (S - 1 - s)]; its first layer i in [s, k - 1].
  const width = L + 1;
  const value = new Float64Array(S * width);
  const parent = new Int32Array(S * width);
  let evaluations = 0;

  /** Least bottleneck of any fitting split (min-max programme). */
  const leastBottleneck = (): number => {
    evaluations++;
    value.fill(Infinity);
    for (let s = 0; s < S; s++) {
      const sp = speed[s];
      const room = problem.deviceBytes[s];
      const inflight = problem.minInflight[s];
      const row = s * width;
      const prev = (s - 1) * width;
      for (let k = s + 1; k <= L - (S - 1 - s); k++) {
        let best = Infinity;
        for (let i = k - 1; i >= s; i--) {
          if (state[k] - state[i] + inflight * (acts[k] - acts[i]) > room) break; // more layers only need more memory
          const t = sp * (work[k] - work[i]);
          if (t >= best) break; // more layers only take longer
          const before = s === 0 ? (i === 0 ? 0 : Infinity) : value[prev + i];
          const v = before > t ? before : t;
          if (v < best) best = v;
        }
        value[row + k] = best;
      }
    }
    return value[(S - 1) * width + L];
  };

  /** Least sum of stage times and amortised moves with every stage at most `limit` (the split, or null). */
  const leastSum = (limit: number): number[] | null => {
    evaluations++;
    value.fill(Infinity);
    const cap = limit * (1 + 1e-12);
    for (let s = 0; s < S; s++) {
      const sp = speed[s];
      const room = problem.deviceBytes[s];
      const inflight = problem.minInflight[s];
      const lo = from[s];
      const hi = to[s];
      const row = s * width;
      const prev = (s - 1) * width;
      for (let k = s + 1; k <= L - (S - 1 - s); k++) {
        let best = Infinity;
        let arg = -1;
        for (let i = k - 1; i >= s; i--) {
          if (state[k] - state[i] + inflight * (acts[k] - acts[i]) > room) break;
          const t = sp * (work[k] - work[i]);
          if (t > cap) break;
          const before = s === 0 ? (i === 0 ? 0 : Infinity) : value[prev + i];
          if (before === Infinity) continue;
          let move = 0;
          if (perByte !== 0) {
            const a = i > lo ? i : lo;
            const b = k < hi ? k : hi;
            move = (state[k] - state[i] - (b > a ? state[b] - state[a] : 0)) * perByte;
          }
          const v = before + t + move;
          if (v < best) {
            best = v;
            arg = i;
          }
        }
        value[row + k] = best;
        parent[row + k] = arg;
      }
    }
    if (value[(S - 1) * width + L] === Infinity) return null;
    const split = new Array<number>(S);
    for (let s = S - 1, k = L; s >= 0; s--) {
      const i = parent[s * width + k];
      split[s] = k - i;
      k = i;
    }
    return split;
  };

  const mStar = leastBottleneck();
  if (mStar === Infinity) return null;
  const seen = new Map<string, SplitPrice>();
  const consider = (split: number[] | null): SplitPrice | null => {
    if (!split) return null;
    const key = split.join(',');
    let price = seen.get(key);
    if (!price) {
      price = priceSplit(problem, split);
      seen.set(key, price);
    }
    return price;
  };
  let best = consider(leastSum(mStar))!;
  let exact = true;
  if (N === 1) {
    // No steady state: the least sum of stage times and moves, whatever the bottleneck.
    const free = consider(leastSum(Infinity))!;
    if (free.objectiveMs < best.objectiveMs) best = free;
  } else {
    // A lower bound on g(M) for every M: each layer at the fastest stage that could hold it, nothing moved.
    let floorSum = 0;
    for (let l = 0; l < L; l++) {
      let fastest = Infinity;
      for (let s = Math.max(0, l - (L - S)); s <= Math.min(S - 1, l); s++) if (speed[s] < fastest) fastest = speed[s];
      floorSum += fastest * (work[l + 1] - work[l]);
    }
    // Bottleneck values worth trying: (N - 1) M + that bound below the best objective.
    const bound = () => (best.objectiveMs - floorSum) / (N - 1);
    const values: number[] = [];
    const hi = bound();
    for (let s = 0; s < S; s++) {
      for (let i = s; i < L; i++) {
        for (let k = i + 1; k <= L; k++) {
          const t = stageMs(s, i, k);
          if (t >= hi) break;
          if (t > mStar && fits(s, i, k)) values.push(t);
        }
      }
    }
    values.sort((a, b) => a - b);
    const maxCandidates = options.maxCandidates ?? DEFAULT_MAX_CANDIDATES;
    let tried = 0;
    let last = mStar;
    for (const m of values) {
      if (m >= bound()) break;
      if (m <= last * (1 + 1e-12)) continue; // the same value again
      if (tried >= maxCandidates) {
        exact = false;
        break;
      }
      tried++;
      last = m;
      const price = consider(leastSum(m));
      if (price && price.objectiveMs < best.objectiveMs) best = price;
    }
  }
  const candidates = [...seen.values()].filter((p) => p.fits).sort((a, b) => a.objectiveMs - b.objectiveMs);
  return { best, candidates, exact, evaluations };
}
