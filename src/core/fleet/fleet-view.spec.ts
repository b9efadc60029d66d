import fc from 'fast-check';
import { DEFAULT_FLEET_CONFIG } from './fleet-config.type';
import { buildFleetView } from './fleet-view';
import { JobFleetEvidence } from './job-fleet-evidence.type';

const C = DEFAULT_FLEET_CONFIG;
/** rack of node n: r<n div 4> (nodes n0..n3 in r0, n4..n7 in r1, ...). */
const rackOf = (node: string): string => `r${Math.floor(Number(node.slice(1)) / 4)}`;

/** A job on `nodes` whose links are the given node pairs; `slow` says which pairs its detector sees slow. */
function job(jobId: string, pairs: [string, string][], slow: (a: string, b: string) => boolean, compute: Record<string, boolean> = {}): JobFleetEvidence {
  const nodes = new Set(pairs.flat().concat(Object.keys(compute)));
  return {
    jobId,
    at: 1000,
    localities: Object.fromEntries([...nodes].map((n) => [n, rackOf(n)])),
    links: pairs.map(([x, y]) => {
      const [a, b] = x < y ? [x, y] : [y, x];
      const s = slow(a, b);
      return { a, b, healthy: s ? 0 : 16, slow: s ? 16 : 0, extraMs: s ? 12 : 0 };
    }),
    compute: Object.entries(compute).map(([node, s]) => ({ node, healthy: s ? 0 : 1, slow: s ? 1 : 0, ratio: s ? 1.4 : 1 })),
  };
}

/** A ring of nodes as a pipeline: n_i - n_{i+1}. */
const chain = (...nodes: string[]): [string, string][] => nodes.slice(1).map((n, i) => [nodes[i], n]);
const touches = (node: string) => (a: string, b: string) => a === node || b === node;
const never = () => false;
const ids = (v: ReturnType<typeof buildFleetView>) => v.suspects.map((s) => s.id);

describe('buildFleetView: a node NIC', () => {
  // n5 has a bad NIC; three jobs use it with different peers, in and out of its rack.
  const bad = touches('n5');
  const fleet = [job('a', chain('n1', 'n5', 'n9'), bad), job('b', chain('n4', 'n5', 'n12'), bad), job('c', chain('n6', 'n5', 'n13', 'n14'), bad), job('d', chain('n1', 'n9', 'n12', 'n13', 'n6', 'n4'), bad)];

  it('names the NIC, with a reason an operator can read, and nothing else', () => {
    const v = buildFleetView(fleet, C);
    expect(ids(v)).toEqual(['nic:n5']);
    const s = v.suspects[0];
    expect(s.reason).toMatch(/^node n5: slow on 6 links to 6 different peers in 3 jobs \(up to \+12\.0 ms\); its peers are healthy on \d+ other links$/);
    expect(s.action).toMatch(/drain node n5/);
    expect(s.jobs).toEqual(['a', 'b', 'c']);
    expect(s.confidence).toBeGreaterThan(0.5);
  });

  it('twin: one job alone slow around n5 does not name a NIC (that job sees only its own links)', () => {
    expect(ids(buildFleetView([fleet[0], fleet[3]], C))).toEqual([]);
  });

  it('twin: when its peers are slow elsewhere too, n5 is not blamed', () => {
    const everywhere = fleet.map((j) => job(j.jobId, j.links.map((l) => [l.a, l.b]), () => true));
    expect(ids(buildFleetView(everywhere, C)).filter((id) => id.startsWith('nic:'))).toEqual([]);
  });

  it('clears as soon as the evidence turns healthy', () => {
    const healed = fleet.map((j) => job(j.jobId, j.links.map((l) => [l.a, l.b]), never));
    expect(buildFleetView(healed, C).suspects).toEqual([]);
  });
});

describe('buildFleetView: localities', () => {
  // r0 = n0..n3, r1 = n4..n7, r2 = n8..n11; jobs span racks.
  const across = (x: string, y: string) => (a: string, b: string) => {
    const s = new Set([rackOf(a), rackOf(b)]);
    return s.has(x) && s.has(y) && rackOf(a) !== rackOf(b);
  };
  const slowR0R1 = across('r0', 'r1');
  const twoRacks = [job('a', [...chain('n0', 'n1', 'n4', 'n5'), ['n0', 'n5']], slowR0R1), job('b', [...chain('n2', 'n3', 'n6', 'n7'), ['n2', 'n7']], slowR0R1)];

  it('names a slow boundary (slow across, healthy inside) and blames no node', () => {
    const v = buildFleetView(twoRacks, C);
    expect(ids(v)).toEqual(['boundary:r0|r1']);
    expect(v.suspects[0].reason).toMatch(/^boundary r0\|r1: slow on 4 of 4 links across it in 2 jobs .*; healthy on 4 of 4 links inside r0 and r1$/);
  });

  it('twin: when only one node of r0 is slow across, the boundary is not named', () => {
    const one = (a: string, b: string) => slowR0R1(a, b) && (a === 'n1' || b === 'n1');
    expect(ids(buildFleetView(twoRacks, C)).length).toBe(1);
    expect(ids(buildFleetView(twoRacks.map((j) => job(j.jobId, j.links.map((l) => [l.a, l.b]), one)), C)).filter((id) => id.startsWith('boundary:'))).toEqual([]);
  });

  it('twin: slow inside the localities too is not a boundary', () => {
    const all = twoRacks.map((j) => job(j.jobId, j.links.map((l) => [l.a, l.b]), () => true));
    expect(ids(buildFleetView(all, C)).filter((id) => id.startsWith('boundary:'))).toEqual([]);
  });

  it('names the uplink of a locality slow to two others, and no node of it', () => {
    const up = (a: string, b: string) => rackOf(a) !== rackOf(b) && (rackOf(a) === 'r0' || rackOf(b) === 'r0');
    const fleet = [job('a', [...chain('n0', 'n1', 'n4', 'n5'), ['n0', 'n5']], up), job('b', [...chain('n2', 'n3', 'n8', 'n9'), ['n2', 'n9']], up), job('c', chain('n5', 'n6', 'n9', 'n10'), up)];
    const v = buildFleetView(fleet, C);
    expect(ids(v)).toEqual(['uplink:r0']);
    expect(v.suspects[0].action).toMatch(/uplink of r0/);
  });
});

describe('buildFleetView: node pairs and compute', () => {
  const pairSlow = (a: string, b: string) => a === 'n1' && b === 'n9';
  it('names a pair two jobs see slow while both nodes are healthy elsewhere', () => {
    const v = buildFleetView([job('a', chain('n0', 'n1', 'n9', 'n10'), pairSlow), job('b', chain('n2', 'n1', 'n9', 'n13'), pairSlow)], C);
    expect(ids(v)).toEqual(['node-pair:n1|n9']);
  });

  it('twin: one job alone slow on a pair is its own business', () => {
    expect(buildFleetView([job('a', chain('n0', 'n1', 'n9', 'n10'), pairSlow)], C).suspects).toEqual([]);
  });

  it('names a slow GPU and clears it when it heals', () => {
    const sick = buildFleetView([job('a', chain('n0', 'n1'), never, { n0: false, n1: true })], C);
    expect(ids(sick)).toEqual(['compute:n1']);
    expect(sick.suspects[0].reason).toMatch(/1\.40x/);
    expect(buildFleetView([job('a', chain('n0', 'n1'), never, { n0: false, n1: false })], C).suspects).toEqual([]);
  });

  it('leaves out links still learning (fewer than minLinkSamples samples)', () => {
    const young = [0, 1, 2].map((i) => {
      const j = job(`j${i}`, chain(`n${i + 8}`, 'n5', `n${i + 12}`), touches('n5'));
      return { ...j, links: j.links.map((l) => ({ ...l, slow: l.slow && C.minLinkSamples - 1 })) };
    });
    expect(buildFleetView(young, C).suspects).toEqual([]);
  });
});

describe('buildFleetView: properties', () => {
  const node = fc.integer({ min: 0, max: 15 }).map((i) => `n${i}`);
  const linkArb = fc.record({ x: node, y: node, slow: fc.boolean() });
  const jobArb = fc.array(linkArb, { minLength: 1, maxLength: 8 });
  const fleetArb = fc.array(jobArb, { minLength: 1, maxLength: 6 });
  const build = (spec: { x: string; y: string; slow: boolean }[][], slowOverride?: boolean) =>
    spec.map((links, i) => {
      const slowOf = new Map(links.map((l) => [l.x < l.y ? `${l.x}|${l.y}` : `${l.y}|${l.x}`, slowOverride ?? l.slow]));
      return job(`j${i}`, links.filter((l) => l.x !== l.y).map((l) => [l.x, l.y] as [string, string]), (a, b) => slowOf.get(`${a}|${b}`) ?? false);
    });

  it('all-healthy evidence names nothing', () => {
    fc.assert(fc.property(fleetArb, (spec) => expect(buildFleetView(build(spec, false), C).suspects).toEqual([])), { numRuns: 200 });
  });

  it('a single job never names a NIC or a node pair (whatever it sees slow)', () => {
    fc.assert(
      fc.property(jobArb, (links) => {
        expect(buildFleetView(build([links]), C).suspects.filter((s) => s.kind === 'nic' || s.kind === 'node-pair')).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('twin of the above: with nicMinJobs and pairMinJobs lowered to 1, one job does name some', () => {
    const loose = { ...C, nicMinJobs: 1, pairMinJobs: 1 };
    const v = buildFleetView([job('a', chain('n0', 'n1', 'n9', 'n10'), (a, b) => a === 'n1' && b === 'n9')], loose);
    expect(ids(v)).toEqual(['node-pair:n1|n9']);
  });

  it('the same evidence in any order gives the same view (every replica agrees)', () => {
    fc.assert(
      fc.property(fleetArb, fc.integer(), (spec, seed) => {
        const fleet = build(spec);
        const shuffled = [...fleet].sort((p, q) => ((p.jobId.charCodeAt(1) * 31 + seed) % 7) - ((q.jobId.charCodeAt(1) * 31 + seed) % 7));
        expect(buildFleetView(shuffled, C)).toEqual(buildFleetView(fleet, C));
      }),
      { numRuns: 200 },
    );
  });

  it('every suspect rests on slow evidence from the jobs it names, ranked by confidence', () => {
    fc.assert(
      fc.property(fleetArb, (spec) => {
        const v = buildFleetView(build(spec), C);
        for (const s of v.suspects) {
          expect(s.slowSamples).toBeGreaterThan(0);
          expect(s.jobs.length).toBeGreaterThan(0);
          expect(s.confidence).toBeGreaterThan(0);
          expect(s.confidence).toBeLessThanOrEqual(1);
          for (const j of s.jobs) expect(v.jobs).toContain(j);
        }
        for (let i = 1; i < v.suspects.length; i++) expect(v.suspects[i - 1].confidence).toBeGreaterThanOrEqual(v.suspects[i].confidence);
      }),
      { numRuns: 200 },
    );
  });
});

describe('buildFleetView: a NIC seen by a job that learned it as its baseline', () => {
  // n5 (rack r1) is bad. Job a saw it go bad: every link of n5 slow. Job b started on it: its pipeline
  // link inside r1 (n5-n6) looks healthy (learned with the fault), its links out of r1 slow.
  const a = job('a', chain('n1', 'n5', 'n9'), touches('n5'));
  const b = job('b', chain('n6', 'n5', 'n13'), (x, y) => touches('n5')(x, y) && !(x === 'n5' && y === 'n6'));
  const peers = job('c', chain('n1', 'n9', 'n13', 'n6'), never);

  it('is still named: alone in its rack slow out of it, it is the NIC', () => {
    expect(ids(buildFleetView([a, b, peers], C))).toEqual(['nic:n5']);
  });

  it('twin: when another node of its rack is slow out of it too, n5 is not blamed (an uplink pattern)', () => {
    const alsoN7 = job('d', chain('n7', 'n14', 'n2'), (x, y) => touches('n7')(x, y));
    const inside = job('e', chain('n7', 'n4', 'n6'), never);
    expect(ids(buildFleetView([a, b, peers, alsoN7, inside], C)).filter((id) => id === 'nic:n5')).toEqual([]);
  });
});
