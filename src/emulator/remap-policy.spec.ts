import { Placement } from '../core/topology/topology.type';
import { topologyFromPlacement } from '../core/topology/topology-from-placement';
import { runFalconPolicy } from './remap-policy';
import { dpRackScenario, dpScenarioJob, dpScenarios } from './scenarios';
import { runStaticPolicy } from './static-policy';

const mean = (xs: { iterationMs: number }[]) => xs.reduce((a, r) => a + r.iterationMs, 0) / xs.length;

describe('topologyFromPlacement', () => {
  it('lists every rank with its slot, rings as dp indices', () => {
    const placement: Placement = { dpSize: 2, stages: 2, nodeAt: Int32Array.from([0, 3, 2, 1]), rings: [Int32Array.from([0, 1]), Int32Array.from([1, 0])] };
    expect(topologyFromPlacement(placement, 2, 7, [1, 3])).toEqual({
      version: 2,
      sinceVersion: 7,
      ranks: [
        { rank: 0, dp: 0, pp: 0 },
        { rank: 1, dp: 1, pp: 1 },
        { rank: 2, dp: 1, pp: 0 },
        { rank: 3, dp: 0, pp: 1 },
      ],
      rings: [[0, 1], [1, 0]],
      moved: [1, 3],
    });
  });
});

describe('falcon (re-map only) on the paper\'s (2 DP, 4 PP) rack scenario', () => {
  it('has ZeroBubble degrade many times when every ring crosses a 30 ms rack link', () => {
    const s = dpRackScenario(30);
    const healthy = mean(runStaticPolicy(dpScenarioJob(s, 'h', true), 'zb-static', 40).slice(s.skip));
    const zb = runStaticPolicy(dpScenarioJob(s, 'z'), 'zb-static', 40);
    expect(mean(zb.slice(0, s.fromIteration))).toBeCloseTo(healthy, -1);
    expect(mean(zb.slice(s.skip)) / healthy).toBeGreaterThan(6);
  });

  it('re-maps once, 3 iterations after the onset, so that the rings stay in a rack, and beats static ZeroBubble', () => {
    const s = dpRackScenario(30);
    const { results, remap } = runFalconPolicy(dpScenarioJob(s, 'f', false, undefined, 2000), s.iterations);
    expect(remap).not.toBeNull();
    expect(remap!.effectiveIteration).toBe(s.fromIteration + 3);
    expect(remap!.topology.version).toBe(1);
    expect(remap!.topology.moved).toHaveLength(4);
    // Both ranks of every stage in one rack: ranks 0-3 are rack A, 4-7 rack B.
    for (let pp = 0; pp < 4; pp++) {
      const racks = remap!.topology.ranks.filter((r) => r.pp === pp).map((r) => (r.rank < 4 ? 'A' : 'B'));
      expect(racks[0]).toBe(racks[1]);
    }
    expect(results.map((r) => r.topologyVersion)).toEqual(results.map((r) => (r.iteration >= 8 ? 1 : 0)));
    expect(results.filter((r) => r.migrationMs > 0).map((r) => [r.iteration, r.migrationMs])).toEqual([[8, 2000]]);
    const zb = runStaticPolicy(dpScenarioJob(s, 'z'), 'zb-static', s.iterations);
    const falconMs = mean(results.slice(s.skip));
    const zbMs = mean(zb.slice(s.skip));
    expect(falconMs).toBeLessThan(zbMs / 3);
    // A residual pipeline straggler remains: slower than healthy.
    const healthy = mean(runStaticPolicy(dpScenarioJob(s, 'h', true), 'zb-static', s.iterations).slice(s.skip));
    expect(falconMs).toBeGreaterThan(healthy * 1.1);
  });

  it('does nothing on a healthy fabric', () => {
    const s = dpScenarios()[0];
    const { results, remap } = runFalconPolicy(dpScenarioJob(s, 'f', true), 20);
    expect(remap).toBeNull();
    expect(results.every((r) => r.topologyVersion === 0 && r.migrationMs === 0)).toBe(true);
  });
});
