/**
 * How long stragglers last, learned from a job's own history: the episodes (onset to recovery, in
 * iterations) of each straggler key ("p:dp:link" pipeline link, "d:from>to" data-parallel link,
 * "c:rank" compute), and the healthy gaps between them. A switch pays off only over the time the
 * straggler is still there, so the control loop asks for the expected remaining duration of what
 * straggles now, given how long it has lasted (mean residual life).
 *
 * The estimate conditions on survival: only past episodes that lasted at least as long as the
 * current one has so far say anything about how much longer it goes on. A key's own episodes count fully, the
 * job's other keys' at half weight (a congested fabric tends to congest many links alike), and a
 * prior pseudo-episode of `priorIterations` at weight `priorWeight`. With no survivor (the current
 * episode is older than anything seen), the prior answers, raised to the age itself (Lindy: what has
 * lasted a iterations is expected to last about as long again). So a flapping link, whose episodes
 * all end within a few iterations, is expected to end within a few more, and is not chased; a new
 * kind of straggler, or one that outlives its history, is acted on at once.
 * Memory: O(keys x EPISODES_KEPT), bounded by the job's link count.
 */
export interface StragglerHistoryOptions {
  /** Expected length of a straggler with no history, iterations. */
  priorIterations: number;
  /** Weight of the prior among the survivors (0.25 = a quarter of one observed episode). */
  priorWeight: number;
  /**
   * Iterations a straggler stays flagged after its last slow sample (the detector's leaveAfter): a
   * flagged episode ends that much after the straggler did, so it is learned that much shorter (and
   * the healthy spell after it that much longer). Without it a 2-iteration burst is learned as a
   * 7-iteration straggler. Default 0.
   */
  holdIterations?: number;
}

/** Episodes and gaps kept per key (the newest). */
const EPISODES_KEPT = 32;
/** Episodes kept for the whole job (any key). */
const JOB_EPISODES_KEPT = 128;
/** Weight of another key's episode against one of the key's own. */
const JOB_WEIGHT = 0.5;

class Ring {
  private readonly values: Float64Array;
  private next = 0;
  private count = 0;

  constructor(capacity: number) {
    this.values = new Float64Array(capacity);
  }

  push(v: number): void {
    this.values[this.next] = v;
    this.next = (this.next + 1) % this.values.length;
    if (this.count < this.values.length) this.count++;
  }

  get size(): number {
    return this.count;
  }

  /** Sum and count of (v - age) over values of at least `age`: the episodes that lasted as long as this one has so far. */
  residual(age: number): { sum: number; n: number } {
    let sum = 0;
    let n = 0;
    for (let i = 0; i < this.count; i++) {
      const v = this.values[i];
      if (v >= age) {
        sum += v - age;
        n++;
      }
    }
    return { sum, n };
  }
}

interface KeyState {
  episodes: Ring;
  gaps: Ring;
  /** Iteration the open episode began at (NaN: healthy now). */
  onset: number;
  /** The open episode's newest samples are healthy again (the detector holds it until leaveAfter). */
  recovering: boolean;
  /** Iteration the last episode's straggler ended at, the hold taken off (NaN: never). */
  endedAt: number;
}

export interface StragglerEpisode {
  key: string;
  onset: number;
  /** Iterations it has lasted so far. */
  age: number;
}

export class StragglerHistory {
  private readonly keys = new Map<string, KeyState>();
  private readonly jobEpisodes = new Ring(JOB_EPISODES_KEPT);
  private readonly jobGaps = new Ring(JOB_EPISODES_KEPT);

  private options: StragglerHistoryOptions;

  constructor(options: StragglerHistoryOptions) {
    this.options = StragglerHistory.checked(options);
  }

  /** New prior and hold at run time; the episodes and gaps learned so far are kept. */
  reconfigure(options: StragglerHistoryOptions): void {
    this.options = StragglerHistory.checked(options);
  }

  private static checked(options: StragglerHistoryOptions): StragglerHistoryOptions {
    if (!(options.priorIterations > 0)) throw new RangeError(`priorIterations must be > 0, got ${options.priorIterations}`);
    if (!(options.priorWeight > 0)) throw new RangeError(`priorWeight must be > 0, got ${options.priorWeight}`);
    return { ...options };
  }

  /**
   * The keys straggling at `iteration` (and those of them whose newest samples are healthy again):
   * opens an episode for each new key, closes the episodes of keys that recovered (their length is
   * learned). Iterations must not decrease.
   */
  observe(iteration: number, straggling: Iterable<string>, recovering: Iterable<string> = []): void {
    const now = new Set(straggling);
    const easing = new Set(recovering);
    for (const key of now) {
      let s = this.keys.get(key);
      if (!s) {
        s = { episodes: new Ring(EPISODES_KEPT), gaps: new Ring(EPISODES_KEPT), onset: Number.NaN, recovering: false, endedAt: Number.NaN };
        this.keys.set(key, s);
      }
      if (s.onset !== s.onset) {
        s.onset = iteration;
        if (s.endedAt === s.endedAt) {
          const gap = Math.max(1, iteration - s.endedAt);
          s.gaps.push(gap);
          this.jobGaps.push(gap);
        }
      }
      s.recovering = easing.has(key);
    }
    const hold = this.options.holdIterations ?? 0;
    for (const [key, s] of this.keys) {
      if (s.onset !== s.onset || now.has(key)) continue;
      const end = Math.max(s.onset + 1, iteration - hold);
      s.episodes.push(end - s.onset);
      this.jobEpisodes.push(end - s.onset);
      s.onset = Number.NaN;
      s.recovering = false;
      s.endedAt = end;
    }
  }

  /** The episode `key` is in at `iteration`, or null when it does not straggle. */
  episode(key: string, iteration: number): StragglerEpisode | null {
    const s = this.keys.get(key);
    if (!s || s.onset !== s.onset) return null;
    return { key, onset: s.onset, age: Math.max(0, iteration - s.onset) };
  }

  /**
   * Expected further iterations of `key`'s straggling at `iteration` (the prior when it does not
   * straggle now; 0 while it is recovering: its newest samples are healthy already).
   */
  expectedRemaining(key: string, iteration: number): number {
    const s = this.keys.get(key);
    if (s?.recovering) return 0;
    const age = s && s.onset === s.onset ? Math.max(0, iteration - s.onset) : 0;
    return this.residual(s?.episodes, this.jobEpisodes, age);
  }

  /**
   * Whether some past episode (of `key` or of the job) lasted at least as long as `key`'s current
   * one has so far: while it does, the expectation comes from that history and can jump to the
   * prior at any iteration, once the straggler outlives it.
   */
  withinHistory(key: string, iteration: number): boolean {
    const s = this.keys.get(key);
    if (s?.recovering) return true; // it may turn slow again before the detector lets it go
    const age = s && s.onset === s.onset ? Math.max(0, iteration - s.onset) : 0;
    return (s?.episodes.residual(age).n ?? 0) > 0 || this.jobEpisodes.residual(age).n > 0;
  }

  /**
   * Expected further healthy iterations of `key` at `iteration`, from the gaps between its episodes:
   * how long going back to the healthy plan pays off. A key never seen straggling is healthy for good.
   */
  expectedHealthy(key: string, iteration: number): number {
    const s = this.keys.get(key);
    if (!s || s.endedAt !== s.endedAt) return Infinity;
    const age = s.onset === s.onset ? 0 : Math.max(0, iteration - s.endedAt);
    return this.residual(s.gaps, this.jobGaps, age);
  }

  /**
   * Expected further healthy iterations of the job at `iteration` for a recovery: the least over
   * the keys that straggled before and do not now (the first of them to come back undoes the
   * recovery). Infinity when nothing ever straggled.
   */
  expectedHealthyNow(iteration: number): number {
    let least = Infinity;
    for (const [key, s] of this.keys) {
      if (s.onset === s.onset) continue;
      const e = this.expectedHealthy(key, iteration);
      if (e < least) least = e;
    }
    return least;
  }

  /** Episodes learned (closed) for `key`. */
  episodesOf(key: string): number {
    return this.keys.get(key)?.episodes.size ?? 0;
  }

  private residual(own: Ring | undefined, job: Ring, age: number): number {
    const { priorIterations, priorWeight } = this.options;
    const mine = own ? own.residual(age) : { sum: 0, n: 0 };
    const all = job.residual(age);
    // The job's ring holds the key's own episodes too: count those once, at full weight.
    const othersSum = Math.max(0, all.sum - mine.sum);
    const othersN = Math.max(0, all.n - mine.n);
    const prior = Math.max(priorIterations, age);
    const weight = priorWeight + mine.n + JOB_WEIGHT * othersN;
    return (priorWeight * prior + mine.sum + JOB_WEIGHT * othersSum) / weight;
  }
}
