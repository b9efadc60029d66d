/**
 * Where every rank of a job runs after a re-map (the wire's TopologyAssignment, protocol §3.4):
 * its (dp, pp) slot, the data-parallel ring order per stage, and who moved.
 */
export interface RankLayout {
  /** 1 for the first re-mapping, +1 for each one after. */
  version: number;
  /** Schedule version that introduced this layout. */
  sinceVersion: number;
  ranks: Array<{ rank: number; dp: number; pp: number }>;
  /** Per stage, the ring order as dp indices. */
  rings: number[][];
  /** Ranks whose stage changes with this layout. */
  moved: number[];
}
