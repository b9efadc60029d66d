import { InputError } from '../../core/input-error';
import { seededRandom } from '../../core/planner/seeded-random';
import { checkLink } from './delay-check';
import { DelayModel } from './delay-model.type';

/** Re-draw intervals of the paper's dynamic traces A, B and C (sec. 7.3: "updated at intervals drawn from U(50, 100), U(100, 200), U(200, 400) ms"). */
export const PAPER_TRACES: Record<'A' | 'B' | 'C', [number, number]> = { A: [50, 100], B: [100, 200], C: [200, 400] };

export interface DynamicDelayOptions {
  links: number[];
  meanMs: number;
  stdMs: number;
  /** [lo, hi]: each value is held for a time ~ U(lo, hi), ms; lo > 0. */
  intervalMs: [number, number];
  seed: number;
  /** Memory budget: segments one link may keep before delayMs throws (default MAX_SEGMENTS_PER_LINK). */
  maxSegmentsPerLink?: number;
}

/**
 * Default cap on the segments one link keeps (16 bytes each: 64 MB). It bounds memory on runaway
 * runs; at the shortest paper interval (50 ms) it still covers over 58 hours of virtual time.
 */
export const MAX_SEGMENTS_PER_LINK = 1 << 22;

/** One link's timeline: segment k holds values[k] on [ends[k - 1], ends[k]) (the first starts at 0). */
interface LinkTimeline {
  readonly random: () => number;
  ends: Float64Array;
  values: Float64Array;
  count: number;
  /** Segment the previous call landed in: the emulator's times mostly move forward. */
  hint: number;
}

/** A 32-bit seed for link `link`'s stream, mixed so streams of nearby (seed, link) pairs are unrelated. */
function linkSeed(seed: number, link: number): number {
  let h = Math.imul((seed | 0) ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(link + 1, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A standard normal draw (Box-Muller); 1 - u keeps the logarithm's argument in (0, 1]. */
function gaussian(random: () => number): number {
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

function checkOptions(o: DynamicDelayOptions): void {
  o.links.forEach((link) => checkLink(link, 'dynamic delay'));
  if (!Number.isFinite(o.meanMs)) throw new InputError(`dynamic delay: mean ${o.meanMs} ms is not a finite number`);
  if (!Number.isFinite(o.stdMs) || o.stdMs < 0) throw new InputError(`dynamic delay: standard deviation ${o.stdMs} ms is not a finite number >= 0`);
  const [lo, hi] = o.intervalMs;
  // lo > 0 so a finite time is always reached by a finite number of segments.
  if (!Number.isFinite(lo) || !Number.isFinite(hi) || lo <= 0 || hi < lo) throw new InputError(`dynamic delay: interval [${lo}, ${hi}] ms needs 0 < lo <= hi`);
  if (!Number.isInteger(o.seed)) throw new InputError(`dynamic delay: seed ${o.seed} is not an integer`);
  const cap = o.maxSegmentsPerLink;
  if (cap !== undefined && (!Number.isInteger(cap) || cap < 1)) throw new InputError(`dynamic delay: segment cap ${cap} is not a positive integer`);
}

/**
 * Per listed link, independently, piecewise constant in virtual time: a value ~ N(mean, std)
 * clipped at 0, held for an interval ~ U(lo, hi), then redrawn. Unlisted links have no delay and
 * the iteration is ignored.
 *
 * A pure function of (link, time), whatever order calls come in: each link has its own seeded
 * stream, and its segments are generated lazily, always in time order, up to the latest time asked
 * for and kept (two growable Float64Arrays, 16 bytes a segment: a million segments, about 14 hours
 * of trace A or 83 hours of trace C, is 16 MB per link; past maxSegmentsPerLink, by default
 * MAX_SEGMENTS_PER_LINK, delayMs throws a RangeError rather than grow further).
 * Times before 0 fall in the first segment.
 */
export function dynamicDelay(options: DynamicDelayOptions): DelayModel {
  checkOptions(options);
  const { meanMs, stdMs, seed } = options;
  const maxSegments = options.maxSegmentsPerLink ?? MAX_SEGMENTS_PER_LINK;
  const [lo, hi] = options.intervalMs;
  const listed = new Set(options.links);
  const timelines = new Map<number, LinkTimeline>();

  const timelineOf = (link: number): LinkTimeline => {
    let t = timelines.get(link);
    if (!t) {
      const size = Math.min(64, maxSegments);
      t = { random: seededRandom(linkSeed(seed, link)), ends: new Float64Array(size), values: new Float64Array(size), count: 0, hint: 0 };
      timelines.set(link, t);
    }
    return t;
  };

  /** Appends segments until one ends after `timeMs`. */
  const extend = (t: LinkTimeline, timeMs: number): void => {
    while (t.count === 0 || t.ends[t.count - 1] <= timeMs) {
      if (t.count === t.ends.length) {
        if (t.count >= maxSegments) throw new RangeError(`dynamic delay: time ${timeMs} ms needs more than ${maxSegments} segments on one link`);
        const ends = new Float64Array(Math.min(2 * t.count, maxSegments));
        const values = new Float64Array(ends.length);
        ends.set(t.ends);
        values.set(t.values);
        t.ends = ends;
        t.values = values;
      }
      const start = t.count === 0 ? 0 : t.ends[t.count - 1];
      // Draw order (interval, then value) is fixed: it is what makes the stream reproducible.
      t.ends[t.count] = start + lo + (hi - lo) * t.random();
      t.values[t.count] = Math.max(0, meanMs + stdMs * gaussian(t.random));
      t.count++;
    }
  };

  /** Index of the segment holding `timeMs` (the first segment whose end is after it). */
  const segmentAt = (t: LinkTimeline, timeMs: number): number => {
    const h = t.hint;
    if (t.ends[h] > timeMs && (h === 0 || t.ends[h - 1] <= timeMs)) return h;
    let a = 0;
    let b = t.count - 1;
    while (a < b) {
      const mid = (a + b) >> 1;
      if (t.ends[mid] > timeMs) b = mid;
      else a = mid + 1;
    }
    t.hint = a;
    return a;
  };

  return {
    name: `dynamic N(${meanMs}, ${stdMs}) ms every U(${lo}, ${hi}) ms, seed ${seed}`,
    delayMs(link: number, timeMs: number): number {
      if (!listed.has(link)) return 0;
      // NaN or an infinite time would loop forever or land in an arbitrary segment: a caller bug.
      if (!Number.isFinite(timeMs)) throw new RangeError(`dynamic delay: time ${timeMs} ms is not finite`);
      const t = timelineOf(link);
      extend(t, timeMs);
      return t.values[segmentAt(t, timeMs)];
    },
    nicFailed: (): boolean => false,
  };
}
