/**
 * A model's layers as the ranks measured them on a healthy device (registration `layers`,
 * docs/protocol.md sec. 3.1), one entry per layer in model order.
 */
export interface LayerCosts {
  /** One microbatch's forward, backward-for-inputs and backward-for-weights time through the layer, ms. */
  fMs: readonly number[];
  bMs: readonly number[];
  wMs: readonly number[];
  /** Weights, gradients and optimizer state of the layer: on the device with it, moved with it, bytes. */
  stateBytes: readonly number[];
  /** Activation memory one microbatch holds for the layer between its F and its B, bytes. */
  activationBytes: readonly number[];
}
