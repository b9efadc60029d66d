import { ChanceRuns } from './chance-runs';
import { DetectorConfig } from './detector-config.type';
import { DataParallelLinkState, FleetLinkPrior, LinkError, LinkObservation } from './detection.type';
import { Hysteresis } from './hysteresis';
import { LearnedBaseline } from './learned-baseline';
import { medianInPlace } from './median-select';
import { NominalNetwork } from './pipeline-link-tracker';
import { entrySamples } from './entry-samples';
import { SlidingWindow } from './sliding-window';

/** Fewer links than this give no meaningful "typical" data-parallel link. */
const MIN_PEERS = 3;
/** The peer median is recomputed at most once per this many samples (and per sample count equal to the number of links). */
const REFRESH_SAMPLES = 64;
/** Spreads of one sample a bad one must exceed (noiseFloorMs), as PipelineLinkTracker's. */
const NOISE_Z = 3;

class DataParallelLink {
  readonly window: SlidingWindow;
  readonly hysteresis: Hysteresis;
  observations = 0;
  nicFailure = false;
  lastError: LinkError = null;
  /** The link's own healthy level once the window is warm (a low quantile of healthy window medians). */
  readonly learned = new LearnedBaseline();
  /** Latency plus one message at nominal bandwidth, ms (NaN without a nominal network). */
  nominal = Number.NaN;
  /** Became a straggler while flagging was suspended: not reported as one. */
  suppressed = false;
  /** Bad samples in a row (the run ChanceRuns counts when it ends by chance). */
  badStreak = 0;
  /** Bad samples in a row that made it a straggler, at most enterAfter, and samples since (sizing, recentCount). */
  entryRun = 0;
  sinceEntry = 0;
  /** What the fleet knows of it (JobDetector.setFleetPrior). */
  fleet: FleetLinkPrior | null = null;

  constructor(
    readonly from: number,
    readonly to: number,
    config: DetectorConfig,
    enter: number,
  ) {
    this.window = new SlidingWindow(config.windowSize);
    this.hysteresis = new Hysteresis(enter, config.leaveAfter);
  }
}

/**
 * Directed data-parallel links, each judged against the lowest of three healthy references:
 * the job-wide median of the links' window medians (a link slower than its peers), its own
 * learned baseline (a link slower than it used to be) and the nominal network (a link slower
 * than the fabric should be). The last two catch what peers cannot: a slow boundary that every
 * ring crosses, such as replicas placed in two racks or two datacenters. The peer median costs
 * O(links), so it is cached: with 10k links it is refreshed about once per round of samples,
 * which keeps observe() O(1) amortized.
 */
export class DataParallelLinkTracker {
  /** Per sending rank (index), its outgoing links sorted by the receiving rank's number; usually two (ring). */
  private readonly outgoing: DataParallelLink[][];
  private readonly all: DataParallelLink[] = [];
  private scratch = new Float64Array(64);
  private peerMedian = Number.NaN;
  private peerCount = 0;
  /** What the job's rings run over their registered nominal time (median over links of lowest level minus nominal), ms. */
  private nominalOffset = 0;
  /** The job's typical spread of a ring's samples (log sigma; lower median over healthy rings), 0 until read. */
  private noiseSigma = 0;
  private sinceRefresh = 0;
  private active = 0;
  private suspended = false;
  private readonly chance: ChanceRuns;
  private fleetPrior: ((from: number, to: number) => FleetLinkPrior | null) | null = null;

  constructor(
    private config: DetectorConfig,
    private readonly rankOf: ArrayLike<number>,
    private readonly ppOf: ArrayLike<number>,
    private readonly network: NominalNetwork | null = null,
    /** Each rank index's locality (null: one domain): the nominal is calibrated on links inside one. */
    private readonly locality: readonly string[] | null = null,
  ) {
    this.outgoing = Array.from({ length: rankOf.length }, () => []);
    this.chance = new ChanceRuns(config.enterAfter, config.severeChanceRate);
  }

  /** Bad samples in a row that make a straggler now (enterAfter, raised on a noisy job: ChanceRuns). */
  get enterAfterNow(): number {
    return this.chance.badRunNeeded;
  }

  get activeCount(): number {
    return this.active;
  }

  get linkCount(): number {
    return this.all.length;
  }

  /** One sample of link from -> to (rank indices); true when its straggler state flipped or a NIC failure began or ended. */
  observe(from: number, to: number, sample: LinkObservation): boolean {
    const link = this.find(from, to);
    link.observations++;
    link.lastError = sample.error;
    if (sample.error === 'nic-failure') {
      const changed = !link.nicFailure;
      link.nicFailure = true;
      if (link.hysteresis.force(true)) {
        this.active++;
        return true;
      }
      if (!link.suppressed) return changed;
      // A held-back straggler whose NIC then failed: reported from now.
      link.suppressed = false;
      this.active++;
      return true;
    }
    if (link.nominal !== link.nominal && this.network && sample.bytes >= 0) link.nominal = this.network.latencyMs + sample.bytes / (this.network.gbps * 1e6);
    if (sample.medianMs >= 0 && sample.medianMs < Infinity) {
      link.window.add(sample.medianMs);
      if (link.window.size >= this.config.baselineWarmup) {
        const level = link.learned.ms;
        const band = Math.max(this.config.minExtraMs, this.config.dpMinExtraMs);
        link.learned.observe(link.window.median(), Math.max(level + band, this.config.dpSlowRatio * level), band);
      }
    }
    if (++this.sinceRefresh >= this.refreshInterval()) this.refresh();
    // Like pipeline links: each sample (already a median over the iteration's chunks) is judged, and
    // hysteresis asks for K in a row, K as long as the job's own chance runs ask (ChanceRuns).
    const bad = sample.error === 'timeout' || this.isBad(link, sample.medianMs);
    // No severe path for rings: a slow boundary slows several rings at once, and a re-map must see
    // them all. With one (two severe samples), which rings were flagged first depended on the order
    // reports came in; a re-map decided on one of them put the others' slow pairs on pipeline edges
    // (bench:e2e's +30 ms rack link: 7.76x in half the runs instead of 1.07x).
    const endedBad = bad ? 0 : link.badStreak;
    link.badStreak = bad ? link.badStreak + 1 : 0;
    const wasActive = link.hysteresis.active;
    const flipped = link.hysteresis.update(bad);
    if (!wasActive && this.chance.count(endedBad, this.all.length)) this.applyRuns();
    link.sinceEntry = flipped ? 0 : link.sinceEntry + 1;
    if (flipped && link.hysteresis.active) link.entryRun = Math.min(this.config.enterAfter, link.badStreak);
    let changed = false;
    if (flipped && link.hysteresis.active && this.suspended) link.suppressed = true;
    else if (flipped && !link.hysteresis.active && link.suppressed) link.suppressed = false;
    else if (flipped) {
      this.active += link.hysteresis.active ? 1 : -1;
      changed = true;
    }
    if (link.nicFailure && !link.hysteresis.active) {
      link.nicFailure = false;
      changed = true;
    }
    return changed;
  }

  /**
   * New knobs, keeping each link's newest samples (as many as the new window holds), baseline and
   * straggler state. The cached peer median is refreshed on its usual schedule, not here.
   */
  reconfigure(config: DetectorConfig): void {
    this.config = config;
    this.chance.reconfigure(config.enterAfter, config.severeChanceRate);
    for (const link of this.all) link.window.resize(config.windowSize);
    this.applyRuns();
  }

  private applyRuns(): void {
    for (const link of this.all) link.hysteresis.reconfigure(this.enterOf(link), this.config.leaveAfter);
  }

  /**
   * What the fleet knows of each link, by rank indices (null: nothing), as PipelineLinkTracker's
   * setFleetPrior: a link the fleet names slow is flagged on its first bad sample. Kept for links
   * not seen yet.
   */
  setFleetPrior(prior: ((from: number, to: number) => FleetLinkPrior | null) | null): void {
    this.fleetPrior = prior;
    for (const link of this.all) link.fleet = prior ? prior(link.from, link.to) : null;
    this.applyRuns();
  }

  private enterOf(link: DataParallelLink): number {
    return link.fleet === 'slow' ? 1 : this.chance.badRunNeeded;
  }

  /** Suspends or resumes flagging (PipelineLinkTracker.suspend); true when what is reported changed. */
  suspend(suspended: boolean): boolean {
    this.suspended = suspended;
    if (suspended) return false;
    let changed = false;
    for (const link of this.all) {
      if (!link.suppressed) continue;
      link.suppressed = false;
      this.active++;
      changed = true;
    }
    return changed;
  }

  /** Recomputes the peer median now. */
  refresh(): void {
    this.sinceRefresh = 0;
    if (this.scratch.length < this.all.length) this.scratch = new Float64Array(Math.max(this.all.length, 2 * this.scratch.length));
    let n = 0;
    for (const link of this.all) {
      const m = link.window.median();
      if (m === m) this.scratch[n++] = m;
    }
    this.peerCount = n;
    this.peerMedian = medianInPlace(this.scratch, n);
    // The registration's ring nominal calibrated as PipelineLinkTracker does its links': by the job's
    // median offset over it. A ring nominal 50x optimistic (0.09 ms for rings running 7 ms) otherwise
    // took every ring for one slow from its first sample, and every ring read +6.6 ms forever. Only
    // links inside one locality calibrate it: rings that all cross a slow boundary (replicas in two
    // racks or datacenters, declared as localities) are still slow against the nominal.
    let k = 0;
    for (const link of this.all) {
      if (this.locality && this.locality[link.from] !== this.locality[link.to]) continue;
      const over = link.learned.lowestMs - link.nominal;
      if (over === over) this.scratch[k++] = over;
    }
    this.nominalOffset = k >= MIN_PEERS ? Math.max(0, medianInPlace(this.scratch, k)) : 0;
    this.readNoise();
  }

  /**
   * The job's typical spread of a ring's samples, as PipelineLinkTracker.readNoise reads its links':
   * the lower median over rings neither flagged nor above their reference, of each window's
   * lower-half spread in log terms (a straggler's samples are not noise, and the lower half does not
   * see the bursts a spell adds). With none healthy, the last reading stands.
   */
  private readNoise(): void {
    let n = 0;
    for (const link of this.all) {
      if (link.hysteresis.active || link.window.size < this.config.baselineWarmup) continue;
      const mid = link.window.median();
      if (mid - this.reference(link) > this.config.dpMinExtraMs) continue;
      const lo = link.window.quantile(0.25);
      if (lo > 0 && mid >= lo) this.scratch[n++] = Math.log(mid / lo) / 0.6745;
    }
    if (n < MIN_PEERS) return;
    const sorted = this.scratch.subarray(0, n).sort();
    this.noiseSigma = sorted[(n - 1) >> 1];
  }

  /**
   * The extra delay one ring sample must exceed besides dpMinExtraMs: NOISE_Z of the job's typical
   * spread at the link's reference (held out, bench:outside: on lognormal ring medians of sigma 0.5
   * under a slow drift, one healthy ring ran six samples in a row 1.6x its level, and a young 6 x 2
   * job was re-mapped at iteration 347; the run ChanceRuns may ask for stops at 2 x enterAfter).
   * Capped at half severeExtraMs: noise may hide a mild ring straggler, never a severe one.
   */
  private noiseFloorMs(ref: number): number {
    const floor = NOISE_Z * this.noiseSigma * ref;
    const cap = this.config.severeExtraMs / 2;
    return floor > 0 ? (floor < cap ? floor : cap) : 0;
  }

  /** Every link with a sample, sorted by (fromRank, toRank); `byRankNumber` lists rank indices by rank number. Refreshes the peer median. */
  states(byRankNumber: ArrayLike<number>): DataParallelLinkState[] {
    this.refresh();
    const peerMedianMs = this.peerCount >= MIN_PEERS ? this.peerMedian : Number.NaN;
    const out: DataParallelLinkState[] = [];
    for (let k = 0; k < byRankNumber.length; k++) {
      for (const link of this.outgoing[byRankNumber[k]]) {
        const medianMs = link.window.median();
        const baselineMs = this.reference(link);
        // Sized by the samples that made it, then by the newest K (PipelineLinkTracker's Direction.recentCount):
        // a ring the fleet names slow is a straggler on its first bad sample, and the newest K would
        // then be mostly healthy ones, sizing it at 0 ms, so that no re-map was priced for it.
        const recentMs = link.window.recentMedian(this.recentCount(link));
        out.push({
          fromRank: this.rankOf[link.from],
          toRank: this.rankOf[link.to],
          pp: this.ppOf[link.from],
          medianMs,
          baselineMs,
          extraMs: recentMs > baselineMs ? recentMs - baselineMs : 0,
          peerMedianMs,
          ratio: peerMedianMs > 0 ? medianMs / peerMedianMs : Number.NaN,
          samples: link.observations,
          straggler: link.hysteresis.active && !link.suppressed,
          recovering: link.hysteresis.recovering && !link.suppressed,
          error: link.nicFailure ? 'nic-failure' : link.lastError,
        });
      }
    }
    return out;
  }

  /** Samples that size a straggler: those that made it and those since, up to the newest enterAfter. */
  private recentCount(link: DataParallelLink): number {
    const k = this.config.enterAfter;
    return link.hysteresis.active && link.sinceEntry < k ? entrySamples(link.entryRun, link.sinceEntry, k) : k;
  }

  private refreshInterval(): number {
    // Until a peer median exists, small jobs refresh every round of samples (cheap: few links);
    // afterwards at most every 64 samples, and no more than once per round for big jobs.
    const n = this.all.length;
    return this.peerCount >= MIN_PEERS ? Math.max(REFRESH_SAMPLES, n) : Math.min(REFRESH_SAMPLES, n);
  }

  /**
   * The healthy level a link is judged against: the lower of its peers' median and its own healthy
   * level (NaN if neither is known). Its own level is its learned baseline, or the nominal network
   * when the learned one sits a straggler's size above it (the ring was slow from its first sample: a
   * slow boundary every ring crosses). A nominal a little optimistic so leaves no standing extra
   * delay (issue 29). Before its own level is learned the nominal stands in only where no peers
   * answer: a registration's promise is not a measurement, and against a nominal 7x below what the
   * rings ran, an outside job's noisy first iterations read as +5 ms stragglers and were re-mapped at
   * iteration 5 (the peers, running alike, said they were healthy).
   */
  private reference(link: DataParallelLink): number {
    const slack = Math.min(this.config.delegationThresholdMs, this.config.severeExtraMs, this.config.dpMinExtraMs);
    const learned = link.learned.ms;
    const peers = this.peerCount >= MIN_PEERS ? this.peerMedian : Number.NaN;
    const nominal = link.nominal + this.nominalOffset;
    if (learned !== learned) return peers === peers ? peers : nominal;
    const own = link.learned.lowestMs > nominal + slack ? nominal : learned;
    return peers < own ? peers : own;
  }

  private isBad(link: DataParallelLink, median: number): boolean {
    const ref = this.reference(link);
    return median > this.config.dpSlowRatio * ref && median - ref > Math.max(this.config.minExtraMs, this.config.dpMinExtraMs, this.noiseFloorMs(ref));
  }

  private find(from: number, to: number): DataParallelLink {
    const list = this.outgoing[from];
    for (let i = 0; i < list.length; i++) if (list[i].to === to) return list[i];
    const fleet = this.fleetPrior ? this.fleetPrior(from, to) : null;
    const link = new DataParallelLink(from, to, this.config, fleet === 'slow' ? 1 : this.chance.badRunNeeded);
    link.fleet = fleet;
    const toRank = this.rankOf[to];
    let i = list.length;
    list.push(link);
    while (i > 0 && this.rankOf[list[i - 1].to] > toRank) {
      list[i] = list[i - 1];
      i--;
    }
    list[i] = link;
    this.all.push(link);
    return link;
  }
}
