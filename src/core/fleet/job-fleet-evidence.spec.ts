import { DetectionSnapshot, PipelineLinkState, RankComputeState } from '../detect/detection.type';
import { jobFleetEvidence } from './job-fleet-evidence';

function pipe(upRank: number, downRank: number, samples: number, straggler = false, recovering = false, extraMs = 0): PipelineLinkState {
  return { dp: 0, link: upRank, upRank, downRank, forwardExtraMs: extraMs, backwardExtraMs: 0, extraMs, baselineMs: 1, medianMs: 1 + extraMs, ewmaMs: 1, samples, straggler, recovering, reason: straggler ? 'eq1' : null, error: null };
}
function compute(rank: number, straggler: boolean, ratio: number): RankComputeState {
  return { rank, dp: 0, pp: rank, fMs: 1, bMs: 1, wMs: 1, referenceMs: 3, ratio, straggler, recovering: false };
}
const snapshot = (p: Partial<DetectionSnapshot>): DetectionSnapshot => ({ pipelineLinks: [], dataParallelLinks: [], compute: [], stageTimes: { fMs: [], bMs: [], wMs: [] }, ...p });
// Ranks 0 and 1 share node x; 2 on y (rack A), 3 on z (rack B).
const ranks = [
  { rank: 0, node: 'x', locality: 'A' },
  { rank: 1, node: 'x', locality: 'A' },
  { rank: 2, node: 'y', locality: 'A' },
  { rank: 3, node: 'z', locality: 'B' },
];

describe('jobFleetEvidence', () => {
  it('puts the snapshot in node terms: slow and healthy samples per node pair, links inside one node left out', () => {
    const e = jobFleetEvidence('j', 5, ranks, snapshot({ pipelineLinks: [pipe(0, 1, 16, true), pipe(1, 2, 16, true, false, 9), pipe(2, 3, 10)], compute: [compute(2, true, 1.3), compute(3, false, Number.NaN)] }), 100);
    expect(e).toEqual({
      jobId: 'j',
      at: 5,
      localities: { x: 'A', y: 'A', z: 'B' },
      links: [
        { a: 'x', b: 'y', healthy: 0, slow: 16, extraMs: 9 },
        { a: 'y', b: 'z', healthy: 10, slow: 0, extraMs: 0 },
      ],
      compute: [
        { node: 'y', healthy: 0, slow: 1, ratio: 1.3 },
        { node: 'z', healthy: 1, slow: 0, ratio: 0 },
      ],
    });
  });

  it('counts a recovering straggler as healthy (its newest samples are), a NIC failure as slow', () => {
    const nic = { ...pipe(2, 3, 4), error: 'nic-failure' as const };
    const e = jobFleetEvidence('j', 0, ranks, snapshot({ pipelineLinks: [pipe(1, 2, 8, true, true), nic] }), 100);
    expect(e.links).toEqual([
      { a: 'y', b: 'z', healthy: 0, slow: 4, extraMs: 0 },
      { a: 'x', b: 'y', healthy: 8, slow: 0, extraMs: 0 },
    ]);
  });

  it('keeps at most maxLinks pairs, the slow ones first', () => {
    const e = jobFleetEvidence('j', 0, ranks, snapshot({ pipelineLinks: [pipe(1, 2, 30), pipe(2, 3, 4, true)] }), 1);
    expect(e.links.map((l) => `${l.a}-${l.b}`)).toEqual(['y-z']);
  });
});
