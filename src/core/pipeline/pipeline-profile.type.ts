/**
 * What the engine knows about one pipeline: its shape, per-stage compute times,
 * per-link delays and, optionally, bandwidth and activation memory.
 * This is also the CLI's profile JSON format (see README "Profile format").
 *
 * Links are numbered by their upstream stage: link i joins stage i and stage i+1.
 */
export interface PipelineProfile {
  stages: number;
  microbatches: number;
  /** Forward time per stage, ms. */
  fMs: number[];
  /** Backward-for-inputs time per stage, ms. */
  bMs: number[];
  /** Backward-for-weights time per stage, ms. */
  wMs: number[];
  /** Extra one-way latency per link (length stages-1), ms; applies to activations and gradients. */
  linkMs: number[];
  /** Bytes of one activation (forward) or gradient (backward) message per link (length stages-1). */
  linkBytes?: number[];
  /** Bandwidth per link (length stages-1), GB/s (1e9 bytes/s). A message occupies its link direction for bytes/bandwidth. */
  linkGBps?: number[];
  memory?: MemoryProfile;
}

/**
 * ZeroBubble-style activation memory per stage, in any consistent unit:
 * F adds afterF[i], B adds afterB[i] (usually negative), W adds afterW[i] (usually negative);
 * the running total must stay at or below limit[i].
 */
export interface MemoryProfile {
  afterF: number[];
  afterB: number[];
  afterW: number[];
  limit: number[];
}
