/** Everything the job page shows, gathered by the daemon (plain data, so the page renders without I/O). */
export interface JobPageView {
  jobId: string;
  stages: number;
  microbatches: number;
  dp: number;
  iteration: number;
  /** Measured iteration time now, ms (null until known). */
  iterationMs: number | null;
  scheduleVersion: number | null;
  /** A switch under way, e.g. "v3 prepared for iteration 40, 5/8 ranks acknowledged". */
  handshake: string | null;
  stragglers: JobPageStraggler[];
  heat: HeatStrip;
  versions: JobPageVersion[];
  /** The before/after timeline (SVG text from renderTimelineSvg), or null before the first schedule. */
  timelineSvg: string | null;
  /** Where the timeline and the JSON live (relative links). */
  links: { timeline: string; json: string };
}

export interface JobPageStraggler {
  kind: 'pipeline' | 'data-parallel' | 'compute';
  /** e.g. "dp 0 link 6-7 (rank 6 -> 7)". */
  where: string;
  extraMs: number;
  note: string;
}

/** Link delays over recent iterations: one row per link, one column per iteration. */
export interface HeatStrip {
  iterations: number[];
  /** Measured iteration time per column, ms (NaN when unknown). */
  iterationMs: number[];
  rows: HeatRow[];
  /** Rows left out because the job has more links than the page shows. */
  hiddenRows: number;
  /** Link samples the daemon did not keep (older than the ring, or naming a link outside the job); optional. */
  droppedSamples?: number;
}

export interface HeatRow {
  label: string;
  straggler: boolean;
  /** Healthy one-way time the detector learned, ms (NaN when not learned): the colour shows the delay above it. */
  baselineMs: number;
  /** One-way time per column, ms (NaN when not reported). */
  values: number[];
}

export interface JobPageVersion {
  version: number;
  fromIteration: number;
  reason: string;
  detail: string;
  predictedMs: number;
  previousPredictedMs: number | null;
  /** Mean measured iteration time while it ran, ms (null when no iteration measured). */
  measuredMs: number | null;
  inForce: boolean;
}
