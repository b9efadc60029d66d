import { InputError } from '../input-error';
import { encodeOp, formatOp, OP_B, OP_F, OP_W } from '../pipeline/op';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { Schedule } from '../pipeline/schedule.type';
import { EngineRun, MessageLog } from './engine-run.type';
import { EventQueue } from './event-queue';

// Bound once for the hot loops (global lookups are slow where the global object is not V8's fast one: Jest's sandbox).
const { abs, floor, max } = Math;
const { POSITIVE_INFINITY: INF } = Number;

/** How a stage places W relative to F once its warm-up is over (B always comes first). */
export const WPlacement = {
  /** B > F > W: the paper's Alg. 3; W fills bubbles. */
  Lazy: 0,
  /** B > W > F: W right away when no B is waiting; frees memory early. */
  Eager: 1,
  /** W_j immediately after B_j, as one backward (1F1B, GPipe). */
  Fused: 2,
} as const;
export type WPlacement = (typeof WPlacement)[keyof typeof WPlacement];

/**
 * Look-ahead of a stage once its warm-up is over, as bits: the gradients on their way to a stage
 * are known (sent, arriving at a known time), so a stage can refuse an op that would still be
 * running when its next B becomes ready, and wait for that B instead.
 */
export const LookAhead = {
  None: 0,
  /** Start a W only if it ends before the next B can start. */
  W: 1,
  /** Start a post-warm-up F only if it ends before the next B can start (deliberate idling). */
  F: 2,
  /** Start a W only if it also ends before the next activation arrives while an F may run (a stage waiting on its upstream). */
  WBeforeF: 4,
  /** Hold every W until the stage has started its last B: the backward chain through this stage never waits behind a W. */
  WAfterLastB: 8,
  All: 15,
} as const;
/** A bitwise OR of LookAhead flags. */
export type LookAhead = number;

export interface GreedyPolicy {
  /** Warm-up forward count x_i per stage. */
  readonly warmup: ArrayLike<number>;
  /** Most microbatches in flight (F started, B not) per stage. */
  readonly inflightCap: ArrayLike<number>;
  readonly wPlacement: ArrayLike<WPlacement>;
  /** Per stage (absent: none). */
  readonly lookAhead?: ArrayLike<LookAhead>;
}

/** Limit on stages * microbatches: bounds the engine's memory (about 100 bytes per op). */
export const MAX_STAGE_MICROBATCHES = 1 << 20;

const EV_COMPLETE = 0;
const EV_ARRIVE = 1;
/** A stage's compute stream was stalled by a GPU-direct send (head-of-line blocking) until now. */
const EV_UNSTALL = 2;
const MEMORY_SLACK = 1e-9;

/**
 * One exact, event-driven run of a pipeline: time jumps from event to event (op completions
 * and message arrivals), so there is no discretisation error. It either replays a fixed
 * per-stage order (simulator) or chooses ops greedily (generator, paper Alg. 3 and 4).
 *
 * Tie-breaking (deterministic): events at the same instant are all applied before any stage
 * decides; among ready ops of one kind the lowest microbatch runs first; events at equal
 * times are applied in the order they were created. Memory deltas apply when an op starts.
 */
class Engine {
  private readonly S: number;
  private readonly N: number;
  private readonly M: number;
  private readonly depsLeft: Int8Array;
  private readonly start: Float64Array;
  private readonly end: Float64Array;
  private readonly busy: Uint8Array;
  private readonly events: EventQueue;
  private readonly dirty: Int32Array;
  private readonly isDirty: Uint8Array;
  private dirtyCount = 0;
  private readonly mem: Float64Array;
  private readonly peakMem: Float64Array;
  private readonly inflight: Int32Array;
  private readonly bStarted: Int32Array;
  private readonly peakInflight: Int32Array;
  private readonly linkFree: Float64Array;
  private readonly servers: Array<Float64Array | undefined> = [];
  private readonly stalledUntil: Float64Array;
  private readonly msg: { link: Int32Array; direction: Uint8Array; microbatch: Int32Array; sentMs: Float64Array; transferStartMs: Float64Array; arriveMs: Float64Array };
  private msgCount = 0;
  private readonly order: Int32Array[];
  private readonly orderLen: Int32Array;
  private completed = 0;
  private now = 0;

  // Replay state.
  private readonly replay: Schedule | null;
  private readonly readyFlag: Uint8Array | null;

  // Greedy state: per (stage, kind) a min-heap of ready microbatches, stored in one pooled array.
  private readonly policy: GreedyPolicy | null;
  private readonly heap: Int32Array | null;
  private readonly heapSize: Int32Array | null;
  private readonly warmLeft: Int32Array | null;
  // Look-ahead state (only when some stage looks ahead): messages sent but not arrived, per
  // direction (0 activations, 1 gradients) and receiving stage, indexed (direction * S + stage).
  private readonly lookAhead: ArrayLike<LookAhead> | null;
  private readonly pendingArrive: Float64Array | null;
  private readonly pending: Int32Array | null;
  private readonly pendingCount: Int32Array | null;

  constructor(private readonly model: PipelineModel, mode: { replay: Schedule } | { policy: GreedyPolicy }) {
    const S = (this.S = model.stages);
    const N = (this.N = model.microbatches);
    const M = (this.M = 3 * N);
    if (S * N > MAX_STAGE_MICROBATCHES) {
      throw new InputError(`stages x microbatches = ${S * N} exceeds the engine's limit of ${MAX_STAGE_MICROBATCHES}`);
    }
    this.depsLeft = new Int8Array(S * M);
    for (let s = 0; s < S; s++) {
      const base = s * M;
      for (let j = 0; j < N; j++) {
        this.depsLeft[base + encodeOp(OP_F, j)] = s > 0 ? 1 : 0;
        this.depsLeft[base + encodeOp(OP_B, j)] = s < S - 1 ? 2 : 1; // own F, and the gradient from downstream
        this.depsLeft[base + encodeOp(OP_W, j)] = 1; // own B
      }
    }
    this.start = new Float64Array(S * M).fill(NaN);
    this.end = new Float64Array(S * M).fill(NaN);
    this.busy = new Uint8Array(S);
    this.events = new EventQueue(max(64, 2 * S + 4 * N));
    this.dirty = new Int32Array(S);
    this.isDirty = new Uint8Array(S);
    this.mem = new Float64Array(S);
    this.peakMem = new Float64Array(S);
    this.inflight = new Int32Array(S);
    this.bStarted = new Int32Array(S);
    this.peakInflight = new Int32Array(S);
    this.linkFree = new Float64Array(2 * max(0, S - 1));
    this.stalledUntil = new Float64Array(S);
    const maxMsgs = 2 * N * max(0, S - 1);
    this.msg = {
      link: new Int32Array(maxMsgs),
      direction: new Uint8Array(maxMsgs),
      microbatch: new Int32Array(maxMsgs),
      sentMs: new Float64Array(maxMsgs),
      transferStartMs: new Float64Array(maxMsgs),
      arriveMs: new Float64Array(maxMsgs),
    };
    this.order = Array.from({ length: S }, () => new Int32Array(M));
    this.orderLen = new Int32Array(S);

    if ('replay' in mode) {
      this.replay = mode.replay;
      this.readyFlag = new Uint8Array(S * M);
      this.policy = this.heap = this.heapSize = this.warmLeft = null;
      this.lookAhead = this.pendingArrive = this.pending = this.pendingCount = null;
    } else {
      this.replay = this.readyFlag = null;
      this.policy = mode.policy;
      this.heap = new Int32Array(S * 3 * N);
      this.heapSize = new Int32Array(S * 3);
      this.warmLeft = Int32Array.from(mode.policy.warmup);
      const lookAhead = mode.policy.lookAhead;
      if (lookAhead && Array.from({ length: S }, (_, s) => lookAhead[s]).some((l) => l !== LookAhead.None)) {
        this.lookAhead = lookAhead;
        this.pendingArrive = new Float64Array(2 * S * N);
        this.pending = new Int32Array(2 * S * N);
        this.pendingCount = new Int32Array(2 * S);
      } else {
        this.lookAhead = this.pendingArrive = this.pending = this.pendingCount = null;
      }
    }
  }

  run(): EngineRun {
    const { S, N } = this;
    for (let j = 0; j < N; j++) this.becomeReady(0, encodeOp(OP_F, j));
    for (let s = 0; s < S; s++) this.markDirty(s);
    this.decide();
    while (this.events.size > 0) {
      const t = this.events.peekTime();
      this.now = t;
      while (this.events.size > 0 && this.events.peekTime() === t) this.apply(this.events.pop());
      this.decide();
    }
    if (this.completed !== S * this.M) throw new InputError(this.describeStall());
    return this.result();
  }

  private apply(payload: number): void {
    const type = payload & 3;
    const index = payload >>> 2;
    const s = floor(index / this.M);
    const code = index - s * this.M;
    if (type === EV_ARRIVE) {
      if (this.pending) this.arrived(code % 3 === OP_B ? this.S + s : s, floor(code / 3));
      this.satisfy(s, code);
      return;
    }
    if (type === EV_UNSTALL) {
      if (this.now >= this.stalledUntil[s]) {
        this.busy[s] = 0;
        this.markDirty(s);
      }
      return;
    }
    this.busy[s] = 0;
    this.completed++;
    this.markDirty(s);
    const kind = code % 3;
    const j = (code - kind) / 3;
    let stall = this.now;
    if (kind === OP_F) {
      if (s < this.S - 1) stall = this.send(s, 0, j);
      this.satisfy(s, encodeOp(OP_B, j));
    } else if (kind === OP_B) {
      this.satisfy(s, encodeOp(OP_W, j));
      if (s > 0) stall = this.send(s - 1, 1, j);
    }
    if (stall > this.now) {
      // The send could not be launched: nothing behind it on this stage's stream runs until it is.
      this.busy[s] = 1;
      this.stalledUntil[s] = stall;
      this.events.push(stall, (s * this.M << 2) | EV_UNSTALL);
    }
  }

  /**
   * Sends an activation (direction 0) or gradient (direction 1) over `link`, FIFO per direction.
   * Returns when the sender's stream may go on (later than now only under head-of-line blocking).
   */
  private send(link: number, direction: number, microbatch: number): number {
    const transfer = this.model.transferMs[link];
    const slot = 2 * link + direction;
    const t = this.now;
    let txStart: number;
    let arrive: number;
    let resume = t;
    const transport = this.model.transport;
    if (transport) {
      const latency = this.model.linkMs[link] + (transport.extraDelayMs ? transport.extraDelayMs(link, t) : 0);
      const queues = transport.delegateQueues[link];
      const servers = queues > 0 ? queues : transport.gpuSlots[link];
      txStart = t;
      if (servers > 0) {
        // The earliest-free sender resource of this direction takes the message.
        const pool = this.serverPool(slot, servers);
        let best = 0;
        for (let k = 1; k < servers; k++) if (pool[k] < pool[best]) best = k;
        txStart = max(t, pool[best]);
        pool[best] = txStart + transfer + latency;
        if (queues === 0) resume = txStart;
      }
      arrive = txStart + transfer + latency;
    } else {
      txStart = transfer > 0 && this.linkFree[slot] > t ? this.linkFree[slot] : t;
      if (transfer > 0) this.linkFree[slot] = txStart + transfer;
      arrive = txStart + transfer + this.model.linkMs[link];
    }
    const k = this.msgCount++;
    this.msg.link[k] = link;
    this.msg.direction[k] = direction;
    this.msg.microbatch[k] = microbatch;
    this.msg.sentMs[k] = t;
    this.msg.transferStartMs[k] = txStart;
    this.msg.arriveMs[k] = arrive;
    const target = direction === 0 ? link + 1 : link;
    const code = encodeOp(direction === 0 ? OP_F : OP_B, microbatch);
    if (this.pending) {
      const q = direction * this.S + target;
      this.pendingArrive![q * this.N + microbatch] = arrive;
      this.pending[q * this.N + this.pendingCount![q]++] = microbatch;
    }
    this.events.push(arrive, ((target * this.M + code) << 2) | EV_ARRIVE);
    return resume;
  }

  private arrived(q: number, microbatch: number): void {
    const pending = this.pending!;
    const base = q * this.N;
    const last = --this.pendingCount![q];
    for (let k = 0; k <= last; k++) {
      if (pending[base + k] === microbatch) {
        pending[base + k] = pending[base + last];
        return;
      }
    }
  }

  /**
   * The earliest arrival of a message on its way to stage s in one direction, Infinity when none
   * is. For gradients this is when the next B can start (the stage's own F ran before the
   * gradient could be sent); for activations, when the next F can.
   */
  private nextArrival(direction: number, s: number): number {
    const q = direction * this.S + s;
    const base = q * this.N;
    let earliest = INF;
    for (let k = 0; k < this.pendingCount![q]; k++) {
      const t = this.pendingArrive![base + this.pending![base + k]];
      if (t < earliest) earliest = t;
    }
    return earliest;
  }

  private opMs(s: number, kind: number): number {
    const overhead = this.model.transport ? this.model.transport.copyOverhead[s] : 0;
    return this.model.durations[s * 3 + kind] * (1 + overhead);
  }

  /** Busy-until times of the sender resources of one link direction, allocated on first use. */
  private serverPool(slot: number, servers: number): Float64Array {
    let pool = this.servers[slot];
    if (!pool || pool.length !== servers) pool = this.servers[slot] = new Float64Array(servers);
    return pool;
  }

  private satisfy(s: number, code: number): void {
    if (--this.depsLeft[s * this.M + code] === 0) {
      this.becomeReady(s, code);
      this.markDirty(s);
    }
  }

  private becomeReady(s: number, code: number): void {
    if (this.readyFlag) {
      this.readyFlag[s * this.M + code] = 1;
      return;
    }
    const kind = code % 3;
    this.heapPush(s * 3 + kind, (code - kind) / 3);
  }

  private markDirty(s: number): void {
    if (!this.isDirty[s]) {
      this.isDirty[s] = 1;
      this.dirty[this.dirtyCount++] = s;
    }
  }

  /** Lets each stage whose situation changed start an op. Order among stages does not matter: a decision only touches its own stage. */
  private decide(): void {
    for (let k = 0; k < this.dirtyCount; k++) {
      const s = this.dirty[k];
      this.isDirty[s] = 0;
      if (this.busy[s]) continue;
      const code = this.replay ? this.selectReplay(s) : this.selectGreedy(s);
      if (code >= 0) this.startOp(s, code);
    }
    this.dirtyCount = 0;
  }

  private startOp(s: number, code: number): void {
    const kind = code % 3;
    const index = s * this.M + code;
    const t = this.now;
    const done = t + this.opMs(s, kind);
    this.start[index] = t;
    this.end[index] = done;
    this.busy[s] = 1;
    this.order[s][this.orderLen[s]++] = code;
    if (kind === OP_F) {
      if (++this.inflight[s] > this.peakInflight[s]) this.peakInflight[s] = this.inflight[s];
    } else if (kind === OP_B) {
      this.inflight[s]--;
      this.bStarted[s]++;
    }
    if (this.model.memDelta) {
      this.mem[s] += this.model.memDelta[s * 3 + kind];
      if (this.mem[s] > this.peakMem[s]) this.peakMem[s] = this.mem[s];
    }
    this.events.push(done, (index << 2) | EV_COMPLETE);
  }

  private selectReplay(s: number): number {
    const pos = this.orderLen[s];
    if (pos >= this.M) return -1;
    const code = this.replay![s][pos];
    return this.readyFlag![s * this.M + code] ? code : -1;
  }

  private memoryAllows(s: number, kind: number): boolean {
    const delta = this.model.memDelta ? this.model.memDelta[s * 3 + kind] : 0;
    if (delta <= 0) return true;
    const limit = this.model.memLimit![s];
    // Relative slack: memory sums of large non-integer values must not lose an exact fit to rounding.
    return this.mem[s] + delta <= limit + MEMORY_SLACK * max(1, abs(limit));
  }

  private canStartF(s: number): boolean {
    return this.heapSize![s * 3 + OP_F] > 0 && this.inflight[s] < this.policy!.inflightCap[s] && this.memoryAllows(s, OP_F);
  }

  /** Paper Alg. 3: x_i warm-up forwards, then B > F > W (or B > W > F, or W fused to its B), within memory. */
  private selectGreedy(s: number): number {
    const sizes = this.heapSize!;
    const placement = this.policy!.wPlacement[s];
    if (placement === WPlacement.Fused && sizes[s * 3 + OP_W] > 0) return encodeOp(OP_W, this.heapPop(s * 3 + OP_W));
    if (this.warmLeft![s] > 0) {
      if (!this.canStartF(s)) return -1;
      this.warmLeft![s]--;
      return encodeOp(OP_F, this.heapPop(s * 3 + OP_F));
    }
    if (sizes[s * 3 + OP_B] > 0 && this.memoryAllows(s, OP_B)) return encodeOp(OP_B, this.heapPop(s * 3 + OP_B));
    let wReady = sizes[s * 3 + OP_W] > 0 && this.memoryAllows(s, OP_W);
    let fReady = this.canStartF(s);
    // Not under a memory limit: a stage that idled could then be stopped by memory and run an op
    // that was ready all along, which a replay of the order would start earlier (and holding Ws
    // could deadlock).
    const look = this.lookAhead && !(this.model.memLimit && this.model.memLimit[s] < INF) ? this.lookAhead[s] : LookAhead.None;
    if (look & LookAhead.WAfterLastB && this.bStarted[s] < this.N) wReady = false;
    if (look !== LookAhead.None && (wReady || fReady)) {
      // Idling is safe: the gradient's arrival is a pending event that wakes this stage again.
      const nextB = this.nextArrival(1, s);
      if (look & LookAhead.W && wReady) wReady = this.now + this.opMs(s, OP_W) <= nextB;
      if (look & LookAhead.F && fReady) fReady = this.now + this.opMs(s, OP_F) <= nextB;
      if (look & LookAhead.WBeforeF && wReady && !fReady && this.inflight[s] < this.policy!.inflightCap[s]) {
        wReady = this.now + this.opMs(s, OP_W) <= this.nextArrival(0, s);
      }
    }
    if (placement === WPlacement.Eager && wReady) return encodeOp(OP_W, this.heapPop(s * 3 + OP_W));
    if (fReady) return encodeOp(OP_F, this.heapPop(s * 3 + OP_F));
    if (wReady) return encodeOp(OP_W, this.heapPop(s * 3 + OP_W));
    return -1;
  }

  private heapPush(h: number, value: number): void {
    const heap = this.heap!;
    const base = h * this.N;
    let i = this.heapSize![h]++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[base + parent] <= value) break;
      heap[base + i] = heap[base + parent];
      i = parent;
    }
    heap[base + i] = value;
  }

  private heapPop(h: number): number {
    const heap = this.heap!;
    const base = h * this.N;
    const top = heap[base];
    const last = --this.heapSize![h];
    const value = heap[base + last];
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= last) break;
      if (child + 1 < last && heap[base + child + 1] < heap[base + child]) child++;
      if (value <= heap[base + child]) break;
      heap[base + i] = heap[base + child];
      i = child;
    }
    heap[base + i] = value;
    return top;
  }

  private describeStall(): string {
    const stuck: string[] = [];
    for (let s = 0; s < this.S && stuck.length < 3; s++) {
      const pos = this.orderLen[s];
      if (pos >= this.M) continue;
      if (this.replay) {
        stuck.push(`stage ${s} waits for ${formatOp(this.replay[s][pos])}`);
      } else {
        const cap = this.policy!.inflightCap[s];
        const memory = this.model.memLimit ? `, memory ${this.mem[s]}/${this.model.memLimit[s]}` : '';
        stuck.push(`stage ${s} (warm-up left ${this.warmLeft![s]}, in flight ${this.inflight[s]}/${cap}${memory})`);
      }
    }
    const what = this.replay ? 'schedule deadlocks (an op waits for one that runs later)' : 'no op can run (warm-up counts or memory limits are infeasible)';
    return `${what} at t=${this.now}ms after ${this.completed} of ${this.S * this.M} ops: ${stuck.join('; ')}`;
  }

  private result(): EngineRun {
    let iterationMs = 0;
    for (let k = 0; k < this.end.length; k++) if (this.end[k] > iterationMs) iterationMs = this.end[k];
    const n = this.msgCount;
    const messages: MessageLog = {
      count: n,
      link: this.msg.link.subarray(0, n),
      direction: this.msg.direction.subarray(0, n),
      microbatch: this.msg.microbatch.subarray(0, n),
      sentMs: this.msg.sentMs.subarray(0, n),
      transferStartMs: this.msg.transferStartMs.subarray(0, n),
      arriveMs: this.msg.arriveMs.subarray(0, n),
    };
    return {
      stages: this.S,
      microbatches: this.N,
      order: this.order,
      start: this.start,
      end: this.end,
      iterationMs,
      messages,
      peakMemory: this.model.memDelta ? this.peakMem : null,
      peakInflight: this.peakInflight,
    };
  }
}

/** Replays a fixed per-stage order (the simulator). Throws InputError if the order deadlocks. */
export function runReplay(model: PipelineModel, schedule: Schedule): EngineRun {
  return new Engine(model, { replay: schedule }).run();
}

/** Generates a schedule greedily (the generator). Throws InputError if the policy cannot complete. */
export function runGreedy(model: PipelineModel, policy: GreedyPolicy): EngineRun {
  return new Engine(model, { policy }).run();
}
