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
 * prior pseudo-episode of `priorIterations` at weight `priorWeight`.
 *
 * What counts as an episode (issue 29): a spell a key is flagged, from the iteration it was flagged
 * to its last slow sample (the detector's hold taken off), in one of two classes: severe when its
 * size reached the severe size at some point (detection.severeExtraMs), mild otherwise. The job's
 * other keys inform a key only through episodes of the class its current spell is in: the mild
 * spells that noise makes by the dozen on a heavy-tailed fabric say nothing of how long a 30 ms
 * straggler lasts, so they cannot teach the gate that every straggler ends at once; short severe
 * bursts still hold a new severe spell back until it outlives them. With no survivor (the current
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
  /** The key's own episodes by class, MILD and SEVERE. */
  episodes: [Ring, Ring];
  gaps: Ring;
  /** Iteration the open episode began at (NaN: healthy now). */
  onset: number;
  /** The open episode's newest samples are healthy again (the detector holds it until leaveAfter). */
  recovering: boolean;
  /** Iteration the last episode's straggler ended at, the hold taken off (NaN: never). */
  endedAt: number;
  /** The open episode has reached the severe size. */
  severe: boolean;
}

/** The two classes of episodes (see the class comment). */
const MILD = 0;
const SEVERE = 1;

export interface StragglerEpisode {
  key: string;
  onset: number;
  /** Iterations it has lasted so far. */
  age: number;
}

export class StragglerHistory {
  private readonly keys = new Map<string, KeyState>();
  /** The job's episodes (any key) by class, MILD and SEVERE. */
  private readonly jobEpisodes = [new Ring(JOB_EPISODES_KEPT), new Ring(JOB_EPISODES_KEPT)];
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
   * The keys straggling at `iteration` (those of them whose newest samples are healthy again, and
   * those whose size is severe now): opens an episode for each new key, closes the episodes of keys
   * that recovered (their length is learned, in the class they reached). Iterations must not decrease.
   */
  observe(iteration: number, straggling: Iterable<string>, recovering: Iterable<string> = [], severe: Iterable<string> = []): void {
    const now = new Set(straggling);
    const easing = new Set(recovering);
    const big = new Set(severe);
    for (const key of now) {
      let s = this.keys.get(key);
      if (!s) {
        s = { episodes: [new Ring(EPISODES_KEPT), new Ring(EPISODES_KEPT)], gaps: new Ring(EPISODES_KEPT), onset: Number.NaN, recovering: false, endedAt: Number.NaN, severe: false };
        this.keys.set(key, s);
      }
      if (s.onset !== s.onset) {
        s.onset = iteration;
        s.severe = false;
        if (s.endedAt === s.endedAt) {
          const gap = Math.max(1, iteration - s.endedAt);
          s.gaps.push(gap);
          this.jobGaps.push(gap);
        }
      }
      s.recovering = easing.has(key);
      if (big.has(key)) s.severe = true;
    }
    const hold = this.options.holdIterations ?? 0;
    for (const [key, s] of this.keys) {
      if (s.onset !== s.onset || now.has(key)) continue;
      const end = Math.max(s.onset + 1, iteration - hold);
      s.episodes[s.severe ? SEVERE : MILD].push(end - s.onset);
      this.jobEpisodes[s.severe ? SEVERE : MILD].push(end - s.onset);
      s.onset = Number.NaN;
      s.recovering = false;
      s.severe = false;
      s.endedAt = end;
    }
  }

  /**
   * Iterations `keys` (every key when none is given) have been healthy at `iteration`: since the end
   * of the last episode of any of them (the detector's hold taken off), 0 while one straggles,
   * Infinity when none ever did.
   */
  healthyFor(iteration: number, keys?: readonly string[]): number {
    let least = Infinity;
    for (const key of keys && keys.length > 0 ? keys : this.keys.keys()) {
      const s = this.keys.get(key);
      if (!s) continue;
      if (s.onset === s.onset) return 0;
      if (s.endedAt === s.endedAt) least = Math.min(least, Math.max(0, iteration - s.endedAt));
    }
    return least;
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
    const cls = s?.severe ? SEVERE : MILD;
    return this.residual(s ? s.episodes : [], s?.episodes[cls], this.jobEpisodes[cls], age);
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
    const own = s ? s.episodes[MILD].residual(age).n + s.episodes[SEVERE].residual(age).n : 0;
    return own > 0 || this.jobEpisodes[s?.severe ? SEVERE : MILD].residual(age).n > 0;
  }

  /**
   * Expected further healthy iterations of `key` at `iteration`, from the gaps between its episodes:
   * how long going back to the healthy plan pays off. A key never seen straggling is healthy for good.
   */
  expectedHealthy(key: string, iteration: number): number {
    const s = this.keys.get(key);
    if (!s || s.endedAt !== s.endedAt) return Infinity;
    const age = s.onset === s.onset ? 0 : Math.max(0, iteration - s.endedAt);
    return this.residual([s.gaps], s.gaps, this.jobGaps, age);
  }

  /**
   * Expected further healthy iterations of the job at `iteration` for a recovery: the least over
   * `keys` (the stragglers the plan in force was made for; every key that straggled before when
   * none is given) that do not straggle now: the first of them to come back undoes the recovery.
   * Another link's noise does not: it would make its own decision whichever plan runs. Infinity when
   * none ever straggled.
   */
  expectedHealthyNow(iteration: number, keys?: Iterable<string>): number {
    let least = Infinity;
    for (const key of keys ?? this.keys.keys()) {
      const s = this.keys.get(key);
      if (!s || s.onset === s.onset) continue;
      const e = this.expectedHealthy(key, iteration);
      if (e < least) least = e;
    }
    return least;
  }

  /**
   * The share of iterations `key` has straggled in while it recurs: mean episode over mean episode
   * plus mean gap, from its own history; null until it has straggled at least twice. A link that
   * flaps 3 on, 7 off is slow 30% of the time whatever its current spell's remaining length: a plan
   * kept through its spells pays off over them all (gateSwitch).
   */
  dutyCycle(key: string): number | null {
    const s = this.keys.get(key);
    if (!s) return null;
    const episodes = [s.episodes[MILD].residual(0), s.episodes[SEVERE].residual(0)];
    const n = episodes[0].n + episodes[1].n;
    const gaps = s.gaps.residual(0);
    if (n < 2 || gaps.n < 1) return null;
    const on = (episodes[0].sum + episodes[1].sum) / n;
    const off = gaps.sum / gaps.n;
    return on / (on + off);
  }

  /** Episodes learned (closed) for `key`. */
  episodesOf(key: string): number {
    const s = this.keys.get(key);
    return s ? s.episodes[MILD].size + s.episodes[SEVERE].size : 0;
  }

  /**
   * Mean residual life at `age` from the key's own rings (full weight), the job's ring of the class
   * asked (others' entries at half weight; `ownInJob` is the part of it that is the key's own, counted
   * once) and the prior.
   */
  private residual(own: Ring[], ownInJob: Ring | undefined, job: Ring, age: number): number {
    const { priorIterations, priorWeight } = this.options;
    let mineSum = 0;
    let mineN = 0;
    for (const ring of own) {
      const r = ring.residual(age);
      mineSum += r.sum;
      mineN += r.n;
    }
    const counted = ownInJob ? ownInJob.residual(age) : { sum: 0, n: 0 };
    const all = job.residual(age);
    const othersSum = Math.max(0, all.sum - counted.sum);
    const othersN = Math.max(0, all.n - counted.n);
    const prior = Math.max(priorIterations, age);
    const weight = priorWeight + mineN + JOB_WEIGHT * othersN;
    return (priorWeight * prior + mineSum + JOB_WEIGHT * othersSum) / weight;
  }
}
