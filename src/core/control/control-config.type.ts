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
}

export const DEFAULT_CONTROL_CONFIG: ControlConfig = {
  minGain: 0.03,
  planner: 'adaptive',
  searchBudgetMs: 50,
  maxDelegateQueues: 8,
};
