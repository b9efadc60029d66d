import { InputError } from '../../core/input-error';
import { rackLocalities, slowPairs, staticFabric } from './static-fabric';

const racks = rackLocalities(8, 4, ['rack-a', 'rack-b']);

describe('staticFabric', () => {
  it('slows every node pair across two localities while the link is slow, and no pair inside one', () => {
    const f = staticFabric({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-b'], extraMs: 30, from: 5, until: 9 }] });
    expect(f.locality(0)).toBe('rack-a');
    expect(f.locality(7)).toBe('rack-b');
    expect(f.locality(8)).toBeUndefined();
    for (const it of [5, 6, 8]) {
      for (let a = 0; a < 4; a++) for (let b = 4; b < 8; b++) {
        expect(f.pairExtraMs(a, b, it)).toBe(30);
        expect(f.pairExtraMs(b, a, it)).toBe(30);
      }
      expect(f.pairExtraMs(0, 3, it)).toBe(0);
      expect(f.pairExtraMs(4, 7, it)).toBe(0);
      expect(f.pairExtraMs(2, 2, it)).toBe(0);
    }
    expect(f.pairExtraMs(0, 4, 4)).toBe(0); // before from
    expect(f.pairExtraMs(0, 4, 9)).toBe(0); // until is exclusive
    expect(f.pairExtraMs(0, 99, 6)).toBe(0); // a node without locality
  });

  it('slows individual node pairs, both directions, and adds up slow links on one pair', () => {
    const f = staticFabric({ localities: racks, localityLinks: [{ between: ['rack-b', 'rack-a'], extraMs: 10 }], pairLinks: [{ nodes: [1, 6], extraMs: 5, from: 2 }, { nodes: [2, 3], extraMs: 7 }] });
    expect(f.pairExtraMs(1, 6, 0)).toBe(10);
    expect(f.pairExtraMs(6, 1, 2)).toBe(15);
    expect(f.pairExtraMs(3, 2, 0)).toBe(7);
    expect(f.pairExtraMs(1, 2, 0)).toBe(0);
    expect(slowPairs(f, 8, 0)).toHaveLength(16 + 1);
    expect(slowPairs(f, 8, 2).find((p) => p.a === 1 && p.b === 6)).toEqual({ a: 1, b: 6, extraMs: 15 });
  });

  it('a fabric without slow links is healthy everywhere; works without localities', () => {
    const f = staticFabric({ pairLinks: [{ nodes: [0, 1], extraMs: 3 }] });
    expect(f.locality(0)).toBeUndefined();
    expect(f.pairExtraMs(0, 1, 100)).toBe(3);
    expect(slowPairs(staticFabric({ localities: racks }), 8, 0)).toEqual([]);
    expect(staticFabric({}).name).toBe('healthy fabric');
  });

  it('is not changed by later edits to its spec', () => {
    const localities = racks.slice();
    const link = { between: ['rack-a', 'rack-b'] as const, extraMs: 30 };
    const f = staticFabric({ localities, localityLinks: [link] });
    localities[0] = 'rack-b';
    link.extraMs = 1;
    expect(f.pairExtraMs(0, 4, 0)).toBe(30);
  });

  it('rejects bad inputs with clear errors', () => {
    const bad = (spec: Parameters<typeof staticFabric>[0]) => () => staticFabric(spec);
    expect(bad({ localities: ['a', ''] })).toThrow(/locality of node 1/);
    expect(bad({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-c'], extraMs: 1 }] })).toThrow(/no node has locality "rack-c"/);
    expect(bad({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-a'], extraMs: 1 }] })).toThrow(/twice/);
    expect(bad({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-b'], extraMs: -1 }] })).toThrow(/extraMs -1/);
    expect(bad({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-b'], extraMs: NaN }] })).toThrow(InputError);
    expect(bad({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-b'], extraMs: 1, from: 5, until: 5 }] })).toThrow(/until 5/);
    expect(bad({ localities: racks, localityLinks: [{ between: ['rack-a', 'rack-b'], extraMs: 1, from: 1.5 }] })).toThrow(/from 1.5/);
    expect(bad({ pairLinks: [{ nodes: [0, -1], extraMs: 1 }] })).toThrow(/node -1/);
    expect(bad({ pairLinks: [{ nodes: [3, 3], extraMs: 1 }] })).toThrow(/twice/);
    expect(bad({ pairLinks: [{ nodes: [0, 1], extraMs: Infinity }] })).toThrow(InputError);
    expect(() => rackLocalities(9, 4, ['a', 'b'])).toThrow(/fewer than 9/);
    expect(() => rackLocalities(4, 0, ['a'])).toThrow(/perRack/);
  });
});
