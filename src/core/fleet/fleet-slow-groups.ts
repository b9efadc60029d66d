import { linkSuspectsFromOtherJobs } from './fleet-link-prior';
import { FleetSlowGroup } from './fleet-slow-group.type';
import { FleetRankPlace } from './job-fleet-evidence';
import { FleetView } from './fleet-view.type';

/**
 * The slow links the fleet names around a job, for pricing a re-map (decideRemap): a job that knows
 * only its own measured pairs would move a rank of a bad NIC next to a peer it never measured and
 * predict that link healthy. The same suspects as fleetLinkPrior (named on at least one other job's
 * evidence); ranks of one node never form a slow pair (their links stay inside the node).
 * Pure; O(ranks) per suspect.
 */
export function fleetSlowGroups(view: FleetView, jobId: string, ranks: readonly FleetRankPlace[]): FleetSlowGroup[] {
  const groups: FleetSlowGroup[] = [];
  const on = (pick: (r: FleetRankPlace) => boolean) => ranks.filter(pick);
  for (const s of linkSuspectsFromOtherJobs(view, jobId)) {
    let from: FleetRankPlace[] = [];
    let to: FleetRankPlace[] = [];
    switch (s.kind) {
      case 'nic':
        from = on((r) => s.nodes.includes(r.node));
        to = on((r) => !s.nodes.includes(r.node));
        break;
      case 'node-pair':
        from = on((r) => r.node === s.nodes[0]);
        to = on((r) => r.node === s.nodes[1]);
        break;
      case 'boundary':
        from = on((r) => r.locality === s.localities[0]);
        to = on((r) => r.locality === s.localities[1]);
        break;
      case 'uplink':
        from = on((r) => r.locality === s.localities[0]);
        to = on((r) => r.locality !== undefined && r.locality !== s.localities[0]);
        break;
      default:
        continue;
    }
    if (from.length > 0 && to.length > 0 && s.extraMs > 0) groups.push({ suspect: s.id, from: from.map((r) => r.rank), to: to.map((r) => r.rank), extraMs: s.extraMs });
  }
  return groups;
}
