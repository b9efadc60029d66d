import { encodeOp, OP_B, OP_F, OP_W } from '../pipeline/op';
import { effectiveLinkDelayMs } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { Schedule } from '../pipeline/schedule.type';
import { DeadEnds } from './dead-ends';
import { OpWindows } from './op-windows.type';

const EPS = 1e-9;
// Bound once: the hot loops below call these per op per node, and a global lookup per call costs
// many times the call where the global object is not V8's fast one (Jest's sandbox: 25x here).
const { max, min } = Math;
const { isNaN, NaN: NAN, POSITIVE_INFINITY: INF, NEGATIVE_INFINITY: NEG_INF } = Number;

/**
 * A per-stage order whose schedule ends by the windows' target, found by depth-first search over
 * active schedules (Giffler-Thompson: take the op that can complete first, branch over the ops of
 * its stage that could start before that), most urgent (latest start) first. Ops of one kind run
 * in microbatch order, as in the MILP. Active schedules include an optimal one (any schedule
 * left-shifts into one without ending later), so a search that runs out of branches proves that
 * no schedule meets the target: 'infeasible'; 'unknown' when the node budget or the clock runs
 * out first. The caller replays the order: the times here are latency plus transfer, without
 * queueing.
 * Pruning, at every node: (1) heads of the ops not yet placed, from the partial schedule, against
 * their deadlines, and per stage a single machine with those heads and deadlines, preemption
 * allowed (a relaxation, exact by earliest deadline first); (2) dead ends (`DeadEnds`): a partial
 * schedule with the same ops placed as one proven to have no completion, and no time earlier than
 * it, has none either.
 */
export interface WithinBudget {
  maxNodes: number;
  deadline: number;
  now: () => number;
  /**
   * Where dead ends are remembered: a store from an earlier search at this target or above is
   * used and added to; default a fresh one; null remembers none (for comparisons: the answers
   * must not change).
   */
  deadEnds?: DeadEnds | null;
}

export function scheduleWithin(model: PipelineModel, windows: OpWindows, target: number, budget: WithinBudget): Schedule | 'infeasible' | 'unknown' {
  const { stages: S, microbatches: N, durations: d } = model;
  const g = (i: number, k: number, j: number) => (i * 3 + k) * N + j;
  const link = Array.from({ length: max(0, S - 1) }, (_, i) => effectiveLinkDelayMs(model, i));
  // Deadlines (latest completions), nondecreasing along each kind's microbatch order: op j ends
  // before op j + 1 starts. So on a stage the earliest deadline among the released ops is always
  // that of a kind's next op.
  const deadline = Float64Array.from(windows.lct);
  for (let i = 0; i < S; i++) {
    for (let k = 0; k < 3; k++) {
      for (let j = N - 2; j >= 0; j--) deadline[g(i, k, j)] = min(deadline[g(i, k, j)], deadline[g(i, k, j + 1)] - d[i * 3 + k]);
    }
  }
  const end = new Float64Array(S * 3 * N).fill(NAN);
  const free = new Float64Array(S);
  const next = new Int32Array(S * 3); // per stage and kind: the next microbatch
  const left = new Float64Array(S); // work left per stage
  for (let i = 0; i < S; i++) left[i] = N * (d[i * 3] + d[i * 3 + 1] + d[i * 3 + 2]);
  const lst = (x: number, p: number) => deadline[x] - p;
  const order: number[][] = Array.from({ length: S }, () => []);

  // (1) Heads: a placed op's start (set when placed); else the latest of its window's earliest start, its stage's
  // free time and its predecessors' heads plus their times (and links).
  const head = new Float64Array(S * 3 * N);
  const rest = new Float64Array(3);
  const at = new Int32Array(3);
  const headsFit = (): boolean => {
    for (let i = 0; i < S; i++) {
      const p = d[i * 3];
      for (let j = next[i * 3]; j < N; j++) {
        const x = g(i, OP_F, j);
        let r = max(windows.est[x], free[i]);
        if (j > 0) r = max(r, head[x - 1] + p);
        if (i > 0) r = max(r, head[g(i - 1, OP_F, j)] + d[(i - 1) * 3] + link[i - 1]);
        if (r + p > deadline[x] + EPS) return false;
        head[x] = r;
      }
    }
    for (let i = S - 1; i >= 0; i--) {
      const p = d[i * 3 + 1];
      for (let j = next[i * 3 + 1]; j < N; j++) {
        const x = g(i, OP_B, j);
        let r = max(windows.est[x], free[i], head[g(i, OP_F, j)] + d[i * 3]);
        if (j > 0) r = max(r, head[x - 1] + p);
        if (i < S - 1) r = max(r, head[g(i + 1, OP_B, j)] + d[(i + 1) * 3 + 1] + link[i]);
        if (r + p > deadline[x] + EPS) return false;
        head[x] = r;
      }
    }
    for (let i = 0; i < S; i++) {
      const p = d[i * 3 + 2];
      for (let j = next[i * 3 + 2]; j < N; j++) {
        const x = g(i, OP_W, j);
        let r = max(windows.est[x], free[i], head[g(i, OP_B, j)] + d[i * 3 + 1]);
        if (j > 0) r = max(r, head[x - 1] + p);
        if (r + p > deadline[x] + EPS) return false;
        head[x] = r;
      }
    }
    // Per stage, preemptive earliest deadline first over the ops left. Heads and deadlines grow
    // along each kind, so only each kind's first unfinished op competes.
    for (let i = 0; i < S; i++) {
      let t = NEG_INF;
      for (let k = 0; k < 3; k++) {
        at[k] = next[i * 3 + k];
        rest[k] = d[i * 3 + k];
      }
      for (;;) {
        let run = -1;
        let nextRelease = INF;
        for (let k = 0; k < 3; k++) {
          if (at[k] >= N) continue;
          const x = g(i, k, at[k]);
          if (head[x] > t + EPS) nextRelease = min(nextRelease, head[x]);
          else if (run < 0 || deadline[x] < deadline[g(i, run, at[run])]) run = k;
        }
        if (run < 0) {
          if (nextRelease === INF) break;
          t = nextRelease;
          continue;
        }
        const x = g(i, run, at[run]);
        const span = min(rest[run], nextRelease - t);
        t += span;
        rest[run] -= span;
        if (rest[run] <= EPS) {
          if (t > deadline[x] + EPS) return false;
          at[run]++;
          rest[run] = d[i * 3 + run];
        }
      }
    }
    return true;
  };

  // (2) Dead ends: what the rest depends on is each stage's free time and the ends of placed F and
  // B whose successor on the next stage is not placed (every other placed op ends by its stage's
  // free time).
  const deadEnds = budget.deadEnds === undefined ? new DeadEnds() : budget.deadEnds;
  deadEnds?.prepare(target);
  const times = new Float64Array(S + 2 * S * N);
  const frontier = (): number => {
    let n = 0;
    for (let i = 0; i < S; i++) times[n++] = free[i];
    for (let i = 1; i < S; i++) for (let j = next[i * 3]; j < next[(i - 1) * 3]; j++) times[n++] = end[g(i - 1, OP_F, j)];
    for (let i = 0; i + 1 < S; i++) for (let j = next[i * 3 + 1]; j < next[(i + 1) * 3 + 1]; j++) times[n++] = end[g(i + 1, OP_B, j)];
    return n;
  };

  let nodes = 0;
  const total = 3 * S * N;
  // Candidate ops: at most three per stage; the branches: at most three per level.
  const candStage = new Int32Array(3 * S);
  const candKind = new Int32Array(3 * S);
  const candReady = new Float64Array(3 * S);
  const branchKind = new Int32Array(3 * total);
  const branchStart = new Float64Array(3 * total);

  // The search runs on explicit per-level state, not the call stack: a pipeline has 3 * S * N levels
  // (16 x 64: 3,072), deeper than the stack holds in recursion.
  const levelStage = new Int32Array(total);
  const levelBranches = new Int32Array(total);
  const levelTried = new Int32Array(total);
  const levelFree = new Float64Array(total);

  /** Opens level `placed`: its branches, or false when it has none (a dead end; the caller remembers it). */
  const open = (placed: number): boolean => {
    if (!headsFit()) return false;
    let n = 0;
    let bestEnd = INF;
    let bestStage = -1;
    let bestCandidate = -1;
    for (let i = 0; i < S; i++) {
      for (let k = 0; k < 3; k++) {
        const j = next[i * 3 + k];
        if (j >= N) continue;
        let ready = free[i];
        if (k === OP_F) {
          if (i > 0) {
            const e = end[g(i - 1, OP_F, j)];
            if (isNaN(e)) continue;
            ready = max(ready, e + link[i - 1]);
          }
        } else if (k === OP_B) {
          if (j >= next[i * 3 + OP_F]) continue;
          if (i < S - 1) {
            const e = end[g(i + 1, OP_B, j)];
            if (isNaN(e)) continue;
            ready = max(ready, e + link[i]);
          }
        } else if (j >= next[i * 3 + OP_B]) continue;
        const p = d[i * 3 + k];
        candStage[n] = i;
        candKind[n] = k;
        candReady[n] = ready;
        n++;
        if (ready + p < bestEnd) (bestEnd = ready + p), (bestStage = i), (bestCandidate = n - 1);
      }
    }
    if (bestStage < 0) return false;
    // The conflict set on the stage of the earliest completion, most urgent first (stored per
    // level: the candidate arrays are shared with the deeper levels).
    const i = bestStage;
    const base = placed * 3;
    let m = 0;
    for (let c = 0; c < n; c++) {
      // The op completing first always branches (it may take no time: then nothing else could start before it ends).
      if (c !== bestCandidate && (candStage[c] !== i || candReady[c] >= bestEnd - EPS)) continue;
      const k = candKind[c];
      const urgency = lst(g(i, k, next[i * 3 + k]), d[i * 3 + k]);
      let slot = m++;
      while (slot > 0) {
        const prev = branchKind[base + slot - 1];
        const prevUrgency = lst(g(i, prev, next[i * 3 + prev]), d[i * 3 + prev]);
        if (prevUrgency < urgency || (prevUrgency === urgency && prev > k)) break;
        branchKind[base + slot] = prev;
        branchStart[base + slot] = branchStart[base + slot - 1];
        slot--;
      }
      branchKind[base + slot] = k;
      branchStart[base + slot] = candReady[c];
    }
    levelStage[placed] = i;
    levelBranches[placed] = m;
    levelTried[placed] = 0;
    return true;
  };

  let placed = 0;

  /** Takes the next branch of level `placed` that fits its stage's work left into the target; false when none is left. */
  const take = (): boolean => {
    const i = levelStage[placed];
    const base = placed * 3;
    while (levelTried[placed] < levelBranches[placed]) {
      const b = levelTried[placed]++;
      const k = branchKind[base + b];
      const start = branchStart[base + b];
      const p = d[i * 3 + k];
      if (start + left[i] > target + EPS) continue;
      const j = next[i * 3 + k];
      const x = g(i, k, j);
      levelFree[placed] = free[i];
      end[x] = start + p;
      head[x] = start;
      free[i] = start + p;
      left[i] -= p;
      next[i * 3 + k]++;
      order[i].push(encodeOp(k, j));
      return true;
    }
    return false;
  };

  /**
   * Level `placed` has no completion: remembered as a dead end when `remember` (its state is
   * restored; the deeper levels reused the buffer), then its parent's branch is taken back.
   * False at the root: nothing is left to try.
   */
  const backtrack = (remember: boolean): boolean => {
    if (remember) deadEnds?.remember(next, times, frontier());
    if (placed === 0) return false;
    placed--;
    const i = levelStage[placed];
    const k = branchKind[placed * 3 + levelTried[placed] - 1];
    order[i].pop();
    const j = --next[i * 3 + k];
    left[i] += d[i * 3 + k];
    free[i] = levelFree[placed];
    end[g(i, k, j)] = NAN;
    return true;
  };

  let entering = true; // true: level `placed` is new; false: it resumes after a branch below failed
  for (;;) {
    if (entering) {
      if (placed === total) return order.map((o) => Int32Array.from(o));
      if (++nodes > budget.maxNodes || ((nodes & 63) === 0 && budget.now() > budget.deadline)) return 'unknown';
      entering = false;
      // A dominated level fails without being remembered (the one dominating it is).
      const dominated = deadEnds !== null && deadEnds.dominated(next, times, frontier());
      if (dominated || !open(placed)) {
        if (!backtrack(!dominated)) return 'infeasible';
        continue;
      }
    }
    if (take()) {
      placed++;
      entering = true;
    } else if (!backtrack(true)) return 'infeasible';
  }
}
