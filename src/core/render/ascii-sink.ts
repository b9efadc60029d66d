/**
 * An ASCII text builder over one growing byte array: for the tens of thousands of small numbers
 * of a large timeline, it avoids the millions of short-lived strings (and the garbage collection)
 * that concatenation makes. Integers only; text must be ASCII.
 */
export class AsciiSink {
  private bytes = new Uint8Array(1 << 16);
  length = 0;

  private reserve(extra: number): void {
    if (this.length + extra <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.length + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
  }

  text(ascii: string): void {
    this.reserve(ascii.length);
    for (let i = 0; i < ascii.length; i++) this.bytes[this.length++] = ascii.charCodeAt(i);
  }

  int(value: number): void {
    this.reserve(21);
    let n = Math.trunc(value);
    if (n < 0) {
      this.bytes[this.length++] = 45; // '-'
      n = -n;
    }
    const start = this.length;
    do {
      this.bytes[this.length++] = 48 + (n % 10);
      n = Math.floor(n / 10);
    } while (n > 0);
    this.bytes.subarray(start, this.length).reverse();
  }

  /** The text so far; the sink is emptied for reuse. */
  take(): string {
    const out = DECODER.decode(this.bytes.subarray(0, this.length));
    this.length = 0;
    return out;
  }
}

const DECODER = new TextDecoder('latin1');
