import { ManualClock } from './manual-clock';
import { sleep } from './sleep';

describe('ManualClock', () => {
  it('fires timers in time order, each at its own time, and not before', () => {
    const clock = new ManualClock(1000);
    const fired: Array<[string, number]> = [];
    clock.setTimeout(() => fired.push(['b', clock.now()]), 20);
    clock.setTimeout(() => fired.push(['a', clock.now()]), 10);
    const cancelled = clock.setTimeout(() => fired.push(['c', clock.now()]), 15);
    clock.clearTimeout(cancelled);
    clock.advance(9);
    expect(fired).toEqual([]);
    clock.advance(11);
    expect(fired).toEqual([['a', 1010], ['b', 1020]]);
    expect(clock.now()).toBe(1020);
    expect(clock.pending).toBe(0);
  });

  it('resolves a sleep only once moved past it', async () => {
    const clock = new ManualClock();
    let woke = false;
    const slept = sleep(clock, 500).then(() => (woke = true));
    clock.advance(499);
    await Promise.resolve();
    expect(woke).toBe(false);
    clock.advance(1);
    await slept;
    expect(woke).toBe(true);
  });
});
