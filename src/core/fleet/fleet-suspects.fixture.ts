import { FleetSuspect, FleetView } from './fleet-view.type';

/** A suspect of `kind` at 15 ms, named on the evidence of `jobs`. */
export function suspect(kind: FleetSuspect['kind'], nodes: string[], localities: string[], jobs: string[]): FleetSuspect {
  return { id: `${kind}:${[...nodes, ...localities].join('|')}`, kind, nodes, localities, confidence: 1, slowLinks: 2, slowSamples: 20, healthyLinks: 4, extraMs: 15, jobs, reason: '', action: '' };
}

export function viewOf(suspects: FleetSuspect[]): FleetView {
  return { jobs: ['a', 'b'], asOf: 1, suspects, nodes: [], pairs: [], boundaries: [] };
}

/** Job "me": rank 0 on n1 (rack r1), rank 1 on n2 (r1), rank 2 on n3 (r2), rank 3 on n1 as well. */
export const MY_RANKS = [
  { rank: 0, node: 'n1', locality: 'r1' },
  { rank: 1, node: 'n2', locality: 'r1' },
  { rank: 2, node: 'n3', locality: 'r2' },
  { rank: 3, node: 'n1', locality: 'r1' },
];
