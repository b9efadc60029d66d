import { CorpusScenario, StragglerLabel, StragglerSpec } from '../corpus/corpus.type';
import { ScenarioRun } from './run-scenario';
import { scoreRuns } from './score-runs';

const target = { kind: 'pipeline' as const, dp: 0, link: 1 };

function runWith(spec: StragglerSpec, switches: Array<{ iteration: number; kind: string }>): ScenarioRun {
  const scenario = { name: 's', class: 'superpod', seed: 1, iterations: 1000, noise: [], stragglers: [spec] } as unknown as CorpusScenario;
  const label: StragglerLabel = {
    target, shape: spec.shape.type, start: spec.start, end: spec.end, magnitude: 30, detectableFrom: spec.start,
    staticMs: 900, adaptedMs: 700, gainMs: 1e6, costMs: 200, worthActing: true,
  };
  return {
    scenario, labels: [label], episodes: [], records: [], declined: 0, daemonMs: 1, oracleMs: 1, oracleSwitches: 0, wallMs: 86_400_000, steps: 0,
    switches: switches.map((s) => ({ ...s, effectiveIteration: s.iteration + 4 })),
  };
}

describe('scoreRuns: false recoveries', () => {
  // A trace slow over [100, 199] and [400, 499], quiet in between.
  const steps: StragglerSpec = { target, start: 100, end: 499, shape: { type: 'steps', steps: [[0, 30], [100, 0], [300, 30]] } };

  it('a recovery between two spells of a trace is not false', () => {
    expect(scoreRuns('c', [runWith(steps, [{ iteration: 102, kind: 'straggler' }, { iteration: 250, kind: 'recovery' }])], 5).falseSwitches).toBe(0);
  });

  it('a recovery while the trace is slow is false (the rule can fail)', () => {
    expect(scoreRuns('c', [runWith(steps, [{ iteration: 102, kind: 'straggler' }, { iteration: 150, kind: 'recovery' }])], 5).falseSwitches).toBe(1);
  });

  it('a recovery inside a constant straggler is false, and one before any straggler began', () => {
    const constant: StragglerSpec = { target, start: 100, end: 499, shape: { type: 'constant', ms: 30 } };
    expect(scoreRuns('c', [runWith(constant, [{ iteration: 250, kind: 'recovery' }])], 5).falseSwitches).toBe(1);
    expect(scoreRuns('c', [runWith(constant, [{ iteration: 50, kind: 'recovery' }])], 5).falseSwitches).toBe(1);
  });
});
