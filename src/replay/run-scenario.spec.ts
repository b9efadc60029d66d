import { detectionCorpus } from '../corpus/corpus';
import { loadConfig } from '../daemon/config/load-config';
import { replayScenario, runScenario } from './run-scenario';
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

  it('a flapping link is not chased: cost-aware switching takes a handful of switches where without it (the twin) every spell is chased', () => {
    const flapping = { ...byName('8x32 dp4, 40 ms flapping (3 on, 7 off)'), iterations: 500 }; // 30 spells from iteration 200
    const switches = (costAware: boolean) => runScenario(flapping, { ...config, control: { ...config.control, costAware } }).switches.filter((s) => s.kind !== 'initial').length;
    expect(switches(true)).toBeLessThanOrEqual(6);
    expect(switches(false)).toBeGreaterThan(30);
  });

  it('the labels, the daemon and the oracle each price their own plans (telemetry caches plans by version number)', () => {
    // Sharing one cache, the daemon's first plan (v1) was priced as the label's adapted plan (also v1)
    // in the straggler's first iterations, and the oracle's plans as the daemon's: this job's daemon
    // ran 4.2% faster than the oracle.
    const sc = byName('16x32 dp2, 40 ms on link 11');
    const run = runScenario(sc, config);
    expect(run.daemonMs).toBe(replayScenario(sc, config).daemonMs);
    expect(run.daemonMs).toBeGreaterThanOrEqual(run.oracleMs);
  });
});
