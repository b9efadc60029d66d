import { RankProgress } from './rank-progress.model';

describe('RankProgress.iterationAt', () => {
  function running(): RankProgress {
    const progress = new RankProgress();
    for (let i = 0; i < 10; i++) progress.noteIteration(0, i, 1000 + 100 * i, true, 100);
    return progress; // iteration 9 first heard at 1900, 100 ms per iteration
  }

  it('adds the whole iterations elapsed since the newest report at the measured pace', () => {
    const progress = running();
    expect(progress.iterationAt(1900, 5000)).toBe(9);
    expect(progress.iterationAt(1999, 5000)).toBe(9);
    expect(progress.iterationAt(2150, 5000)).toBe(11);
  });

  it('counts no more than the horizon of silence: a stalled job is not running ahead', () => {
    const progress = running();
    expect(progress.iterationAt(1900 + 60_000, 500)).toBe(14);
  });

  it('is the highest reported before the pace is known', () => {
    const progress = new RankProgress();
    expect(progress.iterationAt(5000, 5000)).toBe(-1);
    progress.noteIteration(0, 3, 1000, true);
    expect(progress.iterationAt(5000, 5000)).toBe(3);
  });
});
