import { InputError } from '../../core/input-error';
import { Fabric, LocalitySlowLink, NodePairSlowLink, SlowWindow } from './fabric.type';

export interface FabricSpec {
  /** Locality of node i at index i; nodes past the end (or holes) have none. */
  localities?: ReadonlyArray<string | undefined>;
  localityLinks?: readonly LocalitySlowLink[];
  pairLinks?: readonly NodePairSlowLink[];
}

function checkWindow(w: SlowWindow, what: string): void {
  if (typeof w.extraMs !== 'number' || !Number.isFinite(w.extraMs) || w.extraMs < 0) throw new InputError(`${what}: extraMs ${w.extraMs} is not a finite number >= 0`);
  const from = w.from ?? 0;
  if (!Number.isInteger(from) || from < 0) throw new InputError(`${what}: from ${w.from} is not an iteration (integer >= 0)`);
  if (w.until !== undefined && (!Number.isInteger(w.until) || w.until <= from)) throw new InputError(`${what}: until ${w.until} must be an integer iteration after from (${from})`);
}

function active(w: SlowWindow, iteration: number): boolean {
  return iteration >= (w.from ?? 0) && (w.until === undefined || iteration < w.until);
}

function checkNode(node: number, what: string): void {
  if (!Number.isInteger(node) || node < 0) throw new InputError(`${what}: node ${node} is not a non-negative integer`);
}

/**
 * A fabric given as localities per node plus slow links between localities and between node
 * pairs, each active over a window of iterations. Every slow link in force on a pair adds its
 * extra delay (a slow uplink and a slow NIC on the same path add up). Inputs are copied and checked
 * up front: a NaN or negative delay would silently poison the emulator's clock.
 */
export function staticFabric(spec: FabricSpec): Fabric {
  const localities = (spec.localities ?? []).slice();
  localities.forEach((l, node) => {
    if (l !== undefined && (typeof l !== 'string' || l.length === 0)) throw new InputError(`fabric: locality of node ${node} must be a non-empty string`);
  });
  const known = new Set(localities.filter((l): l is string => l !== undefined));
  const localityLinks = (spec.localityLinks ?? []).map((link, k) => {
    const what = `fabric: locality link ${k}`;
    if (!Array.isArray(link.between) || link.between.length !== 2) throw new InputError(`${what}: between must name two localities`);
    const [a, b] = link.between;
    for (const l of [a, b]) if (!known.has(l)) throw new InputError(`${what}: no node has locality ${JSON.stringify(l)}`);
    if (a === b) throw new InputError(`${what}: between names ${JSON.stringify(a)} twice; a slow link joins two different localities`);
    checkWindow(link, what);
    return { a, b, extraMs: link.extraMs, from: link.from, until: link.until };
  });
  const pairLinks = (spec.pairLinks ?? []).map((link, k) => {
    const what = `fabric: node pair link ${k}`;
    if (!Array.isArray(link.nodes) || link.nodes.length !== 2) throw new InputError(`${what}: nodes must name two nodes`);
    const [a, b] = link.nodes;
    checkNode(a, what);
    checkNode(b, what);
    if (a === b) throw new InputError(`${what}: nodes names node ${a} twice`);
    checkWindow(link, what);
    return { a, b, extraMs: link.extraMs, from: link.from, until: link.until };
  });
  const parts = [
    ...localityLinks.map((l) => `${l.a}~${l.b}+${l.extraMs}`),
    ...pairLinks.map((l) => `${l.a}~${l.b}+${l.extraMs}`),
  ];
  return {
    name: parts.length === 0 ? 'healthy fabric' : parts.join(','),
    locality: (node) => localities[node],
    pairExtraMs(a, b, iteration) {
      if (a === b) return 0;
      let extra = 0;
      const la = localities[a];
      const lb = localities[b];
      if (la !== undefined && lb !== undefined && la !== lb) {
        for (const l of localityLinks) if (((l.a === la && l.b === lb) || (l.a === lb && l.b === la)) && active(l, iteration)) extra += l.extraMs;
      }
      for (const l of pairLinks) if (((l.a === a && l.b === b) || (l.a === b && l.b === a)) && active(l, iteration)) extra += l.extraMs;
      return extra;
    },
  };
}

/** Localities for `nodes` nodes filled rack by rack: `perRack` consecutive nodes per name in `names`. */
export function rackLocalities(nodes: number, perRack: number, names: readonly string[]): string[] {
  if (!Number.isInteger(perRack) || perRack < 1) throw new InputError(`rackLocalities: perRack ${perRack} is not an integer >= 1`);
  if (names.length * perRack < nodes) throw new InputError(`rackLocalities: ${names.length} racks of ${perRack} hold fewer than ${nodes} nodes`);
  return Array.from({ length: nodes }, (_, node) => names[Math.floor(node / perRack)]);
}

/** Every pair of nodes 0..nodes-1 with extra delay at `iteration`, as core NodeLinks (a < b). */
export function slowPairs(fabric: Fabric, nodes: number, iteration: number): Array<{ a: number; b: number; extraMs: number }> {
  const out = [];
  for (let a = 0; a < nodes; a++) {
    for (let b = a + 1; b < nodes; b++) {
      const extraMs = fabric.pairExtraMs(a, b, iteration);
      if (extraMs > 0) out.push({ a, b, extraMs });
    }
  }
  return out;
}
