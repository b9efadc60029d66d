import { SlidingWindow } from './sliding-window';

export interface LinkEstimatorOptions {
  windowSize: number;
  ewmaAlpha: number;
  baselineWarmup: number;
  /** Expected healthy time (latency plus transfer at nominal bandwidth), ms; a floor for the learned baseline. */
  nominalMs?: number;
}

/**
 * Transfer-time statistics of one link direction: a sliding median (robust level), a fast EWMA
 * (trend), and a healthy baseline. The baseline is the lowest window median seen after warm-up:
 * a straggler that lasts for many windows never becomes the new normal, and a single fast
 * outlier cannot pull it down because it is a median. O(windowSize) memory.
 */
export class LinkEstimator {
  private readonly window: SlidingWindow;
  private alpha: number;
  private warmup: number;
  private readonly nominal: number;
  private count = 0;
  private last = Number.NaN;
  private ewma = Number.NaN;
  private learned = Number.NaN;

  constructor(options: LinkEstimatorOptions) {
    if (!(options.ewmaAlpha > 0 && options.ewmaAlpha <= 1)) throw new RangeError(`ewmaAlpha must be in (0, 1], got ${options.ewmaAlpha}`);
    this.window = new SlidingWindow(options.windowSize);
    this.alpha = options.ewmaAlpha;
    this.warmup = Math.max(1, options.baselineWarmup);
    this.nominal = options.nominalMs !== undefined && Number.isFinite(options.nominalMs) ? options.nominalMs : Number.NaN;
  }

  /**
   * New window size, EWMA weight and warm-up, keeping what was learned: the newest samples (as
   * many as the new window holds), the EWMA's value, the baseline and the sample count.
   */
  reconfigure(options: Omit<LinkEstimatorOptions, 'nominalMs'>): void {
    if (!(options.ewmaAlpha > 0 && options.ewmaAlpha <= 1)) throw new RangeError(`ewmaAlpha must be in (0, 1], got ${options.ewmaAlpha}`);
    this.window.resize(options.windowSize);
    this.alpha = options.ewmaAlpha;
    this.warmup = Math.max(1, options.baselineWarmup);
  }

  /** The samples in the window, oldest first. */
  windowSamples(): number[] {
    return this.window.samples();
  }

  /** Adds one sample (ms); NaN is dropped. */
  add(sampleMs: number): void {
    if (sampleMs !== sampleMs) return;
    this.window.add(sampleMs);
    this.count++;
    this.last = sampleMs;
    this.ewma = this.count === 1 ? sampleMs : this.ewma + this.alpha * (sampleMs - this.ewma);
    if (this.count >= this.warmup) {
      const m = this.window.median();
      if (!(m >= this.learned)) this.learned = m; // also replaces the initial NaN
    }
  }

  get samples(): number {
    return this.count;
  }

  medianMs(): number {
    return this.window.median();
  }

  ewmaMs(): number {
    return this.ewma;
  }

  /** Median of the newest `count` samples, NaN if none: a level that reacts within `count` samples yet ignores a lone spike. */
  recentMedianMs(count: number): number {
    return this.window.recentMedian(count);
  }

  baselineMs(): number {
    if (this.learned !== this.learned) return this.nominal;
    return this.nominal < this.learned ? this.nominal : this.learned;
  }

  extraMs(): number {
    return this.over(this.window.median());
  }

  fastExtraMs(): number {
    return this.over(this.ewma);
  }

  lastExtraMs(): number {
    return this.over(this.last);
  }

  /** Extra of the newest `count` samples' median over the baseline; 0 when either is unknown. */
  recentExtraMs(count: number): number {
    return this.over(this.window.recentMedian(count));
  }

  private over(level: number): number {
    const extra = level - this.baselineMs();
    return extra > 0 ? extra : 0; // NaN (no baseline, no samples) lands here too
  }
}
