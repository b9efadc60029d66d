import { fleetSlowGroups } from './fleet-slow-groups';
import { FleetSuspect, FleetView } from './fleet-view.type';

function suspect(kind: FleetSuspect['kind'], nodes: string[], localities: string[], jobs: string[]): FleetSuspect {
  return { id: `${kind}:${[...nodes, ...localities].join('|')}`, kind, nodes, localities, confidence: 1, slowLinks: 2, slowSamples: 20, healthyLinks: 4, extraMs: 15, jobs, reason: '', action: '' };
}

function view(suspects: FleetSuspect[]): FleetView {
  return { jobs: ['a', 'b'], asOf: 1, suspects, nodes: [], pairs: [], boundaries: [] };
}

// Job "me": rank 0 on n1 (rack r1), rank 1 on n2 (r1), rank 2 on n3 (r2), rank 3 on n1 as well.
const ranks = [
  { rank: 0, node: 'n1', locality: 'r1' },
  { rank: 1, node: 'n2', locality: 'r1' },
  { rank: 2, node: 'n3', locality: 'r2' },
  { rank: 3, node: 'n1', locality: 'r1' },
];

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
