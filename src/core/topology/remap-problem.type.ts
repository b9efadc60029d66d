import { AllReduceModel, NodeLink, Placement, StageFinishFn } from './topology.type';

/** Everything the placement search needs to price a re-mapping of a job's nodes. */
export interface RemapProblem {
  stages: number;
  dpSize: number;
  /** What runs now; moves are counted against it. */
  current: Placement;
  /** Links known to be slow; every other pair of nodes is healthy. */
  slowLinks: readonly NodeLink[];
  /** The data-parallel all-reduce (null: not modelled, e.g. dpSize 1). */
  allReduce: AllReduceModel | null;
  /** Per-stage finish times of one replica's pipeline under extra delays on its links (the schedule that would run for them). */
  stageFinish: StageFinishFn;
  /** One-off cost of moving a node to another stage: loading that stage's weights and optimizer state, ms. */
  migrationMsPerNode: number;
  /** Iterations a move is paid back over (how long a straggler is expected to last). */
  amortizeIterations: number;
}
