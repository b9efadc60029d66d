/** What ingest did with one job's messages (GET /jobs/:id `counters`); only IngestService counts. */
export class IngestCounters {
  private readonly counts = { reports: 0, acks: 0, duplicates: 0, rejected: 0 };

  /** One more message of this outcome: an accepted report or ack, a duplicate report, a rejected message. */
  count(outcome: 'reports' | 'acks' | 'duplicates' | 'rejected'): void {
    this.counts[outcome]++;
  }

  get reports(): number {
    return this.counts.reports;
  }

  snapshot(): Readonly<{ reports: number; acks: number; duplicates: number; rejected: number }> {
    return { ...this.counts };
  }
}
