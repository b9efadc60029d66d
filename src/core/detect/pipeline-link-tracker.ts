import { DetectorConfig } from './detector-config.type';
import { FleetLinkPrior, LinkError, LinkObservation, PipelineLinkState, PipelineStragglerReason } from './detection.type';
import { ChanceRuns } from './chance-runs';
import { Hysteresis } from './hysteresis';
import { LinkEstimator } from './link-estimator';
import { entrySamples } from './entry-samples';
import { medianInPlace } from './median-select';

/** Activations go down the pipeline (reported by the upstream rank), gradients up (by the downstream rank). */
export const FORWARD = 0;
export const BACKWARD = 1;

export interface NominalNetwork {
  latencyMs: number;
  /** Nominal bandwidth, GB/s (1 GB/s moves 1e6 bytes per ms). */
  gbps: number;
}

/**
 * The quantile of a spell's samples that sizes a straggler older than K: above the median, so a plan
 * made for it has slack for the spell's slower draws and a link that flaps within its spell is sized
 * by its slow samples (the lower median of a half-slow spell says 0 ms). On the detection corpus the
 * median cost 1.6 points against the oracle on the 16-stage 40 ms case and missed the 10 ms one.
 */
const SPELL_QUANTILE = 0.75;

class Direction {
  readonly estimator: LinkEstimator;
  readonly hysteresis: Hysteresis;
  observations = 0;
  /** Set by a 'nic-failure' sample, cleared only when the direction recovers. */
  nicFailure = false;
  lastError: LinkError = null;
  /** Trailing severe samples (extra >= severeExtraMs). */
  severeRun = 0;
  /** Trailing bad samples (the run that makes a straggler). */
  badRun = 0;
  /** Bad samples in a row that made it a straggler, at most enterAfter (0 before it ever was one). */
  entryRun = 0;
  /** Samples since it last became a straggler (0 before). */
  sinceEntry = 0;
  /**
   * Samples of the straggler's current level: those that made it and every one since, back to the
   * newest level shift (SlidingWindow.shifted). Sizes it once it is older than enterAfter.
   */
  spell = 0;
  /** Level shifts seen since it became a straggler: with its age, how long its levels last. */
  shifts = 0;
  /** The previous sample saw a level shift: one shift stays visible for up to K samples and counts once. */
  shiftSeen = false;
  /** Became a straggler while flagging was suspended (JobDetector.suspend): not reported as one. */
  suppressed = false;

  constructor(config: DetectorConfig, nominalMs: number | undefined, enter: number, severeEnter: number) {
    this.estimator = new LinkEstimator({ windowSize: config.windowSize, ewmaAlpha: config.ewmaAlpha, baselineWarmup: config.baselineWarmup, nominalMs, learnedSlackMs: learnedSlackMs(config), stragglerMs: config.minExtraMs });
    this.hysteresis = new Hysteresis(enter, config.leaveAfter, severeEnter);
  }

  /** A straggler as reported: active and not held back by a suspension. */
  get flagged(): boolean {
    return this.hysteresis.active && !this.suppressed;
  }

  reconfigure(config: DetectorConfig, enter: number, severeEnter: number): void {
    this.estimator.reconfigure({ windowSize: config.windowSize, ewmaAlpha: config.ewmaAlpha, baselineWarmup: config.baselineWarmup, learnedSlackMs: learnedSlackMs(config), stragglerMs: config.minExtraMs });
    this.hysteresis.reconfigure(enter, config.leaveAfter, severeEnter);
  }

  /**
   * Samples whose median sizes the straggler: the samples that made it (a run of two severe ones,
   * or the K = enterAfter bad ones) and those since, up to the newest K. Never one sample alone
   * unless one made it (enterAfter 1): mild, mild, then one spike of 150 ms is a straggler of the
   * mild size, not of the spike's (issue 29); the healthy samples before a step do not hide a
   * straggler that two severe samples made. Once older than K, the upper quartile of its spell
   * (SPELL_QUANTILE of every sample of its current level, up to the window): a link whose delay is
   * drawn anew every iteration is sized by what it typically runs, not by the newest three draws, so the plan is made once for what the
   * spell runs and not re-made for every draw (the dynamic traces); a level shift (the newest K all
   * above, or all below, the spell before them) restarts the spell, so a step is sized within K.
   */
  recentCount(enterAfter: number): number {
    if (!this.hysteresis.active) return enterAfter;
    if (this.sinceEntry < enterAfter) return entrySamples(this.entryRun, this.sinceEntry, enterAfter);
    return Math.min(this.estimator.windowCapacity, Math.max(enterAfter, this.spell));
  }

  sizeMs(enterAfter: number): number {
    const n = this.recentCount(enterAfter);
    return n > enterAfter ? this.estimator.recentQuantileExtraMs(n, SPELL_QUANTILE) : this.estimator.recentExtraMs(n);
  }

  /**
   * After each sample: the spell grows, or restarts at the newest K when the level moved and the
   * straggler's levels have lasted a window on average. A level that lasts less than that is gone
   * before a plan made for it is in force (K samples to see it, the handshake's lead): a link whose
   * delay moves every few iterations (the paper's dynamic traces) is sized over the whole window.
   */
  trackSpell(flipped: boolean, enterAfter: number): void {
    const window = this.estimator.windowCapacity;
    if (!this.hysteresis.active) {
      this.spell = 0;
      this.shiftSeen = false;
    } else if (flipped) {
      this.spell = this.entryRun;
      this.shifts = 0;
      this.shiftSeen = false;
    } else {
      this.spell++;
      const older = Math.min(this.spell, window) - enterAfter;
      const shifted = older > 0 && this.estimator.levelShifted(enterAfter, older);
      if (shifted && !this.shiftSeen) {
        const levelLasted = (this.entryRun + this.sinceEntry) / (this.shifts + 1);
        this.shifts++;
        if (levelLasted >= window) this.spell = enterAfter;
      }
      this.shiftSeen = shifted;
    }
  }
}

/**
 * How far above its (calibrated) nominal time a link's learned baseline may be and still count as
 * healthy: a straggler's size (the delegation threshold, or the severe size if lower). Above it the
 * link was slow when it was learned.
 */
function learnedSlackMs(config: DetectorConfig): number {
  return Math.min(config.delegationThresholdMs, config.severeExtraMs);
}

/** Directions with a learned baseline needed before the job's offset over its registered nominal is trusted. */
const MIN_CALIBRATION_DIRECTIONS = 3;

/** Spreads of one sample a bad one must exceed (noiseFloorMs). */
const NOISE_Z = 3;

/** Healthy-link samples between two looks at the job's tail rate. */
const RECOUNT_EVERY = 1024;
/**
 * Pseudo-samples with no severe one that the tail rate starts from: a young job's first tail
 * sample must not read as a 1-in-50 rate.
 */
const PRIOR_SAMPLES = 4096;
/**
 * Chance severe samples past which the job's own count speaks for itself, without the prior: three
 * in the first thousand samples are a heavy tail (issue 29: a Pareto(1.3) fabric read as 1 in 4000
 * for its first few hundred iterations, and its first 2-iteration flap of +30 ms was a switch).
 */
const TAIL_EVENTS_TRUSTED = 3;
/** Past this many healthy samples the counts are halved: the rate follows the fabric as it changes. */
const DECAY_AT = 1 << 20;

function worse(a: number, b: number): number {
  if (a !== a) return b;
  if (b !== b) return a;
  return a > b ? a : b;
}

/**
 * Both directions of every pipeline link of every replica, indexed densely by
 * (dp * links + link) * 2 + direction and created on their first sample.
 */
export class PipelineLinkTracker {
  private readonly links: number;
  private readonly dpSize: number;
  private readonly directions: (Direction | undefined)[];
  private readonly tolerance: Float64Array;
  /** Per link: how many of its two directions are stragglers. */
  private readonly activeDirections: Uint8Array;
  /** Per link: 1 when the fleet names it slow (setFleetPrior). */
  private readonly fleet: Uint8Array;
  private activeLinks = 0;
  private tracked = 0;
  private suspended = false;
  /** Severe samples among the samples of healthy directions: the job's rate of chance tail samples. */
  private healthySamples = 0;
  private severeHealthySamples = 0;
  private sinceRecount = 0;
  /** What the job's links run over their registered nominal time (median over directions), ms. */
  private nominalOffset = 0;
  /** The job's typical spread of a direction's samples, log sigma (readNoise). */
  private noiseSigma = 0;
  private sinceCalibration = 0;
  private scratch = new Float64Array(16);
  /** The tail rate as last read (every RECOUNT_EVERY samples): a reconfigure re-reads no newer one. */
  private rateRead = 0;
  /** Severe samples in a row that make a straggler now (severeEnterAfter, raised by the tail rate). */
  private severeEnter: number;
  /** Bad samples in a row that make a straggler now: enterAfter, raised on a noisy job (ChanceRuns). */
  private readonly chance: ChanceRuns;

  constructor(
    private config: DetectorConfig,
    stages: number,
    dpSize: number,
    private readonly nominal: NominalNetwork | null,
  ) {
    this.links = Math.max(0, stages - 1);
    this.dpSize = dpSize;
    this.directions = new Array<Direction | undefined>(2 * this.links * dpSize).fill(undefined);
    this.tolerance = new Float64Array(this.links * dpSize).fill(Infinity);
    this.activeDirections = new Uint8Array(this.links * dpSize);
    this.fleet = new Uint8Array(this.links * dpSize);
    this.severeEnter = this.severeEnterFor(0);
    this.chance = new ChanceRuns(config.enterAfter, config.severeChanceRate);
  }

  /** Severe samples in a row that make a pipeline straggler at present (see DetectorConfig.severeChanceRate). */
  get severeEnterAfter(): number {
    return this.severeEnter;
  }

  /** The job's rate of severe samples on healthy links, as last read (what severeEnterAfter follows). */
  get tailRate(): number {
    return this.rateRead;
  }

  /** Straggling links (either direction). */
  get activeCount(): number {
    return this.activeLinks;
  }

  /** Directions with state. */
  get directionCount(): number {
    return this.tracked;
  }

  setTolerance(dp: number, link: number, toleranceMs: number): void {
    if (!Number.isInteger(dp) || !Number.isInteger(link) || dp < 0 || dp >= this.dpSize || link < 0 || link >= this.links) return;
    if (toleranceMs !== toleranceMs) return;
    this.tolerance[dp * this.links + link] = toleranceMs > 0 ? toleranceMs : 0;
  }

  /** One sample of one direction; true when a straggler state flipped or a NIC failure began or ended. */
  observe(dp: number, link: number, direction: number, sample: LinkObservation): boolean {
    const li = dp * this.links + link;
    const slot = 2 * li + direction;
    let d = this.directions[slot];
    if (d === undefined) {
      d = new Direction(this.config, this.nominalMs(sample.bytes), this.enterOf(li), this.severeEnterOf(li));
      d.estimator.calibrate(this.nominalOffset);
      this.directions[slot] = d;
      this.tracked++;
    }
    d.observations++;
    d.lastError = sample.error;
    let changed = false;
    let flipped: boolean;
    if (sample.error === 'nic-failure') {
      // The timing of a failed transfer says nothing about the link's speed: keep it out of the estimator.
      if (!d.nicFailure) changed = true;
      d.nicFailure = true;
      flipped = d.hysteresis.force(true);
    } else {
      if (sample.medianMs >= 0 && sample.medianMs < Infinity) d.estimator.add(sample.medianMs);
      if (++this.sinceCalibration >= this.tracked) this.calibrate();
      const extra = d.estimator.lastExtraMs();
      const bad = sample.error === 'timeout' || (this.isBad(extra, li) && extra > this.noiseFloorMs(d));
      const severe = bad && extra >= this.config.severeExtraMs;
      // A run of severe samples that ends without making a straggler was chance: the job's tail.
      // One that does make one is an onset, and says nothing of the tail (a job whose links often
      // turn slow must not be taken for a heavy-tailed one).
      const endedRun = severe ? 0 : d.severeRun;
      const endedBad = bad ? 0 : d.badRun;
      d.severeRun = severe ? d.severeRun + 1 : 0;
      d.badRun = bad ? d.badRun + 1 : 0;
      // A run of bad samples whose median is severe is a severe straggler: it needs the severe run the
      // job's tail asks for (severeEnterAfter, raised on a heavy-tailed job), not only enterAfter bad
      // samples, or a mild sample and two chance tail samples would make one (issue 29).
      const sizedSevere = bad && d.severeRun < this.severeEnterOf(li) && d.estimator.recentExtraMs(Math.min(this.config.enterAfter, d.badRun)) >= this.config.severeExtraMs;
      const wasActive = d.hysteresis.active;
      flipped = d.hysteresis.update(bad, severe, !sizedSevere);
      if (!wasActive) {
        this.countTail(flipped ? 0 : endedRun);
        if (this.chance.count(endedBad, 2 * this.links * this.dpSize)) this.applyRuns();
      }
      d.sinceEntry = flipped ? 0 : d.sinceEntry + 1;
      if (flipped && d.hysteresis.active) d.entryRun = Math.min(this.config.enterAfter, d.badRun);
      d.trackSpell(flipped, this.config.enterAfter);
      if (d.nicFailure && !d.hysteresis.active) {
        d.nicFailure = false;
        changed = true;
      }
    }
    if (flipped) {
      if (d.hysteresis.active) {
        // Entered while flagging is suspended: measured on, reported as healthy (a failed NIC is always reported).
        if (this.suspended && !d.nicFailure) d.suppressed = true;
        else {
          changed = true;
          this.count(li, 1);
        }
      } else if (d.suppressed) d.suppressed = false;
      else {
        changed = true;
        this.count(li, -1);
      }
    } else if (d.suppressed && d.nicFailure) {
      // A held-back straggler whose NIC then failed: reported from now.
      d.suppressed = false;
      changed = true;
      this.count(li, 1);
    }
    return changed;
  }

  /**
   * New knobs for every direction, keeping what each learned (ring of newest samples, EWMA,
   * baseline, straggler state and streaks): thresholds apply from each direction's next sample.
   */
  reconfigure(config: DetectorConfig): void {
    this.config = config;
    this.severeEnter = this.severeEnterFor(this.rateRead);
    this.chance.reconfigure(config.enterAfter, config.severeChanceRate);
    this.directions.forEach((d, slot) => d?.reconfigure(config, this.enterOf(slot >> 1), this.severeEnterOf(slot >> 1)));
  }

  private applyRuns(): void {
    this.directions.forEach((d, slot) => d?.hysteresis.reconfigure(this.enterOf(slot >> 1), this.config.leaveAfter, this.severeEnterOf(slot >> 1)));
  }

  /**
   * What the fleet knows of link (dp, link) (fleetLinkPrior; null: nothing). On a link the fleet
   * names slow the first bad sample makes a straggler. Takes effect from each direction's next sample.
   */
  setFleetPrior(dp: number, link: number, prior: FleetLinkPrior | null): void {
    if (!Number.isInteger(dp) || !Number.isInteger(link) || dp < 0 || dp >= this.dpSize || link < 0 || link >= this.links) return;
    const li = dp * this.links + link;
    const code = prior === 'slow' ? 1 : 0;
    if (this.fleet[li] === code) return;
    this.fleet[li] = code;
    for (const d of [this.directions[2 * li], this.directions[2 * li + 1]]) d?.hysteresis.reconfigure(this.enterOf(li), this.config.leaveAfter, this.severeEnterOf(li));
  }

  /** Bad samples in a row that make link li's directions stragglers: the job's run, 1 where the fleet names the link slow. */
  private enterOf(li: number): number {
    return this.fleet[li] === 1 ? 1 : this.chance.badRunNeeded;
  }

  private severeEnterOf(li: number): number {
    return this.fleet[li] === 1 ? 1 : this.severeEnter;
  }

  /** Bad samples in a row that make a straggler now (enterAfter, raised on a noisy job: ChanceRuns). */
  get enterAfterNow(): number {
    return this.chance.badRunNeeded;
  }

  /**
   * Counts one sample of a healthy direction, and the severe samples of a chance run that ended
   * with it. Now and then re-reads the job's tail rate p (chance severe samples per healthy sample) and sets the severe run that makes a straggler: the least k from
   * severeEnterAfter to enterAfter at which some direction of the job has a run of k by chance
   * (directions x p^k per iteration) no more often than severeChanceRate. A job under heavy-tailed
   * jitter so waits for a third severe sample before it switches; a quiet one still acts on the second.
   */
  private countTail(endedRun: number): void {
    this.healthySamples++;
    this.severeHealthySamples += endedRun;
    if (++this.sinceRecount < RECOUNT_EVERY) return;
    this.sinceRecount = 0;
    if (this.healthySamples > DECAY_AT) {
      this.healthySamples /= 2;
      this.severeHealthySamples /= 2;
    }
    const prior = this.severeHealthySamples >= TAIL_EVENTS_TRUSTED ? 0 : PRIOR_SAMPLES;
    this.rateRead = this.severeHealthySamples / (this.healthySamples + prior);
    const k = this.severeEnterFor(this.rateRead);
    if (k === this.severeEnter) return;
    this.severeEnter = k;
    this.applyRuns();
  }

  /**
   * The job's offset over its registered nominal times: the median over directions of learned
   * baseline minus nominal, once MIN_CALIBRATION_DIRECTIONS have both. A registration a millisecond
   * optimistic about every link then stands in as what the links really run, while a link slow from
   * its first sample is still measured against its peers' level, not its own (LinkEstimator).
   * O(directions), once per round of samples.
   */
  private calibrate(): void {
    this.sinceCalibration = 0;
    if (this.scratch.length < this.directions.length) this.scratch = new Float64Array(this.directions.length);
    this.readNoise();
    if (this.nominal === null) return;
    let n = 0;
    for (const d of this.directions) {
      const over = d ? d.estimator.learnedMs - d.estimator.nominalMs : Number.NaN;
      if (over === over) this.scratch[n++] = over;
    }
    const offset = n >= MIN_CALIBRATION_DIRECTIONS ? medianInPlace(this.scratch, n) : 0;
    if (offset === this.nominalOffset) return;
    this.nominalOffset = offset;
    for (const d of this.directions) d?.estimator.calibrate(offset);
  }

  /** The job's typical spread of a direction's samples (log sigma): the lower median over healthy directions. O(directions log directions). */
  private readNoise(): void {
    let n = 0;
    for (const d of this.directions) {
      // Healthy directions only: a straggler's window (or every link's, under a trace that slows them
      // all: bench:e2e's dynamic traces) is not noise. With none healthy, the last reading stands.
      // Nor a direction that never ran near its registered time: under a trace on every link from
      // the job's start the calibration takes the slow level for healthy, and its spread for noise.
      if (!d || d.hysteresis.active || d.estimator.extraMs() > this.config.minExtraMs || !d.estimator.ranNearNominal()) continue;
      const spread = d.estimator.logSpread();
      if (spread === spread) this.scratch[n++] = spread;
    }
    if (n < MIN_CALIBRATION_DIRECTIONS) return;
    const sorted = this.scratch.subarray(0, n).sort();
    this.noiseSigma = sorted[(n - 1) >> 1];
  }

  private severeEnterFor(rate: number): number {
    const c = this.config;
    const directions = Math.max(1, 2 * this.links * this.dpSize);
    let k = c.severeEnterAfter;
    while (k < c.enterAfter && directions * Math.pow(rate, k) > c.severeChanceRate) k++;
    return k;
  }

  /**
   * Suspends (true) or resumes (false) flagging: while suspended, a direction that becomes a
   * straggler is held back (measured on, not reported) unless its NIC failed; stragglers flagged
   * before go on until they recover. Resuming reports the held-back ones that still straggle.
   * True when a link's reported state changed.
   */
  suspend(suspended: boolean): boolean {
    this.suspended = suspended;
    if (suspended) return false;
    const before = this.activeLinks;
    this.directions.forEach((d, slot) => {
      if (!d?.suppressed) return;
      d.suppressed = false;
      this.count(slot >> 1, 1);
    });
    return this.activeLinks !== before;
  }

  private count(li: number, delta: 1 | -1): void {
    if (delta > 0) {
      if (this.activeDirections[li]++ === 0) this.activeLinks++;
    } else if (--this.activeDirections[li] === 0) this.activeLinks--;
  }

  /** Every link with a sample, in (dp, link) order; `rankAt(dp, pp)` names the ranks. */
  states(rankAt: (dp: number, pp: number) => number): PipelineLinkState[] {
    const out: PipelineLinkState[] = [];
    const recent = this.config.enterAfter;
    for (let li = 0; li < this.tolerance.length; li++) {
      const f = this.directions[2 * li];
      const b = this.directions[2 * li + 1];
      if (f === undefined && b === undefined) continue;
      const dp = Math.floor(li / this.links);
      const link = li - dp * this.links;
      // Direction.sizeMs: the samples that made the straggler, then the upper quartile of its spell, so one draw never re-sizes it.
      const forwardExtraMs = f ? f.sizeMs(recent) : 0;
      const backwardExtraMs = b ? b.sizeMs(recent) : 0;
      const extraMs = Math.max(forwardExtraMs, backwardExtraMs);
      const straggler = this.activeDirections[li] > 0;
      const nic = (f?.nicFailure ?? false) || (b?.nicFailure ?? false);
      const error: LinkError = nic ? 'nic-failure' : f?.lastError === 'timeout' || b?.lastError === 'timeout' ? 'timeout' : null;
      let reason: PipelineStragglerReason | null = null;
      if (straggler) reason = nic ? 'nic-failure' : extraMs > this.config.delegationThresholdMs ? 'delegation' : 'eq1';
      out.push({
        dp,
        link,
        upRank: rankAt(dp, link),
        downRank: rankAt(dp, link + 1),
        forwardExtraMs,
        backwardExtraMs,
        extraMs,
        baselineMs: worse(f ? f.estimator.baselineMs() : Number.NaN, b ? b.estimator.baselineMs() : Number.NaN),
        medianMs: worse(f ? f.estimator.medianMs() : Number.NaN, b ? b.estimator.medianMs() : Number.NaN),
        ewmaMs: worse(f ? f.estimator.ewmaMs() : Number.NaN, b ? b.estimator.ewmaMs() : Number.NaN),
        samples: Math.max(f?.observations ?? 0, b?.observations ?? 0),
        straggler,
        // Every direction that straggles is counting healthy samples towards leaveAfter.
        recovering: straggler && [f, b].every((d) => !d || !d.flagged || d.hysteresis.recovering),
        reason,
        error,
      });
    }
    return out;
  }

  /**
   * The extra delay one sample of `d` must exceed to count as bad besides minExtraMs and its
   * tolerance: NOISE_Z of the job's typical spread of a direction's samples (in log terms, the
   * lower median over directions, so a few stragglers do not raise it) at d's baseline (issue 29,
   * held-out noise). On lognormal medians of sigma 0.45, a 2.3 ms link's samples are a millisecond
   * or more above its baseline one time in four, and an 8 x 4 job took a straggler switch for
   * "+1.3 ms" in its first hundred iterations; ChanceRuns alone (capped at 2 x enterAfter) could not
   * ask for a run long enough. On quiet fabric (sigma 0.15) the floor is about minExtraMs anyway.
   */
  private noiseFloorMs(d: Direction): number {
    const floor = NOISE_Z * this.noiseSigma * d.estimator.baselineMs();
    // Never above the delegation threshold: noise may hide a mild straggler (one Eq. 1's tolerance
    // would answer), never one that needs delegation. Uncapped, a job whose every link ran a trace of
    // 30 +- 10 ms from its start (bench:e2e's dynamic traces) read that spread as noise, and the
    // floor hid its stragglers: 1.36-1.52x the oracle instead of 1.02-1.05x.
    const cap = this.config.delegationThresholdMs;
    return floor > 0 ? (floor < cap ? floor : cap) : 0;
  }

  private isBad(extra: number, li: number): boolean {
    const c = this.config;
    return extra > c.minExtraMs && (extra > c.delegationThresholdMs || extra > this.tolerance[li]);
  }

  private nominalMs(bytes: number): number | undefined {
    const n = this.nominal;
    if (n === null || !(bytes >= 0) || !(n.gbps > 0)) return undefined;
    const ms = n.latencyMs + bytes / (n.gbps * 1e6);
    return Number.isFinite(ms) ? ms : undefined;
  }
}
