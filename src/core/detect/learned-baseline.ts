/**
 * A link's or rank's healthy level, learned from its window medians (issue 29, outside noise).
 *
 * It used to be the lowest window median ever seen. On telemetry whose per-iteration medians vary a
 * lot (an outside sweep: lognormal sigma 0.6 on every ring direction) that minimum keeps falling as
 * a job runs, since every window is a new chance of a low one: after 1,500 iterations a 5 ms ring
 * had a baseline near half its healthy time, its ordinary samples read as +6 to +10 ms stragglers,
 * and a healthy job was re-mapped. So it is now a low quantile (QUANTILE) of the healthy window
 * medians, tracked online: a window below the level pulls it down, a healthy window above it pushes
 * it up, in steps that balance where a QUANTILE share of windows lie below. It stays where the
 * noise puts that quantile however long the job runs.
 *
 * What it keeps from the minimum: a straggler never becomes the new normal. A window above
 * `ceilingMs` (the size that would make a straggler, given by the tracker) is not evidence of the
 * healthy level and moves nothing, so a lasting straggler leaves the level where it was. And a
 * level learned while the link was already slow is dropped at once (not stepped down) when a window
 * comes in a straggler's size below it. O(1) memory.
 */
export class LearnedBaseline {
  private level = Number.NaN;
  private lowest = Number.NaN;

  /** The learned level, NaN before the first window. */
  get ms(): number {
    return this.level;
  }

  /**
   * The lowest the level has been: what tells a link that was slow from its first sample (it never
   * came down) from one whose noise carried its level up for a while. A guard that compared the
   * level itself with nominal + slack flipped a noisy ring to its nominal time, 50x optimistic,
   * when a run of high medians lifted the level past it, and read it +6 ms slow.
   */
  get lowestMs(): number {
    return this.lowest;
  }

  /** Forgets the level (a new layout, a restart): the next window starts it again. */
  reset(): void {
    this.level = Number.NaN;
    this.lowest = Number.NaN;
  }

  /**
   * One window median `m`. `ceilingMs`: a window above it is a straggler's, not the healthy level's.
   * `dropBelowMs`: how far below the level a window must sit to replace it outright (the level was a
   * straggler's); the smallest straggler the tracker flags.
   */
  observe(m: number, ceilingMs: number, dropBelowMs: number): void {
    if (!(m >= 0 && m < Infinity)) return;
    const level = this.level;
    if (level !== level) {
      this.level = this.lowest = m;
      return;
    }
    if (m < level) {
      this.level = level - m > dropBelowMs ? m : Math.max(m, level * (1 - STEP * (1 - QUANTILE)));
      if (this.level < this.lowest) this.lowest = this.level;
    } else if (m > level && m <= ceilingMs) {
      this.level = Math.min(m, level * (1 + STEP * QUANTILE));
    }
  }
}

/** The share of healthy window medians the level sits above. */
export const QUANTILE = 0.2;
/** Largest move per window, as a fraction of the level (split QUANTILE up, 1 - QUANTILE down). */
const STEP = 0.05;
