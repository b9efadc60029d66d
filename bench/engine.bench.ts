/**
 * npm run bench:engine
 *
 * 1. Plan quality: 100 seeded random heterogeneous profiles with one or two slow links; for each
 *    policy the mean and worst gap of its iteration time to a lower bound (one JSON line per policy).
 *    The search runs on the daemon's default budget (control.searchEvaluations, wall clock only a
 *    safety cap), on 400 evaluations, and on 400 evaluations over warm-up counts alone (the greedy
 *    B > F > W schedules, no per-stage options): every search row is the same on every machine.
 * 2. Against the optimum: 24 seeded profiles, S = 4-6, N = 8-12, op times 5-20 ms, one or two
 *    links slowed by 15-120 ms; the optimal policy (MILP, 2 s limit) proves the optimum where it
 *    can; per policy the mean and worst gap to the proven optimum and to the better lower bound
 *    (combinatorial or the MILP's), evaluations and planning time.
 * 3. Within device memory: 40 seeded profiles (S = 4-8, N = 2S-4S, room for 1x-2x S activations
 *    per device, one or two slow links): Alg. 1 (the `initial` plan) against adaptive and search
 *    planned within the same device memory (`memory: 'device'`), the gain over Alg. 1 and the
 *    highest memory peak relative to the device limit (must stay <= 1).
 * 4. Speed: median generator and simulator time for S in {4..64}, N in {2S, 4S, 8S}.
 * 5. Time limit: `optimalPlan` alone (warm-started with the search plan) on 8 x 32 and 16 x 64 jobs
 *    at limits of 200 ms and 2000 ms, wall time against the limit: a uniform job (f = b = w =
 *    10 ms, one link +60 ms; the search meets the bound) and a hard one (op times 5-20 ms, two
 *    slow links, not proven), the hard one also with the MILP alone (no depth-first search),
 *    whose LP at these sizes takes HiGHS longer to read than the limit allows.
 * Last line: { quality, optimum, deviceMemory, speed } as JSON, also written to bench/results/engine.json (the
 * engine tables in docs/benchmarks.md are rendered from it: npm run readme:tables).
 *
 * Runs on one core (the event loop); the speed numbers are wall-clock medians on this machine.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSchedule } from '../src/core/engine/generator';
import { simulateSchedule } from '../src/core/engine/simulator';
import { toPipelineModel, validateProfile } from '../src/core/pipeline/pipeline-model';
import { PipelineModel } from '../src/core/pipeline/pipeline-model.type';
import { PipelineProfile } from '../src/core/pipeline/pipeline-profile.type';
import { adaptiveWarmup } from '../src/core/planner/adaptive-planner';
import { iterationLowerBoundMs, stageLowerBoundMs } from '../src/core/planner/lower-bound';
import { planPipeline, withHostMemory } from '../src/core/planner/plan';
import { seededRandom } from '../src/core/planner/seeded-random';
import { MilpSolver, optimalPlan } from '../src/core/planner/optimal-planner';
import { DEFAULT_CONTROL_CONFIG } from '../src/core/control/control-config.type';
import loadHighs from 'highs';
import { startStamp } from '../src/support/results-stamp';

function median(values: number[]): number {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Repeats `fn` until it has run `minRuns` times and for at least `minMs`; returns the median run time. */
function timeMedian(fn: () => void, minRuns = 7, minMs = 150): number {
  fn(); // warm the JIT
  const samples: number[] = [];
  const started = performance.now();
  while (samples.length < minRuns || performance.now() - started < minMs) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
    if (samples.length >= 1000) break;
  }
  return median(samples);
}

function randomProfile(random: () => number, stages: number, microbatches: number, slowLinks: number): PipelineProfile {
  const u = (lo: number, hi: number) => lo + (hi - lo) * random();
  const fMs = Array.from({ length: stages }, () => u(8, 16));
  // The last stage often carries the LM head: sometimes make it markedly slower.
  if (random() < 0.5) fMs[stages - 1] *= u(1.2, 1.5);
  const linkMs = new Array<number>(stages - 1).fill(0.5);
  for (let k = 0; k < slowLinks; k++) linkMs[Math.floor(random() * (stages - 1))] = u(15, 120);
  // Device memory for 1x to 2x S microbatches of activations (Megatron's profile: 2S), B freeing
  // half and W the other half as in ZeroBubble.
  const activation = fMs.map(() => u(800, 1300));
  const limit = Math.round(u(1, 2) * stages);
  return {
    stages,
    microbatches,
    fMs,
    bMs: fMs.map((f) => f * u(0.9, 1.2)),
    wMs: fMs.map((f) => f * u(0.5, 0.9)),
    linkMs,
    memory: {
      afterF: activation,
      afterB: activation.map((a) => -a / 2),
      afterW: activation.map((a) => -a / 2),
      limit: activation.map((a) => a * limit),
    },
  };
}

/** Alg. 2 exactly as printed (floor, t^B_{i+1}, Δ_i <= N - 2S), kept here only to measure the departures in adaptive-planner.ts. */
function printedAlg2Warmup(model: PipelineModel): number[] {
  const { stages: S, microbatches: N, durations: d } = model;
  const x = new Array<number>(S);
  x[S - 1] = 1;
  for (let i = S - 2; i >= 0; i--) {
    const c = model.linkMs[i] + model.transferMs[i];
    const delta = Math.min(N - 2 * S, Math.max(Math.floor((d[i * 3] + d[(i + 1) * 3 + 1] + 2 * c) / (d[(i + 1) * 3] + d[(i + 1) * 3 + 1])), 2));
    x[i] = x[i + 1] + delta;
  }
  // The printed form can produce x_i < 1 or > N; clamp so it can run at all.
  for (let i = 0; i < S; i++) x[i] = Math.max(1, Math.min(N, x[i], i > 0 ? x[i - 1] : N));
  for (let i = S - 2; i >= 0; i--) x[i] = Math.max(x[i], x[i + 1]);
  return x;
}

interface GapStats {
  policy: string;
  meanGapPct: number;
  worstGapPct: number;
}

/** Evaluations of the reproducible search row. */
const SEARCH_EVALUATIONS = 400;
/** What the daemon's search planner runs with by default (config/default.json). */
const DAEMON_SEARCH = { maxEvaluations: DEFAULT_CONTROL_CONFIG.searchEvaluations!, timeBudgetMs: DEFAULT_CONTROL_CONFIG.searchBudgetMs };

function planQuality(cases: number) {
  const random = seededRandom(20261122);
  const policies = ['zb-static', '1f1b', 'initial', 'alg2-as-printed', 'adaptive', 'search', 'search-fixed', 'search-counts'] as const;
  let reproducible = true;
  /** Cases where the daemon's search stopped at its wall-clock safety cap, not its evaluation count (machine-dependent). */
  let daemonCapHits = 0;
  /** Cases where the per-op bound beats the per-stage one, and where the best plan found meets the bound (proven optimal). */
  let opBoundTighter = 0;
  let provenOptimal = 0;
  const gaps = new Map<string, number[]>(policies.map((p) => [p, []]));
  const searchUsedMs: number[] = [];
  const searchEvaluations: number[] = [];
  for (let c = 0; c < cases; c++) {
    const stages = [4, 6, 8][Math.floor(random() * 3)];
    const microbatches = stages * [2, 3, 4][Math.floor(random() * 3)];
    const profile = validateProfile(randomProfile(random, stages, microbatches, 1 + Math.floor(random() * 2)));
    const slow = toPipelineModel(profile);
    const healthy = toPipelineModel(profile, profile.linkMs.map(() => 0.5));
    const bound = iterationLowerBoundMs(slow);
    if (bound > stageLowerBoundMs(slow) + 1e-9) opBoundTighter++;
    const record = (policy: string, iterationMs: number) => gaps.get(policy)!.push((iterationMs / bound - 1) * 100);
    // A job without pipemorph: the ZeroBubble plan made while healthy, run unchanged under the stragglers.
    record('zb-static', simulateSchedule(slow, planPipeline(healthy, { policy: 'initial' }).run.order).iterationMs);
    record('1f1b', planPipeline(slow, { policy: '1f1b' }).run.iterationMs);
    record('initial', planPipeline(slow, { policy: 'initial' }).run.iterationMs);
    record('alg2-as-printed', generateSchedule(withHostMemory(slow), { warmup: printedAlg2Warmup(slow) }).iterationMs);
    record('adaptive', planPipeline(slow, { policy: 'adaptive' }).run.iterationMs);
    const search = planPipeline(slow, { policy: 'search', search: DAEMON_SEARCH });
    record('search', search.run.iterationMs);
    if (search.search!.timedOut) daemonCapHits++;
    searchUsedMs.push(search.search!.elapsedMs);
    searchEvaluations.push(search.search!.evaluations);
    // A time cap far above what 400 evaluations take: the count decides, so every machine gets these plans.
    const fixed = () => planPipeline(slow, { policy: 'search', search: { timeBudgetMs: 60_000, maxEvaluations: SEARCH_EVALUATIONS } });
    const first = fixed();
    record('search-fixed', first.run.iterationMs);
    if (first.run.iterationMs <= bound + 1e-6) provenOptimal++;
    if (c % 10 === 0 && fixed().run.iterationMs !== first.run.iterationMs) reproducible = false;
    record('search-counts', planPipeline(slow, { policy: 'search', search: { timeBudgetMs: 60_000, maxEvaluations: SEARCH_EVALUATIONS, richSchedules: false } }).run.iterationMs);
  }
  const stats: GapStats[] = policies.map((policy) => {
    const g = gaps.get(policy)!;
    return { policy, meanGapPct: g.reduce((a, b) => a + b, 0) / g.length, worstGapPct: Math.max(...g) };
  });
  const adaptive = stats.find((s) => s.policy === 'adaptive')!;
  const search = stats.find((s) => s.policy === 'search')!;
  for (const s of stats) console.log(JSON.stringify({ quality: s.policy, cases, meanGapPct: round(s.meanGapPct), worstGapPct: round(s.worstGapPct) }));
  const searchSummary = {
    daemonEvaluations: DAEMON_SEARCH.maxEvaluations,
    daemonSafetyCapMs: DAEMON_SEARCH.timeBudgetMs,
    daemonCapHits,
    medianUsedMs: round(median(searchUsedMs)),
    medianEvaluations: median(searchEvaluations),
    meanGapClosedPct: round(adaptive.meanGapPct > 0 ? (1 - search.meanGapPct / adaptive.meanGapPct) * 100 : 100),
    fixedEvaluations: SEARCH_EVALUATIONS,
    fixedReproducible: reproducible,
    opBoundTighterCases: opBoundTighter,
    searchFixedMeetsBoundCases: provenOptimal,
  };
  console.log(JSON.stringify({ searchVsAdaptive: searchSummary }));
  return { cases, policies: stats.map((s) => ({ policy: s.policy, meanGapPct: round(s.meanGapPct), worstGapPct: round(s.worstGapPct) })), search: searchSummary };
}

function withinDeviceMemory(cases: number) {
  const random = seededRandom(20261124);
  const gains = { adaptive: [] as number[], search: [] as number[] };
  const planMs: number[] = [];
  let worse = 0;
  let peakOverLimit = 0;
  for (let c = 0; c < cases; c++) {
    const stages = [4, 6, 8][Math.floor(random() * 3)];
    const microbatches = stages * [2, 3, 4][Math.floor(random() * 3)];
    const model = toPipelineModel(validateProfile(randomProfile(random, stages, microbatches, 1 + Math.floor(random() * 2))));
    const initial = planPipeline(model, { policy: 'initial' }).run.iterationMs;
    const adaptive = planPipeline(model, { policy: 'adaptive', memory: 'device' });
    const t0 = performance.now();
    const search = planPipeline(model, { policy: 'search', memory: 'device', search: { maxEvaluations: SEARCH_EVALUATIONS, timeBudgetMs: 60_000 } });
    planMs.push(performance.now() - t0);
    for (const [name, plan] of [['adaptive', adaptive], ['search', search]] as const) {
      gains[name].push((1 - plan.run.iterationMs / initial) * 100);
      if (plan.run.iterationMs > initial + 1e-9) worse++;
      plan.run.peakMemory!.forEach((peak, i) => (peakOverLimit = Math.max(peakOverLimit, peak / model.memLimit![i])));
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const result = {
    cases,
    searchEvaluations: SEARCH_EVALUATIONS,
    adaptiveGainPct: { mean: round(mean(gains.adaptive)), max: round(Math.max(...gains.adaptive)) },
    searchGainPct: { mean: round(mean(gains.search)), max: round(Math.max(...gains.search)) },
    worseThanInitial: worse,
    maxPeakOverLimit: round(peakOverLimit),
    searchMedianPlanMs: round(median(planMs)),
  };
  console.log(JSON.stringify({ deviceMemory: result }));
  return result;
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function speed(): Array<{ stages: number; microbatches: number; generateMs: number; simulateMs: number }> {
  const random = seededRandom(7);
  const rows = [];
  for (const stages of [4, 8, 16, 32, 64]) {
    for (const factor of [2, 4, 8]) {
      const microbatches = factor * stages;
      const model: PipelineModel = withHostMemory(toPipelineModel(validateProfile(randomProfile(random, stages, microbatches, 1))));
      const warmup = adaptiveWarmup(model);
      const order = generateSchedule(model, { warmup }).order;
      const generateMs = timeMedian(() => generateSchedule(model, { warmup }));
      const simulateMs = timeMedian(() => simulateSchedule(model, order));
      rows.push({ stages, microbatches, generateMs: round(generateMs), simulateMs: round(simulateMs) });
      console.error(`speed S=${stages} N=${microbatches}: generate ${generateMs.toFixed(3)} ms, simulate ${simulateMs.toFixed(3)} ms`);
    }
  }
  return rows;
}

async function againstOptimum(cases: number) {
  const highs: MilpSolver = await loadHighs();
  const random = seededRandom(20261123);
  const u = (lo: number, hi: number) => lo + (hi - lo) * random();
  const policies = ['initial', 'adaptive', 'search-counts', 'search', 'optimal'] as const;
  const rows: Array<Record<string, number | boolean>> = [];
  const search = { maxEvaluations: SEARCH_EVALUATIONS, timeBudgetMs: 60_000 };
  for (let c = 0; c < cases; c++) {
    const S = 4 + Math.floor(random() * 3);
    const N = 8 + Math.floor(random() * 5);
    const fMs = Array.from({ length: S }, () => u(5, 20));
    const linkMs = new Array<number>(S - 1).fill(0.5);
    const slow = 1 + Math.floor(random() * 2);
    for (let k = 0; k < slow; k++) linkMs[Math.floor(random() * (S - 1))] = u(15, 120);
    const model = toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs, bMs: fMs.map(() => u(5, 20)), wMs: fMs.map(() => u(5, 20)), linkMs }));
    const row: Record<string, number | boolean> = { stages: S, microbatches: N, lowerBoundMs: iterationLowerBoundMs(model) };
    for (const policy of ['initial', 'adaptive'] as const) {
      const t0 = performance.now();
      row[policy] = planPipeline(model, { policy }).run.iterationMs;
      row[`${policy}PlanMs`] = performance.now() - t0;
    }
    const t1 = performance.now();
    row['search-counts'] = planPipeline(model, { policy: 'search', search: { ...search, richSchedules: false, polishNodes: 0 } }).run.iterationMs;
    row['search-countsPlanMs'] = performance.now() - t1;
    const found = planPipeline(model, { policy: 'search', search });
    row.search = found.run.iterationMs;
    row.searchPlanMs = found.search!.elapsedMs;
    row.searchEvaluations = found.search!.evaluations;
    const t0 = performance.now();
    const exact = planPipeline(model, { policy: 'optimal', search, optimal: { solver: highs, timeLimitMs: 2000 } });
    row.optimalPlanMs = performance.now() - t0;
    row.optimalSolveMs = row.optimalPlanMs - exact.search!.elapsedMs;
    row.optimal = exact.run.iterationMs;
    row.proven = exact.optimal!.proven;
    row.boundMs = Math.max(exact.optimal!.boundMs, row.lowerBoundMs as number);
    // The search's plans must not depend on the machine: plan again and compare.
    if (planPipeline(model, { policy: 'search', search }).run.iterationMs !== found.run.iterationMs) throw new Error('search not reproducible');
    console.error(`optimum #${c} S=${S} N=${N}: search ${row.search} optimal ${row.optimal} bound ${row.boundMs} proven ${row.proven} in ${(row.optimalSolveMs as number).toFixed(0)} ms`);
    rows.push(row);
  }
  const proven = rows.filter((r) => r.proven);
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const solve = rows.map((r) => r.optimalSolveMs as number);
  return {
    cases,
    provenOptimal: proven.length,
    timeLimitMs: 2000,
    policies: policies.map((policy) => {
      const toOptimum = proven.map((r) => ((r[policy] as number) / (r.optimal as number) - 1) * 100);
      const toBound = rows.map((r) => ((r[policy] as number) / (r.boundMs as number) - 1) * 100);
      return {
        policy,
        meanGapToOptimumPct: round(mean(toOptimum)),
        worstGapToOptimumPct: round(Math.max(...toOptimum)),
        meanGapToBoundPct: round(mean(toBound)),
        worstGapToBoundPct: round(Math.max(...toBound)),
        medianPlanMs: round(median(rows.map((r) => r[`${policy}PlanMs`] as number))),
        ...(policy === 'search' ? { medianEvaluations: median(rows.map((r) => r.searchEvaluations as number)) } : {}),
        ...(policy === 'search-counts' ? { medianEvaluations: SEARCH_EVALUATIONS } : {}),
      };
    }),
    optimalSolveMs: { median: round(median(solve)), max: round(Math.max(...solve)) },
  };
}

/** The daemon's default search on an 8 x 32 job with one slow link (60 ms): evaluations and planning time. */
function daemonPlan() {
  const random = seededRandom(832);
  const profile = validateProfile(randomProfile(random, 8, 32, 0));
  const slow = toPipelineModel(profile, profile.linkMs.map((d, i) => (i === 3 ? 60 : d)));
  const plan = () => planPipeline(slow, { policy: 'search', search: DAEMON_SEARCH });
  const first = plan();
  const planMs = timeMedian(plan, 5, 0);
  const bound = iterationLowerBoundMs(slow);
  const result = {
    stages: 8,
    microbatches: 32,
    slowLinkMs: 60,
    evaluations: first.search!.evaluations,
    timedOut: first.search!.timedOut,
    medianPlanMs: round(planMs),
    gapToBoundPct: round((first.run.iterationMs / bound - 1) * 100),
    adaptiveGapToBoundPct: round((planPipeline(slow, { policy: 'adaptive' }).run.iterationMs / bound - 1) * 100),
  };
  console.log(JSON.stringify({ daemonPlan: result }));
  return result;
}

/** Wall time of `optimalPlan` against its limit on jobs too large to prove (see the header, 5). */
async function timeLimit() {
  const highs: MilpSolver = await loadHighs();
  const rows = [];
  for (const [S, N] of [[8, 32], [16, 64]]) {
    const random = seededRandom(1);
    const u = (lo: number, hi: number) => lo + (hi - lo) * random();
    const hard = { fMs: Array.from({ length: S }, () => u(5, 20)), bMs: Array.from({ length: S }, () => u(5, 20)), wMs: Array.from({ length: S }, () => u(5, 20)) };
    // Links slow enough that the bound is not met (on 16 stages it takes longer ones).
    const [hardLinks, hardDelay] = S === 8 ? [[1, 4], 250] : [[3, 9], 700];
    const hardJob = `op times 5-20 ms, links ${hardLinks.join(' and ')} +${hardDelay} ms`;
    const jobs = [
      { job: 'uniform, one link +60 ms', op: { fMs: new Array<number>(S).fill(10), bMs: new Array<number>(S).fill(10), wMs: new Array<number>(S).fill(10) }, slow: [S - 2], delay: 60, depthFirst: true },
      { job: hardJob, op: hard, slow: hardLinks, delay: hardDelay, depthFirst: true },
      { job: `${hardJob}, MILP alone`, op: hard, slow: hardLinks, delay: hardDelay, depthFirst: false },
    ];
    for (const { job, op, slow, delay, depthFirst } of jobs) {
      const linkMs = new Array<number>(S - 1).fill(0.5);
      for (const l of slow) linkMs[l] += delay;
      const model = toPipelineModel(validateProfile({ stages: S, microbatches: N, ...op, linkMs }));
      const warm = planPipeline(model, { policy: 'search', search: { maxEvaluations: 200, timeBudgetMs: 60_000 } }).run;
      for (const limitMs of [200, 2000]) {
        const t0 = performance.now();
        const result = optimalPlan(model, highs, warm, { timeLimitMs: limitMs, depthFirst });
        const wallMs = performance.now() - t0;
        const row = { stages: S, microbatches: N, job, limitMs, wallMs: round(wallMs), overPct: round((wallMs / limitMs - 1) * 100), proven: result.proven, gapPct: round(result.gap * 100) };
        console.error(JSON.stringify({ timeLimit: row }));
        rows.push(row);
      }
    }
  }
  return { rows, worstOverPct: round(Math.max(...rows.map((r) => r.overPct))), worstOverMs: round(Math.max(...rows.map((r) => r.wallMs - r.limitMs))) };
}

void (async () => {
  if (process.env.ENGINE_BENCH_ONLY === 'time-limit') {
    console.log(JSON.stringify({ timeLimit: await timeLimit() }));
    return;
  }
  // ENGINE_BENCH_ONLY=optimum runs only the comparison against the optimum and writes nothing (to iterate on the exact planner).
  if (process.env.ENGINE_BENCH_ONLY === 'optimum') {
    const optimum = await againstOptimum(24);
    console.log(JSON.stringify({ optimum: { provenOptimal: optimum.provenOptimal, optimalSolveMs: optimum.optimalSolveMs } }));
    return;
  }
  const stamp = startStamp();
  const quality = planQuality(100);
  const optimum = await againstOptimum(24);
  for (const p of optimum.policies) console.log(JSON.stringify({ optimum: p.policy, ...p }));
  const deviceMemory = withinDeviceMemory(40);
  const limits = await timeLimit();
  const json = JSON.stringify({ bench: 'engine', quality, optimum, timeLimit: limits, deviceMemory, daemonPlan: daemonPlan(), speed: speed(), stamp: stamp() });
  const results = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'engine.json'), `${json}\n`);
  console.log(json);
})();
