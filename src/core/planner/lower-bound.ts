import { effectiveLinkDelayMs } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';

// Bound once for the hot loops (global lookups are slow where the global object is not V8's fast one: Jest's sandbox).
const { max, min } = Math;
const { POSITIVE_INFINITY: INF } = Number;

/**
 * A lower bound on any schedule's iteration time, for judging plan quality: the larger of the
 * per-stage bound (`stageLowerBoundMs`) and the per-op bound (`opLowerBoundMs`).
 */
export function iterationLowerBoundMs(model: PipelineModel): number {
  return max(stageLowerBoundMs(model), opLowerBoundMs(model));
}

/**
 * Per stage: for each stage i:
 * its first F cannot start before F_0 crossed the stages and links upstream (head_i); then it
 * needs N (f + b + w) of its own time; and after its last B, that gradient still has to cross
 * back to stage 0 and stage 0 must run that microbatch's B and W.
 */
export function stageLowerBoundMs(model: PipelineModel): number {
  const { stages: S, microbatches: N, durations: d } = model;
  let bound = 0;
  let head = 0;
  for (let i = 0; i < S; i++) {
    let back = 0;
    for (let k = 0; k < i; k++) back += effectiveLinkDelayMs(model, k) + d[k * 3 + 1];
    const work = N * (d[i * 3] + d[i * 3 + 1] + d[i * 3 + 2]);
    const untilLastB = N * (d[i * 3] + d[i * 3 + 1]);
    const tail = i === 0 ? d[2] : back + d[2];
    bound = max(bound, head + work, head + untilLastB + tail);
    head += d[i * 3] + (i < S - 1 ? effectiveLinkDelayMs(model, i) : 0);
  }
  return bound;
}

/**
 * Per op, O(S N log N): every op gets a head r (earliest start by its precedence chains: the F
 * chain down the pipeline, the B chain back up, W after its B, and ops of one kind on one stage in
 * microbatch order, which loses no optimality because they are interchangeable) and a tail q (the
 * least time that must pass after it ends). Then on each stage, which runs one op at a time, the
 * single-machine bounds with heads and tails: any op's r + p + q; the ops released at or after
 * some r_k all run after r_k, one by one, and the last one's tail follows; symmetrically for the
 * ops with tails of at least some q_k. Link delays are latency plus transfer, without queueing,
 * and memory is ignored: both only relax, so this stays a bound.
 */
export function opLowerBoundMs(model: PipelineModel): number {
  const { stages: S, microbatches: N, durations: d } = model;
  const at = (i: number, j: number) => i * N + j;
  const { rF, rB, rW, qF, qB, qW } = opHeadsAndTails(model);
  let bound = 0;
  const r = new Float64Array(3 * N);
  const p = new Float64Array(3 * N);
  const q = new Float64Array(3 * N);
  const order = new Int32Array(3 * N);
  for (let i = 0; i < S; i++) {
    for (let j = 0; j < N; j++) {
      for (let k = 0; k < 3; k++) {
        const o = 3 * j + k;
        r[o] = (k === 0 ? rF : k === 1 ? rB : rW)[at(i, j)];
        q[o] = (k === 0 ? qF : k === 1 ? qB : qW)[at(i, j)];
        p[o] = d[i * 3 + k];
        bound = max(bound, r[o] + p[o] + q[o]);
      }
    }
    const n = 3 * N;
    for (let o = 0; o < n; o++) order[o] = o;
    // Released at or after r_k: sorted by head, suffix sums of work and minima of tails.
    const byHead = Array.from(order).sort((a, b) => r[a] - r[b]);
    let work = 0;
    let minTail = INF;
    for (let k = n - 1; k >= 0; k--) {
      const o = byHead[k];
      work += p[o];
      minTail = min(minTail, q[o]);
      bound = max(bound, r[o] + work + minTail);
    }
    // Tails of at least q_k: sorted by tail, suffix sums of work and minima of heads.
    const byTail = Array.from(order).sort((a, b) => q[a] - q[b]);
    work = 0;
    let minHead = INF;
    for (let k = n - 1; k >= 0; k--) {
      const o = byTail[k];
      work += p[o];
      minHead = min(minHead, r[o]);
      bound = max(bound, minHead + work + q[o]);
    }
  }
  return bound;
}

/** Per op (index stage * N + microbatch): heads (earliest starts) and tails (least time after its end), see `opLowerBoundMs`. */
export interface OpHeadsAndTails {
  rF: Float64Array;
  rB: Float64Array;
  rW: Float64Array;
  qF: Float64Array;
  qB: Float64Array;
  qW: Float64Array;
}

export function opHeadsAndTails(model: PipelineModel): OpHeadsAndTails {
  const { stages: S, microbatches: N, durations: d } = model;
  const at = (i: number, j: number) => i * N + j;
  const link = (i: number) => effectiveLinkDelayMs(model, i);
  const rF = new Float64Array(S * N);
  const rB = new Float64Array(S * N);
  const rW = new Float64Array(S * N);
  for (let i = 0; i < S; i++) {
    for (let j = 0; j < N; j++) {
      let r = 0;
      if (i > 0) r = rF[at(i - 1, j)] + d[(i - 1) * 3] + link(i - 1);
      if (j > 0) r = max(r, rF[at(i, j - 1)] + d[i * 3]);
      rF[at(i, j)] = r;
    }
  }
  for (let i = S - 1; i >= 0; i--) {
    for (let j = 0; j < N; j++) {
      let r = rF[at(i, j)] + d[i * 3];
      if (i < S - 1) r = max(r, rB[at(i + 1, j)] + d[(i + 1) * 3 + 1] + link(i));
      if (j > 0) r = max(r, rB[at(i, j - 1)] + d[i * 3 + 1]);
      rB[at(i, j)] = r;
      let w = r + d[i * 3 + 1];
      if (j > 0) w = max(w, rW[at(i, j - 1)] + d[i * 3 + 2]);
      rW[at(i, j)] = w;
    }
  }
  const qF = new Float64Array(S * N);
  const qB = new Float64Array(S * N);
  const qW = new Float64Array(S * N);
  for (let i = 0; i < S; i++) {
    for (let j = N - 1; j >= 0; j--) {
      qW[at(i, j)] = j < N - 1 ? d[i * 3 + 2] + qW[at(i, j + 1)] : 0;
    }
  }
  for (let i = 0; i < S; i++) {
    for (let j = N - 1; j >= 0; j--) {
      let q = d[i * 3 + 2] + qW[at(i, j)];
      if (i > 0) q = max(q, link(i - 1) + d[(i - 1) * 3 + 1] + qB[at(i - 1, j)]);
      if (j < N - 1) q = max(q, d[i * 3 + 1] + qB[at(i, j + 1)]);
      qB[at(i, j)] = q;
    }
  }
  for (let i = S - 1; i >= 0; i--) {
    for (let j = N - 1; j >= 0; j--) {
      let q = d[i * 3 + 1] + qB[at(i, j)];
      if (i < S - 1) q = max(q, link(i) + d[(i + 1) * 3] + qF[at(i + 1, j)]);
      if (j < N - 1) q = max(q, d[i * 3] + qF[at(i, j + 1)]);
      qF[at(i, j)] = q;
    }
  }
  return { rF, rB, rW, qF, qB, qW };
}
