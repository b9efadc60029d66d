// Scratch for sortNewest(): grows to the largest count asked, shared because JS is single-threaded.
let scratch = new Float64Array(16);

/**
 * The last `capacity` samples with their median in O(1). One Float64Array holds both the ring
 * (arrival order, [0, capacity)) and the same values kept sorted ([capacity, 2 capacity)):
 * one object per window keeps memory per link small, and add() moves at most capacity values.
 */
export class SlidingWindow {
  private buf: Float64Array;
  private cap: number;
  private head = 0;
  private count = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`SlidingWindow capacity must be a positive integer, got ${capacity}`);
    this.cap = capacity;
    this.buf = new Float64Array(2 * capacity);
  }

  get size(): number {
    return this.count;
  }

  get capacity(): number {
    return this.cap;
  }

  /** The samples held, oldest first. */
  samples(): number[] {
    const out: number[] = [];
    const first = this.count === this.cap ? this.head : 0;
    for (let n = 0; n < this.count; n++) out.push(this.buf[(first + n) % this.cap]);
    return out;
  }

  /**
   * Changes the capacity in place, keeping the newest min(size, capacity) samples (a run-time
   * reconfiguration: the window goes on from what it held, as if it had had this capacity for them).
   */
  resize(capacity: number): void {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`SlidingWindow capacity must be a positive integer, got ${capacity}`);
    if (capacity === this.cap) return;
    const kept = this.samples();
    this.cap = capacity;
    this.buf = new Float64Array(2 * capacity);
    this.head = 0;
    this.count = 0;
    for (const x of kept.slice(Math.max(0, kept.length - capacity))) this.add(x);
  }

  /** Adds a sample, evicting the oldest when full. NaN is dropped: it has no place in a sorted order. */
  add(x: number): void {
    if (x !== x) return;
    const buf = this.buf;
    const base = this.cap;
    let i: number;
    if (this.count === this.cap) {
      // Reuse the evicted value's slot as the hole and slide it to where x belongs.
      i = this.indexOfSorted(buf[this.head]);
      const last = this.count - 1;
      while (i > 0 && buf[base + i - 1] > x) {
        buf[base + i] = buf[base + i - 1];
        i--;
      }
      while (i < last && buf[base + i + 1] < x) {
        buf[base + i] = buf[base + i + 1];
        i++;
      }
    } else {
      i = this.count++;
      while (i > 0 && buf[base + i - 1] > x) {
        buf[base + i] = buf[base + i - 1];
        i--;
      }
    }
    buf[base + i] = x;
    buf[this.head] = x;
    this.head = this.head + 1 === this.cap ? 0 : this.head + 1;
  }

  /** Median of the window (mean of the two middle values when even); NaN when empty. */
  median(): number {
    const n = this.count;
    if (n === 0) return Number.NaN;
    const mid = this.cap + (n >> 1);
    return n & 1 ? this.buf[mid] : (this.buf[mid - 1] + this.buf[mid]) / 2;
  }

  /** The sample at rank floor(q x (size - 1)) of the window's sorted order (0: lowest, 1: highest); NaN when empty. O(1). */
  quantile(q: number): number {
    const n = this.count;
    if (n === 0 || !(q >= 0 && q <= 1)) return Number.NaN;
    return this.buf[this.cap + Math.floor(q * (n - 1))];
  }

  /** Median of the newest min(count, size) samples; NaN when there are none. Sorts a copy: for occasional reads, not per sample. */
  recentMedian(count: number): number {
    const k = this.sortNewest(count);
    if (k === 0) return Number.NaN;
    const mid = k >> 1;
    return k & 1 ? scratch[mid] : (scratch[mid - 1] + scratch[mid]) / 2;
  }

  /** The sample at rank floor(q x (n - 1)) of the newest n = min(count, size) samples, sorted; NaN when there are none. */
  recentQuantile(count: number, q: number): number {
    if (!(q >= 0 && q <= 1)) return Number.NaN;
    const k = this.sortNewest(count);
    return k === 0 ? Number.NaN : scratch[Math.floor(q * (k - 1))];
  }

  /** Sorts the newest min(count, size) samples into scratch[0..k) (insertion sort: k is a window, not a stream); returns k. */
  private sortNewest(count: number): number {
    const k = Math.min(Math.floor(count), this.count);
    if (!(k > 0)) return 0;
    if (scratch.length < k) scratch = new Float64Array(Math.max(k, scratch.length * 2));
    let j = this.head;
    for (let n = 0; n < k; n++) {
      j = j === 0 ? this.cap - 1 : j - 1;
      const x = this.buf[j];
      let p = n;
      while (p > 0 && scratch[p - 1] > x) {
        scratch[p] = scratch[p - 1];
        p--;
      }
      scratch[p] = x;
    }
    return k;
  }

  /**
   * Whether the newest `count` samples all lie above, or all below, the `older` samples stored just
   * before them: the level moved. False when either group is empty. O(count + older).
   */
  shifted(count: number, older: number): boolean {
    const k = Math.min(Math.floor(count), this.count);
    const m = Math.min(Math.floor(older), this.count - k);
    if (!(k > 0 && m > 0)) return false;
    let newLo = Infinity;
    let newHi = -Infinity;
    let oldLo = Infinity;
    let oldHi = -Infinity;
    let j = this.head;
    for (let n = 0; n < k + m; n++) {
      j = j === 0 ? this.cap - 1 : j - 1;
      const x = this.buf[j];
      if (n < k) {
        if (x < newLo) newLo = x;
        if (x > newHi) newHi = x;
      } else {
        if (x < oldLo) oldLo = x;
        if (x > oldHi) oldHi = x;
      }
    }
    return newLo > oldHi || newHi < oldLo;
  }

  /** Index in the sorted half of a stored value (any of equal ones: they are interchangeable). */
  private indexOfSorted(x: number): number {
    let lo = 0;
    let hi = this.count - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.buf[this.cap + mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
