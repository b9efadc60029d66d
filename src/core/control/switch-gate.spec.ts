import { ControlDecision } from './control-decision.type';
import { StragglerHistory } from './straggler-history';
import { gateSwitch, SwitchCostConfig } from './switch-gate';

const config: SwitchCostConfig = { costAware: true, switchCostMs: 100, predictionUncertainty: 0.1, stragglerPriorIterations: 100, stragglerPriorWeight: 0.25 };

function decision(kind: ControlDecision['kind'], previous: number, next: number): ControlDecision {
  return {
    kind, pipelines: [], delegation: [], links: kind === 'recovery' ? [] : [{ dp: 0, link: 2, upRank: 2, downRank: 3, extraMs: 30, nicFailure: false }],
    predictedPreviousMs: previous, predictedNewMs: next, predictedStaticMs: previous, reschedule: true, detail: '',
  };
}

function flapping(on = 3, off = 7): StragglerHistory {
  const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
  let t = 0;
  for (let k = 0; k < 12; k++) {
    for (let i = 0; i < on; i++) h.observe(t++, ['p:0:2']);
    for (let i = 0; i < off; i++) h.observe(t++, []);
  }
  h.observe(t, ['p:0:2']);
  h.observe(t + 1, ['p:0:2']);
  return h;
}

describe('gateSwitch', () => {
  it('takes a fresh straggler whose gain over the expected duration beats the switch there and back', () => {
    const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    h.observe(10, ['p:0:2']);
    const v = gateSwitch(decision('straggler', 800, 780), config, { iteration: 11, leadIterations: 3, migrationMs: 0, history: h });
    expect(v.take).toBe(true);
    expect(v.cost).toMatchObject({ gainMsPerIteration: 20, costMs: 200 });
  });

  it('declines chasing a rarely slow flapping link: the same gain over its short spells does not pay', () => {
    const h = flapping(1, 49); // slow 2% of iterations
    const v = gateSwitch(decision('straggler', 800, 780), config, { iteration: 601, leadIterations: 3, migrationMs: 0, history: h });
    expect(v.take).toBe(false);
    expect(v.reason).toMatch(/^declined/);
  });

  it('keeps a plan through a link slow 30% of the time: taken for its share of slow iterations, and not given back in its short gaps', () => {
    const h = flapping(); // 3 on, 7 off
    const v = gateSwitch(decision('straggler', 800, 780), config, { iteration: 121, leadIterations: 3, migrationMs: 0, history: h });
    expect(v.take).toBe(true);
    expect(v.reason).toMatch(/recurring: slow 30% of iterations/);
    // The gap after the spell: going back does not pay, the plan stays.
    const back = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    let t = 0;
    for (let k = 0; k < 12; k++) {
      for (let i = 0; i < 3; i++) back.observe(t++, ['p:0:2']);
      for (let i = 0; i < 7; i++) back.observe(t++, []);
    }
    const recovery = gateSwitch(decision('recovery', 780, 779), { ...config, delegatedRankMsPerIteration: 2 }, { iteration: t - 6, leadIterations: 3, migrationMs: 0, history: back, answeredKeys: ['p:0:2'], current: { pipelines: [], delegation: [{ rank: 2, sendQueues: 1, recvQueues: 1 }, { rank: 3, sendQueues: 1, recvQueues: 1 }] } });
    expect(recovery.take).toBe(false);
  });

  it('with costAware off the same flapping link is chased (the check above would fail)', () => {
    const v = gateSwitch(decision('straggler', 800, 780), { ...config, costAware: false }, { iteration: 121, leadIterations: 3, migrationMs: 0, history: flapping() });
    expect(v.take).toBe(true);
  });

  it('a re-map pays its handoff: declined when the migration outweighs the gain, taken when it does not', () => {
    const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    const remap = { ...decision('remap', 900, 880), links: [], dataParallelLinks: [{ fromRank: 1, toRank: 5, extraMs: 30 }] };
    expect(gateSwitch(remap, config, { iteration: 0, leadIterations: 5, migrationMs: 3000, history: h }).take).toBe(false);
    expect(gateSwitch({ ...remap, predictedNewMs: 700 }, config, { iteration: 0, leadIterations: 5, migrationMs: 3000, history: h }).take).toBe(true);
  });

  it('NIC failures and first plans are always taken', () => {
    const h = flapping();
    expect(gateSwitch(decision('nic-failure', 800, 799), config, { iteration: 121, leadIterations: 3, migrationMs: 0, history: h }).take).toBe(true);
    expect(gateSwitch({ ...decision('initial', 800, 800), predictedPreviousMs: null }, config, { iteration: 0, leadIterations: 3, migrationMs: 0, history: h }).take).toBe(true);
  });

  it('a recovery during a flapping spell is declined; after a lasting fault it is taken', () => {
    const lasting = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    for (let t = 0; t < 300; t++) lasting.observe(t, ['p:0:2']);
    lasting.observe(300, []);
    expect(gateSwitch(decision('recovery', 800, 790), config, { iteration: 300, leadIterations: 3, migrationMs: 0, history: lasting }).take).toBe(true);
    const h = new StragglerHistory({ priorIterations: 100, priorWeight: 0.25 });
    let t = 0;
    for (let k = 0; k < 12; k++) {
      for (let i = 0; i < 30; i++) h.observe(t++, ['p:0:2']);
      for (let i = 0; i < 3; i++) h.observe(t++, []);
    }
    for (let i = 0; i < 30; i++) h.observe(t++, ['p:0:2']);
    h.observe(t, []);
    expect(gateSwitch(decision('recovery', 800, 790), config, { iteration: t, leadIterations: 3, migrationMs: 0, history: h }).take).toBe(false);
  });
});
