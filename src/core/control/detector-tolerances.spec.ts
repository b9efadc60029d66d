import { JobControlInput, PipelineLinkView } from './control-input.type';
import { detectorTolerances } from './detector-tolerances';

/** 3 stages, F+B = 20 ms on stages 0 and 1, 40 ms on stage 2; 2 replicas. */
function input(links: PipelineLinkView[]): JobControlInput {
  return {
    stages: 3, microbatches: 8, dpSize: 2,
    fMs: [10, 10, 20], bMs: [10, 10, 20], wMs: [5, 5, 5],
    deviceCaps: [8, 8, 8], hostCaps: [8, 8, 8], links, current: null,
  };
}

const link = (dp: number, l: number, baselineMs: number): PipelineLinkView => ({ dp, link: l, upRank: 0, downRank: 1, baselineMs, extraMs: 0, straggler: false, nicFailure: false });

describe('detectorTolerances', () => {
  it('gives each replica\'s link what Eq. 1 absorbs, less its learned baseline', () => {
    // Link 0: slackness 2 -> (2 x 20 - 20) / 2 = 10 ms; link 1: slackness 1 -> (1 x 40 - 20) / 2 = 10 ms.
    const tolerances = detectorTolerances(input([link(0, 0, 3), link(1, 1, Number.NaN)]), [{ dpReplicas: [0, 1], warmup: [4, 2, 1] }]);
    expect(tolerances).toEqual([
      { dp: 0, link: 0, toleranceMs: 7 },
      { dp: 0, link: 1, toleranceMs: 10 },
      { dp: 1, link: 0, toleranceMs: 10 },
      { dp: 1, link: 1, toleranceMs: 10 }, // a baseline not learned yet counts as 0
    ]);
  });

  it('never goes below zero: a slackness that absorbs nothing, or a baseline above the tolerance', () => {
    const tolerances = detectorTolerances(input([link(0, 0, 50)]), [{ dpReplicas: [0], warmup: [1, 1, 1] }]);
    expect(tolerances.every((t) => t.toleranceMs === 0)).toBe(true);
  });
});
