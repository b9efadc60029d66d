import { parseStragglerKey } from '../control/straggler-key';
import { FleetLinkPrior } from '../detect/detection.type';
import { FleetRankPlace } from './job-fleet-evidence';
import { FleetSuspect, FleetView } from './fleet-view.type';

/** What one job's links are told by the fleet: a link's prior, by the two ranks' numbers. */
export type FleetLinkPriorOf = (fromRank: number, toRank: number) => FleetLinkPrior | null;

/**
 * What the fleet view says of one job's links (issue 31, step 4: every job gains): `slow` when the
 * link runs through a suspect named on evidence of at least one other job (a NIC of one of its
 * nodes, its node pair, the boundary between its two localities, or the uplink of one of them when
 * it leaves that locality): its first bad sample flags it, the fleet has seen it already. A job's
 * own evidence alone never makes its links `slow` (it would only echo its own flags). null
 * otherwise, and for unknown nodes or a link inside one node.
 *
 * Not done: asking one more sample of links whose nodes other jobs measured healthy ("a lone spike
 * weighs less"). Tried in bench:fleet, nearly every link of a healthy fleet is vouched for, so every
 * fault's onset waited a sample longer (the bad NIC named 5 s later, one false boundary for a tick)
 * and no false flag was saved in 4 simulated hours (docs/fleet.md).
 *
 * Pure; O(suspects) to build and per link asked.
 */
export function fleetLinkPrior(view: FleetView, jobId: string, ranks: readonly FleetRankPlace[]): FleetLinkPriorOf {
  const place = new Map<number, FleetRankPlace>();
  for (const r of ranks) place.set(r.rank, r);
  const suspects = linkSuspectsFromOtherJobs(view, jobId);
  return (fromRank, toRank) => {
    const a = place.get(fromRank);
    const b = place.get(toRank);
    if (!a || !b || a.node === b.node) return null;
    return suspects.some((s) => covers(s, a, b)) ? 'slow' : null;
  };
}

/** The link suspects (not compute) named on evidence of at least one job other than `jobId`. */
export function linkSuspectsFromOtherJobs(view: FleetView, jobId: string): FleetSuspect[] {
  return view.suspects.filter((s) => s.kind !== 'compute' && s.jobs.some((j) => j !== jobId));
}

function covers(s: FleetSuspect, a: FleetRankPlace, b: FleetRankPlace): boolean {
  switch (s.kind) {
    case 'nic':
      return s.nodes.includes(a.node) || s.nodes.includes(b.node);
    case 'node-pair':
      return s.nodes.includes(a.node) && s.nodes.includes(b.node);
    case 'boundary':
      return a.locality !== undefined && b.locality !== undefined && a.locality !== b.locality && s.localities.includes(a.locality) && s.localities.includes(b.locality);
    case 'uplink':
      return a.locality !== undefined && b.locality !== undefined && a.locality !== b.locality && (s.localities[0] === a.locality || s.localities[0] === b.locality);
    default:
      return false;
  }
}

/**
 * Which of a job's straggler keys (StragglerHistory's names: `p:dp:link`, `d:from>to`; compute keys
 * never) run through a suspect the fleet named on other jobs' evidence, by `prior` (fleetLinkPrior)
 * and the job's reporting rank at slot (dp, pp) now. The cost gate prices such a straggler at no
 * less than its prior duration (GateContext.fleetNamed): a bad NIC other jobs see is not one of
 * this job's short bursts. Pure; O(suspects) per key asked.
 */
export function fleetNamedKeys(prior: FleetLinkPriorOf, rankAt: (dp: number, pp: number) => number | undefined): (key: string) => boolean {
  return (key) => {
    const named = parseStragglerKey(key);
    if (named?.kind === 'pipeline') {
      const up = rankAt(named.dp, named.link);
      const down = rankAt(named.dp, named.link + 1);
      return up !== undefined && down !== undefined && prior(up, down) === 'slow';
    }
    return named?.kind === 'dataParallel' && prior(named.fromRank, named.toRank) === 'slow';
  };
}
