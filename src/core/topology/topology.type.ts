/**
 * Where the nodes of a job sit on its data-parallel x pipeline grid, and what the fabric between
 * them looks like. A node holds one (dp, pp) slot (its TP ranks live inside it); nodes are
 * numbered 0..N-1 by the caller (the daemon uses reporting ranks in rank order).
 */

/** A physical link between two nodes and its extra one-way delay over a healthy link, ms. */
export interface NodeLink {
  a: number;
  b: number;
  extraMs: number;
}

/**
 * A placement: the node at slot (dp, pp) is `nodeAt[dp * stages + pp]`. Replica dp's pipeline
 * runs through nodeAt[dp * stages + 0..stages-1]; stage pp's data-parallel ring visits the
 * replicas in the cyclic order `rings[pp]` (a permutation of 0..dpSize-1).
 */
export interface Placement {
  dpSize: number;
  stages: number;
  nodeAt: Int32Array;
  rings: Int32Array[];
}

/**
 * Ring all-reduce of the gradients at the end of an iteration (alpha-beta model). Each ring link
 * carries 2(D-1)/D of a stage's gradient bytes in `chunkBytes` messages with `inflight` of them
 * outstanding, so a link moves one chunk per max(transfer, (latency + extra) / inflight): bandwidth
 * bound when healthy, latency bound when slow. The ring is synchronous: its slowest link sets the pace.
 */
export interface AllReduceModel {
  /** Per stage: gradient bytes each node of that stage reduces per iteration. */
  gradientBytes: number[];
  /** Healthy one-way latency of a ring link, ms. */
  latencyMs: number;
  /** Ring link bandwidth, GB/s (1 GB/s moves 1e6 bytes per ms). */
  gbps: number;
  chunkBytes: number;
  inflight: number;
}

/** What one replica's pipeline costs: when each stage has finished its last op (ms from the iteration start). */
export type StageFinishFn = (pipelineExtraMs: Float64Array) => Float64Array;
