import defaults from '../../../config/default.json';
import { DEFAULT_DETECTOR_CONFIG, DetectorConfig, validateDetectorConfig } from './detector-config.type';

describe('DetectorConfig', () => {
  it('has valid defaults, equal to the shipped config file', () => {
    expect(validateDetectorConfig(DEFAULT_DETECTOR_CONFIG)).toEqual([]);
    expect(DEFAULT_DETECTOR_CONFIG).toEqual(defaults.detection);
  });

  it.each<[keyof DetectorConfig, unknown, RegExp]>([
    ['windowSize', 2, /windowSize must be an integer from 3 to 1024/],
    ['windowSize', 16.5, /windowSize/],
    ['ewmaAlpha', 0, /ewmaAlpha/],
    ['ewmaAlpha', 1.01, /ewmaAlpha/],
    ['baselineWarmup', 0, /baselineWarmup/],
    ['enterAfter', 0, /enterAfter/],
    ['leaveAfter', 1001, /leaveAfter/],
    ['severeExtraMs', 0, /severeExtraMs/],
    ['severeExtraMs', Number.NaN, /severeExtraMs/],
    ['severeEnterAfter', 0, /severeEnterAfter/],
    ['minExtraMs', -1, /minExtraMs/],
    ['minExtraMs', Number.NaN, /minExtraMs/],
    ['delegationThresholdMs', -0.1, /delegationThresholdMs/],
    ['dpSlowRatio', 1, /dpSlowRatio/],
    ['computeSlowRatio', 0.9, /computeSlowRatio/],
    ['computeSlowRatio', '1.2', /computeSlowRatio/],
  ])('reports %s = %p', (key, value, message) => {
    const problems = validateDetectorConfig({ ...DEFAULT_DETECTOR_CONFIG, [key]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it('accepts an infinite delegation threshold (judge by Eq. 1 only)', () => {
    expect(validateDetectorConfig({ ...DEFAULT_DETECTOR_CONFIG, delegationThresholdMs: Infinity })).toEqual([]);
  });

  it('lists every problem at once', () => {
    expect(validateDetectorConfig({ ...DEFAULT_DETECTOR_CONFIG, windowSize: 0, enterAfter: -1 })).toHaveLength(2);
  });
});
