import { simulateSchedule } from '../../core/engine/simulator';
import { InputError } from '../../core/input-error';
import { PipelineModel } from '../../core/pipeline/pipeline-model.type';
import { planPipeline } from '../../core/planner/plan';
import { PLAN_POLICIES, PlanPolicy } from '../../core/planner/plan-policy.type';
import { TimelinePanel } from '../../core/render/timeline-panel.type';
import { renderTimelineSvg } from '../../core/render/timeline-svg';
import { expectOnly, requiredOption, stringOption } from '../cli-args';
import { loadProfile } from '../load-profile';
import { parseDelays } from './compare.command';
import { loadSchedule } from './simulate.command';

export const RENDER_OPTIONS = ['profile', 'schedule', 'policy', 'compare', 'delay', 'title'];

// optimal needs the async-loaded MILP solver: render its schedule from `plan --policy optimal` with --schedule.
const POLICIES = PLAN_POLICIES.filter((p) => p !== 'fixed' && p !== 'optimal');

/** A link is drawn as slow when a straggler was injected on it, or its delay is at least a quarter of the shortest op. */
export function slowLinksOf(model: PipelineModel, injected: ReadonlyMap<number, number>): number[] {
  let shortest = Number.POSITIVE_INFINITY;
  for (const d of model.durations) if (d > 0) shortest = Math.min(shortest, d);
  const links: number[] = [];
  for (let i = 0; i < model.linkMs.length; i++) if (injected.has(i) || model.linkMs[i] >= 0.25 * shortest) links.push(i);
  return links;
}

/**
 * `render`: an SVG timeline of a schedule (a file, or one a policy plans) simulated under the
 * profile, with --delay stragglers added; --compare puts a second schedule above it under the
 * same delays: `zb` is the ZeroBubble plan made for the healthy profile and kept unchanged (what
 * runs without pipemorph), any policy name plans for the delays. Prints the SVG, not JSON.
 */
export function renderCommand(options: Map<string, string | true>): string {
  expectOnly(options, RENDER_OPTIONS, 'render');
  const { profile, model: healthy } = loadProfile(requiredOption(options, 'profile'));
  const delays = parseDelays(stringOption(options, 'delay'), profile.stages - 1);
  const model: PipelineModel = { ...healthy, linkMs: Float64Array.from(profile.linkMs, (ms, i) => ms + (delays.get(i) ?? 0)) };
  const schedulePath = stringOption(options, 'schedule');
  const policy = stringOption(options, 'policy');
  if ((schedulePath === undefined) === (policy === undefined)) throw new InputError('render needs exactly one of --schedule S.json or --policy <name>');
  const checkPolicy = (name: string, option: string): PlanPolicy => {
    if (!(POLICIES as readonly string[]).includes(name)) throw new InputError(`--${option} must be one of ${POLICIES.join(', ')}${option === 'compare' ? ', zb' : ''}, got "${name}"`);
    return name as PlanPolicy;
  };
  const slowLinks = slowLinksOf(model, delays);
  const linkNotes: Record<number, string> = {};
  for (const link of slowLinks) linkNotes[link] = delays.has(link) ? `+${delays.get(link)} ms` : `${model.linkMs[link].toFixed(1)} ms`;
  const panel = (title: string, order: Int32Array[]): TimelinePanel => ({ title, run: simulateSchedule(model, order), slowLinks, linkNotes });

  const main = schedulePath !== undefined
    ? panel(`schedule ${schedulePath.split('/').pop()}`, loadSchedule(schedulePath, model.stages, model.microbatches))
    : (() => {
        const name = checkPolicy(policy!, 'policy');
        return panel(`policy ${name}`, planPipeline(model, { policy: name }).run.order);
      })();
  const panels: TimelinePanel[] = [main];
  const compare = stringOption(options, 'compare');
  if (compare !== undefined) {
    if (compare === 'zb') panels.unshift(panel('zb (healthy ZeroBubble plan, unchanged)', planPipeline(healthy, { policy: 'initial' }).run.order));
    else {
      const name = checkPolicy(compare, 'compare');
      panels.unshift(panel(`policy ${name}`, planPipeline(model, { policy: name }).run.order));
    }
  }
  const straggling = [...delays].map(([link, ms]) => `+${ms} ms on link ${link}-${link + 1}`).join(', ');
  const title = stringOption(options, 'title') ?? `${profile.stages} stages x ${profile.microbatches} microbatches${straggling ? ', ' + straggling : ''}`;
  return renderTimelineSvg(panels, { title });
}
