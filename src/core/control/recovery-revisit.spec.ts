import fc from 'fast-check';
import { ControlDecision } from './control-decision.type';
import { StragglerHistory } from './straggler-history';
import { GateContext, gateSwitch, SwitchCostConfig } from './switch-gate';

const KEY = 'p:0:1';

function recovery(gainMs: number): ControlDecision {
  return { kind: 'recovery', pipelines: [], delegation: [], links: [], predictedPreviousMs: 700, predictedNewMs: 700 - gainMs, predictedStaticMs: 700, reschedule: true, detail: '' };
}

/** Link 1 straggled `episodes` times for `on` iterations with `off` between (some gaps `longOff`), and has just healed. */
function healed(on: number, off: number, longOff: number, episodes: number): { h: StragglerHistory; now: number } {
  const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25, holdIterations: 2 });
  let t = 0;
  for (let k = 0; k < episodes; k++) {
    for (let i = 0; i < on; i++) h.observe(t++, [KEY]);
    for (let i = 0; i < (k % 3 === 2 ? longOff : off); i++) h.observe(t++, []);
  }
  for (let i = 0; i < on; i++) h.observe(t++, [KEY]);
  h.observe(t, []);
  return { h, now: t };
}

/** The first iteration at which gateSwitch takes the recovery, asked every iteration with nothing else changing. */
function firstTakeStepping(decision: ControlDecision, config: SwitchCostConfig, ctx: GateContext, limit: number): number | null {
  for (let at = ctx.iteration + 1; at <= ctx.iteration + limit; at++) if (gateSwitch(decision, config, { ...ctx, iteration: at }).take) return at;
  return null;
}

describe('a declined recovery under its bound is decided again where the gate would take it (revisitAt)', () => {
  it('is the first iteration at which stepping every iteration takes it: no later, no step spent in between', () => {
    let early = 0;
    let atBound = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 25 }), fc.integer({ min: 1, max: 80 }), fc.integer({ min: 1, max: 10 }),
        fc.double({ min: 0.1, max: 30, noNaN: true }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 5, max: 40 }),
        (on, off, longOff, episodes, gainMs, lead, bound) => {
          const { h, now } = healed(on, off, longOff, episodes);
          const config: SwitchCostConfig = { costAware: true, switchCostMs: 100, predictionUncertainty: 0.1, stragglerPriorIterations: 100, stragglerPriorWeight: 0.25, delegatedRankMsPerIteration: 2, recoveryWithinIterations: bound };
          const ctx: GateContext = { iteration: now, leadIterations: lead, migrationMs: 0, history: h, answeredKeys: [KEY] };
          const verdict = gateSwitch(recovery(gainMs), config, ctx);
          if (verdict.take) return;
          expect(verdict.revisitSoon).toBe(true);
          const stepped = firstTakeStepping(recovery(gainMs), config, ctx, bound + 1);
          expect(verdict.revisitAt).toBe(stepped);
          if (stepped! < now + bound - h.healthyFor(now, [KEY])) early++;
          else atBound++;
        },
      ),
      { numRuns: 300, seed: 7 },
    );
    // Both ways a declined recovery comes to be taken are exercised: the spell aging into a gain, and the bound.
    expect(early).toBeGreaterThan(5);
    expect(atBound).toBeGreaterThan(5);
  });

  it('twin, broken on purpose: revisiting only at the bound comes later than stepping every iteration where the spell ages into a gain', () => {
    const { h, now } = healed(3, 10, 40, 6);
    const config: SwitchCostConfig = { costAware: true, switchCostMs: 100, predictionUncertainty: 0.1, stragglerPriorIterations: 100, stragglerPriorWeight: 0.25, recoveryWithinIterations: 40 };
    const ctx: GateContext = { iteration: now, leadIterations: 3, migrationMs: 0, history: h, answeredKeys: [KEY] };
    const verdict = gateSwitch(recovery(10), config, ctx);
    expect(verdict.take).toBe(false);
    const stepped = firstTakeStepping(recovery(10), config, ctx, 41)!;
    const onlyAtBound = now + 40 - h.healthyFor(now, [KEY]);
    expect(stepped).toBeLessThan(onlyAtBound);
    expect(verdict.revisitAt).toBe(stepped);
  });

  it('a straggler declined within its history is decided again at the next iteration (its size may grow with no flip)', () => {
    const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    let t = 0;
    for (let k = 0; k < 8; k++) {
      for (let i = 0; i < 3; i++) h.observe(t++, [KEY]);
      for (let i = 0; i < 10; i++) h.observe(t++, []);
    }
    h.observe(t, [KEY]);
    const straggler: ControlDecision = { ...recovery(0), kind: 'straggler', links: [{ dp: 0, link: 1, upRank: 1, downRank: 2, extraMs: 20, nicFailure: false }], predictedNewMs: 695 };
    const verdict = gateSwitch(straggler, { costAware: true, switchCostMs: 100, predictionUncertainty: 0.1, stragglerPriorIterations: 100, stragglerPriorWeight: 0.25 }, { iteration: t, leadIterations: 3, migrationMs: 0, history: h });
    expect(verdict.take).toBe(false);
    expect(verdict.revisitAt).toBe(t + 1);
  });
});
