import { simulateSchedule } from '../engine/simulator';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { DeadEnds } from './dead-ends';
import { iterationLowerBoundMs, opHeadsAndTails } from './lower-bound';
import { propagatedWindows } from './op-windows';
import { scheduleWithin } from './schedule-within';
import { seededRandom } from './seeded-random';

// Bench instance #13 of `npm run bench:engine` (against the optimum): 540.448 ms is optimal (HiGHS
// alone proves it in about 12 s), so 540.4476 has no schedule and 540.449 has one.
const model = toPipelineModel(
  validateProfile({
    stages: 5,
    microbatches: 11,
    fMs: [16.87381011317484, 8.228542221477255, 10.028056554729119, 15.346812825882807, 5.247259120224044],
    bMs: [12.724733363138512, 18.764162784209475, 12.443853636505082, 11.434264823328704, 15.098602764774114],
    wMs: [8.90259723411873, 6.369076381670311, 7.977745564421639, 10.90607053018175, 11.68543998268433],
    linkMs: [0.5, 0.5, 44.90907495142892, 36.34385367971845],
  }),
);
const below = 540.4476;
const above = 540.449;
const unlimited = { maxNodes: 10_000_000, deadline: Number.POSITIVE_INFINITY, now: () => 0 };
const search = (target: number, deadEnds: DeadEnds) => scheduleWithin(model, propagatedWindows(model, opHeadsAndTails(model), target)!, target, { ...unlimited, deadEnds });

function randomModel(seed: number, stages: number, microbatches: number): PipelineModel {
  const random = seededRandom(seed);
  const int = (a: number, b: number) => a + Math.floor(random() * (b - a + 1));
  const ms = () => Array.from({ length: stages }, () => int(2, 12));
  const linkMs = Array.from({ length: stages - 1 }, () => (random() < 0.5 ? int(5, 30) : 0));
  return toPipelineModel(validateProfile({ stages, microbatches, fMs: ms(), bMs: ms(), wMs: ms(), linkMs }));
}

/** A store that keeps its dead ends whatever the target: unsound above the target they were proven at. */
class NeverForgets extends DeadEnds {
  override prepare(): void {}
}

describe('DeadEnds', () => {
  it('the search reaches the same optimum with and without them', () => {
    // Descend to the optimum (ask for strictly better until none is left), one store for the
    // whole descent: the targets near the optimum are where the search backtracks.
    const descend = (m: PipelineModel, remember: boolean): number | null => {
      const deadEnds = remember ? new DeadEnds() : null;
      let best = iterationLowerBoundMs(m) * 1.5;
      for (;;) {
        const target = best * (1 - 1e-6);
        const windows = propagatedWindows(m, opHeadsAndTails(m), target);
        if (!windows) return best;
        const found = scheduleWithin(m, windows, target, { ...unlimited, maxNodes: 300_000, deadEnds });
        if (found === 'unknown') return null;
        if (found === 'infeasible') return best;
        best = simulateSchedule(m, found).iterationMs;
      }
    };
    let compared = 0;
    for (let seed = 1; seed <= 8; seed++) {
      const m = randomModel(100 + seed, 3 + (seed % 2), 5 + (seed % 3));
      const a = descend(m, true);
      const b = descend(m, false);
      if (a === null || b === null) continue;
      compared++;
      expect(a).toBeCloseTo(b, 6);
    }
    expect(compared).toBeGreaterThan(4);
  });

  it('carries over down to a lower target and starts afresh above', () => {
    const store = new DeadEnds();
    const found = search(above, store);
    expect(typeof found).toBe('object');
    expect(simulateSchedule(model, found as Int32Array[]).iterationMs).toBeLessThanOrEqual(above);
    // The dead ends proven at 540.449 hold at 540.4476.
    expect(search(below, store)).toBe('infeasible');
    // Those proven at 540.4476 (the root among them) do not hold at 540.449.
    expect(typeof search(above, store)).toBe('object');
  });

  it('can fail: a store kept above the target of its proofs rules out the schedule that exists', () => {
    const store = new NeverForgets();
    expect(search(below, store)).toBe('infeasible');
    expect(search(above, store)).toBe('infeasible');
  });

  it('can fail: dead ends matched with 5 ms to spare rule out the schedule that exists', () => {
    expect(search(above, new DeadEnds(5))).toBe('infeasible');
  });
});
