import { ControlConfig } from '../core/control/control-config.type';
import { JobControlInput, PipelineLinkView } from '../core/control/control-input.type';
import { decideControl } from '../core/control/job-controller';
import { initialPipelines } from '../core/control/pipeline-plans';
import { MilpSolver } from '../core/planner/optimal-planner';
import { CorpusScenario, StragglerLabel, StragglerSpec, StragglerTarget } from '../corpus/corpus.type';
import { GroundTruth, pairKey, ShapeValue, TruthState } from '../corpus/ground-truth';
import { NoiseSource } from '../corpus/noise';
import { allReduceOf, initialLayout, JobTelemetry, Layout, PlanInForce, registrationOf } from '../corpus/telemetry';
import { RankReport, Registration } from '../protocol/protocol-v1.type';
import { DecisionRecord } from '../core/control/decision-record.type';
import { PipemorphConfig } from '../daemon/config/pipemorph-config.type';
import { controlConfigOf } from '../daemon/config/control-config-of';
import { ReplayJob, ReplaySwitch } from './replay-job';

/** Where a replayed job's clock starts (2026-01-01T00:00:00Z). */
export const REPLAY_EPOCH_MS = Date.UTC(2026, 0, 1);

/** A flagged straggler of the detector: key (StragglerHistory's names) over [start, end]. */
export interface DetectedEpisode {
  key: string;
  start: number;
  end: number;
}

export interface SwitchEvent {
  iteration: number;
  effectiveIteration: number;
  kind: string;
}

export interface ScenarioRun {
  scenario: CorpusScenario;
  labels: StragglerLabel[];
  episodes: DetectedEpisode[];
  switches: SwitchEvent[];
  /** The newest decisions judged (the job's decision log) and how many were declined in all. */
  records: DecisionRecord[];
  declined: number;
  /** Pipeline time of the job (iterations, switches, migrations), ms; noise left out (the same for every policy). */
  daemonMs: number;
  oracleMs: number;
  oracleSwitches: number;
  /** Simulated wall time including noise, ms. */
  wallMs: number;
  steps: number;
}

/** The replayed-time signature of the pairs/ranks a target touches (for matching detections). */
export function targetKeys(target: StragglerTarget): (key: string) => boolean {
  if (target.kind === 'pipeline') return (k) => k === `p:${target.dp}:${target.link}`;
  if (target.kind === 'compute') return (k) => k === `c:${target.rank}`;
  // After a re-map the slow pair may sit on a pipeline link: any pipeline link counts for it.
  const { a, b } = target;
  return (k) => k === `d:${a}>${b}` || k === `d:${b}>${a}` || k.startsWith('p:');
}

/** First iteration `spec` is at least `thresholdMs` (NaN: never); NIC failures and slowdowns from their start. */
function detectableFrom(spec: StragglerSpec, thresholdMs: number): number {
  if (spec.shape.type === 'nic-failure' || spec.shape.type === 'slowdown') return spec.start;
  const v = new ShapeValue(spec);
  for (let k = 0; k <= spec.end - spec.start; k++) if (v.at(k) >= thresholdMs) return spec.start + k;
  return Number.NaN;
}

function spanOf(spec: StragglerSpec): { magnitude: number; duty: number } {
  const s = spec.shape;
  const v = new ShapeValue(spec);
  const n = spec.end - spec.start + 1;
  if (s.type === 'nic-failure') return { magnitude: Infinity, duty: 1 };
  if (s.type === 'slowdown') return { magnitude: s.factor, duty: 1 };
  let sum = 0;
  let on = 0;
  for (let k = 0; k < n; k++) {
    const x = v.at(k);
    sum += x;
    if (x > 0) on++;
  }
  return { magnitude: on > 0 ? sum / on : 0, duty: on / n };
}

/** The truth input an oracle plans with: every link at its real delay, flagged when a worth-acting label is on it. */
function oracleInput(sc: CorpusScenario, layout: Layout, truth: TruthState, worthPairs: Set<number>, current: JobControlInput['current'], remapAllowed: boolean): JobControlInput {
  const { stages: S, dp: D, fMs, bMs, wMs, linkMs, deviceActivations } = sc.shape;
  const n = S * D;
  const links: PipelineLinkView[] = [];
  for (let d = 0; d < D; d++) {
    for (let l = 0; l < S - 1; l++) {
      const a = layout.rankAt[d * S + l];
      const b = layout.rankAt[d * S + l + 1];
      const k = pairKey(a, b, n);
      const extraMs = truth.pairExtraMs.get(k) ?? 0;
      const failed = truth.failedPairs.has(k);
      links.push({ dp: d, link: l, upRank: a, downRank: b, baselineMs: linkMs, extraMs, straggler: (extraMs > 0 || failed) && worthPairs.has(k), nicFailure: failed && worthPairs.has(k) });
    }
  }
  const worst = (xs: number[]) => xs.map((x, p) => x * Math.max(1, ...Array.from({ length: D }, (_, d) => truth.computeFactor.get(layout.rankAt[d * S + p]) ?? 1)));
  const dataParallelLinks = [];
  for (let p = 0; p < S && D > 1; p++) {
    const ring = layout.rings[p];
    for (let i = 0; i < ring.length; i++) {
      const from = layout.rankAt[ring[i] * S + p];
      const to = layout.rankAt[ring[(i + 1) % ring.length] * S + p];
      const k = pairKey(from, to, n);
      const extraMs = truth.pairExtraMs.get(k) ?? 0;
      dataParallelLinks.push({ fromRank: from, toRank: to, extraMs, straggler: extraMs > 0 && worthPairs.has(k) });
    }
  }
  const allReduce = allReduceOf(sc);
  return {
    stages: S, microbatches: sc.shape.microbatches, dpSize: D, fMs: worst(fMs), bMs: worst(bMs), wMs: worst(wMs),
    deviceCaps: new Array(S).fill(deviceActivations), hostCaps: new Array(S).fill(sc.shape.microbatches), links, current,
    ...(current ? { topology: { rankAt: layout.rankAt, rings: layout.rings, localityOf: new Map((sc.localities ?? []).map((l, r) => [r, l])), allReduce, dataParallelLinks, remapAllowed } } : {}),
  };
}

function planOf(version: number, d: { pipelines: PlanInForce['pipelines']; delegation: PlanInForce['delegation'] }): PlanInForce {
  return { version, pipelines: d.pipelines, delegation: d.delegation };
}

/**
 * The oracle: knows the labels, acts on every worth-acting straggler the iteration it starts and
 * goes back the iteration it ends (no detection, no lead), with the best planner the daemon has
 * (its refinement policy); it pays the same switch and migration costs.
 */
function runOracle(sc: CorpusScenario, telemetry: JobTelemetry, truth: GroundTruth, labels: StragglerLabel[], config: PipemorphConfig, solver?: MilpSolver): { ms: number; switches: number } {
  const control: ControlConfig = { ...controlConfigOf(config), planner: config.control.refinePlanner === 'none' ? config.control.planner : config.control.refinePlanner };
  const S = sc.shape.stages;
  const n = S * sc.shape.dp;
  let layout = initialLayout(sc);
  const first = oracleInput(sc, layout, truth.at(0), new Set(), null, false);
  let plan = planOf(0, { pipelines: initialPipelines(first), delegation: [] });
  let ms = 0;
  let switches = 0;
  let signature = '';
  for (let t = 0; t < sc.iterations; t++) {
    const state = truth.at(t);
    const worth = new Set<number>();
    for (const l of labels) {
      if (!l.worthActing || t < l.start || t > l.end) continue;
      const tg = l.target;
      if (tg.kind === 'pipeline') worth.add(pairKey(tg.dp * S + tg.link, tg.dp * S + tg.link + 1, n));
      else if (tg.kind === 'node-pair') worth.add(pairKey(tg.a, tg.b, n));
    }
    const sig = `${state.key}#${[...worth].join(',')}`;
    if (sig !== signature) {
      signature = sig;
      const input = oracleInput(sc, layout, state, worth, { pipelines: plan.pipelines, delegation: plan.delegation }, true);
      const d = decideControl(input, control, solver).decision;
      if (d) {
        plan = planOf(plan.version + 1, d);
        ms += config.control.switchCostMs;
        switches++;
        if (d.topology) {
          layout = { rankAt: d.topology.rankAt, rings: d.topology.rings };
          ms += config.remap.migrationMsPerNode;
        }
      }
    }
    ms += telemetry.iterationMs(plan, layout, state);
  }
  return { ms, switches };
}

/** Labels of a scenario: each straggler with what acting on it is worth, priced on the ground truth alone. */
export function labelScenario(sc: CorpusScenario, telemetry: JobTelemetry, config: PipemorphConfig, solver?: MilpSolver): StragglerLabel[] {
  const control: ControlConfig = { ...controlConfigOf(config), planner: config.control.refinePlanner === 'none' ? config.control.planner : config.control.refinePlanner };
  const layout = initialLayout(sc);
  const lead = 1 + config.handshake.minLeadIterations;
  return sc.stragglers.map((spec) => {
    const { magnitude, duty } = spanOf(spec);
    const probe: StragglerSpec = {
      ...spec, start: 0, end: 0,
      shape: spec.shape.type === 'nic-failure' || spec.shape.type === 'slowdown' ? spec.shape : { type: 'constant', ms: magnitude },
    };
    const only = new GroundTruth({ ...sc, stragglers: [] }, [probe]).at(0);
    const healthy = new GroundTruth({ ...sc, stragglers: [] }).at(0);
    const worth = new Set<number>([...only.pairExtraMs.keys(), ...only.failedPairs]);
    const base = oracleInput(sc, layout, healthy, new Set(), null, false);
    const initial = planOf(0, { pipelines: initialPipelines(base), delegation: [] });
    const staticMs = telemetry.iterationMs(initial, layout, only);
    const input = oracleInput(sc, layout, only, worth, { pipelines: initial.pipelines, delegation: [] }, true);
    const d = decideControl(input, control, solver).decision;
    const adapted = d ? planOf(1, d) : initial;
    const adaptedLayout = d?.topology ? { rankAt: d.topology.rankAt, rings: d.topology.rings } : layout;
    const adaptedMs = telemetry.iterationMs(adapted, adaptedLayout, only);
    const duration = spec.end - spec.start + 1;
    const costMs = (d?.topology ? config.control.switchCostMs + config.remap.migrationMsPerNode : 2 * config.control.switchCostMs);
    const gainMs = Math.max(0, staticMs - adaptedMs) * duty * Math.max(0, duration - lead);
    return {
      target: spec.target, shape: spec.shape.type, start: spec.start, end: spec.end, magnitude: Number.isFinite(magnitude) ? magnitude : 0,
      detectableFrom: detectableFrom(spec, config.detection.delegationThresholdMs),
      staticMs, adaptedMs, gainMs, costMs, worthActing: spec.shape.type === 'nic-failure' || gainMs > costMs,
    };
  });
}

/** What the daemon's replayed control loop did on a scenario (runScenario adds labels and the oracle). */
export interface ScenarioReplay {
  episodes: DetectedEpisode[];
  switches: SwitchEvent[];
  /** The newest decisions judged (the job's decision log) and how many were declined in all. */
  records: DecisionRecord[];
  declined: number;
  daemonMs: number;
  wallMs: number;
  steps: number;
}

/** Receives what the ranks send, in order: the registration once, then each iteration's reports (`pipemorph corpus`). */
export interface ScenarioRecorder {
  registration(registration: Registration): void;
  reports(iteration: number, reports: RankReport[]): void;
}

/** The job id a scenario's job runs as (its registration and reports name it). */
export function scenarioJobId(sc: CorpusScenario): string {
  return `corpus-${sc.seed}`;
}

/**
 * One scenario's job through the daemon's replayed control loop: each iteration the ranks run the
 * schedule and layout the replay switched to (from its effective iteration), report, and the loop
 * decides. With `recorder`, what the ranks send (the registration, then every report with its
 * `sentAt`, the replayed clock) goes to it as well: a recording `pipemorph replay` takes back.
 */
export function replayScenario(sc: CorpusScenario, config: PipemorphConfig, solver?: MilpSolver, recorder?: ScenarioRecorder): ScenarioReplay {
  const jobId = scenarioJobId(sc);
  const telemetry = new JobTelemetry(sc, jobId, controlConfigOf(config).transport);
  const truth = new GroundTruth(sc);
  const ranks = Array.from({ length: sc.shape.stages * sc.shape.dp }, (_, r) => r);
  const registration = registrationOf(sc, jobId);
  recorder?.registration(registration);
  const replay = new ReplayJob(registration, config, solver);
  let layout = initialLayout(sc);
  const first = replay.endIteration(REPLAY_EPOCH_MS);
  if (!first) throw new Error(`${sc.name}: no initial plan`);
  let plan = planOf(first.version, first.decision);
  const noise = new NoiseSource(sc.noise, sc.seed, ranks);
  const pending: ReplaySwitch[] = [];
  const switches: SwitchEvent[] = [];
  const open = new Map<string, number>();
  const episodes: DetectedEpisode[] = [];
  let daemonMs = 0;
  let wallMs = 0;
  // The replayed clock reads like the daemon's (ms since the epoch): intervals count from a time long past.
  const at = (ms: number) => REPLAY_EPOCH_MS + ms;
  for (let t = 0; t < sc.iterations; t++) {
    while (pending.length > 0 && pending[0].effectiveIteration <= t) {
      const s = pending.shift()!;
      plan = planOf(s.version, s.decision);
      daemonMs += config.control.switchCostMs;
      if (s.decision.topology) {
        layout = { rankAt: s.decision.topology.rankAt, rings: s.decision.topology.rings };
        daemonMs += config.remap.migrationMsPerNode;
      }
    }
    const state = truth.at(t);
    const itMs = telemetry.iterationMs(plan, layout, state);
    const n = noise.iteration(t);
    daemonMs += itMs;
    wallMs += itMs + n.iterationExtraMs;
    const reports = telemetry.reports(t, plan, layout, state, itMs, noise, n);
    if (recorder) recorder.reports(t, reports.map((r) => ({ ...r, sentAt: at(wallMs) })));
    for (const r of reports) replay.observe(r, at(wallMs));
    const s = replay.endIteration(at(wallMs));
    if (s) {
      pending.push(s);
      switches.push({ iteration: t, effectiveIteration: s.effectiveIteration, kind: s.decision.kind });
    }
    // Detection episodes, read off the detector after every iteration.
    const flagged = new Set<string>();
    if (replay.job.detector.activeStragglerCount() > 0 || open.size > 0) {
      const snap = replay.job.detector.snapshot();
      for (const l of snap.pipelineLinks) if (l.straggler) flagged.add(`p:${l.dp}:${l.link}`);
      for (const l of snap.dataParallelLinks) if (l.straggler) flagged.add(`d:${l.fromRank}>${l.toRank}`);
      for (const c of snap.compute) if (c.straggler) flagged.add(`c:${c.rank}`);
    }
    for (const k of flagged) if (!open.has(k)) open.set(k, t);
    for (const [k, start] of open) {
      if (flagged.has(k)) continue;
      episodes.push({ key: k, start, end: t - 1 });
      open.delete(k);
    }
  }
  for (const [k, start] of open) episodes.push({ key: k, start, end: sc.iterations - 1 });
  return { episodes, switches, records: replay.records, declined: replay.job.decisions.countOf('declined'), daemonMs, wallMs, steps: replay.steps };
}

/** Runs one scenario through the daemon's replayed control loop and the oracle. */
export function runScenario(sc: CorpusScenario, config: PipemorphConfig, solver?: MilpSolver): ScenarioRun {
  // One JobTelemetry per plan sequence: its cache knows a plan by its version number, and the
  // labels, the daemon and the oracle each number their own plans from 0 or 1.
  const telemetry = () => new JobTelemetry(sc, scenarioJobId(sc), controlConfigOf(config).transport);
  const labels = labelScenario(sc, telemetry(), config, solver);
  const run = replayScenario(sc, config, solver);
  const oracle = runOracle(sc, telemetry(), new GroundTruth(sc), labels, config, solver);
  return { scenario: sc, labels, ...run, oracleMs: oracle.ms, oracleSwitches: oracle.switches };
}
