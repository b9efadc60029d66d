import { EngineRun } from '../engine/engine-run.type';
import { encodeOp, OP_B, OP_F, OP_W } from '../pipeline/op';
import { effectiveLinkDelayMs } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { iterationLowerBoundMs, OpHeadsAndTails, opHeadsAndTails } from './lower-bound';
import { propagatedWindows } from './op-windows';
import { OpWindows } from './op-windows.type';
import { DeadEnds } from './dead-ends';
import { replayOrder } from './replay-order';
import { scheduleWithin } from './schedule-within';

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
  /** Handlers on HiGHS's interrupt channels (1 simplex, 2 interior point, 6 MIP), called at its checkpoints. */
  run(callbacks?: MilpInterrupts): unknown;
  getModelStatus(): number;
  getSolution(): { colValue: ArrayLike<number> };
  getColByName(name: string): number;
  dispose(): void;
}

export type MilpInterrupt = (event: { interrupt(): void }) => undefined;
export interface MilpInterrupts {
  readonly 1?: MilpInterrupt;
  readonly 2?: MilpInterrupt;
  readonly 6?: MilpInterrupt;
}

export interface OptimalOptions {
  /**
   * Time limit of the whole call, ms (default 2000); the best schedule found so far is returned
   * when it runs out. Every phase checks it: the window propagation, the depth-first searches, the
   * LP's construction, HiGHS (its own limit and an interrupt at its checkpoints), and an LP whose
   * parse would not fit in the time left is not built.
   */
  timeLimitMs?: number;
  /** Injected clock, ms (default performance.now): the time limit spans every solve. */
  now?: () => number;
  /** Run the depth-first search before the MILP (default true); false leaves the MILP alone, for tests and comparisons. */
  depthFirst?: boolean;
  /** Extra HiGHS options, applied after the planner's own (for experiments). */
  highsOptions?: Record<string, number | string | boolean>;
}

export interface OptimalResult {
  run: EngineRun;
  /**
   * Proven lower bound on the iteration time: the largest of the combinatorial bound, the MILP's
   * dual bound and every target proven out of reach (by the windows, an exhausted depth-first
   * search or the MILP).
   */
  boundMs: number;
  /** (iterationMs - boundMs) / boundMs: at most the solver's relative gap when proven optimal on links without queueing. */
  gap: number;
  /** True when the schedule is proven optimal (within 1e-6 relative). */
  proven: boolean;
  /**
   * True when the relaxed problem (the model without its transport: no head-of-line blocking, no
   * delegate queues) is settled: the call stopped there, not at its time limit. The same as
   * `proven` on a model without a transport.
   */
  settled: boolean;
  /** True when nothing better than the warm start was found; it is then returned. */
  warmStartKept: boolean;
  /** The MILP's own value of the last schedule it found (null when it found none, e.g. the depth-first search did); the replay must equal it. */
  milpObjectiveMs: number | null;
}

const HIGHS_OPTIMAL = 7;
const HIGHS_INFEASIBLE = 8;
const HIGHS_TIME_LIMIT = 13;
const HIGHS_INTERRUPTED = 17;
const RELATIVE_GAP = 1e-6;
const EPS = 1e-9;
/**
 * Within this relative gap the bisection stops halving and asks for strictly better than the best:
 * the depth-first search finds a better schedule near the optimum or proves there is none about
 * as fast as it settles a target halfway (at 2e-3, bench instance #23 took four proofs where the
 * last sufficed).
 */
const CLOSE_GAP = 1e-2;
/** HiGHS's default (0.05) rarely finds a schedule at the bound within the time limit; 1 finds most. */
const HEURISTIC_EFFORT = 1;
/** Node budget and share of the time left for the depth-first search before each MILP. */
const DFS_NODES = 1_000_000;
const DFS_SHARE = 0.25;
/** At a bound HiGHS's dual bound just set (the optimum often meets it) the search gets most of the time left. */
const DFS_SHARE_AT_BOUND = 0.75;
const DFS_SHARE_REPEAT = 0.1;
/**
 * Strictly below the best, with the depth-first search, HiGHS gets this share of the time left,
 * then the search again (it resumes: its dead ends carry over), and so on: each settles targets
 * the other does not (bench #13: the search in about 0.4 s, HiGHS not in 2; #17 the other way).
 */
const MILP_SHARE_CLOSING = 0.3;
/** Relative slacks above the lower bound tried first, and the node budget of each (a few ms). */
const LADDER = [0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05];
const LADDER_NODES = 20_000;
/** And at most this share of the time limit each: a node costs a few microseconds, more under load. */
const LADDER_SHARE = 0.04;
/**
 * HiGHS works without checkpoints for a time that grows with the model: parsing the LP text, then
 * its MIP setup and presolve passes, which look at time_limit only between them (a 1 s limit on an
 * 8 x 32 model ran 1.3-1.9 s, and the interrupt callbacks do not fire there either). The planner
 * estimates both from the text's length, at the rates seen on this solver's large models (the
 * latest, or 0.7 times the one before when that is higher: one fast run does not erase a slow
 * one; before any, what the development machine showed under load), with a margin: it builds no model
 * whose estimated cost exceeds PARSE_SHARE of the time left and gives HiGHS the time left minus
 * the overrun it expects.
 */
const DEFAULT_RATES = { parseMsPerChar: 6e-4, overrunMsPerChar: 1e-3 };
const RATE_DECAY = 0.7;
const MIN_MS_PER_CHAR = 2e-5;
const RATE_MARGIN = 1.5;
const PARSE_SHARE = 0.5;
/** Models this long or longer calibrate the rates (shorter ones are dominated by fixed costs). */
const CALIBRATION_CHARS = 50_000;
const solverRates = new WeakMap<MilpSolver, { parseMsPerChar: number; overrunMsPerChar: number }>();

interface Op {
  stage: number;
  kind: number;
  microbatch: number;
  name: string;
  p: number;
  est: number;
  lst: number;
}

/** Whether one op runs before another on their stage: fixed (1 or 0) or an ordering binary (1 = before). */
type Order = 0 | 1 | string;

/** A linear expression: constant plus coefficient per column. */
class Expr {
  constant = 0;
  readonly terms = new Map<string, number>();
  add(coef: number, order: Order | 'C' | Op): this {
    if (order === 0) return this;
    if (order === 1) this.constant += coef;
    else {
      const name = typeof order === 'string' ? order : order.name;
      this.terms.set(name, (this.terms.get(name) ?? 0) + coef);
    }
    return this;
  }
  /** coef * (1 - order): the complement of an ordering. */
  addNot(coef: number, order: Order): this {
    return this.add(coef, 1).add(-coef, order);
  }
}

const num = (x: number) => (Math.abs(x) < 1e-12 ? '0' : String(x));

/** `expr >= 0` as an LP row, or null when no column is left (then it holds or the caller knows it fails). */
function atLeastZero(expr: Expr): string | null {
  const terms = [...expr.terms].filter(([, c]) => Math.abs(c) > 1e-12);
  if (!terms.length) return null;
  return `${terms.map(([n, c]) => `${c < 0 ? '-' : '+'} ${num(Math.abs(c))} ${n}`).join(' ')} >= ${num(-expr.constant)}`;
}

/**
 * When to give up building the LP: at the deadline, or once its text outgrows what HiGHS could
 * parse in the time left (parsing runs in the wasm and cannot be interrupted).
 */
interface BuildLimits {
  deadline: number;
  now: () => number;
  maxChars: number;
}

/** Every ordering binary brings at least its two big-M rows, each longer than this. */
const MIN_CHARS_PER_BINARY = 2 * 30;

interface BuiltMilp {
  lp: string;
  ops: Op[][];
  /** Whether x runs before y on their stage (ops of different kinds): fixed, or an ordering binary, possibly negated. */
  before(x: Op, y: Op): { order: Order; negated: boolean };
}

/**
 * The MILP for "a schedule with iteration time at most `target`", or null when the op windows
 * alone rule one out. Windows: op heads (longest paths in) and `target` minus the op tails, so
 * the lower the target the more pairs the windows order and the smaller each big-M. Each pair
 * kind on a stage (F/B, F/W, B/W) is an N x N matrix of orderings Y[ja][jb] (op of the first
 * kind, microbatch ja, before op of the second kind, microbatch jb), which is 1 for ja <= jb
 * (chains and F_j < B_j < W_j) and monotone: 1 towards smaller ja and larger jb, 0 the other
 * way. So fixings from windows spread along the matrix, the monotone rows cut the symmetric
 * half-orders. (Transitivity rows over (F_a, B_b, W_c) were tried: no faster, and for N = 12 they
 * are most of the model's rows.)
 */
function buildMilp(model: PipelineModel, heads: OpHeadsAndTails, windows: OpWindows, target: number, lowerBound: number, limits: BuildLimits): BuiltMilp | null | 'too-large' {
  const { stages: S, microbatches: N, durations: d } = model;
  const q = [heads.qF, heads.qB, heads.qW];
  const ops: Op[][] = [];
  for (let i = 0; i < S; i++) {
    const row: Op[] = [];
    for (let k = 0; k < 3; k++) {
      for (let j = 0; j < N; j++) {
        const g = (i * 3 + k) * N + j;
        const p = d[i * 3 + k];
        row.push({ stage: i, kind: k, microbatch: j, name: `${'fbw'[k]}_${i}_${j}`, p, est: windows.est[g], lst: Math.max(windows.est[g], windows.lct[g] - p) });
      }
    }
    ops.push(row);
  }
  const op = (i: number, k: number, j: number) => ops[i][k * N + j];
  const rows: string[] = [];
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
  const KIND_PAIRS: Array<[number, number]> = [[OP_F, OP_B], [OP_F, OP_W], [OP_B, OP_W]];
  // orders[i][pair][ja * N + jb]
  const orders: Order[][][] = [];
  for (let i = 0; i < S; i++) {
    if (limits.now() >= limits.deadline || binaries.length * MIN_CHARS_PER_BINARY > limits.maxChars) return 'too-large';
    const perPair: Order[][] = [];
    for (const [ka, kb] of KIND_PAIRS) {
      const fixed = new Int8Array(N * N).fill(-1);
      for (let ja = 0; ja < N; ja++) {
        for (let jb = 0; jb < N; jb++) {
          if (ja <= jb) {
            fixed[ja * N + jb] = 1;
            continue;
          }
          const a = op(i, ka, ja);
          const b = op(i, kb, jb);
          const aFirst = a.est + a.p <= b.lst + EPS;
          const bFirst = b.est + b.p <= a.lst + EPS;
          if (!aFirst && !bFirst) return null;
          if (!aFirst) fixed[ja * N + jb] = 0;
          else if (!bFirst) fixed[ja * N + jb] = 1;
        }
      }
      // Spread: a 1 at (ja, jb) holds for every smaller ja and larger jb; a 0 the other way.
      const one = new Uint8Array(N * N);
      const zero = new Uint8Array(N * N);
      for (let ja = N - 1; ja >= 0; ja--) {
        for (let jb = 0; jb < N; jb++) {
          const c = ja * N + jb;
          one[c] = fixed[c] === 1 || (ja < N - 1 && one[c + N] === 1) || (jb > 0 && one[c - 1] === 1) ? 1 : 0;
        }
      }
      for (let ja = 0; ja < N; ja++) {
        for (let jb = N - 1; jb >= 0; jb--) {
          const c = ja * N + jb;
          zero[c] = fixed[c] === 0 || (ja > 0 && zero[c - N] === 1) || (jb < N - 1 && zero[c + 1] === 1) ? 1 : 0;
        }
      }
      const matrix: Order[] = [];
      for (let c = 0; c < N * N; c++) {
        if (one[c] && zero[c]) return null;
        if (one[c]) matrix.push(1);
        else if (zero[c]) matrix.push(0);
        else {
          const y = `y_${binaries.length}`;
          binaries.push(y);
          matrix.push(y);
        }
      }
      perPair.push(matrix);
    }
    orders.push(perPair);
  }
  const pairIndex = (ka: number, kb: number) => (ka === OP_F ? (kb === OP_B ? 0 : 1) : 2);
  /** Whether x runs before y on their stage (different kinds). */
  const before = (x: Op, y: Op): { order: Order; negated: boolean } => {
    const m = orders[x.stage];
    if (x.kind < y.kind) return { order: m[pairIndex(x.kind, y.kind)][x.microbatch * N + y.microbatch], negated: false };
    return { order: m[pairIndex(y.kind, x.kind)][y.microbatch * N + x.microbatch], negated: true };
  };
  const addBefore = (e: Expr, coef: number, x: Op, y: Op) => {
    const { order, negated } = before(x, y);
    return negated ? e.addNot(coef, order) : e.add(coef, order);
  };
  const push = (e: Expr) => {
    const row = atLeastZero(e);
    if (row) rows.push(row);
  };
  if (binaries.length * MIN_CHARS_PER_BINARY > limits.maxChars) return 'too-large';
  let chars = 0;
  let counted = 0;
  for (let i = 0; i < S; i++) {
    for (; counted < rows.length; counted++) chars += rows[counted].length + 8;
    if (limits.now() >= limits.deadline || chars > limits.maxChars) return 'too-large';
    KIND_PAIRS.forEach(([ka, kb], pi) => {
      const m = orders[i][pi];
      // Pairs the windows order need their precedence row (only the nearest per microbatch of the
      // second kind: the chains give the rest).
      for (let jb = 0; jb < N; jb++) {
        let lastBefore = -1;
        let firstAfter = N;
        for (let ja = jb + 1; ja < N; ja++) {
          if (m[ja * N + jb] === 1) lastBefore = ja;
          if (m[ja * N + jb] === 0) firstAfter = Math.min(firstAfter, ja);
        }
        if (lastBefore >= 0) after(op(i, kb, jb), op(i, ka, lastBefore), d[i * 3 + ka]);
        if (firstAfter < N) after(op(i, ka, firstAfter), op(i, kb, jb), d[i * 3 + kb]);
      }
      for (let ja = 0; ja < N; ja++) {
        for (let jb = 0; jb < N; jb++) {
          const y = m[ja * N + jb];
          if (typeof y !== 'string') continue;
          const a = op(i, ka, ja);
          const b = op(i, kb, jb);
          // Big-M per pair from the windows: y = 1 puts a before b, y = 0 b before a.
          const m1 = a.lst + a.p - b.est;
          const m2 = b.lst + b.p - a.est;
          rows.push(`${a.name} - ${b.name} + ${num(m1)} ${y} <= ${num(m1 - a.p)}`);
          rows.push(`${b.name} - ${a.name} - ${num(m2)} ${y} <= ${num(-b.p)}`);
          if (ja + 1 < N && typeof m[(ja + 1) * N + jb] === 'string') rows.push(`${y} - ${m[(ja + 1) * N + jb]} >= 0`);
          if (jb + 1 < N && typeof m[ja * N + jb + 1] === 'string') rows.push(`${m[ja * N + jb + 1]} - ${y} >= 0`);
        }
      }
    });
    // Stage workload: whatever runs after an op on its stage delays C, whatever runs before it delays its start.
    const first = op(i, OP_F, 0);
    for (const o of ops[i]) {
      const toEnd = new Expr().add(1, 'C').add(-1, o).add(-o.p, 1);
      const fromFirst = new Expr().add(1, o).add(-1, first);
      for (const x of ops[i]) {
        if (x === o) continue;
        if (x.kind === o.kind) {
          if (x.microbatch > o.microbatch) toEnd.add(-x.p, 1);
          else fromFirst.add(-x.p, 1);
        } else {
          addBefore(toEnd, -x.p, o, x);
          addBefore(fromFirst, -x.p, x, o);
        }
      }
      push(toEnd);
      if (o !== first) push(fromFirst);
      const tail = q[o.kind][o.stage * N + o.microbatch];
      rows.push(`C - ${o.name} >= ${num(o.p + tail)}`);
    }
  }
  const bounds: string[] = [`${num(lowerBound)} <= C <= ${num(target)}`];
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
  return { lp, ops, before };
}

/**
 * Exact schedule by MILP: a start time per op; precedence (F down the pipeline through the link
 * delays, B back up, B after F and W after B on a stage); ops of one kind on one stage run in
 * microbatch order (interchangeable, so no optimality is lost), so only F/B, F/W and B/W pairs
 * need ordering binaries (see `buildMilp`). Each solve asks for a schedule within a target
 * iteration time, and the target, not a loose horizon, sets the op windows: first the lower
 * bound (on these pipelines the optimum often meets it, and so tight a target orders most pairs
 * by propagation alone), then halfway to the best schedule, then strictly below the best; an
 * infeasible target raises the proven bound, a schedule found lowers the best, until they meet
 * (within 1e-6 relative) or the time runs out.
 * Links are latency plus transfer without queueing and memory is relaxed to the host, as for
 * `search`: with bandwidth-limited links the MILP's value is a bound and the replay through the
 * simulator is the truth. The result is always the replayed schedule.
 */
export function optimalPlan(model: PipelineModel, solver: MilpSolver, warmStart: EngineRun, options: OptimalOptions = {}): OptimalResult {
  const combinatorial = iterationLowerBoundMs(model);
  const now = options.now ?? (() => performance.now());
  const deadline = now() + (options.timeLimitMs ?? 2000);
  let run = warmStart;
  let bound = combinatorial;
  let proven = run.iterationMs <= combinatorial * (1 + RELATIVE_GAP);
  // Under a transport (head-of-line blocking, delegate queues) the searches and the MILP see the
  // relaxed model, so no target below the best replay can be proven out of reach: the bisection
  // ran every call to its time limit for nothing (bench:optimal-line's columns under the transport
  // show what a call costs and gains now, against control.minGain's 3%). It
  // bisects on the relaxed value instead and stops once the relaxed problem is settled; the
  // result is the best replay under the transport of every schedule it saw. Without a transport
  // the two values are the same and nothing changes.
  const relaxedModel = model.transport ? { ...model, transport: undefined } : model;
  let relaxedBest = model.transport ? (replayOrder(relaxedModel, warmStart.order)?.iterationMs ?? run.iterationMs) : run.iterationMs;
  let settled = proven || relaxedBest <= combinatorial * (1 + RELATIVE_GAP);
  /** Keeps the best replay under the transport and the best relaxed value; true when the schedule improved either. */
  const offer = (order: Int32Array[], truth: EngineRun | null = replayOrder(model, order)): boolean => {
    const relaxed = model.transport ? replayOrder(relaxedModel, order) : truth;
    let improved = false;
    if (truth && truth.iterationMs < run.iterationMs) {
      run = truth;
      improved = true;
    }
    if (relaxed && relaxed.iterationMs < relaxedBest) {
      relaxedBest = relaxed.iterationMs;
      improved = true;
    }
    return improved;
  };
  const settle = () => {
    proven = run.iterationMs <= bound / (1 - RELATIVE_GAP) + EPS;
    settled = proven || relaxedBest <= bound / (1 - RELATIVE_GAP) + EPS;
  };
  let milpObjectiveMs: number | null = null;
  const heads = opHeadsAndTails(model);
  // Bisection on the target between the proven bound and the best schedule: the bound itself
  // first (the optimum often meets it, and a target that tight fixes most orderings), then
  // halfway, then strictly below the best to prove it. A round that may not be the last gets half
  // the time left; one that times out without a schedule ends the bisection.
  // A ladder of targets just above the bound, each with a small depth-first search: the search's
  // urgency order depends on the target, and a schedule at the bound is often found from a
  // slightly looser one. Targets the windows or an exhausted search rule out raise the bound.
  const depthFirst = options.depthFirst ?? true;
  const ladderStart = combinatorial * (1 + RELATIVE_GAP);
  // Dead ends proven at a target hold below it: a search there (a retry, or strictly below a best
  // just found) resumes rather than starts over.
  const deadEnds = new DeadEnds();
  for (const slack of depthFirst ? LADDER : []) {
    if (settled || now() >= deadline) break;
    const target = combinatorial * (1 + slack) * (1 + RELATIVE_GAP);
    if (target >= relaxedBest * (1 - RELATIVE_GAP)) break;
    const windows = propagatedWindows(model, heads, target, { deadline, now });
    const rungDeadline = Math.min(deadline, now() + (options.timeLimitMs ?? 2000) * LADDER_SHARE);
    const found = windows ? scheduleWithin(model, windows, target, { maxNodes: LADDER_NODES, deadline: rungDeadline, now, deadEnds }) : 'infeasible';
    if (found === 'infeasible') {
      bound = Math.max(bound, target);
      continue;
    }
    if (found === 'unknown') continue;
    if (offer(found)) {
      settle();
      break;
    }
  }
  let round = 0;
  let bisect = true;
  /** Set when HiGHS's dual bound raised the bound: the optimum often meets it, so it is the next target. */
  let atBound = false;
  /**
   * Set when the MILP left a target strictly below the best open: the depth-first search gets most
   * of the time left there next (it proves some targets HiGHS does not, and the other way round).
   */
  let retry = false;
  /** False once an LP would not fit in the time left: the depth-first search then gets all of it. */
  let milpFits = true;
  while (!settled) {
    const remainingMs = deadline - now();
    if (remainingMs <= 0) break;
    const best = Math.min(relaxedBest, milpObjectiveMs ?? Number.POSITIVE_INFINITY);
    const closing = !bisect || best <= bound * (1 + CLOSE_GAP);
    const target = atBound || (!closing && round === 0) ? bound * (1 + RELATIVE_GAP) : closing ? best * (1 - RELATIVE_GAP) : (bound + best) / 2;
    // The ladder's first rung already searched at the combinatorial bound: a second search there is cut short.
    const share = atBound || retry ? DFS_SHARE_AT_BOUND : depthFirst && Math.abs(target - ladderStart) <= EPS ? DFS_SHARE_REPEAT : DFS_SHARE;
    atBound = false;
    retry = false;
    round++;
    const windows = propagatedWindows(model, heads, target, { deadline, now });
    if (windows && (depthFirst || !milpFits)) {
      // A depth-first search for a schedule within the target often finds one (or proves there
      // is none) long before HiGHS does.
      const found = scheduleWithin(model, windows, target, { maxNodes: milpFits ? DFS_NODES : Number.POSITIVE_INFINITY, deadline: milpFits ? now() + remainingMs * share : deadline, now, deadEnds });
      if (found === 'infeasible') {
        bound = Math.max(bound, target);
        settle();
        continue;
      }
      if (found !== 'unknown' && offer(found) && relaxedBest <= target) {
        settle();
        continue;
      }
    }
    if (!milpFits) {
      // Only the depth-first search runs: one that found nothing better within the target ends.
      if (now() >= deadline || !windows) break;
      bisect = false;
      continue;
    }
    const rates = solverRates.get(solver) ?? { ...DEFAULT_RATES };
    const leftMs = deadline - now();
    const maxChars = (leftMs * PARSE_SHARE) / ((rates.parseMsPerChar + rates.overrunMsPerChar) * RATE_MARGIN);
    const built = windows && buildMilp(model, heads, windows, target, bound, { deadline, now, maxChars });
    if (built === 'too-large') {
      milpFits = false;
      continue;
    }
    if (!built) {
      bound = Math.max(bound, target);
      settle();
      continue;
    }
    const parseStart = now();
    const milp = solver.createModel({ format: 'lp', data: built.lp });
    const calibrate = built.lp.length >= CALIBRATION_CHARS;
    if (calibrate) {
      rates.parseMsPerChar = Math.max(MIN_MS_PER_CHAR, (now() - parseStart) / built.lp.length, rates.parseMsPerChar * RATE_DECAY);
      solverRates.set(solver, rates);
    }
    try {
      // Building and parsing the model count against the limit too.
      const solveMs = deadline - now() - built.lp.length * rates.overrunMsPerChar * RATE_MARGIN;
      if (solveMs <= 0) break;
      // With the depth-first search, a target strictly below the best alternates between the two.
      const runMs = closing && depthFirst ? solveMs * MILP_SHARE_CLOSING : closing || round === 1 ? solveMs : solveMs / 2;
      const runStart = now();
      const stopAt = now() + runMs;
      // HiGHS checks its time_limit only now and then (a 1 s limit on an 8 x 32 model ran 1.5 s): the
      // interrupt channels stop it at the next checkpoint past the limit.
      const stop: MilpInterrupt = (event) => {
        if (now() >= stopAt) event.interrupt();
        return undefined;
      };
      milp.options.set({
        output_flag: false,
        time_limit: runMs / 1000,
        mip_rel_gap: RELATIVE_GAP,
        mip_heuristic_effort: HEURISTIC_EFFORT,
        ...(options.highsOptions ?? {}),
      });
      milp.run({ 1: stop, 2: stop, 6: stop });
      const status = milp.getModelStatus();
      // Only a run stopped by the limit tells how far past it HiGHS goes.
      if (calibrate && (status === HIGHS_TIME_LIMIT || status === HIGHS_INTERRUPTED)) rates.overrunMsPerChar = Math.max(MIN_MS_PER_CHAR, (now() - runStart - runMs) / built.lp.length, rates.overrunMsPerChar * RATE_DECAY);
      if (status === HIGHS_INFEASIBLE) {
        bound = Math.max(bound, target);
        settle();
        continue;
      }
      const dual = Number(milp.info.get('mip_dual_bound'));
      if (status !== HIGHS_OPTIMAL && Number.isFinite(dual) && Math.min(dual, target) > bound * (1 + RELATIVE_GAP)) {
        bound = Math.min(dual, target);
        atBound = true;
      }
      if (Number(milp.info.get('primal_solution_status')) !== 2) {
        if (closing && !depthFirst) break;
        retry = closing;
        bisect = false;
        continue;
      }
      const value = Number(milp.info.get('objective_function_value'));
      milpObjectiveMs = value;
      const replay = replaySolution(model, built, milp.getSolution().colValue, (name) => milp.getColByName(name), target);
      if (replay) offer(replay.order, replay);
      if (status === HIGHS_OPTIMAL) {
        bound = Math.max(bound, value * (1 - RELATIVE_GAP));
        // Proven when the replay is the MILP's schedule at its value (no queueing on the links).
        proven = run.iterationMs <= value * (1 + RELATIVE_GAP);
        settled = true;
        break;
      }
    } finally {
      milp.dispose();
    }
  }
  bound = Math.min(bound, run.iterationMs);
  const gap = bound > 0 ? Math.max(0, (run.iterationMs - bound) / bound) : 0;
  return { run, boundMs: bound, gap, proven, settled, warmStartKept: run === warmStart, milpObjectiveMs };
}

/**
 * The per-stage order of the MILP's solution, replayed through the simulator (null when it does
 * not replay). The order comes from the ordering binaries (an op's position is the number of ops
 * before it), which the solver's tolerances cannot blur as they can two nearly equal start times;
 * start times order the stage only where the binaries do not give a permutation.
 */
function replaySolution(model: PipelineModel, built: BuiltMilp, x: ArrayLike<number>, column: (name: string) => number, horizon: number): EngineRun | null {
  const value = (order: Order) => (typeof order === 'string' ? (x[column(order)] > 0.5 ? 1 : 0) : order);
  const schedule = built.ops.map((row) => {
    const position = row.map((o) => {
      let n = o.microbatch;
      for (const other of row) {
        if (other.kind === o.kind) continue;
        const { order, negated } = built.before(other, o);
        n += negated ? 1 - value(order) : value(order);
      }
      return n;
    });
    const seen = new Uint8Array(row.length);
    if (position.every((n) => n < row.length && !seen[n] && (seen[n] = 1))) {
      const out = new Int32Array(row.length);
      row.forEach((o, t) => (out[position[t]] = encodeOp(o.kind, o.microbatch)));
      return out;
    }
    const tick = 1e-6 * Math.max(1, horizon);
    const placed = row.map((o) => ({ o, s: Math.round(x[column(o.name)] / tick) }));
    placed.sort((u, v) => u.s - v.s || u.o.kind - v.o.kind || u.o.microbatch - v.o.microbatch);
    return Int32Array.from(placed, ({ o }) => encodeOp(o.kind, o.microbatch));
  });
  return replayOrder(model, schedule);
}
