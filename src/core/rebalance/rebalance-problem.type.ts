import { LayerCosts } from './layer-costs.type';

/**
 * Which contiguous split of a model's layers into stages to run (pure input of bestSplit and
 * priceSplit). A split is the number of layers per stage, in stage order, each at least 1.
 */
export interface RebalanceProblem {
  layers: LayerCosts;
  /** The split in force: layers per stage. */
  current: readonly number[];
  /** Per stage, how much slower its device computes than the declared layer times (1 healthy, 1.5 = 50% slower). */
  speed: readonly number[];
  microbatches: number;
  /** Per stage, the device's memory for layer state and activations, bytes (Infinity: unlimited). */
  deviceBytes: readonly number[];
  /** Per stage, microbatches of activations that must fit beside the stage's state. */
  minInflight: readonly number[];
  /** How fast a layer's state is handed to its new stage, bytes per ms (Infinity: moves are free). */
  handoffBytesPerMs: number;
  /** Iterations the one-off move is paid back over: the straggler's expected remaining duration. */
  amortizeIterations: number;
}
