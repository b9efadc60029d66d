import { ControlDecision } from './control-decision.type';
import { judgeDecision, JudgeContext } from './judge-decision';
import { StragglerHistory } from './straggler-history';
import { SwitchCostConfig } from './switch-gate';

const config: SwitchCostConfig = { costAware: true, switchCostMs: 100, predictionUncertainty: 0.1, stragglerPriorIterations: 100, stragglerPriorWeight: 0.01 };

function decision(kind: ControlDecision['kind']): ControlDecision {
  return {
    kind, pipelines: [], delegation: [], links: [{ dp: 0, link: 2, upRank: 2, downRank: 3, extraMs: 30, nicFailure: kind === 'nic-failure' }],
    predictedPreviousMs: kind === 'initial' ? null : 900, predictedNewMs: 700, predictedStaticMs: 900, reschedule: true, detail: '',
  };
}

function context(paused: boolean, overrides = paused): JudgeContext {
  const history = new StragglerHistory({ priorIterations: 100, priorWeight: 0.01 });
  history.observe(10, ['p:0:2']);
  return { at: 5, iteration: 11, leadIterations: 3, migrationMs: 0, history, paused, overrides };
}

describe('judgeDecision with per-job overrides', () => {
  it.each<ControlDecision['kind']>(['straggler', 'recovery', 'remap'])('with switching paused, a %s decision worth taking is logged as paused and not taken', (kind) => {
    const v = judgeDecision(decision(kind), 900, config, context(true));
    expect(v.take).toBe(false);
    expect(v.revisitSoon).toBe(false);
    expect(v.record).toMatchObject({ verdict: 'paused', overrides: true });
    expect(v.record.reason).toMatch(/^switching paused for the job \(would have been: /);
  });

  it('can fail: the same straggler decision without the pause is taken', () => {
    const v = judgeDecision(decision('straggler'), 900, config, context(false));
    expect(v.take).toBe(true);
    expect(v.record).toMatchObject({ verdict: 'taken', overrides: false });
  });

  it('still takes a NIC failure while switching is paused, and says why (a failed NIC without delegation stalls the job)', () => {
    const v = judgeDecision(decision('nic-failure'), 900, config, context(true));
    expect(v.take).toBe(true);
    expect(v.record.verdict).toBe('taken');
    expect(v.record.reason).toMatch(/taken although switching is paused for the job: a failed NIC without delegation stalls it/);
  });

  it('still takes the first plan while switching is paused: a job needs a schedule', () => {
    expect(judgeDecision(decision('initial'), null, config, context(true)).take).toBe(true);
  });

  it('records whether overrides were in force, paused or not', () => {
    expect(judgeDecision(decision('straggler'), 900, config, context(false, true)).record.overrides).toBe(true);
  });
});
