import fc from 'fast-check';
import { StragglerHistory } from './straggler-history';

const history = () => new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });

/** Replays on/off spells of one key: `on` iterations straggling, then `off` healthy, `times` times. */
function flap(h: StragglerHistory, key: string, on: number, off: number, times: number, from = 0): number {
  let t = from;
  for (let k = 0; k < times; k++) {
    for (let i = 0; i < on; i++) h.observe(t++, [key]);
    for (let i = 0; i < off; i++) h.observe(t++, []);
  }
  return t;
}

describe('StragglerHistory', () => {
  it('a straggler with no history is expected to last the prior, and at least as long as it has lasted (Lindy)', () => {
    const h = history();
    h.observe(0, ['p:0:1']);
    expect(h.expectedRemaining('p:0:1', 0)).toBe(100);
    h.observe(500, ['p:0:1']);
    expect(h.expectedRemaining('p:0:1', 500)).toBe(500);
  });

  it('a flapping link is expected to end within a few iterations: its own short episodes outweigh the prior', () => {
    const h = history();
    const t = flap(h, 'p:0:2', 3, 7, 10);
    h.observe(t, ['p:0:2']);
    h.observe(t + 1, ['p:0:2']);
    expect(h.expectedRemaining('p:0:2', t + 1)).toBeLessThan(15);
  });

  it('a straggler that outlives every episode of its history falls back to the prior: a flapping past does not hide a lasting fault', () => {
    const h = history();
    const t = flap(h, 'p:0:2', 3, 7, 10);
    for (let i = 0; i <= 20; i++) h.observe(t + i, ['p:0:2']);
    expect(h.expectedRemaining('p:0:2', t + 20)).toBe(100);
  });

  it("other links' episodes inform a new link at half weight", () => {
    const h = history();
    let t = 0;
    for (let k = 0; k < 20; k++) t = flap(h, `p:0:${k % 5}`, 2, 5, 1, t);
    h.observe(t, ['p:1:0']);
    h.observe(t + 1, ['p:1:0']);
    expect(h.expectedRemaining('p:1:0', t + 1)).toBeLessThan(10);
  });

  it('healthy spells: a link that comes back quickly is not expected to stay healthy long; one never seen straggling is healthy for good', () => {
    const h = history();
    const t = flap(h, 'p:0:2', 20, 4, 8) - 3; // one iteration into the last healthy spell
    expect(h.expectedHealthy('p:0:2', t)).toBeLessThan(10);
    expect(h.expectedHealthy('p:9:9', t)).toBe(Infinity);
    expect(h.expectedHealthyNow(t)).toBeLessThan(10);
    // Healthy longer than any gap before: the prior again.
    expect(h.expectedHealthy('p:0:2', t + 10)).toBeGreaterThanOrEqual(100);
  });

  it("learns an episode without the detector's hold: a burst flagged for 2 + 5 iterations lasted 2 (and the one without the hold, 7)", () => {
    const held = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25, holdIterations: 5 });
    const raw = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    for (const h of [held, raw]) {
      for (let k = 0; k < 20; k++) flap(h, 'p:0:2', 7, 50, 1, k * 57);
      h.observe(20 * 57, ['p:0:2']);
    }
    expect(held.expectedRemaining('p:0:2', 20 * 57)).toBeLessThan(4);
    expect(raw.expectedRemaining('p:0:2', 20 * 57)).toBeGreaterThan(7);
  });

  it('a recovering straggler (newest samples healthy, still held by the detector) is expected to end now, and to be looked at again', () => {
    const h = history();
    h.observe(0, ['p:0:1']);
    h.observe(1, ['p:0:1'], ['p:0:1']);
    expect(h.expectedRemaining('p:0:1', 1)).toBe(0);
    expect(h.withinHistory('p:0:1', 1)).toBe(true);
    h.observe(2, ['p:0:1']); // slow again
    expect(h.expectedRemaining('p:0:1', 2)).toBe(100);
  });

  it('the estimate is positive and finite for any history (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 })), { maxLength: 40 }), fc.integer({ min: 0, max: 200 }), (spells, age) => {
        const h = history();
        let t = 0;
        for (const [on, off] of spells) t = flap(h, 'k', on, off, 1, t);
        for (let i = 0; i <= age; i++) h.observe(t + i, ['k']);
        const e = h.expectedRemaining('k', t + age);
        return e > 0 && Number.isFinite(e) && e <= Math.max(100, age) + 50;
      }),
    );
  });

  it('reconfigured with another prior, keeps the episodes it learned: the same history answers with the new prior', () => {
    const learn = (h: StragglerHistory) => {
      for (let k = 0; k < 3; k++) {
        for (let i = 0; i < 4; i++) h.observe(10 * k + i, ['p:0:1']);
        h.observe(10 * k + 4, []);
      }
      h.observe(40, ['p:0:1']);
    };
    const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    learn(h);
    h.reconfigure({ priorIterations: 1000, priorWeight: 2 });
    const fresh = new StragglerHistory({ priorIterations: 1000, priorWeight: 2 });
    learn(fresh);
    expect(h.episodesOf('p:0:1')).toBe(3);
    expect(h.expectedRemaining('p:0:1', 41)).toBe(fresh.expectedRemaining('p:0:1', 41));
    // The twin: without the reconfiguration the old prior answers.
    const old = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    learn(old);
    expect(old.expectedRemaining('p:0:1', 41)).not.toBe(h.expectedRemaining('p:0:1', 41));
    expect(() => h.reconfigure({ priorIterations: 0, priorWeight: 1 })).toThrow(RangeError);
  });

  describe('what counts as an episode: mild and severe spells (issue 29, item 4)', () => {
    /** Noise's history: 40 spells of 1-2 iterations on four links, mild (none reached the severe size). */
    const noisy = (severeToo: boolean) => {
      const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.01, holdIterations: 0 });
      let t = 0;
      for (let k = 0; k < 40; k++) {
        const key = `p:0:${k % 4}`;
        for (let i = 0; i < 1 + (k % 2); i++) h.observe(t++, [key], [], severeToo ? [key] : []);
        for (let i = 0; i < 5; i++) h.observe(t++, []);
      }
      return { h, t };
    };

    it("mild spells elsewhere do not teach the gate that a severe straggler ends at once: the prior answers", () => {
      const { h, t } = noisy(false);
      h.observe(t, ['p:1:2'], [], ['p:1:2']);
      expect(h.expectedRemaining('p:1:2', t)).toBe(100);
      expect(h.withinHistory('p:1:2', t)).toBe(false);
      // A mild straggler on the same link still learns from them: mild ones end within a couple of iterations.
      const mild = noisy(false);
      mild.h.observe(mild.t, ['p:1:2']);
      expect(mild.h.expectedRemaining('p:1:2', mild.t)).toBeLessThan(3);
    });

    it('twin: the same history of severe spells holds a new severe straggler back until it outlives them', () => {
      const { h, t } = noisy(true);
      h.observe(t, ['p:1:2'], [], ['p:1:2']);
      expect(h.expectedRemaining('p:1:2', t)).toBeLessThan(3);
      expect(h.withinHistory('p:1:2', t)).toBe(true);
      for (let i = 1; i <= 3; i++) h.observe(t + i, ['p:1:2'], [], ['p:1:2']);
      expect(h.expectedRemaining('p:1:2', t + 2)).toBeLessThan(1); // the 2-iteration spells end now
      expect(h.expectedRemaining('p:1:2', t + 3)).toBe(100); // outlived them all: the prior
    });

    it("a spell is severe once its size reached the severe size at some point, and is learned in that class", () => {
      const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.01 });
      h.observe(0, ['p:0:0']);
      h.observe(1, ['p:0:0'], [], ['p:0:0']); // grew severe
      h.observe(2, ['p:0:0']); // smaller again, still the same severe spell
      h.observe(3, []);
      h.observe(10, ['p:0:1'], [], ['p:0:1']);
      // The one severe episode (3 iterations) informs the new severe spell: a survivor at age 0.
      expect(h.withinHistory('p:0:1', 10)).toBe(true);
      h.observe(20, ['p:0:2']);
      expect(h.withinHistory('p:0:2', 20)).toBe(false); // no mild episode to learn from
    });
  });

  it('healthy for: since the end of the last episode of the given keys (of any key without); 0 while one straggles', () => {
    const h = history();
    expect(h.healthyFor(5)).toBe(Infinity);
    h.observe(10, ['p:0:1', 'p:0:2']);
    expect(h.healthyFor(10)).toBe(0);
    h.observe(11, ['p:0:2']); // p:0:1 ended at 11
    h.observe(12, []); // p:0:2 ended at 12
    // Counted from the episodes' ends, not from the last step that saw them: steps come at changes and maintenance ticks only.
    expect(h.healthyFor(30)).toBe(18);
    expect(h.healthyFor(30, ['p:0:1'])).toBe(19);
    expect(h.healthyFor(30, ['p:9:9'])).toBe(Infinity);
  });

  it("a recovery's healthy spell is judged on the keys its plan answered, not on another link's noise", () => {
    const h = history();
    let t = flap(h, 'p:0:1', 30, 1, 1); // the straggler the plan was for: one long episode
    t = flap(h, 'p:0:3', 1, 3, 8, t); // another link's noise: short gaps
    expect(h.expectedHealthyNow(t, ['p:0:1'])).toBeGreaterThanOrEqual(100);
    // Twin: over every key that straggled, the noisy link's short gaps answer.
    expect(h.expectedHealthyNow(t)).toBeLessThan(10);
  });
});
