import { DetectorConfig } from './detector-config.type';
import { DataParallelLinkState, LinkError, LinkObservation } from './detection.type';
import { Hysteresis } from './hysteresis';
import { medianInPlace } from './median-select';
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
 * Directed data-parallel links, judged against the job-wide median of their window medians.
 * That median costs O(links) to compute, so it is cached: with 10k links it is refreshed
 * about once per round of samples, which keeps observe() O(1) amortized.
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

  constructor(
    private readonly config: DetectorConfig,
    private readonly rankOf: ArrayLike<number>,
    private readonly ppOf: ArrayLike<number>,
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
      if (!link.hysteresis.force(true)) return changed;
      this.active++;
      return true;
    }
    if (sample.medianMs >= 0 && sample.medianMs < Infinity) link.window.add(sample.medianMs);
    if (++this.sinceRefresh >= this.refreshInterval()) this.refresh();
    const flipped = link.hysteresis.update(sample.error === 'timeout' || this.isBad(link.window.median()));
    if (flipped) this.active += link.hysteresis.active ? 1 : -1;
    let changed = flipped;
    if (link.nicFailure && !link.hysteresis.active) {
      link.nicFailure = false;
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
        out.push({
          fromRank: this.rankOf[link.from],
          toRank: this.rankOf[link.to],
          pp: this.ppOf[link.from],
          medianMs,
          peerMedianMs,
          ratio: peerMedianMs > 0 ? medianMs / peerMedianMs : Number.NaN,
          samples: link.observations,
          straggler: link.hysteresis.active,
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

  private isBad(median: number): boolean {
    if (this.peerCount < MIN_PEERS) return false;
    const peer = this.peerMedian;
    return median > this.config.dpSlowRatio * peer && median - peer > this.config.minExtraMs;
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
