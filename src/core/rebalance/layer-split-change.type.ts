import { LayerMove } from './layer-move.type';

/** A new split of the job's layers into stages (a re-balance decision), switched to with the schedule. */
export interface LayerSplitChange {
  /** Layers per stage from the switch on. */
  perStage: number[];
  /** Runs of layers that change stage, with their state bytes. */
  moves: LayerMove[];
}
