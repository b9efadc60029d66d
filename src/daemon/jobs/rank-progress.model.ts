/**
 * How far a job's ranks have got and how fast: the highest iteration reported, the iteration
 * time, when each rank was last heard from and which ranks went silent. Written by ingest
 * (noteIteration) and by the maintenance pass (markStale), read by the rest.
 */
export class RankProgress {
  private readonly seenAt = new Map<number, number>();
  private readonly stale = new Set<number>();
  private highest = -1;
  private paceMs = Number.NaN;
  private lastIterationAt = 0;
  private measuredIterations = false;

  /** Highest iteration any rank reported (-1 before the first). */
  get maxIteration(): number {
    return this.highest;
  }

  /**
   * The highest iteration the fastest rank can have started by `now`: the highest reported plus the
   * whole iterations that elapsed since its first report arrived, at the measured pace, counting at
   * most `horizonMs` of silence (a job silent for longer is stalled, not running ahead). A decision
   * made between reports (a refinement finishing, a back-off expiring, a slow ingest pass) would
   * otherwise count the switch's lead from an iteration the ranks have already left.
   */
  iterationAt(now: number, horizonMs: number): number {
    if (this.highest < 0 || !(this.paceMs > 0) || this.lastIterationAt <= 0) return this.highest;
    const elapsed = Math.min(Math.max(0, now - this.lastIterationAt), horizonMs);
    return this.highest + Math.floor(elapsed / this.paceMs);
  }

  /** Iteration time estimated from how fast reported iterations advance, ms (NaN until known). */
  get iterationMs(): number {
    return this.paceMs;
  }

  get staleRanks(): ReadonlySet<number> {
    return this.stale;
  }

  /** When the job was last heard from (live reports only), or `floor` when later or never. */
  lastSeen(floor: number): number {
    let last = floor;
    for (const at of this.seenAt.values()) if (at > last) last = at;
    return last;
  }

  /**
   * Whether a reported iteration is plausible: at most `maxJump` iterations beyond the job's
   * progress, plus what the time since the last report explains at 4x the measured pace. A single
   * report of iteration 1e15 would otherwise make every genuine later report a duplicate.
   */
  plausibleIteration(iteration: number, now: number, maxJump: number): boolean {
    if (this.highest < 0) return true;
    const elapsed = this.lastIterationAt > 0 && this.paceMs > 0 ? Math.ceil((4 * Math.max(0, now - this.lastIterationAt)) / this.paceMs) : 0;
    return iteration <= this.highest + maxJump + elapsed;
  }

  /**
   * Records a rank's progress; `live` is false for history replayed on adoption (progress, not
   * liveness). A rank-measured iteration time is preferred over the arrival rate of reports.
   */
  noteIteration(rank: number, iteration: number, now: number, live = true, measuredMs?: number): void {
    if (measuredMs !== undefined && measuredMs > 0) {
      this.paceMs = Number.isFinite(this.paceMs) ? 0.8 * this.paceMs + 0.2 * measuredMs : measuredMs;
      this.measuredIterations = true;
    }
    if (live) {
      this.seenAt.set(rank, now);
      this.stale.delete(rank);
    }
    if (iteration > this.highest) {
      if (live && !this.measuredIterations && this.highest >= 0 && this.lastIterationAt > 0) {
        const per = (now - this.lastIterationAt) / (iteration - this.highest);
        this.paceMs = Number.isFinite(this.paceMs) ? 0.8 * this.paceMs + 0.2 * per : per;
      }
      this.highest = iteration;
      if (live) this.lastIterationAt = now;
    }
  }

  /** Marks the ranks of `ranks` silent for more than `staleRankMs`; returns how many are stale. */
  markStale(ranks: Iterable<number>, now: number, staleRankMs: number): number {
    for (const rank of ranks) {
      const seen = this.seenAt.get(rank);
      if (seen !== undefined && now - seen > staleRankMs) this.stale.add(rank);
    }
    return this.stale.size;
  }
}
