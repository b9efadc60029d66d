/**
 * Min-heap of timed events, ordered by (time, insertion order). The insertion order tie-break
 * makes every run deterministic. Payload is one integer; storage is typed arrays that grow by doubling.
 */
export class EventQueue {
  private times: Float64Array;
  private seqs: Float64Array;
  private payloads: Int32Array;
  private count = 0;
  private nextSeq = 0;

  constructor(capacity = 64) {
    this.times = new Float64Array(capacity);
    this.seqs = new Float64Array(capacity);
    this.payloads = new Int32Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  /** Time of the earliest event; only valid when size > 0. */
  peekTime(): number {
    return this.times[0];
  }

  push(time: number, payload: number): void {
    if (this.count === this.times.length) this.grow();
    let i = this.count++;
    const seq = this.nextSeq++;
    // Sift up with a hole instead of swaps.
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pt = this.times[parent];
      if (pt < time || (pt === time && this.seqs[parent] < seq)) break;
      this.times[i] = pt;
      this.seqs[i] = this.seqs[parent];
      this.payloads[i] = this.payloads[parent];
      i = parent;
    }
    this.times[i] = time;
    this.seqs[i] = seq;
    this.payloads[i] = payload;
  }

  /** Removes the earliest event and returns its payload; only valid when size > 0. */
  pop(): number {
    const top = this.payloads[0];
    const last = --this.count;
    if (last > 0) {
      const time = this.times[last];
      const seq = this.seqs[last];
      const payload = this.payloads[last];
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= last) break;
        const right = left + 1;
        let child = left;
        if (right < last && (this.times[right] < this.times[left] || (this.times[right] === this.times[left] && this.seqs[right] < this.seqs[left]))) {
          child = right;
        }
        const ct = this.times[child];
        if (time < ct || (time === ct && seq < this.seqs[child])) break;
        this.times[i] = ct;
        this.seqs[i] = this.seqs[child];
        this.payloads[i] = this.payloads[child];
        i = child;
      }
      this.times[i] = time;
      this.seqs[i] = seq;
      this.payloads[i] = payload;
    }
    return top;
  }

  private grow(): void {
    const capacity = this.times.length * 2;
    const times = new Float64Array(capacity);
    const seqs = new Float64Array(capacity);
    const payloads = new Int32Array(capacity);
    times.set(this.times);
    seqs.set(this.seqs);
    payloads.set(this.payloads);
    this.times = times;
    this.seqs = seqs;
    this.payloads = payloads;
  }
}
