import { InputError } from '../../core/input-error';
import { parseDelaySpec } from './delay-spec';
import { dynamicDelay, PAPER_TRACES } from './dynamic-delay';

/** The InputError message parseDelaySpec throws, or fails the test. */
function errorOf(spec: string, links = 7): string {
  try {
    parseDelaySpec(spec, links);
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error(`expected an InputError for ${JSON.stringify(spec)}`);
}

const everyLink = (spec: string, links: number, iteration: number, timeMs = 0): number[] => {
  const model = parseDelaySpec(spec, links);
  return Array.from({ length: links }, (_, link) => model.delayMs(link, timeMs, iteration));
};

describe('parseDelaySpec', () => {
  it('"none" has no delay and no NIC failure', () => {
    const model = parseDelaySpec(' none ', 7);
    expect(everyLink('none', 7, 50)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(model.nicFailed(0, 50)).toBe(false);
    expect(model.name).toBe('none');
  });

  it('"const:" sets fixed delays on the listed links', () => {
    expect(everyLink('const:2=30', 3, 0)).toEqual([0, 0, 30]);
    expect(everyLink('const:0=60,6=60', 7, 1000, 5e4)).toEqual([60, 0, 0, 0, 0, 0, 60]);
    expect(everyLink('const: 1 = 12.5 ', 2, 3)).toEqual([0, 12.5]);
  });

  it('"step:" switches delays at iterations', () => {
    expect(everyLink('step:15@2=30,85@2=0', 3, 14)).toEqual([0, 0, 0]);
    expect(everyLink('step:15@2=30,85@2=0', 3, 15)).toEqual([0, 0, 30]);
    expect(everyLink('step:15@2=30,85@2=0', 3, 84)).toEqual([0, 0, 30]);
    expect(everyLink('step:15@2=30,85@2=0', 3, 85)).toEqual([0, 0, 0]);
    expect(everyLink('step:0@0=10,5@1=20', 2, 7)).toEqual([10, 20]);
  });

  it('"dynamic:" builds the paper trace with defaults: all links, seed 1, N(30, 10)', () => {
    const model = parseDelaySpec('dynamic:A', 7);
    const direct = dynamicDelay({ links: [0, 1, 2, 3, 4, 5, 6], meanMs: 30, stdMs: 10, intervalMs: PAPER_TRACES.A, seed: 1 });
    for (let t = 0; t < 3000; t += 17) for (let link = 0; link < 7; link++) expect(model.delayMs(link, t, 0)).toBe(direct.delayMs(link, t, 0));
  });

  it('"dynamic:" takes seed, links, mean and std options', () => {
    const seeded = parseDelaySpec('dynamic:B:seed=7', 4);
    const direct = dynamicDelay({ links: [0, 1, 2, 3], meanMs: 30, stdMs: 10, intervalMs: PAPER_TRACES.B, seed: 7 });
    for (let t = 0; t < 3000; t += 17) expect(seeded.delayMs(2, t, 0)).toBe(direct.delayMs(2, t, 0));

    const some = parseDelaySpec('dynamic:C:links=0,3', 7);
    const someDirect = dynamicDelay({ links: [0, 3], meanMs: 30, stdMs: 10, intervalMs: PAPER_TRACES.C, seed: 1 });
    for (let t = 0; t < 3000; t += 17) {
      expect(some.delayMs(0, t, 0)).toBe(someDirect.delayMs(0, t, 0));
      expect(some.delayMs(3, t, 0)).toBe(someDirect.delayMs(3, t, 0));
      expect(some.delayMs(1, t, 0)).toBe(0);
      expect(some.delayMs(6, t, 0)).toBe(0);
    }
    expect(some.delayMs(0, 100, 0)).toBeGreaterThan(0);

    const tuned = parseDelaySpec('dynamic:A:std=0:mean=12:links=1:seed=3', 2);
    for (let t = 0; t < 1000; t += 17) expect(tuned.delayMs(1, t, 0)).toBe(12);
  });

  it('rejects unknown forms and points trace files at parseDelayTrace', () => {
    expect(errorOf('slow')).toMatch(/is not one of: none/);
    expect(errorOf('')).toMatch(/is not one of/);
    expect(errorOf('trace:bench/traces/x.trace')).toMatch(/parseDelayTrace/);
    expect(errorOf('const')).toMatch(/nothing after "const:"/);
    expect(errorOf('step:')).toMatch(/nothing after "step:"/);
  });

  it('rejects link indices the pipeline does not have', () => {
    expect(errorOf('const:7=30', 7)).toMatch(/link 7 does not exist \(links are 0\.\.6\)/);
    expect(errorOf('step:10@3=30', 3)).toMatch(/link 3 does not exist/);
    expect(errorOf('dynamic:A:links=0,9', 7)).toMatch(/link 9 does not exist/);
    expect(errorOf('const:-1=30')).toMatch(/link "-1" is not a non-negative integer/);
  });

  it('rejects malformed const and step items', () => {
    expect(errorOf('const:2')).toMatch(/const "2": expected LINK=MS/);
    expect(errorOf('const:2=abc')).toMatch(/delay "abc"/);
    expect(errorOf('const:2=-5')).toMatch(/delay "-5"/);
    expect(errorOf('const:2=')).toMatch(/delay ""/);
    expect(errorOf('const:2=30,2=40')).toMatch(/link 2 is given twice/);
    expect(errorOf('const:2=30,,3=1')).toMatch(/empty item/);
    expect(errorOf('step:2=30')).toMatch(/expected ITERATION@LINK=MS/);
    expect(errorOf('step:x@2=30')).toMatch(/iteration "x"/);
    expect(errorOf('step:10@2=1e3')).toMatch(/delay "1e3"/);
  });

  it('rejects bad dynamic traces and options', () => {
    expect(errorOf('dynamic:D')).toMatch(/trace "D" is not A, B or C/);
    expect(errorOf('dynamic:A:seed=x')).toMatch(/seed "x"/);
    expect(errorOf('dynamic:A:speed=3')).toMatch(/unknown option "speed"/);
    expect(errorOf('dynamic:A:seed')).toMatch(/not KEY=VALUE/);
    expect(errorOf('dynamic:A:seed=1:seed=2')).toMatch(/"seed" is given twice/);
    expect(errorOf('dynamic:A:links=1,1')).toMatch(/given twice/);
    expect(errorOf('dynamic:A:mean=-3')).toMatch(/delay "-3"/);
  });

  it('rejects a bad link count', () => {
    expect(errorOf('none', -1)).toMatch(/link count -1/);
    expect(errorOf('none', 2.5)).toMatch(/link count 2.5/);
  });
});
