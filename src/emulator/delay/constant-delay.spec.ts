import { InputError } from '../../core/input-error';
import { constantDelay } from './constant-delay';

describe('constantDelay', () => {
  it('gives listed links their delay at every time and iteration, and others 0', () => {
    const model = constantDelay({ 0: 60, 6: 45.5 });
    for (const [time, iteration] of [[0, 0], [1234.5, 7], [1e9, 100000]]) {
      expect(model.delayMs(0, time, iteration)).toBe(60);
      expect(model.delayMs(6, time, iteration)).toBe(45.5);
      expect(model.delayMs(1, time, iteration)).toBe(0);
      expect(model.delayMs(7, time, iteration)).toBe(0);
      expect(model.nicFailed(0, iteration)).toBe(false);
    }
    expect(model.suggestedIterations).toBeUndefined();
  });

  it('names itself in the spec syntax, "none" when empty', () => {
    expect(constantDelay({ 6: 60, 0: 30 }).name).toBe('const:0=30,6=60');
    expect(constantDelay({}).name).toBe('none');
    expect(constantDelay({}).delayMs(0, 0, 0)).toBe(0);
  });

  it('is not changed by later edits to the object it was built from', () => {
    const delays: Record<number, number> = { 2: 30 };
    const model = constantDelay(delays);
    delays[2] = 90;
    delays[3] = 10;
    expect(model.delayMs(2, 0, 0)).toBe(30);
    expect(model.delayMs(3, 0, 0)).toBe(0);
  });

  it('rejects negative or non-finite delays and bad link keys', () => {
    expect(() => constantDelay({ 1: -5 })).toThrow(InputError);
    expect(() => constantDelay({ 1: NaN })).toThrow(/link 1/);
    expect(() => constantDelay({ 1: Infinity })).toThrow(InputError);
    expect(() => constantDelay({ [-1]: 5 })).toThrow(/link -1/);
    expect(() => constantDelay({ 1.5: 5 })).toThrow(InputError);
  });
});
