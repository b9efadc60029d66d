import fc from 'fast-check';
import { EventQueue } from './event-queue';

/** A push (time, payload) or a pop. Times come from a small set so that ties are common. */
type Step = { push: number } | { pop: true };

const arbSteps = fc.array(
  fc.oneof({ weight: 3, arbitrary: fc.record({ push: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.double({ min: 0, max: 6, noNaN: true })) }) }, { weight: 1, arbitrary: fc.constant({ pop: true as const }) }),
  { maxLength: 300 },
);

/** The reference: a plain array kept sorted by (time, insertion order). */
function reference(): { push(time: number, payload: number): void; pop(): number; size: number } {
  const items: Array<{ time: number; seq: number; payload: number }> = [];
  let seq = 0;
  return {
    push(time, payload) {
      items.push({ time, seq: seq++, payload });
      items.sort((a, b) => a.time - b.time || a.seq - b.seq);
    },
    pop() {
      return items.shift()!.payload;
    },
    get size() {
      return items.length;
    },
  };
}

describe('EventQueue', () => {
  it('pops in (time, insertion) order like a sorted reference, growing past its initial capacity', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), arbSteps, (capacity, steps: Step[]) => {
        const queue = new EventQueue(capacity);
        const ref = reference();
        let payload = 0;
        for (const step of steps) {
          if ('push' in step) {
            queue.push(step.push, payload);
            ref.push(step.push, payload);
            payload++;
          } else if (ref.size > 0) {
            expect(queue.pop()).toBe(ref.pop());
          }
          expect(queue.size).toBe(ref.size);
        }
        // Drain: the rest must also come out in reference order.
        while (ref.size > 0) expect(queue.pop()).toBe(ref.pop());
        expect(queue.size).toBe(0);
      }),
      { numRuns: 200 },
    );
  });

  it('peekTime is the smallest pending time', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 100 }), (times) => {
        const queue = new EventQueue(2);
        times.forEach((t, i) => queue.push(t, i));
        const sorted = times.slice().sort((a, b) => a - b);
        for (const t of sorted) {
          expect(queue.peekTime()).toBe(t);
          queue.pop();
        }
      }),
      { numRuns: 100 },
    );
  });

  it('keeps equal-time events in insertion order across growth (FIFO ties)', () => {
    const queue = new EventQueue(1);
    for (let i = 0; i < 100; i++) queue.push(5, i);
    queue.push(1, 1000);
    expect(queue.pop()).toBe(1000);
    for (let i = 0; i < 100; i++) expect(queue.pop()).toBe(i);
  });

  it('carries any int32 payload', () => {
    const queue = new EventQueue(4);
    const payloads = [0, -1, 2147483647, -2147483648, 12345];
    payloads.forEach((p) => queue.push(0, p));
    expect(payloads.map(() => queue.pop())).toEqual(payloads);
  });
});
