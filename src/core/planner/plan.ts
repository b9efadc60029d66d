import { LookAhead, WPlacement } from '../engine/engine';
import { EngineRun } from '../engine/engine-run.type';
import { generateSchedule } from '../engine/generator';
import { InputError } from '../input-error';
import { warmupOf } from '../pipeline/schedule';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { adaptiveWarmup } from './adaptive-planner';
import { deviceInflightCaps, initialWarmup } from './initial-planner';
import { PlanPolicy } from './plan-policy.type';
import { MilpSolver, optimalPlan } from './optimal-planner';
import { polishPlan } from './polish-plan';
import { DEFAULT_SEARCH_SAFETY_MS, searchPlan, SearchOptions, SearchResult } from './search-planner';

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
  /**
   * Where `adaptive`, `search` and `optimal` may keep activations: `host` (default; delegation
   * offloads them) or `device`, for jobs without delegation or host memory: then they plan
   * within the model's device memory limits, as `initial` does, and `hostInflightCaps` is unused.
   */
  memory?: 'host' | 'device';
}

export interface Plan {
  policy: PlanPolicy;
  warmup: number[];
  wPlacement: WPlacement[];
  /** Set when the plan runs the generator beyond its defaults (the search's per-stage options): caps above the warm-up, look-ahead. */
  inflightCap?: number[];
  lookAhead?: LookAhead[];
  /** The generated schedule and its exact timing under the model's delays. */
  run: EngineRun;
  /** Set for `search`: how much it evaluated. */
  search?: { evaluations: number; elapsedMs: number; adaptiveIterationMs: number; timedOut: boolean };
  /** Set for `optimal`: the proven bound, the gap to it and whether the MILP proved optimality. */
  optimal?: { boundMs: number; gap: number; proven: boolean; settled: boolean; searchIterationMs: number };
}

/** The same model with memory limits lifted (activations offloaded to the host); peaks are still measured. */
export function withHostMemory(model: PipelineModel): PipelineModel {
  return model.memLimit ? { ...model, memLimit: new Float64Array(model.stages).fill(Number.POSITIVE_INFINITY) } : model;
}

/**
 * Chooses warm-up counts by policy and generates the full schedule under the model's delays.
 * `initial` keeps the device memory limits of the model; every other policy runs with memory
 * relaxed (delegation offloads activations to the host), bounded by `hostInflightCaps`, unless
 * `memory: 'device'` keeps `adaptive`, `search` and `optimal` on the device too.
 */
export function planPipeline(model: PipelineModel, request: PlanRequest): Plan {
  if (request.memory === 'device' && (request.policy === 'adaptive' || request.policy === 'search' || request.policy === 'optimal')) {
    return planWithinDeviceMemory(model, request);
  }
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
      const result = adaptive.run.iterationMs < found.run.iterationMs ? { ...found, warmup: adaptive.warmup, wPlacement: adaptive.wPlacement, inflightCap: adaptive.warmup, lookAhead: new Array<LookAhead>(S).fill(LookAhead.None), run: adaptive.run } : found;
      // Below the generator's space: a depth-first polish within the rest of the safety cap.
      const now = request.search?.now ?? (() => performance.now());
      const polishStart = now();
      const safetyMs = request.search?.timeBudgetMs ?? DEFAULT_SEARCH_SAFETY_MS;
      const polish = polishPlan(host, result.run, { maxNodes: request.search?.polishNodes, inflightCaps: request.hostInflightCaps, deadline: polishStart + Math.max(0, safetyMs - result.elapsedMs), now });
      // A polished order is no longer the generator's: its warm-up counts are read off it, and the generator's options do not describe it.
      const chosen = polish.improved ? { warmup: warmupOf(polish.run.order), wPlacement: result.wPlacement, run: polish.run } : result;
      const options = polish.improved ? {} : { inflightCap: result.inflightCap, lookAhead: result.lookAhead };
      const search = { evaluations: result.evaluations, elapsedMs: result.elapsedMs + (now() - polishStart), adaptiveIterationMs: result.adaptiveIterationMs, timedOut: result.timedOut || polish.timedOut };
      if (request.policy === 'optimal') {
        if (!request.optimal) throw new InputError('policy "optimal" needs the MILP solver (the highs package)');
        if (request.hostInflightCaps && request.hostInflightCaps.some((c) => c < N)) {
          // The MILP has no memory model: under host caps the search plan is what we can stand behind.
          return { policy: 'optimal', warmup: chosen.warmup, wPlacement: chosen.wPlacement, ...options, run: chosen.run, search };
        }
        const exact = optimalPlan(host, request.optimal.solver, chosen.run, { timeLimitMs: request.optimal.timeLimitMs });
        return {
          policy: 'optimal',
          warmup: exact.warmStartKept ? chosen.warmup : warmupOf(exact.run.order),
          wPlacement: chosen.wPlacement,
          ...(exact.warmStartKept ? options : {}),
          run: exact.run,
          search,
          optimal: { boundMs: exact.boundMs, gap: exact.gap, proven: exact.proven, settled: exact.settled, searchIterationMs: chosen.run.iterationMs },
        };
      }
      return { policy: 'search', warmup: chosen.warmup, wPlacement: chosen.wPlacement, ...options, run: chosen.run, search };
    }
    default:
      throw new InputError(`unknown policy "${String(request.policy)}"`);
  }
}

/**
 * `adaptive`, `search` and `optimal` within device memory: the same searches on the model with
 * its memory limits, the in-flight caps being what fits on each device. Alg. 1 gives every link
 * the same slackness; with a slow link the best plan within the same memory fills the stages
 * upstream of it instead, which the search finds. Never worse than Alg. 1 (the `initial` plan),
 * which is a seed of the search and the fallback of `adaptive`. The MILP has no memory model, so
 * `optimal` returns the search plan here.
 */
function planWithinDeviceMemory(model: PipelineModel, request: PlanRequest): Plan {
  const { stages: S } = model;
  const caps = deviceInflightCaps(model);
  const lazy = new Array<WPlacement>(S).fill(WPlacement.Lazy);
  const attempt = (warmup: number[]): Plan | InputError => {
    try {
      return { policy: request.policy, warmup, wPlacement: lazy, run: generateSchedule(model, { warmup, inflightCap: warmup, wPlacement: lazy }) };
    } catch (error) {
      if (error instanceof InputError) return error;
      throw error;
    }
  };
  const alg1Warmup = initialWarmup(S, model.microbatches, caps);
  const alg1 = attempt(alg1Warmup);
  const alg2 = attempt(adaptiveWarmup(model, caps));
  if (alg1 instanceof InputError && alg2 instanceof InputError) throw alg1; // nothing fits this device
  const adaptive = alg2 instanceof InputError || (!(alg1 instanceof InputError) && alg1.run.iterationMs < alg2.run.iterationMs) ? (alg1 as Plan) : alg2;
  if (request.policy === 'adaptive') return adaptive;
  let found: SearchResult;
  try {
    found = searchPlan(model, { ...request.search, inflightCaps: caps, extraSeeds: [alg1Warmup] });
  } catch {
    return adaptive; // the search starts from Alg. 2's counts, which do not fit here
  }
  const search = { evaluations: found.evaluations, elapsedMs: found.elapsedMs, adaptiveIterationMs: found.adaptiveIterationMs, timedOut: found.timedOut };
  if (adaptive.run.iterationMs < found.run.iterationMs) return { ...adaptive, search };
  // The run was generated with the search's per-stage options: the plan carries them.
  return { policy: request.policy, warmup: found.warmup, wPlacement: found.wPlacement, inflightCap: found.inflightCap, lookAhead: found.lookAhead, run: found.run, search };
}
