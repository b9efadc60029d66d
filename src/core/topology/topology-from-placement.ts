import { RankLayout } from './rank-layout.type';

/** The part of a placement a layout is built from: placed rank per slot (dp * stages + pp) and the rings. */
export interface PlacedSlots {
  stages: number;
  nodeAt: ArrayLike<number>;
  rings: ReadonlyArray<ArrayLike<number>>;
}

/**
 * A placement as the protocol's topology assignment: every rank with its slot, rings as dp indices.
 * `moved` lists the ranks that move, or gives each rank's stage before (those whose stage changes
 * moved). `members`: every rank of the job with the placed rank whose slot it shares (a TP rank
 * follows its node's reporting rank), in the order to list them; absent: the placed ranks, by rank.
 */
export function topologyFromPlacement(
  placement: PlacedSlots,
  version: number,
  sinceVersion: number,
  moved: readonly number[] | ReadonlyMap<number, number>,
  members?: ReadonlyArray<{ rank: number; placedAs: number }>,
): RankLayout {
  const S = placement.stages;
  const slotOf = new Map(Array.from(placement.nodeAt, (rank, slot) => [rank, slot]));
  const listed = members ?? Array.from(placement.nodeAt, (rank) => ({ rank, placedAs: rank })).sort((a, b) => a.rank - b.rank);
  const ranks = listed.map(({ rank, placedAs }) => {
    const slot = slotOf.get(placedAs) ?? -1;
    return { rank, dp: Math.floor(slot / S), pp: slot % S };
  });
  const previousPp = moved instanceof Map ? moved : null;
  return {
    version,
    sinceVersion,
    ranks,
    rings: placement.rings.map((r) => Array.from(r)),
    moved: previousPp ? ranks.filter((r) => r.pp !== previousPp.get(r.rank)).map((r) => r.rank) : (moved as readonly number[]).slice(),
  };
}
