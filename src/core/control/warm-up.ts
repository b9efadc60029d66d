import { formatSchedule } from '../pipeline/schedule';
import { ControlConfig } from './control-config.type';
import { DecisionKind } from './control-decision.type';
import { DelegationPlan, JobControlInput, PipelineGroupPlan, PipelineLinkView } from './control-input.type';
import { decideControl } from './job-controller';
import { initialPipelines } from './pipeline-plans';

/** The jobs the warm-up decides for: small and bench-sized, so every loop of the decision path runs. */
const SHAPES: ReadonlyArray<{ stages: number; microbatches: number; dpSize: number }> = [
  { stages: 4, microbatches: 16, dpSize: 2 },
  { stages: 8, microbatches: 32, dpSize: 2 },
];

/** Extra delay of the warm-up's straggling link, ms: severe, so the planner adds slackness and delegation. */
const WARM_UP_EXTRA_MS = 40;

function warmUpInput(shape: { stages: number; microbatches: number; dpSize: number }, slow: { dp: number; link: number } | null, current: JobControlInput['current']): JobControlInput {
  const { stages, microbatches, dpSize } = shape;
  const links: PipelineLinkView[] = [];
  for (let dp = 0; dp < dpSize; dp++) {
    for (let link = 0; link < stages - 1; link++) {
      const straggler = slow !== null && slow.dp === dp && slow.link === link;
      links.push({ dp, link, upRank: dp * stages + link, downRank: dp * stages + link + 1, baselineMs: 1, extraMs: straggler ? WARM_UP_EXTRA_MS : 0, straggler, nicFailure: false });
    }
  }
  // Uneven stage times (the first and last stages heavier), as measured profiles are.
  const ms = (k: number) => Array.from({ length: stages }, (_, i) => k + (i === 0 || i === stages - 1 ? 2 : 0));
  return {
    stages, microbatches, dpSize, fMs: ms(10), bMs: ms(11), wMs: ms(8),
    deviceCaps: new Array<number>(stages).fill(microbatches), hostCaps: new Array<number>(stages).fill(microbatches),
    links, current,
  };
}

/**
 * Runs `rounds` synthetic reactions (a straggling pipeline link planned around, then its recovery)
 * through the decision path (decideControl and the wire form of its schedules), and returns the
 * kind of each decision made ('none': nothing to switch). Why: V8 compiles a function's optimised code only after it has run many times,
 * so a fresh daemon makes its first real decisions in slow, unoptimised code; bench:daemon's
 * slowest trials were a fresh daemon's first ones. The daemon warms up before it reports ready,
 * at a cost of a few hundred ms once per start instead of tens of ms on its first stragglers.
 * Pure and deterministic; `config.planner` as given (callers pass the planner their thread runs).
 */
export function warmUpDecisions(config: ControlConfig, rounds: number, input: { stages: number; microbatches: number; dpSize: number }[] = [...SHAPES]): Array<DecisionKind | 'none'> {
  const kinds: Array<DecisionKind | 'none'> = [];
  for (let round = 0; round < rounds; round++) {
    const shape = input[round % input.length];
    const turn = Math.floor(round / input.length);
    const slow = { dp: turn % shape.dpSize, link: turn % (shape.stages - 1) };
    const initial: { pipelines: PipelineGroupPlan[]; delegation: DelegationPlan[] } = { pipelines: initialPipelines(warmUpInput(shape, null, null)), delegation: [] };
    const reaction = decideControl(warmUpInput(shape, slow, initial), config).decision;
    kinds.push(reaction?.kind ?? 'none');
    if (!reaction) continue;
    for (const p of reaction.pipelines) formatSchedule(p.schedule);
    // The recovery: the straggler healed under the adapted schedule.
    const recovery = decideControl(warmUpInput(shape, null, { pipelines: reaction.pipelines, delegation: reaction.delegation }), config).decision;
    kinds.push(recovery?.kind ?? 'none');
  }
  return kinds;
}
