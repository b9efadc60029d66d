import { DecisionRecord } from '../../core/control/decision-record.type';
import { DECISIONS_KEPT, DecisionLog } from './decision-log';

function record(iteration: number, verdict: DecisionRecord['verdict'], link = 2): DecisionRecord {
  return {
    at: iteration * 1000, iteration, kind: 'straggler', verdict, reason: '', cost: null, scheduleVersion: null, overrides: false, repeats: 1, firstIteration: iteration,
    evidence: { links: [{ dp: 0, link, extraMs: 30, nicFailure: false }], dataParallelLinks: [] },
    prediction: { currentMs: 800, newMs: 790, staticMs: 800 },
  };
}

describe('DecisionLog', () => {
  it('keeps one entry for a run of the same declined decision, with its newest numbers and first iteration', () => {
    const log = new DecisionLog();
    for (let i = 10; i < 15; i++) log.record(record(i, 'declined'));
    expect(log.recent()).toEqual([expect.objectContaining({ iteration: 14, firstIteration: 10, repeats: 5 })]);
    expect(log.count).toBe(5);
    expect(log.countOf('declined')).toBe(5);
  });

  it('a decision on other stragglers, or a taken one, starts a new entry (taken ones never merge)', () => {
    const log = new DecisionLog();
    log.record(record(1, 'declined', 2));
    log.record(record(2, 'declined', 3));
    log.record(record(3, 'taken', 3));
    log.record(record(4, 'taken', 3));
    expect(log.recent().map((r) => [r.iteration, r.verdict, r.repeats])).toEqual([[1, 'declined', 1], [2, 'declined', 1], [3, 'taken', 1], [4, 'taken', 1]]);
  });

  it('keeps the newest DECISIONS_KEPT entries', () => {
    const log = new DecisionLog();
    for (let i = 0; i < DECISIONS_KEPT + 10; i++) log.record(record(i, 'taken'));
    expect(log.recent()).toHaveLength(DECISIONS_KEPT);
    expect(log.recent()[0].iteration).toBe(10);
    expect(log.recent(2).map((r) => r.iteration)).toEqual([DECISIONS_KEPT + 8, DECISIONS_KEPT + 9]);
  });
});
