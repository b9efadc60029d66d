/**
 * The engine's normalised, validated view of a pipeline (see `toPipelineModel`).
 * Typed arrays keep the generator and simulator free of allocation on the hot path.
 */
export interface PipelineModel {
  readonly stages: number;
  readonly microbatches: number;
  /** Op duration per stage and kind: durations[stage * 3 + kind], ms. */
  readonly durations: Float64Array;
  /** One-way extra latency per link, ms. */
  readonly linkMs: Float64Array;
  /** Time one message occupies a link direction (bytes / bandwidth), ms; 0 means infinite bandwidth, no queueing. */
  readonly transferMs: Float64Array;
  /** ZeroBubble memory deltas per stage and kind (memDelta[stage * 3 + kind]) and limits, or null when not modelled. */
  readonly memDelta: Float64Array | null;
  readonly memLimit: Float64Array | null;
  /** How messages cross links at run time (emulation); absent = pure latency plus FIFO bandwidth, the planning model. */
  readonly transport?: LinkTransport;
}

/**
 * The two ways a rank can send (paper sec. 3.2 and 5.2). A message holds a sender-side resource
 * from the moment it starts until it arrives (latency plus transfer):
 * - GPU-direct: `gpuSlots[link]` sends in flight per direction; when all are held, the sender's
 *   compute stream stalls until one frees (head-of-line blocking).
 * - delegated (`delegateQueues[link] > 0`): that many CPU delegate queues per direction; messages
 *   wait for a free queue but never stall compute, and every op of a delegating stage pays
 *   `copyOverhead[stage]` (device-host copies, as a fraction of the op's time).
 */
export interface LinkTransport {
  gpuSlots: Int32Array;
  delegateQueues: Int32Array;
  copyOverhead: Float64Array;
  /** Extra one-way delay of a link at a time (ms), added to linkMs; for delays that change within an iteration. */
  extraDelayMs?: (link: number, timeMs: number) => number;
}
