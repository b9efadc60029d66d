import { JobControlInput } from '../control/control-input.type';
import { LayerCosts } from './layer-costs.type';

/** What decideRebalance needs besides the control input of the job. */
export interface RebalanceInput {
  control: JobControlInput;
  layers: LayerCosts;
  /** Layers per stage in force. */
  split: readonly number[];
  /** Per stage, how much slower its slowest replica computes than the declared layer times (1 healthy). */
  speed: readonly number[];
  /** Per stage, the device's memory for layer state and activations, bytes. */
  deviceBytes: readonly number[];
  /** Host memory per rank CPU delegation may offload activations to, bytes. */
  hostBytes: number;
  /** Iterations the straggler is expected to last from now (StragglerHistory). */
  expectedIterations: number;
}
