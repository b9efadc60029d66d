/**
 * How a plan chooses warm-up counts:
 * - initial:  Alg. 1, maximum uniform slackness within device memory (the ZeroBubble baseline);
 * - adaptive: Alg. 2, slackness from measured delays by Eq. 1, memory relaxed to the host;
 * - search:   simulator-guided search from Alg. 2 within a time budget, memory relaxed to the host;
 * - optimal:  exact, within a time limit: depth-first search and MILP (HiGHS) from the search plan;
 * - 1f1b:     x_i = S - i with W fused to its B;
 * - gpipe:    all forwards, then all backwards (W fused);
 * - fixed:    warm-up counts given by the caller (the CLI's --warmup).
 */
export const PLAN_POLICIES = ['initial', 'adaptive', 'search', 'optimal', '1f1b', 'gpipe', 'fixed'] as const;
export type PlanPolicy = (typeof PLAN_POLICIES)[number];
