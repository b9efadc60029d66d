import { EngineRun } from '../engine/engine-run.type';
import { simulateSchedule } from '../engine/simulator';
import { InputError } from '../input-error';
import { encodeOp, OP_B, OP_F, OP_W } from '../pipeline/op';
import { effectiveLinkDelayMs } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { iterationLowerBoundMs, opHeadsAndTails } from './lower-bound';

/**
 * The part of the `highs` package (HiGHS in WebAssembly) the optimal planner uses. The caller
 * loads the package and passes it in, so the core stays free of I/O and of the async wasm load.
 */
export interface MilpSolver {
  createModel(source: { format: 'lp'; data: string }): MilpModel;
}

export interface MilpModel {
  readonly options: { set(values: Record<string, number | string | boolean>): unknown };
  readonly info: { get(name: string): unknown };
  setSolution(solution: { indices: Int32Array; values: Float64Array }): unknown;
  run(): unknown;
  getModelStatus(): number;
  getSolution(): { colValue: ArrayLike<number> };
  getColByName(name: string): number;
  dispose(): void;
}

export interface OptimalOptions {
  /** Solver time limit, ms (default 2000); the best schedule found so far is returned when it runs out. */
  timeLimitMs?: number;
}

export interface OptimalResult {
  run: EngineRun;
  /** Proven lower bound on the iteration time: the MILP's dual bound or the combinatorial bound, whichever is larger. */
  boundMs: number;
  /** (iterationMs - boundMs) / boundMs: at most the solver's relative gap when proven optimal on links without queueing. */
  gap: number;
  /** True when HiGHS proved the schedule optimal (within 1e-6 relative). */
  proven: boolean;
  /** True when the MILP found nothing better than the warm start, which is then returned. */
  warmStartKept: boolean;
  /** The MILP's own value of its best schedule (null when it solved nothing); the replay must equal it. */
  milpObjectiveMs: number | null;
}

const HIGHS_OPTIMAL = 7;
const RELATIVE_GAP = 1e-6;

interface Op {
  stage: number;
  kind: number;
  microbatch: number;
  name: string;
  p: number;
  est: number;
  lst: number;
}

/**
 * Exact schedule by MILP: a start time per op; precedence (F down the pipeline through the link
 * delays, B back up, B after F and W after B on a stage); ops of one kind on one stage run in
 * microbatch order (interchangeable, so no optimality is lost), so only F/B, F/W and B/W pairs
 * need an ordering binary, and only where the pair's time windows overlap. Windows come from the
 * op heads and tails (longest paths) and a horizon, the warm start's iteration time, so big-M is
 * per pair and small. Links are latency plus transfer without queueing and memory is relaxed to
 * the host, as for `search`: with bandwidth-limited links the MILP's value is a bound and the
 * replay through the simulator is the truth. The result is always the replayed schedule.
 */
export function optimalPlan(model: PipelineModel, solver: MilpSolver, warmStart: EngineRun, options: OptimalOptions = {}): OptimalResult {
  const { stages: S, microbatches: N, durations: d } = model;
  const horizon = warmStart.iterationMs;
  const combinatorial = iterationLowerBoundMs(model);
  if (horizon <= combinatorial * (1 + RELATIVE_GAP)) {
    // The warm start meets the combinatorial bound: proven optimal without a solve.
    return { run: warmStart, boundMs: combinatorial, gap: combinatorial > 0 ? Math.max(0, horizon / combinatorial - 1) : 0, proven: true, warmStartKept: true, milpObjectiveMs: null };
  }
  const heads = opHeadsAndTails(model);
  const r = [heads.rF, heads.rB, heads.rW];
  const q = [heads.qF, heads.qB, heads.qW];
  const ops: Op[][] = []; // [stage][kind * N + microbatch]
  for (let i = 0; i < S; i++) {
    const row: Op[] = [];
    for (let k = 0; k < 3; k++) {
      for (let j = 0; j < N; j++) {
        const p = d[i * 3 + k];
        const est = r[k][i * N + j];
        row.push({ stage: i, kind: k, microbatch: j, name: `${'fbw'[k]}_${i}_${j}`, p, est, lst: Math.max(est, horizon - p - q[k][i * N + j]) });
      }
    }
    ops.push(row);
  }
  const op = (i: number, k: number, j: number) => ops[i][k * N + j];
  const rows: string[] = [];
  const num = (x: number) => (Math.abs(x) < 1e-12 ? '0' : String(x));
  const after = (later: Op, earlier: Op, gap: number) => rows.push(`${later.name} - ${earlier.name} >= ${num(gap)}`);
  for (let i = 0; i < S; i++) {
    for (let j = 0; j < N; j++) {
      if (i > 0) after(op(i, OP_F, j), op(i - 1, OP_F, j), d[(i - 1) * 3] + effectiveLinkDelayMs(model, i - 1));
      if (i < S - 1) after(op(i, OP_B, j), op(i + 1, OP_B, j), d[(i + 1) * 3 + 1] + effectiveLinkDelayMs(model, i));
      after(op(i, OP_B, j), op(i, OP_F, j), d[i * 3]);
      after(op(i, OP_W, j), op(i, OP_B, j), d[i * 3 + 1]);
      if (j > 0) for (let k = 0; k < 3; k++) after(op(i, k, j), op(i, k, j - 1), d[i * 3 + k]);
    }
  }
  const binaries: string[] = [];
  // Ordering binaries: y = 1 puts a before b. Pairs whose order precedence or windows decide get none.
  const pairs: Array<[string, Op, Op]> = [];
  // Per op, the work its stage must run after it ends and before it starts: constants from
  // precedence (ops of one kind in microbatch order, B/W after F/B of the same microbatch) and
  // windows, plus one term per ordering binary. These cuts tie the binaries to the objective,
  // which the big-M rows alone barely do in the LP relaxation.
  const work = new Map<Op, { after: number; afterTerms: string[]; before: number; beforeTerms: string[] }>();
  for (let i = 0; i < S; i++) {
    const [f, b, w] = [d[i * 3], d[i * 3 + 1], d[i * 3 + 2]];
    for (let j = 0; j < N; j++) {
      const after = [(N - 1 - j) * f + (N - j) * (b + w), (N - 1 - j) * b + (N - j) * w, (N - 1 - j) * w];
      const before = [j * f, (j + 1) * f + j * b, (j + 1) * (f + b) + j * w];
      for (let k = 0; k < 3; k++) work.set(op(i, k, j), { after: after[k], afterTerms: [], before: before[k], beforeTerms: [] });
    }
  }
  for (let i = 0; i < S; i++) {
    for (const [ka, kb] of [[OP_F, OP_B], [OP_F, OP_W], [OP_B, OP_W]]) {
      for (let ja = 0; ja < N; ja++) {
        for (let jb = 0; jb < ja; jb++) {
          const a = op(i, ka, ja);
          const b = op(i, kb, jb);
          const aFirstPossible = a.est + a.p <= b.lst + 1e-9;
          const bFirstPossible = b.est + b.p <= a.lst + 1e-9;
          if (!aFirstPossible || !bFirstPossible) {
            // The windows decide the order: no binary, one precedence row.
            const [first, second] = aFirstPossible ? [a, b] : [b, a];
            after(second, first, first.p);
            work.get(first)!.after += second.p;
            work.get(second)!.before += first.p;
            continue;
          }
          const y = `y_${binaries.length}`;
          binaries.push(y);
          pairs.push([y, a, b]);
          work.get(a)!.afterTerms.push(`- ${num(b.p)} ${y}`);
          work.get(b)!.afterTerms.push(`+ ${num(a.p)} ${y}`);
          work.get(b)!.after += a.p;
          work.get(a)!.beforeTerms.push(`+ ${num(b.p)} ${y}`);
          work.get(a)!.before += b.p;
          work.get(b)!.beforeTerms.push(`- ${num(a.p)} ${y}`);
          const m1 = a.lst + a.p - b.est;
          const m2 = b.lst + b.p - a.est;
          rows.push(`${a.name} - ${b.name} + ${num(m1)} ${y} <= ${num(m1 - a.p)}`);
          rows.push(`${b.name} - ${a.name} - ${num(m2)} ${y} <= ${num(-b.p)}`);
        }
      }
    }
  }
  for (const [o, v] of work) {
    const tail = q[o.kind][o.stage * N + o.microbatch];
    // Nothing in the binaries makes the tail longer; the successors' work is a sum, the tail a max.
    rows.push(`C - ${o.name} ${v.afterTerms.join(' ')} >= ${num(o.p + v.after)}`);
    if (tail > v.after) rows.push(`C - ${o.name} >= ${num(o.p + tail)}`);
    const first = op(o.stage, OP_F, 0);
    if (o !== first) rows.push(`${o.name} - ${first.name} ${v.beforeTerms.join(' ')} >= ${num(v.before)}`);
  }
  const bounds: string[] = [`${num(combinatorial)} <= C <= ${num(horizon)}`];
  for (const row of ops) for (const o of row) bounds.push(`${num(o.est)} <= ${o.name} <= ${num(o.lst)}`);
  const lp = [
    'Minimize',
    ' obj: C',
    'Subject To',
    ...rows.map((row, n) => ` c${n}: ${row}`),
    'Bounds',
    ...bounds.map((b) => ` ${b}`),
    ...(binaries.length ? ['Binaries', ` ${binaries.join(' ')}`] : []),
    'End',
  ].join('\n');

  const milp = solver.createModel({ format: 'lp', data: lp });
  try {
    milp.options.set({ output_flag: false, time_limit: (options.timeLimitMs ?? 2000) / 1000, mip_rel_gap: RELATIVE_GAP });
    const startOf = (o: Op) => warmStart.start[o.stage * 3 * N + encodeOp(o.kind, o.microbatch)];
    const names: string[] = ['C'];
    const values: number[] = [horizon];
    for (const row of ops) for (const o of row) (names.push(o.name), values.push(startOf(o)));
    for (const [y, a, b] of pairs) (names.push(y), values.push(startOf(a) < startOf(b) ? 1 : 0));
    milp.setSolution({ indices: Int32Array.from(names, (n) => milp.getColByName(n)), values: Float64Array.from(values) });
    milp.run();
    const proven = milp.getModelStatus() === HIGHS_OPTIMAL;
    const dual = Number(milp.info.get('mip_dual_bound'));
    const boundFromSolver = proven ? Number(milp.info.get('objective_function_value')) * (1 - RELATIVE_GAP) : dual;
    let run = warmStart;
    let warmStartKept = true;
    let milpObjectiveMs: number | null = null;
    if (Number(milp.info.get('primal_solution_status')) === 2) {
      const x = milp.getSolution().colValue;
      milpObjectiveMs = Number(milp.info.get('objective_function_value'));
      const schedule = ops.map((row) => {
        // Starts rounded to the solver's tolerance, so that ties (zero-length ops) keep precedence
        // order: F before B before W, then by microbatch.
        const tick = 1e-6 * Math.max(1, horizon);
        const placed = row.map((o) => ({ o, s: Math.round(x[milp.getColByName(o.name)] / tick) }));
        placed.sort((u, v) => u.s - v.s || u.o.kind - v.o.kind || u.o.microbatch - v.o.microbatch);
        return Int32Array.from(placed, ({ o }) => encodeOp(o.kind, o.microbatch));
      });
      let replay: EngineRun | null = null;
      try {
        replay = simulateSchedule(model, schedule);
      } catch (error) {
        // Within the solver's tolerances an order of ops of zero length can come out cyclic: keep the warm start.
        if (!(error instanceof InputError)) throw error;
      }
      if (replay && replay.iterationMs <= warmStart.iterationMs) {
        run = replay;
        warmStartKept = false;
      }
    }
    const boundMs = Math.max(combinatorial, Number.isFinite(boundFromSolver) ? boundFromSolver : 0);
    const gap = boundMs > 0 ? Math.max(0, (run.iterationMs - boundMs) / boundMs) : 0;
    return { run, boundMs, gap, proven, warmStartKept, milpObjectiveMs };
  } finally {
    milp.dispose();
  }
}
