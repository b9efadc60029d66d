import { ShapeValue } from '../corpus/ground-truth';
import { ScenarioRun, targetKeys } from './run-scenario';

const DAY_MS = 86_400_000;


/** Detection and decision quality of one class of scenarios (bench/results/detection.json). */
export interface ClassScore {
  class: string;
  scenarios: number;
  labels: number;
  worthActing: number;
  /** Flagged straggler episodes that match a labeled straggler, over all flagged episodes (null: none flagged). */
  precision: number | null;
  /** Worth-acting labels detected, over worth-acting labels (null: none). */
  recall: number | null;
  /** Iterations from a straggler becoming detectable (StragglerLabel.detectableFrom) to its detection, 1 = on that iteration's report; every straggler flagged, worth acting on or not. */
  detectMedian: number | null;
  detectP95: number | null;
  /** Same, by size: delays >= 20 ms, and 5-20 ms. */
  detectMedianAtLeast20ms: number | null;
  detectMedianAtLeast5ms: number | null;
  /**
   * Iterations from a >= 20 ms pipeline or ring straggler's onset (its label's start, not when it
   * became detectable) to the first iteration run on a plan made for it: detection, the cost gate
   * and the switch's lead together (null: none such labeled).
   */
  inForceMedian: number | null;
  inForceP95: number | null;
  /** Such stragglers never answered by a plan. */
  inForceMissed: number;
  /** Iterations from a lasting straggler's healing (its label's end) to the first iteration back on the initial plan, delegation off; null: none healed in time to see. */
  backMedian: number | null;
  backMax: number | null;
  /** Healed stragglers not followed by a return within the run. */
  backMissed: number;
  switches: number;
  falseSwitches: number;
  falseRemaps: number;
  /** Pipeline time of the healthy scenarios among the runs (no noise: iterations as the job's plans run them), days. */
  jobDays: number;
  /** False switches on healthy scenarios per job-day of their pipeline time (null: no healthy scenario in the set). */
  falseSwitchesPerJobDay: number | null;
  falseRemapsPerJobDay: number | null;
  /** Pipeline time of the daemon over the label oracle's, minus 1. */
  lossVsOracle: number;
  declined: number;
}

function quantile(xs: number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** Iterations after a straggler's end in which a detection or a switch is still its own (leave hysteresis, lead, the re-plan interval). */
export const GRACE_ITERATIONS = 30;
/** Switches one straggler may bring (the reaction, its refinement, one update as it changes) before more count as chasing it. */
const SWITCHES_PER_LABEL = 3;

export function scoreRuns(cls: string, runs: ScenarioRun[], leaveAfter: number): ClassScore {
  let episodes = 0;
  let trueEpisodes = 0;
  let labels = 0;
  let worth = 0;
  let detected = 0;
  const delays: number[] = [];
  const big: number[] = [];
  const mid: number[] = [];
  let switches = 0;
  let falseSwitches = 0;
  let falseRemaps = 0;
  let healthyFalseSwitches = 0;
  let healthyFalseRemaps = 0;
  let healthyMs = 0;
  const inForce: number[] = [];
  let inForceMissed = 0;
  const back: number[] = [];
  let backMissed = 0;
  let daemonMs = 0;
  let oracleMs = 0;
  let declined = 0;
  for (const run of runs) {
    const grace = leaveAfter + GRACE_ITERATIONS;
    const healthyRun = run.scenario.class.startsWith('healthy');
    const falseBefore = falseSwitches;
    const remapsBefore = falseRemaps;
    if (healthyRun) healthyMs += run.daemonMs;
    daemonMs += run.daemonMs;
    oracleMs += run.oracleMs;
    declined += run.declined;
    const matchers = run.labels.map((l) => targetKeys(l.target));
    for (const e of run.episodes) {
      episodes++;
      if (run.labels.some((l, i) => matchers[i](e.key) && e.end >= l.start && e.start <= l.end + grace)) trueEpisodes++;
    }
    run.labels.forEach((l, i) => {
      labels++;
      const hit = run.episodes.filter((e) => matchers[i](e.key) && e.end >= l.start && e.start <= l.end + grace).sort((a, b) => a.start - b.start)[0];
      if (l.worthActing) {
        worth++;
        if (hit) detected++;
      }
      // Time to detect, over every straggler flagged once it could be (worth acting on or not: detection does not know).
      if (!hit || !(hit.start >= l.detectableFrom)) return;
      const ttd = hit.start - l.detectableFrom + 1;
      delays.push(ttd);
      if (l.shape === 'nic-failure' || (l.shape === 'constant' && l.magnitude >= 20)) big.push(ttd);
      else if (l.shape === 'constant' && l.magnitude >= 5) mid.push(ttd);
    });
    // Labels line up with the scenario's stragglers (labelScenario); a trace's value says when it is between spells.
    const values = run.scenario.stragglers.map((spec) => new ShapeValue(spec));
    const slowAt = (i: number, t: number) => {
      const l = run.labels[i];
      return l.shape !== 'steps' && l.shape !== 'dynamic' ? true : values[i] !== undefined && values[i].at(t - l.start) > 0;
    };
    const perLabel = new Map<number, number>();
    for (const s of run.switches) {
      if (s.kind === 'initial') continue;
      switches++;
      const t = s.iteration;
      const active = run.labels.map((l, i) => ({ l, i })).filter(({ l }) => l.worthActing && t >= l.start && t <= l.end + grace);
      if (s.kind === 'recovery') {
        // A recovery answers a straggler that ended, however late; it is false while one worth acting on is still slow, or before any began.
        // A trace between its spells (value 0) is not slow: going back to the healthy plan there is right.
        const premature = run.labels.some((l, i) => l.worthActing && t >= l.start && t <= l.end && l.shape !== 'periodic' && slowAt(i, t));
        if (premature || !run.labels.some((l) => l.start <= t)) falseSwitches++;
        continue;
      }
      if (active.length === 0) {
        falseSwitches++;
        if (s.kind === 'remap') falseRemaps++;
        continue;
      }
      // A straggler whose delay keeps changing (a ramp, the dynamic and superpod traces) is rightly re-planned as it changes.
      if (active.some(({ l }) => l.shape === 'ramp' || l.shape === 'dynamic' || l.shape === 'steps')) continue;
      const periodic = active.some(({ l }) => l.shape === 'periodic');
      const i = active[0].i;
      const count = (perLabel.get(i) ?? 0) + 1;
      perLabel.set(i, count);
      const l = active[0].l;
      const spells = periodic ? Math.max(1, Math.round((l.end - l.start + 1) / 250)) : 1;
      if (count > SWITCHES_PER_LABEL * spells) falseSwitches++;
    }
    if (healthyRun) {
      healthyFalseSwitches += falseSwitches - falseBefore;
      healthyFalseRemaps += falseRemaps - remapsBefore;
    }
    // Reaction from onset, and the return after healing, of lasting stragglers worth acting on.
    for (const l of run.labels) {
      if (!l.worthActing || l.shape !== 'constant' || l.target.kind === 'compute') continue;
      if (l.magnitude >= 20) {
        const answer = run.switches.find((s) => s.kind !== 'initial' && s.kind !== 'recovery' && s.iteration >= l.start && s.iteration <= l.end);
        if (answer) inForce.push(answer.effectiveIteration - l.start);
        else inForceMissed++;
      }
      if (l.end + GRACE_ITERATIONS + leaveAfter < run.scenario.iterations) {
        const home = run.switches.find((s) => s.kind === 'recovery' && s.iteration > l.end);
        if (home) back.push(home.effectiveIteration - l.end - 1);
        else backMissed++;
      }
    }
  }
  const jobDays = healthyMs / DAY_MS;
  return {
    class: cls,
    scenarios: runs.length,
    labels,
    worthActing: worth,
    precision: episodes > 0 ? trueEpisodes / episodes : null,
    recall: worth > 0 ? detected / worth : null,
    detectMedian: quantile(delays, 0.5),
    detectP95: quantile(delays, 0.95),
    detectMedianAtLeast20ms: quantile(big, 0.5),
    detectMedianAtLeast5ms: quantile(mid, 0.5),
    inForceMedian: quantile(inForce, 0.5),
    inForceP95: quantile(inForce, 0.95),
    inForceMissed,
    backMedian: quantile(back, 0.5),
    backMax: quantile(back, 1),
    backMissed,
    switches,
    falseSwitches,
    falseRemaps,
    jobDays,
    falseSwitchesPerJobDay: jobDays > 0 ? healthyFalseSwitches / jobDays : null,
    falseRemapsPerJobDay: jobDays > 0 ? healthyFalseRemaps / jobDays : null,
    lossVsOracle: oracleMs > 0 ? daemonMs / oracleMs - 1 : 0,
    declined,
  };
}
