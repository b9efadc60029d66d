import { ControlEvent, PublishedSchedule } from '../protocol/protocol-v1.type';
import { constantDelay } from './delay/constant-delay';
import { DEFAULT_EMULATION, EmulatedJob } from './emulated-job';
import { RankSet } from './rank-set.model';
import { uniform4 } from './scenarios';
import { uniform4Schedule } from './uniform4-schedule.fixture';

const u4 = uniform4();
const schedule = (version: number, effectiveIteration: number): PublishedSchedule => uniform4Schedule(version, effectiveIteration, [0]);
const event = (type: 'prepare' | 'commit', version: number, effectiveIteration: number): ControlEvent => ({ type, protocol: 1, jobId: 'j', version, epoch: 1, effectiveIteration }) as ControlEvent;

/** Ranks 0-2 hear of version 2 (effective at iteration 2); rank 3 does not. */
function partlyInformed(agreement: 'min' | 'skip'): RankSet {
  const set = new RankSet(new EmulatedJob('j', u4, 1, constantDelay({}), DEFAULT_EMULATION), agreement);
  set.views.forEach((v) => set.connect(v, '0-0', 1, schedule(1, 0)));
  set.run();
  for (const v of set.views.slice(0, 3)) {
    set.onEvent(v, '1-0', event('prepare', 2, 2));
    expect(set.answer(v, v.toAnswer.splice(0)[0], { ...schedule(2, 2), state: 'prepared' })?.accepted).toBe(true);
    expect(set.onEvent(v, '2-0', event('commit', 2, 2))).toBeNull(); // content held from the prepare
  }
  set.run();
  set.run();
  return set;
}

describe('RankSet (the ranks without I/O)', () => {
  it('under the MIN agreement every rank runs the lowest k_local: no mixed iteration although rank 3 knows less', () => {
    const set = partlyInformed('min');
    expect(set.history[2].local).toEqual([2, 2, 2, 1]);
    expect(set.history[2].versions).toEqual([1, 1, 1, 1]);
    expect(set.mixedIterations()).toEqual([]);
    expect(set.learned().map((s) => s.version)).toEqual([1, 2]);
  });

  it('a broken agreement is caught: each rank running its own k_local shows up as a mixed iteration', () => {
    const set = partlyInformed('skip');
    expect(set.history[2].versions).toEqual([2, 2, 2, 1]);
    expect(set.mixedIterations()).toEqual([2]);
  });

  it('refuses a prepare it hears too late, and ignores one whose pending schedule was superseded', () => {
    const set = new RankSet(new EmulatedJob('j', u4, 1, constantDelay({}), DEFAULT_EMULATION));
    set.views.forEach((view) => set.connect(view, '0-0', 1, schedule(1, 0)));
    const [v] = set.views;
    for (let i = 0; i < 3; i++) set.run();
    set.onEvent(v, '1-0', event('prepare', 2, 3));
    const prepare = v.toAnswer.splice(0)[0];
    expect(set.answer(v, prepare, { ...schedule(2, 3), state: 'prepared' })).toMatchObject({ accepted: false, reason: 'late', iteration: 3 });
    expect(set.answer(v, prepare, { ...schedule(3, 9), state: 'prepared' })).toBeNull();
  });
});
