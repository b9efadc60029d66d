import configSchema from '../../schemas/config.schema.json';
import overridesSchema from '../../schemas/job-overrides.v1.schema.json';
import { DEFAULT_DETECTOR_CONFIG } from '../core/detect/detector-config.type';
import { checkOverrides, parseOverrides } from './job-overrides';

const COST_KEYS = ['costAware', 'switchCostMs', 'predictionUncertainty', 'stragglerPriorIterations', 'stragglerPriorWeight', 'minGain'];

describe('job-overrides.v1 schema', () => {
  it('overrides every detection knob and the cost knobs, with the bounds the configuration has', () => {
    const detection = overridesSchema.properties.detection.properties as Record<string, unknown>;
    const control = overridesSchema.properties.control.properties as Record<string, unknown>;
    expect(Object.keys(detection).sort()).toEqual(Object.keys(DEFAULT_DETECTOR_CONFIG).sort());
    expect(Object.keys(control).sort()).toEqual([...COST_KEYS].sort());
    for (const [key, bounds] of Object.entries(detection)) expect({ key, bounds }).toEqual({ key, bounds: (configSchema.properties.detection.properties as Record<string, unknown>)[key] });
    for (const [key, bounds] of Object.entries(control)) {
      const { description: _d, ...configured } = (configSchema.properties.control.properties as Record<string, Record<string, unknown>>)[key];
      expect({ key, bounds }).toEqual({ key, bounds: configured });
    }
  });

  it('can fail: a bound that drifted from the configuration is told apart', () => {
    const drifted = { ...overridesSchema.properties.detection.properties.enterAfter, maximum: 5 };
    expect(drifted).not.toEqual(configSchema.properties.detection.properties.enterAfter);
  });

  it('takes a minimal document and a full one, and lists every problem of a bad one', () => {
    expect(checkOverrides({ version: 1, setBy: 'a', reason: 'b' }).ok).toBe(true);
    const full = { version: 3, setBy: 'a', reason: 'b', setAt: 1, pauseDetection: false, pauseSwitching: true, detection: { ...DEFAULT_DETECTOR_CONFIG, severeExtraMs: 20 }, control: { costAware: true, switchCostMs: 1, predictionUncertainty: 0, stragglerPriorIterations: 1, stragglerPriorWeight: 1, minGain: 0 } };
    expect(checkOverrides(full)).toEqual({ ok: true, overrides: full });
    const bad = checkOverrides({ version: 0, setBy: '', detection: {}, extra: 1 });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.problems).toEqual(expect.arrayContaining(['(root) misses field "reason"', '(root) has unknown field "extra"', '/version must be >= 1', '/setBy must NOT have fewer than 1 characters', '/detection must NOT have fewer than 1 properties']));
    expect(parseOverrides('{"version":')).toMatchObject({ ok: false, problems: [expect.stringMatching(/^not JSON/)] });
    expect(parseOverrides(' '.repeat(20000))).toMatchObject({ ok: false, problems: [expect.stringMatching(/more than 16384/)] });
  });
});
