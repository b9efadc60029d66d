/** What one split of layers into stages is predicted to cost (priceSplit). */
export interface SplitPrice {
  /** Layers per stage. */
  split: number[];
  /** Per stage F+B+W time of one microbatch at the stage's speed, ms. */
  stageMs: number[];
  /** The slowest stage's time, ms: the pipeline's pace. */
  bottleneckMs: number;
  /**
   * Estimated iteration time, ms: fill and drain (every stage's time once) plus N - 1 microbatches
   * at the bottleneck's pace, the 1F1B/ZB steady state. The planner and simulator price the
   * chosen splits exactly; this is what the search ranks splits by.
   */
  estimateMs: number;
  /** Bytes of layer state every stage receives from another, summed. */
  moveBytes: number;
  /** moveBytes over the handoff bandwidth, ms (the moves priced one after another: an upper bound). */
  moveMs: number;
  /** estimateMs plus moveMs amortised over the expected iterations: what the search minimises. */
  objectiveMs: number;
  /** Whether every stage's state and its required activations fit on its device. */
  fits: boolean;
}
