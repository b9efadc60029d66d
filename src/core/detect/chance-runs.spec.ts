import { ChanceRuns } from './chance-runs';

describe('ChanceRuns', () => {
  const LINKS = 8;
  /** `samples` healthy samples of which a share `p` end a chance run of one bad sample. */
  const feed = (c: ChanceRuns, samples: number, p: number) => {
    let acc = 0;
    for (let i = 0; i < samples; i++) {
      acc += p;
      const ended = acc >= 1 ? 1 : 0;
      if (ended) acc -= 1;
      c.count(ended, LINKS);
    }
  };

  it('keeps enterAfter on a quiet job', () => {
    const c = new ChanceRuns(3, 1e-5);
    feed(c, 20000, 0);
    expect(c.badRunNeeded).toBe(3);
  });

  it('asks for longer runs where one healthy sample in seven is bad, early in the job (a few rounds of samples)', () => {
    const c = new ChanceRuns(3, 1e-5);
    feed(c, 10 * LINKS, 1 / 7);
    // 8 x (1/7)^k <= 1e-5 first at k = 7; capped at twice enterAfter.
    expect(c.badRunNeeded).toBe(6);
    expect(c.badRate).toBeCloseTo(1 / 7, 1);
  });

  it('follows new knobs: a chance rate of 1 asks for enterAfter again', () => {
    const c = new ChanceRuns(3, 1e-5);
    feed(c, 4000, 0.05);
    expect(c.badRunNeeded).toBeGreaterThan(3);
    c.reconfigure(3, 1);
    expect(c.badRunNeeded).toBe(3);
  });
});
