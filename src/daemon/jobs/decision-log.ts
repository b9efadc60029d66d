import { DecisionRecord } from '../../core/control/decision-record.type';

/** Decisions kept per job (GET /jobs/:id/decisions): the newest, in fixed memory. */
export const DECISIONS_KEPT = 256;

/** A job's recent control decisions, taken, declined and paused, oldest first. */
export class DecisionLog {
  private readonly entries: DecisionRecord[] = [];
  private total = 0;
  private readonly verdicts: Record<DecisionRecord['verdict'], number> = { taken: 0, declined: 0, paused: 0 };

  record(entry: DecisionRecord): void {
    this.entries.push(entry);
    this.total++;
    this.verdicts[entry.verdict]++;
    if (this.entries.length > DECISIONS_KEPT) this.entries.shift();
  }

  /** The newest `limit` entries, oldest first. */
  recent(limit = DECISIONS_KEPT): DecisionRecord[] {
    return this.entries.slice(Math.max(0, this.entries.length - limit));
  }

  /** Decisions logged since the runtime started with verdict `verdict` (also those no longer kept). */
  countOf(verdict: DecisionRecord['verdict']): number {
    return this.verdicts[verdict];
  }

  /** Every decision logged since the runtime started (also those no longer kept). */
  get count(): number {
    return this.total;
  }
}
