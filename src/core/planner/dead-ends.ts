// Bound once for the hot loops (global lookups are slow where the global object is not V8's fast one: Jest's sandbox).
const { imul } = Math;
const { NEGATIVE_INFINITY: NEG_INF } = Number;

const EPS = 1e-9;
/** At most this many dead ends, this many times in all (8 bytes each), and this many per set of placed ops (the oldest goes first). */
const MAX_ENTRIES = 250_000;
const MAX_TIMES = 2_000_000;
const MAX_PER_KEY = 16;

/**
 * Partial schedules of `scheduleWithin` proven to have no completion within a target: keyed by
 * the ops placed (per-stage, per-kind counts), with the times the rest depends on. A partial
 * schedule with the same ops placed and no such time earlier than a dead end's has no completion
 * either (any completion of it would complete the dead end). The proof holds for every target up
 * to the one it was made at (a schedule within a lower target is within that one too), whatever
 * windows the search ran with, since every window is a relaxation: so a store carries over to
 * the depth-first searches at that target or below, and starts afresh above it.
 * Flat pools (one typed array each, grown by doubling): an allocation per dead end cost more than
 * the search.
 */
export class DeadEnds {
  private byKey = new Map<number, number[]>();
  private stored = 0;
  private counts = new Int32Array(1 << 12);
  private times = new Float64Array(1 << 12);
  private timesUsed = 0;
  private timesAt = new Int32Array(1 << 8);
  private target = NEG_INF;

  /**
   * @param slackMs only to show that the tests catch an unsound pruning: a state counts as
   * dominated when up to this much earlier than a dead end (default 0, sound).
   */
  constructor(private readonly slackMs = 0) {}

  /** Before a search at `target`: keeps the dead ends if they hold there, else forgets them. */
  prepare(target: number): void {
    if (target <= this.target) {
      // What is proven from now on holds only up to the lower target.
      this.target = target;
      return;
    }
    this.byKey.clear();
    this.stored = 0;
    this.timesUsed = 0;
    this.target = target;
  }

  /** Whether the state (`placed` counts, `times[0..n)`) is no earlier anywhere than a dead end. */
  dominated(placed: Int32Array, times: Float64Array, n: number): boolean {
    const seen = this.byKey.get(keyOf(placed));
    if (!seen) return false;
    const slack = EPS + this.slackMs;
    for (const e of seen) {
      if (!this.sameCounts(e, placed)) continue;
      const from = this.timesAt[e];
      let dominated = true;
      for (let c = 0; c < n && dominated; c++) if (times[c] < this.times[from + c] - slack) dominated = false;
      if (dominated) return true;
    }
    return false;
  }

  remember(placed: Int32Array, times: Float64Array, n: number): void {
    if (this.stored >= MAX_ENTRIES || this.timesUsed + n > MAX_TIMES) return;
    const e = this.stored++;
    if (e >= this.timesAt.length) this.timesAt = grown(this.timesAt, e + 1);
    if ((e + 1) * placed.length > this.counts.length) this.counts = grown(this.counts, (e + 1) * placed.length);
    if (this.timesUsed + n > this.times.length) this.times = grown(this.times, this.timesUsed + n);
    this.counts.set(placed, e * placed.length);
    for (let c = 0; c < n; c++) this.times[this.timesUsed + c] = times[c];
    this.timesAt[e] = this.timesUsed;
    this.timesUsed += n;
    const key = keyOf(placed);
    const seen = this.byKey.get(key);
    if (!seen) this.byKey.set(key, [e]);
    else {
      if (seen.length >= MAX_PER_KEY) seen.shift();
      seen.push(e);
    }
  }

  private sameCounts(e: number, placed: Int32Array): boolean {
    const from = e * placed.length;
    for (let c = 0; c < placed.length; c++) if (this.counts[from + c] !== placed[c]) return false;
    return true;
  }
}

function keyOf(placed: Int32Array): number {
  let key = 0;
  for (let c = 0; c < placed.length; c++) key = (imul(key, 31) + placed[c]) | 0;
  return key;
}

function grown<T extends Int32Array | Float64Array>(a: T, atLeast: number): T {
  let size = a.length * 2;
  while (size < atLeast) size *= 2;
  const b = (a instanceof Int32Array ? new Int32Array(size) : new Float64Array(size)) as T;
  b.set(a);
  return b;
}
