import { Placement } from './topology.type';
import { topologyFromPlacement } from './topology-from-placement';

/** 2 replicas x 2 stages; nodes b and c swapped: slot (dp 0, pp 1) holds rank 4, (dp 1, pp 0) rank 2. */
const placement: Placement = { dpSize: 2, stages: 2, nodeAt: Int32Array.from([0, 4, 2, 6]), rings: [Int32Array.from([0, 1]), Int32Array.from([1, 0])] };

describe('topologyFromPlacement', () => {
  it('lists the placed ranks by rank with the moves given', () => {
    expect(topologyFromPlacement(placement, 2, 7, [2, 4])).toEqual({
      version: 2,
      sinceVersion: 7,
      ranks: [{ rank: 0, dp: 0, pp: 0 }, { rank: 2, dp: 1, pp: 0 }, { rank: 4, dp: 0, pp: 1 }, { rank: 6, dp: 1, pp: 1 }],
      rings: [[0, 1], [1, 0]],
      moved: [2, 4],
    });
  });

  it('moves TP ranks with their node\'s placed rank, and names the ranks whose stage changed', () => {
    const members = [0, 1, 2, 3, 4, 5, 6, 7].map((rank) => ({ rank, placedAs: rank & ~1 }));
    const before = new Map(members.map(({ rank }) => [rank, (rank >> 1) & 1]));
    const layout = topologyFromPlacement(placement, 1, 5, before, members);
    expect(layout.ranks.map((r) => [r.rank, r.dp, r.pp])).toEqual([[0, 0, 0], [1, 0, 0], [2, 1, 0], [3, 1, 0], [4, 0, 1], [5, 0, 1], [6, 1, 1], [7, 1, 1]]);
    expect(layout.moved).toEqual([2, 3, 4, 5]);
  });
});
