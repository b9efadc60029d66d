/**
 * How long a run of bad samples must be before it is a straggler and not chance, from the job's own
 * rate of bad samples on healthy links (issue 29, outside noise). Under noise where one sample in
 * seven on a healthy ring is "bad" (lognormal medians, sigma 0.6), three in a row come up on some
 * link of an 8-ring job every few dozen iterations, and a young job with no history was re-mapped
 * for one at iteration 9. So, as pipeline links already do for severe samples
 * (PipelineLinkTracker.countTail), the run asked for is the least k at which some link of the job
 * has a chance run of k no more often than `chanceRate` per iteration (links x p^k), for bad
 * samples (from enterAfter up to MAX_RUN_FACTOR x enterAfter) and for severe ones (from
 * severeEnterAfter up to the bad run). A quiet job keeps enterAfter and severeEnterAfter.
 *
 * A run that ends without making a straggler was chance and is counted; one that makes a straggler
 * is an onset and is not (a job whose links often turn slow must not read as a noisy one). The
 * rate is re-read every round of samples while the job is young (its first noise must count before
 * its first decision), then every RECOUNT_EVERY samples. O(1) per sample.
 */
export class ChanceRuns {
  private healthy = 0;
  private bad = 0;
  private since = 0;
  private badRun: number;
  private links = 1;
  /** The chance rate read at the last round's end (reread). */
  private readRate = 0;

  constructor(
    private enterAfter: number,
    private chanceRate: number,
  ) {
    this.badRun = enterAfter;
  }

  /** Bad samples in a row that make a straggler now. */
  get badRunNeeded(): number {
    return this.badRun;
  }

  /** Chance bad samples per healthy sample as counted so far (the prior included while too few were seen). */
  get badRate(): number {
    return this.rate(this.bad);
  }

  /**
   * New knobs take effect at once, on the rate read at the last round's end: the same knobs, or
   * other knobs and back, change nothing. A re-read of the counts mid-round moved the run asked for
   * a few samples before the round ended, and a detector reconfigured with its own config flagged a
   * ring a detector left alone did not (job-detector-reconfigure.spec.ts found it).
   */
  reconfigure(enterAfter: number, chanceRate: number): void {
    this.enterAfter = enterAfter;
    this.chanceRate = chanceRate;
    this.badRun = this.runFor(this.readRate);
  }

  /**
   * One sample of a healthy link, with the bad samples of the chance run that ended with it (0 when
   * none did). `links`: links of the job. True when the run asked for changed.
   */
  count(endedBad: number, links: number): boolean {
    this.links = Math.max(1, links);
    this.healthy++;
    this.bad += endedBad;
    const every = this.healthy < YOUNG_SAMPLES ? Math.max(1, links) : RECOUNT_EVERY;
    if (++this.since < every) return false;
    this.since = 0;
    if (this.healthy > DECAY_AT) {
      this.healthy /= 2;
      this.bad /= 2;
    }
    return this.reread();
  }

  private rate(events: number): number {
    return events / (this.healthy + (events >= EVENTS_TRUSTED ? 0 : PRIOR_SAMPLES));
  }

  private reread(): boolean {
    this.readRate = this.rate(this.bad);
    const badRun = this.runFor(this.readRate);
    const changed = badRun !== this.badRun;
    this.badRun = badRun;
    return changed;
  }

  /** The least run from enterAfter up to MAX_RUN_FACTOR x enterAfter that some link sees by chance no more often than chanceRate. */
  private runFor(rate: number): number {
    const n = Math.max(1, this.links);
    const most = MAX_RUN_FACTOR * this.enterAfter;
    let k = this.enterAfter;
    while (k < most && n * Math.pow(rate, k) > this.chanceRate) k++;
    return k;
  }
}

/** Healthy samples with no chance event the rate starts from: a young job's first bad sample is not a 1-in-10 rate. */
const PRIOR_SAMPLES = 4096;
/** Chance events past which the job's own count speaks for itself (as PipelineLinkTracker's TAIL_EVENTS_TRUSTED). */
const EVENTS_TRUSTED = 3;
/** The bad run asked for never exceeds this many times enterAfter: a real straggler must still be seen. */
const MAX_RUN_FACTOR = 2;
/** Healthy samples while the job is young: the rate is re-read every round of samples. */
const YOUNG_SAMPLES = 8192;
/** Healthy samples between two re-reads afterwards. */
const RECOUNT_EVERY = 1024;
/** Past this many healthy samples the counts are halved: the rate follows the fabric as it changes. */
const DECAY_AT = 1 << 20;
