import { DEFAULT_CONTROL_CONFIG } from '../control/control-config.type';
import { JobControlInput, PipelineGroupPlan } from '../control/control-input.type';
import { decideControl } from '../control/job-controller';
import { initialPipelines, modelOf, planRequestFor, predictMs, replicaDelays } from '../control/pipeline-plans';
import { planPipeline } from '../planner/plan';
import { decideRebalance } from './decide-rebalance.planner';
import { RebalanceConfig } from './rebalance-config.type';
import { rebalanceScenario } from './rebalance-scenario.util';

const CONFIG: RebalanceConfig = { enabled: true, minGain: 0.05, handoffGBps: 10, maxCandidates: 512, refineCandidates: 4 };
const CONTROL = { ...DEFAULT_CONTROL_CONFIG, planner: 'adaptive' as const };
/** 8 stages of 12 layers (96, GPT-3's depth), 32 microbatches, stage 3 1.5x slower. */
const job = (over: Partial<Parameters<typeof rebalanceScenario>[0]> = {}) => rebalanceScenario({ stages: 8, layersPerStage: 12, microbatches: 32, slowStage: 3, slowFactor: 1.5, ...over });

describe('decideRebalance', () => {
  it('moves layers off a rank 1.5x slower: within 1.05x of a healthy job scaled to the remaining compute, far better than re-planning alone', () => {
    const input = job();
    const out = decideRebalance(input, CONFIG, CONTROL);
    const healthyInput = { ...input.control, fMs: new Array(8).fill(12), bMs: new Array(8).fill(12), wMs: new Array(8).fill(9.6) };
    const healthyMs = predictMs(healthyInput, initialPipelines(healthyInput), replicaDelays(healthyInput).now);
    const scaledMs = (healthyMs * 8) / (7 + 1 / 1.5);
    expect(out.take).toBe(true);
    expect(out.split).toEqual([12, 13, 13, 8, 13, 13, 12, 12]);
    expect(out.moves.map((m) => `${m.firstLayer}-${m.lastLayer}:${m.fromStage}>${m.toStage}`)).toEqual(['24-24:2>1', '36-37:3>2', '46-47:3>4', '59-59:4>5']);
    expect(out.predictedNewMs! + out.amortisedMoveMs).toBeLessThan(1.05 * scaledMs);
    expect(out.predictedNewMs!).toBeLessThan(0.8 * out.predictedReplanMs);
    expect(out.reason).toMatch(/^re-balanced: split \[12,13,13,8,13,13,12,12\] predicted 1228\.1 ms/);
    expect(out.pipelines![0].schedule).toHaveLength(8);
  });

  it('declines when the handoff does not pay back within the straggler, naming the numbers', () => {
    const out = decideRebalance(job({ expectedIterations: 2 }), { ...CONFIG, handoffGBps: 1 }, CONTROL);
    expect(out.take).toBe(false);
    expect(out.reason).toMatch(/^declined: split .* over an expected 2 iterations\) against re-planning alone on \[12,12,12,12,12,12,12,12\] .* below rebalance.minGain 5.0%$/);
  });

  it('keeps the split of a healthy job, and says why when re-balancing is off', () => {
    expect(decideRebalance(job({ slowFactor: 1 }), CONFIG, CONTROL)).toMatchObject({ take: false, split: null, reason: 'the split in force [12,12,12,12,12,12,12,12] is the best for the measured speeds' });
    const off = decideRebalance(job(), { ...CONFIG, enabled: false }, CONTROL);
    expect(off.take).toBe(false);
    expect(off.reason).toMatch(/^re-balancing off \(rebalance.enabled\)/);
  });

  it('moves the layers back once the rank has healed, when that pays over the healthy spell', () => {
    const healed = { ...job({ slowFactor: 1 }), split: [12, 13, 13, 8, 13, 13, 12, 12], expectedIterations: 1000 };
    const back = decideRebalance(healed, CONFIG, CONTROL);
    expect(back.take).toBe(true);
    expect(back.split).toEqual([12, 12, 12, 12, 12, 12, 12, 12]);
    // Over a 20-iteration healthy spell the 12 GB do not pay back 5%: stays.
    expect(decideRebalance({ ...healed, expectedIterations: 20 }, CONFIG, CONTROL).take).toBe(false);
  });

  it('keeps every device within memory: full neighbours leave the slow rank its layers', () => {
    // 12 layers of 10 GB state fit in 130 GB with up to 8 microbatches of 1.2 GB in flight; 13 layers (130 GB of state alone) fit nowhere.
    const out = decideRebalance(job({ stateBytes: 10e9, deviceBytes: 130e9 }), CONFIG, CONTROL);
    expect(out).toMatchObject({ take: false, split: null, reason: 'the split in force [12,12,12,12,12,12,12,12] is the best for the measured speeds' });
    // With 131.5 GB the last stage (1 microbatch in flight) can take a 13th layer: the slow stage gives it one.
    const roomier = decideRebalance(job({ stateBytes: 10e9, deviceBytes: 131.5e9 }), { ...CONFIG, minGain: 0 }, CONTROL);
    expect(roomier.split).toEqual([12, 12, 12, 11, 12, 12, 12, 13]);
  });
});

describe('decideRebalance plans each split as the control step would', () => {
  // Link 2 runs 6 ms over its baseline on the newest samples without straggling (noise): the planner
  // would add slackness for it, the control step keeps the initial plan of a job with no straggler.
  const noisy = () => {
    const input = job();
    return { ...input, control: { ...input.control, links: input.control.links.map((l) => (l.link === 2 ? { ...l, extraMs: 6 } : l)) } };
  };
  /** The control input of the job once it runs `split` with `pipelines` (the scenario's memory arithmetic: 80 GB, 2 GB state and 0.1 GB activations per layer). */
  const runningSplit = (input: ReturnType<typeof noisy>, split: number[], times: { fMs: number[]; bMs: number[]; wMs: number[] }, pipelines: PipelineGroupPlan[]): JobControlInput => {
    const caps = split.map((layers) => Math.max(1, Math.min(32, Math.floor((80e9 - layers * 2e9) / (layers * 1e8)))));
    return { ...input.control, ...times, deviceCaps: caps, hostCaps: caps, current: { pipelines, delegation: [] } };
  };

  it('with no link straggling, the new split runs its initial plan: no recovery follows the re-balance', () => {
    const input = noisy();
    const out = decideRebalance(input, CONFIG, CONTROL);
    expect(out.take).toBe(true);
    const after = runningSplit(input, out.split!, out.stageTimes!, out.pipelines!);
    expect(out.pipelines).toEqual(initialPipelines(after));
    expect(decideControl(after, CONTROL).decision).toBeNull();
  });

  it('twin: the planner\'s own plan for the same split is undone by a recovery at the next control step', () => {
    const input = noisy();
    const out = decideRebalance(input, CONFIG, CONTROL);
    const base = runningSplit(input, out.split!, out.stageTimes!, []);
    const worst = replicaDelays(base).now[0];
    const model = modelOf(base, worst);
    const planned = planPipeline(model, planRequestFor(model, base, CONTROL));
    const twin = runningSplit(input, out.split!, out.stageTimes!, [{ dpReplicas: [0], warmup: planned.warmup, schedule: planned.run.order }]);
    expect(decideControl(twin, CONTROL).decision?.kind).toBe('recovery');
  });
});
