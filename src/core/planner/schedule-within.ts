import { encodeOp, OP_B, OP_F } from '../pipeline/op';
import { effectiveLinkDelayMs } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { Schedule } from '../pipeline/schedule.type';
import { OpWindows } from './op-windows.type';

const EPS = 1e-9;

/**
 * A per-stage order whose schedule ends by the windows' target, found by depth-first search over
 * active schedules (Giffler-Thompson: take the op that can complete first, branch over the ops of
 * its stage that could start before that), most urgent (latest start) first, pruning every op
 * that would start after its latest start and every stage whose remaining work no longer fits.
 * Ops of one kind run in microbatch order, as in the MILP. Active schedules include an optimal
 * one (any schedule left-shifts into one without ending later), so a search that runs out of
 * branches proves that no schedule meets the target: 'infeasible'; 'unknown' when the node budget
 * or the clock runs out first. The caller replays the order: the times here are latency plus
 * transfer, without queueing.
 */
export function scheduleWithin(model: PipelineModel, windows: OpWindows, target: number, budget: { maxNodes: number; deadline: number; now: () => number }): Schedule | 'infeasible' | 'unknown' {
  const { stages: S, microbatches: N, durations: d } = model;
  const g = (i: number, k: number, j: number) => (i * 3 + k) * N + j;
  const link = Array.from({ length: Math.max(0, S - 1) }, (_, i) => effectiveLinkDelayMs(model, i));
  const end = new Float64Array(S * 3 * N).fill(Number.NaN);
  const free = new Float64Array(S);
  const next = new Int32Array(S * 3); // per stage and kind: the next microbatch
  const left = new Float64Array(S); // work left per stage
  for (let i = 0; i < S; i++) left[i] = N * (d[i * 3] + d[i * 3 + 1] + d[i * 3 + 2]);
  const lst = (x: number, p: number) => windows.lct[x] - p;
  const order: number[][] = Array.from({ length: S }, () => []);
  // Per stage, its ops by latest completion: once the stage is busy until t, every op still to run
  // there with a deadline of at most d runs after t, so their work must fit in [t, d].
  const byDeadline: Int32Array[] = Array.from({ length: S }, (_, i) => {
    const ops = Array.from({ length: 3 * N }, (_, x) => i * 3 * N + x);
    ops.sort((a, b) => windows.lct[a] - windows.lct[b]);
    return Int32Array.from(ops);
  });
  const fitsDeadlines = (i: number, from: number): boolean => {
    let t = from;
    for (const x of byDeadline[i]) {
      const k = Math.floor(x / N) % 3;
      if (x % N < next[i * 3 + k]) continue;
      t += d[i * 3 + k];
      if (t > windows.lct[x] + EPS) return false;
    }
    return true;
  };
  let nodes = 0;
  let stopped = false;
  const total = 3 * S * N;
  // Candidate ops: at most three per stage.
  const candStage = new Int32Array(3 * S);
  const candKind = new Int32Array(3 * S);
  const candReady = new Float64Array(3 * S);

  /** `last`: the stage of the op placed last (-1 at the root); only it and its neighbours' deadline checks can change. */
  const search = (placed: number, last: number): boolean => {
    if (placed === total) return true;
    if (++nodes > budget.maxNodes || ((nodes & 1023) === 0 && budget.now() > budget.deadline)) {
      stopped = true;
      return false;
    }
    let n = 0;
    let bestEnd = Number.POSITIVE_INFINITY;
    let bestStage = -1;
    let bestCandidate = -1;
    for (let i = 0; i < S; i++) {
      // The earliest any op left on the stage can start: the least over its kinds of the next op's
      // ready time (or, not ready yet, its window's earliest start).
      let stageStart = Number.POSITIVE_INFINITY;
      for (let k = 0; k < 3; k++) {
        const j = next[i * 3 + k];
        if (j >= N) continue;
        const floor = Math.max(free[i], windows.est[g(i, k, j)]);
        let ready = free[i];
        if (k === OP_F) {
          if (i > 0) {
            const e = end[g(i - 1, OP_F, j)];
            if (Number.isNaN(e)) {
              stageStart = Math.min(stageStart, floor);
              continue;
            }
            ready = Math.max(ready, e + link[i - 1]);
          }
        } else if (k === OP_B) {
          if (j >= next[i * 3 + OP_F]) {
            stageStart = Math.min(stageStart, floor);
            continue;
          }
          if (i < S - 1) {
            const e = end[g(i + 1, OP_B, j)];
            if (Number.isNaN(e)) {
              stageStart = Math.min(stageStart, floor);
              continue;
            }
            ready = Math.max(ready, e + link[i]);
          }
        } else if (j >= next[i * 3 + OP_B]) {
          stageStart = Math.min(stageStart, floor);
          continue;
        }
        stageStart = Math.min(stageStart, Math.max(ready, floor));
        const p = d[i * 3 + k];
        // Ready ops past their latest start: no completion of this branch meets the target.
        if (ready > lst(g(i, k, j), p) + EPS) return false;
        candStage[n] = i;
        candKind[n] = k;
        candReady[n] = ready;
        n++;
        if (ready + p < bestEnd) (bestEnd = ready + p), (bestStage = i), (bestCandidate = n - 1);
      }
      if (stageStart < Number.POSITIVE_INFINITY && (last < 0 || Math.abs(i - last) <= 1) && !fitsDeadlines(i, stageStart)) return false;
    }
    if (bestStage < 0) return false;
    // The conflict set on the stage of the earliest completion, most urgent first (copied: the
    // candidate arrays are shared with the deeper levels).
    const i = bestStage;
    const branch: Array<{ k: number; ready: number; urgency: number }> = [];
    for (let c = 0; c < n; c++) {
      // The op completing first always branches (it may take no time: then nothing else could start before it ends).
      if (c !== bestCandidate && (candStage[c] !== i || candReady[c] >= bestEnd - EPS)) continue;
      const k = candKind[c];
      branch.push({ k, ready: candReady[c], urgency: lst(g(i, k, next[i * 3 + k]), d[i * 3 + k]) });
    }
    branch.sort((a, b) => a.urgency - b.urgency || b.k - a.k);
    for (const { k, ready: start } of branch) {
      const j = next[i * 3 + k];
      const p = d[i * 3 + k];
      const x = g(i, k, j);
      if (start + left[i] > target + EPS) continue;
      const savedFree = free[i];
      end[x] = start + p;
      free[i] = start + p;
      left[i] -= p;
      next[i * 3 + k]++;
      order[i].push(encodeOp(k, j));
      if (search(placed + 1, i)) return true;
      order[i].pop();
      next[i * 3 + k]--;
      left[i] += p;
      free[i] = savedFree;
      end[x] = Number.NaN;
      if (stopped) return false;
    }
    return false;
  };
  if (search(0, -1)) return order.map((o) => Int32Array.from(o));
  return stopped ? 'unknown' : 'infeasible';
}
