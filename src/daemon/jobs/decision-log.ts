import { DecisionRecord } from '../../core/control/decision-record.type';

/** Decisions kept per job (GET /jobs/:id/decisions): the newest, in fixed memory. */
export const DECISIONS_KEPT = 256;

/** The stragglers a decision answers, by name. */
function evidenceKey(r: DecisionRecord): string {
  return [...r.evidence.links.map((l) => `p:${l.dp}:${l.link}${l.nicFailure ? '!' : ''}`), ...r.evidence.dataParallelLinks.map((l) => `d:${l.fromRank}>${l.toRank}`)].sort().join(',');
}

function sameDecision(a: DecisionRecord, b: DecisionRecord): boolean {
  return a.kind === b.kind && a.verdict === b.verdict && evidenceKey(a) === evidenceKey(b);
}

/** A job's recent control decisions, taken, declined and paused, oldest first. */
export class DecisionLog {
  private readonly entries: DecisionRecord[] = [];
  private total = 0;
  private readonly verdicts: Record<DecisionRecord['verdict'], number> = { taken: 0, declined: 0, paused: 0 };

  /** Logs a decision; one that repeats the newest entry (same kind, verdict and stragglers, not taken) extends it instead. */
  record(entry: DecisionRecord): void {
    this.total++;
    this.verdicts[entry.verdict]++;
    const last = this.entries[this.entries.length - 1];
    if (last && entry.verdict !== 'taken' && sameDecision(last, entry)) {
      this.entries[this.entries.length - 1] = { ...entry, repeats: last.repeats + 1, firstIteration: last.firstIteration };
      return;
    }
    this.entries.push(entry);
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

  /** Every decision judged since the runtime started (repeats and those no longer kept included). */
  get count(): number {
    return this.total;
  }
}
