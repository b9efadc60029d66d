import { fleetSlowGroups } from './fleet-slow-groups';
import { MY_RANKS as ranks, suspect, viewOf as view } from './fleet-suspects.fixture';

describe('fleetSlowGroups', () => {
  it('a NIC: its node\'s ranks to every rank on another node, at the suspect\'s delay', () => {
    expect(fleetSlowGroups(view([suspect('nic', ['n1'], [], ['other'])]), 'me', ranks)).toEqual([{ suspect: 'nic:n1', from: [0, 3], to: [1, 2], extraMs: 15 }]);
  });

  it('a node pair, a boundary and an uplink: the ranks on either side', () => {
    expect(fleetSlowGroups(view([suspect('node-pair', ['n1', 'n3'], [], ['other'])]), 'me', ranks)).toEqual([{ suspect: 'node-pair:n1|n3', from: [0, 3], to: [2], extraMs: 15 }]);
    expect(fleetSlowGroups(view([suspect('boundary', [], ['r1', 'r2'], ['other'])]), 'me', ranks)).toEqual([{ suspect: 'boundary:r1|r2', from: [0, 1, 3], to: [2], extraMs: 15 }]);
    expect(fleetSlowGroups(view([suspect('uplink', [], ['r2'], ['other'])]), 'me', ranks)).toEqual([{ suspect: 'uplink:r2', from: [2], to: [0, 1, 3], extraMs: 15 }]);
  });

  it('twin: nothing from a suspect named on this job\'s evidence alone, a compute suspect, or one off the job\'s nodes', () => {
    expect(fleetSlowGroups(view([suspect('nic', ['n1'], [], ['me'])]), 'me', ranks)).toEqual([]);
    expect(fleetSlowGroups(view([suspect('nic', ['n1'], [], ['me', 'other'])]), 'me', ranks)).toHaveLength(1);
    expect(fleetSlowGroups(view([suspect('compute', ['n1'], [], ['other'])]), 'me', ranks)).toEqual([]);
    expect(fleetSlowGroups(view([suspect('nic', ['n9'], [], ['other'])]), 'me', ranks)).toEqual([]);
  });
});
