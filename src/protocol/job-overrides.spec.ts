import configSchema from '../../schemas/config.schema.json';
import overridesSchema from '../../schemas/job-overrides.v1.schema.json';
import { DEFAULT_DETECTOR_CONFIG } from '../core/detect/detector-config.type';
import { checkOverrides, parseOverrides } from './job-overrides';

const COST_KEYS = ['costAware', 'switchCostMs', 'predictionUncertainty', 'stragglerPriorIterations', 'stragglerPriorWeight', 'minGain'];

type Schema = { properties: Record<string, { properties?: Record<string, unknown> }> };

/** Keys of the overrides schema whose bounds differ from the configuration's (its description aside), as "section.key". */
function drifted(overrides: Schema, config: Schema): string[] {
  const out: string[] = [];
  for (const section of ['detection', 'control']) {
    const configured = config.properties[section].properties as Record<string, Record<string, unknown>>;
    for (const [key, bounds] of Object.entries(overrides.properties[section].properties ?? {})) {
      const { description: _d, ...expected } = configured[key] ?? {};
      if (JSON.stringify(bounds) !== JSON.stringify(section === 'detection' ? configured[key] : expected)) out.push(`${section}.${key}`);
    }
  }
  return out;
}

describe('job-overrides.v1 schema', () => {
  it('overrides every detection knob and the cost knobs, with the bounds the configuration has', () => {
    const detection = overridesSchema.properties.detection.properties as Record<string, unknown>;
    const control = overridesSchema.properties.control.properties as Record<string, unknown>;
    expect(Object.keys(detection).sort()).toEqual(Object.keys(DEFAULT_DETECTOR_CONFIG).sort());
    expect(Object.keys(control).sort()).toEqual([...COST_KEYS].sort());
    expect(drifted(overridesSchema as unknown as Schema, configSchema as unknown as Schema)).toEqual([]);
  });

  it('can fail: a bound that drifted from the configuration is named', () => {
    const copy = JSON.parse(JSON.stringify(overridesSchema)) as Schema;
    (copy.properties.detection.properties as Record<string, Record<string, unknown>>).enterAfter.maximum = 5;
    (copy.properties.control.properties as Record<string, Record<string, unknown>>).switchCostMs.minimum = 7;
    expect(drifted(copy, configSchema as unknown as Schema)).toEqual(['detection.enterAfter', 'control.switchCostMs']);
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
