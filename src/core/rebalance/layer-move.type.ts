/** A run of consecutive layers that changes stage in a re-balance: its state moves from `fromStage` to `toStage`. */
export interface LayerMove {
  /** First and last layer of the run (0-based, in model order). */
  firstLayer: number;
  lastLayer: number;
  fromStage: number;
  toStage: number;
  /** Weights, gradients and optimizer state of the run, bytes. */
  bytes: number;
}
