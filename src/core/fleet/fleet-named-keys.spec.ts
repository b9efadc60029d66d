import { FleetLinkPriorOf, fleetNamedKeys } from './fleet-link-prior';

describe('fleetNamedKeys', () => {
  // Ranks 0-3 in slots (dp, pp) = (rank >> 1, rank & 1); the fleet names every link of rank 1's node slow.
  const prior: FleetLinkPriorOf = (from, to) => (from === 1 || to === 1 ? 'slow' : null);
  const rankAt = (dp: number, pp: number) => (dp < 2 && pp < 2 ? 2 * dp + pp : undefined);
  const named = fleetNamedKeys(prior, rankAt);

  it('names the pipeline link between the ranks in its slots, and a data-parallel link by its ranks', () => {
    expect(named('p:0:0')).toBe(true); // rank 0 -> rank 1
    expect(named('p:1:0')).toBe(false); // rank 2 -> rank 3
    expect(named('d:1>3')).toBe(true);
    expect(named('d:0>2')).toBe(false);
  });

  it('never names a compute key, nor a link whose slot holds no rank', () => {
    expect(named('c:1')).toBe(false);
    expect(named('p:0:1')).toBe(false);
    expect(named('p:5:0')).toBe(false);
  });
});
