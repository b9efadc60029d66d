import { LearnedBaseline } from './learned-baseline';
import { SlidingWindow } from './sliding-window';

export interface LinkEstimatorOptions {
  windowSize: number;
  ewmaAlpha: number;
  baselineWarmup: number;
  /**
   * Expected healthy time (latency plus transfer at nominal bandwidth), ms: the baseline until one is
   * learned, and the guard against a link that was slow from its first sample (learnedSlackMs).
   */
  nominalMs?: number;
  /**
   * How far above the (calibrated) nominal time a learned baseline may sit and still be what the
   * link runs healthy, ms. Above it the link was already slow when it was learned, and the nominal
   * answers instead. Default Infinity: the learned baseline always.
   */
  learnedSlackMs?: number;
  /**
   * The smallest extra delay that makes a straggler, ms (detection.minExtraMs): a window that far
   * above the learned level is not evidence of the healthy level (LearnedBaseline). Default
   * Infinity: every window is.
   */
  stragglerMs?: number;
}

/**
 * Transfer-time statistics of one link direction: a sliding median (robust level), a fast EWMA
 * (trend), and a healthy baseline. The learned baseline is a low quantile of the healthy window
 * medians after warm-up (LearnedBaseline): a straggler that lasts for many windows never becomes
 * the new normal, a single fast outlier cannot pull it down because it is a median, and noisy
 * medians do not drag it down as the job runs (the lowest median ever seen did). The registered nominal time only stands in
 * before a baseline is learned, or when the learned one sits more than learnedSlackMs above it (a
 * link slow from its first sample): a registration that is a little optimistic must not leave every
 * link reading a standing extra delay (issue 29). The nominal can be calibrated by an offset (what
 * the job's links run over their registration, PipelineLinkTracker). O(windowSize) memory.
 */
export class LinkEstimator {
  private readonly window: SlidingWindow;
  private alpha: number;
  private warmup: number;
  private readonly nominal: number;
  private slack: number;
  private offset = 0;
  private count = 0;
  private last = Number.NaN;
  private ewma = Number.NaN;
  private readonly learned = new LearnedBaseline();
  private stragglerMs: number;

  constructor(options: LinkEstimatorOptions) {
    if (!(options.ewmaAlpha > 0 && options.ewmaAlpha <= 1)) throw new RangeError(`ewmaAlpha must be in (0, 1], got ${options.ewmaAlpha}`);
    this.window = new SlidingWindow(options.windowSize);
    this.alpha = options.ewmaAlpha;
    this.warmup = Math.max(1, options.baselineWarmup);
    this.nominal = options.nominalMs !== undefined && Number.isFinite(options.nominalMs) ? options.nominalMs : Number.NaN;
    this.slack = options.learnedSlackMs !== undefined && options.learnedSlackMs >= 0 ? options.learnedSlackMs : Infinity;
    this.stragglerMs = options.stragglerMs !== undefined && options.stragglerMs >= 0 ? options.stragglerMs : Infinity;
  }

  /** The registered nominal time, NaN without one. */
  get nominalMs(): number {
    return this.nominal;
  }

  /** The healthy level learned so far (a low quantile of healthy window medians), NaN before warm-up. */
  get learnedMs(): number {
    return this.learned.ms;
  }

  /**
   * Whether the link has run within learnedSlackMs of its (uncalibrated) nominal time at some point
   * since warm-up (true without a nominal): its spread is the fabric's, not a straggler's.
   */
  ranNearNominal(): boolean {
    if (this.nominal !== this.nominal) return true;
    return this.learned.lowestMs <= this.nominal + this.slack;
  }

  /** What the links of the job run over their nominal time (ms): the nominal stands in as nominal + offset. */
  calibrate(offsetMs: number): void {
    this.offset = Number.isFinite(offsetMs) ? offsetMs : 0;
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
    if (options.learnedSlackMs !== undefined && options.learnedSlackMs >= 0) this.slack = options.learnedSlackMs;
    if (options.stragglerMs !== undefined && options.stragglerMs >= 0) this.stragglerMs = options.stragglerMs;
  }

  /**
   * The window's spread in log terms, from its lower half (median over first quartile, / 0.6745):
   * slow samples sit in the upper half, so up to half the window straggling does not widen it. NaN
   * with fewer than 8 samples.
   */
  logSpread(): number {
    if (this.window.size < 8) return Number.NaN;
    const lo = this.window.quantile(0.25);
    const mid = this.window.median();
    return lo > 0 && mid >= lo ? Math.log(mid / lo) / 0.6745 : Number.NaN;
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
      this.learned.observe(this.window.median(), this.learned.ms + this.stragglerMs, this.stragglerMs);
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

  /** Whether the newest `count` samples all sit above, or all below, the `older` before them (SlidingWindow.shifted). */
  levelShifted(count: number, older: number): boolean {
    return this.window.shifted(count, older);
  }

  get windowCapacity(): number {
    return this.window.capacity;
  }

  baselineMs(): number {
    const nominal = this.nominal + this.offset;
    const learned = this.learned.ms;
    if (learned !== learned) return nominal;
    return this.learned.lowestMs > nominal + this.slack ? nominal : learned;
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

  /** Extra of the newest `count` samples' q-quantile over the baseline; 0 when either is unknown. */
  recentQuantileExtraMs(count: number, q: number): number {
    return this.over(this.window.recentQuantile(count, q));
  }

  private over(level: number): number {
    const extra = level - this.baselineMs();
    return extra > 0 ? extra : 0; // NaN (no baseline, no samples) lands here too
  }
}
