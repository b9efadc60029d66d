import { DetectorConfig } from './detector-config.type';
import { DataParallelLinkState, LinkError, LinkObservation } from './detection.type';
import { Hysteresis } from './hysteresis';
import { medianInPlace } from './median-select';
import { NominalNetwork } from './pipeline-link-tracker';
import { SlidingWindow } from './sliding-window';

/** Fewer links than this give no meaningful "typical" data-parallel link. */
const MIN_PEERS = 3;
/** The peer median is recomputed at most once per this many samples (and per sample count equal to the number of links). */
const REFRESH_SAMPLES = 64;

class DataParallelLink {
  readonly window: SlidingWindow;
  readonly hysteresis: Hysteresis;
  observations = 0;
  nicFailure = false;
  lastError: LinkError = null;
  /** Lowest window median once the window is warm: the link's own healthy level. */
  learned = Number.NaN;
  /** Latency plus one message at nominal bandwidth, ms (NaN without a nominal network). */
  nominal = Number.NaN;
  /** Became a straggler while flagging was suspended: not reported as one. */
  suppressed = false;

  constructor(
    readonly from: number,
    readonly to: number,
    config: DetectorConfig,
  ) {
    this.window = new SlidingWindow(config.windowSize);
    this.hysteresis = new Hysteresis(config.enterAfter, config.leaveAfter);
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
  private sinceRefresh = 0;
  private active = 0;
  private suspended = false;

  constructor(
    private config: DetectorConfig,
    private readonly rankOf: ArrayLike<number>,
    private readonly ppOf: ArrayLike<number>,
    private readonly network: NominalNetwork | null = null,
  ) {
    this.outgoing = Array.from({ length: rankOf.length }, () => []);
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
        const m = link.window.median();
        if (!(m >= link.learned)) link.learned = m;
      }
    }
    if (++this.sinceRefresh >= this.refreshInterval()) this.refresh();
    // Like pipeline links: each sample (already a median over the iteration's chunks) is judged, and hysteresis asks for K in a row.
    const flipped = link.hysteresis.update(sample.error === 'timeout' || this.isBad(link, sample.medianMs));
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
    for (const link of this.all) {
      link.window.resize(config.windowSize);
      link.hysteresis.reconfigure(config.enterAfter, config.leaveAfter);
    }
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
        // The newest K samples, the same K that make a straggler: its size is right the moment it is detected.
        const recentMs = link.window.recentMedian(this.config.enterAfter);
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

  private refreshInterval(): number {
    // Until a peer median exists, small jobs refresh every round of samples (cheap: few links);
    // afterwards at most every 64 samples, and no more than once per round for big jobs.
    const n = this.all.length;
    return this.peerCount >= MIN_PEERS ? Math.max(REFRESH_SAMPLES, n) : Math.min(REFRESH_SAMPLES, n);
  }

  /**
   * The healthy level a link is judged against: the lower of its peers' median and its own healthy
   * level (NaN if neither is known). Its own level is its learned baseline; the nominal network
   * stands in before one is learned, or when the learned one sits a straggler's size above it (the
   * ring was slow from its first sample: a slow boundary every ring crosses). A nominal a little
   * optimistic so leaves no standing extra delay (issue 29).
   */
  private reference(link: DataParallelLink): number {
    const slack = Math.min(this.config.delegationThresholdMs, this.config.severeExtraMs, this.config.dpMinExtraMs);
    const own = link.learned !== link.learned || link.learned > link.nominal + slack ? link.nominal : link.learned;
    const peers = this.peerCount >= MIN_PEERS ? this.peerMedian : Number.NaN;
    if (own !== own) return peers;
    return peers < own ? peers : own;
  }

  private isBad(link: DataParallelLink, median: number): boolean {
    const ref = this.reference(link);
    return median > this.config.dpSlowRatio * ref && median - ref > Math.max(this.config.minExtraMs, this.config.dpMinExtraMs);
  }

  private find(from: number, to: number): DataParallelLink {
    const list = this.outgoing[from];
    for (let i = 0; i < list.length; i++) if (list[i].to === to) return list[i];
    const link = new DataParallelLink(from, to, this.config);
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
