import { seededRandom } from '../planner/seeded-random';
import { LearnedBaseline, QUANTILE } from './learned-baseline';
import { SlidingWindow } from './sliding-window';

/** Window medians (16 samples) of a 5 ms ring whose per-iteration medians are lognormal, sigma 0.6 (the outside sweep's noise). */
function noisyMedians(count: number, seed: number): number[] {
  const random = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const window = new SlidingWindow(16);
  const out: number[] = [];
  for (let i = 0; i < count + 8; i++) {
    window.add(5 * Math.exp(0.6 * gauss()));
    if (i >= 8) out.push(window.median());
  }
  return out;
}

describe('LearnedBaseline', () => {
  const BAND = 5;
  const learn = (medians: number[]) => {
    const b = new LearnedBaseline();
    for (const m of medians) b.observe(m, b.ms + BAND, BAND);
    return b.ms;
  };

  it('stays near the healthy level however long a noisy link runs: a low quantile of its window medians', () => {
    const medians = noisyMedians(20000, 3);
    const level = learn(medians);
    const below = medians.slice(-5000).filter((m) => m < level).length / 5000;
    expect(below).toBeGreaterThan(QUANTILE / 3);
    expect(below).toBeLessThan(QUANTILE * 2);
    expect(level).toBeGreaterThan(3.5); // the ring runs 5 ms
  });

  it('twin: the lowest window median ever seen (the rule it replaces) falls far below the healthy level, so ordinary samples read as stragglers', () => {
    const medians = noisyMedians(20000, 3);
    const lowest = Math.min(...medians);
    expect(lowest).toBeLessThan(3.5);
    expect(medians.slice(-5000).filter((m) => m < lowest).length).toBe(0);
  });

  it('is not moved by a lasting straggler (windows above the ceiling), however long', () => {
    const b = new LearnedBaseline();
    for (let i = 0; i < 50; i++) b.observe(5, b.ms + BAND, BAND);
    for (let i = 0; i < 5000; i++) b.observe(35, b.ms + BAND, BAND);
    expect(b.ms).toBe(5);
  });

  it('twin: with no ceiling the same straggler becomes the new normal', () => {
    const b = new LearnedBaseline();
    for (let i = 0; i < 50; i++) b.observe(5, Infinity, BAND);
    for (let i = 0; i < 5000; i++) b.observe(35, Infinity, BAND);
    expect(b.ms).toBe(35);
  });

  it('drops at once to a window a straggler size below (the level was learned while the link was slow)', () => {
    const b = new LearnedBaseline();
    b.observe(35, Infinity, BAND);
    b.observe(5, b.ms + BAND, BAND);
    expect(b.ms).toBe(5);
  });

  it('steps within the range of what it saw, and reset forgets it', () => {
    const b = new LearnedBaseline();
    b.observe(10, Infinity, BAND);
    b.observe(9, b.ms + BAND, BAND);
    expect(b.ms).toBeGreaterThanOrEqual(9);
    expect(b.ms).toBeLessThan(10);
    b.observe(Number.NaN, Infinity, BAND);
    b.observe(-1, Infinity, BAND);
    expect(b.ms).toBeGreaterThanOrEqual(9);
    b.reset();
    expect(b.ms).toBeNaN();
  });
});

describe('LearnedBaseline.lowestMs (the slow-from-the-first-sample guard)', () => {
  it('stays where the level has been lowest while noise carries the level up for a while', () => {
    const b = new LearnedBaseline();
    b.observe(5, Infinity, 5);
    for (let i = 0; i < 200; i++) b.observe(9.5, b.ms + 5, 5); // a long run of high, healthy-sized medians
    expect(b.ms).toBeGreaterThan(9);
    expect(b.lowestMs).toBe(5);
  });
});
