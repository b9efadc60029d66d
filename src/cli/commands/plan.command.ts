import { InputError } from '../../core/input-error';
import { LookAhead } from '../../core/engine/engine';
import { simulateSchedule } from '../../core/engine/simulator';
import { summarizeRun } from '../../core/engine/simulation-report';
import { formatSchedule } from '../../core/pipeline/schedule';
import { linkTolerance } from '../../core/planner/link-tolerance';
import { iterationLowerBoundMs } from '../../core/planner/lower-bound';
import { Plan, planPipeline } from '../../core/planner/plan';
import { PipelineModel } from '../../core/pipeline/pipeline-model.type';
import { loadMilpSolver } from '../../daemon/planning/load-milp-solver.util';
import { PLAN_POLICIES, PlanPolicy } from '../../core/planner/plan-policy.type';
import { expectOnly, integerListOption, numberOption, requiredOption, stringOption } from '../cli-args';
import { loadProfile } from '../load-profile';

export const PLAN_OPTIONS = ['profile', 'policy', 'warmup', 'budget-ms', 'max-evaluations', 'polish-nodes', 'seed', 'time-limit-ms', 'memory', 'details'];

/**
 * `plan`: chooses warm-up counts by policy, generates the schedule and reports its simulated time
 * under the profile's delays. Output contract: {policy, warmup, stages, iterationMs, bubbleRate};
 * --details adds fields, never changes these. `--policy optimal` loads the MILP solver (the
 * `highs` wasm) first, so the result is then a promise.
 */
export function planCommand(options: Map<string, string | true>): unknown {
  expectOnly(options, PLAN_OPTIONS, 'plan');
  const { model } = loadProfile(requiredOption(options, 'profile'));
  const warmup = integerListOption(options, 'warmup');
  const policyName = stringOption(options, 'policy') ?? (warmup ? 'fixed' : 'adaptive');
  if (!(PLAN_POLICIES as readonly string[]).includes(policyName) || (policyName === 'fixed' && !warmup)) {
    throw new InputError(`--policy must be one of ${PLAN_POLICIES.filter((p) => p !== 'fixed').join(', ')}, got "${policyName}"`);
  }
  if (warmup && policyName !== 'fixed') throw new InputError(`--warmup sets the warm-up counts itself; it cannot be combined with --policy ${policyName}`);
  const timeBudgetMs = numberOption(options, 'budget-ms', { min: 0 });
  const maxEvaluations = numberOption(options, 'max-evaluations', { integer: true, min: 1 });
  const seed = numberOption(options, 'seed', { integer: true, min: 0 });
  const polishNodes = numberOption(options, 'polish-nodes', { integer: true, min: 0 });

  const timeLimitMs = numberOption(options, 'time-limit-ms', { min: 1 });
  if (timeLimitMs !== undefined && policyName !== 'optimal') throw new InputError('--time-limit-ms is the MILP solver\'s limit; it needs --policy optimal');
  const memory = stringOption(options, 'memory') ?? 'host';
  if (memory !== 'host' && memory !== 'device') throw new InputError(`--memory must be host or device, got "${memory}"`);
  if (memory === 'device' && !['adaptive', 'search', 'optimal'].includes(policyName)) {
    throw new InputError(`--memory device plans adaptive, search or optimal within device memory (initial always does); not --policy ${policyName}`);
  }
  const search = { timeBudgetMs, maxEvaluations, seed, polishNodes };
  if (policyName === 'optimal') {
    return loadMilpSolver().then((solver) => planOutput(model, options, planPipeline(model, { policy: 'optimal', memory, search, optimal: { solver, timeLimitMs } })));
  }
  return planOutput(model, options, planPipeline(model, { policy: policyName as PlanPolicy, memory, warmup, search }));
}

function planOutput(model: PipelineModel, options: Map<string, string | true>, plan: Plan): unknown {
  // The contract's iterationMs is the replayed time; it equals the generator's by construction.
  const replay = simulateSchedule(model, plan.run.order);
  const report = summarizeRun(replay, model.durations);
  const output: Record<string, unknown> = {
    policy: plan.policy,
    warmup: plan.warmup,
    stages: formatSchedule(plan.run.order),
    iterationMs: report.iterationMs,
    bubbleRate: report.bubbleRate,
  };
  if (options.has('details')) {
    output.lowerBoundMs = iterationLowerBoundMs(model);
    output.links = linkTolerance(model, plan.warmup);
    output.wPlacement = plan.wPlacement.map((p) => ['lazy', 'eager', 'fused'][p]);
    if (plan.inflightCap) output.inflightCap = plan.inflightCap;
    if (plan.lookAhead) output.lookAhead = plan.lookAhead.map(lookAheadNames);
    output.peakInflight = report.peakInflight;
    if (report.peakMemory) output.peakMemory = report.peakMemory;
    if (plan.search) output.search = plan.search;
    if (plan.optimal) output.optimal = plan.optimal;
  }
  return output;
}

/** The look-ahead flags of a stage by name: ["W"] refuses a W that would delay a known B, and so on. */
function lookAheadNames(flags: number): string[] {
  return Object.entries(LookAhead)
    .filter(([name, bit]) => name !== 'None' && name !== 'All' && flags & bit)
    .map(([name]) => name);
}
