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
}
