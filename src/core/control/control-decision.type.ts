import { DelegationPlan, PipelineGroupPlan } from './control-input.type';

export type DecisionKind = 'initial' | 'straggler' | 'recovery' | 'nic-failure';

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
  /** Whether the op lists changed (false: delegation toggles only). */
  reschedule: boolean;
  detail: string;
}

export interface ControlOutcome {
  decision: ControlDecision | null;
  /** Predicted iteration time of what runs now under current delays (null before the first schedule), ms. */
  predictedCurrentMs: number | null;
  predictedStaticMs: number;
}
