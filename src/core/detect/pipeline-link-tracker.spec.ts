import { DEFAULT_DETECTOR_CONFIG, DetectorConfig } from './detector-config.type';
import { LinkObservation } from './detection.type';
import { FORWARD, PipelineLinkTracker } from './pipeline-link-tracker';
import { seededRandom } from '../planner/seeded-random';

const sample = (medianMs: number): LinkObservation => ({ peer: 1, kind: 'pipeline', bytes: 1, medianMs, maxMs: medianMs, delegated: false, error: null });

/** An 8-stage dp4 job's links for `iterations` iterations, a severe tail sample on each with probability `tail`. */
function healthy(tracker: PipelineLinkTracker, iterations: number, tail: number, seed: number): void {
  const random = seededRandom(seed);
  for (let i = 0; i < iterations; i++)
    for (let dp = 0; dp < 4; dp++)
      for (let link = 0; link < 7; link++)
        for (let dir = 0; dir < 2; dir++) tracker.observe(dp, link, dir, sample(10 + random() * 0.2 + (random() < tail ? 40 : 0)));
}

function flagsAfter(tracker: PipelineLinkTracker, severeSamples: number): boolean {
  for (let k = 0; k < severeSamples; k++) tracker.observe(0, 3, FORWARD, sample(40));
  return tracker.activeCount > 0;
}

describe('PipelineLinkTracker: severe entry against the job tail rate', () => {
  const config: DetectorConfig = { ...DEFAULT_DETECTOR_CONFIG };

  it('a quiet job flags a link on its second severe sample', () => {
    const t = new PipelineLinkTracker(config, 8, 4, null);
    healthy(t, 400, 0, 1);
    expect(t.severeEnterAfter).toBe(2);
    expect(flagsAfter(t, 2)).toBe(true);
  });

  it('a job whose healthy links put tail samples in a row by chance waits for a third', () => {
    const t = new PipelineLinkTracker(config, 8, 4, null);
    // 1 sample in 200 severe on 56 directions: a run of 2 somewhere every ~700 iterations, of 3 every ~140000.
    healthy(t, 4000, 0.005, 2);
    expect(t.severeEnterAfter).toBe(3);
    expect(t.tailRate).toBeGreaterThan(0.004);
    expect(t.tailRate).toBeLessThan(0.006);
    expect(flagsAfter(t, 2)).toBe(false);
    expect(flagsAfter(t, 1)).toBe(true);
  });

  it('on a heavy-tailed job a mild sample and two tail samples make no straggler: a run sized severe needs the severe run (issue 29)', () => {
    // 8 ms is bad (over delegationThresholdMs), 40 ms severe: mild, severe, severe is enterAfter (3) bad samples of median 40 ms.
    const mildThenTwo = (t: PipelineLinkTracker) => {
      for (const ms of [18, 50, 50]) t.observe(0, 3, FORWARD, sample(ms));
      return t.activeCount > 0;
    };
    const heavy = new PipelineLinkTracker(config, 8, 4, null);
    healthy(heavy, 4000, 0.005, 2);
    expect(heavy.severeEnterAfter).toBe(3);
    expect(mildThenTwo(heavy)).toBe(false);
    expect(flagsAfter(heavy, 1)).toBe(true); // the third severe sample
    // Twin: on a quiet job two severe samples are evidence enough, by either path.
    const quiet = new PipelineLinkTracker(config, 8, 4, null);
    healthy(quiet, 400, 0, 1);
    expect(mildThenTwo(quiet)).toBe(true);
    // And a run of mild samples still enters on enterAfter, heavy tail or not.
    const mild = new PipelineLinkTracker(config, 8, 4, null);
    healthy(mild, 4000, 0.005, 2);
    for (const ms of [18, 19, 18]) mild.observe(0, 3, FORWARD, sample(ms));
    expect(mild.activeCount).toBe(1);
  });

  it('a job whose links often turn slow for good is not taken for a heavy-tailed one', () => {
    const t = new PipelineLinkTracker(config, 8, 4, null);
    healthy(t, 200, 0, 4);
    // Every 60 iterations some link turns 40 ms slow for 20 iterations: 2 severe samples before each is flagged.
    for (let spell = 0; spell < 60; spell++) {
      for (let i = 0; i < 60; i++)
        for (let link = 0; link < 7; link++) t.observe(0, link, FORWARD, sample(link === spell % 7 && i < 20 ? 50 : 10));
    }
    expect(t.tailRate).toBe(0);
    expect(t.severeEnterAfter).toBe(2);
  });

  it('never waits past enterAfter, and a looser chance rate keeps severeEnterAfter', () => {
    const heavy = new PipelineLinkTracker(config, 8, 4, null);
    healthy(heavy, 2000, 0.2, 3);
    expect(heavy.severeEnterAfter).toBe(config.enterAfter);
    const loose = new PipelineLinkTracker({ ...config, severeChanceRate: 1 }, 8, 4, null);
    healthy(loose, 4000, 0.005, 2);
    expect(loose.severeEnterAfter).toBe(2);
  });

  it('keeps what it read of the tail across a reconfigure with the same knobs', () => {
    const t = new PipelineLinkTracker(config, 8, 4, null);
    healthy(t, 4000, 0.005, 2);
    t.reconfigure({ ...config });
    expect(t.severeEnterAfter).toBe(3);
  });
});
