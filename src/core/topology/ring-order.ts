/** A slow edge between two replicas (dp indices) of one stage's ring. */
export interface RingEdge {
  x: number;
  y: number;
  extraMs: number;
}

export interface RingChoice {
  ring: Int32Array;
  /** Largest extra delay on a link of the ring, ms. */
  worstExtraMs: number;
}

/** Rings of up to this many replicas are chosen exactly (all (D-1)! orders); larger ones by 2-opt repair. */
const EXACT_RING_SIZE = 7;

function edgeKey(x: number, y: number, d: number): number {
  return x < y ? x * d + y : y * d + x;
}

function worstOnRing(ring: Int32Array, extra: Map<number, number>): number {
  const d = ring.length;
  let worst = 0;
  if (d < 2) return 0;
  for (let k = 0; k < d; k++) {
    const e = extra.get(edgeKey(ring[k], ring[(k + 1) % d], d));
    if (e !== undefined && e > worst) worst = e;
  }
  return worst;
}

function sameRing(a: Int32Array, b: Int32Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Every ring order of 0..d-1 with 0 first (each cycle appears twice, once per direction; harmless). */
function* allRings(d: number): Generator<Int32Array> {
  const rest = Array.from({ length: d - 1 }, (_, i) => i + 1);
  const ring = new Int32Array(d);
  function* permute(k: number): Generator<Int32Array> {
    if (k === rest.length) {
      ring.set([0, ...rest]);
      yield ring;
      return;
    }
    for (let i = k; i < rest.length; i++) {
      [rest[k], rest[i]] = [rest[i], rest[k]];
      yield* permute(k + 1);
      [rest[k], rest[i]] = [rest[i], rest[k]];
    }
  }
  yield* permute(0);
}

/**
 * Removes forbidden edges from `ring` by 2-opt moves (reversing a segment swaps two ring edges for
 * two others), accepting a move only when it lowers the number of forbidden edges on the ring.
 * With few forbidden edges among many replicas this ends with none.
 */
function repair(ring: Int32Array, forbidden: Set<number>): void {
  const d = ring.length;
  const bad = (k: number) => forbidden.has(edgeKey(ring[k % d], ring[(k + 1) % d], d));
  for (let guard = 0; guard < 4 * d; guard++) {
    let k = -1;
    for (let i = 0; i < d; i++) if (bad(i)) { k = i; break; }
    if (k < 0) return;
    let moved = false;
    // Reverse ring[k+1..j]: edges (k, k+1) and (j, j+1) become (k, j) and (k+1, j+1).
    for (let step = 2; step < d && !moved; step++) {
      const j = (k + step) % d;
      const a = ring[k], b = ring[(k + 1) % d], c = ring[j], e = ring[(j + 1) % d];
      if (e === a) continue;
      const before = (bad(k) ? 1 : 0) + (bad(j) ? 1 : 0);
      const after = (forbidden.has(edgeKey(a, c, d)) ? 1 : 0) + (forbidden.has(edgeKey(b, e, d)) ? 1 : 0);
      if (after >= before) continue;
      for (let lo = k + 1, hi = k + step; lo < hi; lo++, hi--) {
        const t = ring[lo % d];
        ring[lo % d] = ring[hi % d];
        ring[hi % d] = t;
      }
      moved = true;
    }
    if (!moved) return;
  }
}

/**
 * The ring order of one stage's replicas that keeps slow edges off the ring, or failing that
 * the one whose slowest link is fastest. Keeps `current` when nothing beats it, so rings only
 * change when that helps. Exact up to 7 replicas; above, slow edges are dropped from the
 * forbidden set smallest first until 2-opt repair finds a ring without the rest.
 */
export function chooseRing(current: Int32Array, edges: readonly RingEdge[]): RingChoice {
  const d = current.length;
  const extra = new Map<number, number>();
  for (const { x, y, extraMs } of edges) {
    if (x === y || extraMs <= 0) continue;
    const key = edgeKey(x, y, d);
    extra.set(key, Math.max(extra.get(key) ?? 0, extraMs));
  }
  const currentWorst = worstOnRing(current, extra);
  if (currentWorst === 0 || d <= 3) return { ring: current, worstExtraMs: currentWorst }; // every pair is adjacent on a ring of <= 3
  if (d <= EXACT_RING_SIZE) {
    let best = current;
    let bestWorst = currentWorst;
    for (const ring of allRings(d)) {
      const w = worstOnRing(ring, extra);
      if (w < bestWorst) {
        best = ring.slice();
        bestWorst = w;
        if (w === 0) break;
      }
    }
    return { ring: best, worstExtraMs: bestWorst };
  }
  const bySize = [...extra.entries()].sort((a, b) => b[1] - a[1]);
  for (let keep = bySize.length; keep > 0; keep--) {
    const forbidden = new Set(bySize.slice(0, keep).map(([key]) => key));
    const ring = current.slice();
    repair(ring, forbidden);
    const w = worstOnRing(ring, extra);
    if (w < currentWorst && bySize.slice(0, keep).every(([key]) => !ringHas(ring, key))) return { ring: sameRing(ring, current) ? current : ring, worstExtraMs: w };
  }
  return { ring: current, worstExtraMs: currentWorst };
}

function ringHas(ring: Int32Array, key: number): boolean {
  const d = ring.length;
  for (let k = 0; k < d; k++) if (edgeKey(ring[k], ring[(k + 1) % d], d) === key) return true;
  return false;
}
