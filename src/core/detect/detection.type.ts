/** Reported by the ranks; see protocol rank-report v1. Declared here so the core depends on nothing outside it. */
export type LinkError = 'nic-failure' | 'timeout' | null;

export interface RankPosition {
  rank: number;
  dp: number;
  pp: number;
}

/** Only reporting ranks (one per (dp, pp)). */
export interface JobTopology {
  stages: number;
  dpSize: number;
  ranks: RankPosition[];
  /** Each rank's failure or network domain (registration `locality`), by rank number; absent: one domain. */
  localityOf?: ReadonlyMap<number, string>;
}

/** One iteration of one link a rank sends on: per-message transfer time, median and max, ms. */
/** What the fleet knows of a link (fleetLinkPrior): `slow`, it runs through a suspect other jobs named, and its first bad sample flags it. */
export type FleetLinkPrior = 'slow';

export interface LinkObservation {
  peer: number;
  kind: 'pipeline' | 'data-parallel';
  bytes: number;
  medianMs: number;
  maxMs: number;
  delegated: boolean;
  error: LinkError;
}

/** Median compute time of the stage's F, B, W over one iteration, ms. */
export interface ComputeObservation {
  f: number;
  b: number;
  w: number;
}

export type PipelineStragglerReason = 'nic-failure' | 'eq1' | 'delegation';

/**
 * Pipeline link `link` of replica `dp` (stage link -> link + 1). Where one number stands for
 * both directions it is the worse one (the larger), since either direction stalls the pipeline.
 */
export interface PipelineLinkState {
  dp: number;
  link: number;
  upRank: number;
  downRank: number;
  /** Current extra delay per direction: median of the newest enterAfter samples over the baseline, ms. */
  forwardExtraMs: number;
  backwardExtraMs: number;
  /** max(forwardExtraMs, backwardExtraMs). */
  extraMs: number;
  baselineMs: number;
  medianMs: number;
  ewmaMs: number;
  /** Observations of the busier direction, error samples included. */
  samples: number;
  straggler: boolean;
  /** A straggler whose newest samples are healthy again: held by hysteresis (leaveAfter) until it recovers. */
  recovering: boolean;
  reason: PipelineStragglerReason | null;
  error: LinkError;
}

/** Directed data-parallel link fromRank -> toRank (same stage `pp`, different replicas). */
export interface DataParallelLinkState {
  fromRank: number;
  toRank: number;
  pp: number;
  medianMs: number;
  /** Healthy level: the lowest of the peer median, the link's learned baseline and the nominal network, ms (NaN if none). */
  baselineMs: number;
  /** Extra delay of the newest enterAfter samples' median over the baseline, ms (0 when unknown). */
  extraMs: number;
  /** Median over all data-parallel links of the job of their window medians, ms. */
  peerMedianMs: number;
  /** medianMs / peerMedianMs (NaN when either is unknown). */
  ratio: number;
  samples: number;
  straggler: boolean;
  /** A straggler whose newest samples are healthy again (see PipelineLinkState.recovering). */
  recovering: boolean;
  error: LinkError;
}

export interface RankComputeState {
  rank: number;
  dp: number;
  pp: number;
  /**
   * Median F, B, W, ms: over the window; over the newest half of the window and every sample since,
   * while the rank is flagged slow (its window still holds samples from before the onset).
   */
  fMs: number;
  bMs: number;
  wMs: number;
  /** Median f+b+w of the same stage in the other replicas, or the rank's own healthy level when dpSize is 1, ms. */
  referenceMs: number;
  /** Median f+b+w (read as fMs is) over referenceMs (NaN when the reference is unknown). */
  ratio: number;
  straggler: boolean;
  /** A straggler whose newest samples are healthy again (see PipelineLinkState.recovering). */
  recovering: boolean;
}

export interface DetectionSnapshot {
  /** Every pipeline link with at least one sample, sorted by (dp, link). */
  pipelineLinks: PipelineLinkState[];
  /** Every data-parallel link with at least one sample, sorted by (fromRank, toRank). */
  dataParallelLinks: DataParallelLinkState[];
  /** Every rank with at least one compute sample, sorted by (dp, pp). */
  compute: RankComputeState[];
  /** Per stage, max over replicas of the median F, B, W (ms); NaN where no report yet. For planning heterogeneous stages. */
  stageTimes: { fMs: number[]; bMs: number[]; wMs: number[] };
}

/** What the detector has learned of the job's noise, and the rule it applies because of it. */
export interface DetectionNoise {
  /** Severe samples per sample on healthy pipeline links (chance tail samples), as last read. */
  tailRate: number;
  /** Severe samples in a row that make a pipeline straggler now: severeEnterAfter, raised while tailRate makes that many likely by chance. */
  severeEnterAfter: number;
}

export interface ObserveResult {
  /** The report was taken into the detector state (false for unknown ranks and duplicates). */
  accepted: boolean;
  duplicate: boolean;
  /** Links of the report that were not used: unknown or wrong-kind peer, or unusable timing. */
  ignoredLinks: number;
  /** Some straggler state flipped (or a NIC failure began or ended). */
  changed: boolean;
}
