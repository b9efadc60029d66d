import fc from 'fast-check';
import { inputErrorOf } from '../engine/run-checks.spec';
import { formatSchedule, parseSchedule, warmupOf } from './schedule';

/** A valid text schedule: per stage, a shuffle of all 3N op names. */
function arbScheduleText(): fc.Arbitrary<{ S: number; N: number; text: string[][] }> {
  return fc.tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 10 })).chain(([S, N]) => {
    const all = ['F', 'B', 'W'].flatMap((k) => Array.from({ length: N }, (_, j) => `${k}${j}`));
    return fc.array(fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }), { minLength: S, maxLength: S }).map((text) => ({ S, N, text }));
  });
}

describe('parseSchedule', () => {
  it('round-trips any complete per-stage op list through formatSchedule', () => {
    fc.assert(
      fc.property(arbScheduleText(), ({ S, N, text }) => {
        expect(formatSchedule(parseSchedule(text, S, N))).toEqual(text);
      }),
      { numRuns: 150 },
    );
  });

  const ok = ['F0', 'B0', 'W0', 'F1', 'B1', 'W1'];

  it('rejects a value that is not an array', () => {
    expect(inputErrorOf(() => parseSchedule({ stages: [ok] }, 1, 2)).message).toContain('schedule must be an array with one op list per stage');
  });

  it('rejects a wrong number of stages, naming both counts', () => {
    expect(inputErrorOf(() => parseSchedule([ok], 2, 2)).message).toBe('schedule has 1 stages, the profile has 2');
    expect(inputErrorOf(() => parseSchedule([ok, ok, ok], 2, 2)).message).toBe('schedule has 3 stages, the profile has 2');
  });

  it('rejects a stage that is not an array', () => {
    expect(inputErrorOf(() => parseSchedule([ok, 'F0 B0'], 2, 2)).message).toContain('schedule stage 1 must be an array of ops');
  });

  it.each([['X1'], ['F-1'], ['F01']])('rejects the bad token %j with its stage and position', (token) => {
    const message = inputErrorOf(() => parseSchedule([ok, ['F0', 'B0', token, 'W0', 'B1', 'W1']], 2, 2)).message;
    expect(message).toContain('schedule stage 1 position 2');
    expect(message).toContain(`"${token}" is not an op`);
  });

  it('rejects an out-of-range microbatch', () => {
    const message = inputErrorOf(() => parseSchedule([['F0', 'B0', 'W0', 'F2', 'B1', 'W1']], 1, 2)).message;
    expect(message).toContain('schedule stage 0 position 3');
    expect(message).toContain('names microbatch 2, but the pipeline has 2');
  });

  it('rejects a duplicate op', () => {
    expect(inputErrorOf(() => parseSchedule([['F0', 'B0', 'W0', 'F1', 'B1', 'B1']], 1, 2)).message).toBe('schedule stage 0: B1 appears more than once');
  });

  it('rejects a missing op, naming it', () => {
    expect(inputErrorOf(() => parseSchedule([ok, ['F0', 'B0', 'W0', 'F1', 'W1']], 2, 2)).message).toMatch(/^schedule stage 1 misses B1/);
    // The first op code (F0) and the last (W1) are checked too.
    expect(inputErrorOf(() => parseSchedule([['B0', 'W0', 'F1', 'B1', 'W1']], 1, 2)).message).toMatch(/^schedule stage 0 misses F0/);
    expect(inputErrorOf(() => parseSchedule([['F0', 'B0', 'W0', 'F1', 'B1']], 1, 2)).message).toMatch(/^schedule stage 0 misses W1/);
    expect(inputErrorOf(() => parseSchedule([[]], 1, 1)).message).toMatch(/^schedule stage 0 misses F0/);
  });

  it('does not check cross-stage dependencies (that is the simulator\'s job)', () => {
    // B0 before F0 is structurally complete, so parsing accepts it.
    expect(formatSchedule(parseSchedule([['B0', 'F0', 'W0']], 1, 1))).toEqual([['B0', 'F0', 'W0']]);
  });
});

describe('warmupOf', () => {
  it('counts the forwards before the first B, ignoring Ws', () => {
    const schedule = parseSchedule(
      [
        ['F0', 'F1', 'F2', 'B0', 'F3', 'B1', 'B2', 'B3', 'W0', 'W1', 'W2', 'W3'],
        ['F0', 'B0', 'W0', 'F1', 'F2', 'B1', 'F3', 'B2', 'B3', 'W1', 'W2', 'W3'],
        // W before B cannot run, but warmupOf only looks at the order: the W does not end the warm-up.
        ['F0', 'W0', 'F1', 'B0', 'F2', 'F3', 'B1', 'B2', 'B3', 'W1', 'W2', 'W3'],
      ],
      3,
      4,
    );
    expect(warmupOf(schedule)).toEqual([3, 1, 2]);
  });

  it('is N for a GPipe-like order and 0 for a stage that starts with B', () => {
    const schedule = parseSchedule([['F0', 'F1', 'B0', 'B1', 'W0', 'W1'], ['B0', 'F0', 'F1', 'B1', 'W0', 'W1']], 2, 2);
    expect(warmupOf(schedule)).toEqual([2, 0]);
  });
});
