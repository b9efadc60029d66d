import fc from 'fast-check';
import { AsciiSink } from './ascii-sink';

describe('AsciiSink', () => {
  it('writes integers and text exactly as string concatenation does, growing past its first buffer (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer({ min: -1e12, max: 1e12 }), fc.string({ unit: fc.constantFrom('M', ' ', 'h', 'v', '0', 'z') })), { maxLength: 200 }), fc.integer({ min: 1, max: 400 }), (parts, repeat) => {
        const sink = new AsciiSink();
        let expected = '';
        for (let r = 0; r < repeat; r++) {
          for (const part of parts) {
            if (typeof part === 'number') sink.int(part);
            else sink.text(part);
            expected += String(part);
          }
        }
        expect(sink.take()).toBe(expected);
        expect(sink.take()).toBe(''); // emptied for reuse
      }),
      { numRuns: 30 },
    );
  });
});
