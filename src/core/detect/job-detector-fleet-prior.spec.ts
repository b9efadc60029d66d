import { DEFAULT_DETECTOR_CONFIG } from './detector-config.type';
import { DetectionSnapshot, FleetLinkPrior, JobDetector } from './job-detector';
import { EmulatedRanks } from './emulated-ranks.fixture';

/**
 * The fleet as a prior in one job's detector (issue 31, step 4; fleetLinkPrior builds it from the
 * fleet view). A 4 x 2 job; link 2 of replica 1 (ranks 6 and 7) and its ring 1 -> 5.
 */
function job(): EmulatedRanks {
  const ranks = Array.from({ length: 8 }, (_, rank) => ({ rank, dp: Math.floor(rank / 4), pp: rank % 4 }));
  return new EmulatedRanks(new JobDetector({ stages: 4, dpSize: 2, ranks }, DEFAULT_DETECTOR_CONFIG), 4, 2);
}

const pipelineFlagged = (s: DetectionSnapshot) => s.pipelineLinks.filter((l) => l.straggler).map((l) => `${l.dp}:${l.link}`);
const ringFlagged = (s: DetectionSnapshot) => s.dataParallelLinks.filter((l) => l.straggler).map((l) => `${l.fromRank}>${l.toRank}`);
const onPair = (prior: FleetLinkPrior, a: number, b: number) => (from: number, to: number) => ((from === a && to === b) || (from === b && to === a) ? prior : null);
const everywhere = (prior: FleetLinkPrior) => () => prior;

/** Samples (after 20 healthy iterations) until link 2 of replica 1, `ms` slower (not severe), is flagged. */
function pipelineSamplesToFlag(prior: ((from: number, to: number) => FleetLinkPrior | null) | null, ms = 8): number {
  const r = job();
  r.detector.setFleetPrior(prior);
  r.run(20);
  r.pipelineMs = (d, link) => 10 + (d === 1 && link === 2 ? ms : 0);
  for (let k = 1; k <= 10; k++) {
    r.iterate();
    if (pipelineFlagged(r.detector.snapshot()).includes('1:2')) return k;
  }
  return Infinity;
}

describe('JobDetector: the fleet prior', () => {
  it('flags a pipeline link the fleet names slow on its first bad sample', () => {
    expect(pipelineSamplesToFlag(onPair('slow', 6, 7))).toBe(1);
  });

  it('twin: without the prior the same link waits enterAfter samples', () => {
    expect(pipelineSamplesToFlag(null)).toBe(DEFAULT_DETECTOR_CONFIG.enterAfter);
    // The prior on another pair changes nothing here.
    expect(pipelineSamplesToFlag(onPair('slow', 1, 2))).toBe(DEFAULT_DETECTOR_CONFIG.enterAfter);
  });

  it('sizes a ring flagged on its first bad sample by that sample, not by the healthy ones before it', () => {
    const r = job();
    r.detector.setFleetPrior((from, to) => (from === 1 && to === 5 ? 'slow' : null));
    r.run(20);
    r.dpMs = (from, to) => (from === 1 && to === 5 ? 40 : 20);
    r.iterate();
    const ring = r.detector.snapshot().dataParallelLinks.find((l) => l.fromRank === 1 && l.toRank === 5)!;
    expect(ring.straggler).toBe(true);
    // Sized by the newest enterAfter samples (two of them healthy) it read 0 ms, and no re-map was priced.
    expect(ring.extraMs).toBeCloseTo(20, 6);
    r.run(DEFAULT_DETECTOR_CONFIG.enterAfter);
    expect(r.detector.snapshot().dataParallelLinks.find((l) => l.fromRank === 1 && l.toRank === 5)!.extraMs).toBeCloseTo(20, 6);
  });

  it('still needs a bad sample: a link the fleet names slow that runs healthy in this job is not flagged', () => {
    const r = job();
    r.detector.setFleetPrior(everywhere('slow'));
    r.run(40);
    expect(pipelineFlagged(r.detector.snapshot())).toEqual([]);
    expect(ringFlagged(r.detector.snapshot())).toEqual([]);
  });

  it('forgets the prior when told null', () => {
    const r = job();
    r.detector.setFleetPrior(everywhere('slow'));
    r.detector.setFleetPrior(null);
    r.run(20);
    r.pipelineMs = (d, link) => 10 + (d === 1 && link === 2 ? 8 : 0);
    r.iterate();
    expect(pipelineFlagged(r.detector.snapshot())).toEqual([]);
  });

  it('flags a ring the fleet names slow on its first bad sample, and only that ring; twin: without it, enterAfter', () => {
    const samples = (prior: ((from: number, to: number) => FleetLinkPrior | null) | null): number => {
      const r = job();
      r.detector.setFleetPrior(prior);
      r.run(20);
      r.dpMs = (from, to) => (from === 1 && to === 5 ? 40 : 20);
      for (let k = 1; k <= 10; k++) {
        r.iterate();
        const flagged = ringFlagged(r.detector.snapshot());
        if (flagged.length > 0) {
          expect(flagged).toEqual(['1>5']);
          return k;
        }
      }
      return Infinity;
    };
    expect(samples((from, to) => (from === 1 && to === 5 ? 'slow' : null))).toBe(1);
    expect(samples(null)).toBe(DEFAULT_DETECTOR_CONFIG.enterAfter);
  });
});
