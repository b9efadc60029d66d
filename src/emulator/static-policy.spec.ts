import { initialPipelines } from '../core/control/pipeline-plans';
import { warmupOf } from '../core/pipeline/schedule';
import { constantDelay } from './delay/constant-delay';
import { DelayModel } from './delay/delay-model.type';
import { DEFAULT_EMULATION, EmulatedJob, IterationResult } from './emulated-job';
import { controlInputOf } from './control-input-of';
import { runOraclePolicy } from './oracle-policy';
import { uniform4 } from './scenarios';
import { runStaticPolicy } from './static-policy';

const noJitter = { ...DEFAULT_EMULATION, jitter: 0 };
const mean = (rs: IterationResult[], skip = 2) => rs.slice(skip).reduce((a, r) => a + r.iterationMs, 0) / (rs.length - skip);
const slowJob = (delays: DelayModel = constantDelay({ 2: 30 })) => new EmulatedJob('x', uniform4(), 1, delays, noJitter);

describe('baselines get the daemon\'s inputs', () => {
  it('zb-static runs the schedule the daemon starts the job with, for the same device memory', () => {
    const memory = [8, 8, 8, 8];
    const daemonPlan = initialPipelines(controlInputOf(slowJob(), memory))[0];
    // The daemon's first plan for 8 activations of device memory, not one for the profile's unlimited memory.
    expect(warmupOf(daemonPlan.schedule)).toEqual([8, 5, 3, 1]);
    expect(initialPipelines(controlInputOf(slowJob()))[0].warmup).toEqual([12, 8, 4, 1]);
    const limited = mean(runStaticPolicy(slowJob(), 'zb-static', 6, { deviceActivations: memory }));
    const replay = slowJob();
    const byHand = Array.from({ length: 6 }, (_, i) => replay.runIteration(i, [{ schedule: daemonPlan.schedule, delegation: new Map() }], [0, 0, 0, 0]));
    expect(limited).toBe(mean(byHand));
  });
});

describe('the oracle controller', () => {
  it('is at least as fast as every baseline under a constant straggler, and as the healthy plan on a healthy job', () => {
    const memory = { deviceActivations: [8, 8, 8, 8] };
    const oracle = mean(runOraclePolicy(slowJob(), 6, memory));
    for (const policy of ['zb-static', '1f1b-static', 'delegation-only'] as const) expect(oracle).toBeLessThanOrEqual(mean(runStaticPolicy(slowJob(), policy, 6, memory)) + 1e-9);
    const healthy = () => slowJob(constantDelay({}));
    expect(mean(runOraclePolicy(healthy(), 4, memory))).toBeCloseTo(mean(runStaticPolicy(healthy(), 'zb-static', 4, memory)), 9);
  });

  it('is only as good as the planners it may use: with none it is delegation alone, with them faster (bench:oracle-gap)', () => {
    const memory = { deviceActivations: [8, 8, 8, 8] };
    const planless = mean(runOraclePolicy(slowJob(), 6, { ...memory, planners: [] }));
    expect(planless).toBeCloseTo(mean(runStaticPolicy(slowJob(), 'delegation-only', 6, memory)), 9);
    const adaptiveOnly = mean(runOraclePolicy(slowJob(), 6, { ...memory, planners: ['adaptive'] }));
    expect(adaptiveOnly).toBeLessThan(planless);
    expect(mean(runOraclePolicy(slowJob(), 6, memory))).toBeLessThanOrEqual(adaptiveOnly + 1e-9);
  });

  it('is only as good as what it knows: an oracle that reads no delay does worse than delegation alone', () => {
    const memory = { deviceActivations: [8, 8, 8, 8] };
    const truth = constantDelay({ 2: 30 });
    // The emulated ranks still see the delay; only the oracle's reads between iterations are blind.
    const reads: number[] = [];
    const honest = mean(runOraclePolicy(slowJob(), 6, memory));
    const fooled = mean(runOraclePolicy(withBlindReads(slowJob(truth), reads), 6, memory));
    expect(reads.length).toBeGreaterThan(0);
    expect(fooled).toBeGreaterThan(mean(runStaticPolicy(slowJob(), 'delegation-only', 6, memory)));
    expect(honest).toBeLessThan(fooled);
  });
});

/** The same job, but every delay the oracle reads between iterations is 0 (the iterations themselves still run slow). */
function withBlindReads(job: EmulatedJob, reads: number[]): EmulatedJob {
  const real = job.delays;
  let running = false;
  const run = job.runIteration.bind(job);
  job.runIteration = (...args: Parameters<EmulatedJob['runIteration']>) => {
    running = true;
    try {
      return run(...args);
    } finally {
      running = false;
    }
  };
  Object.defineProperty(job, 'delays', {
    value: {
      name: 'blind',
      delayMs: (link: number, t: number, i: number) => {
        if (running) return real.delayMs(link, t, i);
        reads.push(link);
        return 0;
      },
      nicFailed: (link: number, i: number) => real.nicFailed(link, i),
    } satisfies DelayModel,
  });
  return job;
}
