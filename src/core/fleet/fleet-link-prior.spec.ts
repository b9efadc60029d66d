import { fleetLinkPrior } from './fleet-link-prior';
import { MY_RANKS as ranks, suspect, viewOf as view } from './fleet-suspects.fixture';

describe('fleetLinkPrior', () => {
  it('names slow every link through a NIC other jobs named, in either direction', () => {
    const p = fleetLinkPrior(view([suspect('nic', ['n2'], [], ['other'])]), 'me', ranks);
    expect([p(0, 1), p(1, 0), p(1, 2), p(0, 2)]).toEqual(['slow', 'slow', 'slow', null]);
  });

  it('names slow a node pair only on that pair, a boundary only across it, an uplink on links leaving its locality', () => {
    expect(fleetLinkPrior(view([suspect('node-pair', ['n1', 'n3'], [], ['other'])]), 'me', ranks)(2, 0)).toBe('slow');
    expect(fleetLinkPrior(view([suspect('node-pair', ['n1', 'n3'], [], ['other'])]), 'me', ranks)(1, 2)).toBeNull();
    const boundary = fleetLinkPrior(view([suspect('boundary', [], ['r1', 'r2'], ['other'])]), 'me', ranks);
    expect([boundary(1, 2), boundary(0, 1)]).toEqual(['slow', null]);
    const uplink = fleetLinkPrior(view([suspect('uplink', [], ['r2'], ['other'])]), 'me', ranks);
    expect([uplink(2, 0), uplink(0, 1)]).toEqual(['slow', null]);
  });

  it('twin: a suspect named on this job\'s own evidence alone does not speed up its own flags', () => {
    expect(fleetLinkPrior(view([suspect('nic', ['n2'], [], ['me'])]), 'me', ranks)(0, 1)).toBeNull();
    expect(fleetLinkPrior(view([suspect('nic', ['n2'], [], ['me', 'other'])]), 'me', ranks)(0, 1)).toBe('slow');
  });

  it('says nothing of links inside one node, of unknown ranks, nor where no suspect is', () => {
    const p = fleetLinkPrior(view([suspect('nic', ['n1'], [], ['other'])]), 'me', ranks);
    expect(p(0, 3)).toBeNull(); // both on n1: no NIC crossed
    expect(p(0, 9)).toBeNull();
    expect(fleetLinkPrior(view([]), 'me', ranks)(0, 1)).toBeNull();
  });

  it('a compute suspect says nothing of links', () => {
    expect(fleetLinkPrior(view([suspect('compute', ['n2'], [], ['other'])]), 'me', ranks)(0, 1)).toBeNull();
  });
});
