import { DEFAULT_DETECTOR_CONFIG } from './detector-config.type';
import { EmulatedRanks } from './emulated-ranks.fixture';
import { JobDetector } from './job-detector';

/**
 * A restarted rank warms up (communicators rebuilt, caches cold: 3x slower for 5 iterations, the
 * corpus's healthy-restart) and is not a compute straggler: after a silence the CUSUM leaves its
 * first baselineWarmup samples out, as it does a new rank's. 4 stages, one replica.
 */
function restart(silence: number): boolean[] {
  const ranks = new EmulatedRanks(new JobDetector({ stages: 4, dpSize: 1, ranks: [0, 1, 2, 3].map((rank) => ({ rank, dp: 0, pp: rank })) }, DEFAULT_DETECTOR_CONFIG), 4, 1);
  ranks.run(40);
  ranks.iteration += silence;
  const flagged: boolean[] = [];
  for (let k = 0; k < 25; k++) {
    ranks.compute = (_d, pp) => (pp === 1 && k < 5 ? { f: 30, b: 30, w: 30 } : { f: 10, b: 10, w: 10 });
    ranks.iterate();
    flagged.push(ranks.detector.snapshot().compute.find((c) => c.rank === 1)!.straggler);
  }
  return flagged;
}

describe('a restarted rank warming up', () => {
  it('back after 30 silent iterations, 3x slower for 5: never a compute straggler', () => {
    expect(restart(30).some(Boolean)).toBe(false);
  });

  it('twin: the same 5 slow iterations with no silence before them are one (the CUSUM flags them)', () => {
    expect(restart(0).some(Boolean)).toBe(true);
  });
});
