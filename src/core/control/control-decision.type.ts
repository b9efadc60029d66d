import { DelegationPlan, PipelineGroupPlan } from './control-input.type';
import { LayerSplitChange } from '../rebalance/layer-split-change.type';

export type DecisionKind = 'initial' | 'straggler' | 'recovery' | 'nic-failure' | 'remap' | 'rebalance';

/** A new placement of the job's nodes (kind 'remap'). */
export interface TopologyChange {
  /** Reporting rank at slot (dp, pp): rankAt[dp * stages + pp]. */
  rankAt: number[];
  /** Per stage, the data-parallel ring order (dp indices). */
  rings: number[][];
  /** Reporting ranks whose stage changes. */
  movedRanks: number[];
  /** Predicted iteration time (all-reduce included) staying put and after the move, and the one-off migration cost, ms. */
  stayMs: number;
  newMs: number;
  migrationMs: number;
  search: { method: 'exact' | 'local-search'; evaluations: number; elapsedMs: number };
}

/** A schedule worth publishing, with the evidence for it. */
export interface ControlDecision {
  kind: DecisionKind;
  pipelines: PipelineGroupPlan[];
  delegation: DelegationPlan[];
  /** The straggling links the decision answers (empty for initial and recovery). */
  links: Array<{ dp: number; link: number; upRank: number; downRank: number; extraMs: number; nicFailure: boolean }>;
  /** Predicted iteration time (max over replicas) under current delays, ms. */
  predictedPreviousMs: number | null;
  predictedNewMs: number;
  /** Predicted iteration time of the initial plan under current delays, ms. */
  predictedStaticMs: number;
  /** Slow data-parallel links the decision answers (kind 'remap'). */
  dataParallelLinks?: Array<{ fromRank: number; toRank: number; extraMs: number }>;
  /** Set for kind 'remap'. */
  topology?: TopologyChange;
  /** Set for kind 'rebalance': the new split of the layers into stages (docs/rebalancing.md). */
  layers?: LayerSplitChange;
  /** Whether the op lists changed (false: delegation toggles only). */
  reschedule: boolean;
  detail: string;
}

export interface ControlOutcome {
  decision: ControlDecision | null;
  /** Predicted iteration time of what runs now under current delays (null before the first schedule), ms. */
  predictedCurrentMs: number | null;
  predictedStaticMs: number;
  /**
   * False when no decision was made for straggling links and a lower bound shows that no planner
   * could find a plan worth switching to (refinementHeadroom is null): the refinement is not run. Absent: may gain.
   */
  refinable?: boolean;
  /**
   * With `refinable` true: the most any plan could gain per iteration over what runs, ms (against
   * the slowest replica's lower bound; Infinity when unknown). The daemon runs the refinement only
   * where the cost gate could take that gain (refinementMayPay).
   */
  refinementHeadroomMs?: number;
}
