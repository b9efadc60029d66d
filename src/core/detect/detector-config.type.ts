/** Knobs of straggler detection (see config/default.json, section "detection"). */
export interface DetectorConfig {
  /** Samples kept per link/rank for the sliding median. */
  windowSize: number;
  /** Weight of the newest sample in the fast EWMA. */
  ewmaAlpha: number;
  /** Samples before a learned baseline is trusted. */
  baselineWarmup: number;
  /** K consecutive bad samples to become a straggler. */
  enterAfter: number;
  /** M consecutive healthy samples to recover. */
  leaveAfter: number;
  /** Extra delay of a pipeline link's per-iteration median at which one sample is unmistakable, ms. */
  severeExtraMs: number;
  /** Consecutive severe samples that make a straggler without waiting for enterAfter (severeExtraMs). */
  severeEnterAfter: number;
  /**
   * Straggler entries per iteration of the job that chance runs of tail samples may cause on the
   * severe path. A heavy-tailed link now and then puts two tail samples in a row; the job's own
   * rate of severe samples on healthy links says how often, and while severeEnterAfter in a row is
   * more likely than this by chance on some link, the severe path waits for one more (up to enterAfter).
   */
  severeChanceRate: number;
  /** Noise floor: extra delay below this is never bad, ms. */
  minExtraMs: number;
  /** Extra delay at which a pipeline link needs CPU delegation, ms. */
  delegationThresholdMs: number;
  /** A data-parallel link is bad when its median exceeds this ratio times the median of its peers. */
  dpSlowRatio: number;
  /**
   * ... and exceeds it by at least this much, ms: a re-map costs seconds of migration, and on fast
   * in-rack rings a millisecond or two of CPU jitter is already more than dpSlowRatio.
   */
  dpMinExtraMs: number;
  /** A rank is bad when its f+b+w median exceeds this ratio times its reference. */
  computeSlowRatio: number;
}

export const DEFAULT_DETECTOR_CONFIG: DetectorConfig = {
  windowSize: 16,
  ewmaAlpha: 0.3,
  baselineWarmup: 8,
  enterAfter: 3,
  leaveAfter: 5,
  severeExtraMs: 20,
  severeEnterAfter: 2,
  severeChanceRate: 1e-5,
  minExtraMs: 1,
  delegationThresholdMs: 5,
  dpSlowRatio: 1.2,
  dpMinExtraMs: 5,
  computeSlowRatio: 1.15,
};

function isInteger(x: unknown, min: number, max: number): boolean {
  return typeof x === 'number' && Number.isInteger(x) && x >= min && x <= max;
}

/** Problems with `c`, one sentence each naming the key; empty when it is usable. Bounds match schemas/config.schema.json. */
export function validateDetectorConfig(c: DetectorConfig): string[] {
  const problems: string[] = [];
  if (!isInteger(c.windowSize, 3, 1024)) problems.push('windowSize must be an integer from 3 to 1024');
  if (!(typeof c.ewmaAlpha === 'number' && c.ewmaAlpha > 0 && c.ewmaAlpha <= 1)) problems.push('ewmaAlpha must be a number in (0, 1]');
  if (!isInteger(c.baselineWarmup, 1, 1024)) problems.push('baselineWarmup must be an integer from 1 to 1024');
  if (!isInteger(c.enterAfter, 1, 1000)) problems.push('enterAfter must be an integer from 1 to 1000');
  if (!isInteger(c.leaveAfter, 1, 1000)) problems.push('leaveAfter must be an integer from 1 to 1000');
  // Infinity is allowed: "no sample is severe, always wait for enterAfter".
  if (!(typeof c.severeExtraMs === 'number' && c.severeExtraMs > 0)) problems.push('severeExtraMs must be a number > 0');
  if (!isInteger(c.severeEnterAfter, 1, 1000)) problems.push('severeEnterAfter must be an integer from 1 to 1000');
  if (!(typeof c.severeChanceRate === 'number' && c.severeChanceRate > 0 && c.severeChanceRate <= 1)) problems.push('severeChanceRate must be a number in (0, 1]');
  if (!(typeof c.minExtraMs === 'number' && Number.isFinite(c.minExtraMs) && c.minExtraMs >= 0)) problems.push('minExtraMs must be a finite number >= 0');
  // Infinity is allowed: "never ask for delegation, judge by Eq. 1 tolerance only".
  if (!(typeof c.delegationThresholdMs === 'number' && c.delegationThresholdMs >= 0)) problems.push('delegationThresholdMs must be a number >= 0');
  if (!(typeof c.dpSlowRatio === 'number' && Number.isFinite(c.dpSlowRatio) && c.dpSlowRatio > 1)) problems.push('dpSlowRatio must be a finite number > 1');
  if (!(typeof c.dpMinExtraMs === 'number' && Number.isFinite(c.dpMinExtraMs) && c.dpMinExtraMs >= 0)) problems.push('dpMinExtraMs must be a finite number >= 0');
  if (!(typeof c.computeSlowRatio === 'number' && Number.isFinite(c.computeSlowRatio) && c.computeSlowRatio > 1)) problems.push('computeSlowRatio must be a finite number > 1');
  return problems;
}
