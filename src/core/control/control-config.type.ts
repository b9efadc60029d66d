/** Knobs of the re-planning decision (see config/default.json, section "control"). */
export interface ControlConfig {
  /** Re-schedule only when the simulator predicts at least this relative gain (0.03 = 3%). */
  minGain: number;
  /** Planner for stragglers: Alg. 2 (fast, the default) or the simulator-guided search. */
  planner: 'adaptive' | 'search';
  /** Time budget of the search planner, ms. */
  searchBudgetMs: number;
  /** Upper bound on CPU delegate queues per direction and rank. */
  maxDelegateQueues: number;
  /** Re-mapping ranks away from slow data-parallel links (absent: never). */
  remap?: RemapConfig;
}

export interface RemapConfig {
  enabled: boolean;
  /** Re-map only when the predicted objective (iteration time plus amortised migration) improves by at least this fraction. */
  minGain: number;
  /** One-off cost of moving a node to another stage (weights and optimizer state), ms. */
  migrationMsPerNode: number;
  /** Iterations a migration is paid back over: how long a straggler is expected to last. */
  amortizeIterations: number;
  /** Time budget of the placement search for large jobs, ms. */
  searchBudgetMs: number;
}

export const DEFAULT_REMAP_CONFIG: RemapConfig = { enabled: true, minGain: 0.05, migrationMsPerNode: 3000, amortizeIterations: 1000, searchBudgetMs: 200 };

export const DEFAULT_CONTROL_CONFIG: ControlConfig = {
  minGain: 0.03,
  planner: 'adaptive',
  searchBudgetMs: 50,
  maxDelegateQueues: 8,
};
