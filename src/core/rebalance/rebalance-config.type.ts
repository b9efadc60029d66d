/** Knobs of re-balancing layers away from slow ranks (config section "rebalance", docs/rebalancing.md). */
export interface RebalanceConfig {
  /** Off: compute stragglers are answered by re-planning alone. */
  enabled: boolean;
  /**
   * Re-balance only when the predicted iteration time with the new split, plus the layer handoff
   * amortised over the straggler's expected remaining duration, beats re-planning alone on the
   * split in force by at least this fraction (0.05 = 5%).
   */
  minGain: number;
  /** How fast a layer's weights and optimizer state reach its new stage, GB/s (1e9 bytes/s). */
  handoffGBps: number;
  /** Bottleneck values the split search tries before it gives up exactness (bestSplit). */
  maxCandidates: number;
  /** Best splits (by the search's estimate) priced with the planner and the simulator. */
  refineCandidates: number;
}
