import defaults from '../../../config/default.json';

/** Knobs of the re-planning decision (see config/default.json, section "control"). */
export interface ControlConfig {
  /** Re-schedule only when the simulator predicts at least this relative gain (0.03 = 3%). */
  minGain: number;
  /**
   * Planner for stragglers: Alg. 2 (fast, the default), the simulator-guided search, or the exact
   * MILP for jobs of at most `optimalMaxCells` stages x microbatches (the search for larger ones).
   */
  planner: 'adaptive' | 'search' | 'optimal';
  /** Wall-clock safety cap of the search planner, ms (the budget is `searchEvaluations`). */
  searchBudgetMs: number;
  /** Cap on schedules the search evaluates: with it the same input gives the same plan on every machine, the time budget only a safety cap. */
  searchEvaluations?: number;
  /**
   * Whether re-planned schedules may hold more activations than fit on the device, offloaded to
   * host memory (default true). False for jobs without host memory to offload to: plans stay within
   * the device caps (the registration's device memory), where the search still beats Alg. 1.
   */
  hostMemory?: boolean;
  /** Largest stages x microbatches the `optimal` planner solves exactly (default 0: never). */
  optimalMaxCells?: number;
  /** Time limit of one MILP solve, ms; past it the best schedule found (never worse than the search's) is used. */
  optimalTimeLimitMs?: number;
  /** Upper bound on CPU delegate queues per direction and rank. */
  maxDelegateQueues: number;
  /** How ranks send, for predictions and plans (absent: DEFAULT_TRANSPORT_CONFIG). */
  transport?: TransportConfig;
  /** Re-mapping ranks away from slow data-parallel links (absent: never). */
  remap?: RemapConfig;
}

/**
 * The rank transport the daemon predicts with (docs/protocol.md sec. 3.2): GPU-direct sends in
 * flight per link direction before compute blocks behind them, and the compute slowdown of a rank
 * running CPU delegates (device-host copies).
 */
export interface TransportConfig {
  gpuSendsInFlight: number;
  /** Fraction of each op's time added on a delegating rank (0.02 = 2%). */
  delegateCopyOverhead: number;
}

/** The shipped defaults (config/default.json, the one place they are written). */
export const DEFAULT_TRANSPORT_CONFIG: TransportConfig = { gpuSendsInFlight: defaults.control.gpuSendsInFlight, delegateCopyOverhead: defaults.control.delegateCopyOverhead };

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

export const DEFAULT_REMAP_CONFIG: RemapConfig = {
  enabled: defaults.remap.enabled,
  minGain: defaults.remap.minGain,
  migrationMsPerNode: defaults.remap.migrationMsPerNode,
  amortizeIterations: defaults.remap.amortizeIterations,
  searchBudgetMs: defaults.remap.searchBudgetMs,
};

export const DEFAULT_CONTROL_CONFIG: ControlConfig = {
  minGain: defaults.control.minGain,
  planner: defaults.control.planner as ControlConfig['planner'],
  searchBudgetMs: defaults.control.searchBudgetMs,
  searchEvaluations: defaults.control.searchEvaluations,
  maxDelegateQueues: defaults.control.maxDelegateQueues,
};
