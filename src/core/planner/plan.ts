import { WPlacement } from '../engine/engine';
import { EngineRun } from '../engine/engine-run.type';
import { generateSchedule } from '../engine/generator';
import { InputError } from '../input-error';
import { warmupOf } from '../pipeline/schedule';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { adaptiveWarmup } from './adaptive-planner';
import { deviceInflightCaps, initialWarmup } from './initial-planner';
import { PlanPolicy } from './plan-policy.type';
import { MilpSolver, optimalPlan } from './optimal-planner';
import { searchPlan, SearchOptions } from './search-planner';

export interface PlanRequest {
  policy: PlanPolicy;
  /** Required for `fixed`. */
  warmup?: readonly number[];
  /** For `search`. */
  search?: Omit<SearchOptions, 'inflightCaps'>;
  /** For `optimal`: the loaded `highs` package and the solver's time limit (ms, default 2000). */
  optimal?: { solver: MilpSolver; timeLimitMs?: number };
  /** Host-memory limit on microbatches in flight per stage for `adaptive` and `search` (default N). */
  hostInflightCaps?: readonly number[];
}

export interface Plan {
  policy: PlanPolicy;
  warmup: number[];
  wPlacement: WPlacement[];
  /** The generated schedule and its exact timing under the model's delays. */
  run: EngineRun;
  /** Set for `search`: how much it evaluated. */
  search?: { evaluations: number; elapsedMs: number; adaptiveIterationMs: number };
  /** Set for `optimal`: the proven bound, the gap to it and whether the MILP proved optimality. */
  optimal?: { boundMs: number; gap: number; proven: boolean; searchIterationMs: number };
}

/** The same model with memory limits lifted (activations offloaded to the host); peaks are still measured. */
export function withHostMemory(model: PipelineModel): PipelineModel {
  return model.memLimit ? { ...model, memLimit: new Float64Array(model.stages).fill(Number.POSITIVE_INFINITY) } : model;
}

/**
 * Chooses warm-up counts by policy and generates the full schedule under the model's delays.
 * `initial` keeps the device memory limits of the model; every other policy runs with memory
 * relaxed (delegation offloads activations to the host), bounded by `hostInflightCaps`.
 */
export function planPipeline(model: PipelineModel, request: PlanRequest): Plan {
  const { stages: S, microbatches: N } = model;
  const host = withHostMemory(model);
  const fill = (p: WPlacement): WPlacement[] => new Array<WPlacement>(S).fill(p);
  const generate = (m: PipelineModel, warmup: number[], wPlacement: WPlacement[], inflightCap: readonly number[] = warmup): Plan => ({
    policy: request.policy,
    warmup,
    wPlacement,
    run: generateSchedule(m, { warmup, inflightCap, wPlacement }),
  });
  switch (request.policy) {
    case 'initial':
      return generate(model, initialWarmup(S, N, deviceInflightCaps(model)), fill(WPlacement.Lazy));
    case 'adaptive': {
      // Never worse than the simpler plan: Alg. 1's counts (device memory, so within any host cap) run with memory relaxed.
      const alg2 = generate(host, adaptiveWarmup(model, request.hostInflightCaps), fill(WPlacement.Lazy));
      const alg1 = initialWarmup(S, N, deviceInflightCaps(model));
      if (request.hostInflightCaps && alg1.some((x, i) => x > request.hostInflightCaps![i])) return alg2;
      const simpler = generate(host, alg1, fill(WPlacement.Lazy));
      return simpler.run.iterationMs < alg2.run.iterationMs ? simpler : alg2;
    }
    case '1f1b':
      return generate(host, Array.from({ length: S }, (_, i) => Math.min(N, S - i)), fill(WPlacement.Fused));
    case 'gpipe':
      return generate(host, new Array<number>(S).fill(N), fill(WPlacement.Fused));
    case 'fixed':
      if (!request.warmup) throw new InputError('policy "fixed" needs warm-up counts');
      return generate(host, request.warmup.slice(), fill(WPlacement.Lazy));
    case 'search':
    case 'optimal': {
      const found = searchPlan(host, { ...request.search, inflightCaps: request.hostInflightCaps, extraSeeds: [initialWarmup(S, N, deviceInflightCaps(model))] });
      // Never worse than the simpler policy (the search starts from Alg. 2, but not from Alg. 1's device counts).
      const adaptive = planPipeline(model, { policy: 'adaptive', hostInflightCaps: request.hostInflightCaps });
      const result = adaptive.run.iterationMs < found.run.iterationMs ? { ...found, warmup: adaptive.warmup, wPlacement: adaptive.wPlacement, run: adaptive.run } : found;
      const search = { evaluations: result.evaluations, elapsedMs: result.elapsedMs, adaptiveIterationMs: result.adaptiveIterationMs };
      if (request.policy === 'optimal') {
        if (!request.optimal) throw new InputError('policy "optimal" needs the MILP solver (the highs package)');
        if (request.hostInflightCaps && request.hostInflightCaps.some((c) => c < N)) {
          // The MILP has no memory model: under host caps the search plan is what we can stand behind.
          return { policy: 'optimal', warmup: result.warmup, wPlacement: result.wPlacement, run: result.run, search };
        }
        const exact = optimalPlan(host, request.optimal.solver, result.run, { timeLimitMs: request.optimal.timeLimitMs });
        return {
          policy: 'optimal',
          warmup: exact.warmStartKept ? result.warmup : warmupOf(exact.run.order),
          wPlacement: result.wPlacement,
          run: exact.run,
          search,
          optimal: { boundMs: exact.boundMs, gap: exact.gap, proven: exact.proven, searchIterationMs: result.run.iterationMs },
        };
      }
      return {
        policy: 'search',
        warmup: result.warmup,
        wPlacement: result.wPlacement,
        run: result.run,
        search,
      };
    }
    default:
      throw new InputError(`unknown policy "${String(request.policy)}"`);
  }
}
