/** What a re-balance decision saw and predicted, as the decision log keeps it (GET /jobs/:id/decisions `rebalance`). */
export interface RebalanceEvidence {
  /** The compute stragglers: reporting rank, stage, total compute time over its reference (null: no reference yet). */
  slowRanks: Array<{ rank: number; pp: number; ratio: number | null }>;
  /** Per stage speed priced (1 healthy). */
  speed: number[];
  currentSplit: number[];
  /** The split chosen (null: none better, or none fits). */
  split: number[] | null;
  moveBytes: number;
  moveMs: number;
  /** The straggler's expected remaining iterations (null: unbounded). */
  expectedIterations: number | null;
  /** Predicted iteration time of re-planning alone on the split in force, and with the new split, ms. */
  replanMs: number;
  newMs: number | null;
  exact: boolean;
}
