import { ControlEvent, PublishedSchedule } from '../protocol/protocol-v1.type';

/**
 * What one emulated reporting rank knows, exactly the state docs/protocol.md sec. 4 gives a rank:
 * its own control cursor, the highest epoch it has seen, the committed versions it has heard of
 * (with their effective iterations), the prepares it still has to answer, and its floor (the
 * version in force). Each rank reads Redis itself, at its own iterations; nothing is shared with the
 * other ranks, so a rank that reads late really knows less, and the agreement has to fix that.
 */
export class RankView {
  cursor = '0-0';
  epoch = 0;
  floor = 0;
  /** Committed versions heard of -> effectiveIteration. */
  private readonly committed = new Map<number, number>();
  /** Prepares read but not answered yet. */
  toAnswer: ControlEvent[] = [];

  constructor(readonly rank: number) {}

  /** Connect (sec. 4): the cursor and epoch of the newest control entry, then the committed schedule, in force at once. */
  connect(cursor: string, lastEpoch: number, schedule: PublishedSchedule): void {
    this.cursor = cursor;
    this.epoch = Math.max(lastEpoch, schedule.epoch);
    this.committed.clear();
    this.committed.set(schedule.version, schedule.effectiveIteration);
    this.floor = schedule.version;
  }

  /** Handles one control event read from the rank's own cursor; returns the committed version it learned, if any. */
  onEvent(id: string, event: ControlEvent): number | null {
    this.cursor = id;
    if (event.epoch < this.epoch) return null; // fenced: written by an older owner
    this.epoch = event.epoch;
    if (event.type === 'prepare') {
      if (event.version > this.floor && !this.committed.has(event.version)) this.toAnswer.push(event);
      return null;
    }
    this.toAnswer = this.toAnswer.filter((p) => p.version !== event.version);
    if (event.type === 'commit' && event.version > this.floor) {
      this.committed.set(event.version, event.effectiveIteration);
      return event.version;
    }
    return null;
  }

  /** k_local for iteration i (sec. 5.2): the highest committed version heard of that is in effect, never below the floor. */
  localVersion(iteration: number): number {
    let k = this.floor;
    for (const [version, effective] of this.committed) if (effective <= iteration && version > k) k = version;
    return k;
  }

  /** The rank ran version k: it is the floor now, older versions are forgotten. */
  ran(k: number): void {
    this.floor = Math.max(this.floor, k);
    for (const version of [...this.committed.keys()]) if (version < this.floor) this.committed.delete(version);
  }
}
