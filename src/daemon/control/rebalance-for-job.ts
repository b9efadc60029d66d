import { ControlConfig } from '../../core/control/control-config.type';
import { ControlDecision } from '../../core/control/control-decision.type';
import { JobControlInput } from '../../core/control/control-input.type';
import { DecisionRecord } from '../../core/control/decision-record.type';
import { computeKey } from '../../core/control/straggler-key';
import { DetectionSnapshot } from '../../core/detect/job-detector';
import { decideRebalance } from '../../core/rebalance/decide-rebalance.planner';
import { switchCostConfigOf } from '../config/control-config-of';
import { PipemorphConfig } from '../config/pipemorph-config.type';
import { rebalanceConfigOf } from '../config/rebalance-config-of';
import { JobRuntime } from '../jobs/job-runtime';
import { switchLead } from '../publish/switch-lead';

/** Per job: what the last re-balance decision was made on (split in force, speeds to 0.05, slow ranks, expected duration to a factor of 2, switching paused), so a step that sees the same decides nothing. */
const decidedOn = new WeakMap<JobRuntime, string>();

const finiteOrNull = (x: number): number | null => (Number.isFinite(x) ? x : null);

/**
 * Per stage speed, measured over declared work: a stage with a slow rank, or whose speed stands out
 * of the others' by `standOut` (detection.computeSlowRatio: a rank whose flag noise let go while it
 * is still slow), at its own (its slowest replica's); every other stage at the job's common pace (the
 * median of theirs; 1 when none is measured). A healthy stage's measured time is its slowest
 * replica's window median, which moves by several per cent with noise (the maximum of noisy
 * medians): priced as measured, each move re-ranked the splits and one compute straggler on 15%
 * compute noise was re-balanced four times in 40 iterations (bench:outside). What the declared times
 * get wrong in common (a slower GPU than profiled) is kept; a healthy stage's noise is not a reason
 * to move layers.
 */
export function paceOf(measured: readonly number[], declared: readonly number[], slowStages: ReadonlySet<number>, standOut: number): number[] {
  const own = measured.map((m, s) => (Number.isFinite(m) && declared[s] > 0 ? m / declared[s] : Number.NaN));
  const healthy = own.filter((x, s) => !slowStages.has(s) && Number.isFinite(x)).sort((a, b) => a - b);
  const n = healthy.length;
  const common = n === 0 ? 1 : n % 2 ? healthy[n >> 1] : (healthy[n / 2 - 1] + healthy[n / 2]) / 2;
  return own.map((x, s) => (Number.isFinite(x) && (slowStages.has(s) || x > standOut * common) ? x : common));
}

/**
 * The re-balance step of a job that declared its `layers` (docs/rebalancing.md), after the
 * control step took no other switch: when a compute straggler is confirmed, or the split in force
 * is not the registered one (a rank may have healed), the core's decideRebalance with per-stage
 * speeds measured against the declared layer times (the slowest replica's F+B+W over the sum of
 * its layers' under the split in force: what survives a re-split, unlike a rank's learned
 * baseline; healthy stages at the job's common pace, paceOf), amortising the handoff over the
 * straggler's expected remaining iterations (StragglerHistory, key c:<rank>; a healthy spell's when
 * moving back), and taken only when its gain over those iterations after its lead beats the
 * handoff and the switch (control.switchCostMs, with cost-aware switching; the job's overrides of
 * them when it has any). Logged in the job's
 * decision log, taken or declined with why; switching paused for the job logs it as paused. Null
 * when there is nothing to decide (no layers, no slow rank and the registered split in force, or
 * the same inputs as the last decision).
 */
export function rebalanceForJob(
  job: JobRuntime,
  input: JobControlInput,
  snapshot: DetectionSnapshot,
  config: PipemorphConfig,
  control: ControlConfig,
  staticMs: number,
  now: number,
): { take: boolean; decision: ControlDecision | null; record: DecisionRecord } | null {
  const registration = job.spec.registration;
  const layers = registration.layers;
  if (!layers || !job.committed) return null;
  const S = job.spec.stages;
  const split = job.splits.inForce ?? layers.perStage;
  if (split.length !== S) return null;
  const slow = snapshot.compute.filter((c) => c.straggler);
  const moved = split.join(',') !== layers.perStage.join(',');
  if (slow.length === 0 && !moved) return null;

  // The detector's compute times are as under the registered split (JobRuntime.observeReport): compared with its declared work.
  const declared = new Array<number>(S).fill(0);
  for (let s = 0, first = 0; s < S; first += layers.perStage[s], s++) {
    for (let l = first; l < first + layers.perStage[s]; l++) declared[s] += layers.fMs[l] + layers.bMs[l] + layers.wMs[l];
  }
  const measured = new Array<number>(S).fill(Number.NaN);
  for (const c of snapshot.compute) {
    const total = c.fMs + c.bMs + c.wMs;
    if (Number.isFinite(total) && !(total <= measured[c.pp])) measured[c.pp] = total;
  }
  const speed = paceOf(measured, declared, new Set(slow.map((c) => c.pp)), config.detection.computeSlowRatio);
  const iteration = job.progress.maxIteration;
  const expected = slow.length > 0 ? Math.max(...slow.map((c) => job.stragglers.expectedRemaining(computeKey(c.rank), iteration))) : job.stragglers.expectedHealthyNow(iteration);
  // Decided again when the expected duration doubles or halves (a straggler that outlives its history) or switching is resumed.
  const horizon = Number.isFinite(expected) && expected > 0 ? Math.round(Math.log2(expected)) : String(expected);
  const key = `${split.join(',')}|${speed.map((x) => Math.round(x * 20) / 20).join(',')}|${slow.map((c) => c.rank).join(',')}|${horizon}|${job.overrides.pauseSwitching}`;
  if (decidedOn.get(job) === key) return null;
  decidedOn.set(job, key);
  const deviceBytes = Array.from({ length: S }, (_, s) => {
    let state = 0;
    const first = layers.perStage.slice(0, s).reduce((a, b) => a + b, 0);
    for (let l = first; l < first + layers.perStage[s]; l++) state += layers.stateBytes[l];
    return registration.memory.deviceBytes[s] + state;
  });
  const out = decideRebalance(
    { control: input, layers, split, speed, deviceBytes, hostBytes: registration.memory.hostBytes, expectedIterations: expected },
    rebalanceConfigOf(config),
    control,
  );
  const decision: ControlDecision | null =
    out.split && out.pipelines && out.predictedNewMs !== null
      ? {
          kind: 'rebalance',
          pipelines: out.pipelines,
          delegation: input.current?.delegation ?? [],
          links: [],
          predictedPreviousMs: Number.isFinite(out.predictedCurrentMs) ? out.predictedCurrentMs : null,
          predictedNewMs: out.predictedNewMs,
          predictedStaticMs: staticMs,
          reschedule: true,
          detail: out.reason,
          layers: { perStage: out.split, moves: out.moves },
        }
      : null;
  const lead = decision ? 1 + switchLead(job, decision, config) : 0;
  const gain = out.predictedNewMs === null ? 0 : out.predictedReplanMs - out.predictedNewMs;
  // A re-balance is a switch like any other: it must pay back the handoff and the switch within the
  // straggler's expected remaining iterations after its lead, or it is declined (cost-aware switching).
  const benefitMs = gain > 0 ? gain * Math.max(0, expected - lead) : 0;
  // The job's own cost knobs when its overrides set any (as judgeForJob prices its other switches).
  const knobs = job.overrides.effective?.switchCost ?? switchCostConfigOf(config);
  const costMs = out.moveMs + (knobs.costAware ? knobs.switchCostMs : 0);
  const pays = !knobs.costAware || benefitMs > costMs;
  const reason = out.take && !pays
    ? `declined: ${out.reason.replace(/^re-balanced: /, '')}, but ${gain.toFixed(1)} ms/iteration over an expected ${Number.isFinite(expected) ? expected.toFixed(0) : expected} iterations after ${lead} lead iterations (${benefitMs.toFixed(0)} ms) does not beat the handoff and the switch (${costMs.toFixed(0)} ms)`
    : out.reason;
  const paused = out.take && pays && job.overrides.pauseSwitching;
  const take = out.take && pays && !paused && decision !== null;
  const record: DecisionRecord = {
    at: now,
    iteration,
    kind: 'rebalance',
    verdict: paused ? 'paused' : take ? 'taken' : 'declined',
    reason: paused ? `switching paused for the job (would have been: ${out.reason})` : reason,
    evidence: { links: [], dataParallelLinks: [] },
    prediction: { currentMs: finiteOrNull(out.predictedCurrentMs), newMs: out.predictedNewMs ?? out.predictedReplanMs, staticMs },
    cost: decision
      ? { gainMsPerIteration: gain, expectedIterations: expected, leadIterations: lead, uncertainty: 0, benefitMs, costMs }
      : null,
    scheduleVersion: null,
    overrides: job.overrides.active,
    repeats: 1,
    firstIteration: iteration,
    rebalance: {
      slowRanks: slow.map((c) => ({ rank: c.rank, pp: c.pp, ratio: finiteOrNull(c.ratio) })),
      speed: out.speed,
      currentSplit: out.currentSplit,
      split: out.split,
      moveBytes: out.moveBytes,
      moveMs: out.moveMs,
      expectedIterations: finiteOrNull(expected),
      replanMs: out.predictedReplanMs,
      newMs: out.predictedNewMs,
      exact: out.search.exact,
    },
  };
  job.decisions.record(record);
  return { take, decision, record };
}

/** A taken recovery that a re-balance in the same step replaces: logged as declined, saying why. */
export function supersede(record: DecisionRecord, recovery: ControlDecision): void {
  record.verdict = 'declined';
  record.reason = `superseded by a re-balance in the same step, which also returns to ${recovery.delegation.length === 0 ? 'delegation off' : 'the delegation of the recovery'} (was: ${record.reason})`;
}
