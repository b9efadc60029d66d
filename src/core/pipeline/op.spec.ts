import fc from 'fast-check';
import { inputErrorOf } from '../engine/run-checks.spec';
import { encodeOp, formatOp, OP_B, OP_F, OP_W, opKind, opMicrobatch, parseOp } from './op';

describe('op codes', () => {
  it('encode kind and microbatch so both can be recovered', () => {
    fc.assert(
      fc.property(fc.constantFrom(OP_F, OP_B, OP_W), fc.integer({ min: 0, max: 65535 }), (kind, j) => {
        const code = encodeOp(kind, j);
        expect(opKind(code)).toBe(kind);
        expect(opMicrobatch(code)).toBe(j);
      }),
      { numRuns: 200 },
    );
  });

  it('format as PyTorch pipelining names', () => {
    expect(formatOp(encodeOp(OP_F, 0))).toBe('F0');
    expect(formatOp(encodeOp(OP_B, 3))).toBe('B3');
    expect(formatOp(encodeOp(OP_W, 12))).toBe('W12');
  });
});

describe('parseOp', () => {
  it('round-trips with formatOp for every op of the pipeline', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }).chain((N) => fc.tuple(fc.constant(N), fc.integer({ min: 0, max: 3 * N - 1 }))), ([N, code]) => {
        expect(parseOp(formatOp(code), N, 'test')).toBe(code);
      }),
      { numRuns: 200 },
    );
  });

  it.each([['X1'], ['F-1'], ['F01'], ['f1'], ['F'], [' F1'], ['F1 '], ['F1.0'], ['']])('rejects the token %j, naming it', (token) => {
    const error = inputErrorOf(() => parseOp(token, 10, 'stage 2 position 5'));
    expect(error.message).toContain('stage 2 position 5');
    expect(error.message).toContain(`"${token}" is not an op`);
  });

  it.each([[1], [null], [undefined], [['F1']]])('rejects the non-string %j', (token) => {
    expect(inputErrorOf(() => parseOp(token, 10, 'here')).message).toMatch(/^here: expected an op like "F0"/);
  });

  it('rejects a microbatch outside 0..N-1 and says how many there are', () => {
    expect(parseOp('W3', 4, 'x')).toBe(encodeOp(OP_W, 3));
    const error = inputErrorOf(() => parseOp('W4', 4, 'x'));
    expect(error.message).toContain('"W4" names microbatch 4, but the pipeline has 4 (0..3)');
  });
});
