import loadHighs from 'highs';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { iterationLowerBoundMs, opHeadsAndTails } from './lower-bound';
import { propagatedWindows } from './op-windows';
import { MilpInterrupts, MilpModel, MilpSolver, optimalPlan } from './optimal-planner';
import { planPipeline } from './plan';
import { seededRandom } from './seeded-random';

// No timings are asserted: a fake clock stands for time, so these tests show where the planner
// reads it and what it does with it, the same on every machine.

let highs: MilpSolver;
beforeAll(async () => {
  highs = await loadHighs();
});

/** A clock that moves `tick` ms on every reading, and by hand. */
function fakeClock(tick: number) {
  let t = 0;
  return {
    now: () => (t += tick),
    advance: (ms: number) => void (t += ms),
    get time() {
      return t;
    },
  };
}

/** HiGHS, with parsing an LP text costing `msPerChar` of fake time per character; records the statuses. */
function slowParser(clock: { advance(ms: number): void }, msPerChar: number) {
  const statuses: number[] = [];
  const parsed: number[] = [];
  const solver: MilpSolver = {
    createModel(source) {
      clock.advance(source.data.length * msPerChar);
      parsed.push(source.data.length);
      const model = highs.createModel(source);
      const wrapped: MilpModel = {
        options: model.options,
        info: model.info,
        setSolution: (s) => model.setSolution(s),
        run: (callbacks?: MilpInterrupts) => {
          const result = model.run(callbacks);
          statuses.push(model.getModelStatus());
          return result;
        },
        getModelStatus: () => model.getModelStatus(),
        getSolution: () => model.getSolution(),
        getColByName: (name) => model.getColByName(name),
        dispose: () => model.dispose(),
      };
      return wrapped;
    },
  };
  return { solver, statuses, parsed };
}

/** A 200 ms link on op times of 5-20 ms: at 4 x 8 its LP is about 60 k characters, enough to calibrate the parse rate. */
function slowLinkModel(S: number, N: number): PipelineModel {
  const random = seededRandom(7);
  const int = (a: number, b: number) => a + Math.floor(random() * (b - a + 1));
  const ms = () => Array.from({ length: S }, () => int(5, 20));
  const linkMs = Array.from({ length: S - 1 }, (_, i) => (i === 1 ? 200 : 0.5));
  return toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs: ms(), bMs: ms(), wMs: ms(), linkMs }));
}

describe('optimalPlan time limit', () => {
  const model = slowLinkModel(4, 8);
  const warm = planPipeline(model, { policy: 'gpipe' }).run;

  it('reads the clock in every phase: the call ends within a few readings of its limit, and HiGHS is stopped at it', () => {
    const clock = fakeClock(1);
    // A stand-in for HiGHS that never finishes on its own: it calls the MIP interrupt channel
    // until asked to stop, and records the time limit it was given (fake ms).
    const limits: number[] = [];
    let interrupted = 0;
    const endless: MilpSolver = {
      createModel() {
        let status = 0;
        const model: MilpModel = {
          options: { set: (values) => void limits.push(Number(values.time_limit) * 1000) },
          info: { get: (name) => (name === 'primal_solution_status' ? 0 : Number.NaN) },
          setSolution: () => undefined,
          run: (callbacks?: MilpInterrupts) => {
            let stop = false;
            for (let n = 0; n < 1e6 && !stop; n++) callbacks?.[6]?.({ interrupt: () => void (stop = true) });
            status = stop ? 17 : 13;
            if (stop) interrupted++;
            return undefined;
          },
          getModelStatus: () => status,
          getSolution: () => ({ colValue: [] }),
          getColByName: () => -1,
          dispose: () => undefined,
        };
        return model;
      },
    };
    const result = optimalPlan(model, endless, warm, { timeLimitMs: 1000, now: clock.now, depthFirst: false });
    expect(result.proven).toBe(false);
    expect(interrupted).toBeGreaterThan(0);
    limits.forEach((limit) => expect(limit).toBeLessThanOrEqual(1000));
    expect(clock.time).toBeLessThanOrEqual(1000 + 5);
  });

  it('can fail: a solver that ignores the interrupt runs past the limit, and the check above would catch it', () => {
    const clock = fakeClock(1);
    const deaf: MilpSolver = {
      createModel(source) {
        const model = highs.createModel(source);
        return Object.assign(Object.create(model) as MilpModel, {
          options: model.options,
          info: model.info,
          run: () => (clock.advance(10_000), model.run()),
          getModelStatus: () => model.getModelStatus(),
          getSolution: () => model.getSolution(),
          getColByName: (name: string) => model.getColByName(name),
          dispose: () => model.dispose(),
        });
      },
    };
    optimalPlan(model, deaf, warm, { timeLimitMs: 1000, now: clock.now, depthFirst: false });
    expect(clock.time).toBeGreaterThan(1000 + 5);
  });

  it('does not build an LP whose parse, at the rate seen on the last large one, would not fit in the time left', () => {
    // Coarse ticks keep the depth-first searches short (it reads the clock every 1024 nodes).
    const clock = fakeClock(20);
    // Far slower than the default estimate: the first call parses and overshoots (the check catches it)...
    const slow = slowParser(clock, 2e-2);
    const first = optimalPlan(model, slow.solver, warm, { timeLimitMs: 1000, now: clock.now, depthFirst: false });
    expect(slow.parsed.length).toBeGreaterThan(0);
    expect(clock.time).toBeGreaterThan(1000 * 1.1 + 50);
    // ...then knows the rate: the next call builds no model it could not parse in time and keeps the limit.
    const started = clock.time;
    const parsedBefore = slow.parsed.length;
    const second = optimalPlan(model, slow.solver, warm, { timeLimitMs: 1000, now: clock.now, depthFirst: false });
    expect(slow.parsed.length).toBe(parsedBefore);
    expect(clock.time - started).toBeLessThanOrEqual(1000 + 5 * 20);
    expect(second.run.iterationMs).toBeLessThanOrEqual(warm.iterationMs);
    expect(first.run.iterationMs).toBeLessThanOrEqual(warm.iterationMs);
  });

  it('a propagation stopped by its deadline returns looser windows, never tighter ones', () => {
    const heads = opHeadsAndTails(model);
    const target = iterationLowerBoundMs(model) * 1.001;
    const full = propagatedWindows(model, heads, target);
    const stopped = propagatedWindows(model, heads, target, { deadline: 0, now: () => 1 });
    expect(full).not.toBeNull();
    expect(stopped).not.toBeNull();
    let looser = 0;
    for (let x = 0; x < stopped!.est.length; x++) {
      expect(stopped!.est[x]).toBeLessThanOrEqual(full!.est[x] + 1e-9);
      expect(stopped!.lct[x]).toBeGreaterThanOrEqual(full!.lct[x] - 1e-9);
      if (stopped!.est[x] < full!.est[x] - 1e-9 || stopped!.lct[x] > full!.lct[x] + 1e-9) looser++;
    }
    // Can fail: the full propagation does tighten some window, so a stopped one is told apart.
    expect(looser).toBeGreaterThan(0);
  });
});
