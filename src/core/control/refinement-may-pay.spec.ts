import fc from 'fast-check';
import { ControlDecision } from './control-decision.type';
import { DelegationPlan, PipelineGroupPlan } from './control-input.type';
import { StragglerHistory } from './straggler-history';
import { GateContext, gateSwitch, refinementMayPay, SwitchCostConfig } from './switch-gate';

const config: SwitchCostConfig = { costAware: true, switchCostMs: 100, predictionUncertainty: 0.1, stragglerPriorIterations: 100, stragglerPriorWeight: 0.01, delegatedRankMsPerIteration: 2, warmupMsPerIteration: 0.25 };
const KEY = 'p:0:1';

/** A job whose link 1 straggled in spells of `on` iterations with `off` between, `episodes` times, and straggles again now for `age`. */
function history(on: number, off: number, episodes: number, age: number): { h: StragglerHistory; now: number } {
  const h = new StragglerHistory({ priorIterations: config.stragglerPriorIterations, priorWeight: config.stragglerPriorWeight });
  let t = 0;
  for (let k = 0; k < episodes; k++) {
    for (let i = 0; i < on; i++) h.observe(t++, [KEY]);
    for (let i = 0; i < off; i++) h.observe(t++, []);
  }
  for (let i = 0; i <= age; i++) h.observe(t++, [KEY]);
  return { h, now: t - 1 };
}

/** Link 2 straggled six times for 3 iterations each; link 1 straggles now, for `age` iterations. */
function shortElsewhere(age: number): { h: StragglerHistory; now: number } {
  const h = new StragglerHistory({ priorIterations: config.stragglerPriorIterations, priorWeight: config.stragglerPriorWeight });
  let t = 0;
  for (let k = 0; k < 6; k++) {
    for (let i = 0; i < 3; i++) h.observe(t++, ['p:0:2']);
    for (let i = 0; i < 20; i++) h.observe(t++, []);
  }
  for (let i = 0; i <= age; i++) h.observe(t++, [KEY]);
  return { h, now: t - 1 };
}

function plan(warmup: number[], delegated: number): { pipelines: PipelineGroupPlan[]; delegation: DelegationPlan[] } {
  return {
    pipelines: [{ dpReplicas: [0], warmup } as unknown as PipelineGroupPlan],
    delegation: Array.from({ length: delegated }, (_, rank) => ({ rank, sendQueues: 1, recvQueues: 1 })),
  };
}

/** A refinement's decision: `gainMs` faster than the plan in force, holding `resources` of its own. */
function refined(previousMs: number, gainMs: number, resources: { pipelines: PipelineGroupPlan[]; delegation: DelegationPlan[] }): ControlDecision {
  return {
    kind: 'straggler', pipelines: resources.pipelines, delegation: resources.delegation,
    links: [{ dp: 0, link: 1, upRank: 1, downRank: 2, extraMs: 30, nicFailure: false }],
    predictedPreviousMs: previousMs, predictedNewMs: previousMs - gainMs, predictedStaticMs: previousMs, reschedule: true, detail: '',
  };
}

describe('refinementMayPay (issue 32: the refinement is searched for only where the gate could take it)', () => {
  it('is a strict bound: where it says no, gateSwitch declines every plan gaining at most the headroom, whatever resources it holds', () => {
    let pruned = 0;
    let kept = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 30 }),
        fc.double({ min: 0, max: 80, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }),
        fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 2, maxLength: 4 }), fc.integer({ min: 0, max: 4 }),
        fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 2, maxLength: 4 }), fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 6 }), fc.boolean(),
        (on, off, episodes, age, headroomMs, share, warmNow, delegatedNow, warmNew, delegatedNew, lead, fleetNamed) => {
          const { h, now } = history(on, off, episodes, age);
          const ctx: GateContext = { iteration: now, leadIterations: lead, migrationMs: 0, history: h, current: plan(warmNow, delegatedNow), ...(fleetNamed ? { fleetNamed: (k: string) => k === KEY } : {}) };
          const mayPay = refinementMayPay(headroomMs, [KEY], false, config, ctx);
          const verdict = gateSwitch(refined(600, headroomMs * share, plan(warmNew, delegatedNew)), config, ctx);
          if (!mayPay) {
            pruned++;
            expect(verdict.take).toBe(false);
          } else kept++;
        },
      ),
      { numRuns: 400, seed: 32 },
    );
    // Both sides are exercised.
    expect(pruned).toBeGreaterThan(40);
    expect(kept).toBeGreaterThan(40);
  });

  it('leaves out the search for a straggler of a kind the job has seen end within a few iterations (other links, 3-iteration spells)', () => {
    const { h, now } = shortElsewhere(1);
    const ctx: GateContext = { iteration: now, leadIterations: 3, migrationMs: 0, history: h, current: plan([3, 2, 1, 0], 2) };
    expect(refinementMayPay(20, [KEY], false, config, ctx)).toBe(false);
  });

  it('twin: the same headroom on a job with no history (the prior: 100 iterations) is searched for, and the gate takes such a plan', () => {
    const { h, now } = history(10, 20, 0, 1);
    const ctx: GateContext = { iteration: now, leadIterations: 3, migrationMs: 0, history: h, current: plan([3, 2, 1, 0], 2) };
    expect(refinementMayPay(20, [KEY], false, config, ctx)).toBe(true);
    expect(gateSwitch(refined(600, 20, plan([3, 2, 1, 0], 2)), config, ctx).take).toBe(true);
  });

  it('twin, broken on purpose: a bound that left out the resources the plan in force holds is not strict (the gate takes a plan it would have pruned)', () => {
    const priced: SwitchCostConfig = { ...config, delegatedRankMsPerIteration: 40 };
    const { h, now } = shortElsewhere(1);
    const ctx: GateContext = { iteration: now, leadIterations: 1, migrationMs: 0, history: h, current: plan([3, 2, 1, 0], 4) };
    const leftOut = refinementMayPay(20, [KEY], false, priced, { ...ctx, current: undefined });
    expect(leftOut).toBe(false);
    expect(gateSwitch(refined(600, 20, plan([0, 0, 0, 0], 0)), priced, ctx).take).toBe(true);
    expect(refinementMayPay(20, [KEY], false, priced, ctx)).toBe(true);
  });

  it('never prunes where the gate takes without pricing: a NIC failure, cost-aware switching off, an unknown headroom', () => {
    const { h, now } = history(10, 20, 4, 4);
    const ctx: GateContext = { iteration: now, leadIterations: 3, migrationMs: 0, history: h };
    expect(refinementMayPay(1, [KEY], true, config, ctx)).toBe(true);
    expect(refinementMayPay(1, [KEY], false, { ...config, costAware: false }, ctx)).toBe(true);
    expect(refinementMayPay(Infinity, [KEY], false, config, ctx)).toBe(true);
    expect(refinementMayPay(0, [KEY], false, config, ctx)).toBe(false);
  });

  it('a straggler on a link the fleet named (a bad NIC other jobs see) is searched for and switched for, whatever the job\'s short spells say', () => {
    const { h, now } = shortElsewhere(1);
    const named: GateContext = { iteration: now, leadIterations: 3, migrationMs: 0, history: h, current: plan([3, 2, 1, 0], 2), fleetNamed: (k) => k === KEY };
    expect(refinementMayPay(20, [KEY], false, config, named)).toBe(true);
    const verdict = gateSwitch(refined(600, 20, plan([3, 2, 1, 0], 2)), config, named);
    expect(verdict.take).toBe(true);
    expect(verdict.cost?.expectedIterations).toBeGreaterThanOrEqual(config.stragglerPriorIterations);
    // Twin: the fleet names another link; this one is priced by the job's history alone and declined.
    const elsewhere: GateContext = { ...named, fleetNamed: (k) => k === 'p:0:2' };
    expect(refinementMayPay(20, [KEY], false, config, elsewhere)).toBe(false);
    expect(gateSwitch(refined(600, 20, plan([3, 2, 1, 0], 2)), config, elsewhere).take).toBe(false);
  });
});
