import { seededRandom } from '../core/planner/seeded-random';
import { NoiseSpec } from './corpus.type';

/**
 * The noise models of the corpus, each a documented source of telemetry noise seen on real
 * clusters (docs/detection.md gives the sources of the parameter ranges). Noise changes what ranks
 * report, never what is really slow: a scenario's labels are the ground truth alone.
 */
export const NOISE_MODELS: Record<NoiseSpec['type'], string> = {
  'link-jitter':
    'every link sample: median x lognormal(0, sigma); with tailProbability a Pareto(tailAlpha) excess of tailScaleMs added (heavy-tailed NCCL/gloo p2p latency)',
  'pareto-median':
    'every link sample, pipeline and ring, every direction and iteration: its median gets a Pareto(alpha) excess of scale scaleMs (Lomax: scaleMs x (U^(-1/alpha) - 1)); an outside rank model\'s per-iteration medians (issue 29)',
  'compute-jitter': 'every F, B, W median x lognormal(0, sigma) (kernel time variation, clock boost changes)',
  'gc-pause':
    'per rank and iteration with `probability`, a Python GC pause log-uniform in [minMs, maxMs]: the whole job waits (iteration time); the messages in flight into the paused rank wait it out, so the links into it see it in their max, and in their median only when more than half of the iteration\'s messages were in flight (deep delegate queues, few microbatches): a sender blocked on its in-flight sends sends nothing more until the pause ends',
  'dataloader-stall': 'rank `rank` stalls before its first F with `probability`, for log-uniform [minMs, maxMs]: the iteration waits; transfers do not slow',
  checkpoint:
    'every `every` iterations the job saves a checkpoint or evaluates: the iteration takes durationMs more, and that iteration every link median is x linkFactor (checkpoint traffic shares the NIC)',
  'rank-restart':
    'rank `rank` restarts at iteration `at`: no reports for downIterations, then warmupIterations with compute and link times x warmupFactor (communicators rebuilt, caches cold)',
  'clock-step': 'the wall clock of rank `rank` steps by stepMs at iteration `at` (NTP): that iteration its iterationMs and every link max move by the step; medians, over many messages, do not',
};

/** What the noise does to one iteration as a whole. */
export interface IterationNoise {
  /** Added to every rank's iteration time, ms. */
  iterationExtraMs: number;
  /** Multiplies every link median this iteration. */
  linkFactor: number;
  /** Ranks that send no report. */
  silent: Set<number>;
  /** Per rank: compute and link time factor (a restarted rank warming up). */
  warmFactor: Map<number, number>;
  /** Per rank: its clock's step this iteration, ms. */
  clockStepMs: Map<number, number>;
  /** Per rank: a GC pause this iteration, ms. */
  pauseMs: Map<number, number>;
}

export class NoiseSource {
  private readonly random: () => number;
  private spare = Number.NaN;

  constructor(private readonly specs: NoiseSpec[], seed: number, private readonly ranks: number[]) {
    this.random = seededRandom(seed ^ 0x5bd1e995);
  }

  /** A standard normal draw (Box-Muller, one spare kept). */
  normal(): number {
    if (this.spare === this.spare) {
      const s = this.spare;
      this.spare = Number.NaN;
      return s;
    }
    const u = 1 - this.random();
    const v = this.random();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }

  private logUniform(min: number, max: number): number {
    return min * Math.pow(max / min, this.random());
  }

  iteration(t: number): IterationNoise {
    const n: IterationNoise = { iterationExtraMs: 0, linkFactor: 1, silent: new Set(), warmFactor: new Map(), clockStepMs: new Map(), pauseMs: new Map() };
    for (const s of this.specs) {
      switch (s.type) {
        case 'gc-pause':
          for (const r of this.ranks) {
            if (this.random() >= s.probability) continue;
            const ms = this.logUniform(s.minMs, s.maxMs);
            n.pauseMs.set(r, Math.max(n.pauseMs.get(r) ?? 0, ms));
            n.iterationExtraMs += ms;
          }
          break;
        case 'dataloader-stall':
          if (this.random() < s.probability) n.iterationExtraMs += this.logUniform(s.minMs, s.maxMs);
          break;
        case 'checkpoint':
          if (t > 0 && t % s.every === 0) {
            n.iterationExtraMs += s.durationMs;
            n.linkFactor *= s.linkFactor;
          }
          break;
        case 'rank-restart':
          if (t >= s.at && t < s.at + s.downIterations) n.silent.add(s.rank);
          else if (t >= s.at + s.downIterations && t < s.at + s.downIterations + s.warmupIterations) n.warmFactor.set(s.rank, s.warmupFactor);
          break;
        case 'clock-step':
          if (t === s.at) n.clockStepMs.set(s.rank, s.stepMs);
          break;
        default:
          break; // per-sample models (jitter) act in linkSample and computeFactor
      }
    }
    return n;
  }

  /** One link's reported median and max for a true one-way time `ms`. */
  linkSample(ms: number): { medianMs: number; maxMs: number } {
    let median = ms;
    let tail = 0;
    for (const s of this.specs) {
      if (s.type !== 'link-jitter') continue;
      median *= Math.exp(s.sigma * this.normal());
      if (this.random() < s.tailProbability) tail += s.tailScaleMs * (Math.pow(1 - this.random(), -1 / s.tailAlpha) - 1);
    }
    for (const s of this.specs) if (s.type === 'pareto-median') median += s.scaleMs * (Math.pow(1 - this.random(), -1 / s.alpha) - 1);
    // A tail event hits a few messages of the iteration: the max always, the median a third of the time.
    const medianMs = median + (this.random() < 1 / 3 ? tail : 0);
    return { medianMs, maxMs: Math.max(medianMs, median * 1.3 + tail) };
  }

  computeFactor(): number {
    let f = 1;
    for (const s of this.specs) if (s.type === 'compute-jitter') f *= Math.exp(s.sigma * this.normal());
    return f;
  }
}
