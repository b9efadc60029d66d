import { DetectorConfig } from './detector-config.type';
import { RankComputeState } from './detection.type';
import { Hysteresis } from './hysteresis';
import { LearnedBaseline } from './learned-baseline';
import { SlidingWindow } from './sliding-window';

class RankCompute {
  readonly total: SlidingWindow;
  readonly f: SlidingWindow;
  readonly b: SlidingWindow;
  readonly w: SlidingWindow;
  readonly hysteresis: Hysteresis;
  samples = 0;
  /** Samples since the rank was flagged slow (0 while it is not): how many of the newest samples size it (sizeOf). */
  spell = 0;
  /** One-sided CUSUM of the rank's samples over its reference (RankComputeTracker.cusumStep), in standard deviations. */
  cusum = 0;
  /** Samples since the CUSUM last stood at 0: the CUSUM's estimate of how long ago the rank turned slow. */
  rising = 0;
  /** Samples the CUSUM still leaves out after a restart (RankComputeTracker.resumed). */
  warming = 0;
  /** Healthy level of f+b+w after warm-up (LearnedBaseline; NaN before). */
  readonly learned = new LearnedBaseline();
  /** Became a straggler while flagging was suspended: not reported as one. */
  suppressed = false;

  constructor(config: DetectorConfig) {
    this.total = new SlidingWindow(config.windowSize);
    this.f = new SlidingWindow(config.windowSize);
    this.b = new SlidingWindow(config.windowSize);
    this.w = new SlidingWindow(config.windowSize);
    this.hysteresis = new Hysteresis(config.enterAfter, config.leaveAfter);
  }
}

/**
 * Per-rank compute times. A rank is compared with the same stage in the other replicas (same
 * work, so a healthy rank matches them); with one replica, with its own healthy level. The
 * per-stage reference is a sorted cache of the ranks' medians, refreshed once per round of the
 * stage's samples, from which "everyone but me" is read in O(log dp).
 */
export class RankComputeTracker {
  private readonly ranks: (RankCompute | undefined)[];
  private readonly members: Int32Array[];
  private readonly sorted: Float64Array[];
  private readonly sortedCount: Int32Array;
  /** The value each rank contributed to its stage's cache (NaN: none). */
  private readonly cached: Float64Array;
  private readonly sinceRefresh: Int32Array;
  private active = 0;
  private suspended = false;
  /** The job's typical spread of a rank's iterations (log sigma; see slowRatio), re-read every round of samples. */
  private noiseSigma = 0;
  /**
   * The spread the CUSUM is scaled by: the upper median over ranks, smoothed over rounds. One
   * round's estimate comes from 16-sample windows and wanders by a quarter; a CUSUM scaled by an
   * estimate that low on a stretch false-alarms (every rank of a healthy job at 40% noise).
   */
  private cusumSigma = 0;
  private sinceNoise = 0;
  private noiseScratch = new Float64Array(0);

  constructor(
    private config: DetectorConfig,
    private readonly stages: number,
    private readonly dpSize: number,
    private readonly ppOf: ArrayLike<number>,
  ) {
    const n = ppOf.length;
    this.ranks = new Array<RankCompute | undefined>(n).fill(undefined);
    const perStage = Array.from({ length: stages }, () => [] as number[]);
    for (let i = 0; i < n; i++) perStage[ppOf[i]].push(i);
    this.members = perStage.map((m) => Int32Array.from(m));
    this.sorted = perStage.map((m) => new Float64Array(m.length));
    this.sortedCount = new Int32Array(stages);
    this.cached = new Float64Array(n).fill(Number.NaN);
    this.sinceRefresh = new Int32Array(stages);
  }

  get activeCount(): number {
    return this.active;
  }

  /** One iteration's F, B, W medians of rank index `i` (finite, >= 0); true when its straggler state flipped. */
  observe(i: number, f: number, b: number, w: number): boolean {
    let r = this.ranks[i];
    if (r === undefined) {
      r = new RankCompute(this.config);
      this.ranks[i] = r;
    }
    r.total.add(f + b + w);
    r.f.add(f);
    r.b.add(b);
    r.w.add(w);
    r.samples++;
    const median = r.total.median();
    if (r.samples >= this.config.baselineWarmup) {
      const level = r.learned.ms;
      r.learned.observe(median, this.config.computeSlowRatio * level, (this.config.computeSlowRatio - 1) * level);
    }
    const pp = this.ppOf[i];
    if (this.dpSize >= 2 && ++this.sinceRefresh[pp] >= this.members[pp].length) this.refreshStage(pp);
    const reference = this.reference(i, r);
    // Not before the window is warm: three samples' median is no measure of a rank's speed.
    if (++this.sinceNoise >= this.ranks.length) this.refreshNoise();
    const judged = r.samples >= this.config.baselineWarmup;
    const slowNow = judged && (median > this.slowRatio() * reference || this.cusumStep(r, f + b + w, reference));
    const flipped = r.hysteresis.update(slowNow);
    r.spell = r.hysteresis.active ? r.spell + 1 : 0;
    if (!flipped) return false;
    if (r.hysteresis.active && this.suspended) {
      r.suppressed = true;
      return false;
    }
    if (!r.hysteresis.active && r.suppressed) {
      r.suppressed = false;
      return false;
    }
    this.active += r.hysteresis.active ? 1 : -1;
    return true;
  }

  /**
   * Rank index `i` came back after a silence (JobDetector: a restart): its first baselineWarmup
   * samples are a warm-up (caches cold, communicators rebuilt: 2-3x slower for a few iterations), not
   * a straggler, as a new rank's are. The CUSUM, which a few samples that slow would fill, leaves them
   * out and starts again from 0; the window median, which needs half a window, judges them as before.
   */
  resumed(i: number): void {
    const r = this.ranks[i];
    if (r === undefined) return;
    r.cusum = 0;
    r.rising = 0;
    r.warming = this.config.baselineWarmup;
  }

  /**
   * New knobs, keeping each rank's newest samples (as many as the new window holds), baseline and
   * straggler state. The stage caches are refreshed on their usual schedule, not here.
   */
  reconfigure(config: DetectorConfig): void {
    this.config = config;
    for (const r of this.ranks) {
      if (r === undefined) continue;
      for (const w of [r.total, r.f, r.b, r.w]) w.resize(config.windowSize);
      r.hysteresis.reconfigure(config.enterAfter, config.leaveAfter);
    }
  }

  /** Suspends or resumes flagging (PipelineLinkTracker.suspend); true when what is reported changed. */
  suspend(suspended: boolean): boolean {
    this.suspended = suspended;
    if (suspended) return false;
    let changed = false;
    for (const r of this.ranks) {
      if (!r?.suppressed) continue;
      r.suppressed = false;
      this.active++;
      changed = true;
    }
    return changed;
  }

  /** Every rank with a sample, in the order of `byPosition` (rank indices by (dp, pp)). Refreshes the stage caches. */
  states(byPosition: ArrayLike<number>, rankOf: ArrayLike<number>, dpOf: ArrayLike<number>): RankComputeState[] {
    if (this.dpSize >= 2) for (let pp = 0; pp < this.stages; pp++) this.refreshStage(pp);
    const out: RankComputeState[] = [];
    for (let k = 0; k < byPosition.length; k++) {
      const i = byPosition[k];
      const r = this.ranks[i];
      if (r === undefined) continue;
      const referenceMs = this.reference(i, r);
      const n = this.sizeOf(r);
      out.push({
        rank: rankOf[i],
        dp: dpOf[i],
        pp: this.ppOf[i],
        fMs: newest(r.f, n),
        bMs: newest(r.b, n),
        wMs: newest(r.w, n),
        referenceMs,
        ratio: referenceMs > 0 ? newest(r.total, n) / referenceMs : Number.NaN,
        straggler: r.hysteresis.active && !r.suppressed,
        recovering: r.hysteresis.recovering && !r.suppressed,
      });
    }
    return out;
  }

  /** Per stage, the slowest replica's median F, B, W: the pipeline runs at the pace of its slowest replica. */
  stageTimes(): { fMs: number[]; bMs: number[]; wMs: number[] } {
    const fMs = new Array<number>(this.stages).fill(Number.NaN);
    const bMs = new Array<number>(this.stages).fill(Number.NaN);
    const wMs = new Array<number>(this.stages).fill(Number.NaN);
    for (let i = 0; i < this.ranks.length; i++) {
      const r = this.ranks[i];
      if (r === undefined) continue;
      const pp = this.ppOf[i];
      const n = this.sizeOf(r);
      const f = newest(r.f, n);
      const b = newest(r.b, n);
      const w = newest(r.w, n);
      if (!(f <= fMs[pp])) fMs[pp] = f;
      if (!(b <= bMs[pp])) bMs[pp] = b;
      if (!(w <= wMs[pp])) wMs[pp] = w;
    }
    return { fMs, bMs, wMs };
  }

  /**
   * The sequential half of the slow test (issue 29, compute under noise): a one-sided CUSUM of
   * each sample's log ratio over the reference, less log(computeSlowRatio), in units of the job's
   * per-sample spread (at least half that log, so quiet compute does not chase a rank a few per cent
   * off its peers). A rank running at its reference drifts down by log(computeSlowRatio) / sigma per
   * sample and stays at 0; a 1.5x rank climbs by about (0.41 - 0.14) / sigma and crosses CUSUM_H in
   * about 8 samples at 25% noise, where a window median waits for half its window and then stands
   * under the noise-aware threshold (1.5x against 1.56x: re-balanced 18 to 53 iterations after onset
   * in bench:outside). One sample adds at most CUSUM_STEP (a GC pause is one draw, not a straggler),
   * and the sum is held at CUSUM_H + CUSUM_STEP so a healed rank comes back within a few samples.
   * True while the sum is at least CUSUM_H.
   */
  private cusumStep(r: RankCompute, total: number, reference: number): boolean {
    if (r.warming > 0) {
      r.warming--;
      return false;
    }
    if (!(reference > 0) || !(total > 0)) return r.cusum >= CUSUM_H;
    const floor = Math.log(this.config.computeSlowRatio);
    const sigma = Math.max(this.cusumSigma, floor / 2);
    // The reference is a window median too (the peers', or the rank's learned level): it sits off the
    // peers' true level by its standard error for a window at a time, so that much is not counted.
    const margin = floor + (REFERENCE_Z * 1.25 * sigma) / Math.sqrt(this.config.windowSize * Math.max(1, this.dpSize - 1));
    const z = (Math.log(total / reference) - margin) / sigma;
    r.cusum = Math.min(CUSUM_H + CUSUM_STEP, Math.max(0, r.cusum + Math.min(CUSUM_STEP, z)));
    r.rising = r.cusum > 0 ? r.rising + 1 : 0;
    return r.cusum >= CUSUM_H;
  }

  /**
   * The newest samples a rank's times are read from: its whole window while healthy; while it is
   * flagged slow, those since its CUSUM last stood at 0 (the CUSUM's onset estimate) while the CUSUM
   * is up, else the newest half of the window and every sample since it was flagged. Its window
   * median first crosses the threshold when about half the window is slow, so the newest half holds
   * slow samples only, while the whole window still holds healthy ones from before the onset: sized on
   * it, a 1.5x rank read 1.33x and its re-balance was made again a few iterations later when the
   * window filled (bench:outside, compute noise 25%). Half a window, not the newest enterAfter: a
   * median of 3 samples moves with every draw on noisy compute, and each move re-prices the split.
   */
  private sizeOf(r: RankCompute): number {
    const window = r.total.capacity;
    if (!r.hysteresis.active || r.suppressed) return window;
    // Flagged by the CUSUM: the samples since it last stood at 0 (its estimate of the onset), however few.
    if (r.rising > 0) return Math.min(window, Math.max(this.config.enterAfter, r.rising));
    return Math.min(window, Math.ceil(window / 2) + r.spell);
  }

  private reference(i: number, r: RankCompute): number {
    if (this.dpSize < 2) return r.learned.ms;
    const pp = this.ppOf[i];
    const s = this.sorted[pp];
    const n = this.sortedCount[pp];
    const own = this.cached[i];
    // Position of this rank's own value, skipped so a rank is never its own reference.
    let skip = n;
    if (own === own) {
      let lo = 0;
      let hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (s[mid] < own) lo = mid + 1;
        else hi = mid;
      }
      skip = lo;
    }
    const m = skip < n ? n - 1 : n;
    if (m === 0) return Number.NaN;
    const mid = m >> 1;
    const upper = s[mid < skip ? mid : mid + 1];
    if (m & 1) return upper;
    return (s[mid - 1 < skip ? mid - 1 : mid] + upper) / 2;
  }

  /**
   * The job's typical spread: the lower median over ranks of each window's log sigma (interquartile
   * range / 1.349). Not a rank's own: a straggler's window holds fast and slow samples while it
   * turns, and its own spread would hide it. O(ranks log ranks) per round of samples.
   */
  private refreshNoise(): void {
    this.sinceNoise = 0;
    if (this.noiseScratch.length < this.ranks.length) this.noiseScratch = new Float64Array(this.ranks.length);
    let n = 0;
    for (const r of this.ranks) {
      if (r === undefined || r.total.size < 4) continue;
      const lo = r.total.quantile(0.25);
      const hi = r.total.quantile(0.75);
      if (lo > 0 && hi >= lo) this.noiseScratch[n++] = Math.log(hi / lo) / 1.349;
    }
    if (n === 0) return;
    const sorted = this.noiseScratch.subarray(0, n).sort();
    this.noiseSigma = sorted[(n - 1) >> 1];
    const upper = sorted[n >> 1];
    this.cusumSigma = this.cusumSigma > 0 ? this.cusumSigma + SIGMA_ALPHA * (upper - this.cusumSigma) : upper;
  }

  /**
   * The ratio over its reference that makes a rank slow: computeSlowRatio, or more where the job's
   * ranks' iterations vary so much that a window median wanders that far by chance (issue 29,
   * outside noise). A 16-sample window median of a rank whose iterations vary by 25% (lognormal
   * sigma 0.25: throttling, a shared host) sits 10% off its peer's one time in ten, and a healthy
   * layered job was re-balanced a hundred times in 2,500 iterations. A median's standard error is
   * 1.25 sigma / sqrt(n), the difference of two (the rank's and its reference's) sqrt(2) times that;
   * NOISE_Z of them. On quiet compute (sigma 0.05) this stays below computeSlowRatio, which alone
   * decides as before.
   */
  private slowRatio(): number {
    const noise = Math.exp((NOISE_Z * Math.SQRT2 * 1.25 * Math.max(this.noiseSigma, this.cusumSigma)) / Math.sqrt(this.config.windowSize));
    return noise > this.config.computeSlowRatio ? noise : this.config.computeSlowRatio;
  }

  private refreshStage(pp: number): void {
    this.sinceRefresh[pp] = 0;
    const members = this.members[pp];
    const s = this.sorted[pp];
    let n = 0;
    for (let k = 0; k < members.length; k++) {
      const i = members[k];
      const r = this.ranks[i];
      const m = r === undefined ? Number.NaN : r.total.median();
      this.cached[i] = m;
      if (m === m) s[n++] = m;
    }
    this.sortedCount[pp] = n;
    s.subarray(0, n).sort();
  }
}

/** Median of the newest `n` samples; the kept median (no sort) when that is the whole window, as for every healthy rank. */
function newest(window: SlidingWindow, n: number): number {
  return n >= window.size ? window.median() : window.recentMedian(n);
}

/** The CUSUM level (standard deviations) that makes a rank slow, and the most one sample adds (cusumStep). */
const CUSUM_H = 8;
const CUSUM_STEP = 3;
/** Standard errors of the reference's window median left out of a sample's excess (cusumStep). */
const REFERENCE_Z = 2;
/** Weight of each round's spread estimate in the smoothed one (cusumSigma). */
const SIGMA_ALPHA = 0.1;

/** Standard errors of two window medians' difference a slow rank must exceed (besides computeSlowRatio). */
const NOISE_Z = 4;
