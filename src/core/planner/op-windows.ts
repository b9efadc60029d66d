import { OP_B, OP_F, OP_W } from '../pipeline/op';
import { effectiveLinkDelayMs } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { OpHeadsAndTails } from './lower-bound';
import { OpWindows } from './op-windows.type';

// Bound once for the hot loops (global lookups are slow where the global object is not V8's fast one: Jest's sandbox).
const { max, min } = Math;
const { NEGATIVE_INFINITY: NEG_INF, POSITIVE_INFINITY: INF } = Number;

const EPS = 1e-9;

/**
 * Op windows for "iteration time at most `target`" (index (stage * 3 + kind) * N + microbatch):
 * earliest start `est` and latest completion `lct`, starting from the heads and tails and
 * tightened to a fixpoint by (1) the precedence arcs (F down, B up, F_j < B_j < W_j, ops of one
 * kind in microbatch order) and (2) detectable precedences on each stage, which runs one op at a
 * time: when `a` cannot follow `b` within their windows, `a` precedes `b`, and `b` starts no
 * earlier than the earliest completion of everything that precedes it (symmetrically for
 * completions). Null when some window empties: no schedule meets the target.
 * With a `budget`, the propagation stops at its deadline (checked once per stage) and returns the
 * windows reached so far: every tightening is valid on its own, so they are looser, never wrong.
 */
export function propagatedWindows(model: PipelineModel, heads: OpHeadsAndTails, target: number, budget?: { deadline: number; now: () => number }): OpWindows | null {
  const { stages: S, microbatches: N, durations: d } = model;
  const M = 3 * N;
  const total = S * M;
  const g = (i: number, k: number, j: number) => (i * 3 + k) * N + j;
  const est = new Float64Array(total);
  const lct = new Float64Array(total);
  const p = new Float64Array(total);
  const r = [heads.rF, heads.rB, heads.rW];
  const q = [heads.qF, heads.qB, heads.qW];
  for (let i = 0; i < S; i++) {
    for (let k = 0; k < 3; k++) {
      for (let j = 0; j < N; j++) {
        est[g(i, k, j)] = r[k][i * N + j];
        lct[g(i, k, j)] = target - q[k][i * N + j];
        p[g(i, k, j)] = d[i * 3 + k];
      }
    }
  }
  // Precedence arcs in a topological order: F by stage then microbatch, B from the last stage up, then W.
  const from: number[] = [];
  const to: number[] = [];
  const lag: number[] = [];
  const arc = (a: number, b: number, l: number) => (from.push(a), to.push(b), lag.push(l));
  for (let i = 0; i < S; i++) {
    for (let j = 0; j < N; j++) {
      if (i > 0) arc(g(i - 1, OP_F, j), g(i, OP_F, j), d[(i - 1) * 3] + effectiveLinkDelayMs(model, i - 1));
      if (j > 0) arc(g(i, OP_F, j - 1), g(i, OP_F, j), d[i * 3]);
    }
  }
  for (let i = S - 1; i >= 0; i--) {
    for (let j = 0; j < N; j++) {
      arc(g(i, OP_F, j), g(i, OP_B, j), d[i * 3]);
      if (i < S - 1) arc(g(i + 1, OP_B, j), g(i, OP_B, j), d[(i + 1) * 3 + 1] + effectiveLinkDelayMs(model, i));
      if (j > 0) arc(g(i, OP_B, j - 1), g(i, OP_B, j), d[i * 3 + 1]);
    }
  }
  for (let i = 0; i < S; i++) {
    for (let j = 0; j < N; j++) {
      arc(g(i, OP_B, j), g(i, OP_W, j), d[i * 3 + 1]);
      if (j > 0) arc(g(i, OP_W, j - 1), g(i, OP_W, j), d[i * 3 + 2]);
    }
  }
  const A = from.length;
  // Per stage, its ops by earliest start and by latest completion (descending), kept sorted as
  // windows tighten: the scans below need those orders, and sorting per op cost most of the time.
  const byEst = new Int32Array(M);
  const byLct = new Int32Array(M);
  const moveRight = (order: Int32Array, from: number, before: (u: number, v: number) => boolean) => {
    for (let n = from; n + 1 < M && before(order[n + 1], order[n]); n++) {
      const t = order[n];
      order[n] = order[n + 1];
      order[n + 1] = t;
    }
  };
  const estBefore = (u: number, v: number) => est[u] < est[v];
  const lctBefore = (u: number, v: number) => lct[u] > lct[v];
  for (let round = 0; round < 50; round++) {
    let changed = false;
    for (let e = 0; e < A; e++) {
      const t = est[from[e]] + lag[e];
      if (t > est[to[e]] + EPS) (est[to[e]] = t), (changed = true);
    }
    for (let e = A - 1; e >= 0; e--) {
      const t = lct[to[e]] - p[to[e]] - lag[e] + p[from[e]];
      if (t < lct[from[e]] - EPS) (lct[from[e]] = t), (changed = true);
    }
    for (let x = 0; x < total; x++) if (est[x] + p[x] > lct[x] + EPS) return null;
    for (let i = 0; i < S; i++) {
      if (budget && budget.now() >= budget.deadline) return { est, lct };
      const base = i * M;
      const ops = Array.from({ length: M }, (_, x) => base + x);
      byEst.set(ops.slice().sort((u, v) => est[u] - est[v]));
      byLct.set(ops.sort((u, v) => lct[v] - lct[u]));
      for (let x = 0; x < M; x++) {
        const b = base + x;
        // Earliest completion of the ops that must precede b (a cannot run after b), in order of
        // their current heads (Jackson's rule; any other order could overstate it).
        let ect = NEG_INF;
        for (let n = 0; n < M; n++) {
          const a = byEst[n];
          if (a !== b && est[b] + p[b] + p[a] > lct[a] + EPS) ect = max(ect + p[a], est[a] + p[a]);
        }
        if (ect > est[b] + EPS) {
          est[b] = ect;
          changed = true;
          moveRight(byEst, byEst.indexOf(b), estBefore);
        }
        // Latest start of the ops that must follow b (a cannot run before b), latest completions first.
        let lst = INF;
        for (let n = 0; n < M; n++) {
          const a = byLct[n];
          if (a !== b && est[a] + p[a] + p[b] > lct[b] + EPS) lst = min(lst - p[a], lct[a] - p[a]);
        }
        if (lst < lct[b] - EPS) {
          lct[b] = lst;
          changed = true;
          moveRight(byLct, byLct.indexOf(b), lctBefore);
        }
        if (est[b] + p[b] > lct[b] + EPS) return null;
      }
    }
    if (!changed) break;
  }
  return { est, lct };
}

