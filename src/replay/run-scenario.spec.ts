import { detectionCorpus } from '../corpus/corpus';
import { loadConfig } from '../daemon/config/load-config';
import { runScenario } from './run-scenario';
import { scoreRuns } from './score-runs';

// The corpus through the daemon's replayed control loop (bench:detection runs all of it).
describe('detection corpus replay', () => {
  const config = { ...loadConfig({}) };
  config.control = { ...config.control, refinePlanner: 'none' };
  const corpus = detectionCorpus(0.01);
  const byName = (name: string) => corpus.find((s) => s.name === name)!;

  it('a 30 ms link straggler is detected on its second report, acted on, and nothing else is flagged', () => {
    const run = runScenario(byName('4x12 dp2, 30 ms on link 2'), config);
    const score = scoreRuns('constant', [run], config.detection.leaveAfter);
    expect(score.recall).toBe(1);
    expect(score.detectMedian).toBeLessThanOrEqual(2);
    expect(score.precision).toBe(1);
    expect(run.switches.some((s) => s.kind === 'straggler' && s.iteration >= 200 && s.iteration <= 205)).toBe(true);
    expect(score.falseSwitches).toBe(0);
  });

  it('a flapping link is not chased: cost-aware switching takes fewer switches than without (the twin)', () => {
    const flapping = byName('4x12 dp2, 25 ms flapping (2 on, 2 off)');
    const aware = runScenario(flapping, config);
    const blind = runScenario(flapping, { ...config, control: { ...config.control, costAware: false } });
    const n = (r: typeof aware) => r.switches.filter((s) => s.kind !== 'initial').length;
    expect(n(aware)).toBeLessThanOrEqual(n(blind));
    expect(aware.records.length).toBeGreaterThan(0);
  });
});
