/**
 * Samples that size a straggler younger than K (`enterAfter`) samples since it was flagged: the bad
 * ones in a row that made it (`entryRun`) and those since, at most K, at least one. So it is never
 * sized by one sample unless one made it: mild, mild, then one 150 ms spike is a straggler of the
 * mild size (issue 29). One rule for every tracker that sizes a straggler by its newest samples
 * (PipelineLinkTracker, DataParallelLinkTracker).
 */
export function entrySamples(entryRun: number, sinceEntry: number, enterAfter: number): number {
  return Math.max(1, Math.min(enterAfter, entryRun + sinceEntry));
}
