import { PipelineGroupPlan } from '../control/control-input.type';
import { LayerMove } from './layer-move.type';

/** What decideRebalance found and why it would or would not re-balance (logged in the decision log either way). */
export interface RebalanceOutcome {
  take: boolean;
  /** One sentence: why. */
  reason: string;
  /** Layers per stage in force, and chosen (null: no split fits, or nothing to choose). */
  currentSplit: number[];
  split: number[] | null;
  moves: LayerMove[];
  moveBytes: number;
  /** The handoff at the configured bandwidth, ms, and per iteration over the expected duration. */
  moveMs: number;
  amortisedMoveMs: number;
  /** Iterations the straggler is expected to last from now. */
  expectedIterations: number;
  /** Per stage speed the decision priced (1 healthy). */
  speed: number[];
  /** Predicted iteration times, ms: the schedule in force, re-planning alone on the split in force, the new split (re-planned). */
  predictedCurrentMs: number;
  predictedReplanMs: number;
  predictedNewMs: number | null;
  /** Plans: re-planning alone, and for the new split (null when there is none). */
  replan: PipelineGroupPlan[];
  pipelines: PipelineGroupPlan[] | null;
  /** Per stage op times of the new split, ms. */
  stageTimes: { fMs: number[]; bMs: number[]; wMs: number[] } | null;
  search: { exact: boolean; evaluations: number; priced: number };
}
