import { ControlConfig, DEFAULT_TRANSPORT_CONFIG } from '../control/control-config.type';
import { JobControlInput, PipelineGroupPlan } from '../control/control-input.type';
import { initialPipelines, plannedPipelines, predictMs, replicaDelays } from '../control/pipeline-plans';
import { MilpSolver } from '../planner/optimal-planner';
import { bestSplit } from './best-split.planner';
import { layerMoves } from './layer-moves.util';
import { RebalanceConfig } from './rebalance-config.type';
import { RebalanceInput } from './rebalance-input.type';
import { RebalanceOutcome } from './rebalance-outcome.type';
import { RebalanceProblem } from './rebalance-problem.type';

const fmt = (ms: number) => ms.toFixed(1);

/**
 * Whether to move layers away from slow ranks, and where (pure). The split search (bestSplit)
 * ranks contiguous splits by an estimate; its best `refineCandidates` are planned as today (the
 * configured planner's warm-up counts and schedule for every replica, with the delegation in
 * force) and priced by the simulator, as is re-planning alone on the split in force. Each split
 * is planned as the control step would plan it (decideControl): the initial plan when no pipeline
 * link straggles, the planner's plan for the straggling replicas otherwise. A re-balance that
 * published any other plan would be undone by the control step's next "recovery" a few iterations
 * later: a second switch, a second version, for nothing (bench:outside, compute noise 25%). The best
 * split is taken only when its predicted iteration time plus the handoff amortised over the
 * straggler's expected remaining iterations beats re-planning alone by `minGain`.
 */
export function decideRebalance(input: RebalanceInput, config: RebalanceConfig, control: ControlConfig, solver?: MilpSolver): RebalanceOutcome {
  const { control: job, layers, split: current } = input;
  const S = job.stages;
  const N = job.microbatches;
  const L = layers.fMs.length;
  const transport = control.transport ?? DEFAULT_TRANSPORT_CONFIG;
  const delegation = job.current?.delegation ?? [];
  const { now } = replicaDelays(job);
  const stragglers = job.links.filter((l) => l.straggler && l.dp < job.dpSize && l.link < S - 1);

  const sums = (split: readonly number[]) => {
    const out = { f: [] as number[], b: [] as number[], w: [] as number[], state: [] as number[], acts: [] as number[] };
    for (let s = 0, first = 0; s < S; first += split[s], s++) {
      let f = 0, b = 0, w = 0, state = 0, acts = 0;
      for (let l = first; l < first + split[s]; l++) {
        f += layers.fMs[l];
        b += layers.bMs[l];
        w += layers.wMs[l];
        state += layers.stateBytes[l];
        acts += layers.activationBytes[l];
      }
      out.f.push(f * input.speed[s]);
      out.b.push(b * input.speed[s]);
      out.w.push(w * input.speed[s]);
      out.state.push(state);
      out.acts.push(acts);
    }
    return out;
  };
  const inflight = (bytes: number, acts: number) => (acts > 0 ? Math.max(1, Math.min(N, Math.floor(bytes / acts))) : N);
  /** The control input of the job running `split`: its stage times and memory caps. */
  const inputOf = (split: readonly number[]): JobControlInput => {
    const t = sums(split);
    const room = input.deviceBytes.map((d, s) => Math.max(0, d - t.state[s]));
    const deviceCaps = room.map((r, s) => inflight(r, t.acts[s]));
    return { ...job, fMs: t.f, bMs: t.b, wMs: t.w, deviceCaps, hostCaps: room.map((r, s) => Math.max(deviceCaps[s], inflight(r + input.hostBytes, t.acts[s]))) };
  };
  const plan = (splitInput: JobControlInput): { pipelines: PipelineGroupPlan[]; ms: number } => {
    const initial = initialPipelines(splitInput);
    const pipelines = stragglers.length === 0 ? initial : plannedPipelines(splitInput, stragglers, now, initial, control, delegation, solver);
    return { pipelines, ms: predictMs(splitInput, pipelines, now, delegation, transport) };
  };

  const currentInput = inputOf(current);
  const predictedCurrentMs = job.current ? predictMs(currentInput, job.current.pipelines, now, delegation, transport) : Number.NaN;
  const replan = plan(currentInput);
  const currentCaps = currentInput.deviceCaps;
  const problem: RebalanceProblem = {
    layers,
    current,
    speed: input.speed,
    microbatches: N,
    deviceBytes: input.deviceBytes,
    // No stage gets less room for activations than 1F1B needs, or than it has now.
    minInflight: Array.from({ length: S }, (_, s) => Math.min(N, S - s, currentCaps[s])),
    handoffBytesPerMs: config.handoffGBps * 1e6,
    amortizeIterations: Math.max(1, input.expectedIterations),
  };
  const found = bestSplit(problem, { maxCandidates: config.maxCandidates });
  const base = {
    currentSplit: current.slice(),
    expectedIterations: input.expectedIterations,
    speed: input.speed.slice(),
    predictedCurrentMs,
    predictedReplanMs: replan.ms,
    replan: replan.pipelines,
  };
  const none = (reason: string, priced = 0): RebalanceOutcome => ({
    ...base, take: false, reason, split: null, moves: [], moveBytes: 0, moveMs: 0, amortisedMoveMs: 0, predictedNewMs: null, pipelines: null, stageTimes: null,
    search: { exact: found?.exact ?? true, evaluations: found?.evaluations ?? 0, priced },
  });
  if (!found) return none(`no split of the ${L} layers fits every device's memory`);
  const key = current.join(',');
  const tried = found.candidates.filter((c) => c.split.join(',') !== key).slice(0, Math.max(1, config.refineCandidates));
  if (tried.length === 0) return none(`the split in force [${key}] is the best for the measured speeds`);
  let chosen: { split: number[]; ms: number; pipelines: PipelineGroupPlan[]; input: JobControlInput; moveMs: number; moveBytes: number } | null = null;
  for (const candidate of tried) {
    const splitInput = inputOf(candidate.split);
    const planned = plan(splitInput);
    const objective = planned.ms + candidate.moveMs / problem.amortizeIterations;
    if (!chosen || objective < chosen.ms + chosen.moveMs / problem.amortizeIterations) {
      chosen = { split: candidate.split, ms: planned.ms, pipelines: planned.pipelines, input: splitInput, moveMs: candidate.moveMs, moveBytes: candidate.moveBytes };
    }
  }
  const c = chosen!;
  const amortisedMoveMs = c.moveMs / problem.amortizeIterations;
  const objective = c.ms + amortisedMoveMs;
  const gain = replan.ms > 0 ? (replan.ms - objective) / replan.ms : 0;
  const take = config.enabled && gain >= config.minGain;
  const numbers = `split [${c.split.join(',')}] predicted ${fmt(c.ms)} ms + ${fmt(amortisedMoveMs)} ms/iteration of handoff (${(c.moveBytes / 1e9).toFixed(2)} GB, ${fmt(c.moveMs)} ms over an expected ${input.expectedIterations.toFixed(0)} iterations) against re-planning alone on [${key}] ${fmt(replan.ms)} ms`;
  const reason = !config.enabled
    ? `re-balancing off (rebalance.enabled): ${numbers}`
    : take
      ? `re-balanced: ${numbers}, ${(gain * 100).toFixed(1)}% better`
      : `declined: ${numbers}, ${(gain * 100).toFixed(1)}% better, below rebalance.minGain ${(config.minGain * 100).toFixed(1)}%`;
  return {
    ...base,
    take,
    reason,
    split: c.split,
    moves: layerMoves(current, c.split, layers.stateBytes),
    moveBytes: c.moveBytes,
    moveMs: c.moveMs,
    amortisedMoveMs,
    predictedNewMs: c.ms,
    pipelines: c.pipelines,
    stageTimes: { fMs: c.input.fMs, bMs: c.input.bMs, wMs: c.input.wMs },
    search: { exact: found.exact, evaluations: found.evaluations, priced: tried.length },
  };
}
