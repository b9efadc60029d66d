import { InputError } from '../../core/input-error';
import { simulateSchedule } from '../../core/engine/simulator';
import { summarizeRun } from '../../core/engine/simulation-report';
import { PipelineModel } from '../../core/pipeline/pipeline-model.type';
import { linkTolerance } from '../../core/planner/link-tolerance';
import { iterationLowerBoundMs } from '../../core/planner/lower-bound';
import { planPipeline } from '../../core/planner/plan';
import { PlanPolicy } from '../../core/planner/plan-policy.type';
import { expectOnly, numberOption, requiredOption, stringOption } from '../cli-args';
import { loadProfile } from '../load-profile';

export const COMPARE_OPTIONS = ['profile', 'delay', 'budget-ms', 'table'];

export interface ComparisonRow {
  name: string;
  warmup: number[];
  iterationMs: number;
  bubbleRate: number;
  slowdown: number;
}

/** `0=60,6=60`: extra one-way delay in ms on links 0 and 6, added to the profile's own. */
export function parseDelays(raw: string | undefined, links: number): Map<number, number> {
  const delays = new Map<number, number>();
  if (raw === undefined || raw === '') return delays;
  for (const part of raw.split(',')) {
    const match = /^\s*(\d+)\s*=\s*([0-9]*\.?[0-9]+)\s*$/.exec(part);
    if (!match) throw new InputError(`--delay takes link=ms pairs like 0=60,6=30, got "${part}"`);
    const link = Number(match[1]);
    if (link >= links) throw new InputError(`--delay names link ${link}, but the pipeline has links 0..${links - 1}`);
    delays.set(link, Number(match[2]));
  }
  return delays;
}

/**
 * `compare`: every policy on one profile with stragglers injected. `zb-static` is the initial
 * ZeroBubble plan made for the healthy profile and replayed unchanged under the delays, which
 * is what a job without pipemorph runs; the other rows are re-planned for the delays.
 */
export function compareCommand(options: Map<string, string | true>): unknown {
  expectOnly(options, COMPARE_OPTIONS, 'compare');
  const { profile, model: healthy } = loadProfile(requiredOption(options, 'profile'));
  const delays = parseDelays(stringOption(options, 'delay'), profile.stages - 1);
  const linkMs = profile.linkMs.map((ms, i) => ms + (delays.get(i) ?? 0));
  const slow: PipelineModel = { ...healthy, linkMs: Float64Array.from(linkMs) };
  const timeBudgetMs = numberOption(options, 'budget-ms', { min: 0 });
  const healthyMs = planPipeline(healthy, { policy: 'initial' }).run.iterationMs;

  const rows: ComparisonRow[] = [];
  const add = (name: string, warmup: number[], order: Int32Array[]): void => {
    const report = summarizeRun(simulateSchedule(slow, order), slow.durations);
    rows.push({ name, warmup, iterationMs: report.iterationMs, bubbleRate: report.bubbleRate, slowdown: report.iterationMs / healthyMs });
  };
  const staticPlan = planPipeline(healthy, { policy: 'initial' });
  add('zb-static', staticPlan.warmup, staticPlan.run.order);
  const policies: PlanPolicy[] = ['1f1b', 'initial', 'adaptive', 'search'];
  for (const policy of policies) {
    const plan = planPipeline(slow, { policy, search: { timeBudgetMs } });
    add(policy === 'initial' ? 'zb-replanned' : policy, plan.warmup, plan.run.order);
  }
  const adaptive = rows.find((r) => r.name === 'adaptive')!;
  return {
    healthyMs,
    lowerBoundMs: iterationLowerBoundMs(slow),
    delays: Object.fromEntries(delays),
    rows,
    links: linkTolerance(slow, adaptive.warmup),
  };
}

export function formatComparisonTable(result: ReturnType<typeof compareCommand>): string {
  const r = result as { healthyMs: number; lowerBoundMs: number; delays: Record<string, number>; rows: ComparisonRow[] };
  const delays = Object.entries(r.delays).map(([link, ms]) => `link ${link}: +${ms} ms`).join(', ') || 'none';
  const lines = [
    `stragglers: ${delays}`,
    `healthy iteration: ${r.healthyMs.toFixed(1)} ms, lower bound under stragglers: ${r.lowerBoundMs.toFixed(1)} ms`,
    '',
    'policy         iteration ms  slowdown  bubbles  warm-up',
    ...r.rows.map((row) =>
      [row.name.padEnd(14), row.iterationMs.toFixed(1).padStart(12), `${row.slowdown.toFixed(2)}x`.padStart(9), `${(row.bubbleRate * 100).toFixed(1)}%`.padStart(8), ' ' + row.warmup.join(',')].join(' '),
    ),
  ];
  return lines.join('\n');
}
