import { FleetConfig } from './fleet-config.type';
import { FleetBoundaryEvidence, FleetLinkTally, FleetNodeEvidence, FleetPairEvidence, FleetSuspect, FleetView } from './fleet-view.type';
import { JobFleetEvidence } from './job-fleet-evidence.type';

/** One job's evidence on one node pair, with the pair's localities (null when not named). */
interface Link {
  job: string;
  a: string;
  b: string;
  la: string | null;
  lb: string | null;
  healthy: number;
  slow: number;
  extraMs: number;
  isSlow: boolean;
}

const cmp = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);
/** Node and locality names may hold any character but NUL. */
const SEP = '\u0000';
const pairKey = (x: string, y: string): string => (x < y ? `${x}${SEP}${y}` : `${y}${SEP}${x}`);
const round3 = (x: number): number => Math.round(x * 1000) / 1000;
const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort(cmp);
const plural = (n: number, one: string, many = one + 's'): string => `${n} ${n === 1 ? one : many}`;
/** More jobs, more trust: 1 job 0.5, 2 jobs 0.67, 3 jobs 0.75. */
const support = (jobs: number): number => jobs / (jobs + 1);
const ms = (x: number): string => `+${x.toFixed(1)} ms`;

function tally(links: readonly Link[]): FleetLinkTally {
  const t: FleetLinkTally = { healthyLinks: 0, slowLinks: 0, healthySamples: 0, slowSamples: 0, extraMs: 0, slowJobs: [] };
  const jobs: string[] = [];
  for (const l of links) {
    t.healthySamples += l.healthy;
    t.slowSamples += l.slow;
    if (l.isSlow) {
      t.slowLinks++;
      t.extraMs = Math.max(t.extraMs, l.extraMs);
      jobs.push(l.job);
    } else t.healthyLinks++;
  }
  t.slowJobs = sorted(jobs);
  return t;
}

function groupBy<T>(xs: readonly T[], keys: (x: T) => readonly string[]): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) for (const k of keys(x)) (m.get(k) ?? m.set(k, []).get(k)!).push(x);
  return m;
}

const slowFraction = (links: readonly Link[]): number => (links.length === 0 ? 0 : links.filter((l) => l.isSlow).length / links.length);

/**
 * The fleet view of every job's evidence: tallies per node, node pair and locality boundary, and
 * the suspects that explain the slow ones, most confident first (docs/fleet.md states the rules).
 * Pure and order-free: every replica that reads the same evidence computes the same view. A
 * suspect exists only while its evidence is slow: it clears as soon as the jobs report healthy.
 */
export function buildFleetView(evidence: readonly JobFleetEvidence[], config: FleetConfig): FleetView {
  const jobs = [...evidence].sort((p, q) => cmp(p.jobId, q.jobId));
  const localityOf = new Map<string, string>();
  for (const j of jobs) for (const [node, l] of Object.entries(j.localities).sort((p, q) => cmp(p[0], q[0]))) if (!localityOf.has(node)) localityOf.set(node, l);
  const links: Link[] = [];
  for (const j of jobs) {
    for (const e of j.links) {
      if (e.a === e.b || e.healthy + e.slow < config.minLinkSamples) continue;
      links.push({ job: j.jobId, a: e.a, b: e.b, la: localityOf.get(e.a) ?? null, lb: localityOf.get(e.b) ?? null, healthy: e.healthy, slow: e.slow, extraMs: e.extraMs, isSlow: e.slow > e.healthy });
    }
  }
  const byNode = groupBy(links, (l) => [l.a, l.b]);
  const byPair = groupBy(links, (l) => [pairKey(l.a, l.b)]);
  const byBoundary = groupBy(links, (l) => (l.la !== null && l.lb !== null ? [pairKey(l.la, l.lb)] : []));
  const suspects: FleetSuspect[] = [];

  // Localities first: a slow boundary makes every node on it look slow, so the node rules see only what it does not explain.
  const inside = (loc: string) => byBoundary.get(pairKey(loc, loc)) ?? [];
  const boundaries: { a: string; b: string; links: Link[]; inside: Link[] }[] = [];
  for (const [key, across] of byBoundary) {
    const [a, b] = key.split(SEP);
    if (a === b || slowFraction(across) < config.minSlowFraction) continue;
    const slow = across.filter((l) => l.isSlow);
    const sideNodes = (loc: string) => new Set(slow.flatMap((l) => (l.la === loc ? [l.a] : []).concat(l.lb === loc ? [l.b] : []))).size;
    if (sideNodes(a) < config.boundaryMinNodes || sideNodes(b) < config.boundaryMinNodes) continue;
    if (new Set(slow.map((l) => l.job)).size < config.boundaryMinJobs) continue;
    const within = [...inside(a), ...inside(b)];
    if (within.length > 0 && 1 - slowFraction(within) < config.insideHealthyFraction) continue;
    boundaries.push({ a, b, links: across, inside: within });
  }
  const boundaryCount = new Map<string, number>();
  for (const s of boundaries) for (const l of [s.a, s.b]) boundaryCount.set(l, (boundaryCount.get(l) ?? 0) + 1);
  const uplinks = new Set([...boundaryCount].filter(([, n]) => n >= config.uplinkMinBoundaries).map(([l]) => l));
  for (const loc of sorted(uplinks)) {
    const mine = boundaries.filter((s) => s.a === loc || s.b === loc);
    const across = mine.flatMap((s) => s.links);
    const within = inside(loc);
    const t = tally(across);
    const others = sorted(mine.map((s) => (s.a === loc ? s.b : s.a)));
    const healthyInside = within.filter((l) => !l.isSlow).length;
    suspects.push({
      id: `uplink:${loc}`,
      kind: 'uplink',
      nodes: sorted(across.filter((l) => l.isSlow).flatMap((l) => [l.a, l.b]).filter((n) => localityOf.get(n) === loc)),
      localities: [loc],
      confidence: round3(slowFraction(across) * support(t.slowJobs.length) * (within.length > 0 ? 1 - slowFraction(within) : 0.5)),
      slowLinks: t.slowLinks,
      slowSamples: t.slowSamples,
      healthyLinks: healthyInside,
      extraMs: t.extraMs,
      jobs: t.slowJobs,
      reason: `locality ${loc}: slow on ${t.slowLinks} of ${across.length} links to ${plural(others.length, 'other locality', 'other localities')} (${others.join(', ')}) in ${plural(t.slowJobs.length, 'job')} (up to ${ms(t.extraMs)}); ${within.length > 0 ? `healthy on ${healthyInside} of ${within.length} links inside it` : 'no links inside it measured'}`,
      action: `check the uplink of ${loc} (its top-of-rack or leaf switch and the links above it)`,
    });
  }
  for (const s of boundaries) {
    if (uplinks.has(s.a) || uplinks.has(s.b)) continue;
    const t = tally(s.links);
    const healthyInside = s.inside.filter((l) => !l.isSlow).length;
    suspects.push({
      id: `boundary:${s.a}|${s.b}`,
      kind: 'boundary',
      nodes: sorted(s.links.filter((l) => l.isSlow).flatMap((l) => [l.a, l.b])),
      localities: [s.a, s.b],
      confidence: round3(slowFraction(s.links) * support(t.slowJobs.length) * (s.inside.length > 0 ? 1 - slowFraction(s.inside) : 0.5)),
      slowLinks: t.slowLinks,
      slowSamples: t.slowSamples,
      healthyLinks: healthyInside,
      extraMs: t.extraMs,
      jobs: t.slowJobs,
      reason: `boundary ${s.a}|${s.b}: slow on ${t.slowLinks} of ${s.links.length} links across it in ${plural(t.slowJobs.length, 'job')} (up to ${ms(t.extraMs)}); ${s.inside.length > 0 ? `healthy on ${healthyInside} of ${s.inside.length} links inside ${s.a} and ${s.b}` : 'no links inside either measured'}`,
      action: `check the network path between ${s.a} and ${s.b}`,
    });
  }
  const suspectBoundaries = new Set(boundaries.map((s) => pairKey(s.a, s.b)));
  const explained = (l: Link): boolean =>
    l.la !== null && l.lb !== null && l.la !== l.lb && (suspectBoundaries.has(pairKey(l.la, l.lb)) || uplinks.has(l.la) || uplinks.has(l.lb));

  // A node's NIC: slow to several peers, in several jobs, while those peers are healthy on their other links.
  const nics = new Set<string>();
  for (const node of sorted(byNode.keys())) {
    const mine = byNode.get(node)!.filter((l) => !explained(l));
    const slow = mine.filter((l) => l.isSlow);
    if (slow.length === 0 || slowFraction(mine) < config.minSlowFraction) continue;
    const peerOf = (l: Link) => (l.a === node ? l.b : l.a);
    const peers = sorted(slow.map(peerOf));
    const t = tally(slow);
    if (peers.length < config.nicMinPeers || t.slowJobs.length < config.nicMinJobs) continue;
    // Healthy to its own locality yet slow out of it, like other nodes of it: an uplink's pattern,
    // not a NIC's. Alone in its locality it is the NIC (a job that started on the bad NIC learned
    // its slow links as its baseline, so healthy-looking links inside prove little on their own).
    const loc = localityOf.get(node);
    const local = loc === undefined ? [] : mine.filter((l) => l.la === loc && l.lb === loc);
    if (local.length > 0 && slowFraction(local) < config.minSlowFraction && slow.every((l) => l.la !== l.lb)) {
      const alike = new Set<string>();
      for (const l of links) {
        if (!l.isSlow || explained(l) || l.la === l.lb) continue;
        if (l.la === loc && l.a !== node) alike.add(l.a);
        if (l.lb === loc && l.b !== node) alike.add(l.b);
      }
      if (alike.size >= config.boundaryMinNodes - 1) continue;
    }
    let healthyPeers = 0;
    // A link between two peers vouches once.
    const vouchers = new Set<Link>();
    for (const p of peers) {
      const elsewhere = (byNode.get(p) ?? []).filter((l) => l.a !== node && l.b !== node && !explained(l));
      const healthy = elsewhere.filter((l) => !l.isSlow);
      if (elsewhere.length > 0 && healthy.length / elsewhere.length >= config.peerHealthyFraction) {
        healthyPeers++;
        for (const l of healthy) vouchers.add(l);
      }
    }
    const vouching = vouchers.size;
    if (healthyPeers < config.nicMinPeers) continue;
    nics.add(node);
    suspects.push({
      id: `nic:${node}`,
      kind: 'nic',
      nodes: [node],
      localities: loc === undefined ? [] : [loc],
      confidence: round3(slowFraction(mine) * (healthyPeers / peers.length) * support(t.slowJobs.length)),
      slowLinks: t.slowLinks,
      slowSamples: t.slowSamples,
      healthyLinks: vouching,
      extraMs: t.extraMs,
      jobs: t.slowJobs,
      reason: `node ${node}: slow on ${plural(t.slowLinks, 'link')} to ${peers.length} different peers in ${plural(t.slowJobs.length, 'job')} (up to ${ms(t.extraMs)}); ${healthyPeers === peers.length ? 'its peers are' : `${healthyPeers} of its peers are`} healthy on ${vouching} other links`,
      action: `drain node ${node} and check its NIC, cable and switch port`,
    });
  }

  // A node pair several jobs see slow that neither a NIC nor a locality explains.
  for (const key of sorted(byPair.keys())) {
    const [a, b] = key.split(SEP);
    if (nics.has(a) || nics.has(b)) continue;
    const mine = byPair.get(key)!.filter((l) => !explained(l));
    const t = tally(mine);
    if (t.slowLinks === 0 || t.slowJobs.length < config.pairMinJobs || slowFraction(mine) < config.minSlowFraction) continue;
    const elsewhere = [...(byNode.get(a) ?? []), ...(byNode.get(b) ?? [])].filter((l) => pairKey(l.a, l.b) !== key);
    const healthyElsewhere = elsewhere.filter((l) => !l.isSlow).length;
    // Slow elsewhere too is a node's problem (or a wider one), not the pair's.
    if (elsewhere.length > 0 && healthyElsewhere / elsewhere.length < config.peerHealthyFraction) continue;
    suspects.push({
      id: `node-pair:${a}|${b}`,
      kind: 'node-pair',
      nodes: [a, b],
      localities: sorted([localityOf.get(a), localityOf.get(b)].filter((l): l is string => l !== undefined)),
      confidence: round3(slowFraction(mine) * support(t.slowJobs.length) * (elsewhere.length > 0 ? healthyElsewhere / elsewhere.length : 0.5)),
      slowLinks: t.slowLinks,
      slowSamples: t.slowSamples,
      healthyLinks: healthyElsewhere,
      extraMs: t.extraMs,
      jobs: t.slowJobs,
      reason: `nodes ${a} and ${b}: slow between them in ${plural(t.slowJobs.length, 'job')} (up to ${ms(t.extraMs)}); healthy on ${healthyElsewhere} of ${elsewhere.length} links either has elsewhere`,
      action: `check the path between ${a} and ${b} (cables, switch ports, routing)`,
    });
  }

  // A slow GPU or node in compute, relative to the other replicas of each job it runs in.
  const computeOf = new Map<string, { healthy: number; slow: number; ratio: number; slowJobs: string[]; jobs: string[] }>();
  for (const j of jobs) {
    for (const c of j.compute) {
      const e = computeOf.get(c.node) ?? { healthy: 0, slow: 0, ratio: 0, slowJobs: [], jobs: [] };
      e.healthy += c.healthy;
      e.slow += c.slow;
      e.jobs.push(j.jobId);
      if (c.slow > 0) {
        e.slowJobs.push(j.jobId);
        e.ratio = Math.max(e.ratio, c.ratio);
      }
      computeOf.set(c.node, e);
    }
  }
  for (const node of sorted(computeOf.keys())) {
    const c = computeOf.get(node)!;
    const frac = c.slow / (c.healthy + c.slow);
    if (c.slowJobs.length < config.computeMinJobs || frac < config.minSlowFraction) continue;
    const loc = localityOf.get(node);
    suspects.push({
      id: `compute:${node}`,
      kind: 'compute',
      nodes: [node],
      localities: loc === undefined ? [] : [loc],
      confidence: round3(frac * support(c.slowJobs.length)),
      slowLinks: 0,
      slowSamples: c.slow,
      healthyLinks: 0,
      extraMs: 0,
      jobs: sorted(c.slowJobs),
      reason: `node ${node}: compute slow on ${plural(c.slow, 'rank')} in ${plural(c.slowJobs.length, 'job')} (${c.ratio.toFixed(2)}x the other replicas of its stage); healthy on ${plural(c.healthy, 'rank')}`,
      action: `drain node ${node} and check its GPUs (clocks, thermals, ECC errors)`,
    });
  }
  suspects.sort((p, q) => q.confidence - p.confidence || q.slowSamples - p.slowSamples || cmp(p.id, q.id));

  const nodes: FleetNodeEvidence[] = sorted([...byNode.keys(), ...computeOf.keys()]).map((node) => {
    const mine = byNode.get(node) ?? [];
    const c = computeOf.get(node);
    return {
      node,
      locality: localityOf.get(node) ?? null,
      ...tally(mine),
      slowPeers: new Set(mine.filter((l) => l.isSlow).map((l) => (l.a === node ? l.b : l.a))).size,
      jobs: sorted([...mine.map((l) => l.job), ...(c?.jobs ?? [])]),
      compute: { healthy: c?.healthy ?? 0, slow: c?.slow ?? 0, ratio: round3(c?.ratio ?? 0), slowJobs: sorted(c?.slowJobs ?? []) },
    };
  });
  const pairs: FleetPairEvidence[] = [];
  for (const key of sorted(byPair.keys())) {
    const t = tally(byPair.get(key)!);
    if (t.slowLinks === 0) continue;
    const [a, b] = key.split(SEP);
    pairs.push({ a, b, ...t });
  }
  const boundaryEvidence: FleetBoundaryEvidence[] = sorted(byBoundary.keys()).map((key) => {
    const [a, b] = key.split(SEP);
    return { a, b, ...tally(byBoundary.get(key)!) };
  });
  return { jobs: jobs.map((j) => j.jobId), asOf: jobs.reduce((m, j) => Math.max(m, j.at), 0), suspects, nodes, pairs, boundaries: boundaryEvidence };
}
