import { SwitchCostConfig } from '../../core/control/switch-gate';
import { DetectorConfig, validateDetectorConfig } from '../../core/detect/detector-config.type';
import { checkOverrides, JobOverrides, parseOverrides, ParsedOverrides } from '../../protocol/job-overrides';
import { switchCostConfigOf } from '../config/control-config-of';
import { PipemorphConfig } from '../config/pipemorph-config.type';

/** The knobs one job runs with: the daemon's configuration with the job's overrides on top. */
export interface EffectiveKnobs {
  detection: DetectorConfig;
  switchCost: SwitchCostConfig;
  minGain: number;
  pauseDetection: boolean;
  pauseSwitching: boolean;
}

/** The daemon's knobs merged with `overrides` (none: the configuration's). */
export function effectiveKnobs(config: PipemorphConfig, overrides: JobOverrides | null): EffectiveKnobs {
  const { minGain: minGainOverride, ...cost } = overrides?.control ?? {};
  return {
    detection: { ...config.detection, ...(overrides?.detection ?? {}) },
    switchCost: { ...switchCostConfigOf(config), ...cost },
    minGain: minGainOverride ?? config.control.minGain,
    pauseDetection: overrides?.pauseDetection ?? false,
    pauseSwitching: overrides?.pauseSwitching ?? false,
  };
}

/**
 * What the daemon checks beyond the schema, on the knobs merged with the configuration: the
 * detector's own checks (validateDetectorConfig, what JobDetector refuses) and start-up's
 * (load-config.ts). One line each, naming the key.
 */
export function mergedProblems(config: PipemorphConfig, overrides: JobOverrides): string[] {
  const detection = effectiveKnobs(config, overrides).detection;
  const problems = validateDetectorConfig(detection).map((p) => `detection.${p} (merged with the configuration)`);
  // The same rule as start-up's (load-config.ts).
  if (detection.baselineWarmup > detection.windowSize * 64) problems.push(`detection.baselineWarmup ${detection.baselineWarmup} is unreasonably large for detection.windowSize ${detection.windowSize} (at most 64 windows)`);
  return problems;
}

/** Schema, then the merged knobs: a document the daemon can apply, or every reason it cannot. */
export function validateOverrides(config: PipemorphConfig, value: unknown): ParsedOverrides {
  const parsed = checkOverrides(value);
  if (!parsed.ok) return parsed;
  const problems = mergedProblems(config, parsed.overrides);
  return problems.length > 0 ? { ok: false, problems } : parsed;
}

/** validateOverrides on the text of the key. */
export function validateOverridesText(config: PipemorphConfig, text: string): ParsedOverrides {
  const parsed = parseOverrides(text);
  return parsed.ok ? validateOverrides(config, parsed.overrides) : parsed;
}
