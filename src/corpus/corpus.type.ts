/**
 * The labeled telemetry corpus (docs/detection.md): seeded scenarios of rank telemetry with noise
 * and labeled stragglers. A scenario is a recipe, not a recording: the same seed gives the same
 * reports byte for byte, so the corpus lives in the repository as code (src/corpus/corpus.ts).
 */

/** Where a straggler sits. Pipeline links name the registration's layout; ranks are physical. */
export type StragglerTarget =
  | { kind: 'pipeline'; dp: number; link: number }
  | { kind: 'node-pair'; a: number; b: number }
  | { kind: 'compute'; rank: number };

/** How a straggler's extra delay (or compute slowdown) moves over its life. */
export type StragglerShape =
  | { type: 'constant'; ms: number }
  | { type: 'ramp'; fromMs: number; toMs: number; rampIterations: number }
  /** On for `onIterations`, off for `offIterations`, repeated (intermittent when long, flapping when short). */
  | { type: 'periodic'; ms: number; onIterations: number; offIterations: number }
  /** The paper's dynamic traces: a new normal delay (mean, std) every interval of `intervalIterations` (drawn from [min, max]). */
  | { type: 'dynamic'; meanMs: number; stdMs: number; minInterval: number; maxInterval: number; seed: number }
  /** The superpod trace: (iteration offset, ms) steps. */
  | { type: 'steps'; steps: Array<[number, number]> }
  | { type: 'nic-failure' }
  /** Compute: every op of the rank takes `factor` times as long. */
  | { type: 'slowdown'; factor: number };

export interface StragglerSpec {
  target: StragglerTarget;
  shape: StragglerShape;
  /** First and last iteration it acts on (inclusive). */
  start: number;
  end: number;
}

/** One noise source (see NOISE_MODELS in noise.ts for what each parameter means and where it comes from). */
export type NoiseSpec =
  | { type: 'link-jitter'; sigma: number; tailProbability: number; tailScaleMs: number; tailAlpha: number }
  | { type: 'pareto-median'; scaleMs: number; alpha: number }
  | { type: 'compute-jitter'; sigma: number }
  | { type: 'gc-pause'; probability: number; minMs: number; maxMs: number }
  | { type: 'dataloader-stall'; rank: number; probability: number; minMs: number; maxMs: number }
  | { type: 'checkpoint'; every: number; durationMs: number; linkFactor: number }
  | { type: 'rank-restart'; rank: number; at: number; downIterations: number; warmupIterations: number; warmupFactor: number }
  | { type: 'clock-step'; rank: number; at: number; stepMs: number };

export type ScenarioClass =
  | 'healthy-jitter'
  | 'healthy-gc'
  | 'healthy-dataloader'
  | 'healthy-checkpoint'
  | 'healthy-bursts'
  | 'healthy-restart'
  | 'healthy-clock'
  | 'healthy-all-noise'
  | 'healthy-outside'
  | 'constant'
  | 'ramp'
  | 'intermittent'
  | 'flapping'
  | 'dp-ring'
  | 'compute'
  | 'nic-failure'
  | 'dynamic-A'
  | 'dynamic-B'
  | 'dynamic-C'
  | 'superpod';

export interface CorpusShape {
  stages: number;
  dp: number;
  microbatches: number;
  /** Per stage op times, ms. */
  fMs: number[];
  bMs: number[];
  wMs: number[];
  /** Healthy one-way pipeline message time, ms. */
  linkMs: number;
  /** Per stage gradient bytes each rank all-reduces (dp > 1). */
  gradientBytes: number[];
  /** Device memory per stage in microbatches of activations. */
  deviceActivations: number;
  /** The one-way pipeline message time the registration's nominal network promises, ms (absent: no nominal network registered). */
  nominalLinkMs?: number;
}

export interface CorpusScenario {
  name: string;
  class: ScenarioClass;
  seed: number;
  iterations: number;
  shape: CorpusShape;
  noise: NoiseSpec[];
  stragglers: StragglerSpec[];
  /** Ranks grouped in localities (racks), by registration rank; absent: one rack. */
  localities?: string[];
}

/** A labeled straggler with what acting on it is worth (corpus labels, computed from the ground truth). */
export interface StragglerLabel {
  target: StragglerTarget;
  shape: StragglerShape['type'];
  start: number;
  end: number;
  /** Typical extra delay (ms) or slowdown factor. */
  magnitude: number;
  /**
   * First iteration it can be detected at: its delay at or above `detection.delegationThresholdMs`
   * (a ramp or a trace step later than its start), its first for NIC failures and slowdowns; NaN
   * when it never gets there. Time to detect counts from here.
   */
  detectableFrom: number;
  /** Predicted iteration time lost per iteration if nothing is done, and with the plan for it, ms. */
  staticMs: number;
  adaptedMs: number;
  /** (staticMs - adaptedMs) x (duration - lead) against the cost of switching there and back, ms. */
  gainMs: number;
  costMs: number;
  worthActing: boolean;
}
