/**
 * `npm run bench:render`: time to render the timeline SVG of a 64-stage, 512-microbatch pipeline
 * (98,304 op blocks; goal < 200 ms), one panel and a before/after pair, plus the 8-stage Megatron
 * profile for scale. The schedule is generated and simulated once, outside the timing: this times
 * the renderer. Medians of wall-clock runs on one core. Last line: JSON, also written to
 * bench/results/render.json.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSchedule } from '../src/core/engine/generator';
import { simulateSchedule } from '../src/core/engine/simulator';
import { toPipelineModel, validateProfile } from '../src/core/pipeline/pipeline-model';
import { PipelineModel } from '../src/core/pipeline/pipeline-model.type';
import { planPipeline } from '../src/core/planner/plan';
import { TimelinePanel } from '../src/core/render/timeline-panel.type';
import { renderTimelineSvg } from '../src/core/render/timeline-svg';
import { summarizeRun } from '../src/core/engine/simulation-report';
import { startStamp } from '../src/support/results-stamp';

const ROOT = join(__dirname, '..', ...(__dirname.includes('dist') ? ['..'] : []));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

function time(fn: () => string, runs: number): { ms: number; bytes: number } {
  let bytes = fn().length; // warm-up
  const samples: number[] = [];
  for (let k = 0; k < runs; k++) {
    const started = performance.now();
    bytes = fn().length;
    samples.push(performance.now() - started);
  }
  return { ms: Math.round(median(samples) * 100) / 100, bytes };
}

function uniform(S: number, N: number, slowLink: number, delayMs: number): PipelineModel {
  const t = Array.from({ length: S }, (_, i) => 1 + (i % 3) * 0.1);
  const linkMs = Array.from({ length: S - 1 }, (_, i) => (i === slowLink ? delayMs : 0.05));
  return toPipelineModel(validateProfile({ stages: S, microbatches: N, fMs: t, bMs: t, wMs: t.map((x) => x * 0.7), linkMs }));
}

const stamp = startStamp();
const rows: Array<Record<string, unknown>> = [];
{
  const S = 64;
  const N = 512;
  const model = uniform(S, N, 40, 5);
  const before = generateSchedule(uniform(S, N, 40, 0), { warmup: Array.from({ length: S }, (_, i) => Math.min(N, S - i)) });
  const after = planPipeline(model, { policy: 'adaptive' }).run;
  const beforeRun = simulateSchedule(model, before.order);
  const one: TimelinePanel[] = [{ title: 'adaptive', run: after, slowLinks: [40] }];
  const two: TimelinePanel[] = [{ title: 'before', run: beforeRun, slowLinks: [40] }, ...one];
  for (const [name, panels] of [['one panel', one], ['before/after', two]] as const) {
    const { ms, bytes } = time(() => renderTimelineSvg(panels, { title: `${S} x ${N}` }), 15);
    rows.push({ case: `${S} stages x ${N} microbatches, ${name}`, stages: S, microbatches: N, blocks: panels.length * S * 3 * N, renderMs: ms, svgBytes: bytes });
  }
}
{
  const raw = validateProfile(JSON.parse(readFileSync(join(ROOT, 'bench', 'profiles', 'megatron-gpt-8stage-32mb.json'), 'utf8')));
  const model = toPipelineModel({ ...raw, linkMs: raw.linkMs.map((ms, i) => (i === 6 ? ms + 120 : ms)) });
  const panels: TimelinePanel[] = [
    { title: 'zb', run: simulateSchedule(model, planPipeline(toPipelineModel(raw), { policy: 'initial' }).run.order), slowLinks: [6] },
    { title: 'adaptive', run: planPipeline(model, { policy: 'adaptive' }).run, slowLinks: [6] },
  ];
  const { ms, bytes } = time(() => renderTimelineSvg(panels), 50);
  rows.push({ case: 'Megatron 8 stages x 32 microbatches, before/after', stages: 8, microbatches: 32, blocks: 2 * 8 * 96, renderMs: ms, svgBytes: bytes });
}
// The README's picture (docs/img/timeline-8stage.svg; docs/pictures.md): the live demo's job, the
// 8-stage Megatron profile scaled to a 766 ms iteration (as src/emulator/scenarios.ts's megatron8)
// with 60 ms on link 6-7: its initial plan and the adaptive re-plan, simulated under that delay. The
// caption's figures are recorded with the picture, so the two cannot disagree (issue 30, item 2).
const picture = (() => {
  const raw = validateProfile(JSON.parse(readFileSync(join(ROOT, 'bench', 'profiles', 'megatron-gpt-8stage-32mb.json'), 'utf8')));
  const scale = (xs: number[]) => xs.map((x) => x * 0.2);
  const healthy = { ...raw, fMs: scale(raw.fMs), bMs: scale(raw.bMs), wMs: scale(raw.wMs), linkMs: scale(raw.linkMs) };
  const slowLink = 6;
  const delayMs = 60;
  const model = toPipelineModel({ ...healthy, linkMs: healthy.linkMs.map((ms, i) => (i === slowLink ? ms + delayMs : ms)) });
  const initial = planPipeline(toPipelineModel(healthy), { policy: 'initial' });
  const adaptive = planPipeline(model, { policy: 'adaptive' });
  const runs = [simulateSchedule(model, initial.run.order), adaptive.run];
  const panels: TimelinePanel[] = [
    { title: `before: the initial plan (Alg. 1), warm-up ${initial.warmup.join(',')}`, run: runs[0], slowLinks: [slowLink], linkNotes: { [slowLink]: `+${delayMs} ms` } },
    { title: `after: re-planned (Alg. 2), warm-up ${adaptive.warmup.join(',')}`, run: runs[1], slowLinks: [slowLink], linkNotes: { [slowLink]: `+${delayMs} ms` } },
  ];
  const svg = renderTimelineSvg(panels, { title: `8 stages x ${healthy.microbatches} microbatches (Megatron GPT profile, scaled), +${delayMs} ms on link ${slowLink}-${slowLink + 1}` });
  writeFileSync(join(ROOT, 'docs', 'img', 'timeline-8stage.svg'), svg);
  const panel = (k: number, warmup: number[]) => {
    const summary = summarizeRun(runs[k], model.durations);
    return { title: panels[k].title, warmup, iterationMs: Math.round(summary.iterationMs * 10) / 10, bubbleRate: Math.round(summary.bubbleRate * 1000) / 1000 };
  };
  return { path: 'docs/img/timeline-8stage.svg', slowLink, delayMs, stages: healthy.stages, microbatches: healthy.microbatches, before: panel(0, initial.warmup), after: panel(1, adaptive.warmup) };
})();
for (const row of rows) console.log(`${String(row.case).padEnd(52)} ${String(row.renderMs).padStart(8)} ms  ${String(row.svgBytes).padStart(10)} bytes`);
const result = { bench: 'render', goalMs: 200, node: process.version, rows, picture, stamp: stamp() };
mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
writeFileSync(join(ROOT, 'bench', 'results', 'render.json'), JSON.stringify(result, null, 2) + '\n');
console.log(JSON.stringify(result));
