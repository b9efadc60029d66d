import fc from 'fast-check';
import { InputError } from '../../core/input-error';
import { DelayStep, stepDelay } from './step-delay';

describe('stepDelay', () => {
  it('applies a step from its iteration on and ends it with a 0 step', () => {
    const model = stepDelay([
      { fromIteration: 15, links: [2], delayMs: 30 },
      { fromIteration: 85, links: [2], delayMs: 0 },
    ]);
    expect(model.delayMs(2, 0, 0)).toBe(0);
    expect(model.delayMs(2, 0, 14)).toBe(0);
    expect(model.delayMs(2, 0, 15)).toBe(30);
    expect(model.delayMs(2, 99999, 84)).toBe(30);
    expect(model.delayMs(2, 0, 85)).toBe(0);
    expect(model.delayMs(2, 0, 1000)).toBe(0);
    expect(model.delayMs(1, 0, 50)).toBe(0);
    expect(model.delayMs(3, 0, 50)).toBe(0);
    expect(model.nicFailed(2, 50)).toBe(false);
  });

  it('lets later steps override earlier ones per link, leaving other links alone', () => {
    const model = stepDelay([
      { fromIteration: 10, links: [0, 5], delayMs: 40 },
      { fromIteration: 20, links: [5], delayMs: 10 },
      { fromIteration: 30, links: [0], delayMs: 0 },
    ]);
    expect(model.delayMs(0, 0, 25)).toBe(40);
    expect(model.delayMs(5, 0, 25)).toBe(10);
    expect(model.delayMs(0, 0, 30)).toBe(0);
    expect(model.delayMs(5, 0, 30)).toBe(10);
  });

  it('does not depend on the order steps are listed in, except that a later one wins at the same iteration', () => {
    const model = stepDelay([
      { fromIteration: 50, links: [1], delayMs: 0 },
      { fromIteration: 10, links: [1], delayMs: 20 },
      { fromIteration: 10, links: [1], delayMs: 25 },
    ]);
    expect(model.delayMs(1, 0, 9)).toBe(0);
    expect(model.delayMs(1, 0, 10)).toBe(25);
    expect(model.delayMs(1, 0, 49)).toBe(25);
    expect(model.delayMs(1, 0, 50)).toBe(0);
  });

  it('matches a direct replay of the steps (property)', () => {
    const step = fc.record({ fromIteration: fc.integer({ min: 0, max: 50 }), links: fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }), delayMs: fc.integer({ min: 0, max: 100 }) });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 12 }), (steps: DelayStep[]) => {
        const model = stepDelay(steps);
        for (let iteration = 0; iteration <= 55; iteration++) {
          for (let link = 0; link <= 5; link++) {
            // The newest step (highest fromIteration, then last listed) naming the link wins.
            let expected = 0;
            let bestFrom = -1;
            steps.forEach((s) => {
              if (s.fromIteration <= iteration && s.links.includes(link) && s.fromIteration >= bestFrom) {
                bestFrom = s.fromIteration;
                expected = s.delayMs;
              }
            });
            expect(model.delayMs(link, 0, iteration)).toBe(expected);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('is not changed by later edits to the steps it was built from', () => {
    const steps = [{ fromIteration: 0, links: [1], delayMs: 30 }];
    const model = stepDelay(steps);
    steps[0].links.push(2);
    steps[0].delayMs = 99;
    expect(model.delayMs(1, 0, 5)).toBe(30);
    expect(model.delayMs(2, 0, 5)).toBe(0);
  });

  it('names itself in the spec syntax', () => {
    expect(stepDelay([{ fromIteration: 85, links: [2], delayMs: 0 }, { fromIteration: 15, links: [2, 3], delayMs: 30 }]).name).toBe('step:15@2=30,15@3=30,85@2=0');
    expect(stepDelay([]).name).toBe('none');
  });

  it('rejects bad iterations, links and delays, naming the step', () => {
    expect(() => stepDelay([{ fromIteration: -1, links: [0], delayMs: 1 }])).toThrow(InputError);
    expect(() => stepDelay([{ fromIteration: 0, links: [0], delayMs: 1 }, { fromIteration: 1.5, links: [0], delayMs: 1 }])).toThrow(/step 1/);
    expect(() => stepDelay([{ fromIteration: 0, links: [-2], delayMs: 1 }])).toThrow(/link -2/);
    expect(() => stepDelay([{ fromIteration: 0, links: [0], delayMs: -1 }])).toThrow(InputError);
    expect(() => stepDelay([{ fromIteration: 0, links: [0], delayMs: NaN }])).toThrow(InputError);
  });
});
